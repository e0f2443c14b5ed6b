/*
 * main.c - the etcdfs daemon: options, checks, mount, serve, unmount
 *
 * Parses the command line (libfuse's generic options with
 * fuse_parse_cmdline(), then ours with fuse_opt_parse()), checks that the
 * mountpoint is a directory and that the cluster answers, mounts the
 * filesystem of fs/ over a store of helper/ and serves it until it is
 * unmounted (fusermount3 -u, umount) or the daemon gets SIGTERM, SIGINT or
 * SIGHUP, which unmount it.  Every check that can fail is done before
 * forking into the background, so that a mistake is reported on the
 * terminal with a non-zero exit status rather than in a log nobody reads.
 *
 * Once in the background, messages go to syslog (facility daemon); debug
 * messages are written only with -d, which also keeps the daemon in the
 * foreground.
 *
 * What it cannot do: take a password on the command line (on purpose: it
 * would show in ps and in the shell's history; use password_file= or
 * ETCDFS_PASSWORD), mount without a reachable cluster, or take the
 * endpoints as a "source" argument before the mountpoint, the way mount(8)
 * calls helpers: give them with -o endpoints=.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fs.h"		/* defines FUSE_USE_VERSION before fuse_lowlevel.h */
#include "store.h"

/*
 * How long the kernel may cache names and attributes when not told.  With
 * the watch, every change another client makes invalidates exactly what it
 * touches, so the kernel may keep them for long; without it nothing tells
 * the kernel, and a second is what a stale stat may lag behind.
 */
#define DEFAULT_TIMEOUT 3600.0
#define DEFAULT_NOWATCH_TIMEOUT 1.0

/*
 * Idle FUSE worker threads beyond this many exit.  Each thread keeps a
 * connection to etcd of its own, so a burst should not leave hundreds.
 */
#define MAX_IDLE_THREADS 10

/*
 * How often -o refresh_endpoints asks the cluster for its members when not
 * told: often enough to follow a member replaced in a maintenance window,
 * rare enough to cost nothing (one small request, only while the mount is
 * used; at once, though, after every endpoint failed).
 */
#define DEFAULT_REFRESH_SECONDS 30

/*
 * The -o options of etcdfs.  Numbers are taken as strings and converted
 * after parsing, so that a bad one gets a message that names it (fuse_opt's
 * "%u" would say only "invalid parameter").  The strings are owned: fuse_opt
 * strdup()s them and frees the previous value when an option is repeated.
 */
struct etcdfs_opts {
	char *endpoints;
	char *prefix;
	char *api;
	char *cacert;
	char *cert;
	char *key;
	char *user;
	char *password_file;
	char *connect_timeout;
	char *request_timeout;
	char *entry_timeout;
	char *attr_timeout;
	char *uid;
	char *gid;
	char *umask;
	char *value_budget;
	char *refresh_endpoints;	/* refresh_endpoints=SEC */
	int refresh_endpoints_on;	/* refresh_endpoints */
	int ro;
	int quorum;
	int nowatch;
	int notemp;
	int chmod_ok;
	int has_fsname;		/* the user named the mount: keep it */
	int has_subtype;
};

enum {
	KEY_ENDPOINTS,
	KEY_KEEP_FUSE,		/* understood by fuse_session_new/_mount */
	KEY_FSTAB,		/* meant for mount(8) only */
};

#define ETCDFS_OPT(t, p, v) { t, offsetof(struct etcdfs_opts, p), v }

static const struct fuse_opt etcdfs_opt_table[] = {
	FUSE_OPT_KEY("endpoints=", KEY_ENDPOINTS),
	ETCDFS_OPT("prefix=%s", prefix, 0),
	ETCDFS_OPT("api=%s", api, 0),
	ETCDFS_OPT("cacert=%s", cacert, 0),
	ETCDFS_OPT("cert=%s", cert, 0),
	ETCDFS_OPT("key=%s", key, 0),
	ETCDFS_OPT("user=%s", user, 0),
	ETCDFS_OPT("password_file=%s", password_file, 0),
	ETCDFS_OPT("connect_timeout=%s", connect_timeout, 0),
	ETCDFS_OPT("request_timeout=%s", request_timeout, 0),
	ETCDFS_OPT("entry_timeout=%s", entry_timeout, 0),
	ETCDFS_OPT("attr_timeout=%s", attr_timeout, 0),
	ETCDFS_OPT("uid=%s", uid, 0),
	ETCDFS_OPT("gid=%s", gid, 0),
	ETCDFS_OPT("umask=%s", umask, 0),
	ETCDFS_OPT("value_budget=%s", value_budget, 0),
	ETCDFS_OPT("refresh_endpoints", refresh_endpoints_on, 1),
	ETCDFS_OPT("refresh_endpoints=%s", refresh_endpoints, 0),
	/*
	 * ro is enforced by the filesystem (EROFS), not by the kernel: the
	 * thread that replays other clients' changes as local syscalls must
	 * still be able to write through the mountpoint.
	 */
	ETCDFS_OPT("ro", ro, 1),
	ETCDFS_OPT("rw", ro, 0),
	ETCDFS_OPT("quorum", quorum, 1),
	ETCDFS_OPT("nowatch", nowatch, 1),
	ETCDFS_OPT("notemp", notemp, 1),
	ETCDFS_OPT("chmod_ok", chmod_ok, 1),
	ETCDFS_OPT("fsname=", has_fsname, 1),
	ETCDFS_OPT("subtype=", has_subtype, 1),
	/* Always added once below. */
	FUSE_OPT_KEY("default_permissions", FUSE_OPT_KEY_DISCARD),

	FUSE_OPT_KEY("-d", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("debug", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("fsname=", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("subtype=", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("allow_other", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("allow_root", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("auto_unmount", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("max_read=", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("rw", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("suid", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("nosuid", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("dev", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("nodev", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("exec", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("noexec", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("async", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("sync", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("dirsync", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("noatime", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("nodiratime", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("context=", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("fscontext=", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("defcontext=", KEY_KEEP_FUSE),
	FUSE_OPT_KEY("rootcontext=", KEY_KEEP_FUSE),

	FUSE_OPT_KEY("_netdev", KEY_FSTAB),
	FUSE_OPT_KEY("nofail", KEY_FSTAB),
	FUSE_OPT_KEY("noauto", KEY_FSTAB),
	FUSE_OPT_KEY("auto", KEY_FSTAB),
	FUSE_OPT_KEY("user", KEY_FSTAB),
	FUSE_OPT_KEY("nouser", KEY_FSTAB),
	FUSE_OPT_KEY("users", KEY_FSTAB),
	FUSE_OPT_KEY("owner", KEY_FSTAB),
	FUSE_OPT_KEY("group", KEY_FSTAB),
	FUSE_OPT_KEY("defaults", KEY_FSTAB),
	FUSE_OPT_KEY("comment=", KEY_FSTAB),
	FUSE_OPT_END
};

static bool is_url(const char *s)
{
	return strncasecmp(s, "http://", 7) == 0 ||
	       strncasecmp(s, "https://", 8) == 0;
}

/*
 * fuse_opt splits -o at every comma, so "endpoints=URL1,URL2" arrives as
 * "endpoints=URL1" and "URL2".  A word that is a URL can be no other
 * option: it joins the endpoints given before it.
 */
static int add_endpoint(struct etcdfs_opts *o, const char *url)
{
	size_t len = strlen(o->endpoints) + strlen(url) + 2;
	char *list = malloc(len);

	if (!list) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
		return -1;
	}
	snprintf(list, len, "%s,%s", o->endpoints, url);
	free(o->endpoints);
	o->endpoints = list;
	return 0;
}

static int etcdfs_opt_proc(void *data, const char *arg, int key,
			   struct fuse_args *outargs)
{
	struct etcdfs_opts *o = data;

	switch (key) {
	case KEY_ENDPOINTS:
		free(o->endpoints);	/* the last endpoints= wins */
		o->endpoints = strdup(arg + strlen("endpoints="));
		if (!o->endpoints) {
			fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
			return -1;
		}
		return 0;
	case KEY_KEEP_FUSE:
		return 1;
	case KEY_FSTAB:
		return 0;
	case FUSE_OPT_KEY_OPT:
		/* x-systemd.automount and friends are for systemd; ",," */
		if (strncmp(arg, "x-", 2) == 0 || arg[0] == '\0')
			return 0;
		if (o->endpoints && is_url(arg))
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

static void usage(FILE *f, const char *progname)
{
	fprintf(f, "usage: %s [options] MOUNTPOINT\n", progname);
}

static void help(const char *progname)
{
	usage(stdout, progname);
	printf("\n"
"Mounts an etcd cluster's key space, or one prefix of it, at MOUNTPOINT:\n"
"keys are files, the '/' in their names make directories.\n"
"\n"
"etcdfs options:\n"
"    -o endpoints=URL[,URL...]  the cluster's members\n"
"                           (default: " ETCDFS_DEFAULT_ENDPOINT ")\n"
"    -o prefix=PREFIX       show the keys under PREFIX (default: /);\n"
"                           a '/' is added if missing; prefix= (empty)\n"
"                           shows the whole key space\n"
"    -o api=v3|v2           the etcd API to speak (default: v3)\n"
"    -o refresh_endpoints[=SEC]  talk to the members the cluster lists\n"
"                           (their client URLs, then the endpoints given),\n"
"                           asked at mount, then at most every SEC seconds\n"
"                           while in use (default: %d) and after every\n"
"                           endpoint failed\n"
"    -o cacert=FILE         CA certificates to check the server with (PEM)\n"
"    -o cert=FILE           client certificate (PEM)\n"
"    -o key=FILE            the client certificate's private key (PEM)\n"
"    -o user=NAME           log in to etcd as NAME\n"
"    -o password_file=FILE  read the password from FILE's first line;\n"
"                           else from the environment's ETCDFS_PASSWORD\n"
"                           (never on the command line)\n"
"    -o ro                  read-only: every change fails with EROFS\n"
"    -o quorum              linearizable reads: each open sees every\n"
"                           write that completed before it\n"
"    -o nowatch             do not watch the cluster: a directory is\n"
"                           listed again when opened, a file read again\n"
"                           when opened\n"
"    -o connect_timeout=MS  give up connecting after MS ms (default: 2000)\n"
"    -o request_timeout=MS  give up a request after MS ms (default: 5000)\n"
"    -o entry_timeout=SEC   let the kernel cache names for SEC seconds\n"
"                           (default: %g, or %g with nowatch)\n"
"    -o attr_timeout=SEC    let the kernel cache attributes for SEC\n"
"                           seconds (default: as entry_timeout)\n"
"    -o uid=N               owner of every file (default: the caller's)\n"
"    -o gid=N               group of every file (default: the caller's)\n"
"    -o umask=OCTAL         permissions to take away from 0777 (dirs) and\n"
"                           0666 (files) (default: the caller's umask)\n"
"    -o notemp              editors' temporary, swap and backup files go\n"
"                           to etcd like any file (default: they stay in\n"
"                           the mount's memory)\n"
"    -o chmod_ok            accept chmod and chown that change something\n"
"                           (they are not stored; default: EPERM)\n"
"    -o value_budget=SIZE   hold at most SIZE bytes of values in memory\n"
"                           (K, M, G: KiB, MiB, GiB); the others are read\n"
"                           again when opened (default: hold them all)\n"
"\n"
"Permissions are checked by the kernel (default_permissions) against\n"
"uid, gid and umask.  mount(8) options meant for fstab (_netdev, nofail,\n"
"noauto, auto, user, users, defaults) are ignored.\n"
"\n",
	       DEFAULT_REFRESH_SECONDS, DEFAULT_TIMEOUT,
	       DEFAULT_NOWATCH_TIMEOUT);
	printf("FUSE options:\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

static void version(void)
{
	printf("etcdfs version %s\n", ETCDFS_VERSION);
	printf("FUSE library version %s\n", fuse_pkgversion());
	/* it runs fusermount3 --version, which writes to our stdout */
	fflush(stdout);
	fuse_lowlevel_version();
	printf("%s\n", curl_version());
	printf("jansson version %s\n", jansson_version_str());
}

/*
 * Messages go to the terminal until the daemon forks, then to syslog,
 * since stderr is /dev/null from then on.  Debug messages only with -d.
 */
static bool log_debug;
static bool log_syslog;

__attribute__((format(printf, 2, 0)))
static void log_func(enum fuse_log_level level, const char *fmt, va_list ap)
{
	if (level >= FUSE_LOG_DEBUG && !log_debug)
		return;
	if (log_syslog)
		vsyslog((int)level, fmt, ap);	/* same numbers as LOG_* */
	else
		vfprintf(stderr, fmt, ap);
}

static void bad_value(const char *name, const char *s)
{
	fuse_log(FUSE_LOG_ERR, "etcdfs: bad value for '%s': '%s'\n", name, s);
}

/* A whole number in [min, max], written in @base; no sign, no spaces. */
static int parse_num(const char *name, const char *s, int base,
		     long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)s[0]))
		goto bad;
	errno = 0;
	v = strtoll(s, &end, base);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	bad_value(name, s);
	return -1;
}

/* A size in bytes, with an optional K, M or G (powers of 1024). */
static int parse_size(const char *name, const char *s, size_t *out)
{
	unsigned shift = 0;
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		goto bad;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		goto bad;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end != '\0' || v > (SIZE_MAX >> shift))
		goto bad;
	*out = (size_t)(v << shift);
	return 0;
bad:
	bad_value(name, s);
	return -1;
}

/* Seconds, fractions allowed, >= 0. */
static int parse_seconds(const char *name, const char *s, double *out)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)s[0]) && s[0] != '.')
		goto bad;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0)
		goto bad;
	*out = v;
	return 0;
bad:
	bad_value(name, s);
	return -1;
}

/*
 * Replaces *@path by its absolute form, so that it still names the same
 * file after fuse_daemonize() changes to "/", and reports a file that is
 * missing now rather than at the first TLS handshake.
 */
static int absolute_file(const char *name, char **path)
{
	char *abs;

	if (!*path)
		return 0;
	if ((*path)[0] == '\0') {
		bad_value(name, *path);
		return -1;
	}
	abs = realpath(*path, NULL);
	if (!abs) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot read '%s': %s\n", *path,
			 strerror(errno));
		return -1;
	}
	free(*path);
	*path = abs;
	return 0;
}

/*
 * Checks every URL of the comma list @list and returns a new list with
 * the trailing '/' of each removed (the transport adds paths to them), or
 * NULL after a message.
 */
static char *endpoints_normalise(const char *list)
{
	size_t cap = strlen(list) + 1;
	char *out = malloc(cap);
	size_t n = 0;
	const char *p = list;

	if (!out) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
		return NULL;
	}
	for (;;) {
		const char *end = strchrnul(p, ',');
		size_t len = (size_t)(end - p);
		size_t scheme;
		size_t i;

		if (len >= 7 && strncasecmp(p, "http://", 7) == 0)
			scheme = 7;
		else if (len >= 8 && strncasecmp(p, "https://", 8) == 0)
			scheme = 8;
		else
			goto bad;
		while (len > scheme && p[len - 1] == '/')
			len--;
		/* a host, then maybe a port; no path, no spaces */
		if (len == scheme || p[scheme] == ':' || p[scheme] == '/')
			goto bad;
		for (i = scheme; i < len; i++)
			if (p[i] == '/' || !isgraph((unsigned char)p[i]))
				goto bad;
		if (n > 0)
			out[n++] = ',';
		memcpy(out + n, p, len);
		n += len;
		if (*end == '\0')
			break;
		p = end + 1;
		continue;
bad:
		fuse_log(FUSE_LOG_ERR,
			 "etcdfs: bad endpoint '%.*s': expected "
			 "http://HOST:PORT or https://HOST:PORT\n",
			 (int)(end - p), p);
		free(out);
		return NULL;
	}
	out[n] = '\0';
	return out;
}

/* The first line of @path without its line end, or NULL after a message. */
static char *read_password(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot read '%s': %s\n", path,
			 strerror(errno));
		return NULL;
	}
	errno = 0;
	len = getline(&line, &cap, f);
	if (len < 0) {
		if (errno != 0)
			fuse_log(FUSE_LOG_ERR, "etcdfs: cannot read '%s': %s\n",
				 path, strerror(errno));
		else
			fuse_log(FUSE_LOG_ERR, "etcdfs: '%s' is empty\n", path);
		fclose(f);
		if (line)
			explicit_bzero(line, cap);
		free(line);
		return NULL;
	}
	fclose(f);
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	return line;
}

/* Adds "-o @name=@value" with @value's commas escaped. */
static int add_fuse_opt(struct fuse_args *args, const char *name,
			const char *value)
{
	char *opt = NULL;
	char *escaped = NULL;
	size_t len = strlen(name) + strlen(value) + 2;
	int res = -1;

	opt = malloc(len);
	if (!opt)
		goto out;
	snprintf(opt, len, "%s=%s", name, value);
	if (fuse_opt_add_opt_escaped(&escaped, opt) == -1)
		goto out;
	if (fuse_opt_add_arg(args, "-o") == -1 ||
	    fuse_opt_add_arg(args, escaped) == -1)
		goto out;
	res = 0;
out:
	free(escaped);
	free(opt);
	if (res == -1)
		fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
	return res;
}

/*
 * Everything decided from the options, ready for store_new() and
 * fs_new().  The strings are owned.
 */
struct etcdfs_setup {
	char *endpoints;
	char *prefix;
	char *password;
	struct store_config store;
	struct fs_config fs;
};

static void setup_release(struct etcdfs_setup *s)
{
	free(s->endpoints);
	free(s->prefix);
	if (s->password) {
		explicit_bzero(s->password, strlen(s->password));
		free(s->password);
	}
	memset(s, 0, sizeof(*s));
}

/* Turns the options into @s.  0, or -1 after a message. */
static int setup_from_opts(struct etcdfs_opts *o, const char *mountpoint,
			   struct etcdfs_setup *s)
{
	struct store_config *sc = &s->store;
	struct fs_config *fc = &s->fs;
	mode_t old_umask;
	long long v;
	const char *prefix;
	size_t len;

	memset(s, 0, sizeof(*s));

	s->endpoints = endpoints_normalise(o->endpoints ? o->endpoints :
					   ETCDFS_DEFAULT_ENDPOINT);
	if (!s->endpoints)
		return -1;
	sc->endpoints = s->endpoints;

	/*
	 * "/registry" shows the keys under "/registry/", never "/registryx":
	 * the store's prefix is a byte prefix, the mount's a directory.
	 */
	prefix = o->prefix ? o->prefix : "/";
	len = strlen(prefix);
	s->prefix = malloc(len + 2);
	if (!s->prefix)
		goto nomem;
	memcpy(s->prefix, prefix, len + 1);
	if (len > 0 && prefix[len - 1] != '/') {
		s->prefix[len] = '/';
		s->prefix[len + 1] = '\0';
	}
	sc->prefix = s->prefix;

	if (!o->api || strcmp(o->api, "v3") == 0) {
		sc->api = STORE_API_V3;
	} else if (strcmp(o->api, "v2") == 0) {
		sc->api = STORE_API_V2;
	} else {
		bad_value("api", o->api);
		return -1;
	}

	if (absolute_file("cacert", &o->cacert) == -1 ||
	    absolute_file("cert", &o->cert) == -1 ||
	    absolute_file("key", &o->key) == -1)
		return -1;
	if (o->key && !o->cert) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: key= needs cert=\n");
		return -1;
	}
	sc->cacert = o->cacert;
	sc->cert = o->cert;
	sc->key = o->key;

	if (o->user) {
		const char *env = getenv("ETCDFS_PASSWORD");

		if (o->user[0] == '\0') {
			bad_value("user", o->user);
			return -1;
		}
		if (strchr(o->user, ':')) {
			/* etcdctl's --user NAME:PASSWORD; not here */
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: a password does not belong on the "
				 "command line: use password_file= or "
				 "ETCDFS_PASSWORD\n");
			return -1;
		}
		if (o->password_file) {
			s->password = read_password(o->password_file);
			if (!s->password)
				return -1;
		} else if (env) {
			s->password = strdup(env);
			if (!s->password)
				goto nomem;
		} else {
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: user '%s' needs a password: use "
				 "password_file= or ETCDFS_PASSWORD\n",
				 o->user);
			return -1;
		}
		sc->user = o->user;
		sc->password = s->password;
	} else if (o->password_file) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: password_file= needs user=\n");
		return -1;
	}

	if (o->connect_timeout) {
		if (parse_num("connect_timeout", o->connect_timeout, 10, 1,
			      3600 * 1000, &v) == -1)
			return -1;
		sc->connect_timeout_ms = (long)v;
	}
	if (o->request_timeout) {
		if (parse_num("request_timeout", o->request_timeout, 10, 1,
			      3600 * 1000, &v) == -1)
			return -1;
		sc->request_timeout_ms = (long)v;
	}
	sc->quorum = o->quorum;
	if (o->refresh_endpoints) {
		if (parse_num("refresh_endpoints", o->refresh_endpoints, 10, 1,
			      24 * 3600, &v) == -1)
			return -1;
		sc->refresh_endpoints_ms = (long)v * 1000;
	} else if (o->refresh_endpoints_on) {
		sc->refresh_endpoints_ms = DEFAULT_REFRESH_SECONDS * 1000L;
	}

	fc->store = NULL;	/* filled once created */
	fc->mountpoint = mountpoint;
	fc->ro = o->ro;
	fc->quorum = o->quorum;
	fc->nowatch = o->nowatch;
	fc->temp_in_memory = !o->notemp;
	fc->chmod_ok = o->chmod_ok;
	if (o->value_budget &&
	    parse_size("value_budget", o->value_budget, &fc->value_budget) == -1)
		return -1;

	fc->entry_timeout = o->nowatch ? DEFAULT_NOWATCH_TIMEOUT
				       : DEFAULT_TIMEOUT;
	fc->attr_timeout = fc->entry_timeout;
	if (o->entry_timeout &&
	    parse_seconds("entry_timeout", o->entry_timeout,
			  &fc->entry_timeout) == -1)
		return -1;
	if (o->attr_timeout &&
	    parse_seconds("attr_timeout", o->attr_timeout,
			  &fc->attr_timeout) == -1)
		return -1;

	/* (uid_t)-1 means "no change" to chown(2): not an owner */
	fc->uid = getuid();
	if (o->uid) {
		if (parse_num("uid", o->uid, 10, 0, UINT32_MAX - 1, &v) == -1)
			return -1;
		fc->uid = (uid_t)v;
	}
	fc->gid = getgid();
	if (o->gid) {
		if (parse_num("gid", o->gid, 10, 0, UINT32_MAX - 1, &v) == -1)
			return -1;
		fc->gid = (gid_t)v;
	}
	old_umask = umask(0);
	umask(old_umask);
	fc->umask = old_umask;
	if (o->umask) {
		if (parse_num("umask", o->umask, 8, 0, 0777, &v) == -1)
			return -1;
		fc->umask = (mode_t)v;
	}
	return 0;

nomem:
	fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
	return -1;
}

/*
 * The options every etcdfs mount gets: permission checks by the kernel
 * against the owner and modes the filesystem reports, and a name in
 * /proc/mounts that says which cluster it is.
 */
static int add_mount_opts(struct fuse_args *args,
			  const struct etcdfs_opts *o, const char *endpoints)
{
	size_t first = strcspn(endpoints, ",");
	size_t len = first + sizeof("etcdfs#");
	char *fsname;
	int res;

	if (fuse_opt_add_arg(args, "-odefault_permissions") == -1)
		goto nomem;
	if (!o->has_subtype && fuse_opt_add_arg(args, "-osubtype=etcdfs") == -1)
		goto nomem;
	if (o->has_fsname)
		return 0;
	fsname = malloc(len);
	if (!fsname)
		goto nomem;
	snprintf(fsname, len, "etcdfs#%.*s", (int)first, endpoints);
	res = add_fuse_opt(args, "fsname", fsname);
	free(fsname);
	return res;
nomem:
	fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
	return -1;
}

/* Says why the cluster could not be used, with the store's cause. */
static void report_store_error(const char *endpoints, const char *user,
			       int rc, const struct store_error *err)
{
	const char *cause = err->msg[0] ? err->msg : store_strerror(rc);

	switch (rc) {
	case STORE_EUNREACHABLE:
		/* the transport names each endpoint and what it answered */
		if (strncmp(cause, "cannot reach ", 13) == 0) {
			fuse_log(FUSE_LOG_ERR, "etcdfs: %s\n", cause);
			break;
		}
		/* fall through */
	case STORE_ETIMEOUT:
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot reach '%s': %s\n",
			 endpoints, cause);
		break;
	case STORE_EUNAUTHENTICATED:
		if (user)
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: cannot log in to '%s' as '%s': %s\n",
				 endpoints, user, cause);
		else
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: cannot log in to '%s' (no user= "
				 "given): %s\n", endpoints, cause);
		break;
	case STORE_EPERMISSION:
		fuse_log(FUSE_LOG_ERR,
			 "etcdfs: user '%s' may not read '%s': %s\n",
			 user ? user : "", endpoints, cause);
		break;
	default:
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot use '%s': %s\n",
			 endpoints, cause);
		break;
	}
}

static void opts_release(struct etcdfs_opts *o)
{
	free(o->endpoints);
	free(o->prefix);
	free(o->api);
	free(o->cacert);
	free(o->cert);
	free(o->key);
	free(o->user);
	free(o->password_file);
	free(o->connect_timeout);
	free(o->request_timeout);
	free(o->entry_timeout);
	free(o->attr_timeout);
	free(o->value_budget);
	free(o->uid);
	free(o->gid);
	free(o->umask);
	free(o->refresh_endpoints);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	const char *progname = argc > 0 ? argv[0] : "etcdfs";
	struct fuse_cmdline_opts opts;
	struct etcdfs_opts o;
	struct etcdfs_setup setup;
	struct store_error serr;
	struct store *store = NULL;
	struct fs *fs = NULL;
	struct fuse_session *se = NULL;
	struct stat st;
	int64_t rev;
	int ret = 1;
	int rc;

	/* this binary run again by the daemon, as its echo (fs/echo.c) */
	if (argc > 1 && strcmp(argv[1], FS_ECHO_ARG) == 0)
		return fs_echo_main(argc, argv);

	memset(&opts, 0, sizeof(opts));
	memset(&o, 0, sizeof(o));
	memset(&setup, 0, sizeof(setup));
	memset(&serr, 0, sizeof(serr));

	fuse_set_log_func(log_func);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot initialise libcurl\n");
		return 1;
	}

	if (fuse_parse_cmdline(&args, &opts) != 0)
		goto err_out1;
	if (opts.show_help) {
		help(progname);
		ret = 0;
		goto err_out1;
	}
	if (opts.show_version) {
		version();
		ret = 0;
		goto err_out1;
	}
	log_debug = opts.debug;
	if (fuse_opt_parse(&args, &o, etcdfs_opt_table, etcdfs_opt_proc) == -1)
		goto err_out1;

	if (!opts.mountpoint) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: no mountpoint given\n");
		usage(stderr, progname);
		fprintf(stderr, "       %s --help\n", progname);
		goto err_out1;
	}
	/* fuse_parse_cmdline() made it absolute with realpath() */
	if (stat(opts.mountpoint, &st) == -1) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: bad mountpoint '%s': %s\n",
			 opts.mountpoint, strerror(errno));
		goto err_out1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fuse_log(FUSE_LOG_ERR,
			 "etcdfs: bad mountpoint '%s': not a directory\n",
			 opts.mountpoint);
		goto err_out1;
	}

	if (setup_from_opts(&o, opts.mountpoint, &setup) == -1)
		goto err_out1;
	if (add_mount_opts(&args, &o, setup.endpoints) == -1)
		goto err_out1;

	store = store_new(&setup.store, &serr);
	if (!store) {
		report_store_error(setup.endpoints, o.user,
				   serr.code ? serr.code : STORE_EINVAL, &serr);
		goto err_out1;
	}
	/* Fail here, on the terminal, rather than in the background. */
	memset(&serr, 0, sizeof(serr));
	rc = store_revision(store, &rev, &serr);
	if (rc != 0) {
		report_store_error(setup.endpoints, o.user, rc, &serr);
		goto err_out2;
	}
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: %s at '%s' answers, revision %lld\n",
		 store_backend_name(store), store_endpoint(store),
		 (long long)rev);

	setup.fs.store = store;
	fs = fs_new(&setup.fs);
	if (!fs) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
		goto err_out2;
	}
	memset(&serr, 0, sizeof(serr));
	rc = fs_load(fs, &serr);
	if (rc != 0) {
		report_store_error(setup.endpoints, o.user, rc, &serr);
		goto err_out3;
	}

	se = fuse_session_new(&args, fs_ops(), sizeof(*fs_ops()), fs);
	if (!se)
		goto err_out3;
	fs_set_session(fs, se);
	if (fuse_set_signal_handlers(se) != 0)
		goto err_out4;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto err_out5;
	if (fuse_daemonize(opts.foreground) != 0)
		goto err_out6;
	if (!opts.foreground) {
		openlog("etcdfs", LOG_PID, LOG_DAEMON);
		log_syslog = true;
	}

	if (opts.singlethread) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config config = {
			.clone_fd = opts.clone_fd,
			.max_idle_threads = MAX_IDLE_THREADS,
		};

		if (opts.max_idle_threads != UINT_MAX)	/* -o max_idle_threads */
			config.max_idle_threads = opts.max_idle_threads;

		rc = fuse_session_loop_mt(se, &config);
	}
	/*
	 * The loop returns 0 when the filesystem was unmounted, and the
	 * number of the signal that ended it (SIGTERM, SIGINT, SIGHUP):
	 * both are a clean end.  A negative errno is not.
	 */
	if (rc < 0) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: serving '%s' failed: %s\n",
			 opts.mountpoint, strerror(-rc));
	} else {
		fuse_log(FUSE_LOG_DEBUG, "etcdfs: unmounting '%s' (%s)\n",
			 opts.mountpoint,
			 rc > 0 ? strsignal(rc) : "unmounted");
		ret = 0;
	}

err_out6:
	fuse_session_unmount(se);
err_out5:
	fuse_remove_signal_handlers(se);
err_out4:
	fuse_session_destroy(se);	/* calls the filesystem's destroy */
err_out3:
	fs_free(fs);
err_out2:
	store_free(store);
err_out1:
	setup_release(&setup);
	opts_release(&o);
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	curl_global_cleanup();
	if (log_syslog)
		closelog();
	return ret;
}
