/*
 * echo.c - other clients' changes as inotify events: the loopback echo
 *
 * No FUSE notification makes the kernel emit inotify events for a change
 * the daemon learned from elsewhere.  What does is a real syscall on the
 * mount, so each change the watch brings is replayed on the mountpoint --
 * mkdir for a new directory, creat and write for a new key, open
 * and write for a changed one, unlink for a deleted one and rmdir for a
 * directory that went with it -- and the handlers recognise the echo by
 * the request's pid.  Watchers see CREATE, MODIFY, CLOSE_WRITE, DELETE
 * and CREATE|ISDIR as for a local change, and `inotifywait -r` follows
 * new directories.
 *
 * The change is in the mirror before the echo replays it: the watch's
 * thread applies it at once (echo_change), so lookups, opens and listings
 * serve it whatever the echo's pace, and plans the echo then, from the
 * mirror as it was just before: the path, the directories the change
 * makes, and the node of each component (referenced), which the echo's
 * own requests are answered from while it replays that change.  The
 * echo's lookup of a name the change made that the echo has not made yet
 * is ENOENT, so the kernel sends its mkdir or create, which is answered
 * with the node the mirror has (echo_make); the echo's lookup of a name
 * the change (or a later one) removed finds the removed node, so its
 * unlink and rmdir reach the daemon (echo_remove).  The kernel may hold
 * a positive dentry of a new name that another process looked up: an
 * exclusive create (mkdir, O_EXCL) has the kernel look the name up again
 * (fuse revalidates on LOOKUP_EXCL), and the entries of the names to make
 * are invalidated just before the echo replays them besides.
 *
 * A change of a key the mount is writing right now waits, in the watch's
 * thread, until that write is in the mirror (live.c), so that the mount's
 * own writes are never echoed; the changes behind it wait with it, so the
 * mirror applies changes in the watch's order and never waits for the
 * echo.
 *
 * The syscalls are made by the echo's process (echo_proc.c), never by the
 * daemon: a thread of the daemon that waits on the daemon's own mount
 * hangs it when the daemon is killed (nobody is left to answer, the
 * process cannot finish exiting, its /dev/fuse stays open, and every
 * access to the mount hangs instead of failing with ENOTCONN).  The
 * process is the daemon's own binary run again (posix_spawn of
 * /proc/self/exe, with its socket as its only descriptor but stdio: no
 * /dev/fuse, whatever mounted it, and none of the daemon's memory), from
 * this module's thread, once the mount is up (in the filesystem's init,
 * so after daemonizing) and again whenever it dies or hangs.  It dies
 * with that thread (PR_SET_PDEATHSIG), and on EOF.
 *
 * The thread hands the process one change at a time and waits for its
 * answer, with fs->echo.cur set to the change, so the handlers know which
 * change the process's requests are about.  If no answer comes within
 * ECHO_TIMEOUT_MS, the process is killed, and echo.cur stays set until it
 * is gone (whatever request of it is still being served must be served
 * as the echo's); the change has no events and the next one gets a new
 * process.  The watch never waits on any of this: it queues changes, and
 * applies them without an echo once ECHO_QUEUE_MAX wait (echo_observe,
 * the observer the mirror is given).
 *
 * The process replays relative to the mount's root, and only while the
 * mountpoint is the mount the daemon made (its device and mount id, from
 * /proc/self/mountinfo in the filesystem's init, when the mount is new):
 * after `fusermount3 -u -z`, the mount
 * still serves the files open in it, but nothing lands in the directory
 * underneath; the changes are applied without an echo.
 *
 * The mount's own writes are in the mirror before their watch event comes
 * back, at the same revision, so they are never echoed twice.
 *
 * What it cannot do: a change that reshapes the tree rather than adding or
 * removing a name (a file that becomes a directory because keys appeared
 * below it, "%value" moving back) is applied directly, with cache
 * invalidations but no inotify event; so is a change whose path is longer
 * than PATH_MAX, and every change while there is no echo process (it
 * could not be started, or it is being replaced: a new one is tried after
 * ECHO_RETRY_MS).  The echo's requests are told apart by pid alone, so
 * its view of the names of the change it replays is its own: another
 * process that looks up a name at that moment sees the mirror.  It needs
 * /proc/self/exe to be etcdfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "echo.h"
#include "echo_i.h"
#include "fs_i.h"
#include "names.h"
#include "thread.h"

/* Past this many changes waiting, the mirror applies them without an echo. */
#define ECHO_QUEUE_MAX 100000
/* How long one change's syscalls may take before the process is killed. */
#define ECHO_TIMEOUT_MS 5000
/* How soon a process that could not be started is tried again. */
#define ECHO_RETRY_MS 5000

/* Frees @e, its plan released already. */
static void ev_free(struct echo_ev *e)
{
	store_kv_release(&e->kv);
	free(e->path);
	free(e);
}

/* Appends @e to the queue; fs->lock held. */
static void ev_queue(struct fs *fs, struct echo_ev *e)
{
	pthread_mutex_lock(&fs->echo.lock);
	if (fs->echo.tail)
		fs->echo.tail->next = e;
	else
		fs->echo.head = e;
	fs->echo.tail = e;
	fs->echo.len++;
	pthread_cond_signal(&fs->echo.cond);
	pthread_mutex_unlock(&fs->echo.lock);
}

/*
 * Another client's change (@kv; a deletion of its key at @rev if @del):
 * applied to the mirror at once, and queued for the echo to replay.
 * fs->lock held; 0 or -ENOMEM (nothing done).
 */
static int echo_change(struct fs *fs, bool del, const struct store_kv *kv,
		       int64_t rev, struct inval_list *inv)
{
	struct echo_ev *e = calloc(1, sizeof(*e));

	if (!e || store_kv_copy(&e->kv, kv)) {
		free(e);
		return -ENOMEM;
	}
	e->del = del;
	e->rev = rev;
	if (echo_apply(fs, e, inv))
		ev_queue(fs, e);
	else
		ev_free(e);
	return 0;
}

/*
 * The mirror's observer (fs->mirror.observer, a mirror_change_fn): takes the
 * change while the echo runs and its queue is not too long; -EAGAIN, and
 * the mirror applies the change itself, if not.
 */
static int echo_observe(struct fs *fs, bool del, const struct store_kv *kv,
			int64_t rev, struct inval_list *inv)
{
	if (!fs->echo.running || fs->echo.len >= ECHO_QUEUE_MAX)
		return -EAGAIN;
	return echo_change(fs, del, kv, rev, inv);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waits until the process's socket is ready for @events, by @deadline:
 * 0, -ETIMEDOUT, or -ECANCELED once echo_stop() was called.
 */
static int child_wait(struct fs *fs, short events, int64_t deadline)
{
	struct pollfd p[2] = {
		{ .fd = fs->echo.child.sock, .events = events },
		{ .fd = fs->echo.child.wake, .events = POLLIN },
	};

	for (;;) {
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(p, 2, (int)(left < INT_MAX ? left : INT_MAX));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && p[1].revents)
			return -ECANCELED;
		if (r > 0 && p[0].revents)
			return 0;
	}
}

/* Sends @len bytes to the process: 0, -EPIPE if it is gone, or as above. */
static int child_send(struct fs *fs, const void *buf, size_t len,
		      int64_t deadline)
{
	const char *p = buf;
	int err;

	while (len) {
		ssize_t w = send(fs->echo.child.sock, p, len,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w >= 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -EPIPE;
		err = child_wait(fs, POLLOUT, deadline);
		if (err)
			return err;
	}
	return 0;
}

static int child_recv(struct fs *fs, void *buf, size_t len, int64_t deadline)
{
	char *p = buf;
	int err;

	while (len) {
		ssize_t r = recv(fs->echo.child.sock, p, len, MSG_DONTWAIT);

		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r == 0)
			return -EPIPE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -EPIPE;
		err = child_wait(fs, POLLIN, deadline);
		if (err)
			return err;
	}
	return 0;
}

/* True if @fd is a FUSE device (/dev/fuse, 10:229). */
static bool is_fuse_dev(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == makedev(10, 229);
}

/*
 * Starts the echo's process: this binary again, from this thread (its
 * death signal is tied to the thread that made it), with the socket as
 * ECHO_FD and every other descriptor of the daemon closed.
 */
static int child_spawn(struct fs *fs)
{
	char ppid[24];
	char *argv[] = {
		(char *)"etcdfs", (char *)FS_ECHO_ARG,
		(char *)fs->cfg.mountpoint, ppid, NULL
	};
	char *envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int sv[2], err, fd;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	snprintf(ppid, sizeof(ppid), "%ld", (long)getpid());
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* no terminal's signals: it ends with the daemon, not with a ^C */
	err = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
				       POSIX_SPAWN_SETSIGDEF |
				       POSIX_SPAWN_SETSID);
	if (!err)
		err = posix_spawnattr_setsigmask(&at, &none);
	if (!err)
		err = posix_spawnattr_setsigdefault(&at, &all);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, sv[1], ECHO_FD);
	if (!err)
		err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
						       O_RDONLY, 0);
	/*
	 * stdout and stderr stay (a crash report must be seen), but never
	 * as /dev/fuse: libfuse keeps 0-2 open so that it is none of them,
	 * and this makes sure
	 */
	for (fd = 1; fd <= 2 && !err; fd++)
		if (is_fuse_dev(fd))
			err = posix_spawn_file_actions_addopen(&fa, fd,
							       "/dev/null",
							       O_WRONLY, 0);
	if (!err)
		err = posix_spawn_file_actions_addclosefrom_np(&fa,
							       ECHO_FD + 1);
	if (!err)
		err = posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv,
				  envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	if (err) {
		close(sv[0]);
		return -err;
	}
	fs->echo.child.sock = sv[0];
	pthread_mutex_lock(&fs->lock);
	fs->echo.pid = pid;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/*
 * Ends the process (killed first if @kill_it) and waits until it is gone:
 * for ever if @patient, since a request of it that a worker is serving
 * must be served as the echo's (echo.cur is still set); else for 2 s at
 * most, then it is left to die.
 */
static void child_end(struct fs *fs, bool kill_it, bool patient)
{
	pid_t pid = fs->echo.pid;	/* only this thread writes it */
	bool exited = false;
	int i;

	if (pid <= 0)
		return;
	if (kill_it)
		kill(pid, SIGKILL);
	close(fs->echo.child.sock);	/* EOF: it exits */
	fs->echo.child.sock = -1;
	for (i = 0; patient || i < 200; i++) {
		siginfo_t si = { 0 };
		int r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT |
			       (patient ? 0 : WNOHANG));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || si.si_pid == pid) {
			exited = r == 0;
			break;
		}
		if (i == 100)
			kill(pid, SIGKILL);
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	/* not the echo's any more before its pid can be another's */
	pthread_mutex_lock(&fs->lock);
	fs->echo.pid = 0;
	pthread_mutex_unlock(&fs->lock);
	if (exited)
		waitpid(pid, NULL, 0);
}

/*
 * One message and its answer.  On a timeout the process is killed; when
 * it is gone (or stopped) it is reaped; either way the next change
 * starts a new one.
 */
static int child_call(struct fs *fs, const struct echo_msg *m,
		      const char *path, const char *value,
		      struct echo_answer *a, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int err;

	err = child_send(fs, m, sizeof(*m), deadline);
	if (!err)
		err = child_send(fs, path, m->path_len, deadline);
	if (!err)
		err = child_send(fs, value, m->value_len, deadline);
	if (!err)
		err = child_recv(fs, a, sizeof(*a), deadline);
	switch (err) {
	case 0:
		return 0;
	case -ECANCELED:
		child_end(fs, true, false);
		break;
	case -ETIMEDOUT:
		fuse_log(FUSE_LOG_WARNING, "etcdfs: echo: no answer within "
			 "%d ms: starting another echo process\n", timeout_ms);
		child_end(fs, true, true);
		break;
	default:
		fuse_log(FUSE_LOG_WARNING, "etcdfs: echo: the echo process "
			 "exited: starting another\n");
		child_end(fs, false, true);
		break;
	}
	fs->echo.child.retry_at = now_ms();
	return err;
}

/* Undoes mountinfo's octal escapes ("\040" for a space) in place. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/*
 * Reads one line of /proc/self/mountinfo ("ID PARENT MAJ:MIN ROOT
 * MOUNTPOINT OPTS [TAGS...] - FSTYPE ..."): true if it is a FUSE mount
 * at @mountpoint, with its id and device.
 */
static bool mountinfo_line(char *line, const char *mountpoint,
			   uint64_t *id, uint64_t *dev)
{
	char *f[5], *save = NULL, *end, *sep = strstr(line, " - ");
	unsigned long maj, min;
	int i;

	if (!sep)
		return false;
	*sep = '\0';
	for (i = 0; i < 5; i++) {
		f[i] = strtok_r(i ? NULL : line, " ", &save);
		if (!f[i])
			return false;
	}
	unescape(f[4]);
	if (strcmp(f[4], mountpoint) || strncmp(sep + 3, "fuse", 4))
		return false;
	errno = 0;
	*id = strtoull(f[0], &end, 10);
	if (errno || *end)
		return false;
	maj = strtoul(f[2], &end, 10);
	if (errno || *end != ':')
		return false;
	min = strtoul(end + 1, &end, 10);
	if (errno || *end)
		return false;
	*dev = makedev(maj, min);
	return true;
}

/*
 * The mount's identity, while it is new (in the filesystem's init):
 * the last FUSE mount at the mountpoint in /proc/self/mountinfo, the one
 * on top.  Read from /proc, not from the mount, which the daemon must
 * never touch.
 */
static int find_mount(struct fs *fs)
{
	struct echo_child *c = &fs->echo.child;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	uint64_t id, dev;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (mountinfo_line(line, fs->cfg.mountpoint, &id, &dev)) {
			c->mnt_id = id;
			c->dev = dev;
			c->root_known = true;
		}
	}
	free(line);
	fclose(f);
	if (!c->root_known)
		return -ENOENT;
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: echo: '%s' is device %u:%u, mount "
		 "%llu\n", fs->cfg.mountpoint, major(c->dev), minor(c->dev),
		 (unsigned long long)c->mnt_id);
	return 0;
}

/* True if there is an echo process; starts one if there is none. */
static bool child_ready(struct fs *fs)
{
	struct echo_child *c = &fs->echo.child;
	int err;

	if (fs->echo.pid > 0)
		return true;
	if (now_ms() < c->retry_at)
		return false;
	err = child_spawn(fs);
	if (!err)
		return true;
	c->retry_at = now_ms() + ECHO_RETRY_MS;
	fuse_log(c->failures++ ? FUSE_LOG_DEBUG : FUSE_LOG_WARNING,
		 "etcdfs: echo: cannot start the echo process for '%s': %s: "
		 "remote changes do not show as inotify events\n",
		 fs->cfg.mountpoint, strerror(-err));
	return false;
}

/*
 * One syscall (@op) of @e's replay on @path, by the process: 0, or -1 if
 * it could not be done (no process, or not this mount any more: the
 * rest of the replay is not tried).  No lock held.
 */
static int replay_op(struct fs *fs, struct echo_ev *e, enum echo_op op,
		     const char *path, size_t path_len)
{
	struct echo_child *c = &fs->echo.child;
	struct echo_msg m = {
		.op = op,
		.path_len = (uint32_t)path_len,
		.value_len = op == ECHO_OP_CREATE || op == ECHO_OP_MODIFY ?
			     e->kv.value_len : 0,
		.dev = c->dev,
		.mnt_id = c->mnt_id,
	};
	struct echo_answer ans;
	int ret;

	/* no invalidation of the watch thread's meanwhile (fs_i.h) */
	pthread_mutex_lock(&fs->replay_lock);
	ret = child_call(fs, &m, path, m.value_len ? e->kv.value : NULL, &ans,
			 ECHO_TIMEOUT_MS);
	pthread_mutex_unlock(&fs->replay_lock);
	if (ret)
		return -1;
	if (ans.flags & ECHO_F_GONE) {
		if (!c->gone)
			fuse_log(FUSE_LOG_NOTICE, "etcdfs: echo: '%s' is not "
				 "this mount any more (%s): remote changes are "
				 "not replayed there\n", fs->cfg.mountpoint,
				 strerror(-ans.err));
		c->gone = true;
		return -1;
	}
	if (c->gone)
		fuse_log(FUSE_LOG_NOTICE, "etcdfs: echo: '%s' is this mount "
			 "again\n", fs->cfg.mountpoint);
	c->gone = false;
	if (ans.err)
		fuse_log(FUSE_LOG_DEBUG, "etcdfs: echo: '%.*s': %s\n",
			 (int)path_len, path, strerror(-ans.err));
	return 0;
}

/* How long the echo waits for a follower to walk a new directory. */
#define FOLLOW_WAIT_MS 200
/* A follower seen this long ago is not waited for any more. */
#define FOLLOWER_TTL_MS 60000
/* A directory closed this soon after the echo made it was followed (a
 * follower such as inotifywait -r may take seconds on a loaded machine). */
#define FOLLOW_SEEN_MS 10000
/* The pause after a new directory when nobody is known to follow. */
#define FOLLOW_PAUSE_MS 10

void echo_dir_walked(struct fs *fs, fuse_req_t req, struct node *dir)
{
	struct echo_follow *f = &fs->echo.follow;
	int64_t now = now_ms();
	unsigned i;

	if (fs->echo.pid <= 0 || fuse_req_ctx(req)->pid == fs->echo.pid)
		return;
	for (i = 0; i < ECHO_FOLLOW_RING; i++) {
		if (f->made[i] != dir->ino ||
		    now - f->made_ms[i] > FOLLOW_SEEN_MS)
			continue;
		f->seen_ms = now;
		f->walked[i] = true;
		pthread_cond_broadcast(&f->cond);
		return;
	}
}

bool echo_follower(struct fs *fs)
{
	int64_t seen = fs->echo.follow.seen_ms;

	return seen && now_ms() - seen < FOLLOWER_TTL_MS;
}

/*
 * Before the echo makes the directory @dir: notes it, so that a follower
 * that walks it is seen however soon it does, even before the echo's
 * mkdir has returned to this thread.  Its slot in the ring.
 */
static unsigned follow_note(struct fs *fs, struct node *dir)
{
	struct echo_follow *f = &fs->echo.follow;
	unsigned slot;

	pthread_mutex_lock(&fs->lock);
	slot = f->next;
	f->made[slot] = dir->ino;
	f->made_ms[slot] = now_ms();
	f->walked[slot] = false;
	f->next = (f->next + 1) % ECHO_FOLLOW_RING;
	pthread_mutex_unlock(&fs->lock);
	return slot;
}

/*
 * After the echo made the directory noted in @slot: time for
 * `inotifywait -r` to watch it before anything is made in it (struct
 * echo_follow).  While a follower was seen lately, until it has walked
 * the directory (FOLLOW_WAIT_MS at most), then 2 ms for its
 * inotify_add_watch; else FOLLOW_PAUSE_MS, in which a follower is
 * noticed when it walks it.  No lock held.
 */
static void follow_wait(struct fs *fs, unsigned slot)
{
	struct echo_follow *f = &fs->echo.follow;
	int64_t now = now_ms(), until = now + FOLLOW_WAIT_MS;
	bool walked = false;

	pthread_mutex_lock(&fs->lock);
	if (echo_follower(fs)) {
		while (!f->walked[slot] && now < until) {
			struct timespec ts = {
				.tv_sec = until / 1000,
				.tv_nsec = (until % 1000) * 1000000L,
			};

			pthread_cond_timedwait(&f->cond, &fs->lock, &ts);
			now = now_ms();
		}
		walked = f->walked[slot];
		if (walked)
			f->walked_n++;
		else
			f->unwalked_n++;
	}
	pthread_mutex_unlock(&fs->lock);
	nanosleep(&(struct timespec){ 0, (walked ? 2 : FOLLOW_PAUSE_MS) *
				       1000000L }, NULL);
}

/*
 * Hands the syscalls of @e to the process, one at a time: a creation's
 * new directories first, each given time to be watched (follow_wait),
 * then the change itself.  No lock held.
 */
static void replay(struct fs *fs, struct echo_ev *e)
{
	/* no request of the echo's is in flight yet: e->made is as planned */
	size_t i, comp = 0, made = e->made;
	unsigned slot;

	for (i = 0; e->action == ECHO_CREATE && e->path[i]; i++) {
		if (e->path[i] != '/' || comp++ < made)
			continue;
		slot = follow_note(fs, e->chain[comp - 1]);
		if (replay_op(fs, e, ECHO_OP_MKDIR, e->path, i))
			return;
		follow_wait(fs, slot);
	}
	replay_op(fs, e, e->action == ECHO_CREATE ? ECHO_OP_CREATE :
			 e->action == ECHO_MODIFY ? ECHO_OP_MODIFY :
			 ECHO_OP_DELETE, e->path, strlen(e->path));
}

static void echo_one(struct fs *fs, struct echo_ev *e)
{
	struct inval_list inv = { 0 };
	bool ready = child_ready(fs);
	struct node *n;
	size_t i;

	pthread_mutex_lock(&fs->lock);
	if (!ready) {
		echo_chain_release(fs, e);
		pthread_mutex_unlock(&fs->lock);
		fs_send_invals(fs, &inv);
		return;
	}
	fs->echo.cur = e;
	/*
	 * The names to make, and those gone from the mirror since: the
	 * kernel forgets what another process learnt of them (a positive
	 * or a negative entry), so that the echo's syscalls reach the daemon,
	 * which answers the echo from the change (echo_lookup) and, until
	 * the echo is done, answers others' lookups of them uncached
	 */
	for (i = 0; i < e->nchain; i++) {
		struct node *dir = i ? e->chain[i - 1] : fs->tree.root;
		const char *c;
		size_t len;

		if (!e->chain[i]->removed &&
		    (e->action != ECHO_CREATE || i < e->made))
			continue;
		echo_component(e->path, i, &c, &len);
		inval_add(&inv, true, node_id(fs, dir), c, len);
	}
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);

	replay(fs, e);

	pthread_mutex_lock(&fs->lock);
	fs->echo.cur = NULL;
	n = e->chain[e->nchain - 1];
	/* the echo's write went through the page cache: drop it */
	if (!e->del && n->nlookup)
		inval_add(&inv, false, node_id(fs, n), NULL, 0);
	echo_chain_release(fs, e);
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);
}

/*
 * For tests that need the echo to lag behind the watch
 * (tests/fs/visible.bats): while the file $ETCDFS_TEST_HOLD_ECHO names
 * exists, the echo replays nothing (a minute at most, and not once
 * echo_stop() was called).  Unset: one branch.  No lock held.
 */
static void test_hold_echo(struct fs *fs)
{
	static const char *path;
	static bool read;
	bool stop = false;
	int i;

	if (!read) {
		path = getenv("ETCDFS_TEST_HOLD_ECHO");
		read = true;
	}
	for (i = 0; path && !stop && access(path, F_OK) == 0 && i < 600;
	     i++) {
		usleep(100000);
		pthread_mutex_lock(&fs->echo.lock);
		stop = fs->echo.stop;
		pthread_mutex_unlock(&fs->echo.lock);
	}
}

static void *echo_main(void *arg)
{
	struct fs *fs = arg;

	child_ready(fs);
	pthread_mutex_lock(&fs->echo.lock);
	while (!fs->echo.stop) {
		struct echo_ev *e = fs->echo.head;

		if (!e) {
			pthread_cond_wait(&fs->echo.cond, &fs->echo.lock);
			continue;
		}
		fs->echo.head = e->next;
		if (!fs->echo.head)
			fs->echo.tail = NULL;
		pthread_mutex_unlock(&fs->echo.lock);
		test_hold_echo(fs);
		echo_one(fs, e);
		ev_free(e);
		/* one that died or hung is replaced at once, not at the next */
		if (fs->echo.pid <= 0)
			child_ready(fs);
		pthread_mutex_lock(&fs->echo.lock);
		fs->echo.len--;		/* counted until replayed */
		fs->echo.done++;
		pthread_cond_broadcast(&fs->echo.cond);
	}
	pthread_mutex_unlock(&fs->echo.lock);
	child_end(fs, false, false);
	return NULL;
}

int echo_start(struct fs *fs)
{
	int ret;

	memset(&fs->echo.child, 0, sizeof(fs->echo.child));
	fs->echo.child.sock = -1;
	ret = find_mount(fs);
	if (ret) {
		fuse_log(FUSE_LOG_WARNING, "etcdfs: echo: cannot find the mount "
			 "'%s' in /proc/self/mountinfo: %s\n",
			 fs->cfg.mountpoint, strerror(-ret));
		return ret;
	}
	fs->echo.child.wake = eventfd(0, EFD_CLOEXEC);
	if (fs->echo.child.wake < 0)
		return -errno;
	/* with every signal blocked: FUSE's handlers stay on its threads */
	ret = thread_start(&fs->echo.thread, echo_main, fs);
	if (ret) {
		close(fs->echo.child.wake);
		return -ret;
	}
	pthread_mutex_lock(&fs->lock);
	fs->echo.running = true;
	fs->mirror.observer = echo_observe;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

void echo_stop(struct fs *fs)
{
	struct echo_ev *e, *next;

	if (!fs->echo.running)
		return;
	pthread_mutex_lock(&fs->echo.lock);
	fs->echo.stop = true;
	pthread_cond_broadcast(&fs->echo.cond);
	pthread_mutex_unlock(&fs->echo.lock);
	/* wakes the thread if it waits on the process */
	if (eventfd_write(fs->echo.child.wake, 1))
		fuse_log(FUSE_LOG_ERR, "etcdfs: echo: cannot wake the echo "
			 "thread: %s\n", strerror(errno));
	/* its waits are the queue's and the process's, woken above */
	thread_stop(&fs->echo.thread);
	pthread_mutex_lock(&fs->lock);
	fs->echo.running = false;
	fs->mirror.observer = NULL;
	for (e = fs->echo.head; e; e = next) {
		next = e->next;
		echo_chain_release(fs, e);
		ev_free(e);
	}
	fs->echo.head = fs->echo.tail = NULL;
	fs->echo.len = 0;
	pthread_mutex_unlock(&fs->lock);
	close(fs->echo.child.wake);
}

size_t echo_pending(struct fs *fs)
{
	size_t n;

	pthread_mutex_lock(&fs->echo.lock);
	n = fs->echo.len;
	pthread_mutex_unlock(&fs->echo.lock);
	return n;
}

struct echo_ev *echo_of(struct fs *fs, fuse_req_t req)
{
	if (fs->echo.pid <= 0 || fuse_req_ctx(req)->pid != fs->echo.pid)
		return NULL;
	return fs->echo.cur;
}
