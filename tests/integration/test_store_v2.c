/*
 * test_store_v2.c - the store (helper/store.h) with api = STORE_API_V2,
 * against a real etcd 3.4 serving the v2 keys API
 *
 * Runs under tests/lib/with-etcd with WITH_ETCD_ARGS=--enable-v2=true,
 * which gives it a private etcd in ETCDFS_TEST_ENDPOINTS and a scratch dir
 * in ETCDFS_TEST_DIR.  Every case works under a key prefix of its own and
 * cross-checks what etcd holds with a witness that is not the code under
 * test: curl on /v2/keys (with its own URL encoding, so that any key can be
 * checked, and the X-Etcd-Index header, which is etcd's index) and, where
 * the keys are plain, etcdctl in its v2 mode.  The cases that need another
 * etcd (v2 off, v2 auth) start it through tests/lib/etcd.sh (found through
 * TESTS_DIR) and stop it before returning, pass or fail.
 *
 * What it cannot test: clusters of several members, and a peer that
 * vanishes in the middle of a request.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"

static const char *endpoint;	/* the etcd with-etcd started */
static const char *tests_dir;	/* the tests/ source dir */
static const char *scratch;	/* a dir of our own */
static const char *witness_ep;	/* the etcd the witness talks to */

/* ---- small utilities ---- */

/* ---- the witness: curl on /v2/keys, and etcdctl in its v2 mode ---- */

struct wreply {
	long status;
	int64_t index;		/* X-Etcd-Index, -1 if none */
	json_t *json;		/* the body, NULL if not JSON */
};

static void wreply_release(struct wreply *r)
{
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/* Every byte but [A-Za-z0-9/] as %XX: the test's own URL encoding. */
static char *w_encode(const char *key, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = util_xmalloc(3 * len + 1);
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '/') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * @method on /v2/keys@key?@query with curl; @value (if not NULL) sent as
 * the form field "value", from a file so that any byte goes.  Fills @r
 * with the status, X-Etcd-Index and the parsed body.
 */
static bool w_req(const char *method, const char *key, size_t key_len,
		  const char *query, const char *value, size_t value_len,
		  struct wreply *r)
{
	char *enc = w_encode(key, key_len), *out, *p, *hdr_end, *data = NULL;
	size_t len = 0;
	FILE *f;

	memset(r, 0, sizeof(*r));
	r->index = -1;
	if (value) {
		data = util_fmt("%s/witness-value", scratch);
		f = fopen(data, "wb");
		if (!f || fwrite(value, 1, value_len, f) != value_len) {
			if (f)
				fclose(f);
			free(enc);
			free(data);
			return false;
		}
		fclose(f);
	}
	out = util_sh_out_len(&len, "curl -s -i --max-time 30 -X %s '%s/v2/keys%s%s%s'"
		     "%s%s", method, witness_ep, enc,
		     query ? "?" : "", query ? query : "",
		     data ? " --data-urlencode value@" : "", data ? data : "");
	free(enc);
	free(data);
	if (!out)
		return false;
	p = out;
	for (;;) {
		hdr_end = strstr(p, "\r\n\r\n");
		if (!hdr_end || sscanf(p, "HTTP/%*s %ld", &r->status) != 1) {
			tap_diag("witness: no HTTP reply: '%s'", util_show(out, len));
			free(out);
			return false;
		}
		if (r->status != 100)
			break;
		p = hdr_end + 4;
	}
	*hdr_end = '\0';
	for (char *h = p; h && *h; h = strstr(h, "\r\n") ? strstr(h, "\r\n") +
	     2 : NULL) {
		if (!strncasecmp(h, "X-Etcd-Index:", 13))
			r->index = strtoll(h + 13, NULL, 10);
	}
	p = hdr_end + 4;
	r->json = json_loadb(p, len - (size_t)(p - out), JSON_ALLOW_NUL, NULL);
	free(out);
	return true;
}

struct wkv {
	char *value;
	size_t value_len;
	int64_t mod;
	int64_t create;
	bool dir;
};

static void wkv_release(struct wkv *w)
{
	free(w->value);
	memset(w, 0, sizeof(*w));
}

/* What etcd holds at @key: 1 (filled), 0 absent, -1 on failure. */
static int w_get(const char *key, size_t key_len, struct wkv *out)
{
	struct wreply r;
	json_t *node, *v;

	memset(out, 0, sizeof(*out));
	if (!w_req("GET", key, key_len, "quorum=true", NULL, 0, &r))
		return -1;
	/* not found, or below a key (104, "not a directory") */
	if (r.status == 404 ||
	    json_integer_value(json_object_get(r.json, "errorCode")) == 104) {
		wreply_release(&r);
		return 0;
	}
	node = json_object_get(r.json, "node");
	if (r.status != 200 || !node) {
		tap_diag("witness: GET '%s': status %ld", util_show(key, key_len),
			 r.status);
		wreply_release(&r);
		return -1;
	}
	v = json_object_get(node, "value");
	out->value = util_xmemdup(json_is_string(v) ? json_string_value(v) : "",
			     json_is_string(v) ? json_string_length(v) : 0);
	out->value_len = json_is_string(v) ? json_string_length(v) : 0;
	out->mod = json_integer_value(json_object_get(node, "modifiedIndex"));
	out->create = json_integer_value(json_object_get(node, "createdIndex"));
	out->dir = json_is_true(json_object_get(node, "dir"));
	wreply_release(&r);
	return 1;
}

/* True if etcd holds @key (a key, not a directory) with @value. */
static bool w_has(const char *key, size_t key_len, const char *value,
		  size_t value_len)
{
	struct wkv w;
	int r = w_get(key, key_len, &w);
	bool ok;

	if (r != 1) {
		tap_diag("etcd does not hold '%s'", util_show(key, key_len));
		return false;
	}
	ok = !w.dir && util_mem_is(w.value, w.value_len, value, value_len);
	if (!ok)
		tap_diag("etcd holds '%s' = '%s', expected '%s'",
			 util_show(key, key_len), util_show(w.value, w.value_len),
			 util_show(value, value_len));
	wkv_release(&w);
	return ok;
}

static bool w_lacks(const char *key, size_t key_len)
{
	struct wkv w;
	int r = w_get(key, key_len, &w);

	wkv_release(&w);
	if (r != 0)
		tap_diag("etcd still holds '%s'", util_show(key, key_len));
	return r == 0;
}

/* The modifiedIndex of @key (text), 0 if absent or on failure. */
static int64_t w_mod(const char *key)
{
	struct wkv w;
	int64_t mod = 0;

	if (w_get(key, strlen(key), &w) == 1)
		mod = w.mod;
	wkv_release(&w);
	return mod;
}

/* Puts @value at the text key @key; its new modifiedIndex, 0 on failure. */
static int64_t w_put(const char *key, const char *value)
{
	struct wreply r;
	int64_t mod = 0;

	if (!w_req("PUT", key, strlen(key), NULL, value, strlen(value), &r))
		return 0;
	if (r.status == 200 || r.status == 201)
		mod = json_integer_value(json_object_get(
			json_object_get(r.json, "node"), "modifiedIndex"));
	else
		tap_diag("witness: PUT '%s': status %ld", key, r.status);
	wreply_release(&r);
	return mod;
}

/* Sends @method @key?@query with no value; true if etcd said 2xx. */
static bool w_do(const char *method, const char *key, const char *query)
{
	struct wreply r;
	bool ok;

	if (!w_req(method, key, strlen(key), query, NULL, 0, &r))
		return false;
	ok = r.status >= 200 && r.status < 300;
	if (!ok)
		tap_diag("witness: %s '%s?%s': status %ld", method, key,
			 query ? query : "", r.status);
	wreply_release(&r);
	return ok;
}

/* etcd's index now, from the X-Etcd-Index of a quorum GET; -1 on failure. */
static int64_t w_index(void)
{
	struct wreply r;
	int64_t index = -1;

	if (w_req("GET", "/", 1, "quorum=true", NULL, 0, &r))
		index = r.index;
	wreply_release(&r);
	return index;
}

/* etcdctl in its v2 mode, against the main etcd, up to the subcommand */
static char ctl2[512];

/* ---- stores ---- */

static struct store *store_open(const char *prefix)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.endpoints = endpoint,
		.prefix = prefix,
	};

	return util_store_open(&cfg);
}

/* ---- extra etcd servers ---- */

/* ---- watch event log ---- */

/* ---- configuration ---- */

static bool test_config(void)
{
	struct store_config c = {
		.api = STORE_API_V2,
		.endpoints = endpoint,
	};
	struct store *s;

	s = util_store_open(&c);
	CHECK(s);
	CHECK(strcmp(store_backend_name(s), "etcd2") == 0);
	store_free(s);
	c.prefix = "/";
	s = util_store_open(&c);
	CHECK(s);
	store_free(s);
	c.prefix = "/app/part-";
	s = util_store_open(&c);
	CHECK(s);
	store_free(s);
	/* v2 keys are paths: a prefix that cannot start one is refused */
	c.prefix = "app/";
	CHECK(util_einval(&c, "a prefix without a leading '/'"));
	c.prefix = "/a//b/";
	CHECK(util_einval(&c, "a prefix with an empty segment"));
	c.prefix = "/a/../b/";
	CHECK(util_einval(&c, "a prefix with a '..' segment"));
	return true;
}

/* ---- single operations ---- */

static bool test_create_get(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store *s = store_open("/t/create/");
	struct wkv w;
	int64_t rev = 0;
	char *out;

	CHECK(s);
	CHECK_RC(store_create(s, S("a"), S("hello"), 0, &rev, &err), STORE_OK);
	CHECK(rev > 0);
	CHECK_RC(store_get(s, S("a"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	CHECK(kv.mod_revision == rev && kv.create_revision == rev);
	CHECK(kv.version == 0 && kv.lease == 0);
	store_kv_release(&kv);

	/* etcd holds what the store said, at the index it said */
	CHECK(w_get(S("/t/create/a"), &w) == 1);
	CHECK(util_mem_is(w.value, w.value_len, S("hello")));
	CHECK(w.mod == rev && w.create == rev);
	wkv_release(&w);
	out = util_sh_out_len(NULL, "%s get /t/create/a", ctl2);
	CHECK(out && strcmp(out, "hello\n") == 0);
	free(out);

	/* both read flavours */
	CHECK_RC(store_get(s, S("a"), STORE_READ_SERIAL, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	store_kv_release(&kv);
	CHECK_RC(store_get(s, S("a"), STORE_READ_QUORUM, &kv, &err), STORE_OK);
	CHECK(kv.mod_revision == rev);
	store_kv_release(&kv);

	/* a second create fails and changes nothing */
	CHECK_RC(store_create(s, S("a"), S("other"), 0, NULL, &err),
		 STORE_EEXISTS);
	CHECK(err.revision == rev);
	CHECK(w_has(S("/t/create/a"), S("hello")));

	/* absent, and below a key: not found */
	CHECK_RC(store_get(s, S("nothere"), 0, &kv, &err), STORE_ENOTFOUND);
	CHECK(kv.key == NULL);
	CHECK_RC(store_get(s, S("a/below"), 0, &kv, &err), STORE_ENOTFOUND);

	/* an empty value is a value */
	CHECK_RC(store_create(s, S("empty"), "", 0, 0, NULL, &err), STORE_OK);
	CHECK_RC(store_get(s, S("empty"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("empty"), "", 0));
	store_kv_release(&kv);
	store_free(s);
	return true;
}

/* Keys with any byte v2 keeps, values with any UTF-8; and what it cannot. */
static bool test_odd_keys(void)
{
	static const struct {
		const char *key;
		size_t len;
	} keys[] = {
		{ S("sp ace") }, { S("per%cent") }, { S("q?h#a&e=p+") },
		{ S("n\0ul") }, { S("\xc3\xa9t\xc3\xa9/\xe2\x82\xac") },
		{ S("new\nline") }, { S("...") }, { S("-dash") },
	};
	static const char value[] = "v\0al\n\xe2\x82\xac \t%+&=";
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store_kv kv = { 0 };
	struct store *s = store_open("/t/odd/");
	char full[64];
	size_t i;

	CHECK(s);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		CHECK_RC(store_create(s, keys[i].key, keys[i].len, S(value), 0,
				      NULL, &err), STORE_OK);
		CHECK_RC(store_get(s, keys[i].key, keys[i].len, 0, &kv, &err),
			 STORE_OK);
		CHECK(util_kv_is(&kv, keys[i].key, keys[i].len, S(value)));
		store_kv_release(&kv);
		memcpy(full, "/t/odd/", 7);
		memcpy(full + 7, keys[i].key, keys[i].len);
		CHECK(w_has(full, 7 + keys[i].len, S(value)));
	}
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == sizeof(keys) / sizeof(keys[0]));
	for (i = 0; i < l.n; i++) {
		CHECK(util_mem_is(l.kvs[i].value, l.kvs[i].value_len, S(value)));
		if (i > 0) {
			size_t a = l.kvs[i - 1].key_len, b = l.kvs[i].key_len;
			int c = memcmp(l.kvs[i - 1].key, l.kvs[i].key,
				       a < b ? a : b);

			CHECK(c < 0 || (c == 0 && a < b));
		}
	}
	store_list_release(&l);

	/* keys etcd v2 would change: refused, and nothing is written */
	CHECK_RC(store_create(s, S("a//b"), S("x"), 0, NULL, &err),
		 STORE_EINVAL);
	CHECK_RC(store_create(s, S("trailing/"), S("x"), 0, NULL, &err),
		 STORE_EINVAL);
	CHECK_RC(store_create(s, S("a/./b"), S("x"), 0, NULL, &err),
		 STORE_EINVAL);
	CHECK_RC(store_create(s, S("a/../b"), S("x"), 0, NULL, &err),
		 STORE_EINVAL);
	CHECK_RC(store_create(s, S("bin\xff"), S("x"), 0, NULL, &err),
		 STORE_EINVAL);
	CHECK(w_lacks(S("/t/odd/a/b")));
	CHECK(w_lacks(S("/t/odd/trailing")));
	CHECK(w_lacks(S("/t/odd/b")));
	/* and such keys cannot exist: not found */
	CHECK_RC(store_get(s, S("trailing/"), 0, &kv, &err), STORE_ENOTFOUND);
	CHECK_RC(store_delete(s, S("a//b"), NULL, NULL, NULL, &err),
		 STORE_ENOTFOUND);
	/* a value etcd v2 would send back changed */
	CHECK_RC(store_create(s, S("binary"), S("\xff\xfe"), 0, NULL, &err),
		 STORE_ENOTSUP);
	CHECK(w_lacks(S("/t/odd/binary")));
	store_free(s);
	return true;
}

static bool test_list(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store *s = store_open("/t/list/");
	int64_t idx;

	CHECK(s);
	CHECK(w_put("/t/list/b/c", "2") > 0);
	CHECK(w_put("/t/list/a", "1") > 0);
	CHECK(w_put("/t/list/b/d/e", "3") > 0);
	CHECK(w_put("/t/list/b-x", "4") > 0);
	CHECK(w_do("PUT", "/t/list/empty", "dir=true"));
	CHECK(w_put("/t/lister", "outside") > 0);
	CHECK(w_put("/t/list/_hidden", "v2 hides it") > 0);

	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	idx = w_index();
	CHECK(l.n == 4);
	/* bytewise: '-' sorts before '/' */
	CHECK(util_kv_is(&l.kvs[0], S("a"), S("1")));
	CHECK(util_kv_is(&l.kvs[1], S("b-x"), S("4")));
	CHECK(util_kv_is(&l.kvs[2], S("b/c"), S("2")));
	CHECK(util_kv_is(&l.kvs[3], S("b/d/e"), S("3")));
	CHECK(l.kvs[3].mod_revision == w_mod("/t/list/b/d/e"));
	/* nothing was written since: the list is at etcd's index */
	CHECK(l.revision == idx);
	store_list_release(&l);

	CHECK_RC(store_list(s, S("b/"), STORE_READ_KEYS_ONLY, &l, &err),
		 STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[0], S("b/c"), "", 0));
	CHECK(util_kv_is(&l.kvs[1], S("b/d/e"), "", 0));
	store_list_release(&l);

	CHECK_RC(store_list(s, S("b"), STORE_READ_SERIAL, &l, &err), STORE_OK);
	CHECK(l.n == 3);
	store_list_release(&l);

	/* a directory that is not there, or is empty, or is a key */
	CHECK_RC(store_list(s, S("nothere/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 0 && l.revision == idx);
	store_list_release(&l);
	CHECK_RC(store_list(s, S("empty/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 0 && l.revision == idx);
	store_list_release(&l);
	CHECK_RC(store_list(s, S("a/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 0 && l.revision == idx);
	store_list_release(&l);

	/* a later write moves the revision on */
	CHECK(w_put("/t/elsewhere", "x") == idx + 1);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 4 && l.revision == idx + 1);
	store_list_release(&l);
	store_free(s);
	return true;
}

/* v2 keys are paths: a key cannot also be a directory. */
static bool test_key_or_directory(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store *s = store_open("/t/kd/");

	CHECK(s);
	CHECK_RC(store_create(s, S("f"), S("file"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_create(s, S("f/x"), S("x"), 0, NULL, &err),
		 STORE_EINVAL);
	CHECK(strstr(err.msg, "not a directory"));
	CHECK(w_lacks(S("/t/kd/f/x")));

	CHECK_RC(store_create(s, S("d/x"), S("x"), 0, NULL, &err), STORE_OK);
	/* a directory is no key: not found, and not created over */
	CHECK_RC(store_get(s, S("d"), 0, &kv, &err), STORE_ENOTFOUND);
	CHECK_RC(store_create(s, S("d"), S("d"), 0, NULL, &err),
		 STORE_EEXISTS);
	CHECK_RC(store_delete(s, S("d"), NULL, NULL, NULL, &err),
		 STORE_EINVAL);
	CHECK(strstr(err.msg, "not a file"));
	CHECK(w_has(S("/t/kd/d/x"), S("x")));
	store_free(s);
	return true;
}

static bool test_delete(void)
{
	struct store_error err = { 0 };
	struct store_kv prev = { 0 };
	struct store_preconditions pre = { 0 };
	struct store *s = store_open("/t/del/");
	int64_t rev = 0, mod;

	CHECK(s);
	mod = w_put("/t/del/a", "va");
	CHECK(mod > 0);
	CHECK_RC(store_delete(s, S("a"), NULL, &prev, &rev, &err), STORE_OK);
	CHECK(util_kv_is(&prev, S("a"), S("va")));
	CHECK(prev.mod_revision == mod);
	CHECK(rev > mod);
	store_kv_release(&prev);
	CHECK(w_lacks(S("/t/del/a")));
	CHECK(w_index() == rev);

	CHECK_RC(store_delete(s, S("a"), NULL, &prev, NULL, &err),
		 STORE_ENOTFOUND);
	CHECK(prev.key == NULL);
	CHECK_RC(store_delete(s, S("never/below"), NULL, NULL, NULL, &err),
		 STORE_ENOTFOUND);

	/* the right preconditions, both of them: deleted */
	mod = w_put("/t/del/b", "vb");
	pre.mod_revision = mod;
	pre.create_revision = mod;
	CHECK_RC(store_delete(s, S("b"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(w_lacks(S("/t/del/b")));
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
	int64_t old, now;

	CHECK(s);
	CHECK_RC(store_create(s, S("k"), S("mine"), 0, &old, &err), STORE_OK);
	now = w_put("/t/delpre/k", "theirs");
	CHECK(now > old);

	pre.mod_revision = old;
	CHECK_RC(store_delete(s, S("k"), &pre, &cur, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(err.revision == now);
	CHECK(util_kv_is(&cur, S("k"), S("theirs")));
	CHECK(cur.mod_revision == now);
	store_kv_release(&cur);
	CHECK(w_has(S("/t/delpre/k"), S("theirs")));
	CHECK(w_mod("/t/delpre/k") == now);

	/* deleted and made again: the same index is not the same key */
	CHECK(w_do("DELETE", "/t/delpre/k", NULL));
	now = w_put("/t/delpre/k", "theirs");
	pre.mod_revision = 0;
	pre.create_revision = old;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("k"), &pre, &cur, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(err.revision == now && cur.create_revision == now);
	store_kv_release(&cur);
	CHECK(w_has(S("/t/delpre/k"), S("theirs")));

	/* with the current ones it goes */
	pre.mod_revision = now;
	pre.create_revision = now;
	CHECK_RC(store_delete(s, S("k"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(w_lacks(S("/t/delpre/k")));
	store_free(s);
	return true;
}

/* ---- guaranteed_update ---- */

struct upd {
	int calls;
	int change_on;		/* the call that changes the key first; -1:
				 * every call */
	const char *full_key;	/* for the witness */
	int max_calls;		/* the case's own bound (0: none) */
	char seen[8][64];	/* the values try_update was called with */
	bool seen_absent[8];
};

static int upd_fn(void *arg, const struct store_kv *cur,
		  struct store_update *out)
{
	struct upd *u = arg;
	int n = u->calls++;
	char other[32];

	/* a store that ignores its retry bound fails the case here, not
	 * at meson's timeout */
	if (u->max_calls && u->calls > u->max_calls)
		return STORE_EINTERNAL;
	if (n < 8) {
		if (cur)
			snprintf(u->seen[n], sizeof(u->seen[n]), "%.*s",
				 (int)cur->value_len, cur->value);
		u->seen_absent[n] = cur == NULL;
	}
	if (u->change_on == -1 || u->change_on == n + 1) {
		/* someone else writes first: this attempt must lose */
		snprintf(other, sizeof(other), "other-%d", n + 1);
		if (w_put(u->full_key, other) == 0)
			return STORE_EINTERNAL;
	}
	out->value = util_fmt("%.*s+u", cur ? (int)cur->value_len : 3,
			 cur ? cur->value : "new");
	out->value_len = strlen(out->value);
	out->lease = -1;
	return 0;
}

static bool test_update_basic(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct upd u = { .full_key = "/t/upd/a" };
	struct store *s = store_open("/t/upd/");
	struct wkv w;
	int64_t create;

	CHECK(s);
	create = w_put("/t/upd/a", "v0");
	CHECK_RC(store_guaranteed_update(s, S("a"), false, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 1 && strcmp(u.seen[0], "v0") == 0);
	CHECK(util_kv_is(&out, S("a"), S("v0+u")));
	CHECK(w_has(S("/t/upd/a"), S("v0+u")));
	CHECK(w_mod("/t/upd/a") == out.mod_revision);
	/* a compare-and-swap keeps the node: its createdIndex stays */
	CHECK(out.create_revision == create);
	store_kv_release(&out);
	CHECK(w_get(S("/t/upd/a"), &w) == 1 && w.create == create);
	wkv_release(&w);

	u = (struct upd){ .full_key = "/t/upd/b" };
	CHECK_RC(store_guaranteed_update(s, S("b"), false, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_ENOTFOUND);
	CHECK(u.calls == 0);
	CHECK(w_lacks(S("/t/upd/b")));

	u = (struct upd){ .full_key = "/t/upd/b" };
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("b"), true, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 1 && u.seen_absent[0]);
	CHECK(util_kv_is(&out, S("b"), S("new+u")));
	store_kv_release(&out);
	CHECK(w_has(S("/t/upd/b"), S("new+u")));
	store_free(s);
	return true;
}

/* The key changes under the first attempt; the second one wins. */
static bool test_update_conflict_retried(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct upd u = { .full_key = "/t/updr/k", .change_on = 1 };
	struct store *s = store_open("/t/updr/");

	CHECK(s);
	CHECK(w_put("/t/updr/k", "v0") > 0);
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, &out, &err), STORE_OK);
	CHECK(u.calls == 2);
	CHECK(strcmp(u.seen[0], "v0") == 0);
	CHECK(strcmp(u.seen[1], "other-1") == 0);
	CHECK(util_kv_is(&out, S("k"), S("other-1+u")));
	CHECK(w_has(S("/t/updr/k"), S("other-1+u")));
	CHECK(w_mod("/t/updr/k") == out.mod_revision);
	store_kv_release(&out);

	/* created under a create attempt: the retry sees it */
	u = (struct upd){ .full_key = "/t/updr/fresh", .change_on = 1 };
	CHECK_RC(store_guaranteed_update(s, S("fresh"), true, NULL, NULL,
					 upd_fn, &u, &out, &err), STORE_OK);
	CHECK(u.calls == 2 && u.seen_absent[0] && !u.seen_absent[1]);
	CHECK(util_kv_is(&out, S("fresh"), S("other-1+u")));
	store_kv_release(&out);
	CHECK(w_has(S("/t/updr/fresh"), S("other-1+u")));
	store_free(s);
	return true;
}

/*
 * The key changes under every attempt: ECONFLICT after the bound.  Past
 * twice the bound try_update stops the update itself, so that a store
 * that retried for ever fails here within seconds.
 */
static bool test_update_conflict_exhausted(void)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.endpoints = endpoint,
		.prefix = "/t/upde/",
		.max_update_retries = 3,
	};
	struct store_error err = { 0 };
	struct upd u = {
		.full_key = "/t/upde/k", .change_on = -1, .max_calls = 2 * 3,
	};
	struct store *s = util_store_open(&cfg);
	char last[32];
	int rc;

	CHECK(s);
	CHECK(w_put("/t/upde/k", "v0") > 0);
	util_watchdog_arm(60000, "test_update_conflict_exhausted", NULL, 0);
	rc = store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn, &u,
				     NULL, &err);
	util_watchdog_disarm();
	tap_diag("try_update ran %d times with max_update_retries 3", u.calls);
	if (u.calls > u.max_calls)
		tap_diag("the update went on past max_update_retries");
	CHECK_RC(rc, STORE_ECONFLICT);
	CHECK(u.calls == 3);
	/* etcd keeps the other writer's last value, not ours */
	snprintf(last, sizeof(last), "other-%d", u.calls);
	CHECK(w_has(S("/t/upde/k"), last, strlen(last)));
	store_free(s);
	return true;
}

struct racer {
	struct store *s;
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
					    &err) == STORE_OK) {
			r->done++;
		} else {
			fprintf(stderr, "race: %s\n", err.msg);
			r->failed++;
		}
	}
	return NULL;
}

/* Concurrent read-modify-write through one store loses no update. */
static bool test_concurrent_updates(void)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
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
		r[i] = (struct racer){ s, 0, 0 };
		CHECK(pthread_create(&th[i], NULL, race, &r[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(r[i].failed == 0);
		total += r[i].done;
	}
	CHECK(total == 100);
	snprintf(want, sizeof(want), "%d", total);
	CHECK(w_has(S("/t/race/counter"), want, strlen(want)));
	store_free(s);
	return true;
}

/* ---- what v2 cannot do ---- */

static bool test_unsupported(void)
{
	struct store_error err = { 0 };
	struct store *s = store_open("/t/nosup/");
	int64_t id = 1;

	CHECK(s);
	CHECK_RC(store_lease_grant(s, 10, &id, &err), STORE_ENOTSUP);
	CHECK(id == 0);
	CHECK_RC(store_create(s, S("leased"), S("x"), 7, NULL, &err),
		 STORE_ENOTSUP);
	CHECK(w_lacks(S("/t/nosup/leased")));
	CHECK_RC(store_create(s, S("from"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_move(s, S("from"), NULL, S("to"), NULL, NULL, 0, NULL,
			    &err), STORE_ENOTSUP);
	CHECK(w_has(S("/t/nosup/from"), S("x")));
	CHECK(w_lacks(S("/t/nosup/to")));
	store_free(s);
	return true;
}

/* ---- the cluster ---- */

static bool test_revision(void)
{
	struct store_error err = { 0 };
	struct store *s = store_open("/t/rev/");
	int64_t r0 = 0, r1 = 0;

	CHECK(s);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	CHECK(r0 > 0);
	CHECK(r0 == w_index());
	CHECK(w_put("/t/rev/x", "1") == r0 + 1);
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 1);
	/* a write outside the prefix moves it all the same */
	CHECK(w_put("/t/outside-rev", "1") == r0 + 2);
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 2);
	/* someone made the probe's key: the probe looks below it */
	CHECK(w_put("/t/rev/_etcdfs_revision_probe", "in the way") ==
	      r0 + 3);
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 3);
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
	out = util_sh_out_len(NULL, "%s member list", ctl2);
	CHECK(out);
	errno = 0;
	id = strtoull(out, &end, 16);
	CHECK(errno == 0 && end != out && *end == ':');
	free(out);
	CHECK(m[0].id == id);
	store_members_free(m, n);
	store_free(s);
	return true;
}

/* ---- watch ---- */

static bool test_watch_from_index(void)
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
	/* written before the watch starts: it begins at r0 + 1 all the same */
	CHECK(w_put("/t/w1/a", "1") == r0 + 1);
	CHECK(w_put("/t/w1/b", "2") == r0 + 2);
	CHECK_RC(store_watch(s, "", 0, true, r0 + 1, util_on_event, &log, &w,
			     &err), STORE_OK);
	CHECK(w_put("/t/w0-outside", "x") == r0 + 3);
	CHECK(w_put("/t/w1/a", "3") == r0 + 4);
	CHECK(w_do("DELETE", "/t/w1/b", NULL));
	CHECK_RC(store_create(s, S("c/d"), S("4"), 0, NULL, &err), STORE_OK);
	if (util_evlog_wait(&log, 5, 10000) < 5) {
		tap_diag("got %zu events of 5", log.n);
		goto out;
	}
	util_sleep_ms(300);	/* nothing more is to come */
	pthread_mutex_lock(&log.lock);
	ok = log.n == 5 && !log.out_of_order &&
	     util_ev_is(&log.evs[0], STORE_EV_PUT, S("a"), S("1")) &&
	     util_ev_is(&log.evs[1], STORE_EV_PUT, S("b"), S("2")) &&
	     util_ev_is(&log.evs[2], STORE_EV_PUT, S("a"), S("3")) &&
	     util_ev_is(&log.evs[3], STORE_EV_DELETE, S("b"), NULL, 0) &&
	     util_ev_is(&log.evs[4], STORE_EV_PUT, S("c/d"), S("4"));
	if (ok) {
		ok = log.evs[0].mod_revision == r0 + 1 &&
		     log.evs[1].mod_revision == r0 + 2 &&
		     log.evs[2].mod_revision == r0 + 4 &&
		     log.evs[3].mod_revision == r0 + 5 &&
		     log.evs[4].mod_revision == r0 + 6 &&
		     log.evs[4].revision == r0 + 6;
		if (!ok)
			tap_diag("event revisions off from %" PRId64, r0);
	}
	if (ok) {
		/* prev_kv on the overwrite and the delete */
		ok = log.evs[2].prev_value &&
		     util_mem_is(log.evs[2].prev_value, log.evs[2].prev_len, S("1")) &&
		     log.evs[3].prev_value &&
		     util_mem_is(log.evs[3].prev_value, log.evs[3].prev_len, S("2"));
		if (!ok)
			tap_diag("prev_kv missing");
	}
	pthread_mutex_unlock(&log.lock);
out:
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

/* One key, not a prefix, from now: what is written after the call. */
static bool test_watch_one_key_from_now(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = store_open("/t/w3/");
	bool ok;

	CHECK(s);
	util_evlog_init(&log);
	CHECK(w_put("/t/w3/k", "before") > 0);
	CHECK_RC(store_watch(s, S("k"), false, 0, util_on_event, &log, &w, &err),
		 STORE_OK);
	/* "from now" is from the index before the call returned */
	CHECK(w_put("/t/w3/kk", "not me") > 0);
	CHECK(w_put("/t/w3/k", "me") > 0);
	ok = util_evlog_wait(&log, 1, 10000) == 1;
	util_sleep_ms(300);
	pthread_mutex_lock(&log.lock);
	ok = ok && log.n == 1 && util_ev_is(&log.evs[0], STORE_EV_PUT, S("k"),
				       S("me")) &&
	     log.evs[0].prev_value &&
	     util_mem_is(log.evs[0].prev_value, log.evs[0].prev_len, S("before"));
	pthread_mutex_unlock(&log.lock);
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

/*
 * v2 removes a directory in one event: a prefix watch over it must list
 * again (ECOMPACTED, then nothing); a one-key watch sees its key deleted.
 */
static bool test_watch_directory_removed(void)
{
	struct store_error err = { 0 };
	struct store_watch *wp = NULL, *wk = NULL;
	struct util_evlog lp, lk;
	struct store *s = store_open("/t/w5/");
	int64_t del;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&lp);
	util_evlog_init(&lk);
	CHECK(w_put("/t/w5/d/x", "1") > 0);
	CHECK(w_put("/t/w5/d/sub/y", "2") > 0);
	if (store_watch(s, "", 0, true, 0, util_on_event, &lp, &wp, &err) ||
	    store_watch(s, S("d/sub/y"), false, 0, util_on_event, &lk, &wk, &err)) {
		tap_diag("store_watch: %s", err.msg);
		goto out;
	}
	if (!w_do("DELETE", "/t/w5/d", "dir=true&recursive=true"))
		goto out;
	del = w_index();
	if (util_evlog_wait(&lp, 1, 10000) < 1 || util_evlog_wait(&lk, 1, 10000) < 1) {
		tap_diag("no event for the removed directory");
		goto out;
	}
	/* the prefix watch is over: this write is not reported */
	if (!w_put("/t/w5/after", "x"))
		goto out;
	util_sleep_ms(500);
	pthread_mutex_lock(&lp.lock);
	ok = lp.n == 1 && lp.evs[0].type == STORE_EV_ERROR &&
	     lp.evs[0].err == STORE_ECOMPACTED &&
	     lp.evs[0].compact_revision == del;
	if (!ok)
		tap_diag("prefix watch: %zu events, the first %d %s", lp.n,
			 lp.evs[0].type, store_errname(lp.evs[0].err));
	pthread_mutex_unlock(&lp.lock);
	pthread_mutex_lock(&lk.lock);
	ok = ok && lk.n == 1 &&
	     util_ev_is(&lk.evs[0], STORE_EV_DELETE, S("d/sub/y"), NULL, 0) &&
	     lk.evs[0].mod_revision == del;
	pthread_mutex_unlock(&lk.lock);
out:
	store_watch_stop(wp);
	store_watch_stop(wk);
	util_evlog_release(&lp);
	util_evlog_release(&lk);
	store_free(s);
	return ok;
}

/*
 * v2 keeps the last 1,000 events: a watch from an index before them is
 * ECOMPACTED at once, with the oldest index still kept; from that one it
 * works.
 */
static bool test_watch_cleared(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = store_open("/t/w4/");
	int64_t idx, start;
	char key[32];
	bool ok = false;
	int i;

	CHECK(s);
	util_evlog_init(&log);
	for (i = 0; i < 1100; i++) {
		int n = snprintf(key, sizeof(key), "churn/%d", i % 50);

		memset(&err, 0, sizeof(err));
		if (store_guaranteed_update(s, key, (size_t)n, true, NULL, NULL,
					    util_incr_fn, NULL, NULL, &err)) {
			tap_diag("churn: %s", err.msg);
			goto out;
		}
	}
	idx = w_index();
	start = idx - 1000 + 1;
	if (store_watch(s, "", 0, true, 1, util_on_event, &log, &w, &err)) {
		tap_diag("store_watch: %s", err.msg);
		goto out;
	}
	if (util_evlog_wait(&log, 1, 10000) < 1) {
		tap_diag("no event from a cleared index");
		goto out;
	}
	if (!w_put("/t/w4/after", "x"))
		goto out;
	util_sleep_ms(500);
	pthread_mutex_lock(&log.lock);
	ok = log.n == 1 && log.evs[0].type == STORE_EV_ERROR &&
	     log.evs[0].err == STORE_ECOMPACTED &&
	     log.evs[0].compact_revision == start;
	if (!ok)
		tap_diag("%zu events; first: type %d err %s compact %" PRId64
			 " (expected %" PRId64 ")", log.n, log.evs[0].type,
			 store_errname(log.evs[0].err),
			 log.evs[0].compact_revision, start);
	pthread_mutex_unlock(&log.lock);
	store_watch_stop(w);
	w = NULL;
	util_evlog_release(&log);
	util_evlog_init(&log);

	/* from the oldest index kept, history is there */
	if (ok && store_watch(s, "", 0, true, start + 1, util_on_event, &log, &w,
			      &err) == STORE_OK) {
		ok = util_evlog_wait(&log, 1, 10000) >= 1;
		pthread_mutex_lock(&log.lock);
		ok = ok && log.evs[0].type == STORE_EV_PUT &&
		     log.evs[0].mod_revision == start + 1;
		pthread_mutex_unlock(&log.lock);
	} else if (ok) {
		tap_diag("watch from the oldest index: %s", err.msg);
		ok = false;
	}
out:
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

/* ---- a TCP proxy that can be cut, to lose a watch's connection ---- */

static const char proxy_py[] =
	"import socket, sys, threading\n"
	"port, target = int(sys.argv[1]), int(sys.argv[2])\n"
	"ls = socket.socket()\n"
	"ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"ls.bind(('127.0.0.1', port))\n"
	"ls.listen(16)\n"
	"print(ls.getsockname()[1], flush=True)\n"
	"def pump(a, b):\n"
	"    try:\n"
	"        while True:\n"
	"            d = a.recv(65536)\n"
	"            if not d:\n"
	"                break\n"
	"            b.sendall(d)\n"
	"    except OSError:\n"
	"        pass\n"
	"    for s in (a, b):\n"
	"        try:\n"
	"            s.shutdown(socket.SHUT_RDWR)\n"
	"        except OSError:\n"
	"            pass\n"
	"while True:\n"
	"    c, _ = ls.accept()\n"
	"    u = socket.create_connection(('127.0.0.1', target))\n"
	"    for a, b in ((c, u), (u, c)):\n"
	"        threading.Thread(target=pump, args=(a, b), daemon=True).start()\n";

struct proxy {
	pid_t pid;
	int port;
	char url[64];
};

/* Starts the proxy on @port (0: any) in front of the main etcd. */
static bool proxy_start(struct proxy *p, int port)
{
	char sport[16], starget[16], line[32] = "";
	const char *colon = strrchr(endpoint, ':');
	int fds[2];
	ssize_t n;

	if (!colon || pipe(fds) != 0)
		return false;
	snprintf(sport, sizeof(sport), "%d", port);
	snprintf(starget, sizeof(starget), "%s", colon + 1);
	fflush(stdout);
	p->pid = fork();
	if (p->pid < 0)
		return false;
	if (p->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execlp("python3", "python3", "-c", proxy_py, sport, starget,
		       (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* the port and its newline may come in two writes */
	for (n = 0; (size_t)n < sizeof(line) - 1 && !strchr(line, '\n');) {
		ssize_t got = read(fds[0], line + n, sizeof(line) - 1 -
				   (size_t)n);

		if (got <= 0)
			break;
		n += got;
		line[n] = '\0';
	}
	close(fds[0]);
	if (n > 0) {
		char *end;
		long v;

		errno = 0;
		v = strtol(line, &end, 10);
		p->port = (errno || end == line || *end != '\n' || v <= 0 ||
			   v > 65535) ? 0 : (int)v;
	}
	if (p->port <= 0) {
		tap_diag("the proxy did not start (read %zd: '%s', %s)", n,
			 util_show(line, n > 0 ? (size_t)n : 0),
			 n < 0 ? strerror(errno) : "");
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
		return false;
	}
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%d", p->port);
	return true;
}

/* Kills the proxy: every connection through it is cut at once. */
static void proxy_kill(struct proxy *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	p->pid = 0;
}

/*
 * A watch whose connection is lost reports it, retries, and resumes after
 * the last event it gave: what was written meanwhile comes, once, in order.
 */
static bool test_watch_resumes(void)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.prefix = "/t/w6/",
	};
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct proxy px = { 0 };
	struct util_evlog log;
	struct store *s = NULL;
	size_t errors = 0, puts = 0, i;
	bool ok = false;

	util_evlog_init(&log);
	if (!proxy_start(&px, 0))
		goto out;
	cfg.endpoints = px.url;
	s = util_store_open(&cfg);
	if (!s || store_watch(s, "", 0, true, 0, util_on_event, &log, &w, &err)) {
		tap_diag("store_watch: %s", err.msg);
		goto out;
	}
	if (!w_put("/t/w6/a", "1") || util_evlog_wait(&log, 1, 10000) < 1)
		goto out;
	proxy_kill(&px);
	if (!w_put("/t/w6/b", "2") || !w_put("/t/w6/c", "3"))
		goto out;
	/* the watch notices: an error, retried with back-off */
	if (util_evlog_wait(&log, 2, 10000) < 2)
		goto out;
	if (!proxy_start(&px, px.port))
		goto out;
	for (i = 0; i < 100; i++) {
		pthread_mutex_lock(&log.lock);
		puts = 0;
		for (size_t j = 0; j < log.n; j++)
			puts += log.evs[j].type == STORE_EV_PUT;
		pthread_mutex_unlock(&log.lock);
		if (puts >= 3)
			break;
		util_sleep_ms(100);
	}
	util_sleep_ms(300);
	pthread_mutex_lock(&log.lock);
	ok = !log.out_of_order;
	puts = 0;
	for (i = 0; ok && i < log.n; i++) {
		static const char keys[] = "abc", values[] = "123";

		if (log.evs[i].type == STORE_EV_ERROR) {
			/* transient: ECOMPACTED would have ended the watch */
			ok = log.evs[i].err != STORE_ECOMPACTED;
			errors++;
		} else {
			ok = puts < 3 &&
			     util_ev_is(&log.evs[i], STORE_EV_PUT, &keys[puts], 1,
				   &values[puts], 1);
			puts++;
		}
	}
	ok = ok && puts == 3 && errors >= 1;
	if (!ok)
		tap_diag("%zu events: %zu puts, %zu errors", log.n, puts,
			 errors);
	pthread_mutex_unlock(&log.lock);
out:
	store_watch_stop(w);
	store_free(s);
	proxy_kill(&px);
	util_evlog_release(&log);
	return ok;
}

/* ---- other servers ---- */

/* An etcd 3.4 without --enable-v2: a clear error, not "not found". */
static bool test_v2_off(void)
{
	struct store_config cfg = { .api = STORE_API_V2 };
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store *s = NULL;
	struct util_etcd e;
	int64_t rev;
	bool ok = false;

	if (!util_etcd_start(&e, "etcd-v3only", NULL, NULL))
		goto out;
	cfg.endpoints = e.endpoint;
	s = util_store_open(&cfg);
	if (!s)
		goto out;
	ok = store_revision(s, &rev, &err) == STORE_ENOTSUP &&
	     strstr(err.msg, "--enable-v2");
	if (!ok)
		tap_diag("revision: %s", err.msg);
	memset(&err, 0, sizeof(err));
	ok = ok && store_get(s, S("/a"), 0, &kv, &err) == STORE_ENOTSUP;
out:
	store_free(s);
	util_etcd_stop(&e);
	return ok;
}

/* v2 auth: HTTP basic, a wrong password refused, and watches with it. */
static bool auth_cases(const struct util_etcd *e)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.endpoints = e->endpoint,
		.prefix = "/app/",
		.user = "root",
		.password = "s3cret",
	};
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct store_kv kv = { 0 };
	struct util_evlog log;
	struct store *s;
	bool ok;

	s = util_store_open(&cfg);
	CHECK(s);
	CHECK_RC(store_create(s, S("k"), S("v"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("v")));
	store_kv_release(&kv);
	util_evlog_init(&log);
	CHECK_RC(store_watch(s, "", 0, true, 0, util_on_event, &log, &w, &err),
		 STORE_OK);
	CHECK(util_sh("curl -s -o /dev/null -u root:s3cret -X PUT "
		 "'%s/v2/keys/app/w' -d value=watched", e->endpoint) == 0);
	ok = util_evlog_wait(&log, 1, 10000) >= 1;
	pthread_mutex_lock(&log.lock);
	ok = ok && util_ev_is(&log.evs[0], STORE_EV_PUT, S("w"), S("watched"));
	pthread_mutex_unlock(&log.lock);
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	CHECK(ok);

	cfg.password = "wrong";
	s = util_store_open(&cfg);
	CHECK(s);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	CHECK_RC(store_create(s, S("k2"), S("v"), 0, NULL, &err),
		 STORE_EUNAUTHENTICATED);
	CHECK_RC(store_revision(s, &(int64_t){ 0 }, &err),
		 STORE_EUNAUTHENTICATED);
	store_free(s);

	/* no user at all: the guest may do nothing any more */
	cfg.user = NULL;
	cfg.password = NULL;
	s = util_store_open(&cfg);
	CHECK(s);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	store_free(s);
	return true;
}

static bool test_auth(void)
{
	struct util_etcd e;
	bool ok = false;

	if (!util_etcd_start(&e, "etcd-v2auth", NULL, "--enable-v2=true"))
		goto out;
	if (util_sh("curl -sf -o /dev/null -X PUT '%s/v2/auth/users/root' "
	       "-H 'Content-Type: application/json' "
	       "-d '{\"user\":\"root\",\"password\":\"s3cret\"}'",
	       e.endpoint) != 0 ||
	    util_sh("curl -sf -o /dev/null -X PUT '%s/v2/auth/enable'",
	       e.endpoint) != 0)
		goto out;
	/* the guest role may do anything by default: take that away */
	if (util_sh("curl -sf -o /dev/null -u root:s3cret -X PUT "
	       "'%s/v2/auth/roles/guest' -H 'Content-Type: application/json' "
	       "-d '{\"role\":\"guest\",\"revoke\":{\"kv\":{\"read\":[\"/*\"],"
	       "\"write\":[\"/*\"]}}}'", e.endpoint) != 0)
		goto out;
	ok = auth_cases(&e);
out:
	util_etcd_stop(&e);
	return ok;
}

/* Real v2 directories: made, refused twice, removed when empty only. */
static bool test_dirs(void)
{
	struct store_error err = { 0 };
	struct store *s = store_open("/t/dirs/");
	struct wkv w;
	int64_t rev = 0;

	CHECK(s);
	CHECK_RC(store_mkdir(s, S("d"), &rev, &err), STORE_OK);
	CHECK(w_get(S("/t/dirs/d"), &w) == 1 && w.dir && w.mod == rev);
	wkv_release(&w);
	CHECK_RC(store_mkdir(s, S("d"), &rev, &err), STORE_EEXISTS);
	CHECK_RC(store_create(s, S("f"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_mkdir(s, S("f"), &rev, &err), STORE_EEXISTS);
	CHECK_RC(store_rmdir(s, S("f"), &rev, &err), STORE_EINVAL);
	CHECK(w_has(S("/t/dirs/f"), S("x")));
	CHECK_RC(store_create(s, S("d/k"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_rmdir(s, S("d"), &rev, &err), STORE_EEXISTS);
	CHECK(w_has(S("/t/dirs/d/k"), S("x")));
	CHECK_RC(store_delete(s, S("d/k"), NULL, NULL, NULL, &err), STORE_OK);
	CHECK_RC(store_rmdir(s, S("d"), &rev, &err), STORE_OK);
	CHECK(w_lacks(S("/t/dirs/d")));
	CHECK(w_index() == rev);
	CHECK_RC(store_rmdir(s, S("d"), &rev, &err), STORE_ENOTFOUND);
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
		       "set and WITH_ETCD_ARGS=--enable-v2=true "
		       "(ETCDFS_TEST_ENDPOINTS, ETCDFS_TEST_DIR)\n");
		return 1;
	}
	witness_ep = endpoint;
	unsetenv("ETCDCTL_ENDPOINTS");
	unsetenv("ETCDCTL_USER");
	snprintf(ctl2, sizeof(ctl2),
		 "ETCDCTL_API=2 etcdctl --endpoints=%s --timeout=5s "
		 "--total-timeout=30s", endpoint);
	if (w_index() < 0) {
		printf("Bail out! the etcd at '%s' does not serve /v2/keys: "
		       "start it with --enable-v2=true\n", endpoint);
		return 1;
	}
	TAP_RUN(test_config);
	TAP_RUN(test_create_get);
	TAP_RUN(test_odd_keys);
	TAP_RUN(test_list);
	TAP_RUN(test_key_or_directory);
	TAP_RUN(test_delete);
	TAP_RUN(test_delete_stale_precondition);
	TAP_RUN(test_update_basic);
	TAP_RUN(test_update_conflict_retried);
	TAP_RUN(test_update_conflict_exhausted);
	TAP_RUN(test_concurrent_updates);
	TAP_RUN(test_unsupported);
	TAP_RUN(test_revision);
	TAP_RUN(test_members);
	TAP_RUN(test_watch_from_index);
	TAP_RUN(test_watch_one_key_from_now);
	TAP_RUN(test_watch_directory_removed);
	TAP_RUN(test_watch_cleared);
	TAP_RUN(test_watch_resumes);
	TAP_RUN(test_v2_off);
	TAP_RUN(test_auth);
	TAP_RUN(test_dirs);
	return tap_done(0);
}
