/*
 * store.h - the storage interface of etcdfs, after the Kubernetes etcd helper
 *
 * A store is a key-value view of one etcd cluster, limited to one prefix.
 * Every key handed to or returned by these functions is relative to that
 * prefix: the store prepends it on the way out and strips it on the way in,
 * and keys outside it are never returned.  Keys and values are byte strings
 * with explicit lengths; a key may hold any byte, NUL included.
 *
 * Every call returns 0 or a negative enum store_err (helper/errors.h).
 * When a struct store_error is passed it is filled on error only, with the
 * key (printable), the revision that matters and a one-line cause.  The
 * values (struct store_kv, store_list, store_member) are in helper/kv.h.
 *
 * A store may be used from many threads at once.  v3: every thread's
 * calls share one HTTP/2 connection per endpoint; v2: each thread gets a
 * connection of its own, kept alive between requests.
 *
 * Writes (store_create, store_delete, store_guaranteed_update,
 * store_move, store_move_keys) whose request went out and whose answer
 * was lost are settled: the keys are read again, and the write is sent
 * once more if nothing was applied, reported done if etcd holds it, and
 * else fails with STORE_EUNKNOWN ("may have been applied"); those never
 * return STORE_ETIMEOUT.  Writes of one key by one store go one at a
 * time.
 * store_lease_grant names the lease's id itself, and a grant whose
 * answer was lost is sent again with it: settled as well.  store_mkdir
 * and store_rmdir are not settled: a lost answer is STORE_EUNKNOWN or
 * STORE_ETIMEOUT.  STORE_EUNREACHABLE from any call means nothing was
 * done.
 *
 * What it cannot do: multi-key transactions other than renames
 * (store_move, store_move_keys); keep a lease alive.
 */
#ifndef ETCDFS_STORE_H
#define ETCDFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "kv.h"

/*
 * Preconditions on the current state of a key.  A field of 0 is not
 * checked.  mod_revision STORE_REV_ABSENT means "the key must not exist".
 * create_revision is etcd's stand-in for a Kubernetes UID: it changes when a
 * key is deleted and created again.
 */
#define STORE_REV_ABSENT (-1)

struct store_preconditions {
	int64_t mod_revision;
	int64_t create_revision;
};

/* Read flags. */
#define STORE_READ_QUORUM	(1u << 0)	/* linearizable, whatever the config */
#define STORE_READ_SERIAL	(1u << 1)	/* serializable, whatever the config */
#define STORE_READ_KEYS_ONLY	(1u << 2)	/* list: no values */

enum store_api {
	STORE_API_V3 = 3,
	STORE_API_V2 = 2,
};

/* The kinds of requests the store counts (store_stats). */
enum store_req {
	STORE_REQ_READ,		/* v3 Range; v2 GET of keys */
	STORE_REQ_WRITE,	/* v3 Txn; v2 PUT, DELETE */
	STORE_REQ_LEASE,
	STORE_REQ_MEMBERS,
	STORE_REQ_STATUS,
	STORE_REQ_WATCH,	/* a watch stream opened; v2: each wait */
	STORE_REQ_COUNT
};

/*
 * Called after every request to etcd (when set in the config), on the
 * thread that made it: @method is the gRPC method or "GET /v2/keys",
 * @key the key it is about (printable, may be empty), @rc its outcome,
 * @us how long it took.  For -d's trace.
 */
typedef void (*store_trace_fn)(const char *method, const char *key,
			       int rc, long us);

struct store_config {
	enum store_api api;
	const char *endpoints;	/* comma list of URLs; NULL: http://127.0.0.1:2379 */
	const char *prefix;	/* NULL or "": the whole key space */
	const char *cacert;	/* PEM file; NULL: the system's */
	const char *cert;	/* client certificate, PEM */
	const char *key;	/* its private key, PEM */
	bool insecure_skip_tls_verify;	/* accept any server certificate */
	const char *user;	/* NULL: no auth */
	const char *password;
	long connect_timeout_ms;	/* 0: 2000 */
	long request_timeout_ms;	/* 0: 5000 */
	bool quorum;		/* linearizable reads by default (etcd's default) */
	size_t page_size;	/* keys per list request; 0: 1000 */
	size_t max_value_size;	/* 0: 1.5 MiB, etcd's default */
	size_t max_reply_size;	/* 0: 256 MiB; a larger reply is EBADREPLY */
	int max_update_retries;	/* 0: 16 */
	/*
	 * The cluster's --max-txn-ops: the most operations etcd takes in one
	 * txn.  A listing counts its sub-ranges with one operation each, at
	 * most this many (and at most 64) a txn.  0: etcd's default, 128.
	 */
	unsigned max_txn_ops;
	/*
	 * 0: talk to the endpoints given, only.  Else the store asks the
	 * cluster for its members (store_refresh_endpoints) at its first
	 * request, then at most every refresh_endpoints_ms, and at once
	 * after every endpoint failed (at most once a second), and talks to
	 * their client URLs, the endpoints given kept as the last resort.
	 */
	long refresh_endpoints_ms;
	store_trace_fn trace;	/* NULL: none */
	/*
	 * 0: the key space as it is.  Else every get, list and history
	 * reads it as it was at this revision (v3; v2 cannot: ENOTSUP);
	 * such a store is for reads: its caller makes no writes.
	 */
	int64_t revision;
	/*
	 * NULL: talk to etcd.  Else the path of an etcd snapshot file
	 * (`etcdctl snapshot save`, or a copied member db) that the store
	 * reads instead, read-only: every write is ENOTSUP, there is no
	 * watch, and the endpoints are not used (helper/store_snapshot.c).
	 */
	const char *snapshot;
	bool skip_hash_check;	/* open a snapshot whose sha256 mismatches */
};


struct store;

/*
 * Creates a store from @cfg; checks the configuration but does not
 * contact the cluster (see store_revision).  Returns NULL on error, with
 * @err filled.
 */
struct store *store_new(const struct store_config *cfg, struct store_error *err);

/* Stops every watch of @s and frees it. */
void store_free(struct store *s);

/* What the store counted since it was made. */
struct store_stats {
	uint64_t requests[STORE_REQ_COUNT];
	uint64_t errors[STORE_ERR_COUNT];	/* requests that failed, by
						 * -enum store_err */
	uint64_t retries;	/* requests sent again: to another member, a
				 * write whose answer was lost, an update
				 * after a conflict */
	uint64_t conflicts;	/* writes whose compare etcd refused */
	uint64_t bytes_sent;	/* request bodies (no HTTP framing) */
	uint64_t bytes_received;	/* reply bodies, watches' too */
};

void store_stats(struct store *s, struct store_stats *out);

/* "read", "write", ...: the name of a kind of request. */
const char *store_req_name(int kind);

/* The backend's name: "etcd3", "etcd2" or "snapshot". */
const char *store_backend_name(const struct store *s);

/* The largest value a put may carry. */
size_t store_max_value_size(const struct store *s);

/*
 * The endpoint the calling thread last talked to (borrowed, valid until the
 * next call on this thread), or the first one.
 */
const char *store_endpoint(struct store *s);

/* The cluster's current revision, by a cheap linearizable request. */
int store_revision(struct store *s, int64_t *rev, struct store_error *err);

/*
 * What the member the store talks to says of its space.  db_size is the
 * size of its database file (etcd's dbSize), which counts against the
 * cluster's quota (--quota-backend-bytes); db_size_in_use is the part of
 * it in use (0: not known; a defragment gives the rest back).  nospace:
 * the member reports the NOSPACE alarm, under which etcd refuses every
 * v3 write until an operator frees space and disarms it.  etcd 3.4 and
 * 3.5 do not say what their quota is.
 */
struct store_status {
	int64_t db_size;
	int64_t db_size_in_use;
	bool nospace;
};

/*
 * Asks the member in use for its status (v3: Maintenance/Status; v2:
 * the gauges of its /metrics, which the v2 API has no call for).
 */
int store_status(struct store *s, struct store_status *out,
		 struct store_error *err);

/* Reads one key into @out (released by the caller).  ENOTFOUND if absent. */
int store_get(struct store *s, const char *key, size_t key_len, unsigned flags,
	      struct store_kv *out, struct store_error *err);

/*
 * Reads every key that starts with the bytes @prefix (empty: every key of
 * the store), recursively, in pages of page_size keys, all at the revision
 * of the first page.  @out is filled (and must be released by the caller)
 * even when there are no keys.  Callers that want a directory pass a prefix
 * that ends in '/', so that "a/" never matches "ab".
 */
int store_list(struct store *s, const char *prefix, size_t prefix_len,
	       unsigned flags, struct store_list *out, struct store_error *err);

/*
 * As store_list, a page at a time, so that a big prefix is never all in
 * memory at once: @page gets each page's keys, at the one revision all
 * pages are read at; it may move keys out of it (store_list_push_own) and
 * the rest is released after the call.  @first is true for the first page,
 * and again if etcd compacted that revision between two pages: the listing
 * then starts over at a newer revision, and what earlier pages said is to
 * be forgotten.  A negative return of @page stops the listing and is
 * returned.  *@rev (if not NULL): the revision read at.
 */
typedef int (*store_page_fn)(void *arg, struct store_list *page, bool first,
			     struct store_error *err);
int store_list_pages(struct store *s, const char *prefix, size_t prefix_len,
		     unsigned flags, store_page_fn page, void *arg,
		     int64_t *rev, struct store_error *err);

/*
 * What the store's listings cost so far, for tests and benchmarks: the
 * requests they sent, the keys etcd walked to answer them (the sum of the
 * counts of the ranges they asked for: etcd visits every key of a range
 * to count it, limit or not) and the keys they fetched.
 */
struct store_list_stats {
	uint64_t requests;
	uint64_t walked;
	uint64_t fetched;
	uint64_t count_us;	/* time in requests that only counted */
	uint64_t fetch_us;	/* time in requests that fetched keys */
};
void store_list_stats(struct store *s, struct store_list_stats *out);

/*
 * Creates @key with @value; EEXISTS if it exists.  @lease 0: none.
 * On success *@rev (if not NULL) is the new key's mod_revision.
 */
int store_create(struct store *s, const char *key, size_t key_len,
		 const char *value, size_t value_len, int64_t lease,
		 int64_t *rev, struct store_error *err);

/*
 * Deletes @key if @pre (NULL: unconditional) holds, in one transaction.
 * ENOTFOUND if absent, EPRECONDITION if the key changed.  If @prev is not
 * NULL it receives the deleted key's last state (on EPRECONDITION: its
 * current state).  On success *@rev (if not NULL) is the deletion's
 * revision.
 */
int store_delete(struct store *s, const char *key, size_t key_len,
		 const struct store_preconditions *pre, struct store_kv *prev,
		 int64_t *rev, struct store_error *err);

/*
 * What try_update returns through @out: the new value, which the helper
 * takes over (must be malloc()ed; NULL with len 0 is the empty value), and
 * the lease to put it with (0: none; -1: keep the current one).
 */
struct store_update {
	char *value;
	size_t value_len;
	int64_t lease;
};

/*
 * Called with the key's current state (@cur NULL: absent) and must fill
 * @out.  Returns 0 to write, or a negative enum store_err to stop the update
 * with that error.  May be called several times, once per attempt.
 */
typedef int (*store_try_update_fn)(void *arg, const struct store_kv *cur,
				   struct store_update *out);

/*
 * Reads @key (or takes @suggestion, the caller's idea of its current state,
 * to save the read: it is checked by the transaction like any other), checks
 * @pre, calls @try_update and writes the result with one compare-and-swap
 * transaction on mod_revision.  When the key changed meanwhile the failed
 * transaction's reply holds the new state, and the loop tries again with
 * it, at most max_update_retries times (then ECONFLICT).  When try_update
 * returns the bytes and lease the key has, nothing is written.
 *
 * If the key is absent and @ignore_not_found is false: ENOTFOUND.
 * On success @out (if not NULL) is the key as written.
 */
int store_guaranteed_update(struct store *s, const char *key, size_t key_len,
			    bool ignore_not_found,
			    const struct store_preconditions *pre,
			    const struct store_kv *suggestion,
			    store_try_update_fn try_update, void *arg,
			    struct store_kv *out, struct store_error *err);

/*
 * Moves @from to @to in one transaction: @from must match @pre_from, @to
 * must match @pre_to (NULL: unchecked; mod_revision STORE_REV_ABSENT: must
 * not exist); then @to is put with @from's value (or @value if not NULL)
 * and @from is deleted.  EPRECONDITION if a check fails, ENOTSUP if the
 * backend cannot do it atomically (etcd2).  *@rev: the new revision.
 */
int store_move(struct store *s, const char *from, size_t from_len,
	       const struct store_preconditions *pre_from,
	       const char *to, size_t to_len,
	       const struct store_preconditions *pre_to,
	       const char *value, size_t value_len, int64_t *rev,
	       struct store_error *err);

/* One key of store_move_keys. */
struct store_move_key {
	const char *from;
	size_t from_len;
	const char *to;
	size_t to_len;
	const char *value;	/* from's value, as of mod_revision */
	size_t value_len;
	int64_t mod_revision;	/* from's, as the caller knows it */
	int64_t lease;		/* to put @to with; 0: none */
};

/*
 * What store_move_keys compares as whole ranges, for the keys the caller
 * does not know: every key under @from_prefix (a new one too) at most at
 * @revision, and no key at all under @to_prefix.
 */
struct store_move_guard {
	const char *from_prefix;
	size_t from_prefix_len;
	int64_t revision;	/* what the caller's view of @from_prefix is of */
	const char *to_prefix;	/* every @to of the keys is under it */
	size_t to_prefix_len;
};

/*
 * Moves the @n keys of @keys in one transaction: it succeeds only if
 * every @from is still at its mod_revision and every @to is absent (and,
 * with a @guard, its two ranges hold), and then puts each @to (value,
 * lease) and deletes each @from, all at one revision (*@rev).
 * EPRECONDITION (and nothing changed) if a compare fails; ENOTSUP on v2;
 * EINVAL if etcd refuses the size of the transaction (its --max-txn-ops:
 * 2 * @n compares, or @n + 2 with a @guard, and 2 * @n ops).  A lost
 * answer is settled from etcd's history of the sources
 * (helper/store_txn.c): 0 if it was applied, sent once more if it was
 * not, EPRECONDITION if a source moved on meanwhile, STORE_EUNKNOWN
 * where the history cannot tell.
 */
int store_move_keys(struct store *s, const struct store_move_key *keys,
		    size_t n, const struct store_move_guard *guard,
		    int64_t *rev, struct store_error *err);

/*
 * Grants a lease of @ttl seconds; *@id is its id, 63 random bits the
 * store chose, so that a grant whose answer was lost is sent again with
 * that id until etcd answers (for at most twice the request timeout),
 * which grants it, or says it has it already: 0 either way.  If etcd
 * cannot be reached meanwhile: STORE_EUNKNOWN (a lease it may have
 * granted runs out by itself).  EEXISTS, nothing granted, if etcd holds
 * another client's lease of that id (with a million leases in the
 * cluster, once in about 10^13 grants).
 */
int store_lease_grant(struct store *s, int64_t ttl, int64_t *id,
		      struct store_error *err);

/* The longest time to live etcd grants (its MaxLeaseTTL), in seconds. */
#define STORE_TTL_MAX 9000000000LL

/* Revokes lease @id (its keys go with it).  ENOTFOUND if unknown. */
int store_lease_revoke(struct store *s, int64_t id, struct store_error *err);

/*
 * Gives @key a time to live of @ttl seconds (0: none, the key stays),
 * keeping its value, if its mod_revision is still @mod_revision: one
 * compare-and-swap, EPRECONDITION (nothing changed) if the key moved on,
 * ENOTFOUND if it is gone, EINVAL for a @ttl outside 0..STORE_TTL_MAX.
 * v3: a lease of @ttl is granted and the value put again with it (a
 * lease granted for a put that did not happen is revoked; the key's old
 * lease is left alone, it may hold other keys).  v2: a put of the value
 * with ttl= and prevIndex=, which watchers see as any put.  @out (if not
 * NULL) is the key as written.  A lost answer is settled as for
 * store_guaranteed_update on v3, and the lease's grant's as for
 * store_lease_grant (one still unknown is STORE_EUNKNOWN, and nothing
 * was put); on v2 by the key's first change after @mod_revision in
 * etcd's event history: this put (done), another change (EPRECONDITION
 * or ENOTFOUND), none (sent once more), or history cleared
 * (STORE_EUNKNOWN).
 */
int store_set_ttl(struct store *s, const char *key, size_t key_len,
		  int64_t mod_revision, int64_t ttl, struct store_kv *out,
		  struct store_error *err);

/*
 * The seconds @key has left: *@ttl, or 0 if it has no time to live.
 * v3: asks etcd about @lease, the key's lease as the caller knows it (0:
 * none, and nothing is asked); an expired lease is *@ttl 0.  v2: reads
 * the key.
 */
int store_key_ttl(struct store *s, const char *key, size_t key_len,
		  int64_t lease, int64_t *ttl, struct store_error *err);

/* One revision of a key, as store_key_history tells it. */
struct store_version {
	int64_t mod_revision;
	int64_t create_revision;
	int64_t version;
};

/*
 * The revisions of @key etcd still holds, since its last creation, oldest
 * first: *@out (free() it), *@n of them.  At most the @max newest; *@more
 * says older ones were left out.  One keys-only read per revision
 * (helper/store_history.c).  ENOTFOUND if the key does not exist now;
 * ENOTSUP on v2, which cannot read at a past revision.
 */
int store_key_history(struct store *s, const char *key, size_t key_len,
		      size_t max, struct store_version **out, size_t *n,
		      bool *more, struct store_error *err);

/*
 * Whether the key space can still be read at @rev: 0, with *@now the
 * cluster's revision; EINVAL if @rev is past *@now; ECOMPACTED if etcd
 * compacted it, with *@oldest the oldest revision it keeps (its compact
 * revision, learnt from a watch from @rev, which etcd cancels naming
 * it; 0 if that could not be learnt).  ENOTSUP on v2.
 */
int store_check_revision(struct store *s, int64_t rev, int64_t *now,
			 int64_t *oldest, struct store_error *err);

enum store_event_type {
	STORE_EV_PUT,		/* kv is the new state, prev_kv the old one */
	STORE_EV_DELETE,	/* kv.key and kv.mod_revision, prev_kv if known */
	STORE_EV_PROGRESS,	/* no change up to @revision */
	STORE_EV_ERROR,		/* err says what; ECOMPACTED ends the watch,
				 * others are transient: the watch reconnects
				 * and resumes after the last revision seen */
};

struct store_event {
	enum store_event_type type;
	struct store_kv kv;	/* borrowed for the callback's duration */
	struct store_kv prev_kv;	/* zeroed if not known */
	int64_t revision;	/* the revision of the event or progress */
	int err;		/* STORE_EV_ERROR: the enum store_err */
	int64_t compact_revision;	/* ECOMPACTED: where history starts */
};

/*
 * Called on the watch's own thread, once per event, in revision order.
 * Must not call store_watch_stop() on its own watch.
 */
typedef void (*store_watch_fn)(void *arg, const struct store_event *ev);

struct store_watch;

/*
 * Watches @key (or every key starting with @key when @prefix) from
 * @start_rev (0: from now) on a thread of its own, with progress
 * notifications.  A lost connection is retried with back-off and resumed
 * after the last revision seen, reported as a transient STORE_EV_ERROR.
 * A compacted start revision is reported as STORE_EV_ERROR with ECOMPACTED,
 * after which no more events come.
 */
int store_watch(struct store *s, const char *key, size_t key_len, bool prefix,
		int64_t start_rev, store_watch_fn fn, void *arg,
		struct store_watch **out, struct store_error *err);

/* Stops @w, waits for its thread (no callback runs after) and frees it. */
void store_watch_stop(struct store_watch *w);

/*
 * Asks @w's stream for a progress event now, without waiting for it: its
 * answer comes as a STORE_EV_PROGRESS on the watch's thread, after every
 * event up to its revision (on etcd versions that keep that order, see
 * the README).  If the stream is being set up, the request goes out once
 * it is.  etcd may not answer one at all (a watch still catching up), so
 * a caller waiting on it asks again.  Safe from any thread, but not after
 * store_watch_stop().  ENOTSUP on v2, which has no progress requests.
 */
int store_watch_progress(struct store_watch *w);

/* Lists the cluster's members into *@members (free with the function below). */
int store_members(struct store *s, struct store_member **members, size_t *n,
		  struct store_error *err);

/*
 * Asks the cluster for its members and makes their client URLs (each an
 * http:// or https:// URL, in the members' order, without duplicates)
 * followed by the configured endpoints that are not among them the
 * endpoints the store talks to, with the same TLS and auth settings.  On
 * an error, or when no member has a usable client URL, the endpoints stay
 * as they were: the list never gets empty.  Safe while other threads use
 * the store.  *@n (if not NULL) is the number of endpoints now in use.
 */
int store_refresh_endpoints(struct store *s, size_t *n,
			    struct store_error *err);

/*
 * Makes the directory @key (etcd2; v3 has none: ENOTSUP).  EEXISTS if a key
 * or directory of that name exists.  *@rev (if not NULL): its revision.
 */
int store_mkdir(struct store *s, const char *key, size_t key_len,
		int64_t *rev, struct store_error *err);

/*
 * Removes the empty directory @key (etcd2; else ENOTSUP).  ENOTFOUND if
 * there is none, EINVAL if it is a key, EEXISTS if it is not empty (as
 * rmdir(2) may say EEXIST for ENOTEMPTY).
 */
int store_rmdir(struct store *s, const char *key, size_t key_len,
		int64_t *rev, struct store_error *err);

#endif /* ETCDFS_STORE_H */
