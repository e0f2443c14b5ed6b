/*
 * cases.c - the store cases both backends run alike (see cases.h)
 *
 * Each case works under a key prefix of its own and checks what etcd
 * holds through the witness, never through the store under test.  A case
 * that was written twice before (once a backend) runs here once a
 * backend, with the union of the checks both versions made.
 *
 * What it cannot do: cases whose steps differ by backend (directories,
 * leases, compaction, the v2 history): they stay in their backend's file.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "store.h"
#include "tap.h"
#include "util.h"

/* The witness of the cases being run (one backend a program). */
static const struct witness *w;

/* ---- try_update ---- */

int cases_upd_fn(void *arg, const struct store_kv *cur,
		 struct store_update *out)
{
	struct cases_upd *u = arg;
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

		/* someone else writes first: this attempt must lose */
		snprintf(val, sizeof(val), "other-%d", n + 1);
		if (u->w->put(u->full_key, val) <= 0)
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

/* ---- delete, revision, members ---- */

static bool test_delete(void)
{
	struct store_error err = { 0 };
	struct store_kv prev = { 0 };
	struct store_preconditions pre = { 0 };
	struct store *s = w->open("/t/del/");
	int64_t mod, rev = 0;

	CHECK(s);
	mod = w->put("/t/del/a", "va");
	CHECK(mod > 0);
	CHECK_RC(store_delete(s, S("a"), NULL, &prev, &rev, &err), STORE_OK);
	CHECK(rev > mod);
	CHECK(util_kv_is(&prev, S("a"), S("va")));
	CHECK(prev.mod_revision == mod);
	store_kv_release(&prev);
	CHECK(w->lacks("/t/del/a"));
	CHECK(w->revision() == rev);

	CHECK_RC(store_delete(s, S("a"), NULL, &prev, NULL, &err),
		 STORE_ENOTFOUND);
	CHECK(prev.key == NULL);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("never"), NULL, &prev, NULL, &err),
		 STORE_ENOTFOUND);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("never/below"), NULL, NULL, NULL, &err),
		 STORE_ENOTFOUND);

	/* the right preconditions, both of them: deleted */
	mod = w->put("/t/del/b", "vb");
	CHECK(mod > 0);
	pre.mod_revision = mod;
	pre.create_revision = mod;
	CHECK_RC(store_delete(s, S("b"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(w->lacks("/t/del/b"));
	store_free(s);
	return true;
}

static bool test_revision(void)
{
	struct store_error err = { 0 };
	struct store *s = w->open("/t/rev/");
	int64_t r0 = 0, r1 = 0;

	CHECK(s);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	CHECK(r0 > 0);
	CHECK(r0 == w->revision());
	CHECK(w->put("/t/rev/x", "1") == r0 + 1);
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 1);
	/* a write outside the prefix moves the revision all the same */
	CHECK(w->put("/t/outside-rev", "1") == r0 + 2);
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 2);
	/*
	 * someone made a key of the name v2's revision probe writes below
	 * (helper/etcd2.c): the probe looks below it; on v3 it is a key
	 */
	CHECK(w->put("/t/rev/_etcdfs_revision_probe", "in the way") ==
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
	struct store *s = w->open(NULL);
	size_t n = 0;
	uint64_t id;

	CHECK(s);
	CHECK_RC(store_members(s, &m, &n, &err), STORE_OK);
	CHECK(n == 1);
	CHECK(m[0].name && strcmp(m[0].name, "test") == 0);
	CHECK(m[0].n_client_urls == 1);
	CHECK(strcmp(m[0].client_urls[0], w->endpoint) == 0);
	id = w->member_id();
	CHECK(id != 0);
	CHECK(m[0].id == id);
	store_members_free(m, n);
	store_free(s);
	return true;
}

#define CASE(fn) { #fn, fn }

const struct cases_case *cases_kv(const struct witness *witness)
{
	static const struct cases_case t[] = {
		CASE(test_delete),
		CASE(test_revision),
		CASE(test_members),
		{ NULL, NULL },
	};

	w = witness;
	return t;
}

/* ---- guaranteed_update ---- */

/* The key changes under the first attempt; the second one wins. */
static bool test_update_conflict_retried(void)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct cases_upd u = {
		.w = w, .full_key = "/t/updr/k", .change_on = 1, .lease = -1,
	};
	struct store *s = w->open("/t/updr/");

	CHECK(s);
	CHECK(w->put("/t/updr/k", "v0") > 0);
	CHECK_RC(store_guaranteed_update(s, S("k"), false, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 2);
	CHECK(strcmp(u.seen[0], "v0") == 0);
	CHECK(strcmp(u.seen[1], "other-1") == 0);
	CHECK(util_kv_is(&out, S("k"), S("other-1+u")));
	CHECK(w->has("/t/updr/k", "other-1+u"));
	CHECK(w->mod("/t/updr/k") == out.mod_revision);
	store_kv_release(&out);

	/* created under a create attempt: the retry sees it */
	u = (struct cases_upd){
		.w = w, .full_key = "/t/updr/fresh", .change_on = 1,
		.lease = -1,
	};
	CHECK_RC(store_guaranteed_update(s, S("fresh"), true, NULL, NULL,
					 cases_upd_fn, &u, &out, &err),
		 STORE_OK);
	CHECK(u.calls == 2 && u.seen_absent[0] && !u.seen_absent[1]);
	CHECK(util_kv_is(&out, S("fresh"), S("other-1+u")));
	store_kv_release(&out);
	CHECK(w->has("/t/updr/fresh", "other-1+u"));
	store_free(s);
	return true;
}

/*
 * The key changes under every attempt: ECONFLICT after the bound.  Past
 * twice the bound try_update stops the update itself, and a store stuck
 * inside one call is ended by the watchdog, so that a store that retried
 * for ever fails here within seconds.
 */
static bool test_update_conflict_exhausted(void)
{
	struct store_config cfg = {
		.api = w->api,
		.endpoints = w->endpoint,
		.prefix = "/t/upde/",
		.max_update_retries = 3,
	};
	struct store_error err = { 0 };
	struct cases_upd u = {
		.w = w, .full_key = "/t/upde/k", .change_on = -1, .lease = -1,
		.max_calls = 2 * 3,
	};
	struct store *s = util_store_open(&cfg);
	char last[32];
	int rc;

	CHECK(s);
	CHECK(w->put("/t/upde/k", "v0") > 0);
	util_watchdog_arm(60000, "test_update_conflict_exhausted", NULL, 0);
	rc = store_guaranteed_update(s, S("k"), false, NULL, NULL,
				     cases_upd_fn, &u, NULL, &err);
	util_watchdog_disarm();
	tap_diag("try_update ran %d times with max_update_retries 3", u.calls);
	if (u.calls > u.max_calls)
		tap_diag("the update went on past max_update_retries");
	CHECK_RC(rc, STORE_ECONFLICT);
	CHECK(u.calls >= w->exhausted_calls_min &&
	      u.calls <= w->exhausted_calls_max);
	/* etcd keeps the other writer's last value, not ours */
	snprintf(last, sizeof(last), "other-%d", u.calls);
	CHECK(w->has("/t/upde/k", last));
	store_free(s);
	return true;
}

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
					    &err) == STORE_OK) {
			r->done++;
		} else {
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
		.api = w->api,
		.endpoints = w->endpoint,
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
	CHECK(w->has("/t/race/counter", want));
	store_free(s);
	return true;
}

const struct cases_case *cases_update(const struct witness *witness)
{
	static const struct cases_case t[] = {
		CASE(test_update_conflict_retried),
		CASE(test_update_conflict_exhausted),
		CASE(test_concurrent_updates),
		{ NULL, NULL },
	};

	w = witness;
	return t;
}

/* ---- watch ---- */

/*
 * A prefix watch from r0 + 1 sees puts, an overwrite, a delete and the
 * store's own create, in order, with their revisions and prev_kv; not a
 * write outside its prefix.
 */
static bool test_watch_order(void)
{
	struct store_error err = { 0 };
	struct store_watch *wt = NULL;
	struct util_evlog log;
	struct store *s = w->open("/t/w1/");
	int64_t r0 = 0;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&log);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	if (w->watch_history_early) {
		/* before the watch starts: it begins at r0 + 1 all the same */
		CHECK(w->put("/t/w1/a", "1") == r0 + 1);
		CHECK(w->put("/t/w1/b", "2") == r0 + 2);
	}
	CHECK_RC(store_watch(s, "", 0, true, r0 + 1, util_on_event, &log, &wt,
			     &err), STORE_OK);
	if (!w->watch_history_early) {
		CHECK(w->put("/t/w1/a", "1") == r0 + 1);
		CHECK(w->put("/t/w1/b", "2") == r0 + 2);
	}
	CHECK(w->put("/t/w0-outside", "x") == r0 + 3);
	CHECK(w->put("/t/w1/a", "3") == r0 + 4);
	CHECK(w->del("/t/w1/b"));
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
		/* revisions: consecutive but for the write outside */
		ok = log.evs[0].mod_revision == r0 + 1 &&
		     log.evs[1].mod_revision == r0 + 2 &&
		     log.evs[2].mod_revision == r0 + 4 &&
		     log.evs[3].mod_revision == r0 + 5 &&
		     log.evs[4].mod_revision == r0 + 6 &&
		     (!w->ev_revision || log.evs[4].revision == r0 + 6);
		if (!ok)
			tap_diag("event revisions off from %" PRId64, r0);
	}
	if (ok) {
		/* prev_kv on the overwrite and the delete */
		ok = log.evs[2].prev_value &&
		     util_mem_is(log.evs[2].prev_value, log.evs[2].prev_len,
				 S("1")) &&
		     log.evs[3].prev_value &&
		     util_mem_is(log.evs[3].prev_value, log.evs[3].prev_len,
				 S("2")) &&
		     (!w->ev_versions ||
		      (log.evs[2].version == 2 &&
		       log.evs[2].create_revision == r0 + 1));
		if (!ok)
			tap_diag("prev_kv or version missing");
	}
	pthread_mutex_unlock(&log.lock);
out:
	store_watch_stop(wt);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

const struct cases_case *cases_watch(const struct witness *witness)
{
	static const struct cases_case t[] = {
		CASE(test_watch_order),
		{ NULL, NULL },
	};

	w = witness;
	return t;
}
