/*
 * echo.c - other clients' changes as inotify events: the loopback echo
 *
 * No FUSE notification makes the kernel emit inotify events for a change
 * the daemon learned from elsewhere.  What does is a real syscall on the
 * mount: so a thread of the daemon (never a FUSE worker) replays each
 * change the watch brings on its own mountpoint -- mkdir for a new
 * directory, creat and write for a new key, open(O_TRUNC) and write for a
 * changed one, unlink for a deleted one and rmdir for a directory that
 * went with it -- and the handlers recognise their own echo by the
 * request's pid, which is this thread's id.  They apply the change to the
 * mirror right there, inside the echo's own request, and never touch etcd.
 * Watchers see CREATE, MODIFY, CLOSE_WRITE, DELETE and CREATE|ISDIR as for
 * a local change, and `inotifywait -r` follows new directories.
 *
 * The mount's own writes are in the mirror before their watch event comes
 * back, at the same revision, so they are never echoed twice.
 *
 * What it cannot do: a change that reshapes the tree rather than adding or
 * removing a name (a file that becomes a directory because keys appeared
 * below it, "%value" moving back) is applied directly, with cache
 * invalidations but no inotify event; so is a change whose path is longer
 * than PATH_MAX.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs_i.h"
#include "names.h"

enum echo_action {
	ECHO_SKIP,
	ECHO_DIRECT,		/* apply without a syscall */
	ECHO_CREATE,
	ECHO_MODIFY,
	ECHO_DELETE,
};

static void ev_free(struct echo_ev *e)
{
	store_kv_release(&e->kv);
	free(e);
}

int echo_queue(struct fs *fs, bool del, const struct store_kv *kv,
	       int64_t rev)
{
	struct echo_ev *e = calloc(1, sizeof(*e));

	if (!e || store_kv_copy(&e->kv, kv)) {
		free(e);
		return -ENOMEM;
	}
	e->del = del;
	e->rev = rev;
	pthread_mutex_lock(&fs->echo_lock);
	if (fs->echo_tail)
		fs->echo_tail->next = e;
	else
		fs->echo_head = e;
	fs->echo_tail = e;
	fs->echo_len++;
	pthread_cond_signal(&fs->echo_cond);
	pthread_mutex_unlock(&fs->echo_lock);
	return 0;
}

/* Applies @e to the mirror without a syscall.  fs->lock held. */
static void apply_direct(struct fs *fs, struct echo_ev *e,
			 struct inval_list *inv)
{
	if (e->del)
		tree_delete(fs, e->kv.key, e->kv.key_len, e->rev, inv);
	else
		tree_put(fs, &e->kv, inv);
	e->applied = true;
}

/* Appends "/" and @name (@len bytes) to the path in @buf. */
static bool path_add(char *buf, size_t *len, const char *name, size_t nlen)
{
	if (*len + 1 + nlen + 1 > PATH_MAX)
		return false;
	buf[(*len)++] = '/';
	memcpy(buf + *len, name, nlen);
	*len += nlen;
	buf[*len] = '\0';
	return true;
}

/*
 * Decides how to echo @e and fills the absolute paths it needs: @path the
 * file, @dirs the directories to make first (CREATE), as offsets into
 * @path where each ends, shallowest first.  fs->lock held.
 */
static enum echo_action plan(struct fs *fs, struct echo_ev *e, char *path,
			     size_t *ndirs, size_t *dirs, size_t maxdirs,
			     struct inval_list *inv)
{
	size_t plen, len = strlen(fs->cfg.mountpoint), i = 0;
	char *p = names_key_to_path(e->kv.key, e->kv.key_len, &plen);
	struct node *dir = fs->root, *n;
	const char *c, *end, *slash;

	*ndirs = 0;
	if (!p)
		return ECHO_DIRECT;
	if (len >= PATH_MAX)
		goto direct;
	memcpy(path, fs->cfg.mountpoint, len + 1);
	n = tree_find_key(fs, e->kv.key, e->kv.key_len);
	if (n && (n->local || n->pending))
		goto direct;
	if (e->del) {
		if (!n || (e->rev && n->mod_revision >= e->rev))
			goto skip;
		/* "%value", or one about to become the lone "%value" */
		if (strcmp(n->name, NAMES_VALUE) == 0 ||
		    (n->parent->nchildren == 2 &&
		     tree_child(fs, n->parent, NAMES_VALUE,
				strlen(NAMES_VALUE))))
			goto direct;
	} else if (n && e->kv.mod_revision <= n->mod_revision) {
		goto skip;
	}
	c = p;
	end = p + plen;
	while ((slash = memchr(c, '/', (size_t)(end - c)))) {
		struct node *d = dir ? tree_child(fs, dir, c,
						  (size_t)(slash - c)) : NULL;

		if (d && d->type == NODE_FILE)
			goto direct;	/* a file becomes a directory */
		if (!path_add(path, &len, c, (size_t)(slash - c)))
			goto direct;
		if (!d && !e->del) {
			if (i == maxdirs)
				goto direct;
			dirs[i++] = len;
		}
		dir = d;
		c = slash + 1;
	}
	if (!path_add(path, &len, c, (size_t)(end - c)))
		goto direct;
	if (dir && !n) {
		struct node *d = tree_child(fs, dir, c, (size_t)(end - c));

		if (d && d->type == NODE_DIR &&
		    !path_add(path, &len, NAMES_VALUE, strlen(NAMES_VALUE)))
			goto direct;
		if (d && d->type == NODE_DIR && !d->nchildren)
			goto direct;
	}
	free(p);
	*ndirs = i;
	if (e->del)
		return ECHO_DELETE;
	/* open files keep what they read: the change goes to a new inode */
	if (n && n->nopen && !tree_replace(fs, n, inv))
		return ECHO_DIRECT;
	return n ? ECHO_MODIFY : ECHO_CREATE;
direct:
	free(p);
	return ECHO_DIRECT;
skip:
	free(p);
	return ECHO_SKIP;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The syscalls of one echo; no lock held. */
static void replay(struct fs *fs, struct echo_ev *e, enum echo_action a,
		   char *path, const size_t *dirs, size_t ndirs)
{
	size_t i;
	int fd;

	switch (a) {
	case ECHO_CREATE:
		for (i = 0; i < ndirs; i++) {
			char save = path[dirs[i]];

			path[dirs[i]] = '\0';
			if (mkdir(path, 0777) && errno != EEXIST)
				fuse_log(FUSE_LOG_DEBUG, "etcdfs: echo: "
					 "mkdir: %s\n", strerror(errno));
			path[dirs[i]] = save;
			/* time for `inotifywait -r` to watch the new one */
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		}
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		goto write;
	case ECHO_MODIFY:
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
write:
		if (fd < 0)
			break;
		if (e->kv.value_len)
			write_all(fd, e->kv.value, e->kv.value_len);
		else if (a == ECHO_MODIFY && ftruncate(fd, 0))
			fuse_log(FUSE_LOG_DEBUG, "etcdfs: echo: ftruncate: "
				 "%s\n", strerror(errno));
		close(fd);
		break;
	case ECHO_DELETE:
		if (unlink(path))
			break;
		/* the directories that held only this key go with it */
		for (;;) {
			char *slash = strrchr(path, '/');

			if (!slash || (size_t)(slash - path) <=
			    strlen(fs->cfg.mountpoint))
				break;
			*slash = '\0';
			if (rmdir(path))
				break;
		}
		break;
	default:
		break;
	}
}

static void echo_one(struct fs *fs, struct echo_ev *e)
{
	struct inval_list inv = { 0 };
	size_t dirs[64], ndirs = 0;
	char path[PATH_MAX];
	enum echo_action a;
	struct node *n;

	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&fs->lock);
	/* the mount's own write of this key: wait until it is in the mirror */
	while (inflight_has(fs, e->kv.key, e->kv.key_len) &&
	       pthread_cond_timedwait(&fs->inflight_cond, &fs->lock,
				      &until) != ETIMEDOUT)
		;
	/* its watch event came before its reply: the mirror has it now */
	if (own_change_take(fs, e->kv.key, e->kv.key_len,
			    e->del ? e->rev : e->kv.mod_revision)) {
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	a = plan(fs, e, path, &ndirs, dirs, 64, &inv);
	if (a == ECHO_DIRECT)
		apply_direct(fs, e, &inv);
	if (a == ECHO_SKIP || a == ECHO_DIRECT) {
		pthread_mutex_unlock(&fs->lock);
		fs_send_invals(fs, &inv);
		return;
	}
	fs->echo_cur = e;
	pthread_mutex_unlock(&fs->lock);
	/* a replaced inode: the kernel must look the name up again */
	fs_send_invals(fs, &inv);

	replay(fs, e, a, path, dirs, ndirs);

	pthread_mutex_lock(&fs->lock);
	fs->echo_cur = NULL;
	/* whatever the syscalls did, the mirror must follow etcd */
	if (!e->applied)
		apply_direct(fs, e, &inv);
	if (!e->del) {
		n = tree_find_key(fs, e->kv.key, e->kv.key_len);
		/* the echo's write went through the page cache: drop it */
		if (n && n->nlookup)
			inval_add(&inv, false, node_id(fs, n), NULL, 0);
	}
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);
}

static void *echo_main(void *arg)
{
	struct fs *fs = arg;

	pthread_mutex_lock(&fs->echo_lock);
	fs->echo_tid = (pid_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&fs->echo_cond);
	while (!fs->echo_stop) {
		struct echo_ev *e = fs->echo_head;

		if (!e) {
			pthread_cond_wait(&fs->echo_cond, &fs->echo_lock);
			continue;
		}
		fs->echo_head = e->next;
		if (!fs->echo_head)
			fs->echo_tail = NULL;
		fs->echo_len--;
		pthread_mutex_unlock(&fs->echo_lock);
		echo_one(fs, e);
		ev_free(e);
		pthread_mutex_lock(&fs->echo_lock);
		fs->echo_done++;
		pthread_cond_broadcast(&fs->echo_cond);
	}
	pthread_mutex_unlock(&fs->echo_lock);
	return NULL;
}

int echo_start(struct fs *fs)
{
	sigset_t all, old;
	int ret;

	/* FUSE's signal handlers must keep running on the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&fs->echo_thread, NULL, echo_main, fs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	pthread_mutex_lock(&fs->echo_lock);
	while (!fs->echo_tid)
		pthread_cond_wait(&fs->echo_cond, &fs->echo_lock);
	fs->echo_running = true;
	pthread_mutex_unlock(&fs->echo_lock);
	return 0;
}

void echo_stop(struct fs *fs)
{
	struct echo_ev *e, *next;

	if (!fs->echo_running)
		return;
	pthread_mutex_lock(&fs->echo_lock);
	fs->echo_stop = true;
	pthread_cond_broadcast(&fs->echo_cond);
	pthread_mutex_unlock(&fs->echo_lock);
	pthread_join(fs->echo_thread, NULL);
	fs->echo_running = false;
	for (e = fs->echo_head; e; e = next) {
		next = e->next;
		ev_free(e);
	}
	fs->echo_head = fs->echo_tail = NULL;
	fs->echo_len = 0;
}

struct echo_ev *echo_of(struct fs *fs, fuse_req_t req)
{
	if (!fs->echo_running || fuse_req_ctx(req)->pid != fs->echo_tid)
		return NULL;
	return fs->echo_cur;
}
