/*
 * etcd3_pb.h - etcd v3 gRPC messages to and from the store's types
 *
 * Pure functions over protobuf-c (the messages of the .proto files in
 * helper/proto): each request builder returns the request as one gRPC
 * frame (prefix and message, ready to send); each reply decoder takes one
 * message (without its prefix) and fills the store's types.  They never do I/O, so they are
 * unit-tested on replies captured from real etcd servers and fuzzed.
 *
 * Every decoder treats its input as hostile: bytes that are not the
 * message (bad wire types, truncated fields, lengths past the end) and
 * messages that lack what etcd always sends (a header with a positive
 * revision, a non-empty key) give STORE_EBADREPLY with a message that
 * names the field.  Decoders fill only the code, revision and msg of a
 * struct store_error; the caller adds the key.  Unknown fields are
 * skipped, so newer etcd versions decode.
 *
 * What it cannot do: nested transactions, range_end on compares other
 * than a move's, and any request the v3 backend does not send.
 */
#ifndef ETCDFS_ETCD3_PB_H
#define ETCDFS_ETCD3_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- requests: each a malloc()ed gRPC frame, NULL when out of memory ---- */

struct etcd3pb_range_req {
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

uint8_t *etcd3pb_req_range(const struct etcd3pb_range_req *r, size_t *len);

/* A txn without compares whose success branch is the @n ranges of @r. */
uint8_t *etcd3pb_req_txn_ranges(const struct etcd3pb_range_req *r, size_t n,
				size_t *len);

/*
 * Compare-and-swap: a txn that puts @value at @key if its mod_revision is
 * @expect (0: the key is absent; -1: no comparison); the failure branch
 * ranges the key, so a lost swap answers with the key's state.  @lease 0:
 * none, -1: keep the key's current lease (ignore_lease).
 */
uint8_t *etcd3pb_req_cas(const char *key, size_t key_len, int64_t expect,
			 const char *value, size_t value_len, int64_t lease,
			 size_t *len);

/*
 * A txn that deletes @key (prev_kv) if its mod_revision is @expect_mod (-1:
 * unchecked) and its create_revision @expect_create (0: unchecked); the
 * failure branch ranges the key.
 */
uint8_t *etcd3pb_req_delete(const char *key, size_t key_len,
			    int64_t expect_mod, int64_t expect_create,
			    size_t *len);

/*
 * A txn that moves @from to @to: compares the mod_revisions with @from_mod
 * and @to_mod (-1: unchecked, 0: absent) and the create_revisions with
 * @from_create and @to_create (0: unchecked); success puts @value at @to
 * and deletes @from; failure ranges @from, then @to.
 */
uint8_t *etcd3pb_req_move(const char *from, size_t from_len, int64_t from_mod,
			  int64_t from_create, const char *to, size_t to_len,
			  int64_t to_mod, int64_t to_create, const char *value,
			  size_t value_len, size_t *len);

/* The ranges a move compares as a whole: [from, from_end), [to, to_end). */
struct etcd3pb_move_ranges {
	const char *from, *from_end;
	size_t from_len, from_end_len;
	int64_t revision;	/* every key of the first: mod_revision <= it */
	const char *to, *to_end;	/* no key in the second */
	size_t to_len, to_end_len;
};

/*
 * One txn moving the @n keys of @k (full keys): every source compared at
 * its mod_revision and every target at 0 (absent), then each target put
 * (with its lease) and each source deleted; no failure branch.  With @r
 * (or NULL), its two range compares come first, and a target inside
 * r->to's range is not compared again: n + 2 compares instead of 2 * n.
 */
uint8_t *etcd3pb_req_move_keys(const struct store_move_key *k, size_t n,
			       const struct etcd3pb_move_ranges *r,
			       size_t *len);
/*
 * A grant of a lease of @ttl seconds with the id @id (0: etcd chooses
 * one).  etcd grants an id once: asked again for one it holds, it says
 * "lease already exists" (etcd3pb_map_error: STORE_EEXISTS).
 */
uint8_t *etcd3pb_req_lease_grant(int64_t ttl, int64_t id, size_t *len);
uint8_t *etcd3pb_req_lease_revoke(int64_t id, size_t *len);
uint8_t *etcd3pb_req_lease_keepalive(int64_t id, size_t *len);
uint8_t *etcd3pb_req_lease_ttl(int64_t id, size_t *len);

/*
 * A watch create_request on @key (range_end NULL: the single key) from
 * @start_rev (0: from now), with prev_kv and progress_notify.
 */
uint8_t *etcd3pb_req_watch_create(const char *key, size_t key_len,
				  const char *range_end, size_t range_end_len,
				  int64_t start_rev, size_t *len);
uint8_t *etcd3pb_req_watch_cancel(int64_t watch_id, size_t *len);
uint8_t *etcd3pb_req_watch_progress(size_t *len);

/* MemberList, linearizable (a field etcd 3.4 ignores). */
uint8_t *etcd3pb_req_members(size_t *len);
uint8_t *etcd3pb_req_status(size_t *len);
uint8_t *etcd3pb_req_authenticate(const char *user, const char *password,
				  size_t *len);

/* ---- replies ---- */

enum etcd3pb_op {
	ETCD3PB_RANGE,
	ETCD3PB_PUT,
	ETCD3PB_DELETE,
};

/* A range, put or delete reply, alone or inside a txn; owns its kvs. */
struct etcd3pb_result {
	enum etcd3pb_op op;
	int64_t revision;	/* header.revision; 0 if absent */
	struct store_kv *kvs;	/* range: kvs; delete: prev_kvs;
				 * put: prev_kv, if any */
	size_t n;
	int64_t count;		/* range: count; delete: deleted */
	bool more;		/* range: keys left after the last one */
};

void etcd3pb_result_release(struct etcd3pb_result *r);

struct etcd3pb_txn {
	int64_t revision;	/* header.revision */
	bool succeeded;
	struct etcd3pb_result *res;	/* one per request of the branch */
	size_t n;
};

void etcd3pb_txn_release(struct etcd3pb_txn *t);

/*
 * Each returns 0 or STORE_EBADREPLY / STORE_EINTERNAL with @err filled; on
 * error the output holds nothing to free.
 */
int etcd3pb_decode_range(const uint8_t *msg, size_t len,
			 struct etcd3pb_result *out, struct store_error *err);
int etcd3pb_decode_put(const uint8_t *msg, size_t len,
		       struct etcd3pb_result *out, struct store_error *err);
int etcd3pb_decode_delete(const uint8_t *msg, size_t len,
			  struct etcd3pb_result *out, struct store_error *err);
int etcd3pb_decode_txn(const uint8_t *msg, size_t len, struct etcd3pb_txn *out,
		       struct store_error *err);
int etcd3pb_decode_lease_grant(const uint8_t *msg, size_t len, int64_t *id,
			       int64_t *ttl, struct store_error *err);
/* KeepAlive and TimeToLive: *@ttl is -1 for an expired or unknown lease. */
int etcd3pb_decode_lease_ttl(const uint8_t *msg, size_t len, int64_t *id,
			     int64_t *ttl, struct store_error *err);
/* A malloc()ed, NUL-terminated token, checked to be a header value. */
int etcd3pb_decode_authenticate(const uint8_t *msg, size_t len, char **token,
				struct store_error *err);

/* Members; free them with store_members_free() (helper/kv.h). */
int etcd3pb_decode_members(const uint8_t *msg, size_t len,
			   struct store_member **members, size_t *n,
			   struct store_error *err);

struct etcd3pb_status {
	int64_t revision;
	uint64_t member_id;
	uint64_t leader;	/* 0: it knows of no leader */
	uint64_t raft_index;
	uint64_t raft_term;
	int64_t db_size;
	int64_t db_size_in_use;
	char version[32];
	char errors[256];	/* the alarms etc., "; "-separated */
};

int etcd3pb_decode_status(const uint8_t *msg, size_t len,
			  struct etcd3pb_status *out, struct store_error *err);

/* ---- the watch stream ---- */

enum etcd3pb_watch_kind {
	ETCD3PB_WATCH_CREATED,	/* the watch is in place */
	ETCD3PB_WATCH_EVENTS,	/* events[0..n) */
	ETCD3PB_WATCH_PROGRESS,	/* nothing changed up to revision */
	ETCD3PB_WATCH_CANCELED,	/* the server ended the watch (err) */
};

struct etcd3pb_watch_event {
	enum store_event_type type;	/* STORE_EV_PUT or STORE_EV_DELETE */
	struct store_kv kv;
	struct store_kv prev_kv;	/* zeroed if not sent */
	int64_t revision;		/* kv.mod_revision */
};

struct etcd3pb_watch_msg {
	enum etcd3pb_watch_kind kind;
	int64_t revision;	/* header.revision */
	int64_t watch_id;
	int64_t compact_revision;	/* CANCELED on a compacted start */
	bool fragment;		/* more events of this revision follow */
	int err;		/* CANCELED: the enum store_err */
	char msg[256];		/* CANCELED: cancel_reason, if given */
	struct etcd3pb_watch_event *events;
	size_t n;
};

/*
 * One WatchResponse.  Canceled (with or without created, as etcd 3.4 says
 * a bad token) is CANCELED, with err ECOMPACTED when compact_revision is
 * set, else the mapping of cancel_reason's "rpc error: code = X desc = Y";
 * events make EVENTS (each with a positive mod_revision and a key);
 * created alone CREATED; nothing but a header PROGRESS, whose revision is
 * required.
 */
int etcd3pb_decode_watch(const uint8_t *msg, size_t len,
			 struct etcd3pb_watch_msg *out,
			 struct store_error *err);
void etcd3pb_watch_msg_release(struct etcd3pb_watch_msg *m);

/* ---- errors ---- */

/*
 * A gRPC status @code (-1: unknown) and etcd's @message (NULL: none) to an
 * enum store_err.  The message wins where it is more precise than the
 * code ("etcdserver: request timed out" comes with code 14, but the
 * request may have been applied).
 */
int etcd3pb_map_error(int code, const char *message);

/*
 * True if a failure with @code and @message says that etcd refused the
 * request before proposing it ("etcdserver: no leader", "too many
 * requests"), so that even a write may go to another member as it is.
 * Other transient failures ("leader changed", "request timed out") leave
 * a write's outcome unknown; only reads may be sent again after them.
 */
bool etcd3pb_error_not_applied(int code, const char *message);

/* True if the failure is transient: another member may answer a read. */
bool etcd3pb_error_transient(int code, const char *message);

#endif /* ETCDFS_ETCD3_PB_H */
