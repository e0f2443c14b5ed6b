/*
 * dir.c - the FUSE operations on names and directories: lookup, forget,
 * opendir, readdir(plus), releasedir, mkdir, rmdir, and the refusals of
 * link and symlink
 *
 * A lookup answers from the mirror (a negative entry, cached until the
 * watch says otherwise, for a name it does not hold); with nowatch or
 * -o quorum it reads etcd first (live.c's fs_lookup_key).  An open
 * directory lists a snapshot of its entries, taken at the first readdir,
 * so that offsets stay meaningful while keys come and go.  mkdir and
 * rmdir change the mirror, and etcd only on a backend with directories
 * (v2).
 *
 * What it cannot do: hard links, symbolic links and special files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "ops.h"
#include "names.h"
#include "quorum.h"

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct echo_ev *echo;
	struct node *dir, *n;
	size_t len = strlen(name);
	bool refreshed = false;
	int err = 0;

	if (len > NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (names_component_kind(name, len) == NAMES_INVALID) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&fs->lock);
again:
	err = -dir_of(fs, parent, &dir);
	if (err) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, err);
		return;
	}
	n = tree_child(&fs->tree, dir, name, len);
	echo = echo_of(fs, req);
	/* the echo sees the names of its change as they were before it */
	if (echo && (err = echo_lookup(fs, echo, dir, name, &n)) < 0) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, -err);
		return;
	}
	if (!n && (fs->cfg.nowatch || quorum_reads_etcd(fs)) && !refreshed) {
		/* without a watch (or a barrier) the tree may be old */
		int ret = fs_lookup_key(fs, dir, name);

		if (ret && ret != -ENOENT) {
			pthread_mutex_unlock(&fs->lock);
			fuse_reply_err(req, -ret);
			return;
		}
		refreshed = true;
		goto again;
	}
	if (!n) {
		bool uncached = fs->cfg.nowatch || echo_names(fs, dir, name);

		pthread_mutex_unlock(&fs->lock);
		if (uncached) {
			fuse_reply_err(req, ENOENT);
			return;
		}
		/* a negative entry, cached until the watch says otherwise */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->cfg.entry_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	fs_fill_entry(fs, n, &e);
	/* the echo's old name of a node renamed since: not to be cached */
	if (echo && tree_child(&fs->tree, dir, name, len) != n)
		e.entry_timeout = 0;
	pthread_mutex_unlock(&fs->lock);
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		pthread_mutex_lock(&fs->lock);
		node_forget(&fs->tree, n, 1);
		pthread_mutex_unlock(&fs->lock);
	}
}

void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = fs_of(req);

	pthread_mutex_lock(&fs->lock);
	if (ino != FUSE_ROOT_ID)
		node_forget(&fs->tree, node_of(fs, ino), nlookup);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_none(req);
}

void fs_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct fs *fs = fs_of(req);
	size_t i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < count; i++) {
		if (forgets[i].ino != FUSE_ROOT_ID)
			node_forget(&fs->tree, node_of(fs, forgets[i].ino),
				    forgets[i].nlookup);
	}
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_none(req);
}

struct dirent_snap {
	char *name;
	uint64_t ino;
	mode_t type;
};

/*
 * An open directory: its entries as they were at the first readdir, so
 * that offsets stay meaningful while keys come and go.  When the kernel
 * has the listing cached (cache_readdir) it sends no readdir, and no
 * snapshot is ever made.
 */
struct dir_handle {
	struct node *dir;
	struct dirent_snap *ents;
	size_t n;
	bool snapped;
	struct dir_handle *next;	/* in fs->open_dirs, under fs->lock */
	struct dir_handle **prev;
};

/* Into fs->open_dirs; fs->lock held. */
static void dir_handle_list(struct fs *fs, struct dir_handle *dh)
{
	dh->next = fs->open_dirs;
	dh->prev = &fs->open_dirs;
	if (fs->open_dirs)
		fs->open_dirs->prev = &dh->next;
	fs->open_dirs = dh;
}

/* Out of fs->open_dirs: fs->lock held, or the session over. */
static void dir_handle_unlist(struct dir_handle *dh)
{
	*dh->prev = dh->next;
	if (dh->next)
		dh->next->prev = dh->prev;
}

static void free_dir_handle(struct dir_handle *dh)
{
	size_t i;

	for (i = 0; i < dh->n; i++)
		free(dh->ents[i].name);
	free(dh->ents);
	free(dh);
}

static int snap_add(struct dir_handle *dh, size_t *cap, const char *name,
		    uint64_t ino, mode_t type)
{
	if (dh->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct dirent_snap *v = realloc(dh->ents, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		dh->ents = v;
		*cap = nc;
	}
	dh->ents[dh->n].name = strdup(name);
	if (!dh->ents[dh->n].name)
		return -ENOMEM;
	dh->ents[dh->n].ino = ino;
	dh->ents[dh->n].type = type;
	dh->n++;
	return 0;
}

void fs_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct dir_handle *dh = calloc(1, sizeof(*dh));
	struct node *dir;
	int err = 0;

	if (!dh) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	err = -dir_of(fs, ino, &dir);
	if (err)
		goto out_unlock;
	dir->refs++;
	dh->dir = dir;
	if (fs->cfg.nowatch || quorum_reads_etcd(fs)) {
		pthread_mutex_unlock(&fs->lock);
		err = -fs_refresh_dir(fs, dir);
		pthread_mutex_lock(&fs->lock);
		if (err)
			goto out_unref;
	}
	dir_handle_list(fs, dh);
	pthread_mutex_unlock(&fs->lock);
	fi->fh = (uint64_t)(uintptr_t)dh;
	/*
	 * With the watch, the kernel may keep the listing: every name that
	 * comes or goes invalidates the directory's inode (tree.c), and the
	 * kernel drops the listing itself on the mount's own changes.  With
	 * quorum the listing is made again at each open: an invalidation
	 * may still be on its way when the barrier lets the open through.
	 */
	fi->cache_readdir = !fs->cfg.nowatch;
	fi->keep_cache = !fs->cfg.nowatch && !fs->cfg.quorum;
	fuse_reply_open(req, fi);
	return;
out_unref:
	node_unref(&fs->tree, dir);
out_unlock:
	pthread_mutex_unlock(&fs->lock);
	free_dir_handle(dh);
	fuse_reply_err(req, err);
}

/* Takes the snapshot of dh's directory; fs->lock held. */
static int snap_dir(struct dir_handle *dh)
{
	struct node *dir = dh->dir, *c;
	size_t cap = 0;

	if (snap_add(dh, &cap, ".", dir->ino, S_IFDIR) ||
	    snap_add(dh, &cap, "..",
		     dir->parent ? dir->parent->ino : dir->ino, S_IFDIR))
		return -ENOMEM;
	for (c = dir->child; c; c = c->next)
		if (snap_add(dh, &cap, c->name, c->ino,
			     c->type == NODE_DIR ? S_IFDIR : S_IFREG))
			return -ENOMEM;
	dh->snapped = true;
	return 0;
}

static void do_readdir(fuse_req_t req, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = fs_of(req);
	struct dir_handle *dh = (struct dir_handle *)(uintptr_t)fi->fh;
	char *buf = malloc(size), *p = buf;
	/*
	 * The nodes this reply gives the kernel a lookup of (READDIRPLUS):
	 * should the reply not reach it (the request was interrupted), the
	 * lookups are taken back.  An entry takes more than 128 bytes.
	 */
	struct node **given = plus ? calloc(size / 128 + 1, sizeof(*given)) :
			      NULL;
	size_t left = size, i, ngiven = 0;

	if (!buf || (plus && !given)) {
		free(buf);
		free(given);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	if (!dh->snapped && snap_dir(dh)) {
		pthread_mutex_unlock(&fs->lock);
		free(buf);
		free(given);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = (size_t)off; i < dh->n; i++) {
		struct dirent_snap *d = &dh->ents[i];
		size_t used;

		if (plus) {
			struct fuse_entry_param e = { 0 };
			struct node *c = NULL;

			if (i >= 2) {
				c = tree_child(&fs->tree, dh->dir, d->name,
					       strlen(d->name));
				if (!c)
					continue;
				fs_fill_entry(fs, c, &e);
			} else {
				e.attr.st_ino = d->ino;
				e.attr.st_mode = d->type;
			}
			used = fuse_add_direntry_plus(req, p, left, d->name,
						      &e, (off_t)(i + 1));
			if (used > left || (c && ngiven > size / 128)) {
				if (c)
					node_forget(&fs->tree, c, 1);
				break;
			}
			if (c)
				given[ngiven++] = c;
		} else {
			struct stat st = { 0 };

			st.st_ino = d->ino;
			st.st_mode = d->type;
			used = fuse_add_direntry(req, p, left, d->name, &st,
						 (off_t)(i + 1));
			if (used > left)
				break;
		}
		p += used;
		left -= used;
	}
	pthread_mutex_unlock(&fs->lock);
	if (fuse_reply_buf(req, buf, size - left) != 0 && ngiven) {
		pthread_mutex_lock(&fs->lock);
		for (i = 0; i < ngiven; i++)
			node_forget(&fs->tree, given[i], 1);
		pthread_mutex_unlock(&fs->lock);
	}
	free(given);
	free(buf);
}

void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, false);
}

void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, true);
}

void fs_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct dir_handle *dh = (struct dir_handle *)(uintptr_t)fi->fh;

	pthread_mutex_lock(&fs->lock);
	echo_dir_walked(fs, req, dh->dir);
	node_unref(&fs->tree, dh->dir);
	dir_handle_unlist(dh);
	pthread_mutex_unlock(&fs->lock);
	free_dir_handle(dh);
	fuse_reply_err(req, 0);
}

/*
 * The directories whose RELEASEDIR never came (a signal ended the
 * session with the kernel's RELEASEDIR still queued): the session is
 * over, and the tree goes next.
 */
void dir_handles_free(struct fs *fs)
{
	struct dir_handle *dh;

	while ((dh = fs->open_dirs)) {
		dir_handle_unlist(dh);
		free_dir_handle(dh);
	}
}

void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	/* every change is committed to etcd before its call returns */
	fuse_reply_err(req, 0);
}

/*
 * A backend with directories (etcd v2) makes or removes @n's in etcd too;
 * the others (v3) have none, and the directory lives in the mount.
 * fs->lock held, and dropped for the request.  0, or -errno (logged);
 * a directory already there, or already gone, is no failure, but one that
 * still holds keys cannot be removed (ENOTEMPTY).
 */
static int dir_op(struct fs *fs, struct node *n, bool make)
{
	struct store_error serr = { 0 };
	size_t len = n->key_len ? n->key_len - 1 : 0;
	char *key = malloc(len + 1);
	int ret;

	if (!key)
		return -ENOMEM;
	memcpy(key, n->key, len);
	n->refs++;
	pthread_mutex_unlock(&fs->lock);
	ret = make ? store_mkdir(fs->store, key, len, NULL, &serr) :
		     store_rmdir(fs->store, key, len, NULL, &serr);
	pthread_mutex_lock(&fs->lock);
	n->refs--;
	free(key);
	if (!make && ret == STORE_EEXISTS)
		return -ENOTEMPTY;	/* keys below it that we do not know */
	if (ret == STORE_ENOTSUP || ret == STORE_EEXISTS ||
	    ret == STORE_ENOTFOUND)
		return 0;
	if (ret)
		fs_log_store_error(make ? "cannot make directory" :
				"cannot remove directory", &serr);
	return ret ? fs_errno(ret) : 0;
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct fs *fs = fs_of(req);
	struct node *dir, *n;
	struct echo_ev *echo;
	char *key;
	size_t key_len;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	echo = echo_of(fs, req);
	if (fs->cfg.ro && !echo) {
		err = EROFS;
		goto out;
	}
	err = -dir_of(fs, parent, &dir);
	if (err)
		goto out;
	if (echo) {
		/* another client's key made it: the mirror has it already */
		n = echo_make(fs, echo, dir, name, NODE_DIR);
		if (!n) {
			err = EEXIST;
			goto out;
		}
		n->refs++;	/* until the entry's lookup holds it */
		pthread_mutex_unlock(&fs->lock);
		fs_reply_entry_unref(fs, req, n);
		return;
	}
	/* a rename of dir in flight: the new name takes its new prefix */
	err = -dirmove_wait(fs, dir);
	if (err)
		goto out;
	if (tree_child(&fs->tree, dir, name, strlen(name))) {
		err = EEXIST;
		goto out;
	}
	err = -fs_name_key(fs, dir, name, NODE_DIR, &key, &key_len);
	if (err)
		goto out;
	n = tree_new_node(&fs->tree, dir, name, strlen(name), NODE_DIR);
	if (!n) {
		free(key);
		err = ENOMEM;
		goto out;
	}
	n->key = key;
	n->key_len = key_len;
	n->local = true;
	err = -dir_op(fs, n, true);
	if (err) {
		if (!n->removed)
			node_drop(&fs->tree, n);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, err);
		return;
	}
	n->refs++;	/* until the entry's lookup holds it */
	pthread_mutex_unlock(&fs->lock);
	fs_reply_entry_unref(fs, req, n);
	return;
out:
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, err);
}

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct inval_list inv = { 0 };
	struct node *dir, *n;
	struct echo_ev *echo;
	int err = 0;

	if (fs_name_too_long(name)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	echo = echo_of(fs, req);
	if (fs->cfg.ro && !echo) {
		err = EROFS;
		goto out;
	}
	err = -dir_of(fs, parent, &dir);
	if (err)
		goto out;
	if (echo) {
		/* pruned with another client's key: gone from the mirror */
		if (!echo_remove(fs, echo, dir, name, NODE_DIR))
			err = ENOTEMPTY;
		goto out;
	}
	n = tree_child(&fs->tree, dir, name, strlen(name));
	if (!n)
		err = ENOENT;
	else if (n->type != NODE_DIR)
		err = ENOTDIR;
	else if (n->nchildren)
		err = ENOTEMPTY;
	if (err)
		goto out;
	/* only a mkdir'd directory can be empty: the others are pruned */
	err = -dir_op(fs, n, false);
	if (err)
		goto out;
	if (!n->removed)
		node_drop(&fs->tree, n);
	tree_keep(&fs->tree, dir);
out:
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, err);
	fs_send_invals(fs, &inv);
}

void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	if (fs_name_too_long(newname))
		fuse_reply_err(req, ENAMETOOLONG);
	else
		fuse_reply_err(req, fs_of(req)->cfg.ro ? EROFS : EPERM);
}

void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	if (fs_name_too_long(name))
		fuse_reply_err(req, ENAMETOOLONG);
	else
		fuse_reply_err(req, fs_of(req)->cfg.ro ? EROFS : EPERM);
}
