/*
 * transport.h - HTTP to an etcd cluster, on libcurl
 *
 * One transport serves many threads: each thread gets a curl easy handle of
 * its own (never shared), kept alive between requests, so a thread reuses
 * its connection.  Requests go to the current endpoint; when it cannot be
 * connected to, the next endpoints are tried in turn and the first that
 * answers becomes current for everyone.  Only a request that could not be
 * sent is tried elsewhere: a timeout after sending is reported as ETIMEOUT
 * and a connection lost after sending as EUNKNOWN, since the server may
 * have applied the request.
 *
 * Every request is bounded by connect_timeout_ms and request_timeout_ms;
 * a reply larger than max_reply_size is cut off and reported as EBADREPLY.
 *
 * TRANSPORT_AUTH_BASIC sends HTTP basic auth (etcd v2).  It serves the
 * etcd2 backend and the benchmarks' loader; the etcd3 backend speaks gRPC
 * (grpc_transport.h).
 */
#ifndef ETCDFS_TRANSPORT_H
#define ETCDFS_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "transport_xfer.h"

enum transport_auth {
	TRANSPORT_AUTH_NONE,
	TRANSPORT_AUTH_BASIC,
};

struct transport_config {
	const char *const *endpoints;	/* URLs without a trailing '/' */
	size_t n_endpoints;
	const char *cacert;
	const char *cert;
	const char *key;
	bool insecure_skip_tls_verify;	/* accept any server certificate */
	enum transport_auth auth;
	const char *user;
	const char *password;
	long connect_timeout_ms;
	long request_timeout_ms;
	size_t max_reply_size;
};

/* Copies what it needs of @cfg.  NULL on error, with @err filled. */
struct transport *transport_new(const struct transport_config *cfg,
				struct store_error *err);
void transport_free(struct transport *t);

/*
 * Sends @method @path (e.g. "POST", "/v3/kv/range") with @body of
 * @content_type (NULL: no body) and fills @reply with whatever HTTP status
 * came back.  Returns 0, EUNREACHABLE (nothing was sent), EUNKNOWN (sent,
 * and the connection was lost before the answer), ETIMEOUT (sent, no
 * answer in time), EBADREPLY (cut off, over the size cap) or EINTERNAL.  Interpreting the
 * status and body is the caller's job.
 */
int transport_request(struct transport *t, const char *method,
		      const char *path, const char *content_type,
		      const char *body, size_t len,
		      struct transport_reply *reply, struct store_error *err);

/*
 * Called with each piece of a streamed reply as it arrives, in order.
 * Returns 0 to go on, non-zero to end the stream.
 */
typedef int (*transport_data_fn)(void *arg, const char *data, size_t len);

/*
 * Sends a request whose reply is a stream (the v3 watch, a v2 wait) on a
 * handle of its own, and calls @fn with the reply's bytes until the server
 * ends it, @fn returns non-zero, or *@stop becomes true (checked at least
 * once a second).  There is no overall timeout; a dead peer is found by
 * TCP keep-alive.  The HTTP status is stored in *@status.  Returns 0 when
 * the stream ended or was stopped, or an error as transport_request.
 */
int transport_stream(struct transport *t, const char *method,
		     const char *path, const char *content_type,
		     const char *body, size_t len, transport_data_fn fn,
		     void *arg, const volatile bool *stop, long *status,
		     struct store_error *err);

/* The endpoint requests go to now (borrowed). */
const char *transport_endpoint(struct transport *t);

/*
 * Replaces the endpoint list (members refresh): copies @endpoints (@n > 0,
 * none empty) and stays on the endpoint in use if the new list has it,
 * else starts from the first.  Safe while other threads' requests run;
 * TLS and auth settings are kept.  0 or an error (the list unchanged).
 */
int transport_set_endpoints(struct transport *t, const char *const *endpoints,
			    size_t n, struct store_error *err);

/*
 * How many requests so far found no endpoint that could be connected to;
 * only grows.  A caller that saw it change knows that the whole list
 * failed since it last looked.
 */
uint64_t transport_unreachable_count(struct transport *t);

/*
 * True if the server ended the TLS handshake because of the client's
 * certificate ("alert bad certificate", "alert unknown ca", ...), for a
 * libcurl code @rc and its error buffer: with TLS 1.3 this shows only at
 * the first read, after the request went out, but the server never read
 * it, so it was not sent.  The gRPC transport asks it too.
 */
bool transport_cert_refused(int rc, const char *errbuf);

#endif /* ETCDFS_TRANSPORT_H */
