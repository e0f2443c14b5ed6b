/*
 * test_store_grpc.c - the v3 store over gRPC against hostile servers
 *
 * Needs TESTS_DIR (no etcd).  Each case starts a server that answers every call with one kind
 * of rubbish - tests/lib/grpc-garbage-server.py for HTTP/2 (gRPC frames
 * cut short, protobuf with wrong wire types, a message over the cap, no
 * trailers, an HTTP error), tests/lib/garbage-server.py for peers that do
 * not speak HTTP/2 at all - and checks that every operation returns the
 * error it should, with a message, in bounded time, and that no write is
 * said to have an unknown outcome when the server never ran it.  A call
 * or a watch's stop that runs far past its bound fails the test at once
 * (util_watchdog_arm), not at meson's timeout.
 *
 * What it cannot test: a real etcd (test_store.c does), TLS.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"

/* A v3 store on @g, with short timeouts. */
static struct store *garbage_store(const struct util_garbage *g)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = g->url,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 1000,
		.max_reply_size = 64 * 1024,
	};
	struct store_error err = { 0 };
	struct store *s = store_new(&cfg, &err);

	if (!s)
		tap_diag("store_new: %s", err.msg);
	return s;
}

/* ---- one operation against one server ---- */

enum { OP_REVISION = 1, OP_GET = 2, OP_LIST = 4, OP_CREATE = 8 };

struct garbage_case {
	bool h2;		/* the HTTP/2 server, else the HTTP/1 one */
	const char *mode;
	unsigned ops;
	int want;		/* the error expected */
	/*
	 * The create's, if not @want (0): a write whose request went out
	 * and whose answer was lost is settled (helper/store_settle.c), and
	 * what cannot be settled is STORE_EUNKNOWN, never "not sent"
	 * (STORE_EUNREACHABLE) nor a plain timeout.  @create_also: another
	 * right answer for it (0: none).
	 */
	int want_create;
	int create_also;
	/*
	 * 1: the server may have run the call, so a write says its outcome
	 * is unknown; 0: it certainly did not, and nothing says so; -1: a
	 * request may or may not have gone out, either is right.
	 */
	int unknown;
};

#define ALL_OPS (OP_REVISION | OP_GET | OP_LIST | OP_CREATE)

static const struct garbage_case cases[] = {
	{ true, "notproto", ALL_OPS, STORE_EBADREPLY, 0, 0, 0 },
	{ true, "truncated", ALL_OPS, STORE_EBADREPLY, 0, 0, 0 },
	{ true, "shortframe", ALL_OPS, STORE_EBADREPLY, 0, 0, 0 },
	{ true, "wiretype", ALL_OPS, STORE_EBADREPLY, 0, 0, 0 },
	{ true, "badkvs", OP_GET | OP_LIST, STORE_EBADREPLY, 0, 0, 0 },
	{ true, "badrevision", OP_REVISION | OP_LIST, STORE_EBADREPLY, 0, 0,
	  0 },
	/* over max_reply_size: the cap on one message */
	{ true, "oversized", OP_REVISION | OP_GET | OP_LIST, STORE_EBADREPLY,
	  0, 0, 0 },
	{ true, "notrailers", ALL_OPS, STORE_EBADREPLY, 0, 0, 1 },
	{ true, "error500", ALL_OPS, STORE_EBADREPLY, 0, 0, 0 },
	/* the key cannot be read again either: unknown */
	{ true, "silent", OP_GET | OP_CREATE, STORE_ETIMEOUT, STORE_EUNKNOWN,
	  0, 1 },
	/* the connection reset once the call was sent */
	{ true, "drop", ALL_OPS, STORE_EUNREACHABLE, STORE_EUNKNOWN, 0, 1 },
	/* accepted, then closed: the request may have been written */
	{ true, "close", ALL_OPS, STORE_EUNREACHABLE, 0, STORE_EUNKNOWN, -1 },
	/* HTTP/1 servers and a peer that is not HTTP at all: no gRPC ran */
	{ false, "error500", ALL_OPS, STORE_EUNREACHABLE, 0, 0, 0 },
	{ false, "notjson", ALL_OPS, STORE_EUNREACHABLE, 0, 0, 0 },
	{ false, "nothttp", ALL_OPS, STORE_EUNREACHABLE, 0, 0, 0 },
};

static int garbage_run(struct store *s, unsigned op, const char **name,
		       struct store_error *err)
{
	struct store_kv kv = { 0 };
	struct store_list l = { 0 };
	int64_t rev = 0;
	int rc = STORE_OK;

	switch (op) {
	case OP_REVISION:
		*name = "revision";
		rc = store_revision(s, &rev, err);
		break;
	case OP_GET:
		*name = "get";
		rc = store_get(s, "a", 1, 0, &kv, err);
		store_kv_release(&kv);
		break;
	case OP_LIST:
		*name = "list";
		rc = store_list(s, "", 0, 0, &l, err);
		store_list_release(&l);
		break;
	case OP_CREATE:
		*name = "create";
		rc = store_create(s, "a", 1, "v", 1, 0, NULL, err);
		break;
	}
	return rc;
}

/*
 * A call's bound: the request timeout (1 s), plus connects and one retry;
 * past GARBAGE_HANG_MS it is stuck, and the watchdog ends the test.
 */
#define GARBAGE_BOUND_MS	5000
#define GARBAGE_HANG_MS		20000

static bool garbage_op(struct store *s, const struct util_garbage *g,
		       const struct garbage_case *gc, unsigned op)
{
	struct store_error err = { 0 };
	const char *name = "";
	long long t0 = util_now_ms(), took;
	int want = gc->want;
	bool said;
	int rc;

	if (op == OP_CREATE && gc->want_create)
		want = gc->want_create;
	util_watchdog_arm(GARBAGE_HANG_MS, gc->mode, &g->pid, 1);
	rc = garbage_run(s, op, &name, &err);
	util_watchdog_disarm();
	took = util_now_ms() - t0;
	tap_diag("%s %s: %s -> %s (%lld ms): %s", gc->h2 ? "h2" : "http/1",
		 gc->mode, name, store_errname(rc), took, err.msg);
	if (rc != want &&
	    !(op == OP_CREATE && gc->create_also && rc == gc->create_also)) {
		tap_diag("%s: %s returned %s, expected %s", gc->mode, name,
			 store_errname(rc), store_errname(want));
		return false;
	}
	if (err.code != rc || err.msg[0] == '\0') {
		tap_diag("%s: %s: err.code %d, empty message", gc->mode, name,
			 err.code);
		return false;
	}
	said = strstr(err.msg, "outcome unknown") ||
	       strstr(err.msg, "may have been applied");
	if ((gc->unknown == 0 && said) ||
	    (gc->unknown == 1 && op == OP_CREATE && !said)) {
		tap_diag("%s: %s: the outcome is %sknown", gc->mode, name,
			 said ? "said un" : "not said un");
		return false;
	}
	if (took > GARBAGE_BOUND_MS) {
		tap_diag("%s: %s took %lld ms", gc->mode, name, took);
		return false;
	}
	return true;
}

static bool test_garbage(const struct garbage_case *gc)
{
	struct util_garbage g;
	struct store *s;
	bool ok = true;

	if (!util_garbage_start(&g, gc->h2, gc->mode, 1u << 20))
		return false;
	s = garbage_store(&g);
	if (!s) {
		util_garbage_stop(&g);
		return false;
	}
	for (unsigned op = 1; op <= OP_CREATE; op <<= 1)
		if (gc->ops & op)
			ok = garbage_op(s, &g, gc, op) && ok;
	store_free(s);
	util_garbage_stop(&g);
	return ok;
}

/* ---- watches ---- */

struct evlog {
	pthread_mutex_t lock;
	size_t n;
	enum store_event_type first_type;
	int first_err;
};

static void on_event(void *arg, const struct store_event *ev)
{
	struct evlog *l = arg;

	pthread_mutex_lock(&l->lock);
	if (l->n++ == 0) {
		l->first_type = ev->type;
		l->first_err = ev->err;
	}
	pthread_mutex_unlock(&l->lock);
}

static size_t evlog_wait(struct evlog *l, long ms)
{
	long long end = util_now_ms() + ms;
	size_t n;

	for (;;) {
		pthread_mutex_lock(&l->lock);
		n = l->n;
		pthread_mutex_unlock(&l->lock);
		if (n || util_now_ms() >= end)
			return n;
		util_sleep_ms(20);
	}
}

/* Watches on @g; stopping must take at most 3 s. */
static bool watch_on(const struct util_garbage *g, struct evlog *log,
		     long wait_ms)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct store *s = garbage_store(g);
	long long t0;
	bool ok = true;

	if (!s)
		return false;
	if (store_watch(s, "", 0, true, 1, on_event, log, &w, &err) < 0) {
		tap_diag("store_watch: %s", err.msg);
		store_free(s);
		return false;
	}
	evlog_wait(log, wait_ms);
	t0 = util_now_ms();
	util_watchdog_arm(GARBAGE_HANG_MS, "store_watch_stop", &g->pid, 1);
	store_watch_stop(w);
	util_watchdog_disarm();
	if (util_now_ms() - t0 > 3000) {
		tap_diag("stopping the watch took %lld ms", util_now_ms() - t0);
		ok = false;
	}
	store_free(s);
	return ok;
}

/* Rubbish on a watch stream is said as a bad reply; silence is waited. */
static bool test_garbage_watch(void)
{
	struct evlog log = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct util_garbage g;
	bool ok;

	if (!util_garbage_start(&g, true, "notproto", 0))
		return false;
	ok = watch_on(&g, &log, 10000);
	util_garbage_stop(&g);
	if (!log.n || log.first_type != STORE_EV_ERROR ||
	    log.first_err != STORE_EBADREPLY) {
		tap_diag("%zu events from a rubbish watch, first type %d err "
			 "%s", log.n, log.n ? (int)log.first_type : -1,
			 log.n ? store_errname(log.first_err) : "");
		ok = false;
	}

	memset(&log, 0, sizeof(log));
	pthread_mutex_init(&log.lock, NULL);
	if (!util_garbage_start(&g, true, "silent", 0))
		return false;
	ok = watch_on(&g, &log, 1500) && ok;
	util_garbage_stop(&g);
	return ok;
}

int main(void)
{
	util_tests_dir = getenv("TESTS_DIR");
	if (!util_tests_dir) {
		printf("Bail out! run with TESTS_DIR set\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tap_ok(test_garbage(&cases[i]), "garbage: %s %s",
		       cases[i].h2 ? "h2" : "http/1", cases[i].mode);
	TAP_RUN(test_garbage_watch);
	return tap_done(0);
}
