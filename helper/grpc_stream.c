/*
 * grpc_stream.c - bidirectional streams of the gRPC transport
 * (grpc_transport.h), for watches
 *
 * The upload stays open: grpc_stream_send() queues a frame and unpauses
 * the transfer, whose read callback otherwise answers CURL_READFUNC_PAUSE.
 * Messages received wait in the transfer's queue for grpc_stream_recv();
 * past GT_RECV_QUEUE_MAX bytes the transfer's download is paused, so
 * HTTP/2 flow control holds the server back.
 *
 * What it cannot do: send HTTP/2 PINGs; a dead peer of a quiet stream is
 * found by the caller's progress requests or by TCP keep-alive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "grpc_transport_i.h"
#include "errors.h"

/* ---- streams ---- */

struct grpc_stream {
	struct grpc_transport *t;
	struct gt_xfer *x;
	uint64_t token_gen;
	bool ended;		/* recv reported the end */
};

int grpc_stream_open(struct grpc_transport *t, const char *path,
		     const uint8_t *first, size_t len,
		     struct grpc_stream **out, struct store_error *err)
{
	struct grpc_stream *s;
	char ep[1024], *token = NULL;
	size_t idx, n, start = 0;
	uint64_t gen;
	int rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");
	s->t = t;
	rc = gt_token(t, false, 0, &token, &s->token_gen, err);
	if (rc < 0) {
		free(s);
		return rc;
	}
	gt_endpoint_at(t, 0, &start, ep, sizeof(ep), &idx, &gen, &n);
	s->x = gt_xfer_new(t, GT_LANE_STREAM, ep, idx, gen, path, NULL, 0,
			   token, false);
	gt_wipe_free(token);
	if (s->x) {
		s->x->sendq = malloc(len);
		if (s->x->sendq) {
			memcpy(s->x->sendq, first, len);
			s->x->sendq_len = s->x->sendq_cap = len;
		}
	}
	if (!s->x || !s->x->sendq) {
		gt_xfer_free(s->x);
		free(s);
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");
	}
	gt_submit(t, s->x);
	*out = s;
	return 0;
}

int grpc_stream_send(struct grpc_stream *s, const uint8_t *frame, size_t len,
		     struct store_error *err)
{
	struct gt_xfer *x = s->x;
	struct grpc_transport *t = s->t;
	size_t cap;
	uint8_t *p;
	bool wake = false;

	pthread_mutex_lock(&t->lock);
	if (x->done) {
		pthread_mutex_unlock(&t->lock);
		return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
				  "the stream to '%s' has ended", x->url);
	}
	if (x->sendq_len + len > x->sendq_cap) {
		cap = (x->sendq_len + len) * 2;
		p = realloc(x->sendq, cap);
		if (!p) {
			pthread_mutex_unlock(&t->lock);
			return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
					  "out of memory");
		}
		x->sendq = p;
		x->sendq_cap = cap;
	}
	memcpy(x->sendq + x->sendq_len, frame, len);
	x->sendq_len += len;
	if (x->send_paused) {
		x->send_paused = false;
		x->unpause = true;
		wake = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (wake)
		gt_wake(x->lane);
	return 0;
}

/*
 * A stream that broke took its connection with it, most likely (the
 * server went away): the next stream to its endpoint makes a connection
 * of its own, as the pioneer.  Without this it would go out as an h2c
 * upgrade, which etcd answers with a 404 over HTTP/1, and only the stream
 * after that would reach it.  A pioneer at work is left alone.
 */
static void gt_stream_forget(struct grpc_stream *s)
{
	struct grpc_transport *t = s->t;
	struct gt_xfer *x = s->x;

	pthread_mutex_lock(&t->lock);
	if (x->ep_gen == t->gen && x->ep_idx < t->n_endpoints &&
	    x->lane->h2[x->ep_idx] == GT_H2_READY)
		x->lane->h2[x->ep_idx] = GT_H2_NONE;
	pthread_mutex_unlock(&t->lock);
}

/* The end of a stream: its status, or why it broke. */
static int gt_stream_end(struct grpc_stream *s, struct grpc_reply *status,
			 struct store_error *err)
{
	struct gt_xfer *x = s->x;
	enum gt_outcome o;
	bool sent;
	int rc;

	if (!s->ended) {
		s->ended = true;
		gt_settle(s->t, x);
	}
	o = gt_outcome(x, &sent, &rc, err);
	if (o == GT_NOT_SENT || o == GT_HTTP1) {
		/* the next open goes to the next endpoint (or as pioneer) */
		if (o == GT_NOT_SENT) {
			__atomic_add_fetch(&s->t->unreachable, 1,
					   __ATOMIC_RELAXED);
			gt_moved_on(s->t, x->lane, x->ep_idx, x->ep_gen,
				    (x->ep_idx + 1) % (s->t->n_endpoints ?
						       s->t->n_endpoints : 1));
		} else {
			gt_h2_set(s->t, x, GT_H2_NONE);
		}
		return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
				  "cannot reach '%s': %s", x->url, o ==
				  GT_HTTP1 ? "not a gRPC server (no HTTP/2)" :
				  err ? err->msg : "not connected");
	}
	if (o == GT_FAILED || o == GT_LOST) {
		if (x->rc != CURLE_OK)
			gt_stream_forget(s);
		if (rc == STORE_ETIMEOUT || rc == STORE_EUNREACHABLE ||
		    rc == STORE_EUNKNOWN)
			return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
					  "stream from '%s' lost: %s", x->url,
					  err ? err->msg : "");
		return rc;
	}
	status->code = x->st.code;
	snprintf(status->message, sizeof(status->message), "%s",
		 x->st.message);
	if (gt_token_refused(x->st.code, x->st.message))
		gt_token_stale(s->t, s->token_gen);
	return GRPC_STREAM_END;
}

int grpc_stream_recv(struct grpc_stream *s, long timeout_ms, uint8_t **msg,
		     size_t *len, struct grpc_reply *status,
		     struct store_error *err)
{
	struct gt_xfer *x = s->x;
	struct grpc_transport *t = s->t;
	struct gt_msg *m;
	struct timespec ts;
	bool wake = false, done;

	*msg = NULL;
	*len = 0;
	memset(status, 0, sizeof(*status));
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->lock);
	while (!x->rq_head && !x->done)
		if (pthread_cond_timedwait(&x->cond, &t->lock, &ts) ==
		    ETIMEDOUT)
			break;
	m = x->rq_head;
	if (m) {
		x->rq_head = m->next;
		if (!x->rq_head)
			x->rq_tail = NULL;
		x->rq_bytes -= m->len;
		if (x->recv_paused && x->rq_bytes < GT_RECV_QUEUE_MAX / 2) {
			x->recv_paused = false;
			x->unpause = true;
			wake = true;
		}
	}
	/* read with the queue: every message is queued before done is set */
	done = x->done;
	pthread_mutex_unlock(&t->lock);
	if (wake)
		gt_wake(x->lane);
	if (m) {
		/* the message moves to the front of its node, over m->len */
		*len = m->len;
		memmove(m, m->data, *len);
		*msg = (uint8_t *)m;
		return GRPC_STREAM_MSG;
	}
	if (!done)
		return GRPC_STREAM_IDLE;
	return gt_stream_end(s, status, err);
}

void grpc_stream_token_rejected(struct grpc_stream *s)
{
	gt_token_stale(s->t, s->token_gen);
}

void grpc_stream_close(struct grpc_stream *s)
{
	struct grpc_transport *t;

	if (!s)
		return;
	t = s->t;
	pthread_mutex_lock(&t->lock);
	if (!s->x->done) {
		/* still pending: the thread adds it, then cancels it */
		s->x->cancel = true;
	}
	pthread_mutex_unlock(&t->lock);
	gt_wake(s->x->lane);
	gt_wait(t, s->x);
	gt_xfer_free(s->x);
	free(s);
}
