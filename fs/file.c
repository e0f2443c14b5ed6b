/*
 * file.c - the FUSE operations on files: open, create, mknod, read,
 * write, flush, fsync, release
 *
 * An open file of a key holds its own copy of the value, taken at open
 * (handle.c), so what it reads never changes under it.  Writes go to that
 * copy, which commit.c commits to etcd.
 *
 * Temp files of editors and tools (fs/temp.h) live in memory only:
 * their content is the node's value, shared by every open file.
 *
 * Readers read through the kernel's page cache, so they can map a file
 * shared; writers bypass it (direct_io), since what they write is theirs
 * until committed.
 *
 * What it cannot do: map a file open for writing shared (MAP_SHARED: the
 * kernel answers ENODEV, as libfuse 3.14 cannot ask for direct_io maps),
 * nor store a value over the cluster's limit (EFBIG at write time).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "ops.h"
#include "names.h"
#include "quorum.h"

/* The largest value pushed into the kernel's pages at its first open. */
#define STORE_PAGES_MAX (128 * 1024)

/* Has any local temp file of @dir a key moved away to it? fs->lock held. */
static struct node *find_ghost(struct node *dir, const char *key,
			       size_t key_len)
{
	struct node *c;

	for (c = dir->child; c; c = c->next) {
		if (c->local && node_ghost(c) &&
		    c->rare->ghost_key_len == key_len &&
		    memcmp(c->rare->ghost_key, key, key_len) == 0)
			return c;
	}
	return NULL;
}

/*
 * The first reader of revision @rev of @n (@ino): the kernel's pages and
 * attributes of the inode may be another revision's, and are dropped
 * before the open returns, so that what the reader reads and maps, and
 * every reader after it, is this revision.  True if the pages may be
 * used then: the revision is still @rev and no writer opened meanwhile.
 * No lock held; @n is referenced by the reader's handle.
 */
static bool drop_pages(struct fs *fs, struct node *n, fuse_ino_t ino,
		       int64_t rev)
{
	int ret = fs_notify_inval_inode(fs, ino, 0, 0);
	bool ok;

	pthread_mutex_lock(&fs->lock);
	/* -ENOENT: the kernel has no such inode, and no pages of it */
	ok = (ret == 0 || ret == -ENOENT) && n->mod_revision == rev &&
	     !n->handles;
	if (ok)
		n->cache_rev = rev;
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

/*
 * The first reader of an inode the kernel never had pages of: its pages
 * are filled with the reader's copy (of revision @rev) before the open
 * returns, so that it sends no READ, and its reads mark no atime stale
 * (which costs every later stat a GETATTR).  @n->cache_rev is
 * CACHE_UNKNOWN meanwhile: no other reader relies on the pages until
 * they are known, and none can be reading them (a READ in flight would
 * hold their lock, and the store would wait for it).  True if the pages
 * may be used then, as drop_pages.  No lock held.
 */
static bool store_pages(struct fs *fs, struct node *n, fuse_ino_t ino,
			struct handle *h, int64_t rev)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(h->len);
	int ret = 0;
	bool ok;

	bv.buf[0].mem = h->buf;
	if (h->len)
		ret = fs_notify_store(fs, ino, 0, &bv);
	if (ret)
		return drop_pages(fs, n, ino, rev);
	if (h->len)
		fs_stats_stored(fs);
	pthread_mutex_lock(&fs->lock);
	ok = n->mod_revision == rev && !n->handles &&
	     n->cache_rev == CACHE_UNKNOWN;
	n->cache_rev = ok ? rev : CACHE_UNKNOWN;
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

/*
 * Is @n an inode the mirror replaced (a change of the key, here or by
 * another client, while files were open on it; or the key deleted and
 * made again), which an open by thread @tid should not start from?  Such
 * an open came by a name the kernel has not yet been told leads elsewhere
 * (the invalidation is on its way), or by an open file (/proc/PID/fd/N).
 * ESTALE has the kernel walk the path once more, asking the daemon for
 * each name (LOOKUP_REVAL): a name leads to the key's inode now, whose
 * pages hold its value, so a reader maps it shared, and a writer starts
 * from its revision rather than conflict with a change the mirror had
 * before the open.  An open by an open file comes back to @n, from the
 * same thread, and is let through: a reader reads the key's node now,
 * around the pages (fs_open); a writer writes over @n's revision.  The
 * last few such ESTALEs are remembered (fs->estale); the retry of one
 * pushed out by more than that many others meanwhile gets ESTALE.
 * fs->lock held.
 */
static bool stale_name(struct fs *fs, const struct node *n, pid_t tid)
{
	const size_t nslots = sizeof(fs->estale) / sizeof(fs->estale[0]);
	size_t i;

	if (!n->removed || n->pending || n->local ||
	    !tree_find_key(&fs->tree, n->key, n->key_len))
		return false;
	for (i = 0; i < nslots; i++) {
		if (fs->estale[i].node == n && fs->estale[i].tid == tid) {
			fs->estale[i].node = NULL;
			return false;
		}
	}
	i = fs->estale_next++ % nslots;
	fs->estale[i].node = n;
	fs->estale[i].tid = tid;
	return true;
}

bool fs_no_open_mode(const struct fs_config *cfg)
{
	return cfg->ro && !cfg->codec && !cfg->quorum &&
	       (cfg->revision || (!cfg->nowatch && !cfg->value_budget));
}

/*
 * A file was opened with O_TRUNC and closed unwritten: its empty value is
 * committed at its last close, which follows at once, or it is written
 * to; either way, a reader of @n waits a moment (a second at most).
 * fs->lock held, dropped meanwhile.
 */
static void open_wait_truncation(struct fs *fs, struct node *n)
{
	struct timespec until;

	if (!n->trunc_waiting)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	while (n->trunc_waiting &&
	       pthread_cond_timedwait(&fs->mirror.inflight_cond, &fs->lock,
				      &until) != ETIMEDOUT)
		;
}

/*
 * What the handle of an open of @n starts from, in *@srcp: @n, or for a
 * reader of an inode replaced meanwhile, the key's node now.  It is read
 * again first for nowatch and v2's quorum (v3's passed the barrier,
 * quorum.c), and when the value budget evicted its value (unless the
 * open truncates it anyway).  fs->lock held, dropped meanwhile; 0, or
 * -ENOENT if it was deleted while it was read again (or evicted and
 * removed), or another -errno.
 */
static int open_source(struct fs *fs, struct node *n, bool echo, bool wr,
		       bool trunc, struct node **srcp)
{
	struct node *src = n;
	bool refreshed;
	int err;

	for (refreshed = false;; refreshed = true) {
		if (!echo && !wr && src->removed && !src->pending &&
		    !src->local)
			src = tree_find_key(&fs->tree, n->key,
					    n->key_len) ?: src;
		if (echo || src->local || src->pending || src->removed)
			break;
		if ((src->value || trunc) &&
		    (refreshed || (!fs->cfg.nowatch && !quorum_reads_etcd(fs))))
			break;
		err = refreshed ? -EIO : fs_refresh_file(fs, src);
		if (err)
			return err;
	}
	if (!echo && !src->local && !src->pending && !src->value && !trunc)
		return -ENOENT;
	if (refreshed && src->removed && !src->pending && !src->local)
		return -ENOENT;
	*srcp = src;
	return 0;
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	bool wr = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	bool trunc = fi->flags & O_TRUNC;
	struct inval_list inv = { 0 };
	struct echo_ev *echo;
	bool paged, fill, store, coded;
	struct handle *h;
	struct node *n, *src;
	int64_t rev;
	int err;

	if (fs->no_open) {
		/* the kernel opens every file without asking from now on */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	n = node_of(fs, ino);
	echo = echo_of(fs, req);
	if (wr && fs->cfg.ro && !echo) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, EROFS);
		return;
	}
	if (n->type == NODE_DIR) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* a writer starts from the last close's commit, still in flight */
	if (wr && !echo && !n->local)
		inflight_wait(fs, n);
	/* another client changed it: the mirror has it, the echo opens it */
	if (echo && (echo->del || n->key_len != echo->kv.key_len ||
		     memcmp(n->key, echo->kv.key, n->key_len) != 0))
		echo = NULL;
	if (!echo && !wr)
		open_wait_truncation(fs, n);
	if (!echo && stale_name(fs, n, fuse_req_ctx(req)->pid)) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, ESTALE);
		return;
	}
	err = open_source(fs, n, echo != NULL, wr, trunc, &src);
	if (err) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, -err);
		return;
	}
	node_touch(&fs->tree, src);
	h = echo || wr ? handle_new(fs, n, fi, fuse_req_ctx(req)->pid,
				    echo != NULL)
		       : handle_new_from(fs, n, src, fi, fuse_req_ctx(req)->pid);
	/*
	 * Readers read through the kernel's pages of the inode, and so can
	 * map it shared.  The pages are good if they are of the revision the
	 * mirror has (cache_rev) and no writer is open (see handle_new);
	 * else the kernel drops them first (drop_pages).  A reader of an
	 * inode replaced meanwhile, or one that opens while the file is open
	 * for writing, reads around them (direct_io) and cannot map the file
	 * shared (ENODEV); nor can a writer: its data is its own until
	 * committed, so writers never go through the pages readers share.
	 */
	rev = n->mod_revision;
	/* a decoded view is not the size stat shows: around the pages */
	coded = h && !h->local && !echo && codec_key(fs, n->key, n->key_len);
	paged = !wr && h && !h->local && rev > 0 && src == n && !n->handles &&
		kernel_has_session(&fs->kernel) &&
		n->cached_readers < USHRT_MAX && !coded;
	store = paged && n->cache_rev == 0 && h->len <= STORE_PAGES_MAX;
	fill = paged && !store && n->cache_rev != rev;
	if (store)
		n->cache_rev = CACHE_UNKNOWN;	/* until store_pages is done */
	if (paged) {
		/*
		 * A writer's size is not shown while it reads (commit.c);
		 * counted until it closes even if drop_pages turns it
		 * away from the pages, which only hides a size longer.
		 */
		h->cached = true;
		n->cached_readers++;
	}
	pthread_mutex_unlock(&fs->lock);
	inval_release(&inv);
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = coded && !trunc ? codec_view_open(fs, h, ino) : 0;
	if (err) {
		handle_free(fs, h);
		fuse_reply_err(req, -err);
		return;
	}
	if (store)
		paged = store_pages(fs, n, ino, h, rev);
	else if (fill)
		paged = drop_pages(fs, n, ino, rev);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = paged;
	fi->direct_io = !h->local && !paged;
	/* a reader has nothing to commit: spare the kernel its flushes */
	fi->noflush = !wr && !h->local;
	if (fuse_reply_open(req, fi) == -ENOENT)
		handle_free(fs, h);
}

/* A new file (dir, name) or EEXIST/EINVAL; fs->lock held. */
static int new_file(struct fs *fs, struct node *dir, const char *name,
		    struct node **out)
{
	bool temp = fs->cfg.temp_in_memory && fs_is_temp_name(fs, name);
	struct node *n, *g;
	char *key;
	size_t key_len;
	int ret;

	ret = fs_name_key(fs, dir, name, NODE_FILE, &key, &key_len);
	if (ret)
		return ret;
	n = tree_new_node(&fs->tree, dir, name, strlen(name), NODE_FILE);
	if (!n || node_set_value(&fs->tree, n, "", 0)) {
		free(key);
		return -ENOMEM;
	}
	n->key = key;
	n->key_len = key_len;
	n->local = temp;
	n->pending = !temp;
	g = temp ? NULL : find_ghost(dir, key, key_len);
	if (g) {
		/* the editor moved this key to a backup and writes it anew */
		n->mod_revision = g->rare->ghost_rev;
		free(g->rare->ghost_key);
		g->rare->ghost_key = NULL;
	}
	*out = n;
	return 0;
}

void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct echo_ev *echo;
	struct handle *h;
	struct node *dir, *n;
	bool coded;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	echo = echo_of(fs, req);
	if (fs->cfg.ro && !echo) {
		err = EROFS;
		goto out;
	}
	dir = node_of(fs, parent);
	if (dir->type != NODE_DIR) {
		err = ENOTDIR;
		goto out;
	}
	if (echo) {
		/* another client made this key: the mirror has it already */
		n = echo_make(fs, echo, dir, name, NODE_FILE);
		if (!n) {
			err = EEXIST;
			goto out;
		}
		goto open;
	}
	/* a rename of dir in flight: the new name takes its new prefix */
	err = -dirmove_wait(fs, dir);
	if (err)
		goto out;
	n = tree_child(&fs->tree, dir, name, strlen(name));
	/* a writer starts from the last close's commit, still in flight */
	if (n && !n->local && inflight_wait(fs, n))
		n = tree_child(&fs->tree, dir, name, strlen(name));
	if (n && (fi->flags & O_EXCL)) {
		err = EEXIST;
		goto out;
	}
	if (n && n->type == NODE_DIR) {
		err = EISDIR;
		goto out;
	}
	if (n && !(fi->flags & O_TRUNC) && !n->value && !n->local &&
	    !n->pending) {
		/* made meanwhile by another client, its value evicted */
		err = -fs_load_value(fs, n);
		if (err)
			goto out;
		n = tree_child(&fs->tree, dir, name, strlen(name));
		if (n && (n->type == NODE_DIR ||
			  (!n->value && !n->local && !n->pending))) {
			err = n->type == NODE_DIR ? EISDIR : EIO;
			goto out;
		}
	}
	if (!n) {
		err = -new_file(fs, dir, name, &n);
		if (err)
			goto out;
	}
open:
	h = handle_new(fs, n, fi, fuse_req_ctx(req)->pid, echo != NULL);
	if (!h) {
		err = ENOMEM;
		goto out;
	}
	/* an existing key opened with O_CREAT shows its view too */
	coded = !echo && !h->local && !n->pending && !(fi->flags & O_TRUNC) &&
		codec_key(fs, n->key, n->key_len);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 0;
	fi->direct_io = !h->local;
	memset(&e, 0, sizeof(e));
	e.ino = node_id(fs, n);
	/*
	 * the echo's create of a key deleted since: not to be cached; of a
	 * key renamed since (its node has the new name): that name is the
	 * node's, this one not, so the kernel asks again and hears ENOENT
	 */
	e.attr_timeout = n->removed ? 0 : fs->cfg.attr_timeout;
	e.entry_timeout = n->removed || (echo && tree_child(&fs->tree, dir,
			  name, strlen(name)) != n) ? 0 : fs->cfg.entry_timeout;
	node_fill_attr(fs, n, &e.attr);
	n->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	err = coded ? -codec_view_open(fs, h, e.ino) : 0;
	if (err) {
		pthread_mutex_lock(&fs->lock);
		node_forget(&fs->tree, n, 1);
		pthread_mutex_unlock(&fs->lock);
		handle_free(fs, h);
		fuse_reply_err(req, err);
		return;
	}
	if (coded) {
		pthread_mutex_lock(&fs->lock);
		node_fill_attr(fs, n, &e.attr);	/* the view's size */
		pthread_mutex_unlock(&fs->lock);
	}
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		pthread_mutex_lock(&fs->lock);
		node_forget(&fs->tree, n, 1);
		pthread_mutex_unlock(&fs->lock);
		handle_free(fs, h);
	}
	return;
out:
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, err);
}

void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev)
{
	struct fs *fs = fs_of(req);
	struct node *dir, *n;
	char *key;
	size_t key_len;
	int64_t base;
	int err = 0;

	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (!S_ISREG(mode)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	dir = node_of(fs, parent);
	/* a rename of dir in flight: the new name takes its new prefix */
	err = dir->type != NODE_DIR ? ENOTDIR : -dirmove_wait(fs, dir);
	if (!err && tree_child(&fs->tree, dir, name, strlen(name)))
		err = EEXIST;
	if (!err)
		err = -new_file(fs, dir, name, &n);
	if (err || n->local) {
		if (!err)
			n->refs++;	/* until the entry's lookup holds it */
		pthread_mutex_unlock(&fs->lock);
		if (err)
			fuse_reply_err(req, err);
		else
			fs_reply_entry_unref(fs, req, n);
		return;
	}
	/* no close will follow: the empty key is made now */
	key = malloc(n->key_len + 1);
	key_len = n->key_len;
	if (key)
		memcpy(key, n->key, key_len);
	base = n->mod_revision;	/* read under the lock */
	n->refs++;
	pthread_mutex_unlock(&fs->lock);
	err = key ? -fs_commit_value(fs, n, key, key_len, base, "", 0,
				     fuse_req_ctx(req)->pid, false, NULL,
				     NULL) : ENOMEM;
	free(key);
	pthread_mutex_lock(&fs->lock);
	if (err && n->pending && n->parent)
		node_drop(&fs->tree, n);
	if (err) {
		node_unref(&fs->tree, n);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, err == ESTALE ? EEXIST : err);
		return;
	}
	pthread_mutex_unlock(&fs->lock);
	/* still referenced: a watch event cannot free it before the reply */
	fs_reply_entry_unref(fs, req, n);
}

/*
 * A read of a file opened without a message (fs->no_open): the node's
 * value, which is the revision of its inode for as long as the kernel
 * knows it (fs_no_open_mode).  At a past revision= a value the budget
 * evicted is read again first.
 */
static void read_node(struct fs *fs, fuse_req_t req, fuse_ino_t ino,
		      size_t size, size_t off)
{
	struct node *n;
	char *copy = NULL;
	size_t len = 0;
	int err;

	pthread_mutex_lock(&fs->lock);
	n = node_of(fs, ino);
	err = n->type == NODE_DIR ? -EISDIR : fs_load_value(fs, n);
	if (!err && off < n->size) {
		len = n->size - off < size ? n->size - off : size;
		copy = malloc(len);
		if (copy)
			memcpy(copy, n->value + off, len);
		else
			err = -ENOMEM;
	}
	if (!err && !n->removed)
		node_touch(&fs->tree, n);
	pthread_mutex_unlock(&fs->lock);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, copy, len);
	free(copy);
}

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	size_t o = (size_t)off;
	int err = 0;

	if (!h) {
		read_node(fs, req, ino, size, o);
		return;
	}
	pthread_mutex_lock(&h->lock);
	if (h->writer) {
		/* renamed between a key and a temp name since it opened */
		pthread_mutex_lock(&fs->lock);
		err = handle_follow(fs, h);
		pthread_mutex_unlock(&fs->lock);
	}
	if (err) {
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(req, -err);
		return;
	}
	if (h->local) {
		struct node *n = h->node;
		char *copy = NULL;
		size_t len = 0;

		pthread_mutex_lock(&fs->lock);
		if (o < n->size) {
			len = n->size - o < size ? n->size - o : size;
			copy = malloc(len);
			if (copy)
				memcpy(copy, n->value + o, len);
		}
		pthread_mutex_unlock(&fs->lock);
		pthread_mutex_unlock(&h->lock);
		if (len && !copy)
			fuse_reply_err(req, ENOMEM);
		else
			fuse_reply_buf(req, copy, len);
		free(copy);
		return;
	}
	if (o >= h->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, h->buf + o,
			       h->len - o < size ? h->len - o : size);
	pthread_mutex_unlock(&h->lock);
}

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	int ret;

	if (!h) {
		/* opened without a message: nothing to release */
		fuse_reply_err(req, 0);
		return;
	}
	pthread_mutex_lock(&h->lock);
	/* nobody hears an error now: the commit logs it */
	ret = handle_commit(fs, h, COMMIT_RELEASE);
	pthread_mutex_unlock(&h->lock);
	handle_free(fs, h);
	fuse_reply_err(req, 0);
	if (ret > 0)
		handle_committed(fs, ino);
}

void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi)
{
	int err = handle_write(fs_of(req), handle_of(fi), buf, size, off);

	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_write(req, size);
}

/* flush (every close) and fsync: commit now if the copy needs it */
static void sync_and_reply(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi, bool final)
{
	struct fs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	bool writer;
	int ret;

	if (!h) {
		/*
		 * Opened without a message (file.c, fs->no_open): a reader
		 * of a read-only mount, with nothing to commit.  ENOSYS to a
		 * flush has the kernel send no flush again.
		 */
		fuse_reply_err(req, final ? 0 : ENOSYS);
		return;
	}
	/* once answered, the release may free @h: nothing of it after */
	writer = h->writer;
	pthread_mutex_lock(&h->lock);
	ret = handle_commit(fs, h, final ? COMMIT_FSYNC : COMMIT_FLUSH);
	pthread_mutex_unlock(&h->lock);
	/*
	 * A writer's private maps may have filled the readers' pages: they
	 * are gone before its close returns (no lock is held here).
	 */
	if (writer)
		handle_committed(fs, ino);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
	if (ret == HANDLE_COMMITTED && !writer)
		handle_committed(fs, ino);
}

void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	sync_and_reply(req, ino, fi, false);
}

void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi)
{
	sync_and_reply(req, ino, fi, true);
}
