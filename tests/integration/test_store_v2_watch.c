/*
 * test_store_v2_watch.c - the store (helper/store.h) with api =
 * STORE_API_V2, against a real etcd serving the v2 keys API: watches: from
 * an index, one key from now, a directory removed, from before the
 * 1,000-event history, and a watch whose connection is cut resuming where
 * it was
 *
 * Runs under tests/lib/with-etcd with WITH_ETCD_ARGS=--enable-v2=true,
 * which gives it a private etcd in ETCDFS_TEST_ENDPOINTS and a scratch dir
 * in ETCDFS_TEST_DIR.  Every case works under a key prefix of its own and
 * cross-checks what etcd holds with a witness that is not the code under
 * test (tests/integration/v2keys.c).
 *
 * What it cannot test: a watch across a member's loss.
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

/* ---- watch ---- */

/* One key, not a prefix, from now: what is written after the call. */
static bool test_watch_one_key_from_now(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = v2keys_store_open("/t/w3/");
	bool ok;

	CHECK(s);
	util_evlog_init(&log);
	CHECK(v2keys_put("/t/w3/k", "before") > 0);
	CHECK_RC(
	    store_watch(s, S("k"), false, 0, util_on_event, &log, &w, &err),
	    STORE_OK);
	/* "from now" is from the index before the call returned */
	CHECK(v2keys_put("/t/w3/kk", "not me") > 0);
	CHECK(v2keys_put("/t/w3/k", "me") > 0);
	ok = util_evlog_wait(&log, 1, 10000) == 1;
	util_sleep_ms(300);
	pthread_mutex_lock(&log.lock);
	ok = ok && log.n == 1 &&
	     util_ev_is(&log.evs[0], STORE_EV_PUT, S("k"), S("me")) &&
	     log.evs[0].prev_value &&
	     util_mem_is(log.evs[0].prev_value, log.evs[0].prev_len,
			 S("before"));
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
	struct store *s = v2keys_store_open("/t/w5/");
	int64_t del;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&lp);
	util_evlog_init(&lk);
	CHECK(v2keys_put("/t/w5/d/x", "1") > 0);
	CHECK(v2keys_put("/t/w5/d/sub/y", "2") > 0);
	if (store_watch(s, "", 0, true, 0, util_on_event, &lp, &wp, &err) ||
	    store_watch(s, S("d/sub/y"), false, 0, util_on_event, &lk, &wk,
			&err)) {
		tap_diag("store_watch: %s", err.msg);
		goto out;
	}
	if (!v2keys_do("DELETE", "/t/w5/d", "dir=true&recursive=true"))
		goto out;
	del = v2keys_index();
	if (util_evlog_wait(&lp, 1, 10000) < 1 ||
	    util_evlog_wait(&lk, 1, 10000) < 1) {
		tap_diag("no event for the removed directory");
		goto out;
	}
	/* the prefix watch is over: this write is not reported */
	if (!v2keys_put("/t/w5/after", "x"))
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
	struct store *s = v2keys_store_open("/t/w4/");
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
	idx = v2keys_index();
	start = idx - 1000 + 1;
	if (store_watch(s, "", 0, true, 1, util_on_event, &log, &w, &err)) {
		tap_diag("store_watch: %s", err.msg);
		goto out;
	}
	if (util_evlog_wait(&log, 1, 10000) < 1) {
		tap_diag("no event from a cleared index");
		goto out;
	}
	if (!v2keys_put("/t/w4/after", "x"))
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
	if (ok && store_watch(s, "", 0, true, start + 1, util_on_event, &log,
			      &w, &err) == STORE_OK) {
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
	struct util_proxy px = { .in = -1, .out = -1 };
	struct util_evlog log;
	struct store *s = NULL;
	size_t errors = 0, puts = 0, i;
	bool ok = false;

	util_evlog_init(&log);
	if (!util_proxy_start(&px, v2keys_endpoint, 0))
		goto out;
	cfg.endpoints = px.url;
	s = util_store_open(&cfg);
	if (!s ||
	    store_watch(s, "", 0, true, 0, util_on_event, &log, &w, &err)) {
		tap_diag("store_watch: %s", err.msg);
		goto out;
	}
	if (!v2keys_put("/t/w6/a", "1") || util_evlog_wait(&log, 1, 10000) < 1)
		goto out;
	util_proxy_stop(&px);
	if (!v2keys_put("/t/w6/b", "2") || !v2keys_put("/t/w6/c", "3"))
		goto out;
	/* the watch notices: an error, retried with back-off */
	if (util_evlog_wait(&log, 2, 10000) < 2)
		goto out;
	if (!util_proxy_start(&px, v2keys_endpoint, px.port))
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
			     util_ev_is(&log.evs[i], STORE_EV_PUT, &keys[puts],
					1, &values[puts], 1);
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
	util_proxy_stop(&px);
	util_evlog_release(&log);
	return ok;
}

int main(void)
{
	if (!v2keys_setup())
		return 1;
	CASES_RUN(cases_watch(&witness_v2));
	TAP_RUN(test_watch_one_key_from_now);
	TAP_RUN(test_watch_directory_removed);
	TAP_RUN(test_watch_cleared);
	TAP_RUN(test_watch_resumes);
	return tap_done(0);
}
