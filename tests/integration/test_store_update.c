/*
 * test_store_update.c - the store (helper/store.h) against a real etcd: the
 * guaranteed update (read, try_update, compare-and-swap, retry within its
 * bound), its preconditions and leases, eight threads incrementing one
 * counter, and the rename (one transaction, its preconditions)
 *
 * Runs under tests/lib/with-etcd, which gives it a private etcd in
 * ETCDFS_TEST_ENDPOINTS and a scratch dir in ETCDFS_TEST_DIR.  Every case
 * works under a key prefix of its own and cross-checks what etcd holds with
 * etcdctl (tests/integration/ctl.c), never with the store under test.
 *
 * A write whose connection is reset after it went out goes through
 * tests/lib/tcp_proxy.py, which passes it to etcd, drops etcd's answer and
 * resets the connection.
 *
 * What it cannot test: a leader lost while a compare-and-swap is out
 * (test_leader.c), the etcd2 backend (test_store_v2.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"
#include "cases.h"

/* ---- guaranteed_update ---- */

static bool test_update_basic(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct cases_upd u = {
		.w = &witness_v3, .full_key = "/t/upd/a", .lease = -1,
	};
	struct store *s = ctl_store_open("/t/upd/");

	CHECK(s);
	CHECK(ctl_put("/t/upd/a", "v0"));
	CHECK_RC(store_guaranteed_update(s, S("a"), false, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 1);
	CHECK(strcmp(u.seen[0], "v0") == 0);
	CHECK(util_kv_is(&out, S("a"), S("v0+u")));
	CHECK(out.version == 2);
	CHECK(ctl_has("/t/upd/a", "v0+u"));
	CHECK(ctl_mod("/t/upd/a") == out.mod_revision);
	store_kv_release(&out);

	/* absent and not to be created: try_update is not even asked */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/upd/b", .lease = -1,
	};
	CHECK_RC(store_guaranteed_update(s, S("b"), false, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_ENOTFOUND);
	CHECK(u.calls == 0);
	CHECK(ctl_lacks("/t/upd/b"));

	/* absent and allowed: try_update sees NULL and creates it */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/upd/b", .lease = 0,
	};
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("b"), true, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 1 && u.seen_absent[0]);
	CHECK(util_kv_is(&out, S("b"), S("new+u")));
	CHECK(out.version == 1);
	store_kv_release(&out);
	CHECK(ctl_has("/t/upd/b", "new+u"));

	/* try_update's error ends it and nothing is written */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/upd/a",
		.fail_with = STORE_EINVAL,
	};
	int64_t mod = ctl_mod("/t/upd/a");
	CHECK_RC(store_guaranteed_update(s, S("a"), false, NULL, NULL,
					 cases_upd_fn, &u, NULL, &err),
		 STORE_EINVAL);
	CHECK(u.calls == 1);
	CHECK(ctl_mod("/t/upd/a") == mod);
	store_free(s);
	return true;
}

/* An update that changes nothing writes nothing. */
static bool test_update_noop(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct cases_upd u = {
		.w = &witness_v3, .full_key = "/t/updn/k",
		.same = true, .lease = -1,
	};
	struct store *s = ctl_store_open("/t/updn/");
	int64_t mod, rev0, rev1;

	CHECK(s);
	CHECK(ctl_put("/t/updn/k", "same"));
	mod = ctl_mod("/t/updn/k");
	CHECK_RC(store_revision(s, &rev0, &err), STORE_OK);
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 1);
	CHECK(util_kv_is(&out, S("k"), S("same")));
	CHECK(out.mod_revision == mod);
	store_kv_release(&out);
	CHECK(ctl_mod("/t/updn/k") == mod);

	/* the same lease, given explicitly, is no change either */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/updn/k",
		.same = true, .lease = 0,
	};
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL,
					 cases_upd_fn, &u, NULL, &err),
		 STORE_OK);
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
	struct cases_upd u = {
		.w = &witness_v3, .full_key = "/t/updp/k", .lease = -1,
	};
	struct store *s = ctl_store_open("/t/updp/");
	int64_t old, now;

	CHECK(s);
	CHECK(ctl_put("/t/updp/k", "v0"));
	old = ctl_mod("/t/updp/k");
	CHECK_RC(store_get(s, S("k"), 0, &sugg, &err), STORE_OK);
	CHECK(ctl_put("/t/updp/k", "v1"));
	now = ctl_mod("/t/updp/k");

	/* a stale precondition is not retried: it is the caller's */
	pre.mod_revision = old;
	CHECK_RC(store_guaranteed_update(s, S("k"), false, &pre, NULL,
					 cases_upd_fn, &u, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(err.revision == now);
	CHECK(u.calls == 0);
	CHECK(ctl_has("/t/updp/k", "v1"));
	CHECK(ctl_mod("/t/updp/k") == now);

	/* "must not exist" on a key that exists */
	pre.mod_revision = STORE_REV_ABSENT;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("k"), true, &pre, NULL,
					 cases_upd_fn, &u, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_mod("/t/updp/k") == now);

	/* a stale suggestion is caught by the transaction and retried */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/updp/k", .lease = -1,
	};
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, &sugg,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 2);
	CHECK(strcmp(u.seen[0], "v0") == 0);
	CHECK(strcmp(u.seen[1], "v1") == 0);
	CHECK(util_kv_is(&out, S("k"), S("v1+u")));
	CHECK(ctl_has("/t/updp/k", "v1+u"));
	store_kv_release(&sugg);

	/* a current suggestion and a matching precondition: one attempt */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/updp/k", .lease = -1,
	};
	pre.mod_revision = out.mod_revision;
	CHECK_RC(store_guaranteed_update(s, S("k"), false, &pre, &out,
					 cases_upd_fn, &u, NULL, &err),
		 STORE_OK);
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
	struct store *s = ctl_store_open("/t/mv/");
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
	struct cases_upd u = {
		.w = &witness_v3, .full_key = "/t/lease/k",
		.same = true, .lease = -1,
	};
	struct store *s = ctl_store_open("/t/lease/");
	struct ctl_kv c;
	int64_t id = 0, short_id = 0;
	long long t0;
	char *out;
	int rc;

	CHECK(s);
	CHECK_RC(store_lease_grant(s, 60, &id, &err), STORE_OK);
	CHECK(id > 0);
	out =
	    util_sh_out("%s lease timetolive %" PRIx64, ctl_cmd, (uint64_t)id);
	CHECK(out && strstr(out, "granted with TTL(60s)"));
	free(out);

	CHECK_RC(store_create(s, S("k"), S("leased"), id, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(kv.lease == id);
	store_kv_release(&kv);
	CHECK(ctl_get("/t/lease/k", &c) == 1);
	CHECK(c.lease == id);
	ctl_kv_release(&c);

	/* -1 keeps the lease, even when the value changes */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/lease/k", .lease = -1,
	};
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL,
					 cases_upd_fn, &u, NULL, &err),
		 STORE_OK);
	CHECK(ctl_get("/t/lease/k", &c) == 1);
	CHECK(c.lease == id);
	CHECK(util_mem_is(c.value, c.value_len, S("leased+u")));
	ctl_kv_release(&c);

	/* the same value without the lease is a change: written, lease gone */
	u = (struct cases_upd){
		.w = &witness_v3, .full_key = "/t/lease/k",
		.same = true, .lease = 0,
	};
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL,
					 cases_upd_fn, &u, NULL, &err),
		 STORE_OK);
	CHECK(ctl_get("/t/lease/k", &c) == 1);
	CHECK(c.lease == 0);
	CHECK(c.version == 3);
	ctl_kv_release(&c);

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

/* ---- a connection reset after the write went out ---- */

/*
 * A store of /t/reset/ through @px, which already made the connection the
 * next call goes on: libcurl sends a call again by itself, on a fresh
 * connection, only when a connection it reused is reset.
 */
static struct store *reset_store(const struct util_proxy *px)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = px->url,
		.prefix = "/t/reset/",
		.request_timeout_ms = 8000,
	};
	struct store_error err = { 0 };
	struct store *s = util_store_open(&cfg);
	int64_t rev;

	if (s && store_revision(s, &rev, &err) != STORE_OK) {
		tap_diag("revision through the proxy: %s", err.msg);
		store_free(s);
		s = NULL;
	}
	return s;
}

/*
 * A write whose connection is reset after etcd got it is not sent again
 * behind the store's back (libcurl would, on a fresh connection; over h2c
 * as an HTTP/1.1 upgrade that etcd answers 404, which reads as "not sent",
 * and the transport would send it once more): the second copy would find
 * the first one's change, and an increment would be applied twice, a
 * create say EEXISTS.  It is settled, and applied once.
 */
static bool reset_cases(struct util_proxy *px)
{
	struct store_error err = { 0 };
	struct store_stats st;
	struct store_kv cur = { 0 };
	struct store *s;
	bool lost;
	int rc;

	/* the update's suggestion spares its read: the txn is lost */
	CHECK(ctl_put("/t/reset/n", "5"));
	s = reset_store(px);
	CHECK(s);
	rc = store_get(s, S("n"), 0, &cur, &err);
	if (rc == 0 && !util_proxy_lose_reset(px, "lose", NULL))
		rc = STORE_EINTERNAL;
	if (rc == 0)
		rc = store_guaranteed_update(s, S("n"), false, NULL, &cur,
					     util_incr_fn, NULL, NULL, &err);
	lost = util_proxy_lost(px);
	store_stats(s, &st);
	store_kv_release(&cur);
	store_free(s);
	CHECK(lost);
	CHECK_RC(rc, STORE_OK);
	CHECK(ctl_has("/t/reset/n", "6"));
	CHECK(st.requests[STORE_REQ_WRITE] == 1);

	s = reset_store(px);
	CHECK(s);
	rc = util_proxy_lose_reset(px, "lose", NULL) ? STORE_OK :
	     STORE_EINTERNAL;
	if (rc == 0)
		rc = store_create(s, S("c"), S("made"), 0, NULL, &err);
	lost = util_proxy_lost(px);
	store_stats(s, &st);
	store_free(s);
	CHECK(lost);
	CHECK_RC(rc, STORE_OK);
	CHECK(ctl_has("/t/reset/c", "made"));
	CHECK(st.requests[STORE_REQ_WRITE] == 1);
	return true;
}

static bool test_write_reset(void)
{
	struct util_proxy px;
	bool ok;

	CHECK(util_proxy_start(&px, ctl_endpoint, 0));
	ok = reset_cases(&px);
	util_proxy_stop(&px);
	return ok;
}

int main(void)
{
	if (!ctl_setup())
		return 1;
	TAP_RUN(test_update_basic);
	TAP_RUN(test_update_noop);
	TAP_RUN(test_update_preconditions);
	TAP_RUN(test_move);
	TAP_RUN(test_lease);
	TAP_RUN(test_write_reset);
	CASES_RUN(cases_update(&witness_v3));
	return tap_done(0);
}
