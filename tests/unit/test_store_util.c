/*
 * test_store_util.c - unit tests of the backend-neutral helpers of
 * helper/store.c: range ends, error names, store_fail's key escaping,
 * configuration checks of store_new, and the kv and list helpers
 *
 * Nothing here talks to etcd: store_new checks its configuration without
 * contacting the cluster, so even the accepted configurations point at
 * ports nobody listens on.  What needs a server is in
 * tests/integration/test_store_*.c.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_i.h"
#include "tap.h"

static bool range_end_is(const char *prefix, size_t len, const char *want,
			 size_t want_len)
{
	size_t got_len = 12345;
	char *got = store_range_end(prefix, len, &got_len);
	bool ok;

	if (!got)
		return false;
	ok = got_len == want_len && memcmp(got, want, want_len) == 0;
	if (!ok)
		tap_diag("range end of %zu bytes: got %zu bytes", len,
			 got_len);
	free(got);
	return ok;
}

static bool test_range_end(void)
{
	CHECK(range_end_is("/a/", 3, "/a0", 3));
	CHECK(range_end_is("a\xff", 2, "b", 1));
	CHECK(range_end_is("\xff\xff", 2, "\0", 1));
	CHECK(range_end_is("", 0, "\0", 1));
	CHECK(range_end_is("a", 1, "b", 1));
	CHECK(range_end_is("a\xfe", 2, "a\xff", 2));
	CHECK(range_end_is("a\xff\xff", 3, "b", 1));
	/* A NUL inside the prefix is an ordinary byte. */
	CHECK(range_end_is("a\0b", 3, "a\0c", 3));
	CHECK(range_end_is("\0", 1, "\x01", 1));
	return true;
}

static const int all_codes[] = {
	STORE_OK, STORE_ENOTFOUND, STORE_EEXISTS, STORE_ECONFLICT,
	STORE_EPRECONDITION, STORE_ECOMPACTED, STORE_EUNREACHABLE,
	STORE_ETIMEOUT, STORE_EUNAUTHENTICATED, STORE_EPERMISSION,
	STORE_ETOOLARGE, STORE_EBADREPLY, STORE_EINTERNAL, STORE_EINVAL,
	STORE_ENOTSUP, STORE_EUNKNOWN, STORE_ENOSPC,
};

#define N_CODES (sizeof(all_codes) / sizeof(all_codes[0]))

/* Lower case start, no full stop, one line: as every message. */
static bool message_style_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || isupper((unsigned char)s[0]) || s[n - 1] == '.')
		return false;
	return !strchr(s, '\n');
}

static bool test_strerror_every_code(void)
{
	const char *names[N_CODES], *descs[N_CODES];
	size_t i, j;

	CHECK(N_CODES == STORE_ERR_COUNT);
	for (i = 0; i < N_CODES; i++) {
		names[i] = store_errname(all_codes[i]);
		descs[i] = store_strerror(all_codes[i]);
		CHECK(names[i] && descs[i]);
		CHECK(message_style_ok(names[i]));
		CHECK(message_style_ok(descs[i]));
		CHECK(strcmp(names[i], "unknown") != 0);
		CHECK(strcmp(descs[i], "unknown error") != 0);
	}
	/* Two codes never read alike. */
	for (i = 0; i < N_CODES; i++) {
		for (j = i + 1; j < N_CODES; j++) {
			CHECK(strcmp(names[i], names[j]) != 0);
			CHECK(strcmp(descs[i], descs[j]) != 0);
		}
	}
	CHECK(strcmp(store_strerror(STORE_ENOTFOUND), "key not found") == 0);
	CHECK(strcmp(store_errname(STORE_ENOTFOUND), "not found") == 0);
	CHECK(strcmp(store_errname(STORE_EEXISTS), "exists") == 0);
	return true;
}

static bool test_strerror_unknown(void)
{
	CHECK(strcmp(store_strerror(-STORE_ERR_COUNT), "unknown error") == 0);
	CHECK(strcmp(store_strerror(1), "unknown error") == 0);
	CHECK(strcmp(store_strerror(-1000), "unknown error") == 0);
	CHECK(strcmp(store_errname(-STORE_ERR_COUNT), "unknown") == 0);
	CHECK(strcmp(store_errname(42), "unknown") == 0);
	return true;
}

static bool test_fail_fills(void)
{
	struct store_error err;
	int rc;

	memset(&err, 'x', sizeof(err));
	rc = store_fail(&err, STORE_EPRECONDITION, "/a/b", 4, 17,
			"precondition failed at %d", 17);
	CHECK(rc == STORE_EPRECONDITION);
	CHECK(err.code == STORE_EPRECONDITION);
	CHECK(err.revision == 17);
	CHECK(strcmp(err.key, "/a/b") == 0);
	CHECK(strcmp(err.msg, "precondition failed at 17") == 0);

	/* No key: an empty one, not the old contents. */
	rc = store_fail(&err, STORE_EUNREACHABLE, NULL, 0, 0, "down");
	CHECK(rc == STORE_EUNREACHABLE);
	CHECK(err.key[0] == '\0');
	CHECK(err.revision == 0);

	/* No struct: just the code. */
	CHECK(store_fail(NULL, STORE_EINVAL, "k", 1, 0, "x") == STORE_EINVAL);
	return true;
}

static bool test_fail_escapes_key(void)
{
	struct store_error err;
	static const char key[] = "a\x01" "b\\c\xff\0d\n";

	store_fail(&err, STORE_ENOTFOUND, key, sizeof(key) - 1, 0, "x");
	CHECK(strcmp(err.key, "a\\x01b\\\\c\\xff\\x00d\\x0a") == 0);
	return true;
}

static bool test_fail_one_line_message(void)
{
	struct store_error err;

	store_fail(&err, STORE_EBADREPLY, NULL, 0, 0, "a\nb\rc\td");
	CHECK(strcmp(err.msg, "a b c d") == 0);
	return true;
}

static bool test_fail_cuts_long_key(void)
{
	struct store_error err;
	char key[1000];
	size_t n;

	/* Exactly as long as fits: kept whole. */
	memset(key, 'k', sizeof(key));
	store_fail(&err, STORE_ENOTFOUND, key, sizeof(err.key) - 1, 0, "x");
	CHECK(strlen(err.key) == sizeof(err.key) - 1);
	CHECK(strchr(err.key, '.') == NULL);

	/* One more byte: cut, and says so. */
	store_fail(&err, STORE_ENOTFOUND, key, sizeof(err.key), 0, "x");
	n = strlen(err.key);
	CHECK(n < sizeof(err.key));
	CHECK(n >= 3 && strcmp(err.key + n - 3, "...") == 0);

	/* Escapes are never cut in the middle. */
	memset(key, 0x01, sizeof(key));
	store_fail(&err, STORE_ENOTFOUND, key, sizeof(key), 0, "x");
	n = strlen(err.key);
	CHECK(n < sizeof(err.key));
	CHECK(strcmp(err.key + n - 3, "...") == 0);
	CHECK((n - 3) % 4 == 0);
	CHECK(strncmp(err.key + n - 7, "\\x01", 4) == 0);
	return true;
}

static bool test_fail_cuts_long_message(void)
{
	struct store_error err;
	char big[2000];

	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	store_fail(&err, STORE_EBADREPLY, NULL, 0, 0, "%s", big);
	CHECK(strlen(err.msg) == sizeof(err.msg) - 1);
	return true;
}

/* store_new must fail with @code and a message containing @needle. */
static bool new_fails(const struct store_config *cfg, int code,
		      const char *needle)
{
	struct store_error err;
	struct store *s;

	memset(&err, 0, sizeof(err));
	s = store_new(cfg, &err);
	if (s) {
		tap_diag("store_new accepted a bad configuration");
		store_free(s);
		return false;
	}
	if (err.code != code || !strstr(err.msg, needle)) {
		tap_diag("got %s '%s', want %s with '%s'",
			 store_errname(err.code), err.msg,
			 store_errname(code), needle);
		return false;
	}
	return message_style_ok(err.msg);
}

static bool test_new_bad_endpoints(void)
{
	struct store_config cfg = { .api = STORE_API_V3 };

	cfg.endpoints = "";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint ''"));
	cfg.endpoints = "127.0.0.1";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint '127.0.0.1'"));
	/* a path, even one a proxy could serve: requests add their own */
	cfg.endpoints = "http://h:1/base";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint 'http://h:1/base'"));
	cfg.endpoints = "ftp://127.0.0.1:2379";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint 'ftp://"));
	cfg.endpoints = "http://";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint 'http://'"));
	cfg.endpoints = "http://127.0.0.1:1,,http://127.0.0.1:2";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint ''"));
	cfg.endpoints = "http://127.0.0.1:1, ";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint ''"));
	cfg.endpoints = "http://a b:1";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint 'http://a b:1'"));
	cfg.endpoints = "http://h:1/?x";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	cfg.endpoints = "http://127.0.0.1:notaport";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	cfg.endpoints = "http://127.0.0.1:";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	cfg.endpoints = "http://127.0.0.1:0";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	cfg.endpoints = "http://127.0.0.1:65536";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	cfg.endpoints = "http://:2379";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	cfg.endpoints = "http://[::1";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	cfg.endpoints = "http://user:pw@127.0.0.1:2379";
	CHECK(new_fails(&cfg, STORE_EINVAL, "bad endpoint"));
	return true;
}

/* Forms of endpoints that are fine, and what @cfg's become. */
static bool new_cfg_endpoint_is(const struct store_config *cfg,
				const char *want)
{
	struct store_error err;
	struct store *s;
	bool ok;

	s = store_new(cfg, &err);
	if (!s) {
		tap_diag("'%s' refused: %s", cfg->endpoints, err.msg);
		return false;
	}
	ok = strcmp(store_endpoint(s), want) == 0;
	if (!ok)
		tap_diag("'%s' became '%s'", cfg->endpoints,
			 store_endpoint(s));
	store_free(s);
	return ok;
}

static bool new_endpoint_is(const char *list, const char *want)
{
	struct store_config cfg = { .api = STORE_API_V3, .endpoints = list };

	return new_cfg_endpoint_is(&cfg, want);
}

/* As new_endpoint_is, with insecure_skip_tls_verify (no file to check). */
static bool new_tls_endpoint_is(const char *list, const char *want)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = list,
		.insecure_skip_tls_verify = true,
	};

	return new_cfg_endpoint_is(&cfg, want);
}

static bool test_new_good_endpoints(void)
{
	CHECK(new_endpoint_is("http://127.0.0.1:65535",
			      "http://127.0.0.1:65535"));
	CHECK(new_endpoint_is("https://localhost", "https://localhost"));
	CHECK(new_endpoint_is("http://[::1]:2379/", "http://[::1]:2379"));
	CHECK(new_endpoint_is("http://h:1//", "http://h:1"));
	CHECK(new_endpoint_is("  http://a:1\t,http://b:2", "http://a:1"));
	/* etcdctl's HOST:PORT: http, or https with any TLS setting */
	CHECK(new_endpoint_is("127.0.0.1:2379", "http://127.0.0.1:2379"));
	CHECK(new_tls_endpoint_is("127.0.0.1:2379", "https://127.0.0.1:2379"));
	return true;
}

static bool test_new_bad_numbers(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = "http://127.0.0.1:1",
	};

	cfg.connect_timeout_ms = -1;
	CHECK(new_fails(&cfg, STORE_EINVAL, "timeout"));
	cfg.connect_timeout_ms = 0;
	cfg.request_timeout_ms = -5;
	CHECK(new_fails(&cfg, STORE_EINVAL, "timeout"));
	cfg.request_timeout_ms = 0;
	cfg.max_update_retries = -1;
	CHECK(new_fails(&cfg, STORE_EINVAL, "retries"));
	return true;
}

static bool test_new_user_without_password(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = "http://127.0.0.1:1",
		.user = "alice",
	};

	CHECK(new_fails(&cfg, STORE_EINVAL, "user 'alice'"));
	return true;
}

/* The etcd2 backend is built, and refuses a prefix no v2 key can have. */
static bool test_new_v2(void)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.endpoints = "http://127.0.0.1:1",
	};
	struct store_error err = { 0 };
	struct store *s;

	s = store_new(&cfg, &err);
	CHECK(s);
	CHECK(strcmp(store_backend_name(s), "etcd2") == 0);
	store_free(s);
	cfg.prefix = "app/";
	CHECK(new_fails(&cfg, STORE_EINVAL, "starts with '/'"));
	return true;
}

static bool test_new_bad_api(void)
{
	struct store_config cfg = { .api = 4 };

	CHECK(new_fails(&cfg, STORE_EINVAL, "api"));
	return true;
}

/* A readable file, so that only what a case means to break is broken. */
static char readable[4096];

static bool make_readable(void)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(readable, sizeof(readable), "%s/etcdfs-test-store-util.XXXXXX",
		 dir && dir[0] ? dir : "/tmp");
	fd = mkstemp(readable);

	if (fd < 0)
		return false;
	if (write(fd, "x\n", 2) != 2) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

static bool test_new_cert_without_key(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = "https://127.0.0.1:1",
		.cert = readable,
	};

	CHECK(new_fails(&cfg, STORE_EINVAL, "without its key"));
	cfg.cert = NULL;
	cfg.key = readable;
	CHECK(new_fails(&cfg, STORE_EINVAL, "without its certificate"));
	return true;
}

static bool test_new_unreadable_files(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = "https://127.0.0.1:1",
	};
	char missing[] = "/nonexistent-etcdfs-test/ca.pem";

	cfg.cacert = missing;
	CHECK(new_fails(&cfg, STORE_EINVAL,
			"'/nonexistent-etcdfs-test/ca.pem'"));
	CHECK(new_fails(&cfg, STORE_EINVAL, "no such file"));
	cfg.cacert = NULL;
	cfg.cert = readable;
	cfg.key = missing;
	CHECK(new_fails(&cfg, STORE_EINVAL, "client key '/nonexistent"));
	/* A directory opens but cannot be read. */
	cfg.key = readable;
	cfg.cert = "/";
	CHECK(new_fails(&cfg, STORE_EINVAL, "client certificate '/'"));
	return true;
}

/*
 * A good configuration: spaces and trailing slashes go, the first endpoint
 * is the one in use, and the defaults apply.  The caller's strings may be
 * gone once store_new returns.
 */
static bool test_new_accepts_and_copies(void)
{
	struct store_config cfg = { .api = STORE_API_V3 };
	struct store_error err;
	struct store *s;
	char *eps = strdup(" http://127.0.0.1:1/ ,\thttps://localhost:2 ");
	char *prefix = strdup("/registry/");

	CHECK(eps && prefix);
	cfg.endpoints = eps;
	cfg.prefix = prefix;
	memset(&err, 0, sizeof(err));
	s = store_new(&cfg, &err);
	if (!s)
		tap_diag("store_new: %s", err.msg);
	CHECK(s);
	memset(eps, 'x', strlen(eps));
	memset(prefix, 'x', strlen(prefix));
	free(eps);
	free(prefix);
	CHECK(strcmp(store_endpoint(s), "http://127.0.0.1:1") == 0);
	CHECK(strcmp(store_backend_name(s), "etcd3") == 0);
	CHECK(store_max_value_size(s) == 1572864);
	CHECK(s->prefix_len == 10 && memcmp(s->prefix, "/registry/", 10) == 0);
	CHECK(s->cfg.page_size == 1000);
	CHECK(s->cfg.max_reply_size == (size_t)256 << 20);
	CHECK(s->cfg.max_update_retries == 16);
	store_free(s);
	return true;
}

static bool test_new_default_endpoint(void)
{
	struct store_config cfg = { .api = STORE_API_V3 };
	struct store_error err;
	struct store *s;

	s = store_new(&cfg, &err);
	CHECK(s);
	CHECK(strcmp(store_endpoint(s), "http://127.0.0.1:2379") == 0);
	CHECK(s->prefix_len == 0);
	store_free(s);
	return true;
}

static bool test_kv_copy_release(void)
{
	struct store_kv a = { 0 }, b;
	static const char key[] = "k\0ey";
	static const char value[] = "v\0al\xff";

	a.key = malloc(sizeof(key));
	a.value = malloc(sizeof(value));
	CHECK(a.key && a.value);
	memcpy(a.key, key, sizeof(key));
	memcpy(a.value, value, sizeof(value));
	a.key_len = sizeof(key) - 1;
	a.value_len = sizeof(value) - 1;
	a.create_revision = 2;
	a.mod_revision = 3;
	a.version = 4;
	a.lease = 5;

	memset(&b, 'x', sizeof(b));
	CHECK(store_kv_copy(&b, &a) == 0);
	CHECK(b.key != a.key && b.value != a.value);
	CHECK(b.key_len == a.key_len && memcmp(b.key, key, b.key_len) == 0);
	CHECK(b.value_len == a.value_len &&
	      memcmp(b.value, value, b.value_len) == 0);
	CHECK(b.key[b.key_len] == '\0' && b.value[b.value_len] == '\0');
	CHECK(b.create_revision == 2 && b.mod_revision == 3 &&
	      b.version == 4 && b.lease == 5);

	store_kv_release(&a);
	CHECK(!a.key && !a.value && a.key_len == 0 && a.mod_revision == 0);
	/* Released twice, or never filled: harmless. */
	store_kv_release(&a);
	store_kv_release(NULL);
	/* The copy lives on its own. */
	CHECK(memcmp(b.key, key, b.key_len) == 0);
	store_kv_release(&b);
	return true;
}

static bool test_kv_copy_empty(void)
{
	struct store_kv a = { 0 }, b;

	a.mod_revision = 9;
	CHECK(store_kv_copy(&b, &a) == 0);
	CHECK(!b.key && !b.value && b.mod_revision == 9);
	store_kv_release(&b);
	return true;
}

static bool test_list_push(void)
{
	struct store_list l = { 0 };
	struct store_kv kv;
	char buf[32];
	size_t i;

	for (i = 0; i < 100; i++) {
		memset(&kv, 0, sizeof(kv));
		snprintf(buf, sizeof(buf), "k%03zu", i);
		kv.key = strdup(buf);
		CHECK(kv.key);
		kv.key_len = strlen(buf);
		kv.mod_revision = (int64_t)i + 1;
		CHECK(store_list_push_own(&l, &kv) == 0);
		/* Stolen: the source no longer owns the buffer. */
		CHECK(!kv.key && kv.key_len == 0 && kv.mod_revision == 0);
	}
	CHECK(l.n == 100 && l.cap >= 100);
	for (i = 0; i < l.n; i++) {
		snprintf(buf, sizeof(buf), "k%03zu", i);
		CHECK(strcmp(l.kvs[i].key, buf) == 0);
		CHECK(l.kvs[i].mod_revision == (int64_t)i + 1);
	}
	l.revision = 7;
	store_list_release(&l);
	CHECK(!l.kvs && l.n == 0 && l.cap == 0 && l.revision == 0);
	store_list_release(&l);
	return true;
}

int main(void)
{
	int rc;

	if (!make_readable()) {
		printf("Bail out! cannot make a temporary file\n");
		return 1;
	}
	TAP_RUN(test_range_end);
	TAP_RUN(test_strerror_every_code);
	TAP_RUN(test_strerror_unknown);
	TAP_RUN(test_fail_fills);
	TAP_RUN(test_fail_escapes_key);
	TAP_RUN(test_fail_one_line_message);
	TAP_RUN(test_fail_cuts_long_key);
	TAP_RUN(test_fail_cuts_long_message);
	TAP_RUN(test_new_bad_endpoints);
	TAP_RUN(test_new_good_endpoints);
	TAP_RUN(test_new_bad_numbers);
	TAP_RUN(test_new_user_without_password);
	TAP_RUN(test_new_v2);
	TAP_RUN(test_new_bad_api);
	TAP_RUN(test_new_cert_without_key);
	TAP_RUN(test_new_unreadable_files);
	TAP_RUN(test_new_accepts_and_copies);
	TAP_RUN(test_new_default_endpoint);
	TAP_RUN(test_kv_copy_release);
	TAP_RUN(test_kv_copy_empty);
	TAP_RUN(test_list_push);
	rc = tap_done(0);
	unlink(readable);
	return rc;
}
