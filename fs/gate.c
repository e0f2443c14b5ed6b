/*
 * gate.c - the operations as the kernel calls them: counted, traced with
 * -d, refused with ENOTCONN until the mirror is loaded, and held at
 * -o quorum's barrier (quorum.c)
 *
 * fs_ops() hands libfuse this file's table, whose every entry wraps the
 * handler of the same name in fs.c's table, as sshfs wraps its operations
 * in its cache.  Each call counts its operation (user.etcd.stats); while
 * the gate is closed (delay_connect, etcd not loaded yet) every operation
 * that needs the mirror fails with ENOTCONN, so that an empty-looking
 * root never passes for a cluster without keys; with -d each operation
 * is logged with its node, its name, its result and its duration, as
 * libfuse's example filesystems do.  The result is what the handler
 * replied: the mount is linked with --wrap for libfuse's reply functions
 * (see fs/meson.build), which note the reply of the request the calling
 * thread traces.  Without -d a call costs one atomic add and two
 * branches.
 *
 * What it cannot do: trace a reply sent from another thread than the
 * handler's (none is today; it would be logged as "replied elsewhere").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"
#include "gate.h"
#include "quorum.h"

static const struct fuse_lowlevel_ops *inner;

static const char *const op_names[] = {
#define GATE_NAME(op) #op,
	GATE_OPS(GATE_NAME)
#undef GATE_NAME
};

const char *fs_gate_op_name(unsigned op)
{
	return op < GATE_NOPS ? op_names[op] : "?";
}

uint64_t fs_gate_op_count(struct fs *fs, unsigned op)
{
	return op < GATE_NOPS ? atomic_load(&fs->gate->ops[op]) : 0;
}

/* ---- the trace ---- */

struct gate_trace {
	fuse_req_t req;		/* answered (and freed) by the handler */
	const char *op;
	pid_t pid;
	bool replied;
	int err;		/* fuse_reply_err's, 0 otherwise */
	char what[64];		/* what else was replied */
};

/* The request the calling thread traces, if any. */
static __thread struct gate_trace *tracing;

static struct gate_trace *traced(fuse_req_t req)
{
	struct gate_trace *t = tracing;

	return t && t->req == req ? t : NULL;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The replies, each noted for the trace, then sent (see fs/meson.build). */
int __real_fuse_reply_err(fuse_req_t req, int err);
int __real_fuse_reply_none(fuse_req_t req);
int __real_fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e);
int __real_fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi);
int __real_fuse_reply_attr(fuse_req_t req, const struct stat *attr,
			   double attr_timeout);
int __real_fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi);
int __real_fuse_reply_write(fuse_req_t req, size_t count);
int __real_fuse_reply_buf(fuse_req_t req, const char *buf, size_t size);
int __real_fuse_reply_statfs(fuse_req_t req, const struct statvfs *stbuf);
int __real_fuse_reply_xattr(fuse_req_t req, size_t count);

int __wrap_fuse_reply_err(fuse_req_t req, int err);
int __wrap_fuse_reply_none(fuse_req_t req);
int __wrap_fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e);
int __wrap_fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi);
int __wrap_fuse_reply_attr(fuse_req_t req, const struct stat *attr,
			   double attr_timeout);
int __wrap_fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi);
int __wrap_fuse_reply_write(fuse_req_t req, size_t count);
int __wrap_fuse_reply_buf(fuse_req_t req, const char *buf, size_t size);
int __wrap_fuse_reply_statfs(fuse_req_t req, const struct statvfs *stbuf);
int __wrap_fuse_reply_xattr(fuse_req_t req, size_t count);

#define NOTE(req, ...)							\
	do {								\
		struct gate_trace *t_ = traced(req);			\
		if (t_) {						\
			t_->replied = true;				\
			snprintf(t_->what, sizeof(t_->what), __VA_ARGS__); \
		}							\
	} while (0)

int __wrap_fuse_reply_err(fuse_req_t req, int err)
{
	struct gate_trace *t = traced(req);

	if (t) {
		t->replied = true;
		t->err = err;
	}
	return __real_fuse_reply_err(req, err);
}

int __wrap_fuse_reply_none(fuse_req_t req)
{
	NOTE(req, "none");
	return __real_fuse_reply_none(req);
}

int __wrap_fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	if (e->ino)
		NOTE(req, "entry ino %llu", (unsigned long long)e->attr.st_ino);
	else
		NOTE(req, "no entry (cached)");
	return __real_fuse_reply_entry(req, e);
}

int __wrap_fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi)
{
	NOTE(req, "created ino %llu", (unsigned long long)e->attr.st_ino);
	return __real_fuse_reply_create(req, e, fi);
}

int __wrap_fuse_reply_attr(fuse_req_t req, const struct stat *attr,
			   double attr_timeout)
{
	NOTE(req, "attr size %lld", (long long)attr->st_size);
	return __real_fuse_reply_attr(req, attr, attr_timeout);
}

int __wrap_fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi)
{
	NOTE(req, "open");
	return __real_fuse_reply_open(req, fi);
}

int __wrap_fuse_reply_write(fuse_req_t req, size_t count)
{
	NOTE(req, "%zu bytes written", count);
	return __real_fuse_reply_write(req, count);
}

int __wrap_fuse_reply_buf(fuse_req_t req, const char *buf, size_t size)
{
	NOTE(req, "%zu bytes", size);
	return __real_fuse_reply_buf(req, buf, size);
}

int __wrap_fuse_reply_statfs(fuse_req_t req, const struct statvfs *stbuf)
{
	NOTE(req, "statfs");
	return __real_fuse_reply_statfs(req, stbuf);
}

int __wrap_fuse_reply_xattr(fuse_req_t req, size_t count)
{
	NOTE(req, "size %zu", count);
	return __real_fuse_reply_xattr(req, count);
}

static void trace_begin(struct gate_trace *t, fuse_req_t req, const char *op)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	memset(t, 0, sizeof(*t));
	t->req = req;
	t->op = op;
	t->pid = ctx ? ctx->pid : 0;
	tracing = t;
}

static void trace_end(struct gate_trace *t, fuse_ino_t ino, const char *name,
		      int64_t start)
{
	long us = (long)(now_us() - start);
	char res[96];

	tracing = NULL;
	if (!t->replied)
		snprintf(res, sizeof(res), "replied elsewhere");
	else if (t->err)
		snprintf(res, sizeof(res), "-%d (%s)", t->err,
			 strerror(t->err));
	else if (t->what[0])
		snprintf(res, sizeof(res), "0 (%s)", t->what);
	else
		snprintf(res, sizeof(res), "0");
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: fuse %s node %llu%s%s%s pid %d -> "
		 "%s in %ld us\n", t->op, (unsigned long long)ino,
		 name ? " name '" : "", name ? name : "", name ? "'" : "",
		 (int)t->pid, res, us);
}

/* ---- the wrappers ---- */

static struct fs_gate *gate_of(fuse_req_t req)
{
	return ((struct fs *)fuse_req_userdata(req))->gate;
}

/*
 * -o quorum: a lookup, open or opendir waits until the mirror is as new
 * as etcd was when it came (quorum.c).  False if it may go on; else it
 * was answered with the barrier's errno.
 */
static bool gate_barrier(fuse_req_t req, unsigned op)
{
	struct fs *fs = fuse_req_userdata(req);
	int err;

	if (!fs->quorum || (op != GATE_OP_lookup && op != GATE_OP_open &&
			    op != GATE_OP_opendir))
		return false;
	err = quorum_barrier(fs, req);
	if (!err)
		return false;
	if (fs->gate->trace)
		fuse_log(FUSE_LOG_DEBUG, "etcdfs: fuse %s: %s: quorum barrier\n",
			 fs_gate_op_name(op), strerror(-err));
	fuse_reply_err(req, -err);
	return true;
}

/*
 * One wrapper: counts @op, refuses it while the gate is closed if
 * @gated, else calls the handler, traced with -d.  @ino and @name are
 * what the trace shows of the request.
 */
#define GATE_FN(op, gated, ino, name, params, args)			\
	static void gate_##op params					\
	{								\
		struct fs_gate *g = gate_of(req);			\
		struct gate_trace t;					\
		int64_t start;						\
									\
		atomic_fetch_add_explicit(&g->ops[GATE_OP_##op], 1,	\
					  memory_order_relaxed);	\
		if ((gated) && !atomic_load_explicit(&g->open,		\
						     memory_order_acquire)) { \
			if (g->trace)					\
				fuse_log(FUSE_LOG_DEBUG, "etcdfs: fuse " #op \
					 " node %llu: ENOTCONN: etcd not "  \
					 "loaded yet\n",		\
					 (unsigned long long)(ino));	\
			fuse_reply_err(req, ENOTCONN);			\
			return;						\
		}							\
		if (gate_barrier(req, GATE_OP_##op))			\
			return;						\
		if (!g->trace) {					\
			inner->op args;					\
			return;						\
		}							\
		start = now_us();					\
		trace_begin(&t, req, #op);				\
		inner->op args;						\
		trace_end(&t, (ino), (name), start);			\
	}

GATE_FN(lookup, true, parent, name,
	(fuse_req_t req, fuse_ino_t parent, const char *name),
	(req, parent, name))
GATE_FN(forget, false, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup),
	(req, ino, nlookup))
/* the root is a directory, loaded or not: cd and stat of it work */
GATE_FN(getattr, ino != FUSE_ROOT_ID, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
GATE_FN(setattr, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
	 struct fuse_file_info *fi),
	(req, ino, attr, to_set, fi))
GATE_FN(mknod, true, parent, name,
	(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	 dev_t rdev),
	(req, parent, name, mode, rdev))
GATE_FN(mkdir, true, parent, name,
	(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode),
	(req, parent, name, mode))
GATE_FN(unlink, true, parent, name,
	(fuse_req_t req, fuse_ino_t parent, const char *name),
	(req, parent, name))
GATE_FN(rmdir, true, parent, name,
	(fuse_req_t req, fuse_ino_t parent, const char *name),
	(req, parent, name))
GATE_FN(symlink, true, parent, name,
	(fuse_req_t req, const char *link, fuse_ino_t parent,
	 const char *name),
	(req, link, parent, name))
GATE_FN(rename, true, parent, name,
	(fuse_req_t req, fuse_ino_t parent, const char *name,
	 fuse_ino_t newparent, const char *newname, unsigned int flags),
	(req, parent, name, newparent, newname, flags))
GATE_FN(link, true, newparent, newname,
	(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	 const char *newname),
	(req, ino, newparent, newname))
GATE_FN(open, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
GATE_FN(read, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	 struct fuse_file_info *fi),
	(req, ino, size, off, fi))
GATE_FN(write, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	 off_t off, struct fuse_file_info *fi),
	(req, ino, buf, size, off, fi))
/* an open file was opened through the gate: let it close */
GATE_FN(flush, false, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
GATE_FN(release, false, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
GATE_FN(fsync, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, int datasync,
	 struct fuse_file_info *fi),
	(req, ino, datasync, fi))
GATE_FN(opendir, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
GATE_FN(readdir, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	 struct fuse_file_info *fi),
	(req, ino, size, off, fi))
GATE_FN(readdirplus, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	 struct fuse_file_info *fi),
	(req, ino, size, off, fi))
GATE_FN(releasedir, false, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
	(req, ino, fi))
GATE_FN(fsyncdir, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, int datasync,
	 struct fuse_file_info *fi),
	(req, ino, datasync, fi))
GATE_FN(statfs, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino),
	(req, ino))
GATE_FN(setxattr, true, ino, name,
	(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
	 size_t size, int flags),
	(req, ino, name, value, size, flags))
GATE_FN(getxattr, true, ino, name,
	(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size),
	(req, ino, name, size))
GATE_FN(listxattr, true, ino, NULL,
	(fuse_req_t req, fuse_ino_t ino, size_t size),
	(req, ino, size))
GATE_FN(removexattr, true, ino, name,
	(fuse_req_t req, fuse_ino_t ino, const char *name),
	(req, ino, name))
GATE_FN(create, true, parent, name,
	(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	 struct fuse_file_info *fi),
	(req, parent, name, mode, fi))

/* Many forgets in one request: counted as forgets, never refused. */
static void gate_forget_multi(fuse_req_t req, size_t count,
			      struct fuse_forget_data *forgets)
{
	struct fs_gate *g = gate_of(req);

	atomic_fetch_add_explicit(&g->ops[GATE_OP_forget], count,
				  memory_order_relaxed);
	if (g->trace)
		fuse_log(FUSE_LOG_DEBUG, "etcdfs: fuse forget_multi of %zu "
			 "nodes\n", count);
	inner->forget_multi(req, count, forgets);
}

static struct fuse_lowlevel_ops gated;

const struct fuse_lowlevel_ops *fs_gate_ops(const struct fuse_lowlevel_ops *ops)
{
	inner = ops;
	gated = *ops;
#define GATE_SET(op) if (ops->op) gated.op = gate_##op;
	GATE_OPS(GATE_SET)
#undef GATE_SET
	if (ops->forget_multi)
		gated.forget_multi = gate_forget_multi;
	return &gated;
}

int fs_gate_new(struct fs *fs)
{
	struct fs_gate *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	atomic_init(&g->open, !fs->cfg.delay_connect);
	g->trace = fs->cfg.debug;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	fs->gate = g;
	return 0;
}

void fs_gate_free(struct fs *fs)
{
	struct fs_gate *g = fs->gate;

	if (!g)
		return;
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
	fs->gate = NULL;
}
