/*
 * gate.h - what fs/gate.c and fs/connect.c share, and offer: the state in
 * front of the FUSE operations (see gate.c), the table around them, and
 * delay_connect's thread
 *
 * What it cannot do: be used outside fs/.
 */
#ifndef ETCDFS_GATE_H
#define ETCDFS_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs.h"

struct fs;

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

/* gate.c: the table libfuse calls, around @ops */
const struct fuse_lowlevel_ops *fs_gate_ops(const struct fuse_lowlevel_ops *ops);
int fs_gate_new(struct fs *fs);
void fs_gate_free(struct fs *fs);
const char *fs_gate_op_name(unsigned op);
uint64_t fs_gate_op_count(struct fs *fs, unsigned op);

/* connect.c: delay_connect's thread, which loads the keys when it can */
int fs_connect_start(struct fs *fs);
void fs_connect_stop(struct fs *fs);
/* Once the keys are loaded: the echo and the watch (init, or the above). */
void fs_go_live(struct fs *fs);

#endif /* ETCDFS_GATE_H */
