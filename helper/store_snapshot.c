/*
 * store_snapshot.c - the store's backend over an etcd snapshot file
 * (store_config.snapshot), behind helper/store_i.h
 *
 * Reads come from helper/snapshot.c, at the newest revision the file
 * holds or at store_config.revision; the history of a key is the store's
 * walk (store_history.c) over those reads.  Every write is refused with
 * STORE_ENOTSUP ("read-only"): a snapshot is a backup, and the file is
 * never opened for writing.
 *
 * store_status gives the file's size as the database's (df's used).
 *
 * What it cannot do: watch (a snapshot does not change), list members,
 * grant or revoke leases, tell a lease's remaining time (its granted TTL
 * is what the file keeps).
 */
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"
#include "store_i.h"

static struct snapshot *snap_of(struct store *s)
{
	return s->be;
}

static int snap_readonly(struct store *s, const char *key, size_t key_len,
			 struct store_error *err)
{
	return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
			  "the snapshot '%s' is read-only", s->cfg.snapshot);
}

static int snap_init(struct store *s, struct store_error *err)
{
	struct snapshot *snap;
	int rc;

	rc = snapshot_open(s->cfg.snapshot, s->cfg.skip_hash_check, &snap,
			   err);
	if (rc < 0)
		return rc;
	if (s->cfg.revision) {
		rc = snapshot_check_revision(snap, s->cfg.revision, err);
		if (rc < 0) {
			snapshot_free(snap);
			return rc;
		}
	}
	s->be = snap;
	return 0;
}

static void snap_release(struct store *s)
{
	snapshot_free(snap_of(s));
	s->be = NULL;
}

static int snap_revision(struct store *s, int64_t *rev,
			 struct store_error *err)
{
	struct snapshot_info info;

	snapshot_get_info(snap_of(s), &info);
	*rev = info.revision;
	return 0;
}

/* df: the file's size, and the part of it bbolt uses. */
static int snap_status(struct store *s, struct store_status *out,
		       struct store_error *err)
{
	struct snapshot_info info;

	snapshot_get_info(snap_of(s), &info);
	out->db_size = (int64_t)info.size;
	out->db_size_in_use = (int64_t)info.in_use;
	out->nospace = false;
	return 0;
}

static int snap_range(struct store *s, const char *key, size_t key_len,
		      const char *range_end, size_t range_end_len,
		      int64_t rev, size_t limit, unsigned flags,
		      struct store_list *out, bool *more, int64_t *count,
		      struct store_error *err)
{
	/*
	 * Not counted: counting walks the whole range, and a listing asks
	 * for a count with each page, which would make it quadratic.
	 */
	if (count)
		*count = -1;
	return snapshot_range(snap_of(s), key, key_len, range_end,
			      range_end_len, rev, limit,
			      flags & STORE_READ_KEYS_ONLY, out, more, NULL,
			      err);
}

static int snap_get(struct store *s, const char *key, size_t key_len,
		    unsigned flags, struct store_kv *out,
		    struct store_error *err)
{
	struct store_list l = { 0 };
	bool more;
	int rc;

	rc = snap_range(s, key, key_len, NULL, 0, 0, 1, flags, &l, &more,
			NULL, err);
	if (rc == 0 && l.n == 0)
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found");
	if (rc == 0)
		store_kv_move(out, &l.kvs[0]);
	store_list_release(&l);
	return rc;
}

static int snap_cas(struct store *s, const char *key, size_t key_len,
		    int64_t expect, const char *value, size_t value_len,
		    int64_t lease, int64_t *rev, struct store_kv *cur,
		    struct store_error *err)
{
	return snap_readonly(s, key, key_len, err);
}

static int snap_del(struct store *s, const char *key, size_t key_len,
		    int64_t expect_mod, int64_t expect_create,
		    struct store_kv *prev, int64_t *rev,
		    struct store_error *err)
{
	return snap_readonly(s, key, key_len, err);
}

static int snap_move(struct store *s, const char *from, size_t from_len,
		     const struct store_preconditions *pre_from,
		     const char *to, size_t to_len,
		     const struct store_preconditions *pre_to,
		     const char *value, size_t value_len, int64_t *rev,
		     struct store_error *err)
{
	return snap_readonly(s, from, from_len, err);
}

static int snap_move_keys(struct store *s, const struct store_move_key *keys,
			  size_t n, const struct store_move_guard *guard,
			  int64_t *rev, struct store_error *err)
{
	return snap_readonly(s, NULL, 0, err);
}

static int snap_lease_grant(struct store *s, int64_t ttl, int64_t *id,
			    struct store_error *err)
{
	return snap_readonly(s, NULL, 0, err);
}

static int snap_lease_revoke(struct store *s, int64_t id,
			     struct store_error *err)
{
	return snap_readonly(s, NULL, 0, err);
}

static int snap_lease_ttl(struct store *s, int64_t id, int64_t *ttl,
			  struct store_error *err)
{
	return snapshot_lease_ttl(snap_of(s), id, ttl, err);
}

static const char *snap_endpoint(struct store *s)
{
	return s->cfg.snapshot;
}

static int snap_set_endpoints(struct store *s, const char *const *endpoints,
			      size_t n, struct store_error *err)
{
	return store_fail(err, STORE_ENOTSUP, NULL, 0, 0,
			  "the snapshot '%s' has no endpoints",
			  s->cfg.snapshot);
}

static uint64_t snap_unreachable_count(struct store *s)
{
	return 0;
}

const struct store_backend store_snapshot_backend = {
	.name = "snapshot",
	.past_reads = true,
	.init = snap_init,
	.release = snap_release,
	.revision = snap_revision,
	.status = snap_status,
	.get = snap_get,
	.range = snap_range,
	.cas = snap_cas,
	.del = snap_del,
	.move = snap_move,
	.move_keys = snap_move_keys,
	.lease_grant = snap_lease_grant,
	.lease_revoke = snap_lease_revoke,
	.lease_ttl = snap_lease_ttl,
	.endpoint = snap_endpoint,
	.set_endpoints = snap_set_endpoints,
	.unreachable_count = snap_unreachable_count,
};
