/*
 * log.c - etcdfs's log function for libfuse (see log.h)
 *
 * Every message of etcdfs starts with "etcdfs: ", which reads well on a
 * terminal; syslog and the log file name the program already (ident,
 * "etcdfs[pid]:"), so there the prefix is dropped rather than doubled.
 *
 * What it cannot do: rotate the log file (reopen it: there is no signal
 * for that yet; use copytruncate with logrotate).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <fuse_log.h>

#include "log.h"

#define PREFIX "etcdfs: "

static bool debug_on;
static bool use_syslog;
static bool use_stderr = true;
static int file_fd = -1;

/* One line to the log file: time, pid, message; one write(2), O_APPEND. */
static void to_file(const char *msg)
{
	char line[2200];
	struct timespec ts;
	struct tm tm;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	len = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	len += (size_t)snprintf(line + len, sizeof(line) - len,
				".%03ld etcdfs[%ld]: %s",
				ts.tv_nsec / 1000000L, (long)getpid(), msg);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;		/* cut: still one line */
	if (line[len - 1] != '\n')
		line[len++] = '\n';
	/* nowhere to report a failed write of the log */
	if (write(file_fd, line, len) < 0)
		return;
}

__attribute__((format(printf, 2, 0)))
static void log_func(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char buf[2048];
	const char *msg;

	if (level >= FUSE_LOG_DEBUG && !debug_on)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	msg = strncmp(buf, PREFIX, strlen(PREFIX)) == 0 ?
		buf + strlen(PREFIX) : buf;
	if (use_stderr)
		fputs(buf, stderr);
	if (file_fd >= 0)
		to_file(msg);
	else if (use_syslog)
		syslog((int)level, "%s", msg);	/* same numbers as LOG_* */
}

void log_init(bool debug)
{
	debug_on = debug;
	fuse_set_log_func(log_func);
}

int log_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
		      O_NOCTTY, 0640);

	if (fd < 0) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot write '%s': %s\n", path,
			 strerror(errno));
		return -1;
	}
	if (file_fd >= 0)
		close(file_fd);
	file_fd = fd;
	return 0;
}

void log_started(bool daemon)
{
	if (file_fd >= 0) {
		use_stderr = false;
		return;
	}
	if (daemon) {
		openlog("etcdfs", LOG_PID, LOG_DAEMON);
		use_syslog = true;
		use_stderr = false;
	}
}

bool log_to_stderr(void)
{
	return use_stderr;
}

void log_release(void)
{
	if (use_syslog)
		closelog();
	use_syslog = false;
	if (file_fd >= 0)
		close(file_fd);
	file_fd = -1;
	use_stderr = true;
}
