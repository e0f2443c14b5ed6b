/*
 * store_lease.c - a key's time to live, behind helper/store.h
 *
 * On v3 a time to live is a lease: store_set_ttl grants one and puts the
 * key's value again with it through the guaranteed update, preconditioned
 * on the revision the caller saw, so that it is one compare-and-swap that
 * changes nothing but the lease; a lease granted for a put that did not
 * happen is revoked at once, so that a failed call leaves no lease behind
 * (one whose put may have been applied, STORE_EUNKNOWN, is left: revoking
 * it could delete the key).  The grant names a lease id of the store's
 * own choice, so that a grant whose answer was lost is sent again with
 * it (store_settle_grant): etcd grants an id once, and says so when asked
 * again.  If etcd cannot be reached again, the grant's outcome stays
 * unknown (STORE_EUNKNOWN) and nothing was put: a lease it may have
 * granted holds no key, and runs out.
 *
 * On v2 a key carries its own TTL, and the backend puts the value again
 * with ttl= and prevIndex=; a lost answer is settled by store_settle_ttl
 * (store_settle.c), from the first change of the key after that index in
 * etcd's event history, which no later change rewrites.
 *
 * What it cannot do: keep a lease alive (a granted lease runs out), or
 * give back the key's old lease (it may hold other keys; it runs out or
 * is revoked by whoever made it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "store_i.h"
#include "store_settle.h"

/*
 * A lease id of 63 random bits: positive, for etcd reads 0 as "choose
 * one" (and the store takes no negative id back).  A grant that names
 * its id can be sent again when its answer was lost (store_settle_grant),
 * where etcd's "lease already exists" says the first copy was applied.
 * Another client's lease of the same id would be taken for ours there:
 * no practical concern, for with a million leases in the cluster a
 * random id meets one once in about 10^13 grants (and at a first send
 * that is EEXISTS, nothing granted).
 */
static int lease_id(int64_t *id, struct store_error *err)
{
	uint64_t v;
	ssize_t n;

	for (;;) {
		n = getrandom(&v, sizeof(v), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(v))
			return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
					  "no random lease id: %s",
					  n < 0 ? strerror(errno) :
					  "a short read");
		v &= (uint64_t)INT64_MAX;
		if (v) {
			*id = (int64_t)v;
			return 0;
		}
	}
}

int store_lease_grant(struct store *s, int64_t ttl, int64_t *id,
		      struct store_error *err)
{
	int64_t want = 0;
	int rc;

	*id = 0;
	if (ttl <= 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "bad lease ttl %lld", (long long)ttl);
	rc = lease_id(&want, err);
	if (rc < 0)
		return rc;
	store_refresh_maybe(s);
	rc = store_settle_grant(s, ttl, want, err);
	if (rc == 0)
		*id = want;
	return rc;
}

int store_lease_revoke(struct store *s, int64_t id, struct store_error *err)
{
	if (id <= 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "bad lease id %lld", (long long)id);
	if (!s->be_ops->lease_revoke)
		return store_fail(err, STORE_ENOTSUP, NULL, 0, 0,
				  "the backend has no leases");
	store_refresh_maybe(s);
	return s->be_ops->lease_revoke(s, id, err);
}

/* What keep_value puts: the key's value as it is, with this lease. */
static int keep_value(void *arg, const struct store_kv *cur,
		      struct store_update *out)
{
	const int64_t *lease = arg;

	if (!cur)
		return STORE_ENOTFOUND;
	out->value = malloc(cur->value_len + 1);
	if (!out->value)
		return STORE_EINTERNAL;
	memcpy(out->value, cur->value ? cur->value : "", cur->value_len);
	out->value[cur->value_len] = '\0';
	out->value_len = cur->value_len;
	out->lease = *lease;
	return 0;
}

static int set_ttl_lease(struct store *s, const char *key, size_t key_len,
			 int64_t mod_revision, int64_t ttl,
			 struct store_kv *out, struct store_error *err)
{
	struct store_preconditions pre = { mod_revision, 0 };
	struct store_error e = { 0 };
	int64_t lease = 0;
	int rc;

	if (ttl > 0) {
		rc = store_lease_grant(s, ttl, &lease, err);
		if (rc < 0)
			return rc;
	}
	rc = store_guaranteed_update(s, key, key_len, false, &pre, NULL,
				     keep_value, &lease, out, err);
	/* nothing was put with it: no lease of ours outlives the call */
	if (rc < 0 && lease && rc != STORE_EUNKNOWN)
		store_lease_revoke(s, lease, &e);
	return rc;
}

/* v2: read the value, then put it again with its TTL, on its revision. */
static int set_ttl_key(struct store *s, const char *key, size_t key_len,
		       int64_t mod_revision, int64_t ttl,
		       struct store_kv *out, struct store_error *err)
{
	struct store_settle st;
	struct store_kv cur = { 0 };
	int64_t rev = 0;
	bool exists;
	size_t full_len;
	char *full;
	int rc;

	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	rc = store_read(s, full, full_len, STORE_READ_QUORUM, &cur, &exists,
			err);
	if (rc == 0 && !exists)
		rc = store_fail(err, STORE_ENOTFOUND, full, full_len, 0,
				"key not found");
	else if (rc == 0 && cur.mod_revision != mod_revision)
		rc = store_fail(err, STORE_EPRECONDITION, full, full_len,
				cur.mod_revision, "precondition failed: the "
				"key is at revision %lld",
				(long long)cur.mod_revision);
	if (rc == 0) {
		store_settle_lock(s, &st, full, full_len);
		rc = store_settle_ttl(&st, full, full_len, mod_revision, &cur,
				      ttl, &rev, err);
		store_settle_unlock(&st, rc == 0 ? rev : 0);
	}
	if (rc == 0 && out) {
		store_kv_move(out, &cur);
		out->mod_revision = rev;
	}
	store_kv_release(&cur);
	free(full);
	return rc;
}

int store_set_ttl(struct store *s, const char *key, size_t key_len,
		  int64_t mod_revision, int64_t ttl, struct store_kv *out,
		  struct store_error *err)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (ttl < 0 || ttl > STORE_TTL_MAX)
		return store_fail(err, STORE_EINVAL, key, key_len, 0,
				  "bad time to live %lld: 0 to %lld seconds",
				  (long long)ttl, (long long)STORE_TTL_MAX);
	if (mod_revision <= 0)
		return store_fail(err, STORE_EINVAL, key, key_len, 0,
				  "bad revision %lld", (long long)mod_revision);
	store_refresh_maybe(s);
	if (s->be_ops->set_ttl)
		return set_ttl_key(s, key, key_len, mod_revision, ttl, out,
				   err);
	if (!s->be_ops->lease_revoke)
		return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
				  "the backend has no leases");
	return set_ttl_lease(s, key, key_len, mod_revision, ttl, out, err);
}

int store_key_ttl(struct store *s, const char *key, size_t key_len,
		  int64_t lease, int64_t *ttl, struct store_error *err)
{
	size_t full_len;
	char *full;
	int rc;

	*ttl = 0;
	store_refresh_maybe(s);
	if (s->be_ops->key_ttl) {
		full = store_full_key(s, key, key_len, &full_len);
		if (!full)
			return store_enomem(err, key, key_len);
		rc = s->be_ops->key_ttl(s, full, full_len, ttl, err);
		free(full);
		return rc;
	}
	if (lease <= 0)
		return 0;
	if (!s->be_ops->lease_ttl)
		return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
				  "the backend has no leases");
	rc = s->be_ops->lease_ttl(s, lease, ttl, err);
	if (rc == STORE_ENOTFOUND || (rc == 0 && *ttl < 0)) {
		*ttl = 0;	/* expired: the key is going */
		return 0;
	}
	return rc;
}
