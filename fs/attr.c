/*
 * attr.c - getattr and setattr: what stat shows of a node (also in the
 * entries that lookups, creates and readdirplus reply), and sizes, modes,
 * owners and times set
 *
 * A size goes to the open file's buffer (ftruncate, open with O_TRUNC) or
 * is committed at once (truncate of a path, commit.c).  etcd keeps no
 * mode, owner or time of a key: times set by utimensat are kept in the
 * mirror until the key's next revision (or a write), and a rename keeps
 * them; the mode of a file that lives in memory (temp files, mkdir'd
 * directories) is kept with it.  chmod of a key and chown that change
 * nothing succeed, others fail with EPERM unless -o chmod_ok.
 *
 * What it cannot do: store a mode, an owner or a time in etcd, so none
 * outlives the mount.
 */
#include <errno.h>
#include <sys/stat.h>

#include "fs_i.h"
#include "ops.h"

void node_fill_attr(struct fs *fs, struct node *n, struct stat *st)
{
	/*
	 * A removed node of the change the echo replays is, for the kernel,
	 * still there until the echo's unlink or rmdir: with no link, the
	 * kernel would drop inotify's watches of it first (DELETE_SELF)
	 */
	bool removed = n->removed && !echo_holds(fs, n);

	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = fs->cfg.uid;
	st->st_gid = fs->cfg.gid;
	st->st_blksize = 4096;
	if (n->type == NODE_DIR) {
		st->st_mode = S_IFDIR | (0777 & ~fs->cfg.umask);
		/* "." and the entry in its parent, and each child's ".." */
		st->st_nlink = removed ? 0 : 2 + n->ndirs;
		st->st_mtim = n->mtime;
	} else {
		st->st_mode = S_IFREG | (0666 & ~fs->cfg.umask);
		st->st_nlink = removed ? 0 : 1;
		/* what etcd has, or what a writer holds (commit.c) */
		st->st_size = (off_t)n->size;
		st->st_blocks = (st->st_size + 511) / 512;
		st->st_mtim = n->mtime;
		codec_fill_attr(n, st);		/* a decoded view's (codec.c) */
		node_writer_attr(n, st);
	}
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
	node_kept_attr(n, st);		/* set by utimensat, chmod (attr.c) */
	if (fs->cfg.ro)
		st->st_mode &= ~0222;
}

/* Fills @e for @n and counts the kernel's new reference; fs->lock held. */
void fs_fill_entry(struct fs *fs, struct node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = node_id(fs, n);
	/* a removed node (the echo's, see echo_lookup) is not cached */
	e->attr_timeout = n->removed ? 0 : fs->cfg.attr_timeout;
	e->entry_timeout = n->removed ? 0 : fs->cfg.entry_timeout;
	node_fill_attr(fs, n, &e->attr);
	n->nlookup++;
}

void fs_reply_entry_unref(struct fs *fs, fuse_req_t req, struct node *n)
{
	struct fuse_entry_param e;

	pthread_mutex_lock(&fs->lock);
	fs_fill_entry(fs, n, &e);
	/* the entry's lookup holds it now: the caller's reference may go */
	node_unref(&fs->tree, n);
	pthread_mutex_unlock(&fs->lock);
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		/* the request was interrupted: the kernel took no reference */
		pthread_mutex_lock(&fs->lock);
		node_forget(&fs->tree, n, 1);
		pthread_mutex_unlock(&fs->lock);
	}
}

void fs_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct stat st;

	pthread_mutex_lock(&fs->lock);
	node_fill_attr(fs, node_of(fs, ino), &st);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_attr(req, &st, fs->cfg.attr_timeout);
}

/*
 * The -errno of a commit that failed on the file a setattr is about: the
 * open file it came through, or, for a new file not in etcd yet, any file
 * open on it (utimensat and fchmod do not say which).  0 if none.
 * fs->lock held.
 */
static int failed_commit(struct node *n, struct fuse_file_info *fi)
{
	struct handle *h = fi ? handle_of(fi) : NULL;

	if (h && !h->echo && h->failed_err)
		return -h->failed_err;
	if (!n->pending)
		return 0;
	for (h = n->handles; h; h = h->nnext)
		if (h->failed_err)
			return -h->failed_err;
	return 0;
}

/*
 * utimensat: the times go to the mirror, and to each writer that holds
 * what etcd does not have yet, whose commit keeps them.  fs->lock held.
 */
static int set_times(struct fs *fs, struct node *n, const struct stat *attr,
		     int to_set)
{
	struct timespec now, atime = attr->st_atim, mtime = attr->st_mtim;
	unsigned what = 0;
	struct handle *h;

	fs_now(&now);
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
		what |= ATTR_SET_ATIME;
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		what |= ATTR_SET_MTIME;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		atime = now;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		mtime = now;
	for (h = n->handles; h; h = h->nnext) {
		if (h->local || h->dropped ||
		    !(h->dirty || h->truncated || h->failed_err || n->pending))
			continue;
		h->set_times |= what;
		if (what & ATTR_SET_ATIME)
			h->set_atime = atime;
		if (what & ATTR_SET_MTIME)
			h->set_mtime = h->shown_mtime = mtime;
	}
	return node_set_times(n, what, &atime, &mtime);
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct node *n;
	struct stat st;
	bool echo, mode_local;
	int err = 0, failed;

	pthread_mutex_lock(&fs->lock);
	n = node_of(fs, ino);
	node_fill_attr(fs, n, &st);
	echo = echo_of(fs, req) != NULL;
	failed = failed_commit(n, fi);
	/* a file in memory keeps its mode there (rsync's temp files) */
	mode_local = (to_set & FUSE_SET_ATTR_MODE) && n->local;
	pthread_mutex_unlock(&fs->lock);

	if (echo) {
		/* the echo's truncation: the mirror has the value already */
		fuse_reply_attr(req, &st, fs->cfg.attr_timeout);
		return;
	}
	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* touch of a file whose creation failed: it is in no etcd */
	if (failed && (to_set & ~FUSE_SET_ATTR_SIZE)) {
		fuse_reply_err(req, -failed);
		return;
	}
	/* chmod and chown that change nothing succeed: cp and sed call them */
	if ((to_set & FUSE_SET_ATTR_MODE) && !mode_local &&
	    !fs->cfg.chmod_ok && (attr->st_mode & 07777) != (st.st_mode & 07777))
		err = EPERM;
	if ((to_set & FUSE_SET_ATTR_UID) && !fs->cfg.chmod_ok &&
	    attr->st_uid != st.st_uid)
		err = EPERM;
	if ((to_set & FUSE_SET_ATTR_GID) && !fs->cfg.chmod_ok &&
	    attr->st_gid != st.st_gid)
		err = EPERM;
	if (!err && (to_set & FUSE_SET_ATTR_SIZE)) {
		if (n->type == NODE_DIR)
			err = EISDIR;
		else if (fi)
			err = -fs_truncate_open(fs, fi, attr->st_size);
		else
			err = -fs_truncate_path(fs, n, attr->st_size,
						fuse_req_ctx(req)->pid);
	}
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	if (mode_local && !n->local) {
		/* saved over a key meanwhile: as a key's chmod */
		node_fill_attr(fs, n, &st);
		if (!fs->cfg.chmod_ok &&
		    (attr->st_mode & 07777) != (st.st_mode & 07777))
			err = EPERM;
	} else if (mode_local) {
		if (node_rare(n)) {
			n->rare->mode = attr->st_mode & 07777;
			n->rare->mode_set = true;
		} else {
			err = ENOMEM;
		}
	}
	if (!err && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			       FUSE_SET_ATTR_ATIME_NOW |
			       FUSE_SET_ATTR_MTIME_NOW)))
		err = -set_times(fs, n, attr, to_set);
	node_fill_attr(fs, n, &st);
	pthread_mutex_unlock(&fs->lock);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, fs->cfg.attr_timeout);
}
