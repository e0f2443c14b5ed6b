/*
 * test_store_watch.c - the store (helper/store.h) against a real etcd:
 * watches: the order of events, history from a past revision, one key,
 * prefixes, compaction
 *
 * Runs under tests/lib/with-etcd, which gives it a private etcd in
 * ETCDFS_TEST_ENDPOINTS and a scratch dir in ETCDFS_TEST_DIR.  Every case
 * works under a key prefix of its own and cross-checks what etcd holds with
 * etcdctl (tests/integration/ctl.c), never with the store under test.
 *
 * What it cannot test: a watch across a member's loss, the etcd2
 * backend (test_store_v2_watch.c).
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

/* ---- watch ---- */

static bool test_watch_order(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = ctl_store_open("/t/w1/");
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
		     util_mem_is(log.evs[2].prev_value, log.evs[2].prev_len,
				 S("1")) &&
		     log.evs[3].prev_value &&
		     util_mem_is(log.evs[3].prev_value, log.evs[3].prev_len,
				 S("2")) &&
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
	struct store *s = ctl_store_open("/t/w2/");
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
	struct store *s = ctl_store_open("/t/w3/");
	bool ok = false;
	int i;

	CHECK(s);
	util_evlog_init(&log);
	CHECK_RC(
	    store_watch(s, S("k"), false, 0, util_on_event, &log, &w, &err),
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
	struct store *s = ctl_store_open("/t/w4/");
	int64_t first, compact;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&log);
	CHECK(ctl_put("/t/w4/a", "1"));
	first = ctl_mod("/t/w4/a");
	CHECK(ctl_put("/t/w4/a", "2"));
	CHECK(ctl_put("/t/w4/a", "3"));
	compact = ctl_mod("/t/w4/a");
	CHECK(util_sh("%s compact %" PRId64 " >/dev/null", ctl_cmd,
		      compact) == 0);

	CHECK_RC(
	    store_watch(s, "", 0, true, first, util_on_event, &log, &w, &err),
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
		ok = ok &&
		     util_ev_is(&log.evs[0], STORE_EV_PUT, S("a"), S("3")) &&
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
	struct store *s = ctl_store_open("/t/w5/");
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

int main(void)
{
	if (!ctl_setup())
		return 1;
	TAP_RUN(test_watch_order);
	TAP_RUN(test_watch_from_past);
	TAP_RUN(test_watch_one_key_from_now);
	TAP_RUN(test_watch_prefix_isolation);
	TAP_RUN(test_watch_compacted);
	return tap_done(0);
}
