/*
 * notify.c - sd_notify(3)'s datagram, written out (see notify.h)
 *
 * The protocol: one AF_UNIX datagram to the socket NOTIFY_SOCKET names, a
 * path or, when it starts with '@', a name in the abstract namespace
 * (the '@' stands for the leading NUL byte).  The text is newline-
 * separated assignments: READY=1, STATUS=..., STOPPING=1, MAINPID=N.
 *
 * What it cannot do: vsock addresses (NOTIFY_SOCKET=vsock:...), which
 * only virtual machines' managers use; those are logged and ignored.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fuse_log.h>

#include "notify.h"

static struct sockaddr_un addr;
static socklen_t addr_len;	/* 0: no NOTIFY_SOCKET */
static bool failed;		/* said so once */

void notify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;

	addr_len = 0;
	if (!path || !path[0])
		return;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(addr.sun_path)) {
		fuse_log(FUSE_LOG_WARNING, "etcdfs: NOTIFY_SOCKET '%s' is not "
			 "a unix socket: systemd is not told when the mount is "
			 "ready\n", path);
	} else {
		memset(&addr, 0, sizeof(addr));
		addr.sun_family = AF_UNIX;
		memcpy(addr.sun_path, path, len);
		if (path[0] == '@')
			addr.sun_path[0] = '\0';
		/* an abstract name is exactly its bytes: no NUL counted */
		addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				       len + (path[0] == '/'));
	}
	unsetenv("NOTIFY_SOCKET");
}

void notify(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int fd;
	ssize_t n = -1;
	int len;

	if (!addr_len)
		return;
	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(msg))
		len = (int)sizeof(msg) - 1;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		n = sendto(fd, msg, (size_t)len, MSG_NOSIGNAL,
			   (const struct sockaddr *)&addr, addr_len);
		if (n < 0) {
			int e = errno;

			close(fd);
			errno = e;
		} else {
			close(fd);
		}
	}
	if (n < 0 && !failed) {
		failed = true;
		fuse_log(FUSE_LOG_WARNING, "etcdfs: cannot notify systemd: "
			 "%s\n", strerror(errno));
	}
}

void notify_status(const char *msg)
{
	notify("STATUS=%s", msg);
}
