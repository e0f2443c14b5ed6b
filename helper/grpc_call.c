/*
 * grpc_call.c - unary calls of the gRPC transport (grpc_transport.h):
 * what became of a transfer, the failover over endpoints while a call was
 * certainly not sent, and the auth token
 *
 * A call is tried on the current endpoint, then on the next ones while it
 * was not sent; an h2c connection found gone is made again once at the
 * same endpoint.  With a user, a token is had from Auth/Authenticate
 * before the first call, and again once when etcd refuses the one sent.
 *
 * A read (GRPC_CALL_IDEMPOTENT) whose answer was lost is sent again, twice
 * at most.  What it cannot do: send a write again once it may have gone
 * out; its outcome is the caller's to resolve.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "etcd3_pb.h"
#include "grpc_transport_i.h"
#include "errors.h"
#include "transport.h"

/* ---- outcomes ---- */

/* curl's description of @x's failure, lower case. */
static void gt_describe(const struct gt_xfer *x, char *buf, size_t size)
{
	const char *s = curl_easy_strerror(x->rc);

	if (x->errbuf[0] && !strstr(x->errbuf, s))
		snprintf(buf, size, "%s (%s)", s, x->errbuf);
	else
		snprintf(buf, size, "%s", x->errbuf[0] ? x->errbuf : s);
	if (buf[0] >= 'A' && buf[0] <= 'Z' && buf[1] >= 'a' && buf[1] <= 'z')
		buf[0] = (char)(buf[0] - 'A' + 'a');
}

/*
 * What became of the done transfer @x: for GT_FAILED, *@rc and @err say
 * what; @sent says whether a byte of its message may have gone out.
 */
enum gt_outcome gt_outcome(const struct gt_xfer *x, bool *sent, int *rc,
			   struct store_error *err)
{
	bool started = __atomic_load_n(&x->body_started, __ATOMIC_ACQUIRE);
	char what[400];

	*sent = started;
	*rc = 0;
	if (x->expired) {
		*sent = false;
		*rc = store_fail(err, STORE_ETIMEOUT, NULL, 0, 0,
				 "waited %ld ms in line for '%s', not sent",
				 x->t->request_ms + x->t->connect_ms, x->url);
		return GT_FAILED;
	}
	if ((x->http_major == 1 && !x->st.is_grpc) ||
	    x->rc == CURLE_GOT_NOTHING ||
	    (!x->pioneer && x->rc == CURLE_UNSUPPORTED_PROTOCOL)) {
		/*
		 * etcd's HTTP/1 handler, a peer that answered the HTTP/2
		 * preface with bytes that are not HTTP/2 (libcurl: "empty
		 * reply"), or one that answered an h2c upgrade with HTTP/2
		 * ("HTTP/0.9"): no gRPC method ran.
		 */
		*sent = false;
		return GT_HTTP1;
	}
	if (x->rc == CURLE_OK || (x->rc == CURLE_WRITE_ERROR && x->too_many)) {
		if (!x->st.is_grpc && !x->st.have_status) {
			*rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
					 "'%s' is not a gRPC server (HTTP/%d)",
					 x->url, x->http_major);
			return GT_FAILED;
		}
		if (!x->st.bad_status && !x->st.have_status && !x->stream &&
		    x->msg && !x->too_many && grpc_reader_idle(&x->rd)) {
			/* libcurl 7.88 loses it beside a big reply (lanes) */
			*rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
					 "no grpc-status from '%s' after a "
					 "whole reply, outcome unknown", x->url);
			return GT_LOST;
		}
		if (x->st.bad_status || !x->st.have_status) {
			*rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
					 "no grpc-status from '%s'", x->url);
			return GT_FAILED;
		}
		if (x->st.code == 0 && !x->stream &&
		    (x->too_many || !x->msg || !grpc_reader_idle(&x->rd))) {
			*rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
					 "'%s' answered %s", x->url,
					 x->too_many ? "more than one message" :
					 "no whole message");
			return GT_FAILED;
		}
		return GT_ANSWERED;
	}
	if (x->st.have_status && !x->st.bad_status && x->st.code != 0 &&
	    x->st.is_grpc) {
		/*
		 * The server ended the call with an error status, then reset
		 * the stream because our upload was not done (grpc-go does
		 * that to a message over its limit): its status stands.
		 */
		return GT_ANSWERED;
	}
	if (x->rc == CURLE_WRITE_ERROR && x->rd.err < 0 &&
	    x->rd.err != GRPC_READER_NOMEM) {
		*rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				 "reply from '%s': %s%s", x->url,
				 grpc_reader_strerror(x->rd.err),
				 x->rd.err == GRPC_READER_TOO_LARGE ?
				 " (the cap on one message)" : "");
		return GT_FAILED;
	}
	if (x->rc == CURLE_WRITE_ERROR || x->rc == CURLE_OUT_OF_MEMORY) {
		*rc = store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				 "out of memory reading '%s'", x->url);
		return GT_FAILED;
	}
	if (x->rc == CURLE_HTTP2_STREAM && !x->stream &&
	    x->body_off < x->body_len) {
		/*
		 * The server reset the call before it had the whole message,
		 * so it ran nothing: grpc-go answers a message over its limit
		 * from the length prefix, then resets, and libcurl drops that
		 * answer when it comes while the upload is going on.
		 */
		*rc = store_fail(err, STORE_ETOOLARGE, NULL, 0, 0,
				 "'%s' refused a message of %zu bytes before "
				 "reading it whole (over its limit)", x->url,
				 x->body_len);
		return GT_FAILED;
	}
	gt_describe(x, what, sizeof(what));
	if (!started || transport_cert_refused(x->rc, x->errbuf)) {
		*sent = false;
		store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0, "%s", what);
		return GT_NOT_SENT;
	}
	if (x->rc == CURLE_OPERATION_TIMEDOUT)
		/* a write's caller says it may have been applied */
		*rc = store_fail(err, STORE_ETIMEOUT, NULL, 0, 0,
				 "request to '%s' timed out after %ld ms",
				 x->url, x->t->request_ms);
	else
		/* sent: etcd may have run it (the settle contract, errors.h) */
		*rc = store_fail(err, STORE_EUNKNOWN, NULL, 0, 0,
				 "connection to '%s' lost, outcome unknown: %s",
				 x->url, what);
	return x->rc == CURLE_OPERATION_TIMEDOUT ? GT_FAILED : GT_LOST;
}

/*
 * The endpoint @i places after *@start (set to the current one when @i is
 * 0), copied, with its index and the list's generation.
 */
void gt_endpoint_at(struct grpc_transport *t, size_t i, size_t *start,
		    char *buf, size_t size, size_t *idx, uint64_t *gen,
		    size_t *n)
{
	pthread_mutex_lock(&t->lock);
	if (i == 0 || *start >= t->n_endpoints)
		*start = t->current;
	*n = t->n_endpoints;
	*idx = (*start + i) % t->n_endpoints;
	*gen = t->gen;
	snprintf(buf, size, "%s", t->endpoints[*idx]);
	pthread_mutex_unlock(&t->lock);
}

void gt_moved_on(struct grpc_transport *t, struct gt_lane *lane, size_t idx,
		 uint64_t gen, size_t to)
{
	pthread_mutex_lock(&t->lock);
	if (t->gen == gen && to < t->n_endpoints)
		t->current = to;
	if (t->gen == gen && idx < t->n_endpoints &&
	    lane->h2[idx] != GT_H2_PIONEER)
		lane->h2[idx] = GT_H2_NONE;
	pthread_mutex_unlock(&t->lock);
}

/*
 * One unary call by @lane with @token, on the current endpoint and then
 * the others while it was not sent; an @idempotent one again (at the same
 * place, on a new connection if that was lost) when its answer was lost.
 */
static int gt_perform(struct grpc_transport *t, enum gt_lane_id lane,
		      const char *path, const uint8_t *req, size_t len,
		      const char *token, bool idempotent,
		      struct grpc_reply *reply, bool *sent,
		      struct store_error *err)
{
	char ep[1024], names[512] = "", what[300] = "";
	struct store_error e = { 0 };
	enum gt_outcome o = GT_NOT_SENT;
	struct gt_xfer *x;
	size_t i, n = 1, idx = 0, start = 0;
	uint64_t gen = 0;
	bool force = false, s = false;
	int rc = 0, lost = 0;

	memset(reply, 0, sizeof(*reply));
	*sent = false;
	for (i = 0; i < n; i++) {
		gt_endpoint_at(t, i, &start, ep, sizeof(ep), &idx, &gen, &n);
		x = gt_xfer_new(t, lane, ep, idx, gen, path, req, len, token,
				force);
		if (!x)
			return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
					  "out of memory");
		gt_submit(t, x);
		gt_wait(t, x);
		gt_settle(t, x);
		o = gt_outcome(x, &s, &rc, &e);
		if (o == GT_HTTP1 && !force) {
			/* the h2c connection was gone: make one, same place */
			force = true;
			i--;
			gt_xfer_free(x);
			continue;
		}
		force = false;
		if (o == GT_LOST && idempotent && lost++ < GT_LOST_RETRIES) {
			if (x->rc != CURLE_OK)
				gt_h2_set(t, x, GT_H2_NONE);
			i--;
			gt_xfer_free(x);
			continue;
		}
		if (o == GT_ANSWERED) {
			reply->code = x->st.code;
			snprintf(reply->message, sizeof(reply->message), "%s",
				 x->st.message);
			if (x->st.code == 0) {
				reply->msg = x->msg;
				reply->len = x->msg_len;
				x->msg = NULL;
			}
		}
		gt_xfer_free(x);
		*sent = s;
		if (o != GT_NOT_SENT && o != GT_HTTP1)
			break;
		snprintf(what, sizeof(what), "%.290s", o == GT_HTTP1 ?
			 "not a gRPC server (no HTTP/2)" : e.msg);
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s'%.200s'", i ? ", " : "", ep);
		gt_moved_on(t, &t->lanes[lane], idx, gen, (idx + 1) % n);
	}
	if (o == GT_NOT_SENT || o == GT_HTTP1) {
		__atomic_add_fetch(&t->unreachable, 1, __ATOMIC_RELAXED);
		return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
				  "cannot reach %s: %s", names, what);
	}
	if (o == GT_FAILED || o == GT_LOST) {
		if (err)
			*err = e;
		return rc;
	}
	return 0;
}

/* ---- auth ---- */

/* Gets a token into t->token; called with t->auth_lock held. */
static int gt_authenticate(struct grpc_transport *t, struct store_error *err)
{
	struct grpc_reply reply;
	struct store_error e = { 0 };
	char *token = NULL;
	uint8_t *req;
	size_t len = 0;
	bool sent;
	int rc;

	req = etcd3pb_req_authenticate(t->user, t->password, &len);
	if (!req)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");
	rc = gt_perform(t, GT_LANE_UNARY, "/etcdserverpb.Auth/Authenticate",
			req, len, NULL, true,
			&reply, &sent, err);
	memset(req, 0, len);
	free(req);
	/* a lost answer to Authenticate: the caller's call was not sent */
	if (rc == STORE_EUNKNOWN && err)
		err->code = STORE_EUNREACHABLE;
	if (rc == STORE_EUNKNOWN)
		rc = STORE_EUNREACHABLE;
	if (rc < 0)
		return rc;
	if (reply.code == GRPC_FAILED_PRECONDITION &&
	    strstr(reply.message, "authentication is not enabled")) {
		/* as etcdctl: no token, and calls go without one */
		token = strdup("");
	} else if (reply.code != 0) {
		rc = store_fail(err, reply.code == GRPC_UNAVAILABLE ?
				STORE_EUNREACHABLE : STORE_EUNAUTHENTICATED,
				NULL, 0, 0, "authentication of '%s' failed: %s",
				t->user, reply.message[0] ? reply.message :
				grpc_code_name(reply.code));
		grpc_reply_release(&reply);
		return rc;
	} else {
		rc = etcd3pb_decode_authenticate(reply.msg, reply.len, &token,
						 &e);
		if (reply.msg)
			memset(reply.msg, 0, reply.len);
		grpc_reply_release(&reply);
		if (rc < 0)
			return store_fail(err, rc, NULL, 0, 0, "%s", e.msg);
	}
	grpc_reply_release(&reply);
	if (!token)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");
	gt_wipe_free(t->token);
	t->token = token;
	t->token_gen++;
	return 0;
}

/*
 * A copy of the token to send (NULL: none) and its generation;
 * authenticates first if there is none, or if @stale is the generation
 * the server refused.
 */
int gt_token(struct grpc_transport *t, bool renew, uint64_t stale, char **token,
	     uint64_t *gen, struct store_error *err)
{
	int rc = 0;

	*token = NULL;
	if (!t->user)
		return 0;
	pthread_mutex_lock(&t->auth_lock);
	if (!t->token || (renew && t->token_gen == stale))
		rc = gt_authenticate(t, err);
	if (rc == 0) {
		*token = strdup(t->token);
		*gen = t->token_gen;
		if (!*token)
			rc = store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
					"out of memory");
	}
	pthread_mutex_unlock(&t->auth_lock);
	return rc;
}

/* The token of generation @gen was refused: the next call gets another. */
void gt_token_stale(struct grpc_transport *t, uint64_t gen)
{
	pthread_mutex_lock(&t->auth_lock);
	if (t->token_gen == gen && t->token) {
		gt_wipe_free(t->token);
		t->token = NULL;
	}
	pthread_mutex_unlock(&t->auth_lock);
}

/* etcd's answers to a missing, bad or expired token. */
bool gt_token_refused(int code, const char *message)
{
	return (code == GRPC_UNAUTHENTICATED &&
		strstr(message, "invalid auth token")) ||
	       (code == GRPC_INVALID_ARGUMENT &&
		strstr(message, "user name is empty"));
}

int grpc_call(struct grpc_transport *t, const char *path, const uint8_t *req,
	      size_t len, unsigned flags, struct grpc_reply *reply, bool *sent,
	      struct store_error *err)
{
	char *token = NULL;
	uint64_t gen = 0;
	bool s = false;
	int rc = 0, attempt;

	memset(reply, 0, sizeof(*reply));
	for (attempt = 0; attempt < 2; attempt++) {
		rc = gt_token(t, attempt > 0, gen, &token, &gen, err);
		if (rc < 0)
			break;
		rc = gt_perform(t, flags & GRPC_CALL_BULK ? GT_LANE_BULK :
				GT_LANE_UNARY, path, req, len, token,
				(flags & GRPC_CALL_IDEMPOTENT) != 0, reply, &s,
				err);
		gt_wipe_free(token);
		token = NULL;
		if (rc < 0 || !t->user ||
		    !gt_token_refused(reply->code, reply->message))
			break;
		/* refused for its token: not applied, and safe to send */
		grpc_reply_release(reply);
	}
	if (sent)
		*sent = s;
	return rc;
}
