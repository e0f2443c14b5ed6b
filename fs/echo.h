/*
 * echo.h - what the echo's thread (echo.c, in the daemon) and the echo's
 * process (echo_proc.c) say to each other over their socket
 *
 * The thread sends one message at a time and waits for its answer: a
 * struct echo_msg, then path_len bytes of path (relative to the mount's
 * root, no NUL), then value_len bytes of value.  The process answers with
 * a struct echo_answer once every syscall of the change is done and every
 * file it opened is closed.  Both sides run the same binary, so the
 * structs go as they are, in the host's byte order.
 *
 * The socket is the process's fd ECHO_FD; its other end is held by the
 * daemon alone, so the process sees EOF when the daemon is gone.
 */
#ifndef ETCDFS_ECHO_H
#define ETCDFS_ECHO_H

#include <stdint.h>

#define ECHO_FD 3
/* the most new directories one change's replay makes (echo_plan.c) */
#define ECHO_MAX_DIRS 64

enum echo_op {
	ECHO_OP_CREATE = 1,	/* creat(O_EXCL), write */
	ECHO_OP_MODIFY,		/* open, write over (empty: ftruncate) */
	ECHO_OP_DELETE,		/* unlink, then rmdir the emptied parents */
	ECHO_OP_MKDIR,		/* mkdir of one directory, before a CREATE */
};

/* echo_answer.flags: the mountpoint is not the mount; nothing was done */
#define ECHO_F_GONE 1u

struct echo_msg {
	uint32_t op;		/* enum echo_op */
	uint32_t path_len;
	uint64_t value_len;
	/*
	 * The mount the daemon made, as /proc/self/mountinfo said when it
	 * was new (st_dev and mount id): nothing is replayed anywhere else.
	 */
	uint64_t dev;
	uint64_t mnt_id;
};

struct echo_answer {
	int32_t err;		/* 0, or the first syscall's -errno */
	uint32_t flags;
};

#endif /* ETCDFS_ECHO_H */
