/*
 * test_store_v2.c - the store (helper/store.h) with api = STORE_API_V2,
 * against a real etcd serving the v2 keys API: configuration, single and
 * odd keys, lists, keys and directories, deletes, the guaranteed update and
 * its bound, an answer lost on the way, what v2 cannot do, the cluster, v2
 * switched off, auth, directories
 *
 * Runs under tests/lib/with-etcd with WITH_ETCD_ARGS=--enable-v2=true,
 * which gives it a private etcd in ETCDFS_TEST_ENDPOINTS and a scratch dir
 * in ETCDFS_TEST_DIR.  Every case works under a key prefix of its own and
 * cross-checks what etcd holds with a witness that is not the code under
 * test (tests/integration/v2keys.c).
 *
 * The cases that need another etcd (v2 off, v2 auth) start it through
 * tests/lib/etcd.sh (found through TESTS_DIR) and stop it before returning,
 * pass or fail.  An answer is lost by tests/lib/tcp_proxy.py, which passes
 * a request to etcd and drops the answer (or drops the request).  What it
 * cannot test: clusters of several members, and a peer that vanishes in
 * the middle of a request (test_members.c and test_leader.c run both
 * backends).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
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
#include "v2keys.h"
#include "cases.h"

/* ---- configuration ---- */

static bool test_config(void)
{
	struct store_config c = {
		.api = STORE_API_V2,
		.endpoints = v2keys_endpoint,
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
	struct store *s = v2keys_store_open("/t/create/");
	struct v2keys_kv w;
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
	CHECK(v2keys_get(S("/t/create/a"), &w) == 1);
	CHECK(util_mem_is(w.value, w.value_len, S("hello")));
	CHECK(w.mod == rev && w.create == rev);
	v2keys_kv_release(&w);
	out = util_sh_out_len(NULL, "%s get /t/create/a", v2keys_ctl);
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
	CHECK(v2keys_has(S("/t/create/a"), S("hello")));

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
	struct store *s = v2keys_store_open("/t/odd/");
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
		CHECK(v2keys_has(full, 7 + keys[i].len, S(value)));
	}
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == sizeof(keys) / sizeof(keys[0]));
	for (i = 0; i < l.n; i++) {
		CHECK(
		    util_mem_is(l.kvs[i].value, l.kvs[i].value_len, S(value)));
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
	CHECK(v2keys_lacks(S("/t/odd/a/b")));
	CHECK(v2keys_lacks(S("/t/odd/trailing")));
	CHECK(v2keys_lacks(S("/t/odd/b")));
	/* and such keys cannot exist: not found */
	CHECK_RC(store_get(s, S("trailing/"), 0, &kv, &err), STORE_ENOTFOUND);
	CHECK_RC(store_delete(s, S("a//b"), NULL, NULL, NULL, &err),
		 STORE_ENOTFOUND);
	/* a value etcd v2 would send back changed */
	CHECK_RC(store_create(s, S("binary"), S("\xff\xfe"), 0, NULL, &err),
		 STORE_ENOTSUP);
	CHECK(v2keys_lacks(S("/t/odd/binary")));
	store_free(s);
	return true;
}

static bool test_list(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store *s = v2keys_store_open("/t/list/");
	int64_t idx, put;

	CHECK(s);
	CHECK(v2keys_put("/t/list/b/c", "2") > 0);
	CHECK(v2keys_put("/t/list/a", "1") > 0);
	CHECK(v2keys_put("/t/list/b/d/e", "3") > 0);
	CHECK(v2keys_put("/t/list/b-x", "4") > 0);
	CHECK(v2keys_do("PUT", "/t/list/empty", "dir=true"));
	CHECK(v2keys_put("/t/lister", "outside") > 0);
	CHECK(v2keys_put("/t/list/_hidden", "v2 hides it") > 0);

	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	idx = v2keys_index();
	CHECK(l.n == 4);
	/* bytewise: '-' sorts before '/' */
	CHECK(util_kv_is(&l.kvs[0], S("a"), S("1")));
	CHECK(util_kv_is(&l.kvs[1], S("b-x"), S("4")));
	CHECK(util_kv_is(&l.kvs[2], S("b/c"), S("2")));
	CHECK(util_kv_is(&l.kvs[3], S("b/d/e"), S("3")));
	CHECK(l.kvs[3].mod_revision == v2keys_mod("/t/list/b/d/e"));
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

	/*
	 * A later write moves the revision on: to its index, or past it
	 * should etcd write one of its own keys meanwhile (under load, a
	 * member may publish its attributes again after /health says true).
	 */
	put = v2keys_put("/t/elsewhere", "x");
	CHECK(put > idx);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 4 && l.revision >= put && l.revision <= v2keys_index());
	store_list_release(&l);
	store_free(s);
	return true;
}

/* v2 keys are paths: a key cannot also be a directory. */
static bool test_key_or_directory(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store *s = v2keys_store_open("/t/kd/");

	CHECK(s);
	CHECK_RC(store_create(s, S("f"), S("file"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_create(s, S("f/x"), S("x"), 0, NULL, &err),
		 STORE_EINVAL);
	CHECK(strstr(err.msg, "not a directory"));
	CHECK(v2keys_lacks(S("/t/kd/f/x")));

	CHECK_RC(store_create(s, S("d/x"), S("x"), 0, NULL, &err), STORE_OK);
	/* a directory is no key: not found, and not created over */
	CHECK_RC(store_get(s, S("d"), 0, &kv, &err), STORE_ENOTFOUND);
	CHECK_RC(store_create(s, S("d"), S("d"), 0, NULL, &err),
		 STORE_EEXISTS);
	CHECK_RC(store_delete(s, S("d"), NULL, NULL, NULL, &err),
		 STORE_EINVAL);
	CHECK(strstr(err.msg, "not a file"));
	CHECK(v2keys_has(S("/t/kd/d/x"), S("x")));
	store_free(s);
	return true;
}

/* A delete whose precondition is stale is refused; etcd keeps the key. */
static bool test_delete_stale_precondition(void)
{
	struct store_error err = { 0 };
	struct store_kv cur = { 0 };
	struct store_preconditions pre = { 0 };
	struct store *s = v2keys_store_open("/t/delpre/");
	int64_t old, now;

	CHECK(s);
	CHECK_RC(store_create(s, S("k"), S("mine"), 0, &old, &err), STORE_OK);
	now = v2keys_put("/t/delpre/k", "theirs");
	CHECK(now > old);

	pre.mod_revision = old;
	CHECK_RC(store_delete(s, S("k"), &pre, &cur, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(err.revision == now);
	CHECK(util_kv_is(&cur, S("k"), S("theirs")));
	CHECK(cur.mod_revision == now);
	store_kv_release(&cur);
	CHECK(v2keys_has(S("/t/delpre/k"), S("theirs")));
	CHECK(v2keys_mod("/t/delpre/k") == now);

	/* deleted and made again: the same index is not the same key */
	CHECK(v2keys_do("DELETE", "/t/delpre/k", NULL));
	now = v2keys_put("/t/delpre/k", "theirs");
	pre.mod_revision = 0;
	pre.create_revision = old;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("k"), &pre, &cur, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(err.revision == now && cur.create_revision == now);
	store_kv_release(&cur);
	CHECK(v2keys_has(S("/t/delpre/k"), S("theirs")));

	/* with the current ones it goes */
	pre.mod_revision = now;
	pre.create_revision = now;
	CHECK_RC(store_delete(s, S("k"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(v2keys_lacks(S("/t/delpre/k")));
	store_free(s);
	return true;
}

/* ---- guaranteed_update ---- */

static bool test_update_basic(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct cases_upd u = {
		.w = &witness_v2, .full_key = "/t/upd/a", .lease = -1,
	};
	struct store *s = v2keys_store_open("/t/upd/");
	struct v2keys_kv w;
	int64_t create;

	CHECK(s);
	create = v2keys_put("/t/upd/a", "v0");
	CHECK_RC(store_guaranteed_update(s, S("a"), false, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 1 && strcmp(u.seen[0], "v0") == 0);
	CHECK(util_kv_is(&out, S("a"), S("v0+u")));
	CHECK(v2keys_has(S("/t/upd/a"), S("v0+u")));
	CHECK(v2keys_mod("/t/upd/a") == out.mod_revision);
	/* a compare-and-swap keeps the node: its createdIndex stays */
	CHECK(out.create_revision == create);
	store_kv_release(&out);
	CHECK(v2keys_get(S("/t/upd/a"), &w) == 1 && w.create == create);
	v2keys_kv_release(&w);

	u = (struct cases_upd){
		.w = &witness_v2, .full_key = "/t/upd/b", .lease = -1,
	};
	CHECK_RC(store_guaranteed_update(s, S("b"), false, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_ENOTFOUND);
	CHECK(u.calls == 0);
	CHECK(v2keys_lacks(S("/t/upd/b")));

	u = (struct cases_upd){
		.w = &witness_v2, .full_key = "/t/upd/b", .lease = -1,
	};
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("b"), true, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 1 && u.seen_absent[0]);
	CHECK(util_kv_is(&out, S("b"), S("new+u")));
	store_kv_release(&out);
	CHECK(v2keys_has(S("/t/upd/b"), S("new+u")));
	store_free(s);
	return true;
}

/*
 * An update whose answer is lost on a kept-alive connection is not sent
 * again behind the store's back (libcurl would, on a fresh connection,
 * and the copy's refused compare would read as another client's write):
 * the store settles it, and it is applied once.
 */
static bool update_lost_cases(struct util_proxy *px)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.endpoints = px->url,
		.prefix = "/t/ul/",
		.request_timeout_ms = 8000,
	};
	struct store_error err = { 0 };
	struct store_stats st;
	struct store *s;
	int64_t rev;
	bool lost;
	int rc;

	CHECK(v2keys_put("/t/ul/n", "5"));
	s = util_store_open(&cfg);
	CHECK(s);
	/* the connection the update's put goes on is a kept-alive one */
	rc = store_revision(s, &rev, &err);
	if (rc == 0 && !util_proxy_lose(px, "lose PUT", NULL))
		rc = STORE_EINTERNAL;
	if (rc == 0)
		rc = store_guaranteed_update(s, S("n"), false, NULL, NULL,
					     util_incr_fn, NULL, NULL, &err);
	lost = util_proxy_lost(px);
	store_stats(s, &st);
	store_free(s);
	CHECK(lost);
	CHECK_RC(rc, STORE_OK);
	CHECK(v2keys_has(S("/t/ul/n"), S("6")));
	CHECK(st.requests[STORE_REQ_WRITE] == 1);
	return true;
}

static bool test_update_lost(void)
{
	struct util_proxy px;
	bool ok;

	CHECK(util_proxy_start(&px, v2keys_endpoint, 0));
	ok = update_lost_cases(&px);
	util_proxy_stop(&px);
	return ok;
}

/* ---- what v2 cannot do ---- */

static bool test_unsupported(void)
{
	struct store_error err = { 0 };
	struct store *s = v2keys_store_open("/t/nosup/");
	int64_t id = 1;

	CHECK(s);
	CHECK_RC(store_lease_grant(s, 10, &id, &err), STORE_ENOTSUP);
	CHECK(id == 0);
	CHECK_RC(store_create(s, S("leased"), S("x"), 7, NULL, &err),
		 STORE_ENOTSUP);
	CHECK(v2keys_lacks(S("/t/nosup/leased")));
	CHECK_RC(store_create(s, S("from"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_move(s, S("from"), NULL, S("to"), NULL, NULL, 0, NULL,
			    &err), STORE_ENOTSUP);
	CHECK(v2keys_has(S("/t/nosup/from"), S("x")));
	CHECK(v2keys_lacks(S("/t/nosup/to")));
	store_free(s);
	return true;
}

/* ---- times to live ---- */

/* A v2 store of /t/ttl/ on @endpoints: room for a proxy to hold a request. */
static struct store *ttl_store(const char *endpoints)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.endpoints = endpoints,
		.prefix = "/t/ttl/",
		.request_timeout_ms = 8000,
	};

	return util_store_open(&cfg);
}

/* etcd holds /t/ttl/@key = @value with a time to live in (@lo, @hi]. */
static bool ttl_is(const char *key, const char *value, int64_t lo, int64_t hi,
		   int64_t mod)
{
	char *full = util_fmt("/t/ttl/%s", key);
	struct v2keys_kv w;
	bool ok;

	CHECK(v2keys_get(full, strlen(full), &w) == 1);
	ok = util_mem_is(w.value, w.value_len, value, strlen(value)) &&
	     w.ttl > lo && w.ttl <= hi && (!mod || w.mod == mod);
	if (!ok)
		tap_diag("'%s' = '%s', ttl %lld, index %lld", full,
			 util_show(w.value, w.value_len), (long long)w.ttl,
			 (long long)w.mod);
	v2keys_kv_release(&w);
	free(full);
	return ok;
}

static bool test_ttl(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct store *s = ttl_store(v2keys_endpoint);
	int64_t mod, ttl = 0;

	CHECK(s);
	mod = v2keys_put("/t/ttl/k", "v");
	CHECK_RC(store_set_ttl(s, S("k"), mod, 60, &out, &err), STORE_OK);
	CHECK(out.mod_revision > mod && util_kv_is(&out, S("k"), S("v")));
	CHECK(ttl_is("k", "v", 55, 60, out.mod_revision));
	CHECK_RC(store_key_ttl(s, S("k"), 0, &ttl, &err), STORE_OK);
	CHECK(ttl > 55 && ttl <= 60);
	CHECK_RC(store_set_ttl(s, S("k"), mod, 30, NULL, &err),
		 STORE_EPRECONDITION);
	mod = out.mod_revision;
	store_kv_release(&out);
	CHECK_RC(store_set_ttl(s, S("k"), mod, 0, &out, &err), STORE_OK);
	CHECK(ttl_is("k", "v", -1, 0, out.mod_revision));
	store_kv_release(&out);
	store_free(s);
	return true;
}

/*
 * store_set_ttl of /t/ttl/@key through @px, which loses the answer in
 * @mode and runs @meanwhile before the client sees it lost: what it
 * returned, the writes it sent in *@writes.
 */
static int ttl_lost(struct util_proxy *px, const char *mode,
		    const char *meanwhile, const char *key, int64_t mod,
		    int64_t ttl, struct store_kv *out, uint64_t *writes,
		    struct store_error *err)
{
	struct store_stats st;
	struct store *s = ttl_store(px->url);
	int64_t rev;
	int rc;

	if (!s)
		return STORE_EINTERNAL;
	/* connected first: the lost request is the time to live's */
	rc = store_revision(s, &rev, err);
	if (rc == 0 && !util_proxy_lose(px, mode, meanwhile))
		rc = STORE_EINTERNAL;
	if (rc == 0) {
		rc = store_set_ttl(s, key, strlen(key), mod, ttl, out, err);
		if (!util_proxy_lost(px)) {
			tap_diag("the proxy did not '%s' the put", mode);
			rc = rc ? rc : STORE_EINTERNAL;
		}
	}
	store_stats(s, &st);
	*writes = st.requests[STORE_REQ_WRITE];
	store_free(s);
	return rc;
}

/* A command that puts @value at /t/ttl/@key, as another client. */
static char *ttl_put_cmd(const char *key, const char *value)
{
	return util_fmt("curl -sf -X PUT '%s/v2/keys/t/ttl/%s' "
			"-d value=%s >/dev/null", v2keys_endpoint, key, value);
}

/*
 * A time to live whose answer was lost is settled by the first change
 * of the key after the revision it was set on: that set (applied: done,
 * even when another client changed the key again since), another change
 * (a conflict: it can never be applied), or none (not applied: sent once
 * more).
 */
static bool ttl_lost_cases(struct util_proxy *px)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	uint64_t writes = 0;
	int64_t mod;
	char *cmd;

	mod = v2keys_put("/t/ttl/a", "v");
	CHECK_RC(ttl_lost(px, "lose PUT", NULL, "a", mod, 600, &out, &writes,
			  &err), STORE_OK);
	CHECK(writes == 1 && out.mod_revision > mod);
	CHECK(ttl_is("a", "v", 590, 600, out.mod_revision));
	/* and detached */
	mod = out.mod_revision;
	store_kv_release(&out);
	CHECK_RC(ttl_lost(px, "lose PUT", NULL, "a", mod, 0, &out, &writes,
			  &err), STORE_OK);
	CHECK(writes == 1 && ttl_is("a", "v", -1, 0, out.mod_revision));
	store_kv_release(&out);

	mod = v2keys_put("/t/ttl/b", "v");
	CHECK_RC(ttl_lost(px, "swallow PUT", NULL, "b", mod, 600, &out, &writes,
			  &err), STORE_OK);
	CHECK(writes == 2 && ttl_is("b", "v", 590, 600, out.mod_revision));
	store_kv_release(&out);

	/* another client's put came first: it was not applied */
	mod = v2keys_put("/t/ttl/c", "v");
	cmd = ttl_put_cmd("c", "theirs");
	CHECK_RC(ttl_lost(px, "swallow PUT", cmd, "c", mod, 600, &out, &writes,
			  &err), STORE_EPRECONDITION);
	free(cmd);
	CHECK(writes == 1 && ttl_is("c", "theirs", -1, 0, 0));

	/* applied, then another client put the same value without one */
	mod = v2keys_put("/t/ttl/d", "v");
	cmd = ttl_put_cmd("d", "v");
	CHECK_RC(ttl_lost(px, "lose PUT", cmd, "d", mod, 600, &out, &writes,
			  &err), STORE_OK);
	free(cmd);
	CHECK(writes == 1 && out.mod_revision > mod);
	CHECK(ttl_is("d", "v", -1, 0, 0) && v2keys_mod("/t/ttl/d") >
	      out.mod_revision);
	store_kv_release(&out);

	return true;
}

static bool test_ttl_lost(void)
{
	struct util_proxy px;
	bool ok;

	CHECK(util_proxy_start(&px, v2keys_endpoint, 0));
	ok = ttl_lost_cases(&px);
	util_proxy_stop(&px);
	return ok;
}

/* ---- the cluster ---- */

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
	struct store *s = v2keys_store_open("/t/dirs/");
	struct v2keys_kv w;
	int64_t rev = 0;

	CHECK(s);
	CHECK_RC(store_mkdir(s, S("d"), &rev, &err), STORE_OK);
	CHECK(v2keys_get(S("/t/dirs/d"), &w) == 1 && w.dir && w.mod == rev);
	v2keys_kv_release(&w);
	CHECK_RC(store_mkdir(s, S("d"), &rev, &err), STORE_EEXISTS);
	CHECK_RC(store_create(s, S("f"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_mkdir(s, S("f"), &rev, &err), STORE_EEXISTS);
	CHECK_RC(store_rmdir(s, S("f"), &rev, &err), STORE_EINVAL);
	CHECK(v2keys_has(S("/t/dirs/f"), S("x")));
	CHECK_RC(store_create(s, S("d/k"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK_RC(store_rmdir(s, S("d"), &rev, &err), STORE_EEXISTS);
	CHECK(v2keys_has(S("/t/dirs/d/k"), S("x")));
	CHECK_RC(store_delete(s, S("d/k"), NULL, NULL, NULL, &err), STORE_OK);
	CHECK_RC(store_rmdir(s, S("d"), &rev, &err), STORE_OK);
	CHECK(v2keys_lacks(S("/t/dirs/d")));
	CHECK(v2keys_index() == rev);
	CHECK_RC(store_rmdir(s, S("d"), &rev, &err), STORE_ENOTFOUND);
	store_free(s);
	return true;
}

int main(void)
{
	if (!v2keys_setup())
		return 1;
	TAP_RUN(test_config);
	TAP_RUN(test_create_get);
	TAP_RUN(test_odd_keys);
	TAP_RUN(test_list);
	TAP_RUN(test_key_or_directory);
	TAP_RUN(test_delete_stale_precondition);
	TAP_RUN(test_update_basic);
	TAP_RUN(test_update_lost);
	TAP_RUN(test_unsupported);
	TAP_RUN(test_ttl);
	TAP_RUN(test_ttl_lost);
	TAP_RUN(test_v2_off);
	TAP_RUN(test_auth);
	TAP_RUN(test_dirs);
	CASES_RUN(cases_kv(&witness_v2));
	CASES_RUN(cases_update(&witness_v2));
	return tap_done(0);
}
