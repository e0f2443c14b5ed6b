/*
 * store_settle.h - what became of a write whose answer was lost (see
 * store_settle.c); private to the store's own files
 */
#ifndef ETCDFS_STORE_SETTLE_H
#define ETCDFS_STORE_SETTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_i.h"

/* One write in progress, holding its key's stripe. */
struct store_settle {
	struct store *s;
	size_t stripe;
	int64_t floor;		/* the newest revision the stripe's earlier
				 * writes made: this write's is newer */
	bool retried;		/* sent a second time */
};

/*
 * Takes @key's stripe (the full key); every write of the key by this
 * store waits for it.  Unlock with the revision the write made (0: none).
 */
void store_settle_lock(struct store *s, struct store_settle *st,
		       const char *key, size_t key_len);
void store_settle_unlock(struct store_settle *st, int64_t rev);

/*
 * Both keys' stripes for a write of two keys (a rename), in the stripes'
 * order; @a->floor is the newer of the two.  Returns whether they are two
 * stripes; unlock with store_settle_unlock2 and what it returned.
 */
bool store_settle_lock2(struct store *s, struct store_settle *a,
			struct store_settle *b, const char *key1,
			size_t key1_len, const char *key2, size_t key2_len);
void store_settle_unlock2(struct store_settle *a, struct store_settle *b,
			  bool two, int64_t rev);

/*
 * be_ops->cas, settled: returns what the backend's cas returns, except
 * that an unknown outcome becomes 0 (applied; *@rev its revision),
 * the result of the one retry, or STORE_EUNKNOWN.  @base is the state the
 * update is based on (NULL: none known); @lease as the backend's.
 */
int store_settle_cas(struct store_settle *st, const char *full,
		     size_t full_len, int64_t expect, const char *value,
		     size_t value_len, int64_t lease,
		     const struct store_kv *base, int64_t *rev,
		     struct store_kv *cur, struct store_error *err);

/* be_ops->del, settled the same way. */
int store_settle_del(struct store_settle *st, const char *full,
		     size_t full_len, int64_t expect_mod,
		     int64_t expect_create, struct store_kv *prev,
		     int64_t *rev, struct store_error *err);

/*
 * be_ops->set_ttl of @base's value at @expect (etcd2), settled: an
 * unknown outcome becomes 0 (applied: the key's first change after
 * @expect is this put; *@rev its revision), the result of the one retry
 * (the key still at @expect), EPRECONDITION or ENOTFOUND (another change
 * came first), or STORE_EUNKNOWN.  As the backend's set_ttl without
 * be_ops->first_change.
 */
int store_settle_ttl(struct store_settle *st, const char *full,
		     size_t full_len, int64_t expect,
		     const struct store_kv *base, int64_t ttl, int64_t *rev,
		     struct store_error *err);

/*
 * be_ops->lease_grant of a lease of @ttl seconds with the id @id (> 0,
 * the caller's own choice), settled: an unknown outcome is sent again,
 * with the same id, until etcd answers (for at most twice the request
 * timeout), and etcd granting it then, or saying it has it already, are
 * both 0: the first copy was not applied, or was.  If etcd cannot be
 * reached meanwhile, or answers something else: STORE_EUNKNOWN.  As the
 * backend's otherwise: EEXISTS at the first send is another's lease.
 */
int store_settle_grant(struct store *s, int64_t ttl, int64_t id,
		       struct store_error *err);

/*
 * Reads @full linearizably until etcd answers, for at most twice the
 * request timeout; as store_read.
 */
int store_settle_read(struct store *s, const char *full, size_t full_len,
		      struct store_kv *cur, bool *exists,
		      struct store_error *err);

/*
 * Reads @full as it was at revision @rev, once, or (@rev 0) as it is,
 * linearizably, until etcd answers as store_settle_read; *@at (if not
 * NULL) the revision read at.  A compacted @rev is ECOMPACTED.  v3.
 */
int store_settle_read_at(struct store *s, const char *full, size_t full_len,
			 int64_t rev, int64_t *at, struct store_kv *cur,
			 bool *exists, struct store_error *err);

/*
 * Fills @err with STORE_EUNKNOWN for a write of @full that could not be
 * settled: what the transport said first (@err's message), and @why.
 */
int store_settle_unknown(struct store_error *err, const char *full,
			 size_t full_len, const char *why);

/*
 * True if @now (NULL: absent) is the put of @value (@lease, -1: any) at
 * @expect (0: a create) that the write of @st made, @base its base.
 */
bool store_settle_is_put(const struct store_settle *st,
			 const struct store_kv *now, int64_t expect,
			 const char *value, size_t value_len, int64_t lease,
			 const struct store_kv *base);

#endif /* ETCDFS_STORE_SETTLE_H */
