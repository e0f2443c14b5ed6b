/*
 * store_i.h - what a storage backend provides, behind helper/store.h
 *
 * The backend-neutral logic calls a backend through struct store_backend:
 * store.c (the API, the configuration, the prefix, reads, watches),
 * store_update.c (writes: the guaranteed-update loop, preconditions, and
 * what to do when a write's answer was lost), store_list.c (paging),
 * store_members.c (the endpoint refresh), store_lease.c (times to
 * live) and store_history.c (a key's past revisions).  The second half
 * of this file is theirs; backends use only the first.  Keys given to a
 * backend are full keys: the store prefix is already prepended; keys a
 * backend returns are full keys too, and store.c strips the prefix.
 */
#ifndef ETCDFS_STORE_I_H
#define ETCDFS_STORE_I_H

#include <pthread.h>
#include <stddef.h>

#include "store.h"
#include "transport.h"

/*
 * Spans counted in one request: well under etcd's default --max-txn-ops
 * (128); a store_config.max_txn_ops below it lowers it (store_list.c).
 */
#define STORE_SPANS_PER_REQUEST	64

/* A range of keys [key, range_end) a listing counts (store_backend.count). */
struct store_span {
	const char *key;
	size_t key_len;
	const char *range_end;		/* "\0": to the end */
	size_t range_end_len;
	int64_t count;			/* set by count */
	struct store_kv first;		/* set by count: the first key, owned;
					 * zeroed if there is none */
};

struct store_backend {
	const char *name;
	bool past_reads;	/* range reads at a past revision work */

	/* Creates the backend's private state in s->be. */
	int (*init)(struct store *s, struct store_error *err);
	void (*release)(struct store *s);

	int (*revision)(struct store *s, int64_t *rev, struct store_error *err);
	/* See store_status(); may be NULL (ENOTSUP). */
	int (*status)(struct store *s, struct store_status *out,
		      struct store_error *err);

	/* Reads one key; ENOTFOUND if absent. */
	int (*get)(struct store *s, const char *key, size_t key_len,
		   unsigned flags, struct store_kv *out,
		   struct store_error *err);

	/*
	 * Reads every key in [key, range_end) with at most @limit keys per
	 * request, at revision @rev (0: current); appends to @out, sets
	 * out->revision, and sets *@more if keys are left after the last
	 * one returned.  *@count (if not NULL): the keys of the whole range
	 * at that revision, as the server counted them, or -1 if it does
	 * not say.
	 */
	int (*range)(struct store *s, const char *key, size_t key_len,
		     const char *range_end, size_t range_end_len,
		     int64_t rev, size_t limit, unsigned flags,
		     struct store_list *out, bool *more, int64_t *count,
		     struct store_error *err);

	/*
	 * Counts the keys of each of the @n spans (1 to
	 * STORE_SPANS_PER_REQUEST) at revision @rev (> 0) and reads the first
	 * key of each (without its value), in one request.  May be NULL
	 * (etcd2): listings then page.
	 */
	int (*count)(struct store *s, struct store_span *spans, size_t n,
		     int64_t rev, unsigned flags, struct store_error *err);

	/*
	 * Puts @value at @key if its mod_revision is @expect (0: absent,
	 * -1: unchecked).  On success *@rev is the new revision.  If the
	 * comparison fails: EPRECONDITION, with @cur filled with the key's
	 * state (or zeroed, key_len 0, if absent).
	 */
	int (*cas)(struct store *s, const char *key, size_t key_len,
		   int64_t expect, const char *value, size_t value_len,
		   int64_t lease, int64_t *rev, struct store_kv *cur,
		   struct store_error *err);

	/*
	 * Deletes @key if its mod_revision is @expect_mod (-1: unchecked)
	 * and its create_revision @expect_create (0: unchecked).  On success
	 * @prev (if known) is the deleted state; on EPRECONDITION it is the
	 * current one (key_len 0 if absent); ENOTFOUND if there is no key.
	 */
	int (*del)(struct store *s, const char *key, size_t key_len,
		   int64_t expect_mod, int64_t expect_create,
		   struct store_kv *prev, int64_t *rev,
		   struct store_error *err);

	/* See store_move(); may be NULL (ENOTSUP). */
	int (*move)(struct store *s, const char *from, size_t from_len,
		    const struct store_preconditions *pre_from,
		    const char *to, size_t to_len,
		    const struct store_preconditions *pre_to,
		    const char *value, size_t value_len, int64_t *rev,
		    struct store_error *err);

	/*
	 * See store_move_keys(), full keys and prefixes (@guard may be
	 * NULL); may be NULL (ENOTSUP).
	 */
	int (*move_keys)(struct store *s, const struct store_move_key *keys,
			 size_t n, const struct store_move_guard *guard,
			 int64_t *rev, struct store_error *err);

	/*
	 * Grants a lease of @ttl seconds with the id *@id (0: the server
	 * chooses), and sets *@id to the lease's.  EEXISTS if the server
	 * holds a lease of that id already.
	 */
	int (*lease_grant)(struct store *s, int64_t ttl, int64_t *id,
			   struct store_error *err);

	/* May be NULL (ENOTSUP).  lease_ttl: *@ttl -1 if expired. */
	int (*lease_revoke)(struct store *s, int64_t id,
			    struct store_error *err);
	int (*lease_ttl)(struct store *s, int64_t id, int64_t *ttl,
			 struct store_error *err);
	/*
	 * A backend whose keys carry their own time to live (etcd2): see
	 * store_set_ttl() and store_key_ttl(), with the full key.  NULL: the
	 * store does it with leases.
	 */
	int (*set_ttl)(struct store *s, const char *key, size_t key_len,
		       int64_t expect, const char *value, size_t value_len,
		       int64_t ttl, int64_t *rev, struct store_error *err);
	int (*key_ttl)(struct store *s, const char *key, size_t key_len,
		       int64_t *ttl, struct store_error *err);
	/*
	 * The first change of @key after revision @after, from the
	 * backend's history of changes (etcd2: its last 1,000 events), to
	 * settle a write that compared @key at @after: *@cas whether it was
	 * a compare-and-swap put of @key on @after, @now the key as it left
	 * it (key_len 0 if it went), *@ttl its time to live then.  Only for
	 * a key known to have changed since: etcd waits for the change
	 * otherwise (up to the request timeout).  ECOMPACTED if the history
	 * no longer holds it.  May be NULL.
	 */
	int (*first_change)(struct store *s, const char *key, size_t key_len,
			    int64_t after, bool *cas, struct store_kv *now,
			    int64_t *ttl, struct store_error *err);

	/* Starts the watch thread of @w (fields below filled by store.c). */
	int (*watch)(struct store *s, struct store_watch *w,
		     struct store_error *err);
	/* Stops it and joins; called once. */
	void (*watch_stop)(struct store_watch *w);
	/* Asks for a progress event now (store_watch_progress); may be NULL. */
	int (*watch_progress)(struct store_watch *w);

	int (*members)(struct store *s, struct store_member **members,
		       size_t *n, struct store_error *err);

	/* Directories (etcd2); may be NULL: see store_mkdir/store_rmdir. */
	int (*mkdir)(struct store *s, const char *key, size_t key_len,
		     int64_t *rev, struct store_error *err);
	int (*rmdir)(struct store *s, const char *key, size_t key_len,
		     int64_t *rev, struct store_error *err);

	/*
	 * A backend with a transport of its own (not s->tr): the endpoint in
	 * use, a new endpoint list (as transport_set_endpoints) and the
	 * count of requests that found no endpoint.  NULL: s->tr's.
	 */
	const char *(*endpoint)(struct store *s);
	int (*set_endpoints)(struct store *s, const char *const *endpoints,
			     size_t n, struct store_error *err);
	uint64_t (*unreachable_count)(struct store *s);
};

struct store {
	const struct store_backend *be_ops;
	void *be;			/* the backend's state */
	struct transport *tr;
	struct store_config cfg;	/* strings point into the copies below */
	char *prefix;			/* owned; may be empty */
	size_t prefix_len;
	char *strings;			/* owned copies of cfg's strings */
};

struct store_watch {
	struct store *s;
	char *key;			/* full key, owned */
	size_t key_len;
	char *range_end;		/* owned; NULL: one key */
	size_t range_end_len;
	int64_t start_rev;
	store_watch_fn fn;
	void *arg;
	void *be;			/* the backend's watch state */
};

extern const struct store_backend store_etcd3_backend;
extern const struct store_backend store_etcd2_backend;
extern const struct store_backend store_snapshot_backend;

/*
 * The end of the range of keys starting with @prefix: @prefix with its last
 * byte below 0xff incremented and what follows dropped; for an empty prefix
 * or one of all 0xff bytes, the single byte "\0" (etcd's "to the end").
 * Returns a malloc()ed buffer and its length in *@len, NULL on ENOMEM.
 */
char *store_range_end(const char *prefix, size_t prefix_len, size_t *len);

/* ---- the store's own, for store*.c ---- */

#define STORE_WRITE_STRIPES 64

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * What the store keeps beside the struct store above: the watches, so
 * that store_free can stop those its caller left running, the endpoint
 * refresh's state, and the write stripes.
 */
struct store_priv {
	struct store s;
	pthread_mutex_t watch_lock;
	struct store_watch_node *watches;	/* protected by watch_lock */
	char **endpoints;			/* owned, parsed from cfg */
	size_t n_endpoints;
	size_t strings_len;		/* of s.strings, wiped on free */
	bool be_ready;			/* be_ops->init succeeded */

	/* The endpoint refresh; see the top of this file. */
	pthread_mutex_t refresh_lock;	/* held by the thread refreshing */
	int64_t refresh_next_ms;	/* atomic; 0: at the first call */
	int64_t refresh_last_ms;	/* protected by refresh_lock */
	uint64_t refresh_seen;		/* atomic; the transport's unreachable
					 * count after the last refresh */

	/* What listings cost (store_list_stats), atomic. */
	uint64_t list_requests;
	uint64_t list_walked;
	uint64_t list_fetched;
	uint64_t list_count_us;		/* in requests that only count */
	uint64_t list_fetch_us;		/* in those that fetch keys */

	/* store_stats' counters: atomics (__atomic builtins) */
	uint64_t n_requests[STORE_REQ_COUNT];
	uint64_t n_errors[STORE_ERR_COUNT];
	uint64_t n_retries;
	uint64_t n_conflicts;
	uint64_t n_sent;
	uint64_t n_received;

	/* The writes of one key, one at a time: see store_update.c. */
	pthread_mutex_t write_locks[STORE_WRITE_STRIPES];
	int64_t write_revs[STORE_WRITE_STRIPES];	/* by write_locks */
};

static inline struct store_priv *store_priv(struct store *s)
{
	return container_of(s, struct store_priv, s);
}


/* The store prefix followed by @key, malloc()ed and NUL-terminated. */
char *store_full_key(struct store *s, const char *key, size_t key_len,
		     size_t *len);

/*
 * Strips the prefix from @kv's key in place; false (and @kv untouched) if
 * the key does not start with it.  A kv without a key passes.
 */
bool store_strip(struct store *s, struct store_kv *kv);

/*
 * Reads the full key @full into @cur (prefix stripped); *@exists false and
 * 0 if it is absent.
 */
int store_read(struct store *s, const char *full, size_t full_len,
	       unsigned flags, struct store_kv *cur, bool *exists,
	       struct store_error *err);

/*
 * Counts one request of @kind to etcd (store_stats) that sent @sent and
 * received @received bytes and ended with @rc, and traces it if the
 * config says so: @method, the full key @key (NULL: none), @start_us
 * from thread_now_us().
 */
void store_note(struct store *s, enum store_req kind, const char *method,
		const char *key, size_t key_len, int rc, int64_t start_us,
		size_t sent, size_t received);
/* More bytes received by a request counted already (a watch stream). */
void store_note_received(struct store *s, size_t n);
void store_note_retry(struct store *s);
void store_note_conflict(struct store *s);

/* Refreshes the endpoints if due (store_members.c). */
void store_refresh_maybe(struct store *s);

#endif /* ETCDFS_STORE_I_H */
