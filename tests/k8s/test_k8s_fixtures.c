/*
 * test_k8s_fixtures.c - the k8s codec on Kubernetes' own round-trip fixtures
 *
 *   test-k8s-fixtures TESTDATA
 *
 * TESTDATA is k8s.io/api/testdata of the tree the build read.  For each
 * kind of TESTDATA/HEAD (<group>.<version>.<Kind>.{pb,json,yaml}), four
 * cases: decode(.pb) is the .json, and the .yaml, byte for byte (modulo a
 * final newline, as Kubernetes' own test compares); encode(.json) and
 * encode(.yaml) are the .pb.  For each .pb of an older release
 * (TESTDATA/v1.NN.0/), one case: it decodes, and encoding what it decoded
 * gives it back, or its .after_roundtrip.pb where Kubernetes ships one;
 * a save over it (the .pb as the value replaced) writes the same, or is
 * refused as holding fields this release does not know, and then only
 * where Kubernetes ships an .after_roundtrip.pb.  The counts
 * of each go to the log.
 *
 * Two kinds of fixture cannot decode and must be refused as not built in
 * (-ENOENT), each a case of its own, counted apart: an envelope that names
 * no kind (WatchEvent's: its Go caller knows the type, a value in etcd
 * never names none), and an older release's kind that this release no
 * longer has.
 *
 * What it cannot do: say why a case differs beyond the first line that
 * does.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"
#include "tap.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			char *np;

			cap = cap ? cap * 2 : 65536;
			np = realloc(p, cap);
			if (!np)
				abort();
			p = np;
		}
		r = fread(p + n, 1, cap - n - 1, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	p[n] = '\0';
	*len = n;
	return p;
}

static size_t trim_nl(const char *p, size_t n)
{
	return n && p[n - 1] == '\n' ? n - 1 : n;
}

/* Says where @got first differs from @want, on the log. */
static void show_diff(const char *what, const char *got, size_t glen,
		      const char *want, size_t wlen)
{
	size_t i, line = 1, bol = 0;

	for (i = 0; i < glen && i < wlen && got[i] == want[i]; i++)
		if (got[i] == '\n')
			line++, bol = i + 1;
	tap_diag("%s: differs at byte %zu, line %zu", what, i, line);
	tap_diag("  got:  %.*s",
		 (int)strcspn(got + bol, "\n") > 200
		     ? 200
		     : (int)strcspn(got + bol, "\n"),
		 got + bol);
	tap_diag("  want: %.*s",
		 (int)strcspn(want + bol, "\n") > 200
		     ? 200
		     : (int)strcspn(want + bol, "\n"),
		 want + bol);
}

static bool same_text(const char *what, const char *got, size_t glen,
		      const char *want, size_t wlen)
{
	glen = trim_nl(got, glen);
	wlen = trim_nl(want, wlen);
	if (glen == wlen && !memcmp(got, want, glen))
		return true;
	show_diff(what, got, glen, want, wlen);
	return false;
}

static bool same_bytes(const char *what, const void *got, size_t glen,
		       const void *want, size_t wlen)
{
	const unsigned char *g = got, *w = want;
	size_t i;

	if (glen == wlen && !memcmp(got, want, glen))
		return true;
	for (i = 0; i < glen && i < wlen && g[i] == w[i]; i++)
		;
	tap_diag("%s: %zu bytes, want %zu; first difference at byte %zu", what,
		 glen, wlen, i);
	return false;
}

static bool decodes_to(const char *name, const char *pb, size_t pblen,
		       enum k8s_format fmt, const char *want, size_t wlen)
{
	struct k8s_error err;
	char *out;
	size_t len;
	int ret;
	bool ok;

	ret = k8s_decode(pb, pblen, fmt, &out, &len, &err);
	if (ret < 0) {
		tap_diag("%s: decode: %s (%d)", name, err.message, ret);
		return false;
	}
	ok = same_text(name, out, len, want, wlen);
	free(out);
	return ok;
}

static bool encodes_to(const char *name, const char *text, size_t tlen,
		       enum k8s_format fmt, const char *want, size_t wlen)
{
	struct k8s_error err;
	void *out;
	size_t len;
	int ret;
	bool ok;

	ret = k8s_encode(text, tlen, fmt, NULL, 0, &out, &len, &err);
	if (ret < 0) {
		tap_diag("%s: encode: %s (%d)", name, err.message, ret);
		return false;
	}
	ok = same_bytes(name, out, len, want, wlen);
	free(out);
	return ok;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in @dir ending in ".pb" but not ".after_roundtrip.pb". */
static char **list_pb(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (!ends_with(e->d_name, ".pb") ||
		    ends_with(e->d_name, ".after_roundtrip.pb"))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				abort();
		}
		names[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

struct counts {
	int decode_json, decode_yaml, encode_json, encode_yaml, kinds;
	int no_kind; /* envelopes without a kind */
	int older, older_ok;
	int gone; /* older kinds this release no longer has */
};

/* Whether the envelope of @pb names no kind ("k8s\0", typeMeta {}). */
static bool names_no_kind(const char *pb, size_t len)
{
	return len >= 8 && !memcmp(pb + 4, "\x0a\x04\x0a\x00\x12\x00", 6);
}

/* Whether decoding @pb is refused as a kind not built in. */
static bool refused(const char *pb, size_t len)
{
	struct k8s_error err;
	char *out = NULL;
	size_t olen;
	int ret = k8s_decode(pb, len, K8S_FORMAT_JSON, &out, &olen, &err);

	free(out);
	return ret == -ENOENT;
}

static void head(const char *testdata, struct counts *c)
{
	char dir[4096], path[4200];
	char **names;
	size_t n, i;

	snprintf(dir, sizeof(dir), "%s/HEAD", testdata);
	names = list_pb(dir, &n);
	tap_ok(n > 0, "HEAD holds fixtures (%zu kinds)", n);
	for (i = 0; i < n; i++) {
		size_t base = strlen(names[i]) - 3, pblen, jlen, ylen;
		char *pb, *json, *yaml;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		pb = slurp(path, &pblen);
		snprintf(path, sizeof(path), "%s/%.*s.json", dir, (int)base,
			 names[i]);
		json = slurp(path, &jlen);
		snprintf(path, sizeof(path), "%s/%.*s.yaml", dir, (int)base,
			 names[i]);
		yaml = slurp(path, &ylen);
		if (!pb || !json || !yaml) {
			tap_ok(0, "%s: its .pb, .json and .yaml", names[i]);
			free(pb), free(json), free(yaml);
			continue;
		}
		if (names_no_kind(pb, pblen)) {
			/*
			 * WatchEvent's fixture has an empty envelope: its type
			 * comes from the Go caller, which a value in etcd
			 * never has.  The codec must refuse it, not guess.
			 */
			c->no_kind++;
			tap_ok(refused(pb, pblen),
			       "%s names no kind: refused "
			       "as not built in",
			       names[i]);
			free(pb), free(json), free(yaml);
			free(names[i]);
			continue;
		}
		c->kinds++;
		c->decode_json +=
		    tap_ok(decodes_to(names[i], pb, pblen, K8S_FORMAT_JSON,
				      json, jlen),
			   "decode %s to JSON", names[i]);
		c->decode_yaml +=
		    tap_ok(decodes_to(names[i], pb, pblen, K8S_FORMAT_YAML,
				      yaml, ylen),
			   "decode %s to YAML", names[i]);
		c->encode_json +=
		    tap_ok(encodes_to(names[i], json, jlen, K8S_FORMAT_JSON, pb,
				      pblen),
			   "encode %.*s.json", (int)base, names[i]);
		c->encode_yaml +=
		    tap_ok(encodes_to(names[i], yaml, ylen, K8S_FORMAT_YAML, pb,
				      pblen),
			   "encode %.*s.yaml", (int)base, names[i]);
		free(pb), free(json), free(yaml);
		free(names[i]);
	}
	free(names);
}

/*
 * One older .pb: it decodes, encodes back to itself or to its
 * .after_roundtrip.pb, and a save over it (the .pb as the value replaced)
 * is refused exactly when that drops something (an .after_roundtrip.pb).
 * -1: a kind this release no longer has, -2: an envelope naming no kind
 * (each refused as not built in).
 */
static int older_one(const char *dir, const char *name)
{
	char path[4200];
	struct k8s_error err;
	char *pb, *after, *text;
	size_t pblen, alen = 0, tlen, base = strlen(name) - 3, len;
	void *out;
	bool ok;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	pb = slurp(path, &pblen);
	snprintf(path, sizeof(path), "%s/%.*s.after_roundtrip.pb", dir,
		 (int)base, name);
	after = slurp(path, &alen);
	if (!pb) {
		free(after);
		return 0;
	}
	if (names_no_kind(pb, pblen)) {
		ret = refused(pb, pblen) ? -2 : 0;
		free(pb), free(after);
		return ret;
	}
	ret = k8s_decode(pb, pblen, K8S_FORMAT_JSON, &text, &tlen, &err);
	if (ret == -ENOENT) {
		tap_diag("%s: %s", name, err.message);
		free(pb), free(after);
		return -1;
	}
	if (ret < 0) {
		tap_diag("%s: decode: %s (%d)", name, err.message, ret);
		free(pb), free(after);
		return 0;
	}
	ret =
	    k8s_encode(text, tlen, K8S_FORMAT_JSON, NULL, 0, &out, &len, &err);
	if (ret < 0) {
		tap_diag("%s: encode: %s (%d)", name, err.message, ret);
		ok = false;
	} else {
		ok = after ? same_bytes(name, out, len, after, alen)
			   : same_bytes(name, out, len, pb, pblen);
		free(out);
	}
	ret = k8s_encode(text, tlen, K8S_FORMAT_JSON, pb, pblen, &out, &len,
			 &err);
	if (ret == 0) {
		if (ok && !same_bytes(name, out, len, after ? after : pb,
				      after ? alen : pblen))
			ok = false;
		free(out);
	} else if (ok && (ret != -EPROTONOSUPPORT || !after)) {
		/* refused only where Kubernetes drops fields */
		tap_diag("%s: a save over it: %s (%d)", name, err.message, ret);
		ok = false;
	}
	free(text), free(pb), free(after);
	return ok;
}

static void older(const char *testdata, struct counts *c)
{
	DIR *d = opendir(testdata);
	struct dirent *e;
	char **rel = NULL;
	size_t nrel = 0, i, j;

	if (!d) {
		tap_ok(0, "'%s' opens", testdata);
		return;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'v' || strncmp(e->d_name, "v1.", 3))
			continue;
		rel = realloc(rel, (nrel + 1) * sizeof(*rel));
		if (!rel)
			abort();
		rel[nrel++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(rel, nrel, sizeof(*rel), cmp_str);
	tap_ok(nrel > 0, "older releases' fixtures (%zu releases)", nrel);
	for (i = 0; i < nrel; i++) {
		char dir[4096];
		char **names;
		size_t n;

		snprintf(dir, sizeof(dir), "%s/%s", testdata, rel[i]);
		names = list_pb(dir, &n);
		for (j = 0; j < n; j++) {
			int r = older_one(dir, names[j]);

			if (r == -2) {
				c->no_kind++;
				tap_ok(1,
				       "%s/%s names no kind: refused as "
				       "not built in",
				       rel[i], names[j]);
			} else if (r < 0) {
				c->gone++;
				tap_ok(1,
				       "%s/%s: a kind this release no "
				       "longer has, refused",
				       rel[i], names[j]);
			} else {
				c->older++;
				c->older_ok += tap_ok(r,
						      "%s/%s decodes and "
						      "re-encodes",
						      rel[i], names[j]);
			}
			free(names[j]);
		}
		free(names);
		free(rel[i]);
	}
	free(rel);
}

int main(int argc, char **argv)
{
	struct counts c = {0};

	if (argc != 2) {
		fprintf(stderr, "usage: test-k8s-fixtures TESTDATA\n");
		return 2;
	}
	tap_ok(k8s_built_in(), "the codec is built in (k8s.io/api %s)",
	       k8s_schema_version());
	head(argv[1], &c);
	older(argv[1], &c);
	tap_diag("k8s.io/api %s: %d kinds; envelopes naming no kind, "
		 "refused: %d",
		 k8s_schema_version(), c.kinds, c.no_kind);
	tap_diag("decode json %d/%d, decode yaml %d/%d", c.decode_json, c.kinds,
		 c.decode_yaml, c.kinds);
	tap_diag("encode json %d/%d, encode yaml %d/%d", c.encode_json, c.kinds,
		 c.encode_yaml, c.kinds);
	tap_diag("older releases %d/%d, and %d of kinds this release no "
		 "longer has (refused)",
		 c.older_ok, c.older, c.gone);
	return tap_done(0);
}
