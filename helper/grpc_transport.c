/*
 * grpc_transport.c - gRPC over HTTP/2 on one libcurl multi handle
 * (grpc_transport.h)
 *
 * Why a thread and a multi handle: libcurl multiplexes HTTP/2 streams
 * only among the transfers of one multi handle.  Easy handles in threads
 * of their own that share connections through a CURLSH do not multiplex
 * (measured with Debian 12's curl 7.88.1: eight threads sharing one h2c
 * connection that way hung within seconds, holding 16 connections).  So
 * callers hand their transfers to a thread of the transport, which adds
 * them to its multi handle and signals each caller when its transfer is
 * done; callbacks run on that thread and only copy bytes.  There are
 * three such lanes (unary calls, big ranges one at a time, streams), each
 * with its connections: grpc_transport_i.h says why.  Easy handles are
 * kept for the next call of their lane, with their receive buffers.
 *
 * Debian 12's curl 7.88.1 also fails every reuse of a connection made
 * with CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE ("Error in the HTTP2 framing
 * layer": it sets up HTTP/2 a second time on the reused connection; curl
 * issue 10634, fixed after 7.88.1), and such a reuse breaks the
 * connection for every stream on it.  So for an h2c endpoint one transfer
 * at a time, the pioneer, opens a fresh connection with prior knowledge;
 * the others wait for its response headers, then go out as
 * CURL_HTTP_VERSION_2_0 with PIPEWAIT and multiplex on that connection.
 * If none is left by then (the server closed it), curl opens an HTTP/1.1
 * connection with an h2c upgrade, which etcd does not do: its HTTP/1
 * handler answers 404, nothing of the call is applied, and the call goes
 * out again as a pioneer.
 *
 * "Not sent": the request's message is given to curl by a read callback,
 * which records the first byte it hands over; a call that failed before
 * that cannot have been applied (gRPC needs the whole message), and is
 * tried on the next endpoint.  Once a byte went out, curl must not send
 * the message again on its own (it would after a dead reused connection
 * or a refused stream): the seek callback refuses to rewind, so such a
 * call fails and is reported as "sent, outcome unknown".
 *
 * Lock order: t->auth_lock, then t->lock.  t->lock guards the lists
 * handed to the lanes' threads, each transfer's queues and flags, the
 * endpoint list, the h2c states and the kept easy handles; it is never
 * held while calling libcurl (but for cleaning up handles no transfer
 * uses, after a fork).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "etcd3_pb.h"
#include "grpc_frame.h"
#include "grpc_transport_i.h"
#include "errors.h"

static pthread_once_t gt_once = PTHREAD_ONCE_INIT;
static CURLcode gt_global_rc;

/* Every transport, for the fork handlers. */
static pthread_mutex_t gt_all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct grpc_transport *gt_all;

/*
 * fork() (the daemon's, after the mount was checked and loaded) copies
 * only the calling thread: no lock of a transport may be held then, and
 * the child must neither wait for a thread it does not have nor share
 * the parent's connections.  So the handlers take every lock around the
 * fork, and a child's first call gets a multi handle and a thread of its
 * own (gt_own); the parent's multi handle is put aside.
 */
static void gt_fork_prepare(void)
{
	struct grpc_transport *t;

	pthread_mutex_lock(&gt_all_lock);
	for (t = gt_all; t; t = t->all_next) {
		pthread_mutex_lock(&t->auth_lock);
		pthread_mutex_lock(&t->lock);
	}
}

static void gt_fork_done(void)
{
	struct grpc_transport *t;

	for (t = gt_all; t; t = t->all_next) {
		pthread_mutex_unlock(&t->lock);
		pthread_mutex_unlock(&t->auth_lock);
	}
	pthread_mutex_unlock(&gt_all_lock);
}

static void gt_global_init(void)
{
	gt_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_atfork(gt_fork_prepare, gt_fork_done, gt_fork_done);
}

void grpc_reply_release(struct grpc_reply *r)
{
	if (!r)
		return;
	free(r->msg);
	memset(r, 0, sizeof(*r));
}

void gt_wipe_free(char *s)
{
	if (s) {
		memset(s, 0, strlen(s));
		free(s);
	}
}

static void gt_free_endpoints(char **eps, size_t n)
{
	size_t i;

	for (i = 0; eps && i < n; i++)
		free(eps[i]);
	free(eps);
}

static int gt_copy_endpoints(const char *const *eps, size_t n, char ***out,
			     struct store_error *err)
{
	char **copy;
	size_t i;

	if (!eps || n == 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0, "no endpoint");
	for (i = 0; i < n; i++)
		if (!eps[i] || !eps[i][0] || strlen(eps[i]) > 900)
			return store_fail(err, STORE_EINVAL, NULL, 0, 0,
					  "bad endpoint '%.100s'",
					  eps[i] ? eps[i] : "");
	copy = calloc(n, sizeof(*copy));
	if (!copy)
		goto nomem;
	for (i = 0; i < n; i++) {
		copy[i] = strdup(eps[i]);
		if (!copy[i])
			goto nomem;
	}
	*out = copy;
	return 0;
nomem:
	gt_free_endpoints(copy, n);
	return store_fail(err, STORE_EINTERNAL, NULL, 0, 0, "out of memory");
}

/* The h2c states of @n endpoints, one array per lane; false on ENOMEM. */
static bool gt_h2_new(enum gt_h2 *h2[GT_LANES], size_t n)
{
	int i;

	for (i = 0; i < GT_LANES; i++) {
		h2[i] = calloc(n, sizeof(*h2[i]));
		if (!h2[i]) {
			while (i > 0)
				free(h2[--i]);
			return false;
		}
	}
	return true;
}

/* ---- the threads ---- */

void gt_wake(struct gt_lane *lane)
{
	curl_multi_wakeup(lane->multi);
}

/* Marks @x done, with t->lock held. */
static void gt_done_locked(struct gt_xfer *x, CURLcode rc)
{
	x->next = NULL;
	x->rc = rc;
	x->done = true;
	pthread_cond_broadcast(&x->cond);
}

/* Marks @x done (called by the lane's thread, without t->lock). */
static void gt_finish(struct gt_lane *lane, struct gt_xfer *x, CURLcode rc)
{
	struct gt_xfer **pp;

	curl_multi_remove_handle(lane->multi, x->easy);
	pthread_mutex_lock(&lane->t->lock);
	for (pp = &lane->active; *pp; pp = &(*pp)->next) {
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	}
	gt_done_locked(x, rc);
	pthread_mutex_unlock(&lane->t->lock);
}

/*
 * The transfers to add now (t->lock held): all of them, or in a serial
 * lane the first, once the one before is done; those that waited in line
 * past a request timeout end unsent.
 */
static struct gt_xfer *gt_take_pending(struct gt_lane *lane)
{
	struct grpc_transport *t = lane->t;
	struct gt_xfer *x;
	int64_t now;

	if (!lane->serial) {
		x = lane->pending;
		lane->pending = lane->pending_tail = NULL;
		return x;
	}
	now = thread_now_ms();
	while ((x = lane->pending) &&
	       now - x->queued_ms > t->request_ms + t->connect_ms) {
		lane->pending = x->next;
		x->expired = true;
		gt_done_locked(x, CURLE_OPERATION_TIMEDOUT);
	}
	if (!lane->pending)
		lane->pending_tail = NULL;
	if (lane->active || !lane->pending)
		return NULL;
	x = lane->pending;
	lane->pending = x->next;
	if (!lane->pending)
		lane->pending_tail = NULL;
	x->next = NULL;
	return x;
}

/* Adds what callers handed over, and does what they asked of streams. */
static void gt_take_work(struct gt_lane *lane)
{
	struct grpc_transport *t = lane->t;
	struct gt_xfer *add, *x, *next, *unpause[64], *cancel[64];
	size_t n_un = 0, n_ca = 0, i;

	pthread_mutex_lock(&t->lock);
	add = gt_take_pending(lane);
	for (x = lane->active; x; x = x->next) {
		if (x->cancel && n_ca < 64) {
			x->cancel = false;
			cancel[n_ca++] = x;
		} else if (x->unpause && n_un < 64) {
			x->unpause = false;
			unpause[n_un++] = x;
		}
	}
	pthread_mutex_unlock(&t->lock);

	for (x = add; x; x = next) {
		next = x->next;
		if (curl_multi_add_handle(lane->multi, x->easy) != CURLM_OK) {
			pthread_mutex_lock(&t->lock);
			gt_done_locked(x, CURLE_OUT_OF_MEMORY);
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		pthread_mutex_lock(&t->lock);
		x->next = lane->active;
		lane->active = x;
		pthread_mutex_unlock(&t->lock);
	}
	/* curl_easy_pause() may call the callbacks, which take t->lock */
	for (i = 0; i < n_un; i++)
		curl_easy_pause(unpause[i]->easy, CURLPAUSE_CONT);
	for (i = 0; i < n_ca; i++)
		gt_finish(lane, cancel[i], CURLE_ABORTED_BY_CALLBACK);
}

static void *gt_main(void *arg)
{
	struct gt_lane *lane = arg;
	struct CURLMsg *m;
	int running, left;
	bool quit;

	for (;;) {
		gt_take_work(lane);
		curl_multi_perform(lane->multi, &running);
		while ((m = curl_multi_info_read(lane->multi, &left))) {
			struct gt_xfer *x = NULL;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
					  (char **)&x);
			gt_finish(lane, x, m->data.result);
		}
		pthread_mutex_lock(&lane->t->lock);
		quit = lane->quit && !lane->active && !lane->pending;
		pthread_mutex_unlock(&lane->t->lock);
		if (quit)
			break;
		/*
		 * After a perform that moved bytes, perform again at once:
		 * curl 7.88 may hold HTTP/2 data it read (or a window
		 * update to send) that no socket event will announce.
		 */
		if (__atomic_exchange_n(&lane->activity, 0, __ATOMIC_ACQ_REL))
			curl_multi_poll(lane->multi, NULL, 0, 0, NULL);
		else
			curl_multi_poll(lane->multi, NULL, 0, 1000, NULL);
	}
	return NULL;
}

/* ---- callbacks (on the thread) ---- */

/* The h2c state of @x's endpoint becomes @st (if the list is the same). */
void gt_h2_set(struct grpc_transport *t, const struct gt_xfer *x, enum gt_h2 st)
{
	pthread_mutex_lock(&t->lock);
	if (x->ep_gen == t->gen && x->ep_idx < t->n_endpoints) {
		x->lane->h2[x->ep_idx] = st;
		pthread_cond_broadcast(&t->h2_cond);
	}
	pthread_mutex_unlock(&t->lock);
}

/* True for an "HTTP/x.y 1xx" status line (100 Continue, 101). */
static bool gt_informational(const char *line, size_t len)
{
	const char *sp = memchr(line, ' ', len);

	return sp && (size_t)(sp - line) + 1 < len && sp[1] == '1';
}

static size_t gt_header(char *data, size_t size, size_t n, void *arg)
{
	struct gt_xfer *x = arg;
	size_t len = size * n;

	if (len > 5 && !memcmp(data, "HTTP/", 5)) {
		x->http_major = data[5] - '0';
		if (x->pioneer)
			gt_h2_set(x->t, x, x->http_major == 2 ? GT_H2_READY :
				  GT_H2_NONE);
		/*
		 * A stream answered over HTTP/1 (etcd's 404 to an h2c
		 * upgrade) ends here: once its upload began and paused,
		 * libcurl 7.88 would wait on it for good.  gt_outcome()
		 * calls it HTTP/1, and the next stream goes as the pioneer.
		 */
		if (x->stream && x->http_major == 1 && !gt_informational(data,
									  len))
			return 0;
		return len;
	}
	grpc_status_header(&x->st, data, len);
	return len;
}

static int gt_on_msg(void *arg, const uint8_t *msg, size_t len)
{
	struct gt_xfer *x = arg;
	struct gt_msg *m;

	if (!x->stream) {
		if (x->msg || x->too_many) {
			x->too_many = true;
			return 1;
		}
		x->msg = malloc(len ? len : 1);
		if (!x->msg)
			return 1;
		memcpy(x->msg, msg, len);
		x->msg_len = len;
		return 0;
	}
	m = malloc(sizeof(*m) + len);
	if (!m)
		return 1;
	m->next = NULL;
	m->len = len;
	memcpy(m->data, msg, len);
	pthread_mutex_lock(&x->t->lock);
	if (x->rq_tail)
		x->rq_tail->next = m;
	else
		x->rq_head = m;
	x->rq_tail = m;
	x->rq_bytes += len;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->t->lock);
	return 0;
}

static size_t gt_write(char *data, size_t size, size_t n, void *arg)
{
	struct gt_xfer *x = arg;
	size_t len = size * n;

	__atomic_store_n(&x->lane->activity, 1, __ATOMIC_RELEASE);
	/* an HTTP/1 or error page is not gRPC: drop it, it says enough */
	if (!x->st.is_grpc)
		return len;
	if (x->stream) {
		pthread_mutex_lock(&x->t->lock);
		if (x->rq_bytes >= GT_RECV_QUEUE_MAX) {
			x->recv_paused = true;
			pthread_mutex_unlock(&x->t->lock);
			return CURL_WRITEFUNC_PAUSE;
		}
		pthread_mutex_unlock(&x->t->lock);
	}
	if (grpc_reader_feed(&x->rd, (const uint8_t *)data, len, gt_on_msg,
			     x) < 0)
		return 0;	/* CURLE_WRITE_ERROR; x->rd.err says why */
	return len;
}

static size_t gt_read(char *buf, size_t size, size_t n, void *arg)
{
	struct gt_xfer *x = arg;
	size_t room = size * n, k;

	__atomic_store_n(&x->lane->activity, 1, __ATOMIC_RELEASE);
	if (!x->stream) {
		k = x->body_len - x->body_off;
		if (k > room)
			k = room;
		memcpy(buf, x->body + x->body_off, k);
		x->body_off += k;
		if (k)
			__atomic_store_n(&x->body_started, true,
					 __ATOMIC_RELEASE);
		return k;
	}
	pthread_mutex_lock(&x->t->lock);
	k = x->sendq_len;
	if (k == 0) {
		x->send_paused = true;
		pthread_mutex_unlock(&x->t->lock);
		return CURL_READFUNC_PAUSE;
	}
	if (k > room)
		k = room;
	memcpy(buf, x->sendq, k);
	memmove(x->sendq, x->sendq + k, x->sendq_len - k);
	x->sendq_len -= k;
	pthread_mutex_unlock(&x->t->lock);
	__atomic_store_n(&x->body_started, true, __ATOMIC_RELEASE);
	return k;
}

/*
 * curl rewinds to send again; allowed only while nothing went out.
 *
 * libcurl (7.88, Curl_retry_request) sends a call again by itself, on a
 * fresh connection, when a connection it reused is reset, or the stream
 * refused, before any byte of the answer came; when bytes of the message
 * were written it rewinds first, through here.  The call may have been
 * applied then, and the copy must not go: over TLS it is the call again;
 * over h2c it goes as an HTTP/1.1 upgrade that etcd answers 404, which
 * gt_outcome() takes for "not sent" (GT_HTTP1), so the call would be sent
 * once more.  Either way a write would be applied twice.  Refused, the
 * transfer fails (CURLE_SEND_FAIL_REWIND) and the call is lost (GT_LOST):
 * a read is sent again, a write settled by the store.  A refused stream
 * was not run, but libcurl does not say which of the two it was.
 */
static int gt_seek(void *arg, curl_off_t offset, int origin)
{
	struct gt_xfer *x = arg;

	if (__atomic_load_n(&x->body_started, __ATOMIC_ACQUIRE) ||
	    offset != 0 || origin != SEEK_SET)
		return CURL_SEEKFUNC_CANTSEEK;
	x->body_off = 0;
	return CURL_SEEKFUNC_OK;
}

/* ---- transfers ---- */

/* An easy handle of @lane's, reused if there is one (reset). */
static CURL *gt_easy_get(struct gt_lane *lane)
{
	CURL *c = NULL;

	pthread_mutex_lock(&lane->t->lock);
	if (lane->n_idle)
		c = lane->idle[--lane->n_idle];
	pthread_mutex_unlock(&lane->t->lock);
	if (!c)
		return curl_easy_init();
	curl_easy_reset(c);
	return c;
}

/* Keeps the easy handle of the done transfer @x for the next call. */
static void gt_easy_put(struct gt_xfer *x)
{
	struct gt_lane *lane = x->lane;
	size_t got = 0;
	bool kept = false;
	curl_off_t n;

	if (curl_easy_getinfo(x->easy, CURLINFO_SIZE_DOWNLOAD_T, &n) ==
	    CURLE_OK && n > 0)
		got = (size_t)n;
	pthread_mutex_lock(&lane->t->lock);
	if (x->done && got <= GT_IDLE_BYTES && lane->n_idle < GT_IDLE_MAX &&
	    lane->pid == getpid()) {
		lane->idle[lane->n_idle++] = x->easy;
		kept = true;
	}
	pthread_mutex_unlock(&lane->t->lock);
	if (!kept)
		curl_easy_cleanup(x->easy);
}

void gt_xfer_free(struct gt_xfer *x)
{
	struct gt_msg *m, *next;

	if (!x)
		return;
	if (x->easy)
		gt_easy_put(x);
	curl_slist_free_all(x->headers);
	grpc_reader_release(&x->rd);
	free(x->msg);
	for (m = x->rq_head; m; m = next) {
		next = m->next;
		free(m);
	}
	free(x->sendq);
	pthread_cond_destroy(&x->cond);
	free(x);
}

static bool gt_add_header(struct curl_slist **hl, const char *name,
			  const char *value)
{
	char buf[GT_HEADER_MAX];
	struct curl_slist *tmp;

	snprintf(buf, sizeof(buf), "%s: %s", name, value);
	tmp = curl_slist_append(*hl, buf);
	memset(buf, 0, sizeof(buf));	/* it may be the token */
	if (!tmp)
		return false;
	*hl = tmp;
	return true;
}

/*
 * Picks whether @x goes out as the h2c pioneer of its endpoint: waits (at
 * most a connect timeout) while another transfer is making the
 * connection.  @force: it was answered over HTTP/1, so no h2c connection
 * is left.
 */
static void gt_choose(struct grpc_transport *t, struct gt_xfer *x, bool force)
{
	struct timespec ts;

	x->pioneer = false;
	if (strncmp(x->url, "http://", 7) != 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += t->connect_ms / 1000 + 1;
	pthread_mutex_lock(&t->lock);
	if (x->ep_gen == t->gen && x->ep_idx < t->n_endpoints) {
		if (force)
			x->lane->h2[x->ep_idx] = GT_H2_NONE;
		while (x->ep_gen == t->gen && x->lane->h2[x->ep_idx] == GT_H2_PIONEER)
			if (pthread_cond_timedwait(&t->h2_cond, &t->lock,
						   &ts) == ETIMEDOUT)
				break;
		if (x->ep_gen != t->gen || x->lane->h2[x->ep_idx] != GT_H2_READY) {
			x->pioneer = true;
			if (x->ep_gen == t->gen)
				x->lane->h2[x->ep_idx] = GT_H2_PIONEER;
		}
	} else {
		x->pioneer = true;
	}
	pthread_mutex_unlock(&t->lock);
}

/*
 * A transfer of @path to @endpoint, with @token (NULL: none); unary with
 * @body, or a stream (@body NULL, its first frame queued by the caller).
 */
struct gt_xfer *gt_xfer_new(struct grpc_transport *t, enum gt_lane_id lane,
			    const char *endpoint, size_t idx, uint64_t gen,
			    const char *path, const uint8_t *body, size_t len,
			    const char *token, bool force_pioneer)
{
	struct gt_xfer *x = calloc(1, sizeof(*x));
	char timeout[32];
	CURL *c;

	if (!x)
		return NULL;
	pthread_cond_init(&x->cond, NULL);
	x->t = t;
	x->lane = &t->lanes[lane];
	x->ep_idx = idx;
	x->ep_gen = gen;
	x->stream = body == NULL;
	x->body = body;
	x->body_len = len;
	grpc_reader_init(&x->rd, t->max_msg);
	snprintf(x->url, sizeof(x->url), "%s%s", endpoint, path);
	x->easy = c = gt_easy_get(x->lane);
	if (!c)
		goto fail;
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, x->lane->buffer);
	if (!gt_add_header(&x->headers, "content-type", "application/grpc") ||
	    !gt_add_header(&x->headers, "te", "trailers"))
		goto fail;
	if (!x->stream) {
		grpc_timeout_format(t->request_ms, timeout, sizeof(timeout));
		if (!gt_add_header(&x->headers, "grpc-timeout", timeout))
			goto fail;
	}
	if (token && token[0] && !gt_add_header(&x->headers, "token", token))
		goto fail;
	gt_choose(t, x, force_pioneer);

	curl_easy_setopt(c, CURLOPT_PRIVATE, (char *)x);
	curl_easy_setopt(c, CURLOPT_URL, x->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_USERAGENT, GT_USER_AGENT);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, x->headers);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, x->pioneer ?
			 (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE :
			 strncmp(x->url, "https://", 8) == 0 ?
			 (long)CURL_HTTP_VERSION_2TLS :
			 (long)CURL_HTTP_VERSION_2_0);
	if (x->pioneer)
		curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(c, CURLOPT_MAXAGE_CONN, 86400L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, t->connect_ms);
	if (!x->stream)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, t->request_ms);
	/* a watch may be quiet for minutes: keep-alive finds a dead peer */
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 2L);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			 x->stream ? (curl_off_t)-1 : (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, gt_read);
	curl_easy_setopt(c, CURLOPT_READDATA, x);
	curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, gt_seek);
	curl_easy_setopt(c, CURLOPT_SEEKDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gt_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, gt_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	if (t->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, t->cacert);
	if (t->cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, t->cert);
	if (t->keyfile)
		curl_easy_setopt(c, CURLOPT_SSLKEY, t->keyfile);
	/* etcdctl's --insecure-skip-tls-verify: neither the chain nor the name */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER,
			 t->insecure_skip_tls_verify ? 0L : 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST,
			 t->insecure_skip_tls_verify ? 0L : 2L);
	return x;
fail:
	gt_xfer_free(x);
	return NULL;
}

static void *gt_main(void *arg);

static CURLM *gt_multi_new(const struct gt_lane *lane)
{
	CURLM *m = curl_multi_init();

	if (m)
		curl_multi_setopt(m, CURLMOPT_PIPELINING, lane->serial ?
				  CURLPIPE_NOTHING : CURLPIPE_MULTIPLEX);
	return m;
}

/*
 * Makes the multi handle and the thread of @lane this process's (t->lock
 * held): in a child of fork() both are its parent's, the thread is not
 * there and the connections are shared, so it gets a new multi handle (no
 * call of the parent's is the child's to finish) and starts the thread.
 */
static bool gt_own(struct gt_lane *lane)
{
	size_t i;
	CURLM *m;

	if (lane->pid != getpid()) {
		m = gt_multi_new(lane);
		if (!m)
			return false;
		for (i = 0; i < GT_STALE_MAX && lane->stale[i]; i++)
			;
		if (i < GT_STALE_MAX)
			lane->stale[i] = lane->multi;
		lane->multi = m;
		lane->pid = getpid();
		lane->running = false;
		lane->pending = lane->pending_tail = NULL;
		lane->active = NULL;
		while (lane->n_idle)
			curl_easy_cleanup(lane->idle[--lane->n_idle]);
		for (i = 0; i < lane->t->n_endpoints; i++)
			lane->h2[i] = GT_H2_NONE;
	}
	if (!lane->running && thread_start(&lane->thread, gt_main, lane) == 0)
		lane->running = true;
	return lane->running;
}

/* Hands @x to its lane; it is done at once if the lane can have no thread. */
void gt_submit(struct grpc_transport *t, struct gt_xfer *x)
{
	struct gt_lane *lane = x->lane;

	pthread_mutex_lock(&t->lock);
	if (!gt_own(lane)) {
		gt_done_locked(x, CURLE_OUT_OF_MEMORY);
		pthread_mutex_unlock(&t->lock);
		return;
	}
	x->queued_ms = thread_now_ms();
	x->next = NULL;
	if (lane->pending_tail)
		lane->pending_tail->next = x;
	else
		lane->pending = x;
	lane->pending_tail = x;
	pthread_mutex_unlock(&t->lock);
	gt_wake(lane);
}

void gt_wait(struct grpc_transport *t, struct gt_xfer *x)
{
	pthread_mutex_lock(&t->lock);
	while (!x->done)
		pthread_cond_wait(&x->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

/* A pioneer that ended before its headers leaves no connection behind. */
void gt_settle(struct grpc_transport *t, struct gt_xfer *x)
{
	if (x->pioneer && x->http_major != 2)
		gt_h2_set(t, x, GT_H2_NONE);
}

/* ---- the transport ---- */

/*
 * The lanes' settings, their h2c states in @h2 (stolen); unary and stream
 * buffers hold a value of @max_value bytes.
 */
static bool gt_lanes_init(struct grpc_transport *t, enum gt_h2 *h2[GT_LANES],
			  size_t max_value)
{
	long whole = max_value > (size_t)CURL_MAX_READ_SIZE ?
		     (long)CURL_MAX_READ_SIZE : (long)max_value;
	long buffers[GT_LANES];
	bool ok = true;
	int i;

	whole += GT_BUFFER_SLACK;
	if (whole > (long)CURL_MAX_READ_SIZE)
		whole = CURL_MAX_READ_SIZE;
	buffers[GT_LANE_UNARY] = whole;
	buffers[GT_LANE_BULK] = GT_BULK_BUFFER;
	buffers[GT_LANE_STREAM] = whole;

	for (i = 0; i < GT_LANES; i++) {
		struct gt_lane *lane = &t->lanes[i];

		lane->t = t;
		lane->serial = i == GT_LANE_BULK;
		lane->buffer = buffers[i];
		lane->h2 = h2[i];
		/* the thread starts with the lane's first call (gt_own) */
		lane->pid = getpid();
		lane->multi = gt_multi_new(lane);
		ok = ok && lane->multi;
	}
	return ok;
}

struct grpc_transport *grpc_transport_new(const struct grpc_transport_config *cfg,
					  struct store_error *err)
{
	enum gt_h2 *h2[GT_LANES];
	struct grpc_transport *t;
	bool ok = true;

	pthread_once(&gt_once, gt_global_init);
	if (gt_global_rc != CURLE_OK) {
		store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
			   "cannot initialise libcurl: %s",
			   curl_easy_strerror(gt_global_rc));
		return NULL;
	}
	if (cfg->user && !cfg->password) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "user '%s' given without a password", cfg->user);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		store_fail(err, STORE_EINTERNAL, NULL, 0, 0, "out of memory");
		return NULL;
	}
	if (gt_copy_endpoints(cfg->endpoints, cfg->n_endpoints, &t->endpoints,
			      err) < 0) {
		free(t);
		return NULL;
	}
	t->n_endpoints = cfg->n_endpoints;
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->auth_lock, NULL);
	pthread_cond_init(&t->h2_cond, NULL);
	if (!gt_h2_new(h2, t->n_endpoints)) {
		store_fail(err, STORE_EINTERNAL, NULL, 0, 0, "out of memory");
		goto fail;
	}
	ok = gt_lanes_init(t, h2, cfg->max_value_size ? cfg->max_value_size :
			   GT_DEFAULT_MAX_VALUE);
#define GT_DUP(f, v) do { if (v) { t->f = strdup(v); ok = ok && t->f; } } while (0)
	GT_DUP(user, cfg->user);
	GT_DUP(password, cfg->password);
	GT_DUP(cacert, cfg->cacert);
	GT_DUP(cert, cfg->cert);
	GT_DUP(keyfile, cfg->key);
#undef GT_DUP
	t->insecure_skip_tls_verify = cfg->insecure_skip_tls_verify;
	t->connect_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms :
			GT_DEFAULT_CONNECT_MS;
	t->request_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms :
			GT_DEFAULT_REQUEST_MS;
	t->max_msg = cfg->max_msg_size ? cfg->max_msg_size : GT_DEFAULT_MAX_MSG;
	if (!ok) {
		store_fail(err, STORE_EINTERNAL, NULL, 0, 0, "out of memory");
		goto fail;
	}
	pthread_mutex_lock(&gt_all_lock);
	t->all_next = gt_all;
	gt_all = t;
	pthread_mutex_unlock(&gt_all_lock);
	return t;
fail:
	grpc_transport_free(t);
	return NULL;
}

/* Stops the lane's thread (if this process has it) and frees the lane. */
static void gt_lane_release(struct gt_lane *lane)
{
	bool join;
	size_t i;

	pthread_mutex_lock(&lane->t->lock);
	lane->quit = true;
	join = lane->running && lane->pid == getpid();
	pthread_mutex_unlock(&lane->t->lock);
	if (join) {
		gt_wake(lane);
		thread_stop(&lane->thread);
	}
	/*
	 * A parent's multi handle goes too: this closes this process's
	 * copies of its sockets (a daemon's parent has long exited).
	 */
	for (i = 0; i < GT_STALE_MAX; i++)
		if (lane->stale[i])
			curl_multi_cleanup(lane->stale[i]);
	if (lane->multi)
		curl_multi_cleanup(lane->multi);
	while (lane->n_idle)
		curl_easy_cleanup(lane->idle[--lane->n_idle]);
	free(lane->h2);
}

void grpc_transport_free(struct grpc_transport *t)
{
	struct grpc_transport **pp;
	int i;

	if (!t)
		return;
	pthread_mutex_lock(&gt_all_lock);
	for (pp = &gt_all; *pp; pp = &(*pp)->all_next) {
		if (*pp == t) {
			*pp = t->all_next;
			break;
		}
	}
	pthread_mutex_unlock(&gt_all_lock);
	for (i = 0; i < GT_LANES; i++)
		gt_lane_release(&t->lanes[i]);
	pthread_cond_destroy(&t->h2_cond);
	pthread_mutex_destroy(&t->auth_lock);
	pthread_mutex_destroy(&t->lock);
	gt_free_endpoints(t->endpoints, t->n_endpoints);
	gt_wipe_free(t->token);
	free(t->user);
	gt_wipe_free(t->password);
	free(t->cacert);
	free(t->cert);
	free(t->keyfile);
	free(t);
}

const char *grpc_transport_endpoint(struct grpc_transport *t)
{
	static __thread char buf[1024];

	pthread_mutex_lock(&t->lock);
	snprintf(buf, sizeof(buf), "%s", t->endpoints[t->current]);
	pthread_mutex_unlock(&t->lock);
	return buf;
}

int grpc_transport_set_endpoints(struct grpc_transport *t,
				 const char *const *endpoints, size_t n,
				 struct store_error *err)
{
	enum gt_h2 *h2[GT_LANES], *old_h2;
	char **copy, **old;
	size_t i, old_n, current = 0;

	if (gt_copy_endpoints(endpoints, n, &copy, err) < 0)
		return err ? err->code : STORE_EINVAL;
	if (!gt_h2_new(h2, n)) {
		gt_free_endpoints(copy, n);
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");
	}
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < n; i++) {
		if (strcmp(copy[i], t->endpoints[t->current]) == 0) {
			current = i;
			break;
		}
	}
	old = t->endpoints;
	old_n = t->n_endpoints;
	t->endpoints = copy;
	t->n_endpoints = n;
	t->current = current;
	t->gen++;
	for (i = 0; i < GT_LANES; i++) {
		old_h2 = t->lanes[i].h2;
		t->lanes[i].h2 = h2[i];
		h2[i] = old_h2;
	}
	pthread_cond_broadcast(&t->h2_cond);
	pthread_mutex_unlock(&t->lock);
	gt_free_endpoints(old, old_n);
	for (i = 0; i < GT_LANES; i++)
		free(h2[i]);
	return 0;
}

void grpc_transport_skip(struct grpc_transport *t, const char *endpoint)
{
	pthread_mutex_lock(&t->lock);
	if (strcmp(t->endpoints[t->current], endpoint) == 0)
		t->current = (t->current + 1) % t->n_endpoints;
	pthread_mutex_unlock(&t->lock);
}

uint64_t grpc_transport_unreachable_count(struct grpc_transport *t)
{
	return __atomic_load_n(&t->unreachable, __ATOMIC_RELAXED);
}
