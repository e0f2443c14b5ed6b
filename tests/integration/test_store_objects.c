/*
 * test_store_objects.c - the store (helper/store.h) against a real etcd:
 * a key's time to live (store_set_ttl, store_key_ttl), its history
 * (store_key_history), a store pinned at a past revision
 * (store_check_revision, cfg.revision) and many keys moved in one
 * transaction (store_move_keys)
 *
 * Runs under tests/lib/with-etcd (a private etcd in ETCDFS_TEST_ENDPOINTS)
 * and cross-checks with etcdctl (tests/integration/ctl.c).
 *
 * A move, or a time to live's lease grant, whose answer is lost goes
 * through tests/lib/tcp_proxy.py, which passes the request to etcd and
 * drops etcd's answer (or drops the request), while another client's
 * change may come in between.
 *
 * What it cannot test: the etcd2 side of store_set_ttl (test_store_v2.c
 * and tests/fs/ttl.bats do); a first grant that meets another client's
 * lease of its id (EEXISTS), since the store draws the id itself.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"

static bool test_ttl(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct store *s = ctl_store_open("/t/ttl/");
	struct ctl_kv c;
	int64_t mod, ttl = 0;
	char *leases;

	CHECK(s);
	CHECK(ctl_put("/t/ttl/k", "v"));
	mod = ctl_mod("/t/ttl/k");
	CHECK_RC(store_set_ttl(s, S("k"), mod, 60, &out, &err), STORE_OK);
	CHECK(out.lease > 0 && out.mod_revision == mod + 1);
	CHECK(util_mem_is(out.value, out.value_len, S("v")));
	CHECK(ctl_get("/t/ttl/k", &c) == 1);
	CHECK(c.lease == out.lease && c.mod_revision == out.mod_revision);
	CHECK(util_mem_is(c.value, c.value_len, S("v")));
	ctl_kv_release(&c);
	CHECK_RC(store_key_ttl(s, S("k"), out.lease, &ttl, &err), STORE_OK);
	CHECK(ttl > 55 && ttl <= 60);
	store_kv_release(&out);

	/* on a revision that moved on: nothing changes, no lease is left */
	CHECK_RC(store_set_ttl(s, S("k"), mod, 30, &out, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_mod("/t/ttl/k") == mod + 1);
	leases = util_sh_out("%s lease list", ctl_cmd);
	CHECK(leases && strstr(leases, "found 1 leases"));
	free(leases);

	CHECK_RC(store_set_ttl(s, S("k"), mod + 1, -1, NULL, &err),
		 STORE_EINVAL);
	CHECK_RC(store_set_ttl(s, S("k"), mod + 1, STORE_TTL_MAX + 1, NULL,
			       &err), STORE_EINVAL);
	CHECK_RC(store_set_ttl(s, S("gone"), 5, 60, NULL, &err),
		 STORE_ENOTFOUND);

	/* 0 detaches */
	CHECK_RC(store_set_ttl(s, S("k"), mod + 1, 0, &out, &err), STORE_OK);
	CHECK(out.lease == 0);
	store_kv_release(&out);
	CHECK(ctl_get("/t/ttl/k", &c) == 1);
	CHECK(c.lease == 0 && c.mod_revision == mod + 2);
	ctl_kv_release(&c);
	CHECK_RC(store_key_ttl(s, S("k"), 0, &ttl, &err), STORE_OK);
	CHECK(ttl == 0);
	store_free(s);
	return true;
}

static bool test_history(void)
{
	struct store_error err = { 0 };
	struct store_version *v = NULL;
	struct store *s = ctl_store_open("/t/hist/");
	int64_t r[3];
	size_t n = 0;
	bool more = true;

	CHECK(s);
	CHECK(ctl_put("/t/hist/k", "1"));
	r[0] = ctl_mod("/t/hist/k");
	CHECK(ctl_put("/t/hist/other", "x"));
	CHECK(ctl_put("/t/hist/k", "2"));
	r[1] = ctl_mod("/t/hist/k");
	CHECK(ctl_put("/t/hist/k", "3"));
	r[2] = ctl_mod("/t/hist/k");
	CHECK_RC(store_key_history(s, S("k"), 100, &v, &n, &more, &err),
		 STORE_OK);
	CHECK(n == 3 && !more);
	CHECK(v[0].mod_revision == r[0] && v[0].version == 1);
	CHECK(v[1].mod_revision == r[1] && v[1].version == 2);
	CHECK(v[2].mod_revision == r[2] && v[2].version == 3);
	free(v);
	/* bounded: the newest */
	CHECK_RC(store_key_history(s, S("k"), 2, &v, &n, &more, &err),
		 STORE_OK);
	CHECK(n == 2 && more && v[0].mod_revision == r[1]);
	free(v);
	CHECK_RC(store_key_history(s, S("none"), 10, &v, &n, &more, &err),
		 STORE_ENOTFOUND);
	store_free(s);
	return true;
}

static bool test_past(void)
{
	struct store_config cfg = { .api = STORE_API_V3 };
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store_list l = { 0 };
	struct store *s = ctl_store_open("/t/past/"), *p;
	int64_t then, now = 0, oldest = 0;

	CHECK(s);
	CHECK(ctl_put("/t/past/a", "old"));
	then = ctl_revision();
	CHECK(ctl_put("/t/past/a", "new"));
	CHECK(ctl_put("/t/past/b", "later"));
	CHECK_RC(store_check_revision(s, then, &now, &oldest, &err),
		 STORE_OK);
	CHECK(now == ctl_revision());
	CHECK_RC(store_check_revision(s, now + 5, &now, &oldest, &err),
		 STORE_EINVAL);

	cfg.endpoints = getenv("ETCDFS_TEST_ENDPOINTS");
	cfg.prefix = "/t/past/";
	cfg.revision = then;
	p = util_store_open(&cfg);
	CHECK(p);
	CHECK_RC(store_get(p, S("a"), 0, &kv, &err), STORE_OK);
	CHECK(util_mem_is(kv.value, kv.value_len, S("old")));
	store_kv_release(&kv);
	CHECK_RC(store_get(p, S("b"), 0, &kv, &err), STORE_ENOTFOUND);
	CHECK_RC(store_list(p, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 1 && l.revision == then);
	store_list_release(&l);
	store_free(p);
	store_free(s);
	return true;
}

static bool test_move_keys(void)
{
	struct store_error err = { 0 };
	struct store *s = ctl_store_open("/t/mv/");
	struct store_move_key k[2] = {
		{ S("d/a"), S("e/a"), S("va"), 0, 0 },
		{ S("d/b"), S("e/b"), S("vb"), 0, 0 },
	};
	int64_t rev = 0, before;

	CHECK(s);
	CHECK(ctl_put("/t/mv/d/a", "va"));
	CHECK(ctl_put("/t/mv/d/b", "vb"));
	k[0].mod_revision = ctl_mod("/t/mv/d/a");
	k[1].mod_revision = ctl_mod("/t/mv/d/b") - 1;	/* stale */
	before = ctl_revision();
	CHECK_RC(store_move_keys(s, k, 2, NULL, &rev, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_revision() == before);
	CHECK(ctl_has("/t/mv/d/a", "va") && ctl_lacks("/t/mv/e/a"));

	k[1].mod_revision = ctl_mod("/t/mv/d/b");
	CHECK_RC(store_move_keys(s, k, 2, NULL, &rev, &err), STORE_OK);
	CHECK(rev == before + 1 && ctl_revision() == rev);
	CHECK(ctl_has("/t/mv/e/a", "va") && ctl_has("/t/mv/e/b", "vb"));
	CHECK(ctl_lacks("/t/mv/d/a") && ctl_lacks("/t/mv/d/b"));
	/* a target that exists fails it */
	CHECK(ctl_put("/t/mv/d/a", "again"));
	k[0] = (struct store_move_key){ S("d/a"), S("e/b"), S("again"),
					ctl_mod("/t/mv/d/a"), 0 };
	CHECK_RC(store_move_keys(s, k, 1, NULL, &rev, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_has("/t/mv/e/b", "vb"));
	store_free(s);
	return true;
}

/*
 * The guard's ranges: a key the caller does not know under the source (a
 * new one) or under the target fails the move; an empty target range
 * passes (etcd compares it as one absent key).
 */
static bool test_move_guard(void)
{
	struct store_error err = { 0 };
	struct store *s = ctl_store_open("/t/mg/");
	struct store_move_key k = { S("d/a"), S("e/a"), S("va"), 0, 0 };
	struct store_move_guard g = { S("d/"), 0, S("e/") };
	int64_t rev = 0, before;

	CHECK(s);
	CHECK(ctl_put("/t/mg/d/a", "va"));
	k.mod_revision = ctl_mod("/t/mg/d/a");
	g.revision = ctl_revision();
	CHECK(ctl_put("/t/mg/d/new", "theirs"));
	before = ctl_revision();
	CHECK_RC(store_move_keys(s, &k, 1, &g, &rev, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_revision() == before && ctl_lacks("/t/mg/e/a"));

	CHECK(ctl_put("/t/mg/e/other", "theirs"));
	g.revision = ctl_revision();	/* the source range passes now */
	before = ctl_revision();
	CHECK_RC(store_move_keys(s, &k, 1, &g, &rev, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_revision() == before && ctl_has("/t/mg/d/a", "va"));

	/* the same move into an empty range */
	g.to_prefix = "f/";
	k.to = "f/a";
	CHECK_RC(store_move_keys(s, &k, 1, &g, &rev, &err), STORE_OK);
	CHECK(rev == before + 1 && ctl_has("/t/mg/f/a", "va"));
	CHECK(ctl_lacks("/t/mg/d/a"));
	store_free(s);
	return true;
}

/* ---- a move whose answer is lost ---- */

#define ML_KEYS 10

/*
 * ML_KEYS keys under @dir (full, with its '/') of the store prefix /t/ml/,
 * the fifth with a lease, into @k (keys relative to the prefix, moved to
 * @to), and the guard of the two directories.
 */
static bool ml_fill(const char *dir, const char *to,
		    struct store_move_key *k, char names[][2][32],
		    struct store_move_guard *g, int64_t *lease)
{
	char *id;
	size_t i;

	id = util_sh_out("%s lease grant 600 | awk '$1 == \"lease\" "
			 "{ print $2 }'", ctl_cmd);
	CHECK(id);
	*lease = strtoll(id, NULL, 16);
	free(id);
	CHECK(*lease > 0);
	for (i = 0; i < ML_KEYS; i++) {
		char *with = util_fmt("--lease=%llx ", (long long)*lease);
		char *full;
		int rc;

		snprintf(names[i][0], sizeof(names[i][0]), "%sk%02zu", dir, i);
		snprintf(names[i][1], sizeof(names[i][1]), "%sk%02zu", to, i);
		rc = util_sh("%s put %s/t/ml/%s v%02zu >/dev/null", ctl_cmd,
			     i == 4 ? with : "", names[i][0], i);
		free(with);
		CHECK(rc == 0);
		k[i] = (struct store_move_key){
			names[i][0], strlen(names[i][0]),
			names[i][1], strlen(names[i][1]),
			util_fmt("v%02zu", i), 3,
			0, i == 4 ? *lease : 0,
		};
		full = util_fmt("/t/ml/%s", names[i][0]);
		k[i].mod_revision = ctl_mod(full);
		free(full);
		CHECK(k[i].mod_revision > 0);
	}
	*g = (struct store_move_guard){ dir, strlen(dir), ctl_revision(), to,
					strlen(to) };
	return true;
}

static void ml_release(struct store_move_key *k)
{
	size_t i;

	for (i = 0; i < ML_KEYS; i++)
		free((char *)k[i].value);
}

/* Every key moved, at revision @rev, with its value and lease. */
static bool ml_moved(const struct store_move_key *k, int64_t rev)
{
	struct ctl_kv c;
	size_t i;

	for (i = 0; i < ML_KEYS; i++) {
		char *from = util_fmt("/t/ml/%s", k[i].from);
		char *to = util_fmt("/t/ml/%s", k[i].to);

		CHECK(ctl_lacks(from));
		CHECK(ctl_get(to, &c) == 1);
		CHECK(util_mem_is(c.value, c.value_len, k[i].value,
				  k[i].value_len));
		CHECK(c.mod_revision == rev && c.create_revision == rev);
		CHECK(c.lease == k[i].lease);
		ctl_kv_release(&c);
		free(from);
		free(to);
	}
	return true;
}

/* Nothing moved: every key where it was, at its revision. */
static bool ml_unmoved(const struct store_move_key *k)
{
	size_t i;

	for (i = 0; i < ML_KEYS; i++) {
		char *to = util_fmt("/t/ml/%s", k[i].to);

		CHECK(ctl_lacks(to));
		free(to);
	}
	return true;
}

/* A store of /t/ml/ through @px: room for the proxy to hold a request. */
static struct store *ml_store(const struct util_proxy *px)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = px->url,
		.prefix = "/t/ml/",
		.request_timeout_ms = 8000,
	};

	return util_store_open(&cfg);
}

/*
 * Moves the keys of @k (@g) through @px, which loses the answer in @mode
 * and runs @meanwhile before the client sees it lost: what
 * store_move_keys returned, its revision in *@rev, the writes it sent
 * in *@writes.
 */
static int ml_move(struct util_proxy *px, const char *mode,
		   const char *meanwhile, const struct store_move_key *k,
		   const struct store_move_guard *g, int64_t *rev,
		   uint64_t *writes, struct store_error *err)
{
	struct store_stats st;
	struct store *s = ml_store(px);
	int rc;

	if (!s)
		return STORE_EINTERNAL;
	/* connected first: the lost request is the move's */
	rc = store_revision(s, rev, err);
	if (rc == 0 && !util_proxy_lose(px, mode, meanwhile))
		rc = STORE_EINTERNAL;
	if (rc == 0) {
		rc = store_move_keys(s, k, ML_KEYS, g, rev, err);
		if (!util_proxy_lost(px)) {
			tap_diag("the proxy did not %s the move", mode);
			rc = rc ? rc : STORE_EINTERNAL;
		}
	}
	store_stats(s, &st);
	*writes = st.requests[STORE_REQ_WRITE];
	store_free(s);
	return rc;
}

/*
 * A move whose answer was lost is settled: applied (its answer dropped)
 * is done, sent once; not applied (its request dropped) is sent once
 * more; a source another client changed meanwhile means it was not
 * applied and never can be: a conflict, nothing moved.
 */
static bool move_lost_cases(struct util_proxy *px)
{
	struct store_move_key k[ML_KEYS];
	struct store_move_guard g;
	struct store_error err = { 0 };
	char names[ML_KEYS][2][32];
	char *cmd;
	uint64_t writes = 0;
	int64_t rev = 0, lease = 0, before;

	CHECK(ml_fill("a/", "b/", k, names, &g, &lease));
	before = ctl_revision();
	CHECK_RC(ml_move(px, "lose", NULL, k, &g, &rev, &writes, &err),
		 STORE_OK);
	CHECK(rev == before + 1 && ctl_revision() == rev);
	CHECK(writes == 1);
	CHECK(ml_moved(k, rev));
	ml_release(k);

	CHECK(ml_fill("c/", "d/", k, names, &g, &lease));
	before = ctl_revision();
	CHECK_RC(ml_move(px, "swallow", NULL, k, &g, &rev, &writes, &err),
		 STORE_OK);
	CHECK(rev == before + 1 && ctl_revision() == rev);
	CHECK(writes == 2);
	CHECK(ml_moved(k, rev));
	ml_release(k);

	CHECK(ml_fill("e/", "f/", k, names, &g, &lease));
	cmd = util_fmt("%s put /t/ml/e/k03 theirs >/dev/null", ctl_cmd);
	before = ctl_revision();
	CHECK_RC(ml_move(px, "swallow", cmd, k, &g, &rev, &writes, &err),
		 STORE_EPRECONDITION);
	free(cmd);
	CHECK(writes == 1);
	CHECK(ctl_revision() == before + 1);
	CHECK(ctl_has("/t/ml/e/k03", "theirs"));
	CHECK(ctl_has("/t/ml/e/k02", "v02"));
	CHECK(ml_unmoved(k));
	ml_release(k);

	return true;
}

/*
 * What decides is what etcd did at the move's revision: a moved key
 * another client changed, or every moved key deleted, before the move is
 * settled does not hide it; keys deleted and made by another client one
 * by one are not taken for it.
 */
static bool move_lost_witness_cases(struct util_proxy *px)
{
	struct store_move_key k[ML_KEYS];
	struct store_move_guard g;
	struct store_error err = { 0 };
	char names[ML_KEYS][2][32];
	char *cmd;
	uint64_t writes = 0;
	int64_t rev = 0, lease = 0, before;

	CHECK(ml_fill("g/", "h/", k, names, &g, &lease));
	cmd = util_fmt("%s put /t/ml/h/k02 later >/dev/null", ctl_cmd);
	before = ctl_revision();
	CHECK_RC(ml_move(px, "lose", cmd, k, &g, &rev, &writes, &err),
		 STORE_OK);
	free(cmd);
	CHECK(rev == before + 1 && ctl_revision() == rev + 1);
	CHECK(writes == 1);
	CHECK(ctl_has("/t/ml/h/k02", "later") && ctl_lacks("/t/ml/g/k02"));
	ml_release(k);

	CHECK(ml_fill("i/", "j/", k, names, &g, &lease));
	cmd = util_fmt("%s del --prefix /t/ml/j/ >/dev/null", ctl_cmd);
	before = ctl_revision();
	CHECK_RC(ml_move(px, "lose", cmd, k, &g, &rev, &writes, &err),
		 STORE_OK);
	free(cmd);
	CHECK(rev == before + 1 && writes == 1);
	CHECK(ctl_lacks("/t/ml/i/k00") && ctl_lacks("/t/ml/j/k00"));
	ml_release(k);

	/* not applied, but what it would have made is there, key by key */
	CHECK(ml_fill("m/", "n/", k, names, &g, &lease));
	cmd = util_fmt("%s del --prefix /t/ml/m/ >/dev/null && "
		       "for i in 00 01 02 03 04 05 06 07 08 09; do "
		       "%s put /t/ml/n/k$i v$i >/dev/null || exit 1; done",
		       ctl_cmd, ctl_cmd);
	CHECK_RC(ml_move(px, "swallow", cmd, k, &g, &rev, &writes, &err),
		 STORE_EPRECONDITION);
	free(cmd);
	CHECK(writes == 1);
	ml_release(k);

	return true;
}

/* Runs @cases with a proxy of their own, stopped whatever they return. */
static bool with_proxy(bool (*cases)(struct util_proxy *px))
{
	struct util_proxy px;
	bool ok;

	CHECK(util_proxy_start(&px, ctl_endpoint, 0));
	ok = cases(&px);
	util_proxy_stop(&px);
	return ok;
}

static bool test_move_lost(void)
{
	return with_proxy(move_lost_cases);
}

static bool test_move_lost_witness(void)
{
	return with_proxy(move_lost_witness_cases);
}

/*
 * A store of /t/tl/ through @px, connected, so that the next request it
 * sends is the one the proxy is to lose; @timeout_ms its request timeout.
 */
static struct store *tl_store(const struct util_proxy *px, long timeout_ms)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = px->url,
		.prefix = "/t/tl/",
		.request_timeout_ms = timeout_ms,
	};
	struct store_error err = { 0 };
	struct store *s = util_store_open(&cfg);
	int64_t rev;

	if (s && store_revision(s, &rev, &err) < 0) {
		tap_diag("cannot connect through the proxy: %s", err.msg);
		store_free(s);
		s = NULL;
	}
	return s;
}

/*
 * Gives /t/tl/@name, at @mod, a time to live of 600 s through @px, which
 * loses the answer of the set's first request, the lease's grant, in
 * @mode, and runs @meanwhile before the client sees it lost: what
 * store_set_ttl returned, the key as written in @out, and what the store
 * sent in @st.
 */
static int tl_set(struct util_proxy *px, long timeout_ms, const char *mode,
		  const char *meanwhile, const char *name, int64_t mod,
		  struct store_kv *out, struct store_stats *st,
		  struct store_error *err)
{
	struct store *s = tl_store(px, timeout_ms);
	int rc = STORE_EINTERNAL;

	memset(st, 0, sizeof(*st));
	if (!s)
		return rc;
	if (util_proxy_lose(px, mode, meanwhile)) {
		rc = store_set_ttl(s, name, strlen(name), mod, 600, out, err);
		if (!util_proxy_lost(px)) {
			tap_diag("the proxy did not %s the grant", mode);
			rc = rc ? rc : STORE_EINTERNAL;
		}
	}
	store_stats(s, st);
	store_free(s);
	return rc;
}

/*
 * A lease grant whose answer was lost is sent again with the same lease
 * id: granted by the first copy (its answer dropped), etcd says it has
 * it; not granted (its request dropped), etcd grants it.  Either way the
 * set goes on and puts the key with that lease, the one granted.
 */
static bool tl_lost_cases(struct util_proxy *px)
{
	static const char *const modes[] = { "lose", "swallow" };
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct store_stats st;
	struct store *s = ctl_store_open("/t/tl/");
	struct ctl_kv c;
	int64_t mod, id, ttl = 0;
	char *before, *now;
	size_t i;

	CHECK(s);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *name = modes[i];
		char *key = util_fmt("/t/tl/%s", name);

		tap_diag("the grant's answer lost: %s", name);
		CHECK(ctl_put(key, "v"));
		mod = ctl_mod(key);
		CHECK((before = ctl_lease_list()));
		CHECK_RC(tl_set(px, 8000, modes[i], NULL, name, mod, &out, &st,
				&err), STORE_OK);
		/* the grant twice, then the one put */
		CHECK(st.requests[STORE_REQ_LEASE] == 2);
		CHECK(st.requests[STORE_REQ_WRITE] == 1);
		CHECK(out.lease > 0 && out.mod_revision == mod + 1);
		CHECK(ctl_get(key, &c) == 1);
		CHECK(c.lease == out.lease && c.mod_revision == mod + 1);
		CHECK(util_mem_is(c.value, c.value_len, S("v")));
		ctl_kv_release(&c);
		/* one lease more, the key's */
		CHECK((now = ctl_lease_list()));
		CHECK(ctl_leases_new(before, now, &id) == 1 && id == out.lease);
		CHECK_RC(store_key_ttl(s, name, strlen(name), out.lease, &ttl,
				       &err), STORE_OK);
		CHECK(ttl > 580 && ttl <= 600);
		store_kv_release(&out);
		free(before);
		free(now);
		free(key);
	}
	store_free(s);
	return true;
}

static bool test_ttl_grant_lost(void)
{
	return with_proxy(tl_lost_cases);
}

/*
 * A grant whose answer was lost, where etcd can then no longer be
 * reached: the proxy between the store and etcd goes with the answer,
 * and the grant sent again finds no way through for twice the request
 * timeout.  Its outcome is unknown: STORE_EUNKNOWN, and nothing was put.
 * The lease was granted (etcd got the request): it holds no key and runs
 * out by itself.
 */
static bool test_ttl_grant_unreachable(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct store_stats st;
	struct util_proxy px, next;
	struct store *s = ctl_store_open("/t/tl/");
	struct ctl_kv c;
	char *cmd, *before, *now;
	int64_t mod, id, ttl = 0;
	int rc;

	CHECK(s);
	CHECK(ctl_put("/t/tl/gone", "v"));
	mod = ctl_mod("/t/tl/gone");
	CHECK((before = ctl_lease_list()));
	/* the store, the proxy that loses, the one killed, etcd */
	CHECK(util_proxy_start(&next, ctl_endpoint, 0));
	if (!util_proxy_start(&px, next.url, 0)) {
		util_proxy_stop(&next);
		return false;
	}
	cmd = util_fmt("kill -KILL %ld", (long)next.pid);
	rc = tl_set(&px, 2000, "lose", cmd, "gone", mod, &out, &st, &err);
	free(cmd);
	util_proxy_stop(&px);
	util_proxy_stop(&next);
	CHECK_RC(rc, STORE_EUNKNOWN);
	CHECK(strstr(err.msg, "may have been applied"));
	tap_diag("%s", err.msg);
	/* sent again, and nothing put */
	CHECK(st.requests[STORE_REQ_LEASE] >= 2);
	CHECK(st.requests[STORE_REQ_WRITE] == 0);
	CHECK(ctl_get("/t/tl/gone", &c) == 1);
	CHECK(c.lease == 0 && c.mod_revision == mod);
	ctl_kv_release(&c);
	/* the lease etcd granted, alone: it runs out */
	CHECK((now = ctl_lease_list()));
	CHECK(ctl_leases_new(before, now, &id) == 1);
	CHECK_RC(store_key_ttl(s, S("gone"), id, &ttl, &err), STORE_OK);
	CHECK(ttl > 500 && ttl <= 600);
	free(before);
	free(now);
	store_free(s);
	return true;
}

int main(void)
{
	if (!ctl_setup())
		return 1;
	TAP_RUN(test_ttl);
	TAP_RUN(test_history);
	TAP_RUN(test_past);
	TAP_RUN(test_move_keys);
	TAP_RUN(test_move_guard);
	TAP_RUN(test_move_lost);
	TAP_RUN(test_move_lost_witness);
	TAP_RUN(test_ttl_grant_lost);
	TAP_RUN(test_ttl_grant_unreachable);
	return tap_done(0);
}
