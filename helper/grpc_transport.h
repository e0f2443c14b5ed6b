/*
 * grpc_transport.h - gRPC calls to an etcd cluster over HTTP/2, on libcurl
 *
 * One transport holds one HTTP/2 connection per endpoint, shared by every
 * thread: calls from any thread are handed to a thread of the transport
 * that drives them all on one libcurl multi handle, multiplexed as HTTP/2
 * streams.  Ranges that may be big and streams go by two more such
 * connections and threads (grpc_transport_i.h says why).  http:// endpoints speak HTTP/2 without TLS (h2c, "prior
 * knowledge"), https:// ones negotiate h2 by ALPN with the CA, certificate
 * and key given.
 *
 * A unary call (grpc_call) is tried on the current endpoint, then on the
 * next ones while it certainly was not sent; the first that answers
 * becomes current for everyone.  It reports exactly whether the request
 * may have reached a server (@sent): false only when no byte of the
 * request's message can have been read by a server (the connection or
 * the TLS handshake failed, or a non-gRPC HTTP/1 handler answered).  Every
 * call is bounded by connect_timeout_ms and request_timeout_ms, sent to
 * the server as grpc-timeout too.
 *
 * With a user, a token is had from Auth/Authenticate before the first call
 * and sent as the "token" metadata of each; when etcd says it is invalid
 * (code 16, or the "user name is empty" of a cluster whose auth was turned
 * on after), a new one is had once and the call sent again: a request
 * refused for its token was not applied.
 *
 * A stream (grpc_stream_*, the watch) is a bidirectional call whose upload
 * stays open: messages sent later (cancel, progress requests) go out on
 * the same stream.  Its replies are queued for the thread that reads
 * them; when that thread falls behind, HTTP/2 flow control holds the
 * server back.
 *
 * What it cannot do: compression, proxies (the environment's are ignored),
 * client-side load balancing, HTTP/2 PINGs (a dead peer of a quiet stream
 * is found by TCP keep-alive).
 */
#ifndef ETCDFS_GRPC_TRANSPORT_H
#define ETCDFS_GRPC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"

struct grpc_transport_config {
	const char *const *endpoints;	/* URLs without a trailing '/' */
	size_t n_endpoints;
	const char *cacert;
	const char *cert;
	const char *key;
	bool insecure_skip_tls_verify;	/* accept any server certificate */
	const char *user;		/* NULL: no auth */
	const char *password;
	long connect_timeout_ms;	/* 0: 2000 */
	long request_timeout_ms;	/* 0: 5000 */
	size_t max_msg_size;		/* largest reply message; 0: 256 MiB */
	size_t max_value_size;		/* largest value outside bulk ranges;
					 * sizes the receive buffers (0:
					 * 1.5 MiB, etcd's default) */
};

struct grpc_transport;

/* Copies what it needs of @cfg and starts its thread; NULL on error. */
struct grpc_transport *grpc_transport_new(const struct grpc_transport_config *cfg,
					  struct store_error *err);
/* No call or stream may be running. */
void grpc_transport_free(struct grpc_transport *t);

/* What came back: gRPC's status and, when it is OK, the one message. */
struct grpc_reply {
	int code;		/* enum grpc_code */
	char message[512];	/* grpc-message, decoded; may be empty */
	uint8_t *msg;		/* owned; NULL if code != 0 */
	size_t len;
};

void grpc_reply_release(struct grpc_reply *r);

/*
 * grpc_call() flags.  A BULK call (a range that may return many keys)
 * goes by a connection of its own, one such call at a time, after the
 * others in line, for at most a request and a connect timeout (then
 * ETIMEOUT, not sent); the others share one multiplexed connection.
 */
#define GRPC_CALL_IDEMPOTENT	(1u << 0)	/* a read: may be sent again */
#define GRPC_CALL_BULK		(1u << 1)	/* its reply may be big */

/*
 * Calls @path ("/etcdserverpb.KV/Range") with @req, one gRPC frame of
 * @len bytes.  Returns 0 when a gRPC status came back (any code: the
 * caller maps it; code 0 comes with exactly one message), or
 * EUNREACHABLE (no endpoint answered, or the answer was lost), ETIMEOUT,
 * EUNAUTHENTICATED (no token could be had), EBADREPLY (not gRPC, a
 * message over the cap, no grpc-status) or EINTERNAL.  *@sent (if not
 * NULL) is false only when the request certainly reached no server.
 * With GRPC_CALL_IDEMPOTENT a call whose answer was lost (the connection
 * broke, or libcurl lost its status) is sent again, twice at most; else
 * such a failure's message says "outcome unknown".
 */
int grpc_call(struct grpc_transport *t, const char *path, const uint8_t *req,
	      size_t len, unsigned flags, struct grpc_reply *reply, bool *sent,
	      struct store_error *err);

/* The endpoint calls go to now (a copy for the calling thread). */
const char *grpc_transport_endpoint(struct grpc_transport *t);

/* As transport_set_endpoints(): safe while calls run. */
int grpc_transport_set_endpoints(struct grpc_transport *t,
				 const char *const *endpoints, size_t n,
				 struct store_error *err);

/*
 * If @endpoint is still the one in use, the next one becomes current (a
 * member that answered "no leader"): reads and refused writes go on
 * elsewhere.
 */
void grpc_transport_skip(struct grpc_transport *t, const char *endpoint);

/* Calls that so far found no endpoint answering; only grows. */
uint64_t grpc_transport_unreachable_count(struct grpc_transport *t);

/* ---- streams ---- */

struct grpc_stream;

/*
 * Opens a stream to @path on the current endpoint and sends @first (one
 * frame).  Connection failures show in grpc_stream_recv(); when the
 * stream failed before anything was sent, the next open goes to the next
 * endpoint.
 */
int grpc_stream_open(struct grpc_transport *t, const char *path,
		     const uint8_t *first, size_t len,
		     struct grpc_stream **out, struct store_error *err);

/* Queues one more frame on the stream's upload; 0 or EUNREACHABLE. */
int grpc_stream_send(struct grpc_stream *s, const uint8_t *frame, size_t len,
		     struct store_error *err);

enum grpc_stream_rc {
	GRPC_STREAM_IDLE = 0,	/* nothing within the time given */
	GRPC_STREAM_MSG = 1,	/* *msg (malloc()ed) and *len are one message */
	GRPC_STREAM_END = 2,	/* the server ended it: see @reply's status */
};

/*
 * Waits up to @timeout_ms for the next message.  Returns an enum
 * grpc_stream_rc, or a negative enum store_err when the stream broke
 * (EUNREACHABLE: lost or never connected; EBADREPLY: not gRPC, a message
 * over the cap).  At GRPC_STREAM_END, @status has the code and message;
 * an end with code 16 makes the next open authenticate again.
 */
int grpc_stream_recv(struct grpc_stream *s, long timeout_ms, uint8_t **msg,
		     size_t *len, struct grpc_reply *status,
		     struct store_error *err);

/* Asks for a new token at the next open (a watch cancelled for its token). */
void grpc_stream_token_rejected(struct grpc_stream *s);

/* Ends the stream (a reset if the server has not) and frees it. */
void grpc_stream_close(struct grpc_stream *s);

#endif /* ETCDFS_GRPC_TRANSPORT_H */
