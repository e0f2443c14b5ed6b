/*
 * snapshot.h - an etcd snapshot file (or a copied member db) as a key
 * space that can be read at any revision it keeps
 *
 * etcd's schema on top of bbolt (bbolt.h): bucket "key" maps a revision
 * (8-byte big-endian main, '_', 8-byte big-endian sub, and 't' for a
 * tombstone) to an mvccpb.KeyValue; bucket "meta" holds the compaction
 * revisions (finishedCompactRev, scheduledCompactRev) and the consistent
 * index; bucket "lease" maps an 8-byte big-endian id to a leasepb.Lease.
 * The key space at revision R is, for each key, its newest revision at
 * most R, unless that is a tombstone.
 *
 * snapshot_open reads the whole "key" bucket once into an index (each
 * revision's key, create_revision, version and lease; values stay in the
 * file and are read when asked for), checks the sha256 trailer that
 * `etcdctl snapshot save` appends (present when the size % 512 is 32),
 * and refuses a damaged file with one line naming what and where.  Once
 * open a snapshot does not change and may be read from many threads.
 *
 * What it cannot do: write; tell a lease's true remaining time (a
 * snapshot keeps its granted TTL only); read a file of the other byte
 * order.
 */
#ifndef ETCDFS_SNAPSHOT_H
#define ETCDFS_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "kv.h"

#define SNAPSHOT_HASH_SIZE	32	/* the sha256 trailer */

struct snapshot;

struct snapshot_info {
	int64_t revision;		/* the newest revision */
	int64_t compact_revision;	/* the oldest readable one */
	uint64_t consistent_index;
	size_t revisions;		/* entries of bucket "key" */
	size_t leases;
	uint64_t size;			/* of the file */
	uint64_t in_use;		/* the pages bbolt uses, in bytes */
	bool hashed;			/* it had a sha256 trailer */
	bool hash_checked;		/* ... and it was checked */
};

/*
 * Opens the snapshot file @path read-only (never written, never locked).
 * Refuses (STORE_EINVAL, one line) a file that is not a bbolt file of
 * etcd's, is damaged, or whose sha256 trailer does not match its bytes
 * (unless @skip_hash_check).
 */
int snapshot_open(const char *path, bool skip_hash_check,
		  struct snapshot **out, struct store_error *err);

/* As snapshot_open, on @fd (owned by the snapshot from then on). */
int snapshot_open_fd(int fd, const char *name, bool skip_hash_check,
		     struct snapshot **out, struct store_error *err);

void snapshot_free(struct snapshot *s);

void snapshot_get_info(const struct snapshot *s, struct snapshot_info *out);

/*
 * 0 if the key space can be read at @rev; ECOMPACTED with err->revision
 * the oldest readable revision, or EINVAL naming the newest, if not.
 */
int snapshot_check_revision(const struct snapshot *s, int64_t rev,
			    struct store_error *err);

/*
 * The keys of [@key, @range_end) at revision @rev (0: the newest) as an
 * etcd range answers them: @range_end NULL is the one key @key, "\0" (of
 * length 1) every key from @key on.  At most @limit keys (0: no limit)
 * are appended to @out (out->revision set); *@more if live keys are left
 * past them; *@count (if not NULL) the live keys of the whole range.
 * @keys_only: no values.  ECOMPACTED or EINVAL for a revision it does
 * not keep (snapshot_check_revision); EBADREPLY if a value cannot be
 * read (a file that changed under it).
 */
int snapshot_range(struct snapshot *s, const char *key, size_t key_len,
		   const char *range_end, size_t range_end_len, int64_t rev,
		   size_t limit, bool keys_only, struct store_list *out,
		   bool *more, int64_t *count, struct store_error *err);

/* The granted TTL of lease @id; ENOTFOUND if the snapshot has none. */
int snapshot_lease_ttl(const struct snapshot *s, int64_t id, int64_t *ttl,
		       struct store_error *err);

#endif /* ETCDFS_SNAPSHOT_H */
