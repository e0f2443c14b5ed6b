/*
 * etcdfs-k8s.c - the k8s codec (helper/k8s_codec.h) as a command
 *
 *   etcdfs-k8s decode [--yaml|--json]        value on stdin -> text
 *   etcdfs-k8s encode [--yaml|--json]        text on stdin -> value
 *   etcdfs-k8s decode-batch [--yaml|--json]  many values, records
 *   etcdfs-k8s encode-batch [--yaml|--json]  many texts, records
 *
 * `decode` and `encode` follow etcd-io/auger's calling convention, so
 * that `etcdfs -o codec=etcdfs-k8s,codec_prefix=/registry/` shows the
 * API server's protobuf objects as JSON and stores what is saved as
 * protobuf again.  etcdfs runs `PROG decode` and `PROG encode` with no
 * other argument, so the text's format is also chosen by the program's
 * name (a name ending in "-yaml": a hard link or a copy, since etcdfs
 * resolves symbolic links of -o codec=) or by ETCDFS_K8S_FORMAT (yaml or
 * json) in its environment; an option wins over the variable, the
 * variable over the name.
 *
 * The batch verbs take and give records: the length in bytes as decimal
 * digits, a newline, then that many bytes.  One record out per record in,
 * in order; the first that fails stops the run with its number.
 *
 * What it cannot do: custom resources and encrypted values (stored as
 * they are: decode says they are not objects, and the filesystem then
 * shows them raw), or check a save against the value it replaces (encode
 * is given no such value).  So that a save never drops what the text
 * cannot hold, decode refuses an object with fields the schema does not
 * know (one a newer API server wrote).
 *
 * Exit status: 0, 1 on a bad input (one line on stderr), 2 on a usage
 * error, 3 when the codec is not built in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "k8s_codec.h"

/* No value etcd holds comes near this (its default limit is 1.5 MiB). */
#define INPUT_MAX ((size_t)256 << 20)

enum verb {
	VERB_DECODE,
	VERB_ENCODE,
};

static const char *prog = "etcdfs-k8s";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s decode|encode|decode-batch|encode-batch "
		"[--yaml|--json]\n"
		"  decode        a stored object (stdin) as JSON or YAML "
		"(stdout)\n"
		"  encode        JSON or YAML (stdin) as the stored object "
		"(stdout)\n"
		"  *-batch       the same on records: LENGTH\\n then LENGTH "
		"bytes, each\n"
		"The format is JSON unless --yaml, ETCDFS_K8S_FORMAT=yaml or a "
		"program name\nending in -yaml says YAML.\n", prog);
}

/*
 * Reads all of @f into a new buffer (*@buf, *@len; NUL-terminated for
 * the text decoders).  0, or -1 with a message.
 */
static int read_all(FILE *f, char **buf, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *b = malloc(cap), *nb;

	if (!b)
		goto nomem;
	for (;;) {
		size_t got;

		if (cap - n < 2) {
			if (cap >= INPUT_MAX) {
				fprintf(stderr, "%s: the input is larger than "
					"%zu MiB\n", prog, INPUT_MAX >> 20);
				free(b);
				return -1;
			}
			nb = realloc(b, cap * 2);
			if (!nb)
				goto nomem;
			b = nb;
			cap *= 2;
		}
		got = fread(b + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: cannot read the input: %s\n", prog,
			strerror(errno));
		free(b);
		return -1;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
nomem:
	free(b);
	fprintf(stderr, "%s: out of memory\n", prog);
	return -1;
}

/*
 * Reads one record of @f: "LENGTH\n" then LENGTH bytes, into a new
 * NUL-terminated buffer.  1, 0 at the end of the input, -1 with a message
 * naming record @nr.
 */
static int read_record(FILE *f, unsigned long nr, char **buf, size_t *len)
{
	size_t n = 0;
	int c, digits = 0;
	char *b;

	while ((c = getc(f)) != EOF && c != '\n') {
		if (c < '0' || c > '9' || ++digits > 10) {
			fprintf(stderr, "%s: record %lu: a bad length: not "
				"digits then a newline\n", prog, nr);
			return -1;
		}
		n = n * 10 + (size_t)(c - '0');
	}
	if (c == EOF && !digits && !ferror(f))
		return 0;
	if (c == EOF || !digits || n > INPUT_MAX) {
		fprintf(stderr, "%s: record %lu: %s\n", prog, nr,
			ferror(f) ? strerror(errno) :
			n > INPUT_MAX ? "too large" :
			"a bad length: not digits then a newline");
		return -1;
	}
	b = malloc(n + 1);
	if (!b) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	if (fread(b, 1, n, f) != n) {
		fprintf(stderr, "%s: record %lu: the input ends within its "
			"%zu bytes\n", prog, nr, n);
		free(b);
		return -1;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 1;
}

/*
 * Whether the object @val decoded into @text holds fields this build does
 * not know (an API server newer than the schema wrote it): the text
 * leaves them out, and `encode` is given no stored value to keep them
 * from (etcdfs's codec= convention passes none), so such an object is not
 * decoded at all, and the filesystem shows it raw.  Any other failure of
 * the check is not this one, and the text stands.
 */
static bool drops_fields(const char *text, size_t len, enum k8s_format fmt,
			 const void *val, size_t val_len)
{
	void *again = NULL;
	size_t again_len;
	int ret;

	ret = k8s_encode(text, len, fmt, val, val_len, &again, &again_len,
			 NULL);
	free(again);
	return ret == -EPROTONOSUPPORT;
}

/* Runs @verb on @in; 0, or the exit status with a message. */
static int convert(enum verb verb, enum k8s_format fmt, const char *in,
		   size_t in_len, char **out, size_t *out_len,
		   const char *where)
{
	struct k8s_error err = { .message = "" };
	int ret;

	if (verb == VERB_DECODE) {
		if (!k8s_is_object(in, in_len)) {
			fprintf(stderr, "%s: %snot a protobuf object (no "
				"'k8s\\0' at its start)\n", prog, where);
			return 1;
		}
		ret = k8s_decode(in, in_len, fmt, out, out_len, &err);
		if (ret == 0 && drops_fields(*out, *out_len, fmt, in, in_len)) {
			free(*out);
			*out = NULL;
			fprintf(stderr, "%s: %sthe object holds fields that "
				"k8s.io/api %s does not know: not decoded, so "
				"that no save drops them\n", prog, where,
				k8s_schema_version());
			return 1;
		}
	} else {
		ret = k8s_encode(in, in_len, fmt, NULL, 0, (void **)out,
				 out_len, &err);
	}
	if (ret == 0)
		return 0;
	fprintf(stderr, "%s: %s%s\n", prog, where,
		err.message[0] ? err.message : strerror(-ret));
	return ret == -ENOTSUP ? 3 : 1;
}

static int write_all(const void *p, size_t n)
{
	if (fwrite(p, 1, n, stdout) != n) {
		fprintf(stderr, "%s: cannot write the output: %s\n", prog,
			strerror(errno));
		return -1;
	}
	return 0;
}

static int run_one(enum verb verb, enum k8s_format fmt)
{
	char *in, *out;
	size_t in_len, out_len;
	int rc;

	if (read_all(stdin, &in, &in_len))
		return 1;
	rc = convert(verb, fmt, in, in_len, &out, &out_len, "");
	free(in);
	if (rc)
		return rc;
	if (write_all(out, out_len))
		rc = 1;
	free(out);
	return rc;
}

static int run_batch(enum verb verb, enum k8s_format fmt)
{
	unsigned long nr;
	char where[48];
	int got;

	for (nr = 1;; nr++) {
		char *in, *out;
		size_t in_len, out_len;
		int rc;

		got = read_record(stdin, nr, &in, &in_len);
		if (got <= 0)
			break;
		snprintf(where, sizeof(where), "record %lu: ", nr);
		rc = convert(verb, fmt, in, in_len, &out, &out_len, where);
		free(in);
		if (rc)
			return rc;
		if (printf("%zu\n", out_len) < 0 || write_all(out, out_len))
			rc = 1;
		free(out);
		if (rc)
			return rc;
	}
	return got < 0 ? 1 : 0;
}

/* The format the name and the environment choose; -1 if a bad one. */
static int default_format(const char *argv0, enum k8s_format *fmt)
{
	const char *env = getenv("ETCDFS_K8S_FORMAT");
	size_t n = strlen(argv0);

	*fmt = n >= 5 && !strcmp(argv0 + n - 5, "-yaml") ? K8S_FORMAT_YAML
							   : K8S_FORMAT_JSON;
	if (!env || !*env)
		return 0;
	if (!strcmp(env, "yaml")) {
		*fmt = K8S_FORMAT_YAML;
	} else if (!strcmp(env, "json")) {
		*fmt = K8S_FORMAT_JSON;
	} else {
		fprintf(stderr, "%s: ETCDFS_K8S_FORMAT='%s': not yaml or "
			"json\n", prog, env);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum k8s_format fmt;
	enum verb verb;
	bool batch = false;
	const char *v;
	int i, rc;

	if (argc > 0 && argv[0][0]) {
		const char *slash = strrchr(argv[0], '/');

		prog = slash ? slash + 1 : argv[0];
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	v = argv[1];
	if (!strcmp(v, "-h") || !strcmp(v, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(v, "--version")) {
		printf("%s %s (k8s.io/api %s)\n", prog, ETCDFS_VERSION,
		       k8s_built_in() ? k8s_schema_version() : "not built in");
		return 0;
	}
	if (!strcmp(v, "decode") || !strcmp(v, "decode-batch")) {
		verb = VERB_DECODE;
	} else if (!strcmp(v, "encode") || !strcmp(v, "encode-batch")) {
		verb = VERB_ENCODE;
	} else {
		fprintf(stderr, "%s: '%s': not decode, encode, decode-batch "
			"or encode-batch\n", prog, v);
		return 2;
	}
	batch = strchr(v, '-') != NULL;
	if (default_format(prog, &fmt))
		return 2;
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--yaml")) {
			fmt = K8S_FORMAT_YAML;
		} else if (!strcmp(argv[i], "--json")) {
			fmt = K8S_FORMAT_JSON;
		} else {
			fprintf(stderr, "%s: '%s': not --yaml or --json\n",
				prog, argv[i]);
			return 2;
		}
	}
	if (!k8s_built_in()) {
		fprintf(stderr, "%s: the k8s codec is not built in (meson "
			"-Dk8s_api)\n", prog);
		return 3;
	}
	rc = batch ? run_batch(verb, fmt) : run_one(verb, fmt);
	if (fflush(stdout) == EOF && !rc) {
		fprintf(stderr, "%s: cannot write the output: %s\n", prog,
			strerror(errno));
		rc = 1;
	}
	return rc;
}
