/*
 * etcd2_watch.c - the watches of the etcd v2 backend (etcd2.c): long
 * polls of GET dir?wait=true&waitIndex=N&recursive=true, one event per
 * request, resumed at modifiedIndex + 1, each watch on a thread of its own
 *
 * "From now" is the backend's revision (its probe), asked through the
 * backend's table, so that this file calls nothing of etcd2.c by name.
 *
 * What it cannot do: see more than the last 1,000 events of the whole
 * cluster (a watch further behind gets ECOMPACTED), nor the keys of a
 * removed directory (one event for the directory: a range watch over it
 * reports ECOMPACTED).  Lock order: none of its own; a watch's state is
 * its thread's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd2.h"
#include "etcd2_codec.h"
#include "store_i.h"
#include "thread.h"
#include "transport.h"

#define E2_BACKOFF_MIN_MS	100L
#define E2_BACKOFF_MAX_MS	5000L

struct e2_watch {
	struct store *s;
	struct store_watch *w;
	struct thread t;		/* its stop flag and back-off waits */
	char *wait_key;			/* what to wait on: the key, or
					 * the range's directory ("": /) */
	size_t wait_key_len;
	bool recursive;
	int64_t next;			/* the next poll's waitIndex */

	/* The reply of the poll in flight; only the watch thread uses it. */
	char *buf;
	size_t len, cap;
	bool over;			/* larger than max_reply_size */
};

/* Collects a poll's reply; ends it after the first line, the event. */
static int e2_watch_data(void *arg, const char *data, size_t len)
{
	struct e2_watch *ew = arg;
	size_t need, cap;
	char *p;

	if (len > ew->s->cfg.max_reply_size - ew->len) {
		ew->over = true;
		return 1;
	}
	need = ew->len + len + 1;
	if (need > ew->cap) {
		cap = ew->cap ? ew->cap : 4096;
		while (cap < need)
			cap *= 2;
		p = realloc(ew->buf, cap);
		if (!p) {
			ew->over = true;
			return 1;
		}
		ew->buf = p;
		ew->cap = cap;
	}
	memcpy(ew->buf + ew->len, data, len);
	ew->len += len;
	ew->buf[ew->len] = '\0';
	/* Go's JSON encoder ends the event with the only raw newline */
	return memchr(data, '\n', len) ? 1 : 0;
}

/* Reports the transient error @code and waits the back-off. */
static void e2_watch_error(struct e2_watch *ew, int code,
			   struct thread_backoff *backoff)
{
	struct store_event ev = { 0 };

	ev.type = STORE_EV_ERROR;
	ev.err = code;
	ev.revision = ew->next - 1;
	ew->w->fn(ew->w->arg, &ev);
	thread_backoff_wait(&ew->t, backoff);
}

/* One long poll; false when the watch is over. */
static bool e2_watch_poll(struct e2_watch *ew,
			  struct thread_backoff *backoff)
{
	struct store_watch *w = ew->w;
	struct store_error err = { 0 };
	struct store_event ev;
	struct etcd2_reply r;
	char query[80];
	struct store_error ce = { 0 };
	long status = 0;
	int64_t start;
	char *path;
	int rc;

	snprintf(query, sizeof(query), "wait=true&waitIndex=%" PRId64 "%s",
		 ew->next, ew->recursive ? "&recursive=true" : "");
	path = etcd2_codec_path(ew->wait_key, ew->wait_key_len, query);
	if (!path) {
		e2_watch_error(ew, STORE_EINTERNAL, backoff);
		return true;
	}
	ew->len = 0;
	ew->over = false;
	start = thread_now_us();
	rc = transport_stream(ew->s->tr, "GET", path, NULL, NULL, 0,
			      e2_watch_data, ew, &ew->t.stop, &status, &err);
	store_note(ew->s, STORE_REQ_WATCH, "GET /v2/keys?wait", ew->wait_key,
		   ew->wait_key_len, rc, start, 0, ew->len);
	free(path);
	if (thread_stopping(&ew->t))
		return false;
	if (rc < 0 || ew->over || ew->len == 0) {
		/* lost, or ended without an event: etcd stopping, say */
		e2_watch_error(ew, rc < 0 ? rc : ew->over ? STORE_EBADREPLY :
			       STORE_EUNREACHABLE, backoff);
		return true;
	}
	rc = etcd2_codec_reply(status, ew->buf, ew->len, &r, &ce);
	if (rc == STORE_ECOMPACTED) {
		memset(&ev, 0, sizeof(ev));
		ev.type = STORE_EV_ERROR;
		ev.err = STORE_ECOMPACTED;
		ev.compact_revision = etcd2_codec_history_start(r.cause,
								r.index);
		etcd2_reply_release(&r);
		w->fn(w->arg, &ev);
		return false;
	}
	if (rc == 0)
		rc = etcd2_codec_event(&r, w->key, w->key_len, w->range_end,
				       w->range_end_len, &ev, &ce);
	if (rc == 0 && ev.revision < ew->next)
		rc = STORE_EBADREPLY;	/* from before what was asked */
	if (rc < 0) {
		/* a bad event with a good index is passed over */
		if (rc == STORE_EBADREPLY && r.node.kv.mod_revision >= ew->next)
			ew->next = r.node.kv.mod_revision + 1;
		etcd2_reply_release(&r);
		e2_watch_error(ew, rc, backoff);
		return true;
	}
	thread_backoff_reset(backoff);
	ew->next = ev.revision + 1;
	w->fn(w->arg, &ev);
	etcd2_reply_release(&r);
	/* a directory over the range went: the owner lists again */
	return ev.type != STORE_EV_ERROR;
}

static void *e2_watch_main(void *arg)
{
	struct e2_watch *ew = arg;
	struct thread_backoff backoff;

	thread_backoff_init(&backoff, E2_BACKOFF_MIN_MS, E2_BACKOFF_MAX_MS);
	while (!thread_stopping(&ew->t) && e2_watch_poll(ew, &backoff))
		;
	return NULL;
}

static void e2_watch_free(struct e2_watch *ew)
{
	free(ew->wait_key);
	free(ew->buf);
	free(ew);
}

int etcd2_watch(struct store *s, struct store_watch *w,
		struct store_error *err)
{
	struct e2_watch *ew;
	const char *why;
	size_t len;
	int rc;

	if (!w->range_end && !etcd2_codec_key_ok(w->key, w->key_len, &why))
		return store_fail(err, STORE_EINVAL, w->key, w->key_len, 0,
				  "%s", why);
	ew = calloc(1, sizeof(*ew));
	if (!ew)
		return store_enomem(err, w->key, w->key_len);
	ew->s = s;
	ew->w = w;
	if (w->range_end) {
		len = etcd2_codec_range_dir(w->key, w->key_len, w->range_end,
					    w->range_end_len);
		ew->recursive = true;
	} else {
		len = w->key_len;
	}
	ew->wait_key = malloc(len + 1);
	if (!ew->wait_key) {
		rc = store_enomem(err, w->key, w->key_len);
		goto err_free;
	}
	memcpy(ew->wait_key, w->key, len);
	ew->wait_key[len] = '\0';
	ew->wait_key_len = len;

	ew->next = w->start_rev;
	if (ew->next == 0) {
		/* "from now" is from the index before this call returns */
		rc = s->be_ops->revision(s, &ew->next, err);
		if (rc < 0)
			goto err_free;
		ew->next++;
	}
	w->be = ew;
	rc = thread_start(&ew->t, e2_watch_main, ew);
	if (rc != 0) {
		w->be = NULL;
		rc = store_fail(err, STORE_EINTERNAL, w->key, w->key_len, 0,
				"cannot start the watch thread: %s",
				strerror(rc));
		goto err_free;
	}
	return 0;

err_free:
	e2_watch_free(ew);
	return rc;
}

void etcd2_watch_stop(struct store_watch *w)
{
	struct e2_watch *ew = w->be;

	if (!ew)
		return;
	thread_stop(&ew->t);
	e2_watch_free(ew);
	w->be = NULL;
}
