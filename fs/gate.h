/*
 * gate.h - what fs/gate.c and fs/connect.c share: the state in front of
 * the FUSE operations (see gate.c)
 *
 * What it cannot do: be used outside fs/.
 */
#ifndef ETCDFS_GATE_H
#define ETCDFS_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The operations counted, in the order user.etcd.stats lists them. */
#define GATE_OPS(X)							\
	X(lookup) X(forget) X(getattr) X(setattr) X(mknod) X(mkdir)	\
	X(unlink) X(rmdir) X(symlink) X(rename) X(link) X(open) X(read)	\
	X(write) X(flush) X(release) X(fsync) X(opendir) X(readdir)	\
	X(readdirplus) X(releasedir) X(fsyncdir) X(statfs) X(setxattr)	\
	X(getxattr) X(listxattr) X(removexattr) X(create)

enum gate_op {
#define GATE_ENUM(op) GATE_OP_##op,
	GATE_OPS(GATE_ENUM)
#undef GATE_ENUM
	GATE_NOPS
};

struct fs_gate {
	/*
	 * False until the mirror is loaded: with delay_connect the mount
	 * comes up first, and every operation that needs etcd fails with
	 * ENOTCONN until connect.c loaded it.
	 */
	atomic_bool open;
	bool trace;			/* -d: every operation logged */
	atomic_uint_fast64_t ops[GATE_NOPS];	/* requests by operation */
	atomic_uint_fast64_t stored;	/* values pushed to the page cache */

	/* connect.c's thread, which waits for etcd (delay_connect) */
	pthread_mutex_t lock;		/* guards the three below */
	pthread_cond_t cond;		/* stop was set */
	bool stop;
	bool started;
	pthread_t thread;
};

#endif
