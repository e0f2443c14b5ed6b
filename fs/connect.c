/*
 * connect.c - delay_connect: the mount is up before etcd answers
 *
 * With delay_connect the daemon mounts without asking etcd; the gate
 * (gate.c) refuses every operation that needs the mirror with ENOTCONN,
 * and a thread of this file asks etcd for its revision, then lists the
 * keys, again and again with a back-off from CONNECT_MIN_MS to
 * CONNECT_MAX_MS, until both work.  Then it opens the gate, starts the
 * echo and the watch as the filesystem's init does, and is done.  Each
 * kind of failure (unreachable, timeout, authentication, ...) is logged
 * once, when it first happens or comes back after another; every attempt
 * is a STATUS= line to systemd (fs_config's status).
 *
 * What it cannot do: interrupt a request in flight: an unmount while it
 * waits for etcd waits for that request (bounded by the timeouts).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "fs_i.h"
#include "gate.h"

#define CONNECT_MIN_MS	200
#define CONNECT_MAX_MS	5000

void fs_go_live(struct fs *fs)
{
	int64_t from;

	if (fs->cfg.nowatch)
		return;
	if (kernel_has_session(&fs->kernel) && fs->cfg.mountpoint &&
	    echo_start(fs))
		fuse_log(FUSE_LOG_WARNING, "etcdfs: no echo thread: remote "
			 "changes will not show as inotify events\n");
	pthread_mutex_lock(&fs->lock);
	from = fs->tree.revision + 1;
	pthread_mutex_unlock(&fs->lock);
	fs_start_watch(fs, from);
}

__attribute__((format(printf, 2, 3)))
static void status(struct fs *fs, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!fs->cfg.status)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fs->cfg.status(msg);
}

/* Waits @ms unless stopped; true if stopped. */
static bool pause_or_stop(struct fs_gate *g, long ms)
{
	struct timespec dl;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&g->lock);
	while (!g->stop &&
	       pthread_cond_timedwait(&g->cond, &g->lock, &dl) != ETIMEDOUT)
		;
	stop = g->stop;
	pthread_mutex_unlock(&g->lock);
	return stop;
}

/* One attempt: the revision (does etcd answer?), then the listing. */
static int try_load(struct fs *fs, struct store_error *err)
{
	int64_t rev;
	int rc;

	memset(err, 0, sizeof(*err));
	rc = store_revision(fs->store, &rev, err);
	if (rc == 0) {
		memset(err, 0, sizeof(*err));
		rc = fs_load(fs, err);
	}
	return rc;
}

static void *connect_thread(void *arg)
{
	struct fs *fs = arg;
	struct fs_gate *g = fs->gate;
	const char *ep = store_endpoint(fs->store);
	struct store_error err;
	long wait = CONNECT_MIN_MS;
	unsigned attempt = 0;
	int rc, last = 0;

	for (;;) {
		rc = try_load(fs, &err);
		if (rc == 0)
			break;
		attempt++;
		if (rc != last) {
			fuse_log(FUSE_LOG_WARNING, "etcdfs: waiting for etcd "
				 "(delay_connect): %s; trying again every %d "
				 "s at most\n", err.msg[0] ? err.msg :
				 store_strerror(rc), CONNECT_MAX_MS / 1000);
			last = rc;
		}
		status(fs, "waiting for etcd at %s: %s (attempt %u)", ep,
		       err.msg[0] ? err.msg : store_strerror(rc), attempt);
		if (pause_or_stop(g, wait))
			return NULL;
		wait = wait * 2 > CONNECT_MAX_MS ? CONNECT_MAX_MS : wait * 2;
	}
	pthread_mutex_lock(&g->lock);
	if (g->stop) {
		pthread_mutex_unlock(&g->lock);
		return NULL;
	}
	atomic_store_explicit(&g->open, true, memory_order_release);
	pthread_mutex_unlock(&g->lock);
	if (attempt)
		fuse_log(FUSE_LOG_INFO, "etcdfs: etcd at '%s' answers: the "
			 "keys are loaded\n", store_endpoint(fs->store));
	status(fs, "serving %s (loaded after %u failed attempts)",
	       store_endpoint(fs->store), attempt);
	/*
	 * The root's attributes were answered before the load (its getattr
	 * is the one operation let through) and the kernel may cache them
	 * for the attribute timeout: now they are the keys'.  No lock held.
	 */
	fs_notify_inval_inode(fs, FUSE_ROOT_ID, 0, 0);
	fs_go_live(fs);
	return NULL;
}

int fs_connect_start(struct fs *fs)
{
	struct fs_gate *g = fs->gate;
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&g->lock);
	rc = pthread_create(&g->thread, NULL, connect_thread, fs);
	g->started = rc == 0;
	pthread_mutex_unlock(&g->lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot start the thread that "
			 "waits for etcd: %s\n", strerror(rc));
	return -rc;
}

void fs_connect_stop(struct fs *fs)
{
	struct fs_gate *g = fs->gate;
	bool started;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	started = g->started;
	g->started = false;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (started)
		pthread_join(g->thread, NULL);
}
