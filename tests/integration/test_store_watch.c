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
 * One case restarts an etcd of its own on the same port and data, and
 * checks that the watch follows it again.
 *
 * What it cannot test: a watch across a member's loss, the etcd2
 * backend (test_store_v2_watch.c).
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
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"
#include "cases.h"

/* ---- watch ---- */

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

/* ---- progress on request ---- */

struct progress_log {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int64_t rev;		/* the newest progress revision */
};

static void on_progress(void *arg, const struct store_event *ev)
{
	struct progress_log *p = arg;

	if (ev->type != STORE_EV_PROGRESS)
		return;
	pthread_mutex_lock(&p->lock);
	if (ev->revision > p->rev)
		p->rev = ev->revision;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/*
 * store_watch_progress: a change outside the prefix brings no event, but
 * a progress event at its revision or later comes soon after asking (the
 * watch's own progress requests come only after 10 s of quiet).
 */
static bool test_watch_progress_request(void)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct progress_log p = { .rev = 0 };
	struct store *s = ctl_store_open("/t/w7/");
	long long until;
	int64_t r0 = 0, r1 = 0;
	bool ok;

	CHECK(s);
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	CHECK_RC(store_watch(s, "", 0, true, r0 + 1, on_progress, &p, &w,
			     &err), STORE_OK);
	CHECK(ctl_put("/t/w7-other/x", "1"));
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	until = util_now_ms() + 3000;
	pthread_mutex_lock(&p.lock);
	while (p.rev < r1 && util_now_ms() < until) {
		pthread_mutex_unlock(&p.lock);
		CHECK_RC(store_watch_progress(w), STORE_OK);
		util_sleep_ms(100);
		pthread_mutex_lock(&p.lock);
	}
	ok = p.rev >= r1;
	pthread_mutex_unlock(&p.lock);
	store_watch_stop(w);
	store_free(s);
	return ok;
}

/* ---- etcd restarted ---- */

/*
 * A watch whose errors wait until etcd is back: so the watch opens its
 * new stream only once the old connection is gone and etcd listens again.
 */
struct restart_log {
	struct util_evlog log;	/* the puts and deletes */
	bool back;		/* guarded by log.lock */
	size_t errors;		/* guarded by log.lock */
};

static void restart_on_event(void *arg, const struct store_event *ev)
{
	struct restart_log *r = arg;
	struct timespec until;

	if (ev->type != STORE_EV_ERROR) {
		util_on_event(&r->log, ev);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&r->log.lock);
	r->errors++;
	while (!r->back &&
	       pthread_cond_timedwait(&r->log.cond, &r->log.lock,
				      &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&r->log.lock);
}

static bool restart_put(const struct util_etcd *e, const char *key,
			const char *value)
{
	return util_sh("%s put '%s' '%s' >/dev/null", e->ctl, key, value) == 0;
}

/* The pid of @e's etcd; 0 if there is none. */
static pid_t restart_pid(const struct util_etcd *e)
{
	char path[PATH_MAX + 8], pid[32], *end;
	long n;

	snprintf(path, sizeof(path), "%s/pid", e->dir);
	if (!util_read_line(path, pid, sizeof(pid)))
		return 0;
	n = strtol(pid, &end, 10);
	return *end == 0 && n > 0 ? (pid_t)n : 0;
}

/*
 * Restarts @e's etcd on the same port and data and stops it (SIGSTOP)
 * at once: a member slow to answer the next stream's request, past
 * libcurl's one second wait for "100 Continue".  Its pid, or 0 (then
 * e->running is false if the restart failed).
 */
static pid_t restart_stopped(struct util_etcd *e)
{
	pid_t etcd_pid;

	if (util_sh("'%s/lib/etcd.sh' restart '%s'", util_tests_dir,
		    e->dir) != 0) {
		e->running = false;
		return 0;
	}
	etcd_pid = restart_pid(e);
	if (etcd_pid <= 0 || kill(etcd_pid, SIGSTOP) != 0)
		return 0;
	return etcd_pid;
}

/*
 * Another client puts @key = "2" once etcd is back: the watch of @r must
 * give it as its second event, within 8 s (the watch's own limit on a
 * stream that answers nothing is 10 s).
 */
static bool restart_sees_put(struct restart_log *r, struct util_etcd *e,
			     const char *key, const char *what)
{
	bool ok;

	CHECK(restart_put(e, key, "2"));
	if (util_evlog_wait(&r->log, 2, 8000) < 2) {
		tap_diag("%s: no event within 8 s of the put after the "
			 "restart", what);
		return false;
	}
	pthread_mutex_lock(&r->log.lock);
	ok = r->log.n == 2 && !r->log.out_of_order &&
	     util_ev_is(&r->log.evs[1], STORE_EV_PUT, S("after"), S("2"));
	pthread_mutex_unlock(&r->log.lock);
	return ok;
}

/*
 * etcd stops and starts again on the same port while a watch is open:
 * the watch's next stream must reach it and see another client's put.
 */
static bool restart_case(struct util_etcd *e)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = e->endpoint,
		.prefix = "/t/w6/",
	};
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct restart_log r = { 0 };
	struct store *s = util_store_open(&cfg);
	pid_t etcd_pid;
	bool ok = false;
	size_t errors;

	CHECK(s);
	util_evlog_init(&r.log);
	CHECK_RC(store_watch(s, "", 0, true, 0, restart_on_event, &r, &w,
			     &err), STORE_OK);
	CHECK(restart_put(e, "/t/w6/before", "1"));
	if (util_evlog_wait(&r.log, 1, 10000) < 1) {
		tap_diag("no event before the restart");
		goto out;
	}
	/*
	 * A member that is slow to answer the new stream's request once had
	 * the stream hang for good (its upload was paused when an HTTP/1
	 * answer came).
	 */
	etcd_pid = restart_stopped(e);
	if (!etcd_pid)
		goto out;
	pthread_mutex_lock(&r.log.lock);
	r.back = true;
	pthread_cond_broadcast(&r.log.cond);
	pthread_mutex_unlock(&r.log.lock);
	util_sleep_ms(1500);
	kill(etcd_pid, SIGCONT);
	if (!restart_sees_put(&r, e, "/t/w6/after", "open watch"))
		goto out;
	pthread_mutex_lock(&r.log.lock);
	errors = r.errors;
	pthread_mutex_unlock(&r.log.lock);
	ok = true;
	if (!errors) {
		tap_diag("the watch did not see etcd go away");
		ok = false;
	}
out:
	pthread_mutex_lock(&r.log.lock);
	r.back = true;
	pthread_cond_broadcast(&r.log.cond);
	pthread_mutex_unlock(&r.log.lock);
	store_watch_stop(w);
	util_evlog_release(&r.log);
	store_free(s);
	return ok;
}

/*
 * A watch that ended left its connection behind; etcd restarts, so that
 * connection is dead, and is slow to answer the next watch's request:
 * that watch must still reach it.
 */
static bool restart_case_new_watch(struct util_etcd *e)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = e->endpoint,
		.prefix = "/t/w7/",
	};
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct restart_log r = { .back = true };
	struct store *s = util_store_open(&cfg);
	int64_t rev = 0;
	pid_t etcd_pid;
	bool ok = false;

	CHECK(s);
	util_evlog_init(&r.log);
	CHECK_RC(store_watch(s, "", 0, true, 0, restart_on_event, &r, &w,
			     &err), STORE_OK);
	CHECK(restart_put(e, "/t/w7/before", "1"));
	if (util_evlog_wait(&r.log, 1, 10000) < 1) {
		tap_diag("no event from the first watch");
		goto out;
	}
	store_watch_stop(w);
	w = NULL;
	CHECK_RC(store_revision(s, &rev, &err), STORE_OK);
	etcd_pid = restart_stopped(e);
	if (!etcd_pid)
		goto out;
	if (store_watch(s, "", 0, true, rev + 1, restart_on_event, &r, &w,
			&err) != STORE_OK) {
		kill(etcd_pid, SIGCONT);
		tap_diag("no second watch: %s", err.msg);
		goto out;
	}
	util_sleep_ms(1500);
	kill(etcd_pid, SIGCONT);
	ok = restart_sees_put(&r, e, "/t/w7/after", "new watch");
out:
	store_watch_stop(w);
	util_evlog_release(&r.log);
	store_free(s);
	return ok;
}

static bool test_watch_after_restart(void)
{
	struct util_etcd e;
	bool ok;

	if (!util_etcd_start(&e, "etcd-restart", NULL, NULL)) {
		util_etcd_stop(&e);
		return false;
	}
	ok = restart_case(&e);
	ok = restart_case_new_watch(&e) && ok;
	util_etcd_stop(&e);
	return ok;
}

int main(void)
{
	if (!ctl_setup())
		return 1;
	CASES_RUN(cases_watch(&witness_v3));
	TAP_RUN(test_watch_from_past);
	TAP_RUN(test_watch_one_key_from_now);
	TAP_RUN(test_watch_prefix_isolation);
	TAP_RUN(test_watch_compacted);
	TAP_RUN(test_watch_progress_request);
	TAP_RUN(test_watch_after_restart);
	return tap_done(0);
}
