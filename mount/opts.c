/*
 * opts.c - the option table of etcdfs and what parses it (see opts.h)
 *
 * The table below is the one list of etcdfs's -o options: the fuse_opt
 * table, the parsing of each value, the etcdctl variable it falls back
 * to and --help are all made from it.  A value is parsed as soon as the
 * option is seen, so that a bad one is reported with the option's name
 * (fuse_opt's "%u" would say only "invalid parameter").  The decisions
 * that need more than one option (endpoints, login, prefix) are in
 * opts_finish(), in setup.c.
 *
 * What it cannot do: tell a word meant for mount(8) that it does not know
 * from a typo; it refuses it, naming it.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint.h"
#include "opts.h"
#include "opts_i.h"

#define HELP_COLUMN 27
#define XSTR(x) STR(x)
#define STR(x) #x

/*
 * The offset of the field @m of struct opts, which must be of @type: a
 * row's kind and its field cannot disagree (the array size is -1, a
 * compile error, if they do).
 */
#define FIELD(m, type)							\
	(offsetof(struct opts, m) +					\
	 0 * sizeof(char[__builtin_types_compatible_p(			\
		 __typeof__(((struct opts *)0)->m), type) ? 1 : -1]))

#define FLAG(t, m, v)	.templ = t, .kind = OPT_FLAG, .field = FIELD(m, bool), \
			.flag = v
#define TEXT(t, m)	.templ = t, .kind = OPT_STR, .field = FIELD(m, const char *)
#define FILE_(t, m)	.templ = t, .kind = OPT_FILE, .field = FIELD(m, const char *)
#define MS(t, m)	.templ = t, .kind = OPT_MS, .field = FIELD(m, long)
#define SECS(t, m)	.templ = t, .kind = OPT_SECONDS, .field = FIELD(m, double)
#define SIZE(t, m)	.templ = t, .kind = OPT_SIZE, .field = FIELD(m, size_t)
#define UID(t, m)	.templ = t, .kind = OPT_UID, .field = FIELD(m, uid_t)
#define GID(t, m)	.templ = t, .kind = OPT_GID, .field = FIELD(m, gid_t)
#define OCTAL(t, m)	.templ = t, .kind = OPT_OCTAL, .field = FIELD(m, mode_t)

const struct opts_row opts_rows[] = {
	{ TEXT("endpoints=", endpoints_opt), .usage = "endpoints=URL[,URL...]",
	  .help = "etcd's client URLs or etcdctl's HOST:PORT (https://\n"
		  "with TLS options, else http://), tried in turn\n"
		  "(default: the ENDPOINTS argument, else\n"
		  "ETCDCTL_ENDPOINTS, else " ENDPOINT_DEFAULT ")" },
	{ TEXT("prefix=", prefix_opt), .usage = "prefix=PREFIX",
	  .help = "show the keys under PREFIX (default: /);\n"
		  "a '/' is added if missing; prefix= (empty)\n"
		  "shows the whole key space" },
	{ TEXT("api=", api), .usage = "api=v3|v2",
	  .help = "the etcd API to speak (default: v3)" },
	{ FLAG("refresh_endpoints", refresh_on, true),
	  .usage = "refresh_endpoints[=SEC]",
	  .help = "talk to the members the cluster lists (their\n"
		  "client URLs, then the endpoints given), asked at\n"
		  "mount, then at most every SEC seconds while in\n"
		  "use (default: " XSTR(OPTS_REFRESH_SECONDS) ") and after "
		  "every endpoint failed" },
	{ TEXT("refresh_endpoints=", refresh_opt) },
	{ FILE_("cacert=", store.cacert), .env = "ETCDCTL_CACERT",
	  .usage = "cacert=FILE",
	  .help = "CA certificates to check the server with (PEM)" },
	{ FILE_("cert=", store.cert), .env = "ETCDCTL_CERT",
	  .usage = "cert=FILE", .help = "client certificate (PEM)" },
	{ FILE_("key=", store.key), .env = "ETCDCTL_KEY", .usage = "key=FILE",
	  .help = "the client certificate's private key (PEM)" },
	{ FLAG("insecure_skip_tls_verify", store.insecure_skip_tls_verify,
	       true), .env = "ETCDCTL_INSECURE_SKIP_TLS_VERIFY",
	  .usage = "insecure_skip_tls_verify",
	  .help = "accept any server certificate (no CA, no name\n"
		  "check): for tests only, logged as a warning" },
	{ TEXT("user=", user_opt), .usage = "user=NAME",
	  .help = "log in to etcd as NAME (default: ETCDCTL_USER,\n"
		  "NAME or NAME:PASSWORD)" },
	{ FILE_("password_file=", password_file),
	  .usage = "password_file=FILE",
	  .help = "read the password from FILE's first line; else\n"
		  "from ETCDFS_PASSWORD, ETCDCTL_PASSWORD or\n"
		  "ETCDCTL_USER (never on the command line)" },
	{ FLAG("ro", fs.ro, true), .keep = true, .usage = "ro",
	  .help = "read-only (for the kernel too): every change\n"
		  "fails with EROFS; other clients' changes are\n"
		  "shown but raise no inotify events" },
	{ FLAG("rw", fs.ro, false), .keep = true },
	{ TEXT("revision=", revision_opt), .usage = "revision=REV",
	  .help = "show the keys as they were at revision REV,\n"
		  "read-only (EROFS), without a watch (v3 only;\n"
		  "a compacted or future REV is refused)" },
	{ FILE_("snapshot=", store.snapshot), .usage = "snapshot=FILE",
	  .help = "show an etcd snapshot file (etcdctl snapshot\n"
		  "save, or a member's db) instead of a cluster:\n"
		  "read-only (EROFS), no watch; revision= works\n"
		  "(default: the ENDPOINTS argument, if it names\n"
		  "a regular file)" },
	{ FLAG("skip_hash_check", store.skip_hash_check, true),
	  .usage = "skip_hash_check",
	  .help = "open a snapshot whose sha256 trailer does not\n"
		  "match its bytes" },
	{ TEXT("max_txn_ops=", max_txn_ops_opt), .usage = "max_txn_ops=N",
	  .help = "the cluster's --max-txn-ops: a directory of up\n"
		  "to N/2 keys is renamed in one transaction, a\n"
		  "larger one (any one on v2) is EXDEV (mv copies);\n"
		  "listings count at most N ranges a txn (default:\n"
		  "128)" },
	{ TEXT("codec=", codec_opt), .usage = "codec=PROG",
	  .help = "show each value as `PROG decode` writes it (the\n"
		  "raw value where it fails) and save what\n"
		  "`PROG encode` makes of the edited text (EINVAL\n"
		  "where it fails), as etcd-io/auger; PROG is a\n"
		  "path or a name in PATH, without arguments" },
	{ FLAG("k8s", fs.k8s, true), .usage = "k8s[=yaml]",
	  .help = "show Kubernetes' protobuf objects as the JSON\n"
		  "(k8s=yaml: the YAML) Kubernetes writes, and\n"
		  "save edited text as protobuf again (EINVAL\n"
		  "where it is no valid object); other values as\n"
		  "they are" },
	{ TEXT("k8s=", k8s_opt) },
	{ TEXT("codec_prefix=", codec_prefix_opt),
	  .usage = "codec_prefix=PREFIX",
	  .help = "apply codec= to the keys that start with\n"
		  "PREFIX only, e.g. /registry/ (default: every\n"
		  "key of the mount)" },
	{ FLAG("quorum", fs.quorum, true), .usage = "quorum",
	  .help = "linearizable reads: each lookup, open and\n"
		  "listing sees every write that completed\n"
		  "before it" },
	{ FLAG("nowatch", fs.nowatch, true), .usage = "nowatch",
	  .help = "do not watch the cluster: a directory is\n"
		  "listed again when opened, a file read again\n"
		  "when opened" },
	{ FLAG("delay_connect", fs.delay_connect, true),
	  .usage = "delay_connect",
	  .help = "mount at once, even while etcd is down: until\n"
		  "etcd answers, every operation fails with\n"
		  "ENOTCONN and the mount keeps trying (default:\n"
		  "fail at once if etcd does not answer)" },
	{ MS("connect_timeout=", store.connect_timeout_ms),
	  .env = "ETCDCTL_DIAL_TIMEOUT", .usage = "connect_timeout=TIME",
	  .help = "give up connecting after TIME: milliseconds or\n"
		  "a duration (500ms, 2s, 1m30s)\n"
		  "(default: " XSTR(ENDPOINT_DIAL_TIMEOUT_MS) ")" },
	{ MS("dial_timeout=", store.connect_timeout_ms),
	  .usage = "dial_timeout=TIME",
	  .help = "etcdctl's name of connect_timeout" },
	{ MS("request_timeout=", store.request_timeout_ms),
	  .env = "ETCDCTL_COMMAND_TIMEOUT", .usage = "request_timeout=TIME",
	  .help = "give up a request after TIME\n"
		  "(default: " XSTR(ENDPOINT_COMMAND_TIMEOUT_MS) ")" },
	{ MS("command_timeout=", store.request_timeout_ms),
	  .usage = "command_timeout=TIME",
	  .help = "etcdctl's name of request_timeout" },
	{ SECS("entry_timeout=", fs.entry_timeout), .usage = "entry_timeout=SEC",
	  .help = "let the kernel cache names for SEC seconds\n"
		  "(default: " XSTR(OPTS_CACHE_SECONDS) ", or "
		  XSTR(OPTS_NOWATCH_CACHE_SECONDS) " with nowatch,\n"
		  "0 with quorum)" },
	{ SECS("attr_timeout=", fs.attr_timeout), .usage = "attr_timeout=SEC",
	  .help = "let the kernel cache attributes for SEC\n"
		  "seconds (default: as entry_timeout)" },
	{ UID("uid=", fs.uid), .usage = "uid=N",
	  .help = "owner of every file (default: the caller's)" },
	{ GID("gid=", fs.gid), .usage = "gid=N",
	  .help = "group of every file (default: the caller's)" },
	{ OCTAL("umask=", fs.umask), .usage = "umask=OCTAL",
	  .help = "permissions to take away from 0777 (dirs) and\n"
		  "0666 (files) (default: the caller's umask)" },
	{ FLAG("notemp", fs.temp_in_memory, false), .usage = "notemp",
	  .help = "editors' temporary, swap and backup files go\n"
		  "to etcd like any file (default: they stay in\n"
		  "the mount's memory)" },
	{ TEXT("temp_names=", fs.temp_names),
	  .usage = "temp_names=PATTERN[:PATTERN...]",
	  .help = "more names of temp files, as shell patterns\n"
		  "(fnmatch), e.g. '*.part'" },
	{ FLAG("chmod_ok", fs.chmod_ok, true), .usage = "chmod_ok",
	  .help = "accept chmod and chown that change something\n"
		  "(they are not stored; default: EPERM)" },
	{ SIZE("value_budget=", fs.value_budget), .usage = "value_budget=SIZE",
	  .help = "hold at most SIZE bytes of values in memory\n"
		  "(K, M, G: KiB, MiB, GiB); the others are read\n"
		  "again when opened (default: hold them all)" },
	{ SIZE("quota=", fs.quota), .usage = "quota=SIZE",
	  .help = "the size df shows: etcd's --quota-backend-bytes\n"
		  "(K, M, G; default: 2G, etcd's default); used is\n"
		  "the size of etcd's database" },
	{ FILE_("logfile=", logfile), .usage = "logfile=FILE", .create = true,
	  .help = "append messages to FILE rather than to stderr\n"
		  "or (in the background) syslog" },
};

const size_t opts_nrows = sizeof(opts_rows) / sizeof(opts_rows[0]);

/* Understood by fuse_session_new() and the kernel: passed on. */
static const char *const fuse_words[] = {
	"-d", "debug", "fsname=", "subtype=", "allow_other", "allow_root",
	"auto_unmount", "max_read=", "suid", "nosuid", "dev", "nodev",
	"exec", "noexec", "async", "sync", "dirsync", "atime", "noatime",
	"nodiratime", "context=", "fscontext=", "defcontext=",
	"rootcontext=",
};

/*
 * Meant for mount(8), fstab and systemd, or added by them: dropped.
 * "x-" and "X-" words (x-systemd.automount, x-mount.mkdir, ...) are
 * dropped by their prefix; default_permissions is always added once.
 */
static const char *const mount_words[] = {
	"_netdev", "_rnetdev", "nofail", "noauto", "auto", "user", "nouser",
	"users", "owner", "group", "defaults", "comment=", "nobootwait",
	"bootwait", "default_permissions",
};

#define N_FUSE_WORDS (sizeof(fuse_words) / sizeof(fuse_words[0]))
#define N_MOUNT_WORDS (sizeof(mount_words) / sizeof(mount_words[0]))

enum {
	KEY_FUSE = 1000,	/* keys below are rows of opts_rows */
	KEY_MOUNT,
};

/* Built once from the table and the word lists. */
static struct fuse_opt fuse_table[OPTS_MAX_ROWS + N_FUSE_WORDS +
				   N_MOUNT_WORDS + 1];

static void build_fuse_table(void)
{
	size_t i, n = 0;

	_Static_assert(sizeof(opts_rows) / sizeof(opts_rows[0]) <=
		       OPTS_MAX_ROWS, "too many option rows");
	for (i = 0; i < opts_nrows; i++)
		fuse_table[n++] = (struct fuse_opt)
			FUSE_OPT_KEY(opts_rows[i].templ, (int)i);
	for (i = 0; i < N_FUSE_WORDS; i++)
		fuse_table[n++] = (struct fuse_opt)
			FUSE_OPT_KEY(fuse_words[i], KEY_FUSE);
	for (i = 0; i < N_MOUNT_WORDS; i++)
		fuse_table[n++] = (struct fuse_opt)
			FUSE_OPT_KEY(mount_words[i], KEY_MOUNT);
	fuse_table[n] = (struct fuse_opt)FUSE_OPT_END;
}

void opts_bad_value(const char *name, const char *from, const char *s,
		    const char *why)
{
	/* from an option: 'name'; from the environment: the variable */
	if (from && from != OPTS_FROM_OPTION)
		fuse_log(FUSE_LOG_ERR, "etcdfs: bad value for %s: '%s'%s%s\n",
			 from, s, why ? ": " : "", why ? why : "");
	else
		fuse_log(FUSE_LOG_ERR, "etcdfs: bad value for '%s': '%s'%s%s\n",
			 name, s, why ? ": " : "", why ? why : "");
}

/* A whole number in [min, max], written in @base; no sign, no spaces. */
static int parse_num(const char *s, int base, long long min, long long max,
		     long long *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoll(s, &end, base);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int opts_parse_num(const char *name, const char *from, const char *s,
		   int base, long long min, long long max, long long *out)
{
	if (parse_num(s, base, min, max, out) == 0)
		return 0;
	opts_bad_value(name, from, s, NULL);
	return -1;
}

/* A size in bytes, with an optional K, M or G (powers of 1024). */
static int parse_size(const char *s, size_t *out)
{
	unsigned shift = 0;
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end != '\0' || v > (SIZE_MAX >> shift))
		return -1;
	*out = (size_t)(v << shift);
	return 0;
}

/* Seconds, fractions allowed, >= 0. */
static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)s[0]) && s[0] != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

/* etcdctl's booleans are Go's strconv.ParseBool. */
static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "t", "T", "true", "TRUE",
					   "True" };
	static const char *const no[] = { "0", "f", "F", "false", "FALSE",
					  "False" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/*
 * The absolute form of the file @s, so that it still names the same file
 * after fuse_daemonize() changes to "/"; a file that is missing is
 * reported now rather than at the first TLS handshake.  With @create
 * (a log file), only its directory must exist.
 */
static char *absolute_file(const char *s, bool create)
{
	char *abs, *dir, *slash, *out;
	size_t len;

	abs = realpath(s, NULL);
	if (abs || !create || errno != ENOENT) {
		if (!abs)
			fuse_log(FUSE_LOG_ERR, "etcdfs: cannot read '%s': %s\n",
				 s, strerror(errno));
		return abs;
	}
	/* a log file not made yet: its directory, then its name */
	dir = strdup(s);
	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	abs = realpath(slash ? (dir[0] ? dir : "/") : ".", NULL);
	if (!abs) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot write '%s': %s\n", s,
			 strerror(errno));
		free(dir);
		return NULL;
	}
	len = strlen(abs) + strlen(slash ? slash + 1 : dir) + 2;
	out = malloc(len);
	if (out)
		snprintf(out, len, "%s/%s", strcmp(abs, "/") ? abs : "",
			 slash ? slash + 1 : dir);
	free(abs);
	free(dir);
	return out;
}

/* Replaces row @i's string by a copy of @s (NULL after a message). */
static const char *set_val(struct opts *o, size_t i, const char *s,
			   bool file)
{
	char *copy = file ? absolute_file(s, opts_rows[i].create) : strdup(s);

	if (!copy) {
		if (!file || errno == ENOMEM)
			fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
		return NULL;
	}
	free(o->val[i]);
	o->val[i] = copy;
	return copy;
}

int opts_apply(struct opts *o, size_t i, const char *value, const char *from)
{
	const struct opts_row *r = &opts_rows[i];
	const char *name = r->usage ? r->usage : r->templ;
	char *dst = (char *)o + r->field;
	char why[160];
	long long v;
	long ms;
	int len = (int)strcspn(name, "=[");
	char shortname[64];
	const char *s;

	snprintf(shortname, sizeof(shortname), "%.*s", len, name);
	switch (r->kind) {
	case OPT_FLAG:
		if (from == OPTS_FROM_OPTION) {
			*(bool *)(void *)dst = r->flag;
		} else if (parse_bool(value, (bool *)(void *)dst) != 0) {
			opts_bad_value(shortname, from, value,
				       "expected true or false");
			return -1;
		}
		break;
	case OPT_STR:
	case OPT_FILE:
		if (r->kind == OPT_FILE && value[0] == '\0') {
			opts_bad_value(shortname, from, value, NULL);
			return -1;
		}
		s = set_val(o, i, value, r->kind == OPT_FILE);
		if (!s)
			return -1;
		*(const char **)(void *)dst = s;
		break;
	case OPT_MS:
		if (endpoint_duration_ms(value, &ms, why, sizeof(why)) != 0) {
			opts_bad_value(shortname, from, value, why);
			return -1;
		}
		*(long *)(void *)dst = ms;
		break;
	case OPT_SECONDS:
		if (parse_seconds(value, (double *)(void *)dst) != 0)
			goto bad;
		break;
	case OPT_SIZE:
		if (parse_size(value, (size_t *)(void *)dst) != 0)
			goto bad;
		break;
	case OPT_UID:
	case OPT_GID:
		/* (uid_t)-1 means "no change" to chown(2): not an owner */
		if (parse_num(value, 10, 0, UINT32_MAX - 1, &v) != 0)
			goto bad;
		if (r->kind == OPT_UID)
			*(uid_t *)(void *)dst = (uid_t)v;
		else
			*(gid_t *)(void *)dst = (gid_t)v;
		break;
	case OPT_OCTAL:
		if (parse_num(value, 8, 0, 0777, &v) != 0)
			goto bad;
		*(mode_t *)(void *)dst = (mode_t)v;
		break;
	}
	o->from[i] = from;
	return 0;
bad:
	opts_bad_value(shortname, from, value, NULL);
	return -1;
}

/* True if a word of -o can only be one more endpoint of a list. */
static bool is_endpoint_word(const char *arg)
{
	const char *colon = strrchr(arg, ':');

	if (strchr(arg, '='))
		return false;
	if (strncasecmp(arg, "http://", 7) == 0 ||
	    strncasecmp(arg, "https://", 8) == 0 || arg[0] == '[')
		return true;
	/* HOST:PORT */
	return colon && colon > arg && isdigit((unsigned char)colon[1]);
}

/*
 * fuse_opt splits -o at every comma, so "endpoints=URL1,URL2" arrives as
 * "endpoints=URL1" and "URL2": a word that is an endpoint can be no
 * other option, and joins the endpoints given before it.
 */
static int add_endpoint(struct opts *o, const char *word)
{
	size_t i = opts_row("endpoints=");
	size_t len = strlen(o->val[i]) + strlen(word) + 2;
	char *list = malloc(len);

	if (!list) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
		return -1;
	}
	snprintf(list, len, "%s,%s", o->val[i], word);
	free(o->val[i]);
	o->val[i] = list;
	o->endpoints_opt = list;
	return 0;
}

static int opts_proc(void *data, const char *arg, int key,
		     struct fuse_args *outargs)
{
	struct opts *o = data;
	const struct opts_row *r;

	if (key >= 0 && (size_t)key < opts_nrows) {
		r = &opts_rows[key];
		if (opts_apply(o, (size_t)key, arg + strlen(r->templ),
			       OPTS_FROM_OPTION) != 0)
			return -1;
		return r->keep ? 1 : 0;
	}
	switch (key) {
	case KEY_FUSE:
		if (strncmp(arg, "fsname=", 7) == 0)
			o->has_fsname = true;
		if (strncmp(arg, "subtype=", 8) == 0)
			o->has_subtype = true;
		return 1;
	case KEY_MOUNT:
		return 0;
	case FUSE_OPT_KEY_OPT:
		/* x-systemd.automount and friends are for systemd; ",," */
		if (strncasecmp(arg, "x-", 2) == 0 || arg[0] == '\0')
			return 0;
		if (o->endpoints_opt && is_endpoint_word(arg))
			return add_endpoint(o, arg) == 0 ? 0 : -1;
		fuse_log(FUSE_LOG_ERR, "etcdfs: unknown option '%s'\n", arg);
		return -1;
	default:
		/* fuse_parse_cmdline() took the mountpoint and refused more */
		fuse_log(FUSE_LOG_ERR, "etcdfs: unexpected argument '%s'\n",
			 arg);
		return -1;
	}
}

int opts_parse(struct fuse_args *args, struct opts *o)
{
	if (!fuse_table[0].templ)
		build_fuse_table();
	return fuse_opt_parse(args, o, fuse_table, opts_proc);
}

size_t opts_row(const char *templ)
{
	size_t i;

	for (i = 0; i < opts_nrows; i++)
		if (strcmp(opts_rows[i].templ, templ) == 0)
			return i;
	abort();	/* a name in the code that is not in the table */
}

/* What opts_take_source() collects. */
struct nonopts {
	char *v[3];
	size_t n;
};

static int nonopt_proc(void *data, const char *arg, int key,
		       struct fuse_args *outargs)
{
	struct nonopts *no = data;

	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (no->n == 3)
		return 0;	/* the third is refused below */
	no->v[no->n] = strdup(arg);
	if (!no->v[no->n])
		return -1;
	no->n++;
	return 0;
}

int opts_take_source(struct fuse_args *args, struct opts *o)
{
	struct nonopts no = { { NULL }, 0 };
	size_t i;
	int ret = -1;

	if (fuse_opt_parse(args, &no, NULL, nonopt_proc) == -1) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
		goto out;
	}
	if (no.n == 3) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: unexpected argument '%s'\n",
			 no.v[2]);
		goto out;
	}
	if (no.n == 2) {
		o->source = no.v[0];
		no.v[0] = NULL;
	}
	/* the mountpoint goes back, for fuse_parse_cmdline() */
	if (no.n > 0 && fuse_opt_add_arg(args, no.v[no.n - 1]) == -1)
		goto out;
	ret = 0;
out:
	for (i = 0; i < no.n; i++)
		free(no.v[i]);
	return ret;
}

void opts_usage(FILE *f, const char *progname)
{
	fprintf(f, "usage: %s [options] [ENDPOINTS] MOUNTPOINT\n", progname);
}

void opts_help(const char *progname)
{
	const struct opts_row *r;
	const char *line, *nl;
	size_t i;
	int w;

	opts_usage(stdout, progname);
	printf("\n"
"Mounts an etcd cluster's key space, or one prefix of it, at MOUNTPOINT:\n"
"keys are files, the '/' in their names make directories.  ENDPOINTS is\n"
"a comma list, as endpoints= takes it; mount(8) and fstab pass it so.\n"
"\n"
"etcdfs options:\n");
	for (i = 0; i < opts_nrows; i++) {
		r = &opts_rows[i];
		if (!r->usage)
			continue;
		/* the text from column 27, below a long option */
		w = printf("    -o %s", r->usage);
		if (w > 25) {
			printf("\n");
			w = 0;
		}
		printf("%*s", HELP_COLUMN - w, "");
		for (line = r->help; line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			printf("%*s%.*s\n", line == r->help ? 0 : HELP_COLUMN,
			       "", nl ? (int)(nl - line) : (int)strlen(line),
			       line);
		}
	}
	printf("\n"
"Extended attributes of a file (getfattr -n NAME, setfattr -n NAME -v V):\n"
"    user.etcd.resourceVersion, user.etcd.createRevision,\n"
"    user.etcd.version, user.etcd.lease\n"
"                           the key's mod_revision, create_revision,\n"
"                           version and lease (hex, as etcdctl's)\n"
"    user.etcd.pin          write: the revision the next write of the key\n"
"                           by the same script must find (else ESTALE)\n"
"    user.etcd.ttl          the seconds the key has left; write: give it a\n"
"                           time to live of V seconds in one compare-and-\n"
"                           swap (v3: a lease), 0 or setfattr -x: none\n"
"    user.etcd.history      the revisions of the key etcd still holds:\n"
"                           revision, version, when the mount saw it\n"
"    user.k8s.apiVersion, user.k8s.kind\n"
"                           a Kubernetes object's TypeMeta, from its\n"
"                           protobuf envelope (k8s\\0) or its JSON\n"
"The root's: user.etcd.endpoint, user.etcd.revision, user.etcd.backend,\n"
"user.etcd.watch, user.etcd.valueBytes, user.etcd.stats (counters).\n"
"\n"
"Environment, read when the option is not given (as etcdctl reads it):\n"
"    ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY,\n"
"    ETCDCTL_USER (NAME or NAME:PASSWORD), ETCDCTL_PASSWORD,\n"
"    ETCDCTL_DIAL_TIMEOUT, ETCDCTL_COMMAND_TIMEOUT,\n"
"    ETCDCTL_INSECURE_SKIP_TLS_VERIFY; and ETCDFS_PASSWORD.\n"
"    NOTIFY_SOCKET: tell systemd when the mount is ready.\n"
"\n"
"Permissions are checked by the kernel (default_permissions) against\n"
"uid, gid and umask.  Words meant for mount(8), fstab and systemd\n"
"(_netdev, nofail, noauto, auto, user, users, owner, group, defaults,\n"
"comment=, x-*) are ignored.  See etcdfs(1).\n"
"\n");
}
