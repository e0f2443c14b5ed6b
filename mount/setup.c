/*
 * setup.c - the decisions that take more than one option (see opts.h):
 * which endpoints, which user and password, the prefix, the API, the
 * defaults that depend on other options, and etcdctl's environment for
 * what the options left out
 *
 * With -d it logs where each setting came from (an option, the ENDPOINTS
 * argument, a variable, the default), never a password.
 *
 * What it cannot do: check that a password is right or that an endpoint
 * answers; main.c asks the cluster before daemonizing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint.h"
#include "opts_i.h"
#include "temp.h"

const char opts_from_option[] = "-o";
const char opts_from_source[] = "the ENDPOINTS argument";

static void nomem(void)
{
	fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
}

/* An environment variable, NULL if unset or empty (etcdctl: not given). */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

void opts_init(struct opts *o)
{
	mode_t old_umask;

	memset(o, 0, sizeof(*o));
	/* the store would fill them; here, so that -d shows them */
	o->store.connect_timeout_ms = ENDPOINT_DIAL_TIMEOUT_MS;
	o->store.request_timeout_ms = ENDPOINT_COMMAND_TIMEOUT_MS;
	o->fs.temp_in_memory = true;
	o->fs.uid = getuid();
	o->fs.gid = getgid();
	old_umask = umask(0);
	umask(old_umask);
	o->fs.umask = old_umask;
}

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void opts_release(struct opts *o)
{
	size_t i;

	for (i = 0; i < OPTS_MAX_ROWS; i++)
		free(o->val[i]);
	free(o->source);
	free(o->endpoints);
	free(o->prefix);
	free(o->user);
	free(o->codec);
	free(o->snapshot);
	free_secret(o->password);
	memset(o, 0, sizeof(*o));
}

/* True if row @i, or a row that fills the same field, was given. */
static bool field_given(const struct opts *o, size_t i)
{
	size_t k;

	for (k = 0; k < opts_nrows; k++)
		if (opts_rows[k].field == opts_rows[i].field && o->from[k])
			return true;
	return false;
}

/* etcdctl's variables, for the rows whose option was not given. */
static int apply_env(struct opts *o)
{
	const char *v;
	size_t i;

	for (i = 0; i < opts_nrows; i++) {
		if (!opts_rows[i].env || field_given(o, i))
			continue;
		v = env(opts_rows[i].env);
		if (v && opts_apply(o, i, v, opts_rows[i].env) != 0)
			return -1;
	}
	return 0;
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

/*
 * The endpoints: -o endpoints=, else the ENDPOINTS argument, else
 * ETCDCTL_ENDPOINTS, else the default.
 */
static int decide_endpoints(struct opts *o)
{
	const struct store_config *sc = &o->store;
	bool tls = sc->cacert || sc->cert || sc->key ||
		   sc->insecure_skip_tls_verify;
	const char *list, *from;
	bool named = false;	/* say where a bad one came from */
	struct endpoint_list l;
	char why[512];
	int rc;

	if (o->endpoints_opt) {
		list = o->endpoints_opt;
		from = "-o endpoints=";
		if (o->source)
			fuse_log(FUSE_LOG_DEBUG, "etcdfs: endpoints= is given: "
				 "the ENDPOINTS argument '%s' is not used\n",
				 o->source);
	} else if (o->source) {
		list = o->source;
		from = OPTS_FROM_SOURCE;
		named = true;
	} else if ((list = env("ETCDCTL_ENDPOINTS"))) {
		from = "ETCDCTL_ENDPOINTS";
		named = true;
	} else {
		list = ENDPOINT_DEFAULT;
		from = "the default";
	}
	rc = endpoint_list_parse(&l, list, tls, why, sizeof(why));
	if (rc == -EINVAL) {
		if (named)
			fuse_log(FUSE_LOG_ERR, "etcdfs: %s (in %s)\n", why,
				 from);
		else
			fuse_log(FUSE_LOG_ERR, "etcdfs: %s\n", why);
		return -1;
	}
	if (rc < 0)
		goto nomem;
	o->endpoints = endpoint_list_join(&l);
	endpoint_list_release(&l);
	if (!o->endpoints)
		goto nomem;
	o->store.endpoints = o->endpoints;
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: endpoints %s (from %s)\n",
		 o->endpoints, from);
	return 0;
nomem:
	nomem();
	return -1;
}

/* @s copied into *@dst, or -1 after a message. */
static int copy_to(char **dst, const char *s, size_t len)
{
	*dst = strndup(s, len);
	if (!*dst) {
		nomem();
		return -1;
	}
	return 0;
}

/*
 * The user: -o user=, else ETCDCTL_USER (NAME, or NAME:PASSWORD as
 * etcdctl takes it when ETCDCTL_PASSWORD is not set).  The password:
 * password_file=, else ETCDFS_PASSWORD, else ETCDCTL_PASSWORD, else the
 * one in ETCDCTL_USER.
 */
static int decide_login(struct opts *o)
{
	const char *user_env = env("ETCDCTL_USER");
	const char *pw_env = env("ETCDCTL_PASSWORD");
	const char *user = NULL, *user_from = NULL, *pw_from = NULL;
	const char *pw_in_user = NULL;
	size_t user_len = 0;

	if (o->user_opt) {
		if (strchr(o->user_opt, ':')) {
			/* etcdctl's --user NAME:PASSWORD; not here */
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: a password does not belong on the "
				 "command line: use password_file=, "
				 "ETCDFS_PASSWORD or ETCDCTL_PASSWORD\n");
			return -1;
		}
		user = o->user_opt;
		user_len = strlen(user);
		user_from = "-o user=";
	} else if (user_env) {
		user = user_env;
		user_len = strlen(user);
		user_from = "ETCDCTL_USER";
		if (!pw_env && strchr(user_env, ':')) {
			user_len = (size_t)(strchr(user_env, ':') - user_env);
			pw_in_user = user_env + user_len + 1;
		}
	}
	if (!user) {
		if (o->password_file) {
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: password_file= needs user=\n");
			return -1;
		}
		return 0;
	}
	if (user_len == 0) {
		opts_bad_value("user", user_from[0] == '-' ? OPTS_FROM_OPTION :
			       user_from, user, NULL);
		return -1;
	}
	if (copy_to(&o->user, user, user_len) != 0)
		return -1;
	if (o->password_file) {
		o->password = read_password(o->password_file);
		if (!o->password)
			return -1;
		pw_from = "-o password_file=";
	} else if (env("ETCDFS_PASSWORD")) {
		pw_from = "ETCDFS_PASSWORD";
		if (copy_to(&o->password, getenv(pw_from),
			    strlen(getenv(pw_from))) != 0)
			return -1;
	} else if (pw_env || pw_in_user) {
		pw_from = pw_env ? "ETCDCTL_PASSWORD" : "ETCDCTL_USER";
		if (copy_to(&o->password, pw_env ? pw_env : pw_in_user,
			    strlen(pw_env ? pw_env : pw_in_user)) != 0)
			return -1;
	} else {
		fuse_log(FUSE_LOG_ERR,
			 "etcdfs: user '%s' needs a password: use "
			 "password_file=, ETCDFS_PASSWORD or "
			 "ETCDCTL_PASSWORD\n", o->user);
		return -1;
	}
	o->store.user = o->user;
	o->store.password = o->password;
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: user '%s' (from %s), password "
		 "from %s\n", o->user, user_from, pw_from);
	return 0;
}

/*
 * "/registry" shows the keys under "/registry/", never "/registryx": the
 * store's prefix is a byte prefix, the mount's a directory.
 */
static int decide_prefix(struct opts *o)
{
	const char *prefix = o->prefix_opt ? o->prefix_opt : "/";
	size_t len = strlen(prefix);

	o->prefix = malloc(len + 2);
	if (!o->prefix) {
		nomem();
		return -1;
	}
	memcpy(o->prefix, prefix, len + 1);
	if (len > 0 && prefix[len - 1] != '/') {
		o->prefix[len] = '/';
		o->prefix[len + 1] = '\0';
	}
	o->store.prefix = o->prefix;
	return 0;
}

/*
 * -o revision=N: the key space as it was, read-only (for the kernel too,
 * see opts_add_mount_args), with no watch and so no echo; v3 only.
 */
static int decide_revision(struct opts *o)
{
	long long v;

	if (opts_parse_num("revision", OPTS_FROM_OPTION, o->revision_opt,
			   10, 1, INT64_MAX, &v) != 0)
		return -1;
	if (o->store.api == STORE_API_V2) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: revision=%lld needs etcd's "
			 "v3 API: v2 keeps no past revisions (api=v2 "
			 "given)\n", v);
		return -1;
	}
	o->store.revision = v;
	o->fs.revision = v;
	o->fs.ro = true;
	o->fs.nowatch = true;
	o->fs.quorum = false;
	return 0;
}

/*
 * -o snapshot=FILE, or an ENDPOINTS argument that names a regular file:
 * an etcd snapshot (helper/store_snapshot.c), read-only for the kernel
 * too, with no watch and so no echo; the file stands for the endpoints
 * in messages and in the mount's name.  0, or -1 after a message.
 */
static int decide_snapshot(struct opts *o)
{
	const char *path = o->store.snapshot;
	struct stat st;

	if (!path && o->source && !o->endpoints_opt &&
	    stat(o->source, &st) == 0 && S_ISREG(st.st_mode)) {
		o->snapshot = realpath(o->source, NULL);
		if (!o->snapshot) {
			fuse_log(FUSE_LOG_ERR, "etcdfs: cannot resolve '%s': "
				 "%s\n", o->source, strerror(errno));
			return -1;
		}
		path = o->snapshot;
	}
	if (!path)
		return 0;
	if (o->store.api == STORE_API_V2) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: a snapshot is of etcd's v3 "
			 "key space (api=v2 given)\n");
		return -1;
	}
	o->store.snapshot = path;
	o->endpoints = strdup(path);
	if (!o->endpoints) {
		nomem();
		return -1;
	}
	o->fs.ro = true;
	o->fs.nowatch = true;
	o->fs.quorum = false;
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: snapshot '%s'\n", path);
	return 0;
}

/* With -d: the settings etcdctl's variables may give, and whence. */
static void log_sources(const struct opts *o)
{
	const struct opts_row *r;
	const char *field, *what, *from;
	char value[64];
	size_t i, k;

	for (i = 0; i < opts_nrows; i++) {
		r = &opts_rows[i];
		field = (const char *)o + r->field;
		if (!r->env)
			continue;
		if (r->kind == OPT_MS) {
			snprintf(value, sizeof(value), "%ld ms",
				 *(const long *)(const void *)field);
			what = value;
		} else if (r->kind == OPT_FLAG) {
			what = *(const bool *)(const void *)field ? "on" : "off";
		} else {
			what = o->val[i] ? o->val[i] : "none";
		}
		/* given as its alias (dial_timeout=): say that one */
		for (k = 0; k < opts_nrows && !o->from[i]; k++)
			if (opts_rows[k].field == r->field && o->from[k])
				break;
		if (o->from[i] || k == opts_nrows)
			k = i;
		from = o->from[k];
		fuse_log(FUSE_LOG_DEBUG, "etcdfs: %.*s %s (from %s%s)\n",
			 (int)strcspn(r->templ, "="), r->templ, what,
			 !from ? "the default" :
			 from == OPTS_FROM_OPTION ? "-o " : from,
			 from == OPTS_FROM_OPTION ? opts_rows[k].templ : "");
	}
}

int opts_finish(struct opts *o, const char *mountpoint)
{
	const char *why;
	long long v;

	if (apply_env(o) != 0)
		return -1;
	if (o->store.key && !o->store.cert) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: a client key (key= or "
			 "ETCDCTL_KEY) needs its certificate (cert= or "
			 "ETCDCTL_CERT)\n");
		return -1;
	}
	if (o->fs.temp_names && (why = temp_names_check(o->fs.temp_names))) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: bad value for 'temp_names': "
			 "'%s': %s\n", o->fs.temp_names, why);
		return -1;
	}
	if (!o->api || strcmp(o->api, "v3") == 0) {
		o->store.api = STORE_API_V3;
	} else if (strcmp(o->api, "v2") == 0) {
		o->store.api = STORE_API_V2;
	} else {
		opts_bad_value("api", OPTS_FROM_OPTION, o->api, NULL);
		return -1;
	}
	if (decide_snapshot(o) != 0)
		return -1;
	if ((!o->store.snapshot && decide_endpoints(o) != 0) ||
	    decide_login(o) != 0 || decide_prefix(o) != 0 ||
	    opts_decide_codec(o) != 0)
		return -1;

	if (o->refresh_opt) {
		if (opts_parse_num("refresh_endpoints", OPTS_FROM_OPTION,
				   o->refresh_opt, 10, 1, 24 * 3600, &v) != 0)
			return -1;
		o->store.refresh_endpoints_ms = (long)v * 1000;
	} else if (o->refresh_on) {
		o->store.refresh_endpoints_ms = OPTS_REFRESH_SECONDS * 1000L;
	}
	if (o->revision_opt && decide_revision(o) != 0)
		return -1;
	if (o->max_txn_ops_opt) {
		if (opts_parse_num("max_txn_ops", OPTS_FROM_OPTION,
				   o->max_txn_ops_opt, 10, 2, 1000000,
				   &v) != 0)
			return -1;
		o->fs.max_txn_ops = (unsigned)v;
		o->store.max_txn_ops = (unsigned)v;
	}
	o->store.quorum = o->fs.quorum;

	/* the past does not change: the kernel may cache it all */
	if (!o->from[opts_row("entry_timeout=")] &&
	    (o->store.revision || o->store.snapshot))
		o->fs.entry_timeout = OPTS_CACHE_SECONDS;
	else if (!o->from[opts_row("entry_timeout=")] && o->fs.quorum)
		/* every lookup and open must reach the barrier (fs/quorum.c) */
		o->fs.entry_timeout = 0;
	else if (!o->from[opts_row("entry_timeout=")])
		o->fs.entry_timeout = o->fs.nowatch ?
			OPTS_NOWATCH_CACHE_SECONDS : OPTS_CACHE_SECONDS;
	if (!o->from[opts_row("attr_timeout=")])
		o->fs.attr_timeout = o->fs.entry_timeout;
	o->fs.mountpoint = mountpoint;
	log_sources(o);
	return 0;
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
		nomem();
	return res;
}

/*
 * The options every etcdfs mount gets: permission checks by the kernel
 * against the owner and modes the filesystem reports, and a name in
 * /proc/mounts that says which cluster it is.
 */
int opts_add_mount_args(struct fuse_args *args, const struct opts *o)
{
	size_t first = strcspn(o->endpoints, ",");
	size_t len = first + sizeof("etcdfs#");
	char *fsname;
	int res;

	if (fuse_opt_add_arg(args, "-odefault_permissions") == -1)
		goto nomem;
	if ((o->store.revision || o->store.snapshot) &&
	    fuse_opt_add_arg(args, "-oro") == -1)
		goto nomem;
	if (!o->has_subtype && fuse_opt_add_arg(args, "-osubtype=etcdfs") == -1)
		goto nomem;
	if (o->has_fsname)
		return 0;
	fsname = malloc(len);
	if (!fsname)
		goto nomem;
	snprintf(fsname, len, "etcdfs#%.*s", (int)first, o->endpoints);
	res = add_fuse_opt(args, "fsname", fsname);
	free(fsname);
	return res;
nomem:
	nomem();
	return -1;
}
