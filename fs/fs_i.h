/*
 * fs_i.h - what the modules of fs/ share: the filesystem, its tree of nodes
 * (the mirror of etcd under the mount prefix), open files and pins
 *
 * Lock order: a handle's lock (h->lock), then fs->lock, then
 * fs->echo_lock.  A handle's lock is taken first (by the read, write,
 * truncation, flush, fsync and release of that open file) and held across
 * its commit (commit.c's handle_commit), a request to etcd, so that one
 * open file's writes and commits go one at a time; fs->lock is taken and
 * dropped inside it, more than once.  fs->lock is never held across a
 * request to etcd nor across a call into the kernel (replies and
 * notifications), so a slow cluster never stalls lookups of other files
 * and a notification can never wait on a handler that waits on us.  fs->echo_lock guards the echo's queue alone (echo.c), and is
 * taken with fs->lock held (live.c's fs_apply) or alone.
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

#include "fs.h"
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

static inline struct handle *handle_of(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

struct pin {
	char *key;
	size_t key_len;
	int64_t rev;
	pid_t owner;
	unsigned long long owner_start;
	struct timespec set;
};

struct inflight {
	struct inflight *next;
	const char *key;	/* borrowed from the writer */
	size_t key_len;
	uint64_t seq;		/* fs->inflight_seq when it began */
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

/* node->cache_rev: the kernel may hold pages of no known revision */
#define CACHE_UNKNOWN ((int64_t)-1)

struct fs {
	struct fs_config cfg;
	struct store *store;
	struct fuse_session *se;
	/*
	 * Every notification to the kernel (fs_notify_*) is sent with
	 * notify_lock read-held, and none once notify_off is set: the
	 * watch's and the echo's threads outlive the session's loop, and
	 * libfuse's unmount closes the device, whose number the next
	 * descriptor opened may take (fs_notify_stop).
	 */
	pthread_rwlock_t notify_lock;
	atomic_bool notify_off;

	pthread_mutex_t lock;
	struct tree tree;		/* protected by lock, like all below */
	struct pin *pins;
	size_t npins;
	/*
	 * Every handle not released yet.  The kernel drops the RELEASEs it
	 * has not sent when the mount goes away: fs_free frees what is left.
	 * The same for directories (fs.c's dir_handle).
	 */
	struct handle *open;
	struct dir_handle *open_dirs;

	bool loaded;			/* the first listing is in */
	/*
	 * The watch, and the ones compactions ended, to join.  Under lock:
	 * the watch's own thread replaces it (live.c's relist) while
	 * fs_destroy() may be stopping it; once stopping is set no watch is
	 * started and a relist gives up.
	 */
	struct store_watch *watch;
	struct store_watch *old[16];
	size_t nold;
	bool stopping;
	bool watch_ok;			/* the watch is connected */

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

	/*
	 * The echo (echo.c): a thread that hands other clients' changes, one
	 * at a time, to the echo's process, pid echo_pid (0: none), whose
	 * requests are the echo's.  echo_cur and echo_pid are protected by
	 * lock, and written by the echo thread only; echo_running too
	 * (written by echo_start() and echo_stop()).
	 */
	struct echo_ev *echo_cur;
	pid_t echo_pid;
	struct echo_child echo_child;
	struct echo_follow echo_follow;	/* protected by lock */
	struct thread echo_thread;	/* helper/thread.h */
	bool echo_running;
	pthread_mutex_t echo_lock;	/* guards the queue and the below */
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
	pthread_cond_t echo_cond;
	struct echo_ev *echo_head;
	struct echo_ev *echo_tail;
	size_t echo_len;		/* queued, and the one replaying */
	uint64_t echo_done;
	bool echo_stop;
	struct inval_list pending_invals;	/* protected by lock */
	/*
	 * Under lock: changes whose invalidations are on their way to the
	 * kernel (live.c's invals_begin): batches gathered and not all sent
	 * yet, the mirror's revision when the first of them began, and
	 * whether the watch's thread's batch is one of them.  While any is,
	 * user.etcd.revision (fs_revision_shown) stays at that revision, so
	 * that a script that waits for it reads no attribute or name the
	 * kernel was still to forget.
	 */
	unsigned invals_sending;
	int64_t invals_floor;
	bool watch_batch;

	/*
	 * Keys the mount is writing right now (protected by lock): their
	 * watch events wait until the write is in the mirror, so that the
	 * mount's own writes are never echoed.
	 */
	struct inflight *inflight;
	uint64_t inflight_seq;	/* the next inflight's seq */
	pthread_cond_t inflight_cond;
	/* the mount's own changes whose watch events are still to come */
	struct own_change *own;		/* protected by lock (live.c) */
	size_t nown;
	struct timespec mounted;
	struct temp_names *temp;	/* -o temp_names=; NULL if none */
	struct fs_space *space;		/* statfs.c's; protected by lock */
	struct fs_gate *gate;		/* gate.c's, made with the fs */
	struct history *history;	/* protected by lock (history.c) */
	/*
	 * Files are opened without a message to the daemon (file.c's
	 * fs_open): a read-only mount whose files never change under an
	 * inode (see fs_no_open_mode).  Set once, at fs_new.
	 */
	bool no_open;
	struct fs_quorum *quorum;	/* quorum.c's; NULL but for -o quorum
					 * on v3 (made with the fs) */
};

/* fs.c */
void fs_now(struct timespec *ts);
fuse_ino_t node_id(struct fs *fs, struct node *n);
struct node *node_of(struct fs *fs, fuse_ino_t ino);
void node_fill_attr(struct fs *fs, struct node *n, struct stat *st);
/* The directory @ino in *@dirp: 0, or -ENOTDIR.  fs->lock held. */
static inline int dir_of(struct fs *fs, fuse_ino_t ino, struct node **dirp)
{
	struct node *dir = node_of(fs, ino);

	if (dir->type != NODE_DIR)
		return -ENOTDIR;
	*dirp = dir;
	return 0;
}
/*
 * Replies the entry of @n, which counts as the kernel's lookup of it, for
 * a node the caller referenced (n->refs++) under fs->lock and unlocked
 * since, so that a watch event cannot free it meanwhile.  That reference
 * is dropped once the entry's lookup holds the node.  fs->lock not held.
 */
void fs_reply_entry_unref(struct fs *fs, fuse_req_t req, struct node *n);
void fs_send_invals(struct fs *fs, struct inval_list *l);
/*
 * libfuse's notifications, sent only while the session's device is open
 * (fs_notify_stop): -ENOTCONN after, as if the kernel were gone.
 */
int fs_notify_inval_inode(struct fs *fs, fuse_ino_t ino, off_t off,
			  off_t len);
int fs_notify_inval_entry(struct fs *fs, fuse_ino_t parent,
			  const char *name, size_t len);
int fs_notify_store(struct fs *fs, fuse_ino_t ino, off_t off,
		    struct fuse_bufvec *bufv);
void fs_log_store_error(const char *what, const struct store_error *err);

/* live.c */
void fs_apply(struct fs *fs, bool del, const struct store_kv *kv,
	      int64_t rev);
/*
 * The mirror has applied every change the watch delivered up to @rev:
 * the one place where the watch moves the mirror's revision
 * (fs->tree.revision).  fs->lock held.
 */
void fs_mirror_applied(struct fs *fs, int64_t rev);
/*
 * The revision user.etcd.revision reports: the mirror's, once the kernel
 * was sent the invalidations of every change up to it.  fs->lock held.
 */
int64_t fs_revision_shown(struct fs *fs);
/* With fs->lock held: @in names @key as being written, until ..._end. */
void inflight_begin(struct fs *fs, struct inflight *in, const char *key,
		    size_t key_len);
void inflight_end(struct fs *fs, struct inflight *in);
bool inflight_has(struct fs *fs, const char *key, size_t key_len);
/*
 * The next inflight's seq (inflight_seq_now), and waiting until every
 * write begun before it has ended (inflight_wait_begun_before: fs->lock
 * held, dropped meanwhile; bounded as own_write_wait, false past it).
 */
uint64_t inflight_seq_now(struct fs *fs);
bool inflight_wait_begun_before(struct fs *fs, uint64_t seq);
/*
 * The mount's own changes, which it puts in the mirror itself: a change of
 * @key at @rev is noted (own_change_add) when the mirror has it, before
 * the key's inflight ends, and its watch event, whenever it comes, is
 * then taken (own_change_take: true once) and not applied again, so that
 * an event of a key the mount has since renamed or deleted brings back
 * nothing.  fs->lock held.  Bounded: past OWN_CHANGES_MAX, the oldest are
 * forgotten.
 */
void own_change_add(struct fs *fs, const char *key, size_t key_len,
		    int64_t rev);
bool own_change_take(struct fs *fs, const char *key, size_t key_len,
		     int64_t rev);
void own_changes_free(struct fs *fs);
/*
 * Waits until no commit, unlink or rename of @n's key by this mount is in
 * flight, so that changes of one key reach etcd in the order they were
 * made (a close's commit, sent at release, before the unlink that
 * followed it).  fs->lock held, dropped meanwhile: true if it was, and
 * the caller looks again at what it found (@n itself may be gone then,
 * unless the caller holds a reference).  Bounded (a minute).
 */
bool inflight_wait(struct fs *fs, struct node *n);
/*
 * Lists the keys below @dir's prefix and makes the subtree match them.
 * Takes and drops fs->lock itself; @dir must be referenced.
 */
int fs_refresh_dir(struct fs *fs, struct node *dir);
/*
 * Reads the key that (dir, name) names into the tree, or the keys below
 * the directory it names (-o nowatch's lookups).  fs->lock held, and
 * dropped for the request; @dir referenced meanwhile.  0 if it is there
 * now, -ENOENT if etcd has no such key, or another negative errno.
 */
int fs_lookup_key(struct fs *fs, struct node *dir, const char *name);
int fs_start_watch(struct fs *fs, int64_t from);

int fs_name_key(struct fs *fs, struct node *dir, const char *name,
		enum node_type type, char **key, size_t *key_len);
/*
 * A name no file of the mount can have: fs/names.h cuts long segments
 * into parts, so every component is at most NAME_MAX bytes (ENAMETOOLONG).
 */
static inline bool fs_name_too_long(const char *name)
{
	return strnlen(name, NAME_MAX + 1) > NAME_MAX;
}

/* The name of a temp file (fs/temp.h): built in, or the site's. */
static inline bool fs_is_temp_name(struct fs *fs, const char *name)
{
	return temp_name(fs->temp, name);
}

/* file.c */
/*
 * Can files be opened without a message (fs->no_open)?  The kernel then
 * sends no OPEN, FLUSH nor RELEASE, for the whole connection: a warm
 * open+read+close costs what it does on tmpfs.  Only where no open file
 * needs the daemon: a read-only mount, whose files are read through the
 * kernel's pages of an inode that keeps one revision (live.c's fs_apply
 * gives a changed file a new inode while the kernel knows the old one),
 * with every value held (no budget evicts one an open file still
 * reads; at a past revision=, nothing changes and an evicted value is
 * read again as it was), and no -o codec= (its views are made at open)
 * nor -o quorum (its barrier is at open).
 */
bool fs_no_open_mode(const struct fs_config *cfg);
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi);
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_handles_free(struct fs *fs);
/*
 * With fs->lock held: reads @n's value again if the value budget evicted
 * it; the lock is dropped meanwhile, so the caller looks again at what it
 * found.  0, or -ENOENT if the key went meanwhile, or another -errno.
 */
int fs_load_value(struct fs *fs, struct node *n);

/* commit.c */
void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi);
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi);
/* Resizes a local node's content; fs->lock held. */
int node_local_resize(struct fs *fs, struct node *n, size_t size);
enum commit_kind {
	COMMIT_FLUSH,		/* a close */
	COMMIT_FSYNC,
	COMMIT_RELEASE,		/* the last close, which nobody hears */
};
/* handle_commit()'s answer when it sent a commit, and it succeeded */
#define HANDLE_COMMITTED 1
/*
 * Commits @h's copy if it needs it: when written, when its file is new,
 * when its last commit failed, or (fsync, release) when it was only
 * truncated.  Returns HANDLE_COMMITTED if it committed, 0 if there was
 * nothing to, or -errno.  @h->lock held.
 */
int handle_commit(struct fs *fs, struct handle *h, enum commit_kind kind);
/* After a commit of inode @ino: the kernel drops its pages and size. */
void handle_committed(struct fs *fs, fuse_ino_t ino);
/*
 * With fs->lock held: puts the size and mtime of @n's newest changed
 * writer into @st, if it has one; true if so.  A stat of a file open for
 * writing sees what its writer holds, as on a local disk, unless files
 * opened before the change read the kernel's pages of it (cached
 * readers): the kernel's size is theirs too, and would cut what they
 * read, so stat shows what etcd has until they close.
 */
bool node_writer_attr(struct node *n, struct stat *st);
/*
 * Has @n a writer whose copy differs from etcd's?  Then a new reader must
 * not read the kernel's pages of it.  fs->lock held.
 */
bool node_writer_changed(struct node *n);
/*
 * With fs->lock held, when @h stops showing its size (commit, close):
 * true if the kernel's attributes of the file are then wrong.
 */
bool handle_unshow(struct node *n, struct handle *h);
/*
 * For unlink and rename, with fs->lock held.  A writer closed unwritten
 * after a truncation (or a new file's creation) is committed at its
 * release, which the kernel sends later: node_closed_truncation tells if
 * @n has one.  An unlink drops every writer's commit (node_drop_writers):
 * their file is gone, as on a local disk.  A rename commits the
 * truncation with the move and tells the writers (node_writers_moved):
 * those based on @from_rev, the revision the key had, are based on @rev,
 * the moved key's, from now on.
 */
bool node_closed_truncation(struct node *n);
void node_drop_writers(struct fs *fs, struct node *n);
void node_writers_moved(struct fs *fs, struct node *n, int64_t from_rev,
			int64_t rev);
/*
 * A writer follows its file's renames between a key and a temp name: the
 * copy of a key's writer goes into the file now in memory, and a temp
 * file's writer takes the key's value as its copy.  @h->lock and fs->lock
 * held; 0 or a negative errno.
 */
int handle_follow(struct fs *fs, struct handle *h);
int fs_truncate_open(struct fs *fs, struct fuse_file_info *fi, off_t size);
int fs_truncate_path(struct fs *fs, struct node *n, off_t size, pid_t pid);
/*
 * Writes @data to @key with one compare-and-swap on @base (0: the key must
 * be absent), and puts it in the mirror (@n's node, or the tree's node of
 * the key if @n was replaced; with @own, a new inode when other files are
 * open on it).  *@rev: the new revision.  @begun: an inflight the caller
 * began for @key under the same lock as its decision to commit (ended
 * here), or NULL.  0 or a negative errno (ESTALE: changed meanwhile;
 * EINVAL: -o codec='s encode refused @data, see codec.c).
 */
int fs_commit_value(struct fs *fs, struct node *n, const char *key,
		    size_t key_len, int64_t base, const char *data,
		    size_t len, pid_t pid, bool own, int64_t *rev,
		    struct inflight *begun);

/* attr.c */
#define ATTR_SET_ATIME 1
#define ATTR_SET_MTIME 2
/*
 * Sets @n's times as utimensat does (@what: ATTR_SET_*), in memory until
 * the next revision; fs->lock held.  0 or -ENOMEM.
 */
int node_set_times(struct node *n, unsigned what, const struct timespec *atime,
		   const struct timespec *mtime);
/* What node_fill_attr shows of the times and modes set in memory. */
void node_kept_attr(struct node *n, struct stat *st);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi);

/* move.c */
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags);

/* echo.c */
int echo_start(struct fs *fs);
void echo_stop(struct fs *fs);
/*
 * Another client's change (@kv; a deletion of its key at @rev if @del):
 * applied to the mirror at once, and queued for the echo to replay.
 * fs->lock held; 0 or -ENOMEM (nothing done).
 */
int echo_change(struct fs *fs, bool del, const struct store_kv *kv,
		int64_t rev, struct inval_list *inv);
/*
 * A process closed the directory @dir (@req's RELEASEDIR): if it is not
 * the echo's and the echo made @dir lately, it follows the echo's new
 * directories (see struct echo_follow).  fs->lock held.
 */
void echo_dir_walked(struct fs *fs, fuse_req_t req, struct node *dir);
/* Was a follower seen lately (the echo waits for it)?  fs->lock held. */
bool echo_follower(struct fs *fs);
/* Other clients' changes in the mirror whose replay is not over. */
size_t echo_pending(struct fs *fs);
/* The change @req echoes, or NULL if it is not the echo's.  fs->lock held. */
struct echo_ev *echo_of(struct fs *fs, fuse_req_t req);
/*
 * The echo's requests while it replays @e, with fs->lock held, about the
 * name (@dir, @name).  echo_lookup: -ENOENT if the change made it and the
 * echo has not yet; 0 with *@np the node the change had there, in the
 * tree or removed since; 1 if the change has no such name.  echo_make:
 * the echo's mkdir or create of a name the change made: its node (the
 * mirror has it already), or NULL.  echo_remove: the echo's unlink or
 * rmdir of a name the change removed: true if it did.
 */
int echo_lookup(struct fs *fs, struct echo_ev *e, struct node *dir,
		const char *name, struct node **np);
struct node *echo_make(struct fs *fs, struct echo_ev *e, struct node *dir,
		       const char *name, enum node_type type);
bool echo_remove(struct fs *fs, struct echo_ev *e, struct node *dir,
		 const char *name, enum node_type type);
/*
 * Does the change the echo replays now have the name (@dir, @name)?
 * Then a lookup of it that is not the echo's is not to be cached: the
 * kernel's entry would hide the change's name from the echo.
 */
bool echo_names(struct fs *fs, struct node *dir, const char *name);
/* Is @n a node of the change the echo replays now?  fs->lock held. */
bool echo_holds(struct fs *fs, struct node *n);

/* gate.c: the table libfuse calls, around @ops */
const struct fuse_lowlevel_ops *fs_gate_ops(const struct fuse_lowlevel_ops *ops);
int fs_gate_new(struct fs *fs);
void fs_gate_free(struct fs *fs);
const char *fs_gate_op_name(unsigned op);
uint64_t fs_gate_op_count(struct fs *fs, unsigned op);

/* stats.c: user.etcd.stats; the watch's counters (live.c) */
ssize_t fs_stats_text(struct fs *fs, char **big);	/* fs->lock held */
void fs_stats_watch_event(struct fs *fs, const struct store_event *ev);
void fs_stats_relist(struct fs *fs);
/* A value pushed into the kernel's page cache (file.c). */
void fs_stats_stored(struct fs *fs);

/* connect.c: delay_connect's thread, which loads the keys when it can */
int fs_connect_start(struct fs *fs);
void fs_connect_stop(struct fs *fs);

/* fs.c: once the keys are loaded, the echo and the watch */
void fs_go_live(struct fs *fs);

/* statfs.c */
void fs_statfs(fuse_req_t req, fuse_ino_t ino);
/* Logs etcd's NOSPACE alarm, once until etcd has room again. */
void fs_space_full(void);
/* Stops the thread that asks etcd for its space; at destroy. */
void fs_space_free(struct fs *fs);

/* xattr.c */
void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags);
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
/* With fs->lock held: takes the pin that applies to @pid's write of @key. */
bool pin_take(struct fs *fs, const char *key, size_t key_len, pid_t pid,
	      int64_t *rev);
void pins_free(struct fs *fs);

/* ttl.c: user.etcd.ttl (fs_ttl_xattr: the name is it); each replies */
bool fs_ttl_xattr(const char *name);
void fs_ttl_get(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_ttl_set(fuse_req_t req, fuse_ino_t ino, const char *value,
		size_t size);
void fs_ttl_remove(fuse_req_t req, fuse_ino_t ino);

/*
 * dirmove.c: renames the directory @dir of keys to (@ndir, @newname),
 * replacing the empty directory @old (or NULL), in one transaction;
 * -EXDEV if it cannot.  fs->lock held, dropped meanwhile.  0 or -errno.
 */
int fs_dirmove(struct fs *fs, struct node *dir, struct node *ndir,
	       const char *newname, struct node *old);
/*
 * Waits while @dir is being renamed by fs_dirmove (it, or a directory
 * above it), so that a file made in it takes the new prefix.  -ENOENT if
 * @dir went meanwhile.  fs->lock held, dropped meanwhile.
 */
int dirmove_wait(struct fs *fs, struct node *dir);

/*
 * codec.c: -o codec=.  codec_key: does the codec apply to @key?
 * codec_view_open: @h's copy becomes the view of its revision (an open,
 * before its reply; no lock held).  codec_encode: what to store for @text
 * (*@out owned), or -EINVAL (logged).  codec_fill_attr: the view's size,
 * once known (fs->lock held).
 */
bool codec_key(struct fs *fs, const char *key, size_t key_len);
int codec_view_open(struct fs *fs, struct handle *h, fuse_ino_t ino);
int codec_encode(struct fs *fs, const char *key, size_t key_len,
		 const char *text, size_t len, char **out, size_t *out_len);
void codec_fill_attr(const struct node *n, struct stat *st);

/* history.c: user.etcd.history; history_note with fs->lock held */
bool fs_history_xattr(const char *name);
void fs_history_get(fuse_req_t req, fuse_ino_t ino, size_t size);
void history_note(struct fs *fs, const char *key, size_t key_len,
		  int64_t rev);
void history_free(struct fs *fs);

#endif /* ETCDFS_FS_I_H */
