/*
 * quorum.c - -o quorum on etcd v3: linearizable lookups, opens and
 * listings served from the mirror, as Kubernetes serves consistent reads
 * from its watch cache
 *
 * Before gate.c hands a lookup, open or opendir to its handler, the
 * operation waits at this barrier.  It needs the cluster's revision as
 * of a moment after it arrived: one linearizable request (a count-only
 * range, store_revision) that every operation waiting at that moment
 * shares.  An operation that arrives while a request is in flight waits
 * for the next one, since the one in flight may have been answered
 * before the operation began.  Then it waits until the mirror has
 * applied the watch up to that revision: when no event of the prefix is
 * at it, a progress request on the watch stream
 * (store_watch_progress) says how far the stream got, asked again every
 * QUORUM_ASK_MS while anyone waits (etcd does not answer one while the
 * watch catches up).  The mirror says how far it has applied the watch
 * (fs->mirror.applied_rev, moved by live.c's fs_mirror_applied, which wakes the
 * condition variable this file gives it, fs->mirror.applied_wake: it calls
 * nothing here).  A change is in the mirror
 * as soon as the watch delivers it, so this never waits for the echo,
 * whose syscalls may need the directory lock the kernel holds for the
 * lookup waiting here.  The watch's thread itself waits only for the
 * reply of a write of the mount's own (inflight.c's own_write_wait), which
 * never waits for the barrier; and while the kernel caches no name nor
 * attribute (the timeouts' defaults under quorum) it sends the kernel no
 * invalidation, which could wait for that lock (live.c's
 * unlock_and_send).
 *
 * The echo's requests pass at once: the barrier is for the mount's users,
 * and the echo replays what the mirror has already.  Every wait ends
 * within the request timeout, with ETIMEDOUT, or with the errno of the
 * request that failed.
 *
 * What it cannot do: be linearizable on etcd versions whose progress
 * answers can overtake events (see the README); serve v2, which has no
 * progress requests (fs.c and file.c read etcd there); keep the kernel
 * from caching what the timeouts let it (mount/setup.c sets them to 0).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"
#include "quorum.h"

/* How often a progress request is sent again while an operation waits. */
#define QUORUM_ASK_MS 100

struct fs_quorum {
	/* all protected by fs->lock */
	pthread_cond_t cond;	/* CLOCK_MONOTONIC: a round ended, or the
				 * mirror moved */
	uint64_t started;	/* rounds (requests) started */
	uint64_t ended;		/* and ended: the last one's answer below */
	bool in_flight;
	int64_t rev;
	int err;		/* its errno, negated; 0: rev is good */
	int64_t asked_rev;	/* the revision the last progress was for */
	int64_t asked_ms;
	struct quorum_counters c;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* -o quorum with the watch (a past revision= never changes). */
static bool quorum_wanted(const struct fs *fs)
{
	return fs->cfg.quorum && !fs->cfg.nowatch && !fs->cfg.revision;
}

bool quorum_reads_etcd(struct fs *fs)
{
	return quorum_wanted(fs) && !fs->quorum;
}

int quorum_new(struct fs *fs)
{
	struct fs_quorum *q;
	pthread_condattr_t ca;

	if (!quorum_wanted(fs) || !fs->store ||
	    strcmp(store_backend_name(fs->store), "etcd3") != 0)
		return 0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	fs->quorum = q;
	fs->mirror.applied_wake = &q->cond;
	return 0;
}

void quorum_free(struct fs *fs)
{
	struct fs_quorum *q = fs->quorum;

	if (!q)
		return;
	fs->mirror.applied_wake = NULL;
	pthread_cond_destroy(&q->cond);
	free(q);
	fs->quorum = NULL;
}

void quorum_counters(struct fs *fs, struct quorum_counters *c)
{
	if (fs->quorum)
		*c = fs->quorum->c;
	else
		memset(c, 0, sizeof(*c));
}

/* Waits on q->cond until @until_ms at most; fs->lock held. */
static void wait_until(struct fs *fs, int64_t until_ms)
{
	struct timespec ts = {
		.tv_sec = until_ms / 1000,
		.tv_nsec = (until_ms % 1000) * 1000000L,
	};

	pthread_cond_timedwait(&fs->quorum->cond, &fs->lock, &ts);
}

/* One request for the cluster's revision; fs->lock held, dropped. */
static void round_trip(struct fs *fs, struct fs_quorum *q)
{
	struct store_error serr = { 0 };
	uint64_t round;
	int64_t rev = 0;
	int rc;

	q->in_flight = true;
	round = ++q->started;
	q->c.requests++;
	pthread_mutex_unlock(&fs->lock);
	rc = store_revision(fs->store, &rev, &serr);
	if (rc)
		fs_log_store_error("quorum: cannot read the revision", &serr);
	pthread_mutex_lock(&fs->lock);
	q->in_flight = false;
	q->ended = round;
	q->rev = rev;
	q->err = rc ? fs_errno(rc) : 0;
	if (q->err == -ENOENT)
		q->err = -EIO;	/* a failure is never "no such file" */
	pthread_cond_broadcast(&q->cond);
}

/* Asks the watch how far it is, unless that was asked for @rev lately. */
static void ask_progress(struct fs *fs, struct fs_quorum *q, int64_t rev)
{
	int64_t now = now_ms();

	if (rev <= q->asked_rev && now - q->asked_ms < QUORUM_ASK_MS)
		return;
	if (fs->mirror.stopping || !fs->mirror.watch)
		return;
	q->asked_rev = rev;
	q->asked_ms = now;
	if (store_watch_progress(fs->mirror.watch) == 0)
		q->c.progress++;
}

int quorum_barrier(struct fs *fs, fuse_req_t req)
{
	struct fs_quorum *q = fs->quorum;
	int64_t deadline, rev, now;
	uint64_t want;
	int err;

	if (!q)
		return 0;
	deadline = now_ms() + (fs->cfg.request_timeout_ms > 0 ?
			       fs->cfg.request_timeout_ms : 5000);
	pthread_mutex_lock(&fs->lock);
	if (fs->echo.pid > 0 && fuse_req_ctx(req)->pid == fs->echo.pid) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	q->c.waits++;
	/* a request already in flight may predate us: the next one */
	want = q->started + 1;
	while (q->ended < want) {
		if (!q->in_flight) {
			round_trip(fs, q);
			continue;
		}
		if (now_ms() >= deadline) {
			err = -ETIMEDOUT;
			goto out;
		}
		wait_until(fs, deadline);
	}
	err = q->err;
	rev = q->rev;
	while (!err && fs->mirror.applied_rev < rev) {
		now = now_ms();
		if (now >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		ask_progress(fs, q, rev);
		wait_until(fs, now + QUORUM_ASK_MS < deadline ?
			       now + QUORUM_ASK_MS : deadline);
	}
out:
	if (err)
		q->c.failures++;
	pthread_mutex_unlock(&fs->lock);
	return err;
}
