/*
 * codec_run.c - runs a value codec program once: `PROG VERB`, the input
 * on its standard input, its standard output and error collected, within
 * a deadline
 *
 * The program is started with posix_spawn (no shell: PROG is a path, VERB
 * its one argument) in a process group of its own, with every descriptor
 * of the daemon closed but the three pipes (it never holds /dev/fuse, so
 * the mount goes when the daemon goes), default signal dispositions and
 * an empty signal mask.  One poll() loop feeds its input and drains both
 * outputs at once, so a program that writes before it has read all of
 * its input never deadlocks with us.  Past the deadline, or once it has
 * written more than the cap, its whole group is killed with SIGKILL, and
 * it is always reaped (waitpid), so no zombie is left.
 *
 * It knows no FUSE and no etcd: fs/codec.c decides what to run and what
 * to do with the answer.
 *
 * What it cannot do: stop a program that left its process group (setsid)
 * from living on after the kill; its pipes are ours alone, so it can no
 * longer reach us then.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"

extern char **environ;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Appends @n bytes to @b, up to @max (then *@over); 0 or -ENOMEM. */
static int buf_add(struct codec_buf *b, const char *p, size_t n, size_t max,
		   bool *over)
{
	size_t room = max - b->len;

	if (n > room) {
		*over = true;
		n = room;
	}
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		char *nd;

		while (nc < b->len + n + 1)
			nc *= 2;
		nd = realloc(b->data, nc);
		if (!nd)
			return -ENOMEM;
		b->data = nd;
		b->cap = nc;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

void codec_result_release(struct codec_result *r)
{
	free(r->out.data);
	free(r->err.data);
	memset(r, 0, sizeof(*r));
}

static int spawn(const char *prog, const char *verb, int fds[3][2],
		 pid_t *pid)
{
	char *argv[] = { (char *)prog, (char *)verb, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int ret;

	sigemptyset(&none);
	sigfillset(&all);
	if (posix_spawn_file_actions_init(&fa))
		return -ENOMEM;
	if (posix_spawnattr_init(&attr)) {
		posix_spawn_file_actions_destroy(&fa);
		return -ENOMEM;
	}
	ret = posix_spawn_file_actions_adddup2(&fa, fds[0][0], 0) ||
	      posix_spawn_file_actions_adddup2(&fa, fds[1][1], 1) ||
	      posix_spawn_file_actions_adddup2(&fa, fds[2][1], 2) ||
	      posix_spawn_file_actions_addclosefrom_np(&fa, 3) ||
	      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
					       POSIX_SPAWN_SETSIGMASK |
					       POSIX_SPAWN_SETSIGDEF) ||
	      posix_spawnattr_setpgroup(&attr, 0) ||
	      posix_spawnattr_setsigmask(&attr, &none) ||
	      posix_spawnattr_setsigdefault(&attr, &all);
	if (!ret)
		ret = -posix_spawn(pid, prog, &fa, &attr, argv, environ);
	else
		ret = -ENOMEM;
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return ret;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Feeds @in to fds[0][1] and drains fds[1][0], fds[2][0] into @r until
 * both outputs end, the deadline passes (-ETIMEDOUT) or the output passes
 * @out_max (-EFBIG).  0 or -errno; every descriptor closed on return.
 */
static int exchange(int fds[3][2], const char *in, size_t in_len,
		    long long deadline, size_t out_max, struct codec_result *r)
{
	size_t sent = 0;
	bool over = false, err_over = false;
	char chunk[65536];
	int ret = 0;

	if (!in_len)
		close_fd(&fds[0][1]);
	while (fds[1][0] >= 0 || fds[2][0] >= 0) {
		struct pollfd p[3] = {
			{ .fd = fds[0][1], .events = POLLOUT },
			{ .fd = fds[1][0], .events = POLLIN },
			{ .fd = fds[2][0], .events = POLLIN },
		};
		long long left = deadline - now_ms();
		int i, n;

		if (left <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		n = poll(p, 3, left > 1000 ? 1000 : (int)left);
		if (n < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (n <= 0)
			continue;
		if (p[0].revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t w = write(fds[0][1], in + sent, in_len - sent);

			if (w > 0)
				sent += (size_t)w;
			/* EPIPE: it stopped reading, which is its business */
			if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
			    sent == in_len)
				close_fd(&fds[0][1]);
		}
		for (i = 1; i < 3; i++) {
			ssize_t got;

			if (!(p[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			got = read(fds[i][0], chunk, sizeof(chunk));
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got <= 0) {
				close_fd(&fds[i][0]);
				continue;
			}
			ret = i == 1 ? buf_add(&r->out, chunk, (size_t)got,
					       out_max, &over)
				     : buf_add(&r->err, chunk, (size_t)got,
					       CODEC_STDERR_MAX, &err_over);
			if (ret)
				break;
		}
		if (ret)
			break;
		if (over) {
			ret = -EFBIG;
			break;
		}
	}
	for (int i = 0; i < 3; i++) {
		close_fd(&fds[i][0]);
		close_fd(&fds[i][1]);
	}
	return ret;
}

/* Reaps @pid by the deadline, else kills its group and reaps it. */
static int reap(pid_t pid, long long deadline, bool kill_now, int *status)
{
	int ret = 0;

	while (!kill_now) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		/* its outputs are closed: it is exiting, or hangs */
		nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return ret;
}

int codec_run(const char *prog, const char *verb, const char *in,
	      size_t in_len, long timeout_ms, size_t out_max,
	      struct codec_result *r)
{
	int fds[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
	long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 5000);
	int ret, i, status = 0;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < 3; i++) {
		if (pipe2(fds[i], O_CLOEXEC) < 0) {
			ret = -errno;
			goto fail;
		}
	}
	/* our ends never block: the loop waits in poll() alone */
	fcntl(fds[0][1], F_SETFL, O_NONBLOCK);
	fcntl(fds[1][0], F_SETFL, O_NONBLOCK);
	fcntl(fds[2][0], F_SETFL, O_NONBLOCK);
	ret = spawn(prog, verb, fds, &pid);
	if (ret)
		goto fail;
	/* the child's ends are its own now */
	close_fd(&fds[0][0]);
	close_fd(&fds[1][1]);
	close_fd(&fds[2][1]);
	ret = exchange(fds, in, in_len, deadline, out_max, r);
	i = reap(pid, deadline, ret != 0, &status);
	if (!ret)
		ret = i;
	r->timed_out = ret == -ETIMEDOUT;
	if (!ret && WIFEXITED(status))
		r->status = WEXITSTATUS(status);
	else if (!ret && WIFSIGNALED(status))
		r->status = 128 + WTERMSIG(status);
	if (!ret && r->status)
		ret = -ECHILD;
	return ret;
fail:
	for (i = 0; i < 3; i++) {
		close_fd(&fds[i][0]);
		close_fd(&fds[i][1]);
	}
	return ret;
}
