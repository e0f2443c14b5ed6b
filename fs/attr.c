/*
 * attr.c - setattr: sizes, modes, owners and times of files
 *
 * A size goes to the open file's buffer (ftruncate, open with O_TRUNC) or
 * is committed at once (truncate of a path, commit.c).  etcd keeps no
 * mode, owner or time of a key: chmod and chown that change nothing
 * succeed, others fail with EPERM unless -o chmod_ok.
 *
 * What it cannot do: store a mode, an owner or a time in etcd.
 */
#include <errno.h>

#include "fs_i.h"

static struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * The errno of a commit that failed on the file a setattr is about: the
 * open file it came through, or, for a new file not in etcd yet, any file
 * open on it (utimensat and fchmod do not say which).  0 if none.
 * fs->lock held.
 */
static int failed_commit(struct node *n, struct fuse_file_info *fi)
{
	struct handle *h = fi ? handle_of(fi) : NULL;

	if (h && !h->echo && h->failed_err)
		return h->failed_err;
	if (!n->pending)
		return 0;
	for (h = n->handles; h; h = h->nnext)
		if (h->failed_err)
			return h->failed_err;
	return 0;
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct node *n;
	struct stat st;
	bool echo;
	int err = 0, failed;

	pthread_mutex_lock(&fs->lock);
	n = node_of(fs, ino);
	node_fill_attr(fs, n, &st);
	echo = echo_of(fs, req) != NULL;
	failed = failed_commit(n, fi);
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
		fuse_reply_err(req, failed);
		return;
	}
	/* chmod and chown that change nothing succeed: cp and sed call them */
	if ((to_set & FUSE_SET_ATTR_MODE) && !fs->cfg.chmod_ok &&
	    (attr->st_mode & 07777) != (st.st_mode & 07777))
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
	/* times follow revisions: setting them is accepted and forgotten */
	pthread_mutex_lock(&fs->lock);
	node_fill_attr(fs, n, &st);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_attr(req, &st, fs->cfg.attr_timeout);
}
