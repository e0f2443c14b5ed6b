/*
 * statfs.c - what df says of the mount: etcd's space, and when it is full
 *
 * used is the size of the database file of the member the mount talks to
 * (store_status: Maintenance/Status on v3, /metrics on v2), size is the
 * quota (-o quota=, default etcd's 2 GiB) or the database's size if that
 * is larger, the inodes used are the names the mirror holds.  A thread of its own asks etcd, when a statfs finds
 * the answer older than SPACE_FRESH_MS, so that df never costs more than
 * one request every few seconds however often it is called; a statfs
 * waits for that answer (at most the request timeout) only while the
 * mount has none yet or the last one came back well, and else answers at
 * once from the last answer: df while etcd is down shows what etcd said
 * last, or fails with the errno of the failure (ENOTCONN) if it never
 * answered.
 *
 * It also tells errno_map.c when etcd has room again, so that the next
 * write refused for space is logged (fs_space_room).
 *
 * What it cannot do: know the cluster's quota (etcd 3.4 and 3.5 do not
 * say it), or the other members' sizes (each has its own file; they are
 * about the same).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "fs_i.h"
#include "ops.h"

/* An answer younger than this is not asked again. */
#define SPACE_FRESH_MS		2000
/* etcd's default --quota-backend-bytes */
#define SPACE_DEFAULT_QUOTA	(2ull << 30)
#define SPACE_BLOCK		4096

struct fs_space {
	pthread_mutex_t lock;		/* guards every field below */
	pthread_cond_t wake;		/* want or stop was set */
	pthread_cond_t done;		/* a request ended: gen moved */
	pthread_t thread;
	bool started;
	bool stop;
	bool want;			/* a statfs wants a new answer */
	bool busy;			/* the thread is asking etcd */
	bool known;			/* st holds an answer */
	struct store_status st;
	int err;			/* the last request's errno; 0: ok */
	int64_t at_ms;			/* when it ended; 0: never */
	uint64_t gen;			/* requests ended */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *space_thread(void *arg)
{
	struct fs *fs = arg;
	struct fs_space *sp = fs->space;
	struct store_error serr;
	struct store_status st;
	int rc;

	pthread_mutex_lock(&sp->lock);
	for (;;) {
		while (!sp->want && !sp->stop)
			pthread_cond_wait(&sp->wake, &sp->lock);
		if (sp->stop)
			break;
		sp->want = false;
		sp->busy = true;
		pthread_mutex_unlock(&sp->lock);
		memset(&serr, 0, sizeof(serr));
		rc = store_status(fs->store, &st, &serr);
		/* room again: the next refusal is news, and is logged */
		if (rc == 0 && !st.nospace)
			fs_space_room();
		pthread_mutex_lock(&sp->lock);
		sp->busy = false;
		sp->at_ms = now_ms();
		sp->gen++;
		if (rc == 0) {
			sp->st = st;
			sp->known = true;
			sp->err = 0;
		} else {
			sp->err = rc == STORE_ENOSPC ? -EIO : fs_errno(rc);
		}
		pthread_cond_broadcast(&sp->done);
	}
	pthread_mutex_unlock(&sp->lock);
	return NULL;
}

/* fs->space, its thread started; NULL when out of memory or threads. */
static struct fs_space *space_get(struct fs *fs)
{
	struct fs_space *sp, *fresh;
	sigset_t all, old;

	pthread_mutex_lock(&fs->lock);
	sp = fs->space;
	if (!sp && !fs->mirror.stopping) {
		fresh = calloc(1, sizeof(*fresh));
		if (fresh) {
			pthread_mutex_init(&fresh->lock, NULL);
			pthread_cond_init(&fresh->wake, NULL);
			pthread_cond_init(&fresh->done, NULL);
			fs->space = sp = fresh;
			/* signals stay with FUSE's threads */
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, &old);
			sp->started = pthread_create(&sp->thread, NULL,
						     space_thread, fs) == 0;
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return sp && sp->started ? sp : NULL;
}

void fs_space_free(struct fs *fs)
{
	struct fs_space *sp;

	pthread_mutex_lock(&fs->lock);
	sp = fs->space;
	fs->space = NULL;
	pthread_mutex_unlock(&fs->lock);
	if (!sp)
		return;
	if (sp->started) {
		pthread_mutex_lock(&sp->lock);
		sp->stop = true;
		pthread_cond_broadcast(&sp->wake);
		pthread_mutex_unlock(&sp->lock);
		/* its request is bounded by the store's timeouts */
		pthread_join(sp->thread, NULL);
	}
	pthread_cond_destroy(&sp->done);
	pthread_cond_destroy(&sp->wake);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

/*
 * The latest answer into @st: asks for a new one if the last is old, and
 * waits for it (until @wait_ms) unless the last request failed and an
 * answer is known.  0, or the errno of the failure when none is known.
 */
static int space_read(struct fs_space *sp, long wait_ms,
		      struct store_status *st)
{
	int64_t now = now_ms();
	struct timespec dl;
	uint64_t gen;
	int err;

	pthread_mutex_lock(&sp->lock);
	if (!sp->busy && !sp->want &&
	    (!sp->at_ms || now - sp->at_ms >= SPACE_FRESH_MS)) {
		sp->want = true;
		pthread_cond_signal(&sp->wake);
	}
	if ((sp->want || sp->busy) && (!sp->known || sp->err == 0)) {
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += wait_ms / 1000;
		dl.tv_nsec += (wait_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		gen = sp->gen;
		while (sp->gen == gen && !sp->stop)
			if (pthread_cond_timedwait(&sp->done, &sp->lock,
						   &dl) == ETIMEDOUT)
				break;
	}
	err = sp->known ? 0 : sp->err ? sp->err : -ETIMEDOUT;
	if (sp->known)
		*st = sp->st;
	pthread_mutex_unlock(&sp->lock);
	return err;
}

void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fuse_req_userdata(req);
	uint64_t quota = fs->cfg.quota ? fs->cfg.quota : SPACE_DEFAULT_QUOTA;
	long wait_ms = fs->cfg.request_timeout_ms > 0 ?
		       fs->cfg.request_timeout_ms : 5000;
	struct statvfs sv = { 0 };
	struct store_status st = { 0 };
	struct fs_space *sp = space_get(fs);
	uint64_t used;
	size_t names;
	int err;

	if (!sp) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = space_read(sp, wait_ms, &st);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	names = fs->tree.nnodes;
	pthread_mutex_unlock(&fs->lock);
	used = ((uint64_t)st.db_size + SPACE_BLOCK - 1) / SPACE_BLOCK;
	sv.f_bsize = SPACE_BLOCK;
	sv.f_frsize = SPACE_BLOCK;
	/*
	 * df's used is blocks - bfree: a database past its quota (etcd
	 * takes the write that crosses it) shows as full, its size its own
	 */
	sv.f_blocks = quota / SPACE_BLOCK > used ? quota / SPACE_BLOCK : used;
	sv.f_bfree = sv.f_blocks - used;
	sv.f_bavail = sv.f_bfree;
	/* no limit on keys but the space: df -i's used are the names held */
	sv.f_ffree = sv.f_favail = sv.f_bfree;
	sv.f_files = names + sv.f_ffree;
	sv.f_namemax = NAME_MAX;
	fuse_reply_statfs(req, &sv);
}
