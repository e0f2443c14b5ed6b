/*
 * quorum.h - -o quorum: lookups, opens and listings answered from the
 * mirror only once it has applied everything etcd had when they arrived
 * (fs/quorum.c)
 *
 * What it cannot do: be used outside fs/.
 */
#ifndef ETCDFS_QUORUM_H
#define ETCDFS_QUORUM_H

#include <stdint.h>

#include "fs.h"

struct fs;

/* What the barrier counted, for user.etcd.stats; fs->lock held. */
struct quorum_counters {
	uint64_t requests;	/* linearizable requests for the revision */
	uint64_t waits;		/* operations that waited on the barrier */
	uint64_t progress;	/* progress requests sent on the watch */
	uint64_t failures;	/* operations the barrier failed */
};

#include <stdbool.h>

/*
 * -o quorum with the watch where there is no barrier (v2, which has no
 * progress requests): a lookup of a name the mirror lacks and a listing
 * ask etcd (linearizably), as with nowatch, and each open reads its key
 * again (file.c).  fs->lock not needed.
 */
bool quorum_reads_etcd(struct fs *fs);

/* With -o quorum and the watch, on v3: the barrier's state.  0 or -ENOMEM. */
int quorum_new(struct fs *fs);
void quorum_free(struct fs *fs);

/*
 * Waits until the mirror has applied every change etcd had when @req
 * arrived: one linearizable request for the cluster's revision, shared
 * by the operations waiting for it, then the watch up to that revision.
 * 0 at once without quorum, and for the echo's own requests (they
 * replay what the mirror has already).  Bounded by the request timeout: -ETIMEDOUT,
 * or the errno of the request's failure (never -ENOENT).  fs->lock not
 * held.
 */
int quorum_barrier(struct fs *fs, fuse_req_t req);

void quorum_counters(struct fs *fs, struct quorum_counters *c);

#endif /* ETCDFS_QUORUM_H */
