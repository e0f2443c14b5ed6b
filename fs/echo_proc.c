/*
 * echo_proc.c - the echo's process: replays other clients' changes on the
 * mount, as syscalls, for the daemon's echo thread (echo.c)
 *
 * The daemon runs its own binary again (`etcdfs FS_ECHO_ARG MOUNTPOINT
 * PID`, see fs.h) with one end of a socket as fd ECHO_FD and no other
 * descriptor of its own: never /dev/fuse.  A process that waits on a
 * FUSE mount it serves itself is what hung killed daemons before.
 *
 * When the daemon dies in the middle of a change, its death signal
 * (PR_SET_PDEATHSIG, SIGKILL) comes at once.  A request of this process
 * that the daemon had not read yet is withdrawn; one it had read is
 * waited out (the kernel waits for its answer uninterruptibly), but only
 * until the connection is aborted, which happens as soon as the daemon's
 * last thread has exited and so closed /dev/fuse -- and nothing of the
 * daemon waits for this process or touches the mount, so that always
 * comes.  So does the flush of each file it had open, sent as it exits.
 * EOF on its socket ends it too, and it never starts if its parent is
 * gone before it could ask for the signal.
 *
 * Each change is replayed relative to a descriptor of the mount's root,
 * opened again for each change and used only if it is the mount the
 * daemon made (the device and mount id the daemon sends): after a
 * lazy unmount, or with another filesystem mounted over the mountpoint,
 * nothing is replayed, and nothing ever lands in the directory
 * underneath.  The root is not held between changes: a descriptor on the
 * mount would make `fusermount3 -u` fail with EBUSY and keep a lazily
 * unmounted mount, and its daemon, alive forever.  Paths are resolved
 * beneath that root without crossing into another mount or following a
 * symlink (openat2's RESOLVE_BENEATH | RESOLVE_NO_XDEV |
 * RESOLVE_NO_SYMLINKS, or O_NOFOLLOW on kernels before 5.6).
 *
 * What it cannot do: tell a change from the daemon it serves from anyone
 * else's; it trusts its socket.  It logs nothing: every error goes back
 * to the daemon in the answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "echo.h"
#include "fs.h"

/* read_full()'s answer when it read every byte asked for */
#define READ_ALL 1

/* Reads exactly @len bytes: READ_ALL, 0 at EOF before any, or -errno. */
static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t r = read(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return p == buf ? 0 : -EPIPE;
		p += r;
		len -= (size_t)r;
	}
	return READ_ALL;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* open() of @path beneath @dir, never out of its mount; fd or -errno. */
static int open_beneath(int dir, const char *path, int flags, mode_t mode)
{
	static bool no_openat2;
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV |
			   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (!no_openat2) {
		fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		if (errno != ENOSYS)
			return -errno;
		no_openat2 = true;
	}
	fd = openat(dir, path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
	return fd < 0 ? -errno : fd;
}

/*
 * The directory that holds @path (beneath @root), and in *@name its last
 * component.  @root itself, a new descriptor to close, or -errno.
 */
static int parent_of(int root, char *path, const char **name)
{
	char *slash = strrchr(path, '/');
	int fd;

	if (!slash) {
		*name = path;
		return root;
	}
	*slash = '\0';
	fd = open_beneath(root, path, O_PATH | O_DIRECTORY, 0);
	*slash = '/';
	*name = slash + 1;
	return fd;
}

static int mkdir_beneath(int root, char *path)
{
	const char *name;
	int dir = parent_of(root, path, &name);
	int err = 0;

	if (dir < 0)
		return dir;
	if (mkdirat(dir, name, 0777) && errno != EEXIST)
		err = -errno;
	if (dir != root)
		close(dir);
	return err;
}

static int unlink_beneath(int root, char *path, int flags)
{
	const char *name;
	int dir = parent_of(root, path, &name);
	int err = 0;

	if (dir < 0)
		return dir;
	if (unlinkat(dir, name, flags))
		err = -errno;
	if (dir != root)
		close(dir);
	return err;
}

/*
 * The mount's root, if @mnt still is the mount the daemon made; else
 * -ENODEV (or the error that kept it from being opened).
 */
static int open_root(const char *mnt, const struct echo_msg *m)
{
	int fd = open(mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct statx stx;

	if (fd < 0)
		return -errno;
	/* from the superblock and the mount: no request to the daemon */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID,
		  &stx) ||
	    makedev(stx.stx_dev_major, stx.stx_dev_minor) != m->dev ||
	    ((stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id != m->mnt_id)) {
		close(fd);
		return -ENODEV;
	}
	return fd;
}

/*
 * The write that raises MODIFY.  A changed value is written over the old
 * one, not after an O_TRUNC: the truncation's SETATTR is the one reply
 * whose attributes the kernel takes whatever came since, and one answered
 * a moment before the next change could give a reader of that change the
 * old size (the daemon's mirror has the value already; the echo only
 * makes the events).  An empty value still takes a truncation, since no
 * write of nothing raises MODIFY.
 */
static int write_value(int fd, const struct echo_msg *m, const char *value)
{
	if (m->value_len)
		return write_full(fd, value, m->value_len);
	if (m->op == ECHO_OP_MODIFY && ftruncate(fd, 0))
		return -errno;
	return 0;
}

/* The syscalls of one change, beneath @root; the first error. */
static int replay(int root, const struct echo_msg *m, char *path,
		  const char *value)
{
	int err = 0, fd, flags, r;

	switch (m->op) {
	case ECHO_OP_MKDIR:
		return mkdir_beneath(root, path);
	case ECHO_OP_CREATE:
	case ECHO_OP_MODIFY:
		flags = m->op == ECHO_OP_CREATE ? O_WRONLY | O_CREAT | O_EXCL
						: O_WRONLY;
		fd = open_beneath(root, path, flags, 0666);
		if (fd < 0)
			return fd;
		r = write_value(fd, m, value);
		if (close(fd) && !r)
			r = -errno;
		return r;
	case ECHO_OP_DELETE:
		err = unlink_beneath(root, path, 0);
		/* the directories that held only this key go with it */
		while (!err) {
			char *slash = strrchr(path, '/');

			if (!slash)
				break;
			*slash = '\0';
			if (unlink_beneath(root, path, AT_REMOVEDIR))
				break;
		}
		return err;
	default:
		return -EINVAL;
	}
}

/*
 * Reads the rest of message @m; 0, or -EPROTO if the daemon is gone or
 * odd (or -ENOMEM).
 */
static int read_body(const struct echo_msg *m, char *path, char **value)
{
	if (m->path_len >= PATH_MAX)
		return -EPROTO;
	if (read_full(ECHO_FD, path, m->path_len) != READ_ALL)
		return -EPROTO;
	path[m->path_len] = '\0';
	*value = NULL;
	if (!m->value_len)
		return 0;
	if (m->value_len > SIZE_MAX / 2)
		return -EPROTO;
	*value = malloc(m->value_len);
	if (!*value)
		return -ENOMEM;
	if (read_full(ECHO_FD, *value, m->value_len) != READ_ALL) {
		free(*value);
		*value = NULL;
		return -EPROTO;
	}
	return 0;
}

/*
 * Replays the daemon's messages until it closes its end; the process's
 * exit status (0, or 1 when a message could not be read), not an errno.
 */
static int serve(const char *mnt)
{
	static char path[PATH_MAX];

	for (;;) {
		struct echo_answer a = { 0 };
		struct echo_msg m;
		char *value;
		int r = read_full(ECHO_FD, &m, sizeof(m));
		int root;

		if (r == 0)
			return 0;	/* the daemon closed its end */
		if (r < 0 || read_body(&m, path, &value))
			return 1;
		root = open_root(mnt, &m);
		if (root >= 0) {
			a.err = replay(root, &m, path, value);
			close(root);
		} else {
			a.err = root;
			a.flags |= ECHO_F_GONE;
		}
		free(value);
		if (write_full(ECHO_FD, &a, sizeof(a)))
			return 0;	/* gone meanwhile */
	}
}

int fs_echo_main(int argc, char **argv)
{
	struct stat st;
	char *end;
	long ppid;

	if (argc != 4 || fstat(ECHO_FD, &st) || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "etcdfs: '%s' is for etcdfs's own use\n",
			FS_ECHO_ARG);
		return 2;
	}
	errno = 0;
	ppid = strtol(argv[3], &end, 10);
	if (errno || *end || ppid <= 0)
		return 2;
	/* die with the daemon's echo thread; it may be gone already */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != (pid_t)ppid)
		return 1;
	prctl(PR_SET_NAME, "etcdfs-echo");
	signal(SIGPIPE, SIG_IGN);
	/* keep no directory of the daemon's starter busy (it needs none) */
	if (chdir("/"))
		return 1;
	return serve(argv[2]);
}
