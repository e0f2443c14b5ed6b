/*
 * grpc_transport_i.h - what the three files of the gRPC transport share:
 * grpc_transport.c (the thread, transfers, libcurl's callbacks, the
 * transport's life and fork), grpc_call.c (outcomes, unary calls with
 * failover, the auth token) and grpc_stream.c (streams).  Private to
 * them; the lock order and what each lock guards are in grpc_transport.c
 * and beside the fields below.
 */
#ifndef ETCDFS_GRPC_TRANSPORT_I_H
#define ETCDFS_GRPC_TRANSPORT_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <curl/curl.h>

#include "grpc_frame.h"
#include "grpc_transport.h"
#include "thread.h"

#define GT_DEFAULT_CONNECT_MS	2000L
#define GT_DEFAULT_REQUEST_MS	5000L
#define GT_DEFAULT_MAX_MSG	((size_t)256 << 20)
#define GT_DEFAULT_MAX_VALUE	((size_t)1536 << 10)
/*
 * Lanes.  libcurl 7.88 pauses its HTTP/2 input when a DATA frame does not
 * fit in the receive buffer of its stream, and while it is paused, another
 * stream of the connection that closes is ended without its trailers
 * (lib/http2.c, "closed overrides paused"): that call's grpc-status is
 * lost.  A big reply fills its buffer whenever other transfers read the
 * connection meanwhile: a list of 4 MB lost the status of dozens of small
 * calls beside it per second, whatever the buffer (16 KiB to 1 MiB).  So
 * calls go by three lanes, each a multi handle with its own thread and
 * connections: unary calls with a bounded reply, multiplexed, with buffers
 * that hold a whole reply (so no stream of theirs pauses); ranges that
 * may be big, one at a time (no other stream to lose); and streams, which
 * may pause one another, and only lose an end status (the watch then opens
 * a new stream).
 */
enum gt_lane_id {
	GT_LANE_UNARY,
	GT_LANE_BULK,
	GT_LANE_STREAM,
	GT_LANES
};

/*
 * Receive buffers: unary and stream transfers hold a reply with the
 * largest value (grpc_transport_config.max_value_size) and this much
 * more; bulk ones have a fixed one.  Only what a reply fills is touched.
 */
#define GT_BUFFER_SLACK		(64L << 10)
#define GT_BULK_BUFFER		(512L << 10)
/*
 * Easy handles kept for the next call of a lane (with their buffers),
 * at most; one whose transfer got more than GT_IDLE_BYTES is not kept, so
 * that big replies give their memory back.
 */
#define GT_IDLE_MAX		16
#define GT_IDLE_BYTES		((size_t)256 << 10)
/* Sends of a read whose answer was lost, at most, after the first. */
#define GT_LOST_RETRIES		2
/* A stream's replies waiting for their reader, before HTTP/2 holds back. */
#define GT_RECV_QUEUE_MAX	((size_t)8 << 20)
#define GT_USER_AGENT		"etcdfs-grpc"
/* "token: " and a token of at most 4096 bytes (etcd3_pb.c) */
#define GT_HEADER_MAX		4200
/* multi handles of parents kept after nested forks, at most */
#define GT_STALE_MAX		4

enum gt_h2 {
	GT_H2_NONE,		/* no h2c connection known: next is a pioneer */
	GT_H2_PIONEER,		/* one transfer is making the connection */
	GT_H2_READY,		/* one is up: multiplex on it */
};

struct gt_msg {
	struct gt_msg *next;
	size_t len;
	uint8_t data[];
};

struct gt_xfer {
	struct grpc_transport *t;
	struct gt_lane *lane;
	CURL *easy;
	struct curl_slist *headers;
	char url[1024];
	size_t ep_idx;
	uint64_t ep_gen;
	bool pioneer;		/* h2c prior knowledge on a fresh connection */
	bool stream;

	/* upload; unary: body[0..len), stream: sendq (under t->lock) */
	const uint8_t *body;
	size_t body_len, body_off;
	uint8_t *sendq;
	size_t sendq_len, sendq_cap;
	bool send_paused;	/* under t->lock */
	bool body_started;	/* a byte of the message was handed to curl */

	/* download (the thread's, until done) */
	struct grpc_reader rd;
	struct grpc_status st;
	int http_major;		/* of the status line; 0 before it */
	bool too_many;		/* unary: a second message */
	uint8_t *msg;		/* unary: the message */
	size_t msg_len;
	struct gt_msg *rq_head, *rq_tail;	/* stream: under t->lock */
	size_t rq_bytes;
	bool recv_paused;	/* under t->lock */

	/* under t->lock */
	int64_t queued_ms;	/* when submitted (thread_now_ms) */
	bool expired;		/* waited too long in a serial lane: not sent */
	bool unpause;		/* asked of the thread */
	bool cancel;		/* asked of the thread: stream closed */
	bool done;
	CURLcode rc;
	pthread_cond_t cond;	/* done, or a stream message queued */
	struct gt_xfer *next;	/* the lane's pending or active list */
	char errbuf[CURL_ERROR_SIZE];
};

/* One multi handle, its thread and its transfers (the lanes above). */
struct gt_lane {
	struct grpc_transport *t;
	CURLM *multi;			/* swapped under t->lock after a fork */
	CURLM *stale[GT_STALE_MAX];	/* a parent's, after forks */
	struct thread thread;		/* helper/thread.c: signals blocked */
	bool running;			/* under t->lock: thread started */
	pid_t pid;			/* under t->lock: the process of both */
	bool quit;			/* under t->lock */
	bool serial;			/* one transfer at a time */
	long buffer;			/* CURLOPT_BUFFERSIZE of its transfers */
	struct gt_xfer *pending;	/* under t->lock: to be added, FIFO */
	struct gt_xfer *pending_tail;
	struct gt_xfer *active;		/* under t->lock: in the multi */
	enum gt_h2 *h2;			/* under t->lock, one per endpoint */
	int activity;			/* atomic: a callback moved bytes */
	CURL *idle[GT_IDLE_MAX];	/* under t->lock: handles to reuse */
	size_t n_idle;			/* under t->lock */
};

struct grpc_transport {
	pthread_mutex_t lock;
	pthread_cond_t h2_cond;		/* an h2c state changed */
	char **endpoints;		/* under lock */
	size_t n_endpoints;		/* under lock */
	size_t current;			/* under lock */
	uint64_t gen;			/* under lock; bumped by set_endpoints */
	uint64_t unreachable;		/* atomic */
	struct gt_lane lanes[GT_LANES];
	struct grpc_transport *all_next;	/* under gt_all_lock */

	pthread_mutex_t auth_lock;
	char *token;			/* under auth_lock; "": auth off */
	uint64_t token_gen;		/* under auth_lock */

	/* read-only after grpc_transport_new */
	char *user, *password, *cacert, *cert, *keyfile;
	bool insecure_skip_tls_verify;
	long connect_ms, request_ms;
	size_t max_msg;
};

enum gt_outcome {
	GT_ANSWERED,		/* a gRPC status came */
	GT_NOT_SENT,		/* try the next endpoint */
	GT_HTTP1,		/* an HTTP/1 handler answered: again, as pioneer */
	GT_LOST,		/* sent, and the answer was lost: a read may
				 * be sent again; rc and err say what */
	GT_FAILED,		/* an error, in the return code */
};

/* grpc_transport.c */
/* Zeroes the string @s (a password, a token) and frees it. */
void gt_wipe_free(char *s);
/* Makes the thread of @lane look at its work now. */
void gt_wake(struct gt_lane *lane);
/* The h2c state of @x's endpoint becomes @st (same endpoint list only). */
void gt_h2_set(struct grpc_transport *t, const struct gt_xfer *x,
	       enum gt_h2 st);
/*
 * A transfer by @lane of @body (NULL: a stream) to @path at @endpoint, the
 * @idx-th of list generation @gen, with @token (NULL or "": none); NULL on
 * ENOMEM.
 */
struct gt_xfer *gt_xfer_new(struct grpc_transport *t, enum gt_lane_id lane,
			    const char *endpoint, size_t idx, uint64_t gen,
			    const char *path, const uint8_t *body, size_t len,
			    const char *token, bool force_pioneer);
/* Frees a transfer that is done, or was never submitted. */
void gt_xfer_free(struct gt_xfer *x);
/* Hands @x to the thread (started here if need be, see gt_own). */
void gt_submit(struct grpc_transport *t, struct gt_xfer *x);
/* Waits until @x is done. */
void gt_wait(struct grpc_transport *t, struct gt_xfer *x);
/* After @x is done: a pioneer without HTTP/2 leaves no connection. */
void gt_settle(struct grpc_transport *t, struct gt_xfer *x);

/* grpc_call.c */
/*
 * What became of the done transfer @x; for GT_FAILED, *@rc and @err say
 * what.  *@sent: whether a byte of its message may have gone out.
 */
enum gt_outcome gt_outcome(const struct gt_xfer *x, bool *sent, int *rc,
			   struct store_error *err);
/*
 * The endpoint @i places after *@start (set to the current one when @i is
 * 0), copied into @buf, with its index, the list's generation and size.
 */
void gt_endpoint_at(struct grpc_transport *t, size_t i, size_t *start,
		    char *buf, size_t size, size_t *idx, uint64_t *gen,
		    size_t *n);
/*
 * After a not-sent failure at @idx (of list @gen) by @lane: endpoint @to
 * becomes current, and @lane makes a new connection to @idx.
 */
void gt_moved_on(struct grpc_transport *t, struct gt_lane *lane, size_t idx,
		 uint64_t gen, size_t to);
/*
 * A copy of the token to send (NULL: none) and its generation;
 * authenticates first if there is none, or if @stale is the generation
 * the server refused.
 */
int gt_token(struct grpc_transport *t, bool renew, uint64_t stale, char **token,
	     uint64_t *gen, struct store_error *err);
/* The token of generation @gen was refused: the next call gets another. */
void gt_token_stale(struct grpc_transport *t, uint64_t gen);
/* Whether a status says the token was refused (not the request). */
bool gt_token_refused(int code, const char *message);

#endif /* ETCDFS_GRPC_TRANSPORT_I_H */
