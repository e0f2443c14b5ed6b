/*
 * etcd3_codec.h - requests to and replies from the etcd v3 JSON gateway
 *
 * Pure functions: they build request bodies, parse reply bodies and frame
 * the watch stream, and never do I/O, so they can be unit-tested on
 * captured replies and fuzzed.  Keys and values travel as base64; 64-bit
 * numbers arrive as JSON strings (and are accepted as JSON integers too);
 * proto3 JSON omits every field whose value is zero, false or empty, so a
 * missing optional field reads as zero.
 *
 * Every parser treats the body as hostile: a body that is not JSON, is cut
 * short, lacks a required field or holds one of the wrong type or range, or
 * carries bad base64, gives STORE_EBADREPLY with a message that names the
 * field ("'kvs[1].key' is not valid base64").  Parsers fill only the code,
 * revision and msg of a struct store_error; the caller adds the key.
 *
 * What it cannot do: nested transactions, range_end on compares, any
 * request of the gateway that the etcd3 backend does not send.
 */
#ifndef ETCDFS_ETCD3_CODEC_H
#define ETCDFS_ETCD3_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store.h"	/* the watch event types */

/* ---- base64 (RFC 4648 standard alphabet, with padding) ---- */

/*
 * Encodes @len bytes of @data.  Returns a malloc()ed NUL-terminated string
 * and its length in *@out_len (if not NULL), or NULL when out of memory.
 */
char *etcd3_b64_encode(const char *data, size_t len, size_t *out_len);

/*
 * Decodes @len characters of @in, strictly: the length must be a multiple
 * of 4, only the alphabet may appear, '=' only as the last one or two
 * characters, and the bits padding leaves over must be zero, so that every
 * byte string has exactly one accepted encoding.  On success *@out is a
 * malloc()ed buffer NUL-terminated past its length *@out_len (even when
 * empty).  Returns 0, STORE_EBADREPLY (*@out untouched) or STORE_EINTERNAL.
 */
int etcd3_b64_decode(const char *in, size_t len, char **out, size_t *out_len);

/* ---- requests: each returns a new reference, NULL when out of memory ---- */

struct etcd3_range_req {
	const char *key;
	size_t key_len;
	const char *range_end;	/* NULL: the single key */
	size_t range_end_len;
	int64_t limit;		/* 0: no limit */
	int64_t revision;	/* 0: the current one */
	bool serializable;
	bool keys_only;
	bool count_only;
};

json_t *etcd3_req_range(const struct etcd3_range_req *r);

/* A plain put; @lease 0: none, -1: keep the key's current lease. */
json_t *etcd3_req_put(const char *key, size_t key_len, const char *value,
		      size_t value_len, int64_t lease);

/*
 * Compare-and-swap: a txn that puts @value at @key if its mod_revision is
 * @expect (0: the key is absent; -1: no comparison, the put always
 * happens).  The failure branch ranges the key, so a lost swap answers
 * with the key's current state.  @lease as etcd3_req_put.
 */
json_t *etcd3_req_cas(const char *key, size_t key_len, int64_t expect,
		      const char *value, size_t value_len, int64_t lease);

/*
 * A txn that deletes @key (prev_kv) if its mod_revision is @expect_mod
 * (-1: unchecked) and its create_revision is @expect_create (0:
 * unchecked); the failure branch ranges the key.
 */
json_t *etcd3_req_delete(const char *key, size_t key_len, int64_t expect_mod,
			 int64_t expect_create);

/*
 * A txn that moves @from to @to: compares @from's mod_revision with
 * @from_mod and @to's with @to_mod (-1: unchecked, 0: must be absent) and
 * their create_revision with @from_create and @to_create (0: unchecked);
 * success puts @value at @to and deletes @from; failure ranges @from, then
 * @to, in that order.
 */
json_t *etcd3_req_move(const char *from, size_t from_len, int64_t from_mod,
		       int64_t from_create, const char *to, size_t to_len,
		       int64_t to_mod, int64_t to_create, const char *value,
		       size_t value_len);

json_t *etcd3_req_lease_grant(int64_t ttl);

/*
 * A watch create_request on @key (range_end NULL: the single key) from
 * @start_rev (0: from now), with prev_kv and progress notifications.
 */
json_t *etcd3_req_watch(const char *key, size_t key_len,
			const char *range_end, size_t range_end_len,
			int64_t start_rev);

/*
 * Serializes @req compactly and releases it (steals the reference, even
 * on failure).  Returns a malloc()ed string and its length, NULL when out
 * of memory or when @req is NULL.
 */
char *etcd3_dump_own(json_t *req, size_t *len);

/* ---- replies ---- */

enum etcd3_op {
	ETCD3_OP_RANGE,
	ETCD3_OP_PUT,
	ETCD3_OP_DELETE,
};

/*
 * One response: a range or put or deleterange reply on its own, or one
 * element of a txn's responses.  Owns its kvs.
 */
struct etcd3_result {
	enum etcd3_op op;
	int64_t revision;	/* header.revision; 0 if absent */
	struct store_kv *kvs;	/* range: kvs; delete: prev_kvs;
				 * put: prev_kv, if any */
	size_t n;
	int64_t count;		/* range: count; delete: deleted */
	bool more;		/* range: keys left after the last one */
};

void etcd3_result_release(struct etcd3_result *r);

struct etcd3_txn {
	int64_t revision;	/* header.revision */
	bool succeeded;
	struct etcd3_result *res;	/* one per request of the branch */
	size_t n;
};

void etcd3_txn_release(struct etcd3_txn *t);

/*
 * Reply parsers.  Each returns 0 or STORE_EBADREPLY / STORE_EINTERNAL with
 * @err (if not NULL) filled; on error the output holds nothing to free.
 * header.revision is required (and positive) for range, put, txn and
 * lease grant replies.
 */
int etcd3_parse_range(const char *body, size_t len, struct etcd3_result *out,
		      struct store_error *err);
int etcd3_parse_put(const char *body, size_t len, struct etcd3_result *out,
		    struct store_error *err);
int etcd3_parse_txn(const char *body, size_t len, struct etcd3_txn *out,
		    struct store_error *err);
int etcd3_parse_lease_grant(const char *body, size_t len, int64_t *id,
			    int64_t *ttl, struct store_error *err);

/* Members; free them with store_members_free() (helper/kv.h). */
int etcd3_parse_members(const char *body, size_t len,
			struct store_member **members, size_t *n,
			struct store_error *err);

/*
 * Maps an error reply (HTTP @status, body {"error","message","code"}) to an
 * enum store_err, which it returns, and fills @err with etcd's message and
 * the status and code ("etcdserver: request is too large (http 400, code
 * 3)").  A body that is not such an object is reported as EBADREPLY, or by
 * the status alone where that says enough (503, 504, 401, 403, 413).
 */
int etcd3_parse_error(long status, const char *body, size_t len,
		      struct store_error *err);

/*
 * The mapping itself: a gRPC @code (-1: unknown) and etcd's @message
 * (NULL: none) to an enum store_err.  The message wins where it is more
 * precise than the code ("request timed out" comes with code 14).
 */
int etcd3_map_error(int code, const char *message);

/* ---- the watch stream ---- */

/*
 * Frames a byte stream into lines: chunks may end anywhere, inside a line
 * or inside a multi-byte character.  Holds at most @max bytes of one line.
 */
struct etcd3_framer {
	char *buf;		/* the incomplete last line */
	size_t len;
	size_t cap;
	size_t max;
	bool broken;		/* a line ran over max: no more framing */
};

void etcd3_framer_init(struct etcd3_framer *f, size_t max);
void etcd3_framer_release(struct etcd3_framer *f);

/* Forgets a partial line and a broken state, for a new stream. */
void etcd3_framer_reset(struct etcd3_framer *f);

/*
 * Called with one line, without its "\n" (nor a "\r" before it), not
 * NUL-terminated; empty lines are skipped.  Returns 0 to go on, non-zero
 * to stop.
 */
typedef int (*etcd3_line_fn)(void *arg, const char *line, size_t len);

/*
 * Feeds @len bytes; calls @fn once per complete line, in order.  Returns 0,
 * what @fn returned when it stopped (the rest of @data is dropped), or
 * STORE_EBADREPLY once a line is longer than max (and on every later
 * call), or STORE_EINTERNAL when out of memory.
 */
int etcd3_framer_feed(struct etcd3_framer *f, const char *data, size_t len,
		      etcd3_line_fn fn, void *arg);

/*
 * The bytes after the last newline (borrowed; not NUL-terminated), which
 * the server may have sent as a last line without "\n".
 */
const char *etcd3_framer_rest(const struct etcd3_framer *f, size_t *len);

enum etcd3_watch_kind {
	ETCD3_WATCH_CREATED,	/* the watch is in place */
	ETCD3_WATCH_EVENTS,	/* events[0..n) */
	ETCD3_WATCH_PROGRESS,	/* nothing changed up to revision */
	ETCD3_WATCH_CANCELED,	/* the server ended the watch (err) */
	ETCD3_WATCH_ERROR,	/* the stream carried an error (err) */
};

struct etcd3_watch_event {
	enum store_event_type type;	/* STORE_EV_PUT or STORE_EV_DELETE */
	struct store_kv kv;
	struct store_kv prev_kv;	/* zeroed if not sent */
	int64_t revision;		/* kv.mod_revision */
};

struct etcd3_watch_msg {
	enum etcd3_watch_kind kind;
	int64_t revision;	/* header.revision; 0 if absent */
	int64_t watch_id;
	int64_t compact_revision;	/* CANCELED on a compacted start */
	int err;		/* CANCELED, ERROR: the enum store_err */
	char msg[256];		/* CANCELED, ERROR: the reason if given */
	struct etcd3_watch_event *events;
	size_t n;
};

/*
 * Parses one line of the watch stream: {"result":{...}} or
 * {"error":{"grpc_code","message",...}} (a stream broken by the server),
 * or an error body {"error","message","code"} (a failed request).  A
 * result with events, or one canceled, or created, is that; one with
 * nothing but a header is a progress notification, whose revision is
 * required.  CANCELED with a compact_revision has err STORE_ECOMPACTED.
 */
int etcd3_parse_watch(const char *line, size_t len, struct etcd3_watch_msg *out,
		      struct store_error *err);
void etcd3_watch_msg_release(struct etcd3_watch_msg *m);

#endif /* ETCDFS_ETCD3_CODEC_H */
