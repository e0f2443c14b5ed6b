/*
 * transport_i.h - what transport.c and transport_xfer.c share: the
 * transport's state, one transfer's, and the functions of
 * transport_xfer.c that transport.c calls (never the other way)
 *
 * What it cannot do: be used outside the transport; everything else sees
 * helper/transport.h.
 */
#ifndef ETCDFS_TRANSPORT_I_H
#define ETCDFS_TRANSPORT_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "errors.h"
#include "transport.h"

#define TR_DEFAULT_CONNECT_TIMEOUT_MS	2000L
#define TR_DEFAULT_REQUEST_TIMEOUT_MS	5000L
#define TR_DEFAULT_MAX_REPLY		((size_t)256 << 20)
/* An error reply of a stream is kept whole, for the caller. */
#define TR_STREAM_ERROR_CAP		((size_t)64 << 10)

struct transport;

/* One thread's curl handle; lives until the thread exits or transport_free. */
struct tr_handle {
	struct transport *t;
	CURL *curl;
	CURL *stream;			/* the last stream's, kept with its
					 * connection for the next (a v2
					 * watch is one request an event) */
	struct tr_handle *prev, *next;	/* protected by t->lock */
	char *endpoint;			/* this thread's copy, see
					 * transport_endpoint() */
	size_t endpoint_cap;
	char errbuf[CURL_ERROR_SIZE];
};

struct transport {
	pthread_mutex_t lock;
	char **endpoints;		/* protected by lock */
	size_t n_endpoints;		/* protected by lock */
	size_t current;			/* protected by lock */
	uint64_t endpoints_gen;		/* protected by lock; bumped by
					 * transport_set_endpoints */
	struct tr_handle *handles;	/* protected by lock */
	/* atomic: requests that found no endpoint answering */
	uint64_t unreachable;

	pthread_key_t key;		/* -> struct tr_handle */

	/* Read-only after transport_new. */
	enum transport_auth auth;
	char *user;
	char *password;
	char *cacert;
	char *cert;
	char *keyfile;
	bool insecure_skip_tls_verify;
	long connect_timeout_ms;
	long request_timeout_ms;
	size_t max_reply_size;
};

/* What one transfer is about, and what came of it. */
struct tr_xfer {
	struct transport *t;
	const char *method;
	const char *path;
	const char *content_type;
	const char *body;
	size_t len;
	char *url;			/* owned, the last one tried */
	int sends;			/* of this attempt, by libcurl */
	bool resent;			/* libcurl would have sent it again */

	/* Request mode: the reply, capped at t->max_reply_size. */
	struct transport_reply *reply;
	size_t cap;
	bool too_large;

	/* Stream mode (fn != NULL). */
	transport_data_fn fn;
	void *arg;
	const volatile bool *stop;
	long status;			/* known once the first byte came */
	bool fn_ended;			/* fn returned non-zero */
	bool stopped;			/* *stop was seen */
	CURL *curl;
};

/*
 * transport_xfer.c: the endpoint copy of @h (see transport_endpoint());
 * false on ENOMEM.
 */
bool tr_handle_set_endpoint(struct tr_handle *h, const char *s);

/* The stream's owner sets *stop from another thread. */
bool tr_stopped(const volatile bool *stop);

/*
 * Runs @x on @curl against the current endpoint, then the others in turn
 * while nothing could be sent (transport_xfer.c).
 */
int tr_perform(struct tr_xfer *x, CURL *curl, struct tr_handle *h,
	       char *errbuf, struct store_error *err);

#endif /* ETCDFS_TRANSPORT_I_H */
