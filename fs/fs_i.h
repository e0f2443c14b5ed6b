/*
 * fs_i.h - what the modules of fs/ share: the filesystem, its tree of nodes
 * (the mirror of etcd under the mount prefix), open files and pins
 *
 * The functions are declared by layer: kernel.h, mirror.h (live.c),
 * echo_thread.h (echo.c), handle.h (open files, pins, commits, codecs,
 * directory moves), which this header includes; quorum.h and gate.h
 * (gates); ops.h (the FUSE operations), which it does not include, so
 * that a file below the operations that called one does not compile.
 *
 * Lock order: a handle's lock (h->lock), then fs->lock, then
 * fs->echo.lock.  A handle's lock is taken first (by the read, write,
 * truncation, flush, fsync and release of that open file) and held across
 * its commit (commit.c's handle_commit), a request to etcd, so that one
 * open file's writes and commits go one at a time; fs->lock is taken and
 * dropped inside it, more than once.  fs->lock is never held across a
 * request to etcd nor across a call into the kernel (replies and
 * notifications), so a slow cluster never stalls lookups of other files
 * and a notification can never wait on a handler that waits on us.
 * fs->echo.lock guards the echo's queue alone (echo.c), and is taken with
 * fs->lock held (the mirror's observer, echo.c's echo_observe) or alone.
 * fs->replay_lock is taken with no other lock held; kernel.c's
 * notify_lock is the innermost, held across one notification only.
 *
 * Inside fs/ every function returns 0 or -errno (or a named positive
 * value, HANDLE_COMMITTED); only the FUSE handlers reply, with the errno.
 */
#ifndef ETCDFS_FS_I_H
#define ETCDFS_FS_I_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "errno_map.h"
#include "fs.h"
#include "kernel.h"
#include "store.h"
#include "temp.h"
#include "thread.h"
#include "tree.h"

/*
 * An open file (file.c): for a key, its own copy of the value, taken at
 * open, which writes change and commit.c commits; for a local file (temp
 * files), the node's value itself.
 */
struct handle {
	pthread_mutex_t lock;	/* guards the fields below but node */
	struct node *node;	/* referenced; fields under fs->lock */
	bool local;		/* the node's value is the content */
	char *buf;		/* the copy: NUL-terminated past len */
	size_t len;
	size_t cap;
	int64_t base;		/* the revision buf is based on; 0: absent */
	bool dirty;		/* written since the last commit */
	bool truncated;		/* opened with O_TRUNC, not written yet */
	int failed_err;		/* the last commit failed with this errno, and
				 * what buf holds is not in etcd; written with
				 * fs->lock held too */
	bool trunc_waiting;	/* counted in node->trunc_waiting */
	bool dropped;		/* its file was unlinked: nothing to commit
				 * (under fs->lock) */
	struct handle *nnext;	/* in node->handles, under fs->lock */
	struct handle *onext;	/* in fs->open, under fs->lock */
	struct handle **oprev;
	/*
	 * Under fs->lock: a writer whose copy differs from what etcd has
	 * shows its size and the time of its last change to every stat of
	 * the file (the newest such writer first in node->handles).
	 */
	bool shown;
	size_t shown_size;
	struct timespec shown_mtime;
	bool writer;		/* opened for writing */
	bool written;		/* write() was called */
	bool append;
	bool echo;		/* the echo thread's: writes are no-ops */
	bool cached;		/* reads the kernel's pages: counted in
				 * node->cached_readers */
	pid_t pid;		/* the opener, whose pins apply */
	/*
	 * Under fs->lock: times set (utimensat) while the writer held what
	 * etcd does not have yet, which its commit keeps (cp -a and tar set
	 * them before close); a later write takes the mtime back.
	 */
	unsigned char set_times;	/* ATTR_SET_ATIME | ATTR_SET_MTIME */
	struct timespec set_atime;
	struct timespec set_mtime;
};

/* The filesystem a request is for (fuse_session_new's userdata). */
static inline struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline struct handle *handle_of(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

/* A pinned revision (pins.c), in fs->pins: under fs->lock. */
struct pin {
	char *key;
	size_t key_len;
	int64_t rev;
	pid_t owner;
	unsigned long long owner_start;
	struct timespec set;
};

/*
 * A write in flight (inflight.c), on its writer's stack, in
 * fs->mirror.inflight: under fs->lock.
 */
struct inflight {
	struct inflight *next;
	const char *key;	/* borrowed from the writer */
	size_t key_len;
	uint64_t seq;		/* fs->mirror.inflight_seq when it began */
};

/*
 * A change from the watch, in the mirror already, that the echo thread is
 * to replay (echo.c).  Its plan is under fs->lock.
 */
struct echo_ev {
	struct echo_ev *next;
	bool del;
	struct store_kv kv;	/* owned */
	int64_t rev;		/* the revision of a deletion */
	int action;		/* echo.c's enum echo_action */
	char *path;		/* relative to the mount's root; owned */
	struct node **chain;	/* each component's node, shallowest first,
				 * as the change left (or found) it:
				 * referenced, whatever came since */
	size_t nchain;
	size_t made;		/* a creation: chain[made..] not made yet */
	size_t gone;		/* a deletion: chain[gone..] went with it */
};

/* The echo's process, as the echo thread knows it; that thread's alone. */
struct echo_child {
	int sock;		/* the thread's end of the socket; -1: none */
	int wake;		/* eventfd: echo_stop() wakes the thread */
	int64_t retry_at;	/* no new process before (CLOCK_MONOTONIC ms) */
	unsigned failures;	/* processes that could not be started */
	bool root_known;	/* the mount's identity, from mountinfo: */
	uint64_t dev;
	uint64_t mnt_id;
	bool gone;		/* the mountpoint was not the mount, last time */
};

/*
 * Who follows the echo's new directories (echo.c), under fs->lock:
 * `inotifywait -r` watches a directory only once it has walked it
 * (opendir, readdir, closedir, then inotify_add_watch), so what the echo
 * makes in it before that is never reported.  The echo notes each
 * directory before it makes it (a follower may walk it before the echo's
 * mkdir has returned), and keeps the last few; a process other than the
 * echo that closes one of them soon after is a follower, and while one
 * was seen lately the echo waits until each new directory was walked.
 */
#define ECHO_FOLLOW_RING 8
struct echo_follow {
	uint64_t made[ECHO_FOLLOW_RING];	/* their inode numbers (never reused) */
	int64_t made_ms[ECHO_FOLLOW_RING];	/* CLOCK_MONOTONIC */
	bool walked[ECHO_FOLLOW_RING];	/* a follower walked it */
	unsigned next;
	int64_t seen_ms;	/* a follower was last seen then (0: never) */
	pthread_cond_t cond;	/* CLOCK_MONOTONIC: walked */
	uint64_t walked_n;	/* new directories waited for and walked */
	uint64_t unwalked_n;	/* and not walked in time */
};

struct fs;

/*
 * An observer of the mirror (fs->mirror.observer): given another
 * client's change (@kv; a deletion of its key at @rev if @del) with
 * fs->lock held, it either puts it in the tree itself, recording the
 * invalidations in @inv, and returns 0, or returns a negative errno and
 * does nothing (the mirror then applies the change itself).
 */
typedef int mirror_change_fn(struct fs *fs, bool del,
			     const struct store_kv *kv, int64_t rev,
			     struct inval_list *inv);

/* What the watch delivered (live.c), for user.etcd.stats (stats.c). */
struct watch_count {
	atomic_uint_fast64_t events;	/* puts and deletes delivered */
	atomic_int_fast64_t rev;	/* the newest revision delivered */
	atomic_uint_fast64_t relists;
};

/*
 * The echo (echo.c): a thread that hands other clients' changes, one at a
 * time, to the echo's process, pid @pid (0: none), whose requests are the
 * echo's.  It is the mirror's observer (fs->mirror.observer) while it runs.
 */
struct echo {
	/*
	 * Protected by fs->lock, and written by the echo thread only;
	 * running too (written by echo_start() and echo_stop()).
	 */
	struct echo_ev *cur;
	pid_t pid;
	bool running;
	struct echo_follow follow;	/* protected by fs->lock */
	struct echo_child child;	/* the echo thread's */
	struct thread thread;		/* helper/thread.h */
	pthread_mutex_t lock;		/* guards the queue and the below */
	pthread_cond_t cond;
	struct echo_ev *head;
	struct echo_ev *tail;
	size_t len;			/* queued, and the one replaying */
	uint64_t done;
	bool stop;
};

/*
 * The mirror kept live (live.c): the watch, the writes in flight, the
 * mount's own changes.  Every field is protected by fs->lock but
 * watch_count's atomics; the tree itself is fs->tree.
 */
struct mirror {
	bool loaded;			/* the first listing is in */
	/*
	 * The watch, and the ones compactions ended, to join: the watch's
	 * own thread replaces it (relist) while fs_destroy() may be
	 * stopping it; once stopping is set no watch is started and a
	 * relist gives up.
	 */
	struct store_watch *watch;
	struct store_watch *old[16];
	size_t nold;
	bool stopping;
	bool watch_ok;			/* the watch is connected */
	/* the kernel's invalidations of changes applied, still to send */
	struct inval_list pending_invals;
	/*
	 * Batches of invalidations on their way to the kernel (live.c's
	 * invals_begin): gathered and not all sent yet, the mirror's
	 * revision when the first of them began, and whether the watch's
	 * thread's batch is one of them.  While any is, user.etcd.revision
	 * (fs_revision_shown) stays at that revision, so that a script that
	 * waits for it reads no attribute or name the kernel was still to
	 * forget.
	 */
	unsigned invals_sending;
	int64_t invals_floor;
	bool watch_batch;
	/*
	 * Keys the mount is writing right now: their watch events wait
	 * until the write is in the mirror, so that the mount's own writes
	 * are never echoed.
	 */
	struct inflight *inflight;
	uint64_t inflight_seq;	/* the next inflight's seq */
	pthread_cond_t inflight_cond;	/* with fs->lock */
	/* the mount's own changes whose watch events are still to come */
	struct own_change *own;
	size_t nown;
	/*
	 * The watch delivered every change up to applied_rev (its events,
	 * a progress event, a listing after a compaction), and each is in
	 * the tree (fs_mirror_applied).  applied_wake, if set, is broadcast
	 * when it moves: quorum.c's condition variable, given at quorum_new,
	 * so that the mirror wakes the barrier without calling it.
	 */
	int64_t applied_rev;
	pthread_cond_t *applied_wake;
	/*
	 * The mirror's observer of other clients' changes: the echo
	 * (echo.c) registers itself while it runs; NULL: none.
	 */
	mirror_change_fn *observer;
	struct watch_count watch_count;	/* atomics */
};

/* node->cache_rev: the kernel may hold pages of no known revision */
#define CACHE_UNKNOWN ((int64_t)-1)

struct fs {
	struct fs_config cfg;		/* read-only after fs_new */
	struct store *store;		/* borrowed; thread-safe */
	struct fs_kernel kernel;	/* kernel.c's; its own lock */
	struct mirror mirror;		/* live.c's; under lock but the
					 * atomics */

	pthread_mutex_t lock;
	struct tree tree;		/* protected by lock, like all below */
	struct pin *pins;
	size_t npins;
	/*
	 * Every handle not released yet.  The kernel drops the RELEASEs it
	 * has not sent when the mount goes away: fs_free frees what is left.
	 * The same for directories (dir.c's dir_handle).
	 */
	struct handle *open;
	struct dir_handle *open_dirs;

	/*
	 * The last opens of a replaced inode answered ESTALE (file.c's
	 * stale_name), by inode and thread: the same thread's next open of
	 * it is the kernel's retry.  Identities only, never dereferenced.
	 */
	struct {
		const struct node *node;
		pid_t tid;
	} estale[8];
	unsigned estale_next;

	struct echo echo;		/* echo.c's */
	/*
	 * Held by the echo thread while the echo's process runs one syscall
	 * on the mount, and by the watch thread while it sends the kernel
	 * its invalidations: an entry invalidation takes its directory's
	 * lock in the kernel, which the echo's syscall may hold while it
	 * waits for the daemon; were the daemon killed then, that
	 * notification would wait forever, keep /dev/fuse open and so hang
	 * the mount (tests/fs/daemon.bats).  Taken after no other lock.
	 */
	pthread_mutex_t replay_lock;

	struct timespec mounted;
	struct temp_names *temp;	/* -o temp_names=; NULL if none */
	struct fs_space *space;		/* statfs.c's; protected by lock */
	struct fs_gate *gate;		/* gate.c's, made with the fs */
	struct history *history;	/* protected by lock (history.c) */
	struct seen_ring *seen;		/* protected by lock (seen.c) */
	/*
	 * Files are opened without a message to the daemon (file.c's
	 * fs_open): a read-only mount whose files never change under an
	 * inode (see fs_no_open_mode).  Set once, at fs_new.
	 */
	bool no_open;
	struct fs_quorum *quorum;	/* quorum.c's; NULL but for -o quorum
					 * on v3 (made with the fs) */
};

#include "echo_thread.h"
#include "handle.h"
#include "mirror.h"

#endif /* ETCDFS_FS_I_H */
