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
 * What it cannot test: the etcd2 side of store_set_ttl (tests/fs/ttl.bats
 * does, through a mount), answers lost on the way.
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

int main(void)
{
	if (!ctl_setup())
		return 1;
	TAP_RUN(test_ttl);
	TAP_RUN(test_history);
	TAP_RUN(test_past);
	TAP_RUN(test_move_keys);
	TAP_RUN(test_move_guard);
	return tap_done(0);
}
