/*
 * test_store.c - the store (helper/store.h) against a real etcd
 *
 * Runs under tests/lib/with-etcd, which gives it a private etcd in
 * ETCDFS_TEST_ENDPOINTS and a scratch dir in ETCDFS_TEST_DIR.  Every case
 * works under a key prefix of its own and cross-checks what etcd holds with
 * etcdctl, never with the store under test.  The cases that need another
 * etcd (TLS, auth) start it through tests/lib/etcd.sh (found through
 * TESTS_DIR) and stop it before returning, pass or fail; the hostile
 * replies come from tests/lib/garbage-server.py.
 *
 * What it cannot test: the etcd2 backend, clusters of several members,
 * and a peer that vanishes in the middle of a request.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"

extern char **environ;

static const char *endpoint;	/* the etcd with-etcd started */
static const char *tests_dir;	/* the tests/ source dir */
static const char *scratch;	/* a dir of our own */

/* etcdctl against the main etcd, up to the subcommand */
static char ctl_main[512];

/* ---- small utilities ---- */

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes standard base64; NULL if malformed. */
static char *b64dec(const char *in, size_t *out_len)
{
	size_t n = strlen(in), o = 0;
	char *out = util_xmalloc(n / 4 * 3 + 3);
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		int v;

		if (in[i] == '=')
			break;
		v = b64val((unsigned char)in[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

/* ---- etcdctl, the independent witness ---- */

struct ckv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

struct clist {
	struct ckv *kvs;
	size_t n;
	int64_t count;		/* "count": all the keys, even past --limit */
	int64_t revision;
};

static void clist_release(struct clist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->kvs[i].key);
		free(l->kvs[i].value);
	}
	free(l->kvs);
	memset(l, 0, sizeof(*l));
}

/* An integer member of @o that etcdctl writes as a number (0 if absent). */
static int64_t jint(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

/*
 * etcdctl prints the header's cluster and member ids as unsigned 64-bit
 * numbers, which jansson refuses above INT64_MAX: blank them out.
 */
static void blank_ids(char *text)
{
	static const char *const names[] = { "\"cluster_id\":",
					     "\"member_id\":" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = text;

		while ((p = strstr(p, names[i])) != NULL) {
			p += strlen(names[i]);
			if (*p >= '0' && *p <= '9')
				*p++ = '0';
			while (*p >= '0' && *p <= '9')
				*p++ = ' ';
		}
	}
}

/*
 * Runs "@ctl get @args -w json" and parses the answer into @out.  @ctl is
 * the etcdctl command line up to the subcommand.
 */
static bool ctl_range(const char *ctl, const char *args, struct clist *out)
{
	json_error_t jerr;
	json_t *root, *kvs;
	char *text;
	size_t i;

	memset(out, 0, sizeof(*out));
	text = util_sh_out("%s get %s -w json", ctl, args);
	if (!text)
		return false;
	blank_ids(text);
	root = json_loads(text, 0, &jerr);
	if (!root) {
		tap_diag("etcdctl answered bad json: %s", jerr.text);
		free(text);
		return false;
	}
	free(text);
	out->revision = jint(json_object_get(root, "header"), "revision");
	out->count = jint(root, "count");
	kvs = json_object_get(root, "kvs");
	out->n = json_array_size(kvs);
	out->kvs = calloc(out->n ? out->n : 1, sizeof(*out->kvs));
	if (!out->kvs)
		abort();
	for (i = 0; i < out->n; i++) {
		json_t *kv = json_array_get(kvs, i);
		struct ckv *c = &out->kvs[i];
		const char *k = json_string_value(json_object_get(kv, "key"));
		const char *v = json_string_value(json_object_get(kv, "value"));

		c->key = b64dec(k ? k : "", &c->key_len);
		c->value = b64dec(v ? v : "", &c->value_len);
		if (!c->key || !c->value) {
			tap_diag("etcdctl answered bad base64");
			json_decref(root);
			clist_release(out);
			return false;
		}
		c->create_revision = jint(kv, "create_revision");
		c->mod_revision = jint(kv, "mod_revision");
		c->version = jint(kv, "version");
		c->lease = jint(kv, "lease");
	}
	json_decref(root);
	return true;
}

/*
 * Reads the text key @key from the main etcd: 1 found (into @out, released
 * by the caller), 0 absent, -1 on error.
 */
static int ctl_get(const char *key, struct ckv *out)
{
	struct clist l;
	char *args = util_fmt("'%s'", key);
	bool ok = ctl_range(ctl_main, args, &l);

	free(args);
	if (!ok)
		return -1;
	if (l.n == 0) {
		clist_release(&l);
		return 0;
	}
	*out = l.kvs[0];
	l.kvs[0].key = NULL;
	l.kvs[0].value = NULL;
	clist_release(&l);
	return 1;
}

static void ckv_release(struct ckv *c)
{
	free(c->key);
	free(c->value);
	memset(c, 0, sizeof(*c));
}

/* True if the main etcd holds the text key @key with the text @value. */
static bool ctl_has(const char *key, const char *value)
{
	struct ckv c;
	int r = ctl_get(key, &c);
	bool ok;

	if (r != 1) {
		tap_diag("etcd does not hold '%s'", key);
		return false;
	}
	ok = util_mem_is(c.value, c.value_len, value, strlen(value));
	if (!ok)
		tap_diag("etcd holds '%s' = '%s', expected '%s'", key,
			 util_show(c.value, c.value_len), value);
	ckv_release(&c);
	return ok;
}

/* True if the main etcd does not hold the text key @key. */
static bool ctl_lacks(const char *key)
{
	struct ckv c;
	int r = ctl_get(key, &c);

	if (r == 1) {
		tap_diag("etcd still holds '%s'", key);
		ckv_release(&c);
	}
	return r == 0;
}

/* The mod_revision of @key in the main etcd; 0 if absent, -1 on error. */
static int64_t ctl_mod(const char *key)
{
	struct ckv c;
	int r = ctl_get(key, &c);
	int64_t m;

	if (r != 1)
		return r;
	m = c.mod_revision;
	ckv_release(&c);
	return m;
}

static bool ctl_put(const char *key, const char *value)
{
	return util_sh("%s put '%s' '%s' >/dev/null", ctl_main, key, value) == 0;
}

static bool ctl_del(const char *key)
{
	return util_sh("%s del '%s' >/dev/null", ctl_main, key) == 0;
}

/* The main etcd's current revision, by etcdctl; -1 on error. */
static int64_t ctl_revision(void)
{
	struct clist l;
	int64_t r;

	if (!ctl_range(ctl_main, "'/no/such/key'", &l))
		return -1;
	r = l.revision;
	clist_release(&l);
	return r;
}

/*
 * How many range requests the main etcd has served so far, from its
 * Prometheus metrics (the JSON gateway goes through the same gRPC
 * handlers); -1 on error.
 */
static long range_requests(void)
{
	char *out = util_sh_out("curl -s --max-time 10 %s/metrics | grep "
			   "'^grpc_server_handled_total{grpc_code=\"OK\","
			   "grpc_method=\"Range\",grpc_service="
			   "\"etcdserverpb.KV\"'", endpoint);
	char *p, *end;
	double v;

	if (!out)
		return -1;
	p = strrchr(out, ' ');
	if (!p) {
		free(out);
		return -1;
	}
	v = strtod(p + 1, &end);
	if (end == p + 1) {
		free(out);
		return -1;
	}
	free(out);
	return (long)v;
}

/* ---- stores ---- */

static struct store *store_open(const char *prefix)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
		.prefix = prefix,
	};

	return util_store_open(&cfg);
}

/* A port on 127.0.0.1 nothing listens on (connections are refused). */
static int dead_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		close(fd);
		return -1;
	}
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* ---- the garbage server ---- */

struct garbage {
	pid_t pid;
	int port;
	char url[64];
};

static bool garbage_start(struct garbage *g, const char *mode, size_t size)
{
	posix_spawn_file_actions_t fa;
	char script[PATH_MAX], sizebuf[32], line[32];
	const char *argv[] = { "python3", script, mode, "--size", sizebuf,
			       "--lifetime", "300", NULL };
	struct pollfd pfd;
	size_t got = 0;
	int fds[2], rc;
	char *end;
	long port;

	memset(g, 0, sizeof(*g));
	snprintf(script, sizeof(script), "%s/lib/garbage-server.py",
		 tests_dir);
	snprintf(sizebuf, sizeof(sizebuf), "%zu", size ? size : 1u << 20);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return false;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	rc = posix_spawnp(&g->pid, "python3", &fa, NULL,
			  (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		tap_diag("cannot start '%s': %s", script, strerror(rc));
		close(fds[0]);
		return false;
	}
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		ssize_t n;

		if (poll(&pfd, 1, 10000) <= 0)
			break;
		n = read(fds[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	line[got] = '\0';
	errno = 0;
	port = strtol(line, &end, 10);
	if (errno || end == line || *end != '\n' || port <= 0 ||
	    port > 65535) {
		tap_diag("garbage server '%s' printed no port: '%s'", mode,
			 line);
		kill(g->pid, SIGTERM);
		waitpid(g->pid, NULL, 0);
		g->pid = 0;
		return false;
	}
	g->port = (int)port;
	snprintf(g->url, sizeof(g->url), "http://127.0.0.1:%d", g->port);
	return true;
}

static void garbage_stop(struct garbage *g)
{
	if (g->pid > 0) {
		kill(g->pid, SIGTERM);
		waitpid(g->pid, NULL, 0);
	}
	g->pid = 0;
}

/* ---- extra etcd servers (TLS, auth) ---- */

/* ---- watch event log ---- */

/* ---- configuration ---- */

static bool test_config_einval(void)
{
	struct store_config base = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
	};
	struct store_config c;
	struct store *s;

	/* the base itself is fine */
	s = util_store_open(&base);
	CHECK(s);
	CHECK(strcmp(store_backend_name(s), "etcd3") == 0);
	store_free(s);

	c = base;
	c.api = (enum store_api)7;
	CHECK(util_einval(&c, "api 7"));
	c = base;
	c.endpoints = "";
	CHECK(util_einval(&c, "an empty endpoint list"));
	c = base;
	c.endpoints = "ftp://127.0.0.1:2379";
	CHECK(util_einval(&c, "an ftp endpoint"));
	c = base;
	c.endpoints = "http://";
	CHECK(util_einval(&c, "an endpoint without a host"));
	c = base;
	c.endpoints = "http://127.0.0.1:notaport";
	CHECK(util_einval(&c, "a port that is not a number"));
	c = base;
	c.cert = "client.pem";
	CHECK(util_einval(&c, "a certificate without its key"));
	c = base;
	c.key = "client-key.pem";
	CHECK(util_einval(&c, "a key without its certificate"));
	c = base;
	c.user = "alice";
	CHECK(util_einval(&c, "a user without a password"));
	c = base;
	c.connect_timeout_ms = -1;
	CHECK(util_einval(&c, "a negative connect timeout"));
	c = base;
	c.request_timeout_ms = -5;
	CHECK(util_einval(&c, "a negative request timeout"));
	c = base;
	c.max_update_retries = -1;
	CHECK(util_einval(&c, "negative update retries"));
	return true;
}

/* ---- single operations ---- */

static bool test_create_get(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct ckv c;
	int64_t rev = 0, rev2 = 0;
	struct store *s = store_open("/t/create/");

	CHECK(s);
	CHECK(strcmp(store_endpoint(s), endpoint) == 0);
	CHECK_RC(store_create(s, S("a"), S("hello"), 0, &rev, &err), STORE_OK);
	CHECK(rev > 0);
	CHECK_RC(store_get(s, S("a"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	CHECK(kv.mod_revision == rev);
	CHECK(kv.create_revision == rev);
	CHECK(kv.version == 1);
	CHECK(kv.lease == 0);
	store_kv_release(&kv);
	CHECK(kv.key == NULL && kv.value == NULL);

	/* etcd holds what the store said, at the revision it said */
	CHECK(ctl_get("/t/create/a", &c) == 1);
	CHECK(util_mem_is(c.value, c.value_len, S("hello")));
	CHECK(c.mod_revision == rev && c.create_revision == rev);
	ckv_release(&c);

	/* both read flavours */
	CHECK_RC(store_get(s, S("a"), STORE_READ_SERIAL, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	store_kv_release(&kv);
	CHECK_RC(store_get(s, S("a"), STORE_READ_QUORUM, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	store_kv_release(&kv);

	/* an empty value is a value */
	CHECK_RC(store_create(s, S("empty"), "", 0, 0, &rev2, &err), STORE_OK);
	CHECK(rev2 == rev + 1);
	CHECK_RC(store_get(s, S("empty"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("empty"), "", 0));
	store_kv_release(&kv);
	CHECK(ctl_get("/t/create/empty", &c) == 1);
	CHECK(c.value_len == 0);
	ckv_release(&c);

	/* create without asking for the revision */
	CHECK_RC(store_create(s, S("norev"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK(ctl_has("/t/create/norev", "x"));
	store_free(s);
	return true;
}

static bool test_create_exists(void)
{
	struct store_error err = { 0 };
	struct store *s = store_open("/t/exists/");
	int64_t mod;

	CHECK(s);
	CHECK(ctl_put("/t/exists/k", "first"));
	mod = ctl_mod("/t/exists/k");
	CHECK(mod > 0);
	CHECK_RC(store_create(s, S("k"), S("second"), 0, NULL, &err),
		 STORE_EEXISTS);
	CHECK(strstr(err.key, "k") != NULL);
	CHECK(ctl_has("/t/exists/k", "first"));
	CHECK(ctl_mod("/t/exists/k") == mod);
	store_free(s);
	return true;
}

static bool test_get_notfound(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store *s = store_open("/t/nf/");

	CHECK(s);
	CHECK_RC(store_get(s, S("nothing-here"), 0, &kv, &err),
		 STORE_ENOTFOUND);
	CHECK(strstr(err.key, "nothing-here") != NULL);
	/* "/t/nf/a" exists, "a" under the prefix "/t/nf/a/" does not */
	CHECK(ctl_put("/t/nf/a", "v"));
	store_free(s);
	s = store_open("/t/nf/a/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, "", 0, 0, &kv, &err), STORE_ENOTFOUND);
	store_free(s);
	return true;
}

/* Keys and values with every byte, NUL and 0xff included. */
static bool test_binary_keys(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store_kv kv = { 0 };
	struct clist cl;
	char all[257], val[512];
	static const struct {
		const char *k;
		size_t n;
	} keys[] = {
		{ "\0", 1 },
		{ "\0\0", 2 },
		{ "a\0b", 3 },
		{ "a\xff", 2 },
		{ "\xff", 1 },
		{ "\xff\xff", 2 },
		{ "\xff\xff\0", 3 },
		{ "\xff\xff\xff", 3 },
		{ "\xfe\xff", 2 },
		{ "\n\r\t \"'\\%", 9 },
	};
	size_t nkeys = sizeof(keys) / sizeof(keys[0]);
	struct store *s = store_open("/t/bytes/");
	size_t i, j;

	CHECK(s);
	all[0] = 'K';
	for (i = 0; i < 256; i++)
		all[i + 1] = (char)i;
	for (i = 0; i < sizeof(val); i++)
		val[i] = (char)(255 - i % 256);

	CHECK_RC(store_create(s, all, sizeof(all), val, sizeof(val), 0, NULL,
			      &err), STORE_OK);
	for (i = 0; i < nkeys; i++)
		CHECK_RC(store_create(s, keys[i].k, keys[i].n, keys[i].k,
				      keys[i].n, 0, NULL, &err), STORE_OK);

	CHECK_RC(store_get(s, all, sizeof(all), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, all, sizeof(all), val, sizeof(val)));
	store_kv_release(&kv);
	for (i = 0; i < nkeys; i++) {
		CHECK_RC(store_get(s, keys[i].k, keys[i].n, 0, &kv, &err),
			 STORE_OK);
		CHECK(util_kv_is(&kv, keys[i].k, keys[i].n, keys[i].k, keys[i].n));
		store_kv_release(&kv);
	}
	/* a key that is a prefix of stored ones is not one of them */
	CHECK_RC(store_get(s, "a", 1, 0, &kv, &err), STORE_ENOTFOUND);

	/* etcd holds exactly these bytes, under the prefix */
	CHECK(ctl_range(ctl_main, "/t/bytes/ --prefix", &cl));
	CHECK(cl.n == nkeys + 1);
	for (i = 0; i < nkeys + 1; i++) {
		const char *k = i < nkeys ? keys[i].k : all;
		size_t n = i < nkeys ? keys[i].n : sizeof(all);
		bool found = false;

		for (j = 0; j < cl.n && !found; j++)
			found = cl.kvs[j].key_len == n + 9 &&
				memcmp(cl.kvs[j].key, "/t/bytes/", 9) == 0 &&
				memcmp(cl.kvs[j].key + 9, k, n) == 0;
		if (!found)
			tap_diag("etcd lacks '/t/bytes/%s'", util_show(k, n));
		CHECK(found);
	}
	clist_release(&cl);

	/* the list is sorted bytewise and strips the prefix */
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == nkeys + 1);
	for (i = 1; i < l.n; i++) {
		size_t a = l.kvs[i - 1].key_len, b = l.kvs[i].key_len;
		int c = memcmp(l.kvs[i - 1].key, l.kvs[i].key, a < b ? a : b);

		CHECK(c < 0 || (c == 0 && a < b));
	}
	CHECK(l.revision > 0);
	store_list_release(&l);

	/* prefixes ending in 0xff: the range end must carry correctly */
	CHECK_RC(store_list(s, "\xff\xff", 2, 0, &l, &err), STORE_OK);
	CHECK(l.n == 3);
	CHECK(util_kv_is(&l.kvs[0], "\xff\xff", 2, "\xff\xff", 2));
	CHECK(util_kv_is(&l.kvs[1], "\xff\xff\0", 3, "\xff\xff\0", 3));
	CHECK(util_kv_is(&l.kvs[2], "\xff\xff\xff", 3, "\xff\xff\xff", 3));
	store_list_release(&l);
	CHECK_RC(store_list(s, "\xff", 1, 0, &l, &err), STORE_OK);
	CHECK(l.n == 4);
	store_list_release(&l);
	CHECK_RC(store_list(s, "\0", 1, 0, &l, &err), STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[0], "\0", 1, "\0", 1));
	CHECK(util_kv_is(&l.kvs[1], "\0\0", 2, "\0\0", 2));
	store_list_release(&l);
	store_free(s);
	return true;
}

/* A store with a prefix never sees, nor touches, keys outside it. */
static bool test_prefix_isolation(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store_kv kv = { 0 };
	struct store *root = store_open(NULL), *s = NULL, *f = NULL;
	static const char *outside[] = {
		"/t/iso/a", "/t/iso/ab", "/t/iso/a0", "/t/iso/b/x",
		"/t/iso/", "/t/iso/a.",
	};
	size_t i;

	CHECK(root);
	for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		CHECK(ctl_put(outside[i], "outside"));
	CHECK(ctl_put("/t/iso/a/x", "inside-x"));
	CHECK(ctl_put("/t/iso/a/y/z", "inside-z"));

	s = store_open("/t/iso/a/");
	CHECK(s);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[0], S("x"), S("inside-x")));
	CHECK(util_kv_is(&l.kvs[1], S("y/z"), S("inside-z")));
	store_list_release(&l);

	/* a directory listing with its '/' never matches a longer name */
	CHECK_RC(store_list(s, S("y/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 1);
	CHECK(util_kv_is(&l.kvs[0], S("y/z"), S("inside-z")));
	store_list_release(&l);
	CHECK_RC(store_list(s, S("x/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 0);
	CHECK(l.revision > 0);
	store_list_release(&l);

	/* writes land under the prefix; outside keys stay as they were */
	CHECK_RC(store_create(s, S("new"), S("n"), 0, NULL, &err), STORE_OK);
	CHECK(ctl_has("/t/iso/a/new", "n"));
	CHECK_RC(store_delete(s, S("x"), NULL, NULL, NULL, &err), STORE_OK);
	CHECK(ctl_lacks("/t/iso/a/x"));
	for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		CHECK(ctl_has(outside[i], "outside"));

	/* the root store sees everything, with full keys */
	CHECK_RC(store_get(root, S("/t/iso/a/new"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("/t/iso/a/new"), S("n")));
	store_kv_release(&kv);
	CHECK_RC(store_list(root, S("/t/iso/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 8);
	store_list_release(&l);

	/* a prefix that ends in 0xff */
	CHECK_RC(store_create(root, S("/t/pf\xff"), S("edge"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_create(root, S("/t/pf\xff\xff"), S("in1"), 0, NULL,
			      &err), STORE_OK);
	CHECK_RC(store_create(root, S("/t/pf\xff/x"), S("in2"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_create(root, S("/t/pg"), S("after"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_create(root, S("/t/pf\xfe"), S("before"), 0, NULL, &err),
		 STORE_OK);
	f = store_open("/t/pf\xff");
	CHECK(f);
	CHECK_RC(store_list(f, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 3);
	CHECK(util_kv_is(&l.kvs[0], "", 0, S("edge")));
	CHECK(util_kv_is(&l.kvs[1], S("/x"), S("in2")));
	CHECK(util_kv_is(&l.kvs[2], S("\xff"), S("in1")));
	store_list_release(&l);
	store_free(f);
	store_free(s);
	store_free(root);
	return true;
}

static bool test_list_keys_only(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store *s = store_open("/t/ko/");

	CHECK(s);
	CHECK(ctl_put("/t/ko/a", "value-a"));
	CHECK(ctl_put("/t/ko/b", "value-b"));
	CHECK_RC(store_list(s, "", 0, STORE_READ_KEYS_ONLY, &l, &err),
		 STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[0], S("a"), "", 0));
	CHECK(util_kv_is(&l.kvs[1], S("b"), "", 0));
	CHECK(l.kvs[0].mod_revision > 0);
	CHECK(l.kvs[1].mod_revision > l.kvs[0].mod_revision);
	store_list_release(&l);
	CHECK_RC(store_list(s, "", 0, STORE_READ_SERIAL, &l, &err), STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[1], S("b"), S("value-b")));
	store_list_release(&l);
	store_free(s);
	return true;
}

/* ---- a paged list at one revision while someone writes ---- */

#define PAGE_KEYS 10000
/* etcd commits concurrent puts with one fsync: many writers fill faster */
#define FILL_THREADS 32

struct filler {
	struct store *s;
	int from, to;
	int failed;
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	struct store_error err;
	char key[32], val[32];

	for (int i = f->from; i < f->to; i++) {
		int kn = snprintf(key, sizeof(key), "k%05d", i);
		int vn = snprintf(val, sizeof(val), "v%d", i);

		memset(&err, 0, sizeof(err));
		if (store_create(f->s, key, (size_t)kn, val, (size_t)vn, 0,
				 NULL, &err) != STORE_OK) {
			fprintf(stderr, "fill: %s: %s\n", key, err.msg);
			f->failed++;
		}
	}
	return NULL;
}

struct writer {
	struct store *s;
	volatile bool stop;
	volatile int written;
	int failed;
};

/* Adds keys between and after the listed ones until told to stop. */
static void *write_more(void *arg)
{
	struct writer *w = arg;
	struct store_error err;
	char key[32];
	unsigned seed = 12345;

	while (!w->stop) {
		int kn;

		seed = seed * 1103515245u + 12345u;
		kn = snprintf(key, sizeof(key), "k%05u+%d",
			      (seed >> 8) % (PAGE_KEYS + 100), w->written);
		memset(&err, 0, sizeof(err));
		if (store_create(w->s, key, (size_t)kn, "late", 4, 0, NULL,
				 &err) != STORE_OK) {
			fprintf(stderr, "writer: %s: %s\n", key, err.msg);
			w->failed++;
			break;
		}
		__atomic_add_fetch(&w->written, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static bool test_list_paged_one_revision(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
		.prefix = "/t/page/",
		.page_size = 1000,
	};
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct filler fl[FILL_THREADS];
	struct writer w = { 0 };
	pthread_t th[FILL_THREADS], wt;
	struct clist cl;
	struct store *s = util_store_open(&cfg);
	int64_t end_rev;
	int before, during, late = 0;
	long ranges0, ranges1, pages;
	long long t0;
	char *args;
	size_t i;

	CHECK(s);
	t0 = util_now_ms();
	for (i = 0; i < FILL_THREADS; i++) {
		fl[i] = (struct filler){ s, (int)i * PAGE_KEYS / FILL_THREADS,
					 (int)(i + 1) * PAGE_KEYS / FILL_THREADS,
					 0 };
		CHECK(pthread_create(&th[i], NULL, fill, &fl[i]) == 0);
	}
	for (i = 0; i < FILL_THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK(fl[i].failed == 0);
	}
	tap_diag("created %d keys with %d threads in %lld ms", PAGE_KEYS,
		 FILL_THREADS,
		 util_now_ms() - t0);

	/* a second client keeps writing while the list pages through */
	w.s = s;
	CHECK(pthread_create(&wt, NULL, write_more, &w) == 0);
	while (__atomic_load_n(&w.written, __ATOMIC_SEQ_CST) < 3 && !w.failed)
		util_sleep_ms(1);
	ranges0 = range_requests();
	before = __atomic_load_n(&w.written, __ATOMIC_SEQ_CST);
	t0 = util_now_ms();
	memset(&err, 0, sizeof(err));
	int rc = store_list(s, "", 0, 0, &l, &err);
	during = __atomic_load_n(&w.written, __ATOMIC_SEQ_CST) - before;
	ranges1 = range_requests();
	w.stop = true;
	pthread_join(wt, NULL);
	CHECK_RC(rc, STORE_OK);
	CHECK(w.failed == 0);
	tap_diag("listed %zu keys at revision %" PRId64 " in %lld ms and %ld "
		 "range requests while %d keys were added", l.n, l.revision,
		 util_now_ms() - t0, ranges1 - ranges0, during);
	CHECK(during > 0);
	CHECK(l.n >= PAGE_KEYS);
	/* in pages of 1000: a few requests, never one per key */
	CHECK(ranges0 >= 0 && ranges1 >= 0);
	pages = (long)(l.n + 999) / 1000;
	CHECK(ranges1 - ranges0 >= pages);
	CHECK(ranges1 - ranges0 <= pages + 3);

	/* exactly what etcd held at that revision */
	args = util_fmt("/t/page/ --prefix --rev=%" PRId64, l.revision);
	CHECK(ctl_range(ctl_main, args, &cl));
	free(args);
	if (cl.n != l.n)
		tap_diag("etcd held %zu keys at %" PRId64 ", the list has %zu",
			 cl.n, l.revision, l.n);
	CHECK(cl.n == l.n);
	for (i = 0; i < l.n; i++) {
		struct ckv *c = &cl.kvs[i];

		CHECK(c->key_len == l.kvs[i].key_len + 8);
		CHECK(memcmp(c->key + 8, l.kvs[i].key, l.kvs[i].key_len) == 0);
		CHECK(util_mem_is(c->value, c->value_len, l.kvs[i].value,
			     l.kvs[i].value_len));
		CHECK(c->mod_revision == l.kvs[i].mod_revision);
		CHECK(l.kvs[i].mod_revision <= l.revision);
	}
	clist_release(&cl);

	/* and some keys were written after it, while the pages were read */
	end_rev = ctl_revision();
	CHECK(end_rev > l.revision);
	CHECK(ctl_range(ctl_main, "/t/page/ --prefix --keys-only", &cl));
	for (i = 0; i < cl.n; i++)
		if (cl.kvs[i].mod_revision > l.revision)
			late++;
	clist_release(&cl);
	tap_diag("%d keys are newer than the list", late);
	CHECK(late > 0);
	store_list_release(&l);

	/* without writers, page boundaries lose and repeat nothing */
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_list(s, S("k0"), STORE_READ_KEYS_ONLY, &l, &err),
		 STORE_OK);
	for (i = 1; i < l.n; i++)
		CHECK(strcmp(l.kvs[i - 1].key, l.kvs[i].key) < 0);
	CHECK(ctl_range(ctl_main, "/t/page/k0 --prefix --keys-only --limit=1",
			&cl));
	tap_diag("%zu keys start with k0, etcd counts %" PRId64, l.n,
		 cl.count);
	CHECK(cl.count == (int64_t)l.n);
	CHECK(l.n > PAGE_KEYS - 100);
	clist_release(&cl);
	store_list_release(&l);
	store_free(s);
	return true;
}

/* ---- delete ---- */

static bool test_delete(void)
{
	struct store_error err = { 0 };
	struct store_kv prev = { 0 };
	struct store *s = store_open("/t/del/");
	int64_t mod, rev = 0;

	CHECK(s);
	CHECK(ctl_put("/t/del/a", "va"));
	mod = ctl_mod("/t/del/a");
	CHECK_RC(store_delete(s, S("a"), NULL, &prev, &rev, &err), STORE_OK);
	CHECK(rev > mod);
	CHECK(util_kv_is(&prev, S("a"), S("va")));
	CHECK(prev.mod_revision == mod);
	store_kv_release(&prev);
	CHECK(ctl_lacks("/t/del/a"));
	CHECK(ctl_revision() == rev);

	CHECK_RC(store_delete(s, S("a"), NULL, NULL, NULL, &err),
		 STORE_ENOTFOUND);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("never"), NULL, &prev, NULL, &err),
		 STORE_ENOTFOUND);

	/* the right preconditions: deleted */
	CHECK(ctl_put("/t/del/b", "vb"));
	struct store_preconditions pre = { ctl_mod("/t/del/b"), 0 };
	pre.create_revision = pre.mod_revision;
	CHECK_RC(store_delete(s, S("b"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(ctl_lacks("/t/del/b"));
	store_free(s);
	return true;
}

/* A delete whose precondition is stale is refused; etcd keeps the key. */
static bool test_delete_stale_precondition(void)
{
	struct store_error err = { 0 };
	struct store_kv cur = { 0 };
	struct store_preconditions pre = { 0 };
	struct store *s = store_open("/t/delpre/");
	int64_t old, now, create;
	struct ckv c;

	CHECK(s);
	CHECK(ctl_put("/t/delpre/k", "mine"));
	old = ctl_mod("/t/delpre/k");
	CHECK(ctl_put("/t/delpre/k", "theirs"));
	now = ctl_mod("/t/delpre/k");
	CHECK(now > old);

	pre.mod_revision = old;
	CHECK_RC(store_delete(s, S("k"), &pre, &cur, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(err.revision == now);
	CHECK(util_kv_is(&cur, S("k"), S("theirs")));
	CHECK(cur.mod_revision == now);
	store_kv_release(&cur);
	CHECK(ctl_has("/t/delpre/k", "theirs"));
	CHECK(ctl_mod("/t/delpre/k") == now);

	/* the same value, deleted and created again: a new create_revision */
	CHECK(ctl_get("/t/delpre/k", &c) == 1);
	create = c.create_revision;
	ckv_release(&c);
	CHECK(create == old);
	CHECK(ctl_del("/t/delpre/k"));
	CHECK(ctl_put("/t/delpre/k", "theirs"));
	now = ctl_mod("/t/delpre/k");
	pre.mod_revision = 0;
	pre.create_revision = create;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("k"), &pre, NULL, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_has("/t/delpre/k", "theirs"));
	CHECK(ctl_mod("/t/delpre/k") == now);

	/* "must not exist" makes no sense for a delete; it deletes nothing */
	pre.mod_revision = STORE_REV_ABSENT;
	pre.create_revision = 0;
	memset(&err, 0, sizeof(err));
	CHECK(store_delete(s, S("k"), &pre, NULL, NULL, &err) < 0);
	CHECK(err.msg[0] != '\0');
	CHECK(ctl_has("/t/delpre/k", "theirs"));

	/* with the current revision it goes */
	pre.mod_revision = now;
	pre.create_revision = now;
	CHECK_RC(store_delete(s, S("k"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(ctl_lacks("/t/delpre/k"));
	store_free(s);
	return true;
}

/* ---- guaranteed_update ---- */

struct upd {
	int calls;
	int change_on;		/* calls that change the key first: 1, or -1 for all */
	const char *full_key;	/* for etcdctl */
	int fail_with;		/* returned from try_update when not 0 */
	bool same;		/* return the current value unchanged */
	int64_t lease;		/* to return */
	size_t big;		/* return a value this large */
	char seen[8][64];	/* the values try_update was called with */
	bool seen_absent[8];
};

static int upd_fn(void *arg, const struct store_kv *cur, struct store_update *out)
{
	struct upd *u = arg;
	int n = u->calls++;
	char *v;

	if (n < 8) {
		if (cur)
			snprintf(u->seen[n], sizeof(u->seen[n]), "%.*s",
				 (int)cur->value_len, cur->value);
		u->seen_absent[n] = cur == NULL;
	}
	if (u->change_on == -1 || u->change_on == n + 1) {
		char val[32];

		snprintf(val, sizeof(val), "other-%d", n + 1);
		if (!ctl_put(u->full_key, val))
			return STORE_EINTERNAL;
	}
	if (u->fail_with)
		return u->fail_with;
	out->lease = u->lease;
	if (u->big) {
		out->value = util_xmalloc(u->big);
		memset(out->value, 'B', u->big);
		out->value_len = u->big;
		return 0;
	}
	if (u->same) {
		out->value = util_xmemdup(cur ? cur->value : "", cur ? cur->value_len : 0);
		out->value_len = cur ? cur->value_len : 0;
		return 0;
	}
	v = util_fmt("%.*s+u", cur ? (int)cur->value_len : 3,
		cur ? cur->value : "new");
	out->value = v;
	out->value_len = strlen(v);
	return 0;
}

static bool test_update_basic(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct upd u = { .full_key = "/t/upd/a", .lease = -1 };
	struct store *s = store_open("/t/upd/");

	CHECK(s);
	CHECK(ctl_put("/t/upd/a", "v0"));
	CHECK_RC(store_guaranteed_update(s, S("a"), false, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 1);
	CHECK(strcmp(u.seen[0], "v0") == 0);
	CHECK(util_kv_is(&out, S("a"), S("v0+u")));
	CHECK(out.version == 2);
	CHECK(ctl_has("/t/upd/a", "v0+u"));
	CHECK(ctl_mod("/t/upd/a") == out.mod_revision);
	store_kv_release(&out);

	/* absent and not to be created: try_update is not even asked */
	u = (struct upd){ .full_key = "/t/upd/b", .lease = -1 };
	CHECK_RC(store_guaranteed_update(s, S("b"), false, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_ENOTFOUND);
	CHECK(u.calls == 0);
	CHECK(ctl_lacks("/t/upd/b"));

	/* absent and allowed: try_update sees NULL and creates it */
	u = (struct upd){ .full_key = "/t/upd/b", .lease = 0 };
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("b"), true, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 1 && u.seen_absent[0]);
	CHECK(util_kv_is(&out, S("b"), S("new+u")));
	CHECK(out.version == 1);
	store_kv_release(&out);
	CHECK(ctl_has("/t/upd/b", "new+u"));

	/* try_update's error ends it and nothing is written */
	u = (struct upd){ .full_key = "/t/upd/a", .fail_with = STORE_EINVAL };
	int64_t mod = ctl_mod("/t/upd/a");
	CHECK_RC(store_guaranteed_update(s, S("a"), false, NULL, NULL, upd_fn,
					 &u, NULL, &err), STORE_EINVAL);
	CHECK(u.calls == 1);
	CHECK(ctl_mod("/t/upd/a") == mod);
	store_free(s);
	return true;
}

/* The key changes under the first attempt; the second one wins. */
static bool test_update_conflict_retried(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct upd u = { .full_key = "/t/updr/k", .change_on = 1, .lease = -1 };
	struct store *s = store_open("/t/updr/");

	CHECK(s);
	CHECK(ctl_put("/t/updr/k", "v0"));
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 2);
	CHECK(strcmp(u.seen[0], "v0") == 0);
	CHECK(strcmp(u.seen[1], "other-1") == 0);
	CHECK(util_kv_is(&out, S("k"), S("other-1+u")));
	CHECK(ctl_has("/t/updr/k", "other-1+u"));
	CHECK(ctl_mod("/t/updr/k") == out.mod_revision);
	store_kv_release(&out);
	store_free(s);
	return true;
}

/* The key changes under every attempt: ECONFLICT after the bound. */
static bool test_update_conflict_exhausted(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
		.prefix = "/t/upde/",
		.max_update_retries = 3,
	};
	struct store_error err = { 0 };
	struct upd u = { .full_key = "/t/upde/k", .change_on = -1, .lease = -1 };
	struct store *s = util_store_open(&cfg);
	char last[32];

	CHECK(s);
	CHECK(ctl_put("/t/upde/k", "v0"));
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, NULL, &err), STORE_ECONFLICT);
	tap_diag("try_update ran %d times with max_update_retries 3", u.calls);
	CHECK(u.calls == 3 || u.calls == 4);
	/* etcd keeps the other writer's last value, not ours */
	snprintf(last, sizeof(last), "other-%d", u.calls);
	CHECK(ctl_has("/t/upde/k", last));
	store_free(s);
	return true;
}

/* An update that changes nothing writes nothing. */
static bool test_update_noop(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct upd u = { .full_key = "/t/updn/k", .same = true, .lease = -1 };
	struct store *s = store_open("/t/updn/");
	int64_t mod, rev0, rev1;

	CHECK(s);
	CHECK(ctl_put("/t/updn/k", "same"));
	mod = ctl_mod("/t/updn/k");
	CHECK_RC(store_revision(s, &rev0, &err), STORE_OK);
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 1);
	CHECK(util_kv_is(&out, S("k"), S("same")));
	CHECK(out.mod_revision == mod);
	store_kv_release(&out);
	CHECK(ctl_mod("/t/updn/k") == mod);

	/* the same lease, given explicitly, is no change either */
	u = (struct upd){ .full_key = "/t/updn/k", .same = true, .lease = 0 };
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, NULL, &err), STORE_OK);
	CHECK(ctl_mod("/t/updn/k") == mod);
	CHECK_RC(store_revision(s, &rev1, &err), STORE_OK);
	CHECK(rev1 == rev0);
	CHECK(ctl_revision() == rev0);
	store_free(s);
	return true;
}

/* Caller preconditions and a stale suggestion. */
static bool test_update_preconditions(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 }, sugg = { 0 };
	struct store_preconditions pre = { 0 };
	struct upd u = { .full_key = "/t/updp/k", .lease = -1 };
	struct store *s = store_open("/t/updp/");
	int64_t old, now;

	CHECK(s);
	CHECK(ctl_put("/t/updp/k", "v0"));
	old = ctl_mod("/t/updp/k");
	CHECK_RC(store_get(s, S("k"), 0, &sugg, &err), STORE_OK);
	CHECK(ctl_put("/t/updp/k", "v1"));
	now = ctl_mod("/t/updp/k");

	/* a stale precondition is not retried: it is the caller's */
	pre.mod_revision = old;
	CHECK_RC(store_guaranteed_update(s, S("k"), false, &pre, NULL, upd_fn,
					 &u, NULL, &err), STORE_EPRECONDITION);
	CHECK(err.revision == now);
	CHECK(u.calls == 0);
	CHECK(ctl_has("/t/updp/k", "v1"));
	CHECK(ctl_mod("/t/updp/k") == now);

	/* "must not exist" on a key that exists */
	pre.mod_revision = STORE_REV_ABSENT;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("k"), true, &pre, NULL, upd_fn,
					 &u, NULL, &err), STORE_EPRECONDITION);
	CHECK(ctl_mod("/t/updp/k") == now);

	/* a stale suggestion is caught by the transaction and retried */
	u = (struct upd){ .full_key = "/t/updp/k", .lease = -1 };
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, &sugg, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 2);
	CHECK(strcmp(u.seen[0], "v0") == 0);
	CHECK(strcmp(u.seen[1], "v1") == 0);
	CHECK(util_kv_is(&out, S("k"), S("v1+u")));
	CHECK(ctl_has("/t/updp/k", "v1+u"));
	store_kv_release(&sugg);

	/* a current suggestion and a matching precondition: one attempt */
	u = (struct upd){ .full_key = "/t/updp/k", .lease = -1 };
	pre.mod_revision = out.mod_revision;
	CHECK_RC(store_guaranteed_update(s, S("k"), false, &pre, &out, upd_fn,
					 &u, NULL, &err), STORE_OK);
	CHECK(u.calls == 1);
	CHECK(ctl_has("/t/updp/k", "v1+u+u"));
	store_kv_release(&out);
	store_free(s);
	return true;
}

/* ---- move ---- */

static bool test_move(void)
{
	struct store_error err = { 0 };
	struct store_preconditions from = { 0 }, to = { 0 };
	struct store *s = store_open("/t/mv/");
	int64_t rev = 0, src;

	CHECK(s);
	CHECK(ctl_put("/t/mv/src", "payload"));
	src = ctl_mod("/t/mv/src");

	from.mod_revision = src;
	to.mod_revision = STORE_REV_ABSENT;
	CHECK_RC(store_move(s, S("src"), &from, S("dst"), &to, NULL, 0, &rev,
			    &err), STORE_OK);
	CHECK(rev > src);
	CHECK(ctl_lacks("/t/mv/src"));
	CHECK(ctl_has("/t/mv/dst", "payload"));
	CHECK(ctl_mod("/t/mv/dst") == rev);
	/* one transaction: one revision */
	CHECK(ctl_revision() == rev);

	/* a stale source: nothing moves */
	from.mod_revision = src;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_move(s, S("dst"), &from, S("src"), &to, NULL, 0, &rev,
			    &err), STORE_EPRECONDITION);
	CHECK(ctl_has("/t/mv/dst", "payload"));
	CHECK(ctl_lacks("/t/mv/src"));

	/* a target that must not exist but does: nothing moves */
	CHECK(ctl_put("/t/mv/other", "o"));
	from.mod_revision = ctl_mod("/t/mv/dst");
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_move(s, S("dst"), &from, S("other"), &to, NULL, 0, &rev,
			    &err), STORE_EPRECONDITION);
	CHECK(ctl_has("/t/mv/dst", "payload"));
	CHECK(ctl_has("/t/mv/other", "o"));

	/* over an existing target at its revision, with a new value */
	to.mod_revision = ctl_mod("/t/mv/other");
	CHECK_RC(store_move(s, S("dst"), &from, S("other"), &to,
			    S("edited"), &rev, &err), STORE_OK);
	CHECK(ctl_lacks("/t/mv/dst"));
	CHECK(ctl_has("/t/mv/other", "edited"));
	CHECK(ctl_mod("/t/mv/other") == rev);

	/* unchecked */
	CHECK_RC(store_move(s, S("other"), NULL, S("last"), NULL, NULL, 0,
			    &rev, &err), STORE_OK);
	CHECK(ctl_lacks("/t/mv/other"));
	CHECK(ctl_has("/t/mv/last", "edited"));
	store_free(s);
	return true;
}

/* ---- leases ---- */

static bool test_lease(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct upd u = { .full_key = "/t/lease/k", .same = true, .lease = -1 };
	struct store *s = store_open("/t/lease/");
	struct ckv c;
	int64_t id = 0, short_id = 0;
	long long t0;
	char *out;
	int rc;

	CHECK(s);
	CHECK_RC(store_lease_grant(s, 60, &id, &err), STORE_OK);
	CHECK(id > 0);
	out = util_sh_out("%s lease timetolive %" PRIx64, ctl_main, (uint64_t)id);
	CHECK(out && strstr(out, "granted with TTL(60s)"));
	free(out);

	CHECK_RC(store_create(s, S("k"), S("leased"), id, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(kv.lease == id);
	store_kv_release(&kv);
	CHECK(ctl_get("/t/lease/k", &c) == 1);
	CHECK(c.lease == id);
	ckv_release(&c);

	/* -1 keeps the lease, even when the value changes */
	u = (struct upd){ .full_key = "/t/lease/k", .lease = -1 };
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, NULL, &err), STORE_OK);
	CHECK(ctl_get("/t/lease/k", &c) == 1);
	CHECK(c.lease == id);
	CHECK(util_mem_is(c.value, c.value_len, S("leased+u")));
	ckv_release(&c);

	/* the same value without the lease is a change: written, lease gone */
	u = (struct upd){ .full_key = "/t/lease/k", .same = true, .lease = 0 };
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, NULL, &err), STORE_OK);
	CHECK(ctl_get("/t/lease/k", &c) == 1);
	CHECK(c.lease == 0);
	CHECK(c.version == 3);
	ckv_release(&c);

	/* a short lease takes its key with it */
	CHECK_RC(store_lease_grant(s, 2, &short_id, &err), STORE_OK);
	CHECK(short_id > 0 && short_id != id);
	CHECK_RC(store_create(s, S("brief"), S("b"), short_id, NULL, &err),
		 STORE_OK);
	CHECK(ctl_has("/t/lease/brief", "b"));
	t0 = util_now_ms();
	do {
		util_sleep_ms(250);
		memset(&err, 0, sizeof(err));
		rc = store_get(s, S("brief"), 0, &kv, &err);
		store_kv_release(&kv);
	} while (rc == STORE_OK && util_now_ms() - t0 < 15000);
	CHECK_RC(rc, STORE_ENOTFOUND);
	CHECK(util_now_ms() - t0 >= 1000);
	CHECK(ctl_lacks("/t/lease/brief"));
	store_free(s);
	return true;
}

/* ---- cluster ---- */

static bool test_revision(void)
{
	struct store_error err = { 0 };
	struct store *s = store_open("/t/rev/");
	int64_t r0 = 0, r1 = 0;

	CHECK(s);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	CHECK(r0 > 0);
	CHECK(r0 == ctl_revision());
	CHECK(ctl_put("/t/rev/x", "1"));
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 1);
	/* a write outside the prefix moves the revision all the same */
	CHECK(ctl_put("/t/outside-rev", "1"));
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 2);
	store_free(s);
	return true;
}

static bool test_members(void)
{
	struct store_error err = { 0 };
	struct store_member *m = NULL;
	struct store *s = store_open(NULL);
	size_t n = 0;
	char *out, *end;
	uint64_t id;

	CHECK(s);
	CHECK_RC(store_members(s, &m, &n, &err), STORE_OK);
	CHECK(n == 1);
	CHECK(m[0].name && strcmp(m[0].name, "test") == 0);
	CHECK(m[0].n_client_urls == 1);
	CHECK(strcmp(m[0].client_urls[0], endpoint) == 0);
	out = util_sh_out("%s member list -w simple", ctl_main);
	CHECK(out);
	errno = 0;
	id = strtoull(out, &end, 16);
	CHECK(errno == 0 && end != out && *end == ',');
	free(out);
	CHECK(m[0].id == id);
	store_members_free(m, n);
	store_free(s);
	return true;
}

/* ---- watch ---- */

static bool test_watch_order(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = store_open("/t/w1/");
	int64_t r0 = 0;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&log);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	CHECK_RC(store_watch(s, "", 0, true, r0 + 1, util_on_event, &log, &w,
			     &err), STORE_OK);
	CHECK(ctl_put("/t/w1/a", "1"));
	CHECK(ctl_put("/t/w1/b", "2"));
	CHECK(ctl_put("/t/w0-outside", "x"));
	CHECK(ctl_put("/t/w1/a", "3"));
	CHECK(ctl_del("/t/w1/b"));
	CHECK_RC(store_create(s, S("c/d"), S("4"), 0, NULL, &err), STORE_OK);
	if (util_evlog_wait(&log, 5, 10000) < 5) {
		tap_diag("got %zu events of 5", log.n);
		goto out;
	}
	util_sleep_ms(200);	/* nothing more is to come */
	pthread_mutex_lock(&log.lock);
	ok = log.n == 5 && !log.out_of_order &&
	     util_ev_is(&log.evs[0], STORE_EV_PUT, S("a"), S("1")) &&
	     util_ev_is(&log.evs[1], STORE_EV_PUT, S("b"), S("2")) &&
	     util_ev_is(&log.evs[2], STORE_EV_PUT, S("a"), S("3")) &&
	     util_ev_is(&log.evs[3], STORE_EV_DELETE, S("b"), NULL, 0) &&
	     util_ev_is(&log.evs[4], STORE_EV_PUT, S("c/d"), S("4"));
	if (ok) {
		/* revisions: consecutive but for the write outside */
		ok = log.evs[0].mod_revision == r0 + 1 &&
		     log.evs[1].mod_revision == r0 + 2 &&
		     log.evs[2].mod_revision == r0 + 4 &&
		     log.evs[3].mod_revision == r0 + 5 &&
		     log.evs[4].mod_revision == r0 + 6;
		if (!ok)
			tap_diag("event revisions off from %" PRId64, r0);
	}
	if (ok) {
		/* prev_kv on the overwrite and the delete */
		ok = log.evs[2].prev_value &&
		     util_mem_is(log.evs[2].prev_value, log.evs[2].prev_len, S("1")) &&
		     log.evs[3].prev_value &&
		     util_mem_is(log.evs[3].prev_value, log.evs[3].prev_len, S("2")) &&
		     log.evs[2].version == 2 &&
		     log.evs[2].create_revision == r0 + 1;
		if (!ok)
			tap_diag("prev_kv or version missing");
	}
	pthread_mutex_unlock(&log.lock);
out:
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

/* From a past revision: the history comes first, then live events. */
static bool test_watch_from_past(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = store_open("/t/w2/");
	int64_t first;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&log);
	CHECK(ctl_put("/t/w2/a", "1"));
	first = ctl_mod("/t/w2/a");
	CHECK(ctl_put("/t/w2/b", "2"));
	CHECK(ctl_put("/t/w2/c", "3"));
	CHECK_RC(store_watch(s, "", 0, true, first + 1, util_on_event, &log, &w,
			     &err), STORE_OK);
	if (util_evlog_wait(&log, 2, 10000) < 2)
		goto out;
	CHECK(ctl_put("/t/w2/d", "4"));
	if (util_evlog_wait(&log, 3, 10000) < 3)
		goto out;
	pthread_mutex_lock(&log.lock);
	ok = log.n == 3 && !log.out_of_order &&
	     util_ev_is(&log.evs[0], STORE_EV_PUT, S("b"), S("2")) &&
	     util_ev_is(&log.evs[1], STORE_EV_PUT, S("c"), S("3")) &&
	     util_ev_is(&log.evs[2], STORE_EV_PUT, S("d"), S("4"));
	pthread_mutex_unlock(&log.lock);
out:
	if (!ok)
		tap_diag("got %zu events", log.n);
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

/* One key, not a prefix; from now (start_rev 0). */
static bool test_watch_one_key_from_now(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = store_open("/t/w3/");
	bool ok = false;
	int i;

	CHECK(s);
	util_evlog_init(&log);
	CHECK_RC(store_watch(s, S("k"), false, 0, util_on_event, &log, &w, &err),
		 STORE_OK);
	/* the watch may not be established yet: write until it sees one */
	for (i = 0; i < 50 && util_evlog_wait(&log, 1, 200) < 1; i++) {
		CHECK(ctl_put("/t/w3/kk", "not me"));
		CHECK(ctl_put("/t/w3/k", "me"));
	}
	pthread_mutex_lock(&log.lock);
	ok = log.n >= 1 && !log.out_of_order;
	for (size_t j = 0; ok && j < log.n; j++)
		ok = util_ev_is(&log.evs[j], STORE_EV_PUT, S("k"), S("me"));
	pthread_mutex_unlock(&log.lock);
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

static bool test_watch_compacted(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = store_open("/t/w4/");
	int64_t first, compact;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&log);
	CHECK(ctl_put("/t/w4/a", "1"));
	first = ctl_mod("/t/w4/a");
	CHECK(ctl_put("/t/w4/a", "2"));
	CHECK(ctl_put("/t/w4/a", "3"));
	compact = ctl_mod("/t/w4/a");
	CHECK(util_sh("%s compact %" PRId64 " >/dev/null", ctl_main, compact) == 0);

	CHECK_RC(store_watch(s, "", 0, true, first, util_on_event, &log, &w, &err),
		 STORE_OK);
	if (util_evlog_wait(&log, 1, 10000) < 1) {
		tap_diag("no event from a compacted start revision");
		goto out;
	}
	CHECK(ctl_put("/t/w4/a", "after"));
	util_sleep_ms(500);
	pthread_mutex_lock(&log.lock);
	ok = log.n == 1 && log.evs[0].type == STORE_EV_ERROR &&
	     log.evs[0].err == STORE_ECOMPACTED &&
	     log.evs[0].compact_revision == compact;
	if (!ok)
		tap_diag("%zu events; first: type %d err %s compact %" PRId64
			 " (expected %" PRId64 ")", log.n, log.evs[0].type,
			 store_errname(log.evs[0].err),
			 log.evs[0].compact_revision, compact);
	pthread_mutex_unlock(&log.lock);
out:
	store_watch_stop(w);
	util_evlog_release(&log);

	/* from the compaction on, history is still there */
	util_evlog_init(&log);
	w = NULL;
	memset(&err, 0, sizeof(err));
	if (ok && store_watch(s, "", 0, true, compact, util_on_event, &log, &w,
			      &err) == STORE_OK) {
		ok = util_evlog_wait(&log, 2, 10000) >= 2;
		pthread_mutex_lock(&log.lock);
		ok = ok && util_ev_is(&log.evs[0], STORE_EV_PUT, S("a"), S("3")) &&
		     util_ev_is(&log.evs[1], STORE_EV_PUT, S("a"), S("after"));
		pthread_mutex_unlock(&log.lock);
		store_watch_stop(w);
	} else if (ok) {
		tap_diag("watch from the compact revision: %s", err.msg);
		ok = false;
	}
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

/* The watch of a store with a prefix sees only its keys, stripped. */
static bool test_watch_prefix_isolation(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = store_open("/t/w5/");
	int64_t r0 = 0;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&log);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	CHECK_RC(store_watch(s, "", 0, true, r0 + 1, util_on_event, &log, &w,
			     &err), STORE_OK);
	CHECK(ctl_put("/t/w5", "no"));
	CHECK(ctl_put("/t/w50", "no"));
	CHECK(ctl_put("/t/w5/in", "yes"));
	CHECK(ctl_put("/t/w6/x", "no"));
	if (util_evlog_wait(&log, 1, 10000) >= 1) {
		util_sleep_ms(300);
		pthread_mutex_lock(&log.lock);
		ok = log.n == 1 &&
		     util_ev_is(&log.evs[0], STORE_EV_PUT, S("in"), S("yes"));
		pthread_mutex_unlock(&log.lock);
	}
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

/* ---- endpoints ---- */

static bool test_failover(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.prefix = "/t/fo/",
		.connect_timeout_ms = 1000,
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	char eps[512];
	struct store *s;
	long long t0;

	CHECK(ctl_put("/t/fo/k", "v"));
	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,http://127.0.0.1:%d,%s",
		 dead_port(), dead_port(), endpoint);
	cfg.endpoints = eps;
	s = util_store_open(&cfg);
	CHECK(s);
	t0 = util_now_ms();
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("v")));
	store_kv_release(&kv);
	CHECK(util_now_ms() - t0 < 5000);
	CHECK(strcmp(store_endpoint(s), endpoint) == 0);
	/* and it stays there */
	CHECK_RC(store_create(s, S("k2"), S("v2"), 0, NULL, &err), STORE_OK);
	CHECK(ctl_has("/t/fo/k2", "v2"));
	CHECK(strcmp(store_endpoint(s), endpoint) == 0);
	store_free(s);
	return true;
}

static bool test_unreachable(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 2000,
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store_list l = { 0 };
	struct store *s;
	char eps[128];
	long long t0;
	int64_t rev;

	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,http://127.0.0.1:%d",
		 dead_port(), dead_port());
	cfg.endpoints = eps;
	s = util_store_open(&cfg);
	CHECK(s);
	t0 = util_now_ms();
	CHECK_RC(store_revision(s, &rev, &err), STORE_EUNREACHABLE);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNREACHABLE);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_EUNREACHABLE);
	store_list_release(&l);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s, S("k"), S("v"), 0, NULL, &err),
		 STORE_EUNREACHABLE);
	CHECK(util_now_ms() - t0 < 10000);
	store_free(s);
	return true;
}

/* ---- sizes ---- */

static bool test_too_large(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
		.prefix = "/t/big/",
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct upd u = { .full_key = "/t/big/small", .lease = -1 };
	size_t big = 2u << 20;
	char *v = util_xmalloc(big);
	struct store *s, *s4;
	int64_t mod;

	memset(v, 'x', big);
	s = util_store_open(&cfg);
	CHECK(s);
	CHECK(store_max_value_size(s) == 1536u * 1024);

	/* refused by the store before sending */
	CHECK_RC(store_create(s, S("huge"), v, big, 0, NULL, &err),
		 STORE_ETOOLARGE);
	CHECK(ctl_lacks("/t/big/huge"));

	/* refused by etcd when the store lets it through */
	cfg.max_value_size = 4u << 20;
	s4 = util_store_open(&cfg);
	CHECK(s4);
	CHECK(store_max_value_size(s4) == 4u << 20);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s4, S("huge"), v, big, 0, NULL, &err),
		 STORE_ETOOLARGE);
	CHECK(ctl_lacks("/t/big/huge"));

	/* an update that grows too large leaves the key as it was */
	CHECK(ctl_put("/t/big/small", "s"));
	mod = ctl_mod("/t/big/small");
	u.big = big;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("small"), false, NULL, NULL,
					 upd_fn, &u, NULL, &err),
		 STORE_ETOOLARGE);
	CHECK(ctl_mod("/t/big/small") == mod);

	/* a large value under the limit goes through whole */
	CHECK_RC(store_create(s, S("mib"), v, 1u << 20, 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("mib"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("mib"), v, 1u << 20));
	store_kv_release(&kv);
	free(v);
	store_free(s4);
	store_free(s);
	return true;
}

/* ---- hostile servers ---- */

enum { OP_REVISION = 1, OP_GET = 2, OP_LIST = 4, OP_CREATE = 8 };

struct garbage_case {
	const char *mode;
	unsigned ops;
	int want;	/* expected error */
	int also;	/* also acceptable (0: none) */
};

static const struct garbage_case garbage_cases[] = {
	{ "notjson", OP_REVISION | OP_GET | OP_LIST | OP_CREATE,
	  STORE_EBADREPLY, 0 },
	{ "truncated", OP_REVISION | OP_GET | OP_LIST | OP_CREATE,
	  STORE_EBADREPLY, 0 },
	/* a reply cut off by a closed connection: lost or bad, said so */
	{ "short", OP_REVISION | OP_GET | OP_LIST, STORE_EBADREPLY,
	  STORE_EUNREACHABLE },
	{ "badrevision", OP_REVISION | OP_LIST, STORE_EBADREPLY, 0 },
	{ "badkvs", OP_GET | OP_LIST, STORE_EBADREPLY, 0 },
	{ "badbase64", OP_GET | OP_LIST, STORE_EBADREPLY, 0 },
	{ "badcount", OP_GET | OP_LIST, STORE_EBADREPLY, 0 },
	{ "oversized", OP_REVISION | OP_GET | OP_LIST, STORE_EBADREPLY, 0 },
	{ "error500", OP_REVISION | OP_GET | OP_LIST | OP_CREATE,
	  STORE_EBADREPLY, 0 },
	{ "nothttp", OP_REVISION | OP_GET | OP_LIST, STORE_EBADREPLY, 0 },
	{ "silent", OP_GET, STORE_ETIMEOUT, 0 },
	/* a write that timed out, and whose key cannot be read again */
	{ "silent", OP_CREATE, STORE_EUNKNOWN, 0 },
	/* accepted, then closed before any answer: nothing was received */
	{ "close", OP_REVISION | OP_GET, STORE_EUNREACHABLE, STORE_EBADREPLY },
};

static bool garbage_op(struct store *s, const struct garbage_case *gc,
		       unsigned op)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store_list l = { 0 };
	long long t0 = util_now_ms(), took;
	int64_t rev = 0;
	int rc = STORE_OK;
	const char *name = "";

	switch (op) {
	case OP_REVISION:
		name = "revision";
		rc = store_revision(s, &rev, &err);
		break;
	case OP_GET:
		name = "get";
		rc = store_get(s, S("a"), 0, &kv, &err);
		store_kv_release(&kv);
		break;
	case OP_LIST:
		name = "list";
		rc = store_list(s, "", 0, 0, &l, &err);
		store_list_release(&l);
		break;
	case OP_CREATE:
		name = "create";
		rc = store_create(s, S("a"), S("v"), 0, NULL, &err);
		break;
	}
	took = util_now_ms() - t0;
	tap_diag("%s: %s -> %s (%lld ms): %s", gc->mode, name,
		 store_errname(rc), took, err.msg);
	if (rc != gc->want && (gc->also == 0 || rc != gc->also)) {
		tap_diag("%s: %s returned %s, expected %s", gc->mode, name,
			 store_errname(rc), store_errname(gc->want));
		return false;
	}
	if (err.code != rc || err.msg[0] == '\0') {
		tap_diag("%s: %s: err.code %d, empty message", gc->mode, name,
			 err.code);
		return false;
	}
	/* bounded: request timeout 1 s, plus connects and one retry */
	if (took > 5000) {
		tap_diag("%s: %s took %lld ms", gc->mode, name, took);
		return false;
	}
	return true;
}

static bool test_garbage(const struct garbage_case *gc)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 1000,
		.max_reply_size = 64 * 1024,
	};
	struct garbage g;
	struct store *s;
	bool ok = true;

	if (!garbage_start(&g, gc->mode, 1u << 20))
		return false;
	cfg.endpoints = g.url;
	s = util_store_open(&cfg);
	if (!s) {
		garbage_stop(&g);
		return false;
	}
	for (unsigned op = 1; op <= OP_CREATE; op <<= 1)
		if (gc->ops & op)
			ok = garbage_op(s, gc, op) && ok;
	store_free(s);
	garbage_stop(&g);
	return ok;
}

/* A watch on a server that answers rubbish reports it and stops promptly. */
static bool test_garbage_watch(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 1000,
	};
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct garbage g, q;
	struct util_evlog log;
	struct store *s = NULL;
	bool ok = false;
	long long t0;

	if (!garbage_start(&g, "notjson", 0))
		return false;
	if (!garbage_start(&q, "silent", 0)) {
		garbage_stop(&g);
		return false;
	}
	util_evlog_init(&log);
	cfg.endpoints = g.url;
	s = util_store_open(&cfg);
	if (!s)
		goto out;
	if (store_watch(s, "", 0, true, 1, util_on_event, &log, &w, &err) ==
	    STORE_OK) {
		ok = util_evlog_wait(&log, 1, 10000) >= 1;
		pthread_mutex_lock(&log.lock);
		ok = ok && log.evs[0].type == STORE_EV_ERROR &&
		     log.evs[0].err == STORE_EBADREPLY;
		if (!ok)
			tap_diag("%zu events from a rubbish watch, first "
				 "type %d err %s", log.n,
				 log.n ? (int)log.evs[0].type : -1,
				 log.n ? store_errname(log.evs[0].err) : "");
		pthread_mutex_unlock(&log.lock);
		t0 = util_now_ms();
		store_watch_stop(w);
		w = NULL;
		if (util_now_ms() - t0 > 3000) {
			tap_diag("stopping the watch took %lld ms",
				 util_now_ms() - t0);
			ok = false;
		}
	} else {
		/* refusing it at once is as good */
		ok = err.code == STORE_EBADREPLY;
		tap_diag("watch on rubbish: %s: %s", store_errname(err.code),
			 err.msg);
	}
	store_free(s);

	/* a server that never answers: the watch waits, and stops on demand */
	cfg.endpoints = q.url;
	s = util_store_open(&cfg);
	if (!s) {
		ok = false;
		goto out;
	}
	memset(&err, 0, sizeof(err));
	if (store_watch(s, "", 0, true, 1, util_on_event, &log, &w, &err) !=
	    STORE_OK) {
		tap_diag("watch on a silent server: %s", err.msg);
		ok = false;
		goto out;
	}
	util_sleep_ms(1500);
	t0 = util_now_ms();
	store_watch_stop(w);
	w = NULL;
	if (util_now_ms() - t0 > 3000) {
		tap_diag("stopping a silent watch took %lld ms", util_now_ms() - t0);
		ok = false;
	}
out:
	store_free(s);
	util_evlog_release(&log);
	garbage_stop(&q);
	garbage_stop(&g);
	return ok;
}

/* A request to a server that never answers times out in bounded time. */
static bool test_timeout(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 700,
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct garbage g;
	struct store *s;
	long long t0, took;
	int rc;

	if (!garbage_start(&g, "silent", 0))
		return false;
	cfg.endpoints = g.url;
	s = util_store_open(&cfg);
	if (!s) {
		garbage_stop(&g);
		return false;
	}
	t0 = util_now_ms();
	rc = store_get(s, S("k"), 0, &kv, &err);
	took = util_now_ms() - t0;
	store_free(s);
	garbage_stop(&g);
	tap_diag("timed out after %lld ms", took);
	CHECK_RC(rc, STORE_ETIMEOUT);
	CHECK(took >= 600 && took < 4000);
	return true;
}

/* ---- TLS ---- */

static bool tls_refused(const char *what, const char *certs, const char *ep,
			const char *cacert, const char *cert, const char *key,
			bool want_cert_msg)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ep,
		.prefix = "/tls/",
		.connect_timeout_ms = 2000,
		.request_timeout_ms = 3000,
	};
	char ca[PATH_MAX + 32], c[PATH_MAX + 32], k[PATH_MAX + 32];
	struct store_error err = { 0 };
	struct store *s;
	long long t0;
	int rc;

	if (cacert) {
		snprintf(ca, sizeof(ca), "%s/%s", certs, cacert);
		cfg.cacert = ca;
	}
	if (cert) {
		snprintf(c, sizeof(c), "%s/%s", certs, cert);
		snprintf(k, sizeof(k), "%s/%s", certs, key);
		cfg.cert = c;
		cfg.key = k;
	}
	s = util_store_open(&cfg);
	if (!s)
		return false;
	t0 = util_now_ms();
	rc = store_create(s, S("refused"), S("x"), 0, NULL, &err);
	store_free(s);
	tap_diag("%s: %s (%lld ms): %s", what, store_errname(rc),
		 util_now_ms() - t0, err.msg);
	if (rc == STORE_OK || rc == STORE_EINTERNAL || err.code != rc ||
	    err.msg[0] == '\0') {
		tap_diag("%s: not refused clearly", what);
		return false;
	}
	if (want_cert_msg && !strcasestr(err.msg, "certificate") &&
	    !strcasestr(err.msg, "ssl") && !strcasestr(err.msg, "tls")) {
		tap_diag("%s: the message does not name the certificate", what);
		return false;
	}
	if (util_now_ms() - t0 > 8000) {
		tap_diag("%s: took too long", what);
		return false;
	}
	return true;
}

static bool tls_cases(struct util_etcd *e, const char *certs)
{
	char ca[PATH_MAX + 32], c[PATH_MAX + 32], k[PATH_MAX + 32];
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = e->endpoint,
		.prefix = "/tls/",
		.cacert = ca,
		.cert = c,
		.key = k,
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct clist cl;
	struct store *s;
	char local[160];
	const char *port;

	snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
	snprintf(c, sizeof(c), "%s/client.pem", certs);
	snprintf(k, sizeof(k), "%s/client-key.pem", certs);
	CHECK(strncmp(e->endpoint, "https://", 8) == 0);

	s = util_store_open(&cfg);
	CHECK(s);
	CHECK_RC(store_create(s, S("k"), S("secret"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("secret")));
	store_kv_release(&kv);
	store_free(s);
	CHECK(ctl_range(e->ctl, "/tls/k", &cl));
	CHECK(cl.n == 1 && util_mem_is(cl.kvs[0].value, cl.kvs[0].value_len,
				  S("secret")));
	clist_release(&cl);

	/* the server's name is checked: localhost is in its certificate */
	port = strrchr(e->endpoint, ':');
	CHECK(port);
	snprintf(local, sizeof(local), "https://localhost%s", port);
	cfg.endpoints = local;
	s = util_store_open(&cfg);
	CHECK(s);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	store_kv_release(&kv);
	store_free(s);

	CHECK(tls_refused("wrong ca", certs, e->endpoint, "other-ca.pem",
			  "client.pem", "client-key.pem", true));
	CHECK(tls_refused("system ca", certs, e->endpoint, NULL,
			  "client.pem", "client-key.pem", true));
	CHECK(tls_refused("no client certificate", certs, e->endpoint,
			  "ca.pem", NULL, NULL, false));
	CHECK(tls_refused("client certificate of another ca", certs,
			  e->endpoint, "ca.pem", "other-client.pem",
			  "other-client-key.pem", false));
	CHECK(ctl_range(e->ctl, "/tls/refused", &cl));
	CHECK(cl.n == 0);
	clist_release(&cl);
	return true;
}

static bool test_tls(void)
{
	struct util_etcd e;
	char certs[PATH_MAX];
	bool ok;

	snprintf(certs, sizeof(certs), "%s/certs", scratch);
	CHECK(util_sh("'%s/lib/etcd.sh' certs '%s'", tests_dir, certs) == 0);
	if (!util_etcd_start(&e, "etcd-tls", certs, NULL)) {
		util_etcd_stop(&e);
		return false;
	}
	ok = tls_cases(&e, certs);
	util_etcd_stop(&e);
	return ok;
}

/* ---- auth ---- */

#define AUTH_TTL 2

static bool auth_setup(struct util_etcd *e)
{
	static const char *cmds[] = {
		"user add root --new-user-password=rootpw",
		"role add root",
		"user grant-role root root",
		"role add rw",
		"role grant-permission rw --prefix=true readwrite /app/",
		"role add ro",
		"role grant-permission ro --prefix=true read /app/",
		"user add alice --new-user-password=alicepw",
		"user grant-role alice rw",
		"user add bob --new-user-password=bobpw",
		"user grant-role bob ro",
		"auth enable",
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		CHECK(util_sh("%s %s >/dev/null 2>&1", e->ctl, cmds[i]) == 0);
	return true;
}

static struct store *auth_store(struct util_etcd *e, const char *user,
				const char *password, const char *prefix)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = e->endpoint,
		.prefix = prefix,
		.user = user,
		.password = password,
		.connect_timeout_ms = 2000,
		.request_timeout_ms = 3000,
	};

	return util_store_open(&cfg);
}

static bool auth_cases(struct util_etcd *e)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store_list l = { 0 };
	struct store *s;
	struct clist cl;
	char ctl[sizeof(e->ctl) + 64], *tok, *out, *p, *q;
	int64_t rev;

	CHECK(auth_setup(e));
	snprintf(ctl, sizeof(ctl), "%s --user=root:rootpw", e->ctl);

	/* a real user with a read-write role */
	s = auth_store(e, "alice", "alicepw", "/app/");
	CHECK(s);
	CHECK_RC(store_create(s, S("k"), S("by alice"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("by alice")));
	store_kv_release(&kv);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 1);
	store_list_release(&l);
	CHECK(ctl_range(ctl, "/app/k", &cl));
	CHECK(cl.n == 1 && util_mem_is(cl.kvs[0].value, cl.kvs[0].value_len,
				  S("by alice")));
	clist_release(&cl);

	/*
	 * The token expires AUTH_TTL seconds after its last use (checked
	 * by hand below); the store must get a new one and carry on.
	 */
	tok = util_sh_out("curl -s -X POST -d '{\"name\":\"alice\",\"password\":"
		     "\"alicepw\"}' %s/v3/auth/authenticate", e->endpoint);
	CHECK(tok);
	p = strstr(tok, "\"token\":\"");
	CHECK(p);
	p += 9;
	q = strchr(p, '"');
	CHECK(q);
	*q = '\0';
	util_sleep_ms(AUTH_TTL * 1000 + 2000);
	out = util_sh_out("curl -s -X POST -H 'Authorization: %s' "
		     "-d '{\"key\":\"L2FwcC9r\"}' %s/v3/kv/range", p,
		     e->endpoint);
	free(tok);
	CHECK(out);
	if (!strstr(out, "invalid auth token"))
		tap_diag("an idle token still works: %s", out);
	CHECK(strstr(out, "invalid auth token"));
	free(out);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("by alice")));
	store_kv_release(&kv);
	util_sleep_ms(AUTH_TTL * 1000 + 2000);
	CHECK_RC(store_create(s, S("k2"), S("after expiry"), 0, NULL, &err),
		 STORE_OK);
	CHECK(ctl_range(ctl, "/app/k2", &cl));
	CHECK(cl.n == 1);
	clist_release(&cl);

	/* authenticated, but not allowed outside her prefix */
	store_free(s);
	s = auth_store(e, "alice", "alicepw", "/other/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s, S("k"), S("x"), 0, NULL, &err),
		 STORE_EPERMISSION);
	store_free(s);

	/* a read-only user reads, and cannot write */
	s = auth_store(e, "bob", "bobpw", "/app/");
	CHECK(s);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	store_kv_release(&kv);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s, S("bob"), S("x"), 0, NULL, &err),
		 STORE_EPERMISSION);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("k"), NULL, NULL, NULL, &err),
		 STORE_EPERMISSION);
	store_free(s);
	CHECK(ctl_range(ctl, "/app/ --prefix", &cl));
	CHECK(cl.n == 2);
	clist_release(&cl);

	/* a wrong password */
	s = auth_store(e, "alice", "wrong", "/app/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_revision(s, &rev, &err), STORE_EUNAUTHENTICATED);
	store_free(s);

	/* an unknown user */
	s = auth_store(e, "mallory", "x", "/app/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	store_free(s);

	/* no credentials on a cluster that wants them */
	s = auth_store(e, NULL, NULL, "/app/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	store_free(s);
	return true;
}

/* A watch with a token gets its events. */
static bool auth_watch(struct util_etcd *e)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = auth_store(e, "alice", "alicepw", "/app/");
	char ctl[sizeof(e->ctl) + 64];
	int64_t rev = 0;
	bool ok;

	CHECK(s);
	snprintf(ctl, sizeof(ctl), "%s --user=alice:alicepw", e->ctl);
	util_evlog_init(&log);
	CHECK_RC(store_revision(s, &rev, &err), STORE_OK);
	CHECK_RC(store_watch(s, "", 0, true, rev + 1, util_on_event, &log, &w,
			     &err), STORE_OK);
	CHECK(util_sh("%s put /app/w watched >/dev/null", ctl) == 0);
	ok = util_evlog_wait(&log, 1, 10000) >= 1;
	pthread_mutex_lock(&log.lock);
	ok = ok && util_ev_is(&log.evs[0], STORE_EV_PUT, S("w"), S("watched"));
	pthread_mutex_unlock(&log.lock);
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

static bool test_auth(void)
{
	struct util_etcd e;
	char args[64];
	bool ok;

	snprintf(args, sizeof(args), "--auth-token=simple --auth-token-ttl=%d",
		 AUTH_TTL);
	if (!util_etcd_start(&e, "etcd-auth", NULL, args)) {
		util_etcd_stop(&e);
		return false;
	}
	ok = auth_cases(&e) && auth_watch(&e);
	util_etcd_stop(&e);
	return ok;
}

/* ---- threads ---- */

struct racer {
	struct store *s;
	int id;
	int done;
	int failed;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct store_error err;

	for (int i = 0; i < 25; i++) {
		memset(&err, 0, sizeof(err));
		if (store_guaranteed_update(r->s, S("counter"), true, NULL,
					    NULL, util_incr_fn, NULL, NULL,
					    &err) == STORE_OK)
			r->done++;
		else {
			fprintf(stderr, "racer %d: %s: %s\n", r->id,
				store_errname(err.code), err.msg);
			r->failed++;
		}
	}
	return NULL;
}

/* Concurrent read-modify-write through one store loses no update. */
static bool test_concurrent_updates(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
		.prefix = "/t/race/",
		.max_update_retries = 1000,
	};
	struct racer r[4];
	pthread_t th[4];
	struct store *s = util_store_open(&cfg);
	int total = 0;
	char want[16];

	CHECK(s);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){ s, i, 0, 0 };
		CHECK(pthread_create(&th[i], NULL, race, &r[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(r[i].failed == 0);
		total += r[i].done;
	}
	CHECK(total == 100);
	snprintf(want, sizeof(want), "%d", total);
	CHECK(ctl_has("/t/race/counter", want));
	store_free(s);
	return true;
}

int main(void)
{
	endpoint = getenv("ETCDFS_TEST_ENDPOINTS");
	tests_dir = getenv("TESTS_DIR");
	scratch = getenv("ETCDFS_TEST_DIR");
	util_tests_dir = tests_dir;
	util_scratch = scratch;
	if (!endpoint || !*endpoint || !tests_dir || !scratch) {
		printf("Bail out! run under tests/lib/with-etcd with TESTS_DIR "
		       "set (ETCDFS_TEST_ENDPOINTS, ETCDFS_TEST_DIR)\n");
		return 1;
	}
	setenv("ETCDCTL_API", "3", 1);
	/* etcdctl must not pick up an endpoint or credentials from outside */
	unsetenv("ETCDCTL_ENDPOINTS");
	unsetenv("ETCDCTL_USER");
	unsetenv("ETCDCTL_CACERT");
	unsetenv("ETCDCTL_CERT");
	unsetenv("ETCDCTL_KEY");
	snprintf(ctl_main, sizeof(ctl_main),
		 "etcdctl --endpoints=%s --dial-timeout=5s "
		 "--command-timeout=30s", endpoint);
	TAP_RUN(test_config_einval);
	TAP_RUN(test_create_get);
	TAP_RUN(test_create_exists);
	TAP_RUN(test_get_notfound);
	TAP_RUN(test_binary_keys);
	TAP_RUN(test_prefix_isolation);
	TAP_RUN(test_list_keys_only);
	TAP_RUN(test_list_paged_one_revision);
	TAP_RUN(test_delete);
	TAP_RUN(test_delete_stale_precondition);
	TAP_RUN(test_update_basic);
	TAP_RUN(test_update_conflict_retried);
	TAP_RUN(test_update_conflict_exhausted);
	TAP_RUN(test_update_noop);
	TAP_RUN(test_update_preconditions);
	TAP_RUN(test_concurrent_updates);
	TAP_RUN(test_move);
	TAP_RUN(test_lease);
	TAP_RUN(test_revision);
	TAP_RUN(test_members);
	TAP_RUN(test_watch_order);
	TAP_RUN(test_watch_from_past);
	TAP_RUN(test_watch_one_key_from_now);
	TAP_RUN(test_watch_prefix_isolation);
	TAP_RUN(test_watch_compacted);
	TAP_RUN(test_failover);
	TAP_RUN(test_unreachable);
	TAP_RUN(test_timeout);
	TAP_RUN(test_too_large);
	for (size_t i = 0; i < sizeof(garbage_cases) / sizeof(garbage_cases[0]);
	     i++)
		tap_ok(test_garbage(&garbage_cases[i]), "test_garbage_%s",
		       garbage_cases[i].mode);
	TAP_RUN(test_garbage_watch);
	TAP_RUN(test_tls);
	TAP_RUN(test_auth);
	return tap_done(0);
}
