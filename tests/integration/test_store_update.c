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
 * What it cannot test: a compare-and-swap whose answer is lost
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

/* ---- guaranteed_update ---- */

struct upd {
	int calls;
	/* the call that changes the key first: 1, or -1 for every call */
	int change_on;
	const char *full_key;	/* for etcdctl */
	int fail_with;		/* returned from try_update when not 0 */
	bool same;		/* return the current value unchanged */
	int64_t lease;		/* to return */
	int max_calls;		/* the case's own bound (0: none) */
	char seen[8][64];	/* the values try_update was called with */
	bool seen_absent[8];
};

static int upd_fn(void *arg, const struct store_kv *cur,
		  struct store_update *out)
{
	struct upd *u = arg;
	int n = u->calls++;
	char *v;

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
		char val[32];

		snprintf(val, sizeof(val), "other-%d", n + 1);
		if (!ctl_put(u->full_key, val))
			return STORE_EINTERNAL;
	}
	if (u->fail_with)
		return u->fail_with;
	out->lease = u->lease;
	if (u->same) {
		out->value = util_xmemdup(cur ? cur->value : "",
					  cur ? cur->value_len : 0);
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
	struct store *s = ctl_store_open("/t/upd/");

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
	struct store *s = ctl_store_open("/t/updr/");

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

/*
 * The key changes under every attempt: ECONFLICT after the bound.  Past
 * twice the bound try_update stops the update itself, so that a store
 * that retried for ever fails here within seconds.
 */
static bool test_update_conflict_exhausted(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = "/t/upde/",
		.max_update_retries = 3,
	};
	struct store_error err = { 0 };
	struct upd u = {
		.full_key = "/t/upde/k", .change_on = -1, .lease = -1,
		.max_calls = 2 * 3,
	};
	struct store *s = util_store_open(&cfg);
	char last[32];
	int rc;

	CHECK(s);
	CHECK(ctl_put("/t/upde/k", "v0"));
	util_watchdog_arm(60000, "test_update_conflict_exhausted", NULL, 0);
	rc = store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn, &u,
				     NULL, &err);
	util_watchdog_disarm();
	tap_diag("try_update ran %d times with max_update_retries 3", u.calls);
	if (u.calls > u.max_calls)
		tap_diag("the update went on past max_update_retries");
	CHECK_RC(rc, STORE_ECONFLICT);
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
	struct store *s = ctl_store_open("/t/updn/");
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
	struct upd u = { .full_key = "/t/lease/k", .same = true, .lease = -1 };
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
	u = (struct upd){ .full_key = "/t/lease/k", .lease = -1 };
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, NULL, &err), STORE_OK);
	CHECK(ctl_get("/t/lease/k", &c) == 1);
	CHECK(c.lease == id);
	CHECK(util_mem_is(c.value, c.value_len, S("leased+u")));
	ctl_kv_release(&c);

	/* the same value without the lease is a change: written, lease gone */
	u = (struct upd){ .full_key = "/t/lease/k", .same = true, .lease = 0 };
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL, upd_fn,
					 &u, NULL, &err), STORE_OK);
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
		.endpoints = ctl_endpoint,
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
	if (!ctl_setup())
		return 1;
	TAP_RUN(test_update_basic);
	TAP_RUN(test_update_conflict_retried);
	TAP_RUN(test_update_conflict_exhausted);
	TAP_RUN(test_update_noop);
	TAP_RUN(test_update_preconditions);
	TAP_RUN(test_concurrent_updates);
	TAP_RUN(test_move);
	TAP_RUN(test_lease);
	return tap_done(0);
}
