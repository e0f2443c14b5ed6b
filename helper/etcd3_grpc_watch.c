/*
 * etcd3_grpc_watch.c - watches of the etcd v3 gRPC backend
 *
 * A thread per watch holds a Watch stream (grpc_transport.c) with one
 * create request, from the revision after the last one it saw, with
 * prev_kv and progress_notify.  When the stream has been quiet for
 * G_QUIET_MS, a progress request goes out on it: the answer is a progress
 * event for the caller and proves the stream alive; none within another
 * G_QUIET_MS and the stream is taken for dead.  A broken stream is said
 * with a transient STORE_EV_ERROR and opened again, backing off from
 * 100 ms to 2 s; events a resumed stream repeats are skipped.  A start
 * revision etcd compacted ends the watch with ECOMPACTED.
 * store_watch_progress() sends one more progress request at once, from
 * the caller's thread, on the stream open then (or on the next one).
 *
 * What it cannot do: share one stream among watches; tell which endpoint
 * a watch is connected to.
 *
 * Locks: each watch's thread (helper/thread.c) has its own lock, which
 * guards only its stop flag and the condition its back-off waits on; it is
 * never held while calling the watch's callback or the transport.  A
 * watch's ask_lock guards the stream others may send a progress request
 * on; it is held across that send (the transport's lock is taken inside)
 * and never while calling the callback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd3_grpc.h"
#include "etcd3_pb.h"
#include "grpc_frame.h"
#include "thread.h"

#define G_WATCH_PATH		"/etcdserverpb.Watch/Watch"
#define G_BACKOFF_MIN_MS	100
#define G_BACKOFF_MAX_MS	2000
#define G_QUIET_MS		10000
#define G_POLL_MS		500

struct g_watch {
	struct store_watch *w;
	struct thread t;
	pthread_mutex_t ask_lock;
	struct grpc_stream *cur;	/* under ask_lock: the open stream */
	bool asked;			/* under ask_lock: a progress request
					 * for the next stream */
	/* the rest belongs to the watch thread */
	int64_t last_rev;		/* seen: where a new stream resumes */
	int64_t last_event_rev;		/* of the last event delivered */
	bool created;			/* this stream said created */
	bool ended;			/* compacted: no more events */
	int stream_err;			/* what broke the stream, or 0 */
	struct store_error e;
};

static bool g_stopping(struct g_watch *gw)
{
	return thread_stopping(&gw->t);
}

static void g_watch_error(struct g_watch *gw, int code, int64_t compact_rev)
{
	struct store_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = STORE_EV_ERROR;
	ev.err = code;
	ev.revision = gw->last_rev;
	ev.compact_revision = compact_rev;
	gw->w->fn(gw->w->arg, &ev);
}

/*
 * Delivers the events of @m, skipping those a resumed stream repeats;
 * progress does not count here (etcd 3.4 before 3.4.24 may announce a
 * revision ahead of events still queued).
 */
static int g_events(struct g_watch *gw, const struct etcd3pb_watch_msg *m)
{
	int64_t seen = gw->last_event_rev;
	struct store_event ev;
	size_t i;

	for (i = 0; i < m->n; i++) {
		const struct etcd3pb_watch_event *e = &m->events[i];

		if (e->revision <= seen)
			continue;
		if (e->revision < gw->last_event_rev)
			return STORE_EBADREPLY;	/* out of order */
		memset(&ev, 0, sizeof(ev));
		ev.type = e->type;
		ev.kv = e->kv;
		ev.prev_kv = e->prev_kv;
		ev.revision = e->revision;
		gw->last_event_rev = e->revision;
		if (e->revision > gw->last_rev)
			gw->last_rev = e->revision;
		gw->w->fn(gw->w->arg, &ev);
	}
	return 0;
}

/* One message of the stream; non-zero ends the stream. */
static int g_message(struct g_watch *gw, struct grpc_stream *st,
		     const uint8_t *msg, size_t len)
{
	struct etcd3pb_watch_msg m;
	struct store_event ev;
	int rc;

	rc = etcd3pb_decode_watch(msg, len, &m, &gw->e);
	if (rc < 0) {
		gw->stream_err = rc;
		return 1;
	}
	switch (m.kind) {
	case ETCD3PB_WATCH_CREATED:
		gw->created = true;
		break;
	case ETCD3PB_WATCH_EVENTS:
		rc = g_events(gw, &m);
		if (rc < 0) {
			gw->stream_err = rc;
			rc = 1;
		}
		break;
	case ETCD3PB_WATCH_PROGRESS:
		if (m.revision < gw->last_rev)
			break;
		gw->last_rev = m.revision;
		memset(&ev, 0, sizeof(ev));
		ev.type = STORE_EV_PROGRESS;
		ev.revision = m.revision;
		gw->w->fn(gw->w->arg, &ev);
		break;
	case ETCD3PB_WATCH_CANCELED:
		if (m.err == STORE_ECOMPACTED) {
			gw->ended = true;
			g_watch_error(gw, STORE_ECOMPACTED,
				      m.compact_revision);
		} else {
			/* etcd 3.4 and 3.5 cancel a watch for its token */
			if (m.err == STORE_EUNAUTHENTICATED)
				grpc_stream_token_rejected(st);
			gw->stream_err = m.err;
		}
		rc = 1;
		break;
	}
	etcd3pb_watch_msg_release(&m);
	return rc;
}

/* Sends a progress request; false if the stream is gone. */
static bool g_progress(struct grpc_stream *st)
{
	size_t len = 0;
	uint8_t *req = etcd3pb_req_watch_progress(&len);
	bool ok;

	if (!req)
		return false;
	ok = grpc_stream_send(st, req, len, NULL) == 0;
	free(req);
	return ok;
}

/* Runs one stream until it breaks or the watch stops. */
static void g_stream(struct g_watch *gw, struct grpc_stream *st)
{
	struct grpc_reply status;
	long quiet = 0;
	uint8_t *msg;
	size_t len;
	int rc;

	while (!g_stopping(gw)) {
		rc = grpc_stream_recv(st, G_POLL_MS, &msg, &len, &status,
				      &gw->e);
		if (rc == GRPC_STREAM_IDLE) {
			quiet += G_POLL_MS;
			if (quiet == G_QUIET_MS && gw->created &&
			    !g_progress(st)) {
				gw->stream_err = STORE_EUNREACHABLE;
				return;
			}
			if (quiet >= 2 * G_QUIET_MS) {
				/* a progress request went unanswered */
				gw->stream_err = STORE_ETIMEOUT;
				return;
			}
			continue;
		}
		if (rc == GRPC_STREAM_MSG) {
			quiet = 0;
			store_note_received(gw->w->s, len);
			rc = g_message(gw, st, msg, len);
			free(msg);
			if (rc)
				return;
			continue;
		}
		if (rc == GRPC_STREAM_END) {
			gw->stream_err = status.code ?
				etcd3pb_map_error(status.code, status.message) :
				STORE_EUNREACHABLE;
			/* a watch writes nothing: a lost member is unreachable */
			if (gw->stream_err == STORE_EUNKNOWN)
				gw->stream_err = STORE_EUNREACHABLE;
			return;
		}
		gw->stream_err = rc;
		return;
	}
}

/*
 * Makes @st the stream store_watch_progress() sends on (NULL: none, before
 * it is closed), and sends the request asked for while there was none.
 */
static void g_stream_shared(struct g_watch *gw, struct grpc_stream *st)
{
	pthread_mutex_lock(&gw->ask_lock);
	gw->cur = st;
	if (st && gw->asked && g_progress(st))
		gw->asked = false;
	pthread_mutex_unlock(&gw->ask_lock);
}

int etcd3g_watch_progress(struct store_watch *w)
{
	struct g_watch *gw = w->be;

	if (!gw)
		return STORE_EINVAL;
	pthread_mutex_lock(&gw->ask_lock);
	if (!gw->cur || !g_progress(gw->cur))
		gw->asked = true;	/* for the next stream */
	pthread_mutex_unlock(&gw->ask_lock);
	return 0;
}

static void *g_watch_main(void *arg)
{
	struct g_watch *gw = arg;
	struct store_watch *w = gw->w;
	struct thread_backoff backoff;

	thread_backoff_init(&backoff, G_BACKOFF_MIN_MS, G_BACKOFF_MAX_MS);
	while (!g_stopping(gw)) {
		struct grpc_stream *st = NULL;
		size_t len = 0;
		uint8_t *req;
		int rc;

		gw->created = false;
		gw->stream_err = 0;
		req = etcd3pb_req_watch_create(w->key, w->key_len,
					       w->range_end, w->range_end_len,
					       gw->last_rev + 1, &len);
		rc = req ? grpc_stream_open(etcd3g_transport(w->s),
					    G_WATCH_PATH, req, len, &st, NULL) :
			   STORE_EINTERNAL;
		free(req);
		store_note(w->s, STORE_REQ_WATCH, G_WATCH_PATH, w->key,
			   w->key_len, rc, thread_now_us(), req ? len : 0, 0);
		if (rc == 0) {
			g_stream_shared(gw, st);
			g_stream(gw, st);
			g_stream_shared(gw, NULL);
			grpc_stream_close(st);
			rc = gw->stream_err ? gw->stream_err :
			     STORE_EUNREACHABLE;
		}
		if (g_stopping(gw) || gw->ended)
			break;
		if (rc == STORE_ECOMPACTED) {
			g_watch_error(gw, STORE_ECOMPACTED, 0);
			break;
		}
		g_watch_error(gw, rc, 0);
		if (gw->created)
			thread_backoff_reset(&backoff);
		thread_backoff_wait(&gw->t, &backoff);
	}
	return NULL;
}

static void g_watch_free(struct g_watch *gw)
{
	pthread_mutex_destroy(&gw->ask_lock);
	free(gw);
}

int etcd3g_watch(struct store *s, struct store_watch *w,
		 struct store_error *err)
{
	struct g_watch *gw;
	int64_t start = w->start_rev;
	int rc;

	if (start <= 0) {
		/* "from now" is fixed here, so nothing written after this
		 * returns is missed while the stream is being set up */
		rc = s->be_ops->revision(s, &start, err);
		if (rc < 0)
			return rc;
		start++;
	}
	gw = calloc(1, sizeof(*gw));
	if (!gw)
		return store_fail(err, STORE_EINTERNAL, w->key, w->key_len, 0,
				  "out of memory");
	gw->w = w;
	pthread_mutex_init(&gw->ask_lock, NULL);
	gw->last_rev = start - 1;
	gw->last_event_rev = start - 1;
	rc = thread_start(&gw->t, g_watch_main, gw);
	if (rc) {
		g_watch_free(gw);
		return store_fail(err, STORE_EINTERNAL, w->key, w->key_len, 0,
				  "cannot start the watch thread: %s",
				  strerror(rc));
	}
	w->be = gw;
	return 0;
}

void etcd3g_watch_stop(struct store_watch *w)
{
	struct g_watch *gw = w->be;

	if (!gw)
		return;
	thread_stop(&gw->t);
	g_watch_free(gw);
	w->be = NULL;
}
