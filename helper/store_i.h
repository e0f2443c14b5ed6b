/*
 * store_i.h - what a storage backend provides, behind helper/store.h
 *
 * store.c holds the backend-neutral logic (argument checks, the prefix,
 * preconditions, the guaranteed-update retry loop) and calls a backend
 * through struct store_backend.  Keys given to a backend are full keys:
 * the store prefix is already prepended; keys a backend returns are full
 * keys too, and store.c strips the prefix.
 */
#ifndef ETCDFS_STORE_I_H
#define ETCDFS_STORE_I_H

#include "store.h"
#include "transport.h"

struct store_backend {
	const char *name;

	/* Creates the backend's private state in s->be. */
	int (*init)(struct store *s, struct store_error *err);
	void (*release)(struct store *s);

	int (*revision)(struct store *s, int64_t *rev, struct store_error *err);

	/* Reads one key; ENOTFOUND if absent. */
	int (*get)(struct store *s, const char *key, size_t key_len,
		   unsigned flags, struct store_kv *out,
		   struct store_error *err);

	/*
	 * Reads every key in [key, range_end) with at most @limit keys per
	 * request, at revision @rev (0: current); appends to @out, sets
	 * out->revision, and sets *@more if keys are left after the last
	 * one returned.
	 */
	int (*range)(struct store *s, const char *key, size_t key_len,
		     const char *range_end, size_t range_end_len,
		     int64_t rev, size_t limit, unsigned flags,
		     struct store_list *out, bool *more,
		     struct store_error *err);

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

	int (*lease_grant)(struct store *s, int64_t ttl, int64_t *id,
			   struct store_error *err);

	/* Starts the watch thread of @w (fields below filled by store.c). */
	int (*watch)(struct store *s, struct store_watch *w,
		     struct store_error *err);
	/* Stops it and joins; called once. */
	void (*watch_stop)(struct store_watch *w);

	int (*members)(struct store *s, struct store_member **members,
		       size_t *n, struct store_error *err);

	/* Directories (etcd2); may be NULL: see store_mkdir/store_rmdir. */
	int (*mkdir)(struct store *s, const char *key, size_t key_len,
		     int64_t *rev, struct store_error *err);
	int (*rmdir)(struct store *s, const char *key, size_t key_len,
		     int64_t *rev, struct store_error *err);
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

/*
 * The end of the range of keys starting with @prefix: @prefix with its last
 * byte below 0xff incremented and what follows dropped; for an empty prefix
 * or one of all 0xff bytes, the single byte "\0" (etcd's "to the end").
 * Returns a malloc()ed buffer and its length in *@len, NULL on ENOMEM.
 */
char *store_range_end(const char *prefix, size_t prefix_len, size_t *len);

#endif /* ETCDFS_STORE_I_H */
