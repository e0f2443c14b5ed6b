/*
 * stats.c - the kernel's requests, counted per operation
 *
 * A layer around the operations table (as sshfs wraps its operations with
 * its cache): each counted operation bumps its counter, then calls the
 * operation itself.  The mount root's user.etcd.stats shows the counters,
 * so that a test or an operator can tell how many round trips a command
 * cost the kernel (a cold `cat` of N files: how many LOOKUP, OPEN, READ).
 *
 * What it cannot do: count what the kernel answers alone (a cached page, a
 * cached attribute), nor requests libfuse answers without calling an
 * operation (INIT, INTERRUPT); the operations not listed in stat_names are
 * not counted.
 */
#include <inttypes.h>
#include <stdio.h>

#include "fs_i.h"

static const char *const stat_names[FS_STAT_MAX] = {
	[FS_STAT_LOOKUP] = "lookup",
	[FS_STAT_FORGET] = "forget",
	[FS_STAT_GETATTR] = "getattr",
	[FS_STAT_SETATTR] = "setattr",
	[FS_STAT_OPEN] = "open",
	[FS_STAT_READ] = "read",
	[FS_STAT_WRITE] = "write",
	[FS_STAT_FLUSH] = "flush",
	[FS_STAT_RELEASE] = "release",
	[FS_STAT_FSYNC] = "fsync",
	[FS_STAT_CREATE] = "create",
	[FS_STAT_OPENDIR] = "opendir",
	[FS_STAT_READDIR] = "readdir",
	[FS_STAT_READDIRPLUS] = "readdirplus",
	[FS_STAT_RELEASEDIR] = "releasedir",
	[FS_STAT_GETXATTR] = "getxattr",
	[FS_STAT_STORED] = "stored",
};

/* the operations themselves, which the counting ones call */
static struct fuse_lowlevel_ops inner;
static struct fuse_lowlevel_ops outer;

void fs_stat_add(struct fs *fs, enum fs_stat which, uint64_t n)
{
	__atomic_fetch_add(&fs->stats[which], n, __ATOMIC_RELAXED);
}

static void count(fuse_req_t req, enum fs_stat which)
{
	fs_stat_add(fuse_req_userdata(req), which, 1);
}

int fs_stats_format(struct fs *fs, char *buf, size_t size)
{
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < FS_STAT_MAX; i++) {
		uint64_t v = __atomic_load_n(&fs->stats[i], __ATOMIC_RELAXED);
		int r = snprintf(buf + len, size - len, "%s%s=%" PRIu64,
				 i ? " " : "", stat_names[i], v);

		if (r < 0 || (size_t)r >= size - len)
			return -ERANGE;
		len += (size_t)r;
	}
	return (int)len;
}

static void c_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	count(req, FS_STAT_LOOKUP);
	inner.lookup(req, parent, name);
}

static void c_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	count(req, FS_STAT_FORGET);
	inner.forget(req, ino, nlookup);
}

static void c_forget_multi(fuse_req_t req, size_t n,
			   struct fuse_forget_data *forgets)
{
	fs_stat_add(fuse_req_userdata(req), FS_STAT_FORGET, n);
	inner.forget_multi(req, n, forgets);
}

static void c_getattr(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	count(req, FS_STAT_GETATTR);
	inner.getattr(req, ino, fi);
}

static void c_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		      int to_set, struct fuse_file_info *fi)
{
	count(req, FS_STAT_SETATTR);
	inner.setattr(req, ino, attr, to_set, fi);
}

static void c_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	count(req, FS_STAT_OPEN);
	inner.open(req, ino, fi);
}

static void c_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	count(req, FS_STAT_READ);
	inner.read(req, ino, size, off, fi);
}

static void c_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		    size_t size, off_t off, struct fuse_file_info *fi)
{
	count(req, FS_STAT_WRITE);
	inner.write(req, ino, buf, size, off, fi);
}

static void c_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	count(req, FS_STAT_FLUSH);
	inner.flush(req, ino, fi);
}

static void c_release(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	count(req, FS_STAT_RELEASE);
	inner.release(req, ino, fi);
}

static void c_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi)
{
	count(req, FS_STAT_FSYNC);
	inner.fsync(req, ino, datasync, fi);
}

static void c_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, struct fuse_file_info *fi)
{
	count(req, FS_STAT_CREATE);
	inner.create(req, parent, name, mode, fi);
}

static void c_opendir(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	count(req, FS_STAT_OPENDIR);
	inner.opendir(req, ino, fi);
}

static void c_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	count(req, FS_STAT_READDIR);
	inner.readdir(req, ino, size, off, fi);
}

static void c_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	count(req, FS_STAT_READDIRPLUS);
	inner.readdirplus(req, ino, size, off, fi);
}

static void c_releasedir(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	count(req, FS_STAT_RELEASEDIR);
	inner.releasedir(req, ino, fi);
}

static void c_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		       size_t size)
{
	count(req, FS_STAT_GETXATTR);
	inner.getxattr(req, ino, name, size);
}

/* an operation the table has is counted; one it lacks stays missing */
#define WRAP(op) (outer.op = inner.op ? c_##op : NULL)

const struct fuse_lowlevel_ops *
fs_stats_wrap(const struct fuse_lowlevel_ops *ops)
{
	/* once: every session of the process has the same operations */
	if (outer.lookup)
		return &outer;
	inner = *ops;
	outer = *ops;
	WRAP(lookup);
	WRAP(forget);
	WRAP(forget_multi);
	WRAP(getattr);
	WRAP(setattr);
	WRAP(open);
	WRAP(read);
	WRAP(write);
	WRAP(flush);
	WRAP(release);
	WRAP(fsync);
	WRAP(create);
	WRAP(opendir);
	WRAP(readdir);
	WRAP(readdirplus);
	WRAP(releasedir);
	WRAP(getxattr);
	return &outer;
}
