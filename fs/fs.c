/*
 * fs.c - the FUSE low-level operations on names and directories, and the
 * filesystem's lifecycle
 *
 * At mount the whole prefix is listed once and a watch keeps the mirror
 * current (live.c); each change invalidates exactly the kernel's entries
 * and inodes it touches.  With nowatch there is no watch: a directory is
 * listed again when it is opened and a file read again when it is opened,
 * so what the mount shows is as fresh as the last readdir or open.
 *
 * Files (open, read) are in file.c, writes and commits in commit.c,
 * setattr in attr.c, unlink and rename in move.c, extended attributes and
 * pins in xattr.c, statfs in statfs.c, the tree itself (no FUSE) in tree.c.
 *
 * What it cannot do: hard links, symbolic links, special files, and
 * renaming a directory of more keys than one transaction holds (EXDEV:
 * mv copies instead; see dirmove.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "quorum.h"
#include "names.h"

void fs_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

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
static void fill_entry(struct fs *fs, struct node *n, struct fuse_entry_param *e)
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
	fill_entry(fs, n, &e);
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

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	struct store_error err = { 0 };

	/*
	 * Without atomic O_TRUNC the kernel truncates with a setattr right
	 * after the open (see fs_truncate_path), whose reply, the committed
	 * size, it believes; with it, it would cut the size and the pages
	 * every reader shares.
	 */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	/* writes must reach us with the writer's pid, and one per write(2) */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* opens without a message (file.c), if the kernel can do them */
	if (fs->no_open && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT))
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
	else
		fs->no_open = false;
	/*
	 * Every listing carries its entries' attributes, so that reading
	 * each file of a directory sends no LOOKUP per file (the kernel's
	 * "auto" mode sends plain READDIR after the first batch, then a
	 * LOOKUP per name).
	 */
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (fs->cfg.delay_connect && !fs->loaded) {
		fs_connect_start(fs);	/* which goes live once loaded */
		return;
	}
	if (!fs->loaded && fs_load(fs, &err))
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot list the keys: %s\n",
			 err.msg);
	fs_go_live(fs);
}

void fs_go_live(struct fs *fs)
{
	int64_t from;

	if (fs->cfg.nowatch)
		return;
	if (kernel_has_session(&fs->kernel) && fs->cfg.mountpoint &&
	    echo_start(fs))
		fuse_log(FUSE_LOG_WARNING, "etcdfs: no echo thread: remote "
			 "changes will not show as inotify events\n");
	pthread_mutex_lock(&fs->lock);
	from = fs->tree.revision + 1;
	pthread_mutex_unlock(&fs->lock);
	fs_start_watch(fs, from);
}

static void fs_destroy(void *userdata)
{
	struct fs *fs = userdata;
	struct store_watch *w, *old[sizeof(fs->old) / sizeof(fs->old[0])];
	size_t i, nold;

	/* delay_connect's thread may be starting the watch: it goes first */
	fs_connect_stop(fs);
	/* taken under the lock: a relist may be replacing the watch */
	pthread_mutex_lock(&fs->lock);
	fs->stopping = true;
	w = fs->watch;
	fs->watch = NULL;
	nold = fs->nold;
	memcpy(old, fs->old, nold * sizeof(old[0]));
	fs->nold = 0;
	pthread_mutex_unlock(&fs->lock);
	/* a relist in w's thread sees stopping and returns: w's join ends */
	if (w)
		store_watch_stop(w);
	for (i = 0; i < nold; i++)
		store_watch_stop(old[i]);
	echo_stop(fs);
	fs_space_free(fs);
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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
	fill_entry(fs, n, &e);
	pthread_mutex_unlock(&fs->lock);
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		pthread_mutex_lock(&fs->lock);
		node_forget(&fs->tree, n, 1);
		pthread_mutex_unlock(&fs->lock);
	}
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = fs_of(req);

	pthread_mutex_lock(&fs->lock);
	if (ino != FUSE_ROOT_ID)
		node_forget(&fs->tree, node_of(fs, ino), nlookup);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count,
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

static void fs_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct stat st;

	pthread_mutex_lock(&fs->lock);
	node_fill_attr(fs, node_of(fs, ino), &st);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_attr(req, &st, fs->cfg.attr_timeout);
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

static void fs_opendir(fuse_req_t req, fuse_ino_t ino,
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
				fill_entry(fs, c, &e);
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

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, false);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, true);
}

static void fs_releasedir(fuse_req_t req, fuse_ino_t ino,
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
static void dir_handles_free(struct fs *fs)
{
	struct dir_handle *dh;

	while ((dh = fs->open_dirs)) {
		dir_handle_unlist(dh);
		free_dir_handle(dh);
	}
}

static void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	/* every change is committed to etcd before its call returns */
	fuse_reply_err(req, 0);
}

/* The path of @n from the root; malloc()ed. fs->lock held. */
static char *node_path(struct fs *fs, struct node *n, size_t *len)
{
	size_t total = 0, off;
	struct node *p;
	char *path;

	for (p = n; p && p != fs->tree.root; p = p->parent)
		total += p->name_len + 1;
	path = malloc(total + 1);
	if (!path)
		return NULL;
	off = total ? total - 1 : 0;
	path[off] = '\0';
	for (p = n; p && p != fs->tree.root; p = p->parent) {
		off -= p->name_len;
		memcpy(path + off, p->name, p->name_len);
		if (off) {
			off--;
			path[off] = '/';
		}
	}
	*len = total ? total - 1 : 0;
	return path;
}

/*
 * The key that (dir, name) stands for, checked to be the one canonical
 * name of that key: a directory gets its prefix (with the '/'), a file its
 * key.  -EINVAL for a name no key has.  fs->lock held.
 */
int fs_name_key(struct fs *fs, struct node *dir, const char *name,
		enum node_type type, char **key, size_t *key_len)
{
	size_t dlen, plen = 0, len = strlen(name);
	enum names_kind kind = names_component_kind(name, len);
	char *dpath, *path, *k;
	int ret;

	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	if (kind == NAMES_INVALID || kind == NAMES_PART ||
	    (kind == NAMES_VALUE_OF &&
	     (type == NODE_DIR || dir == fs->tree.root)))
		return -EINVAL;
	/* v2 has directory nodes: a key cannot be a directory's prefix too */
	if (kind == NAMES_VALUE_OF &&
	    strcmp(store_backend_name(fs->store), "etcd2") == 0)
		return -EINVAL;
	dpath = node_path(fs, dir, &dlen);
	if (!dpath)
		return -ENOMEM;
	path = malloc(dlen + len + 2);
	if (!path) {
		free(dpath);
		return -ENOMEM;
	}
	memcpy(path, dpath, dlen);
	if (dlen)
		path[dlen++] = '/';
	memcpy(path + dlen, name, len);
	plen = dlen + len;
	path[plen] = '\0';
	free(dpath);
	if (type == NODE_DIR)
		ret = names_dir_prefix(path, plen, &k, key_len);
	else
		ret = names_path_to_key(path, plen, &k, key_len);
	if (ret == 0 && kind == NAMES_PLAIN) {
		/* the last component must be what the key encodes to */
		size_t klen = type == NODE_DIR ? *key_len - 1 : *key_len;
		size_t elen;
		char *enc = names_key_to_path(k, klen, &elen);

		if (!enc)
			ret = -ENOMEM;
		else if (elen != plen || memcmp(enc, path, plen) != 0)
			ret = -EINVAL;
		free(enc);
		if (ret)
			free(k);
	}
	free(path);
	if (ret == 0)
		*key = k;
	return ret;
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

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
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

static void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
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

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	if (fs_name_too_long(newname))
		fuse_reply_err(req, ENAMETOOLONG);
	else
		fuse_reply_err(req, fs_of(req)->cfg.ro ? EROFS : EPERM);
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	if (fs_name_too_long(name))
		fuse_reply_err(req, ENAMETOOLONG);
	else
		fuse_reply_err(req, fs_of(req)->cfg.ro ? EROFS : EPERM);
}

static const struct fuse_lowlevel_ops ops = {
	.init = fs_init,
	.destroy = fs_destroy,
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.mkdir = fs_mkdir,
	.rmdir = fs_rmdir,
	.unlink = fs_unlink,
	.rename = fs_rename,
	.link = fs_link,
	.symlink = fs_symlink,
	.mknod = fs_mknod,
	.create = fs_create,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.fsync = fs_fsync,
	.release = fs_release,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.statfs = fs_statfs,
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
};

const struct fuse_lowlevel_ops *fs_ops(void)
{
	return fs_gate_ops(&ops);	/* counted, traced, gated */
}

struct fs *fs_new(const struct fs_config *cfg)
{
	struct fs *fs = calloc(1, sizeof(*fs));
	pthread_condattr_t ca;

	if (!fs)
		return NULL;
	fs->cfg = *cfg;
	fs->store = cfg->store;
	fs->no_open = fs_no_open_mode(cfg);
	/* the mount checked the patterns: only ENOMEM is left */
	if (temp_names_parse(cfg->temp_names, &fs->temp)) {
		free(fs);
		return NULL;
	}
	kernel_init(&fs->kernel);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->echo_lock, NULL);
	pthread_mutex_init(&fs->replay_lock, NULL);
	pthread_cond_init(&fs->echo_cond, NULL);
	pthread_cond_init(&fs->inflight_cond, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->echo_follow.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (tree_init(&fs->tree, cfg->value_budget, fs_now, kernel_node_id)) {
		temp_names_free(fs->temp);
		free(fs);
		return NULL;
	}
	/* the kernel's reference to the root, which it never forgets */
	fs->tree.root->nlookup = 1;
	fs->mounted = fs->tree.root->mtime;
	if (fs_gate_new(fs) || quorum_new(fs)) {
		fs_gate_free(fs);
		tree_release(&fs->tree);
		temp_names_free(fs->temp);
		free(fs);
		return NULL;
	}
	return fs;
}

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	fs_destroy(fs);
	fs_handles_free(fs);
	dir_handles_free(fs);
	/* the session is gone: every node still in the tree goes with it */
	tree_release(&fs->tree);
	pins_free(fs);
	own_changes_free(fs);
	history_free(fs);
	temp_names_free(fs->temp);
	inval_release(&fs->pending_invals);
	fs_gate_free(fs);
	quorum_free(fs);
	pthread_cond_destroy(&fs->echo_cond);
	pthread_cond_destroy(&fs->inflight_cond);
	pthread_cond_destroy(&fs->echo_follow.cond);
	pthread_mutex_destroy(&fs->replay_lock);
	pthread_mutex_destroy(&fs->echo_lock);
	pthread_mutex_destroy(&fs->lock);
	kernel_release(&fs->kernel);
	free(fs);
}
