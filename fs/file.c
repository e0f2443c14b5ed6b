/*
 * file.c - open files: snapshots for reading, buffers for writing, and the
 * commit of a buffer to etcd as one compare-and-swap
 *
 * An open file of a key holds its own copy of the value, taken at open, so
 * what it reads never changes under it.  Writes go to that copy.  The copy
 * is committed at flush (close), fsync or release, once, as a guaranteed
 * update preconditioned on the revision the copy was based on (or on a pin,
 * see xattr.c): if someone else changed the key meanwhile, the commit fails
 * with ESTALE and etcd keeps their value.
 *
 * A flush commits only when data was written or the file is new: a file
 * opened with O_TRUNC and not yet written (new or not) is committed at
 * release or fsync, because shells open, dup2() and close() a
 * redirection's file before the command writes to it, and that close must
 * not store an empty value in between.
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
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "names.h"

struct handle {
	pthread_mutex_t lock;	/* guards the fields below but node */
	struct node *node;	/* referenced; fields under fs->lock */
	bool local;		/* the node's value is the content */
	char *buf;		/* the copy: NUL-terminated past len */
	size_t len;
	size_t cap;
	int64_t base;		/* the revision buf is based on; 0: absent */
	bool dirty;		/* written since the last commit */
	bool truncated;		/* opened with O_TRUNC, not written yet */
	bool failed;		/* a commit failed: do not try again */
	int failed_err;		/* what close says then, if not 0 */
	bool trunc_waiting;	/* counted in node->trunc_waiting */
	struct handle *nnext;	/* in node->handles, under fs->lock */
	bool writer;		/* opened for writing */
	bool written;		/* write() was called */
	bool append;
	bool echo;		/* the echo thread's: writes are no-ops */
	pid_t pid;		/* the opener, whose pins apply */
};

static struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct handle *handle_of(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

static int grow(char **buf, size_t *cap, size_t need)
{
	size_t nc;
	char *nb;

	if (need + 1 <= *cap)
		return 0;
	nc = *cap ? *cap : 64;
	while (nc < need + 1)
		nc *= 2;
	nb = realloc(*buf, nc);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = nc;
	return 0;
}

/* Sets the length of @buf to @size, zero-filling what it grows by. */
static int resize(char **buf, size_t *len, size_t *cap, size_t size)
{
	if (grow(buf, cap, size))
		return -ENOMEM;
	if (size > *len)
		memset(*buf + *len, 0, size - *len);
	*len = size;
	(*buf)[size] = '\0';
	return 0;
}

/* Resizes a local node's content; fs->lock held. */
static int local_resize(struct fs *fs, struct node *n, size_t size)
{
	size_t cap = n->value_cap ? n->value_cap + 1 : 0;
	int ret;

	if (!n->value)
		cap = 0;
	lru_unlink(fs, n);
	ret = resize(&n->value, &n->size, &cap, size);
	if (!ret)
		n->value_cap = cap - 1;
	lru_link(fs, n);
	fs_now(&n->mtime);
	return ret;
}

/*
 * The largest value a put of @key_len bytes of key may carry: etcd's limit
 * is on the whole request, which names the key three times.
 */
static size_t value_limit(struct fs *fs, size_t key_len)
{
	size_t max = store_max_value_size(fs->store), over = 3 * key_len + 512;

	return max > over ? max - over : 0;
}

struct update_arg {
	const char *data;
	size_t len;
};

static int put_value(void *arg, const struct store_kv *cur,
		     struct store_update *out)
{
	struct update_arg *a = arg;

	out->value = malloc(a->len + 1);
	if (!out->value)
		return STORE_EINTERNAL;
	memcpy(out->value, a->data, a->len);
	out->value[a->len] = '\0';
	out->value_len = a->len;
	out->lease = -1;
	return 0;
}

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

int fs_commit_value(struct fs *fs, struct node *n, const char *key,
		    size_t key_len, int64_t base, const char *data,
		    size_t len, pid_t pid, bool own, int64_t *rev)
{
	struct store_preconditions pre = { 0 };
	struct store_error err = { 0 };
	struct store_kv sugg = { 0 }, out = { 0 };
	struct update_arg arg = { data, len };
	struct inval_list inv = { 0 };
	struct inflight in;
	struct node *cur;
	bool have_sugg = false;
	int ret;

	if (len > value_limit(fs, key_len))
		return -EFBIG;
	pthread_mutex_lock(&fs->lock);
	inflight_begin(fs, &in, key, key_len);
	pin_take(fs, key, key_len, pid, &base);
	/* what the mirror knows saves the read, if it is what we based on */
	cur = tree_find_key(fs, key, key_len);
	if (base > 0 && cur && !cur->local && !cur->pending && cur->value &&
	    cur->mod_revision == base) {
		sugg.key = (char *)key;
		sugg.key_len = key_len;
		sugg.value = malloc(cur->size + 1);
		if (sugg.value) {
			memcpy(sugg.value, cur->value, cur->size);
			sugg.value_len = cur->size;
			sugg.mod_revision = cur->mod_revision;
			sugg.create_revision = cur->create_revision;
			sugg.version = cur->version;
			sugg.lease = cur->lease;
			have_sugg = true;
		}
	}
	pthread_mutex_unlock(&fs->lock);

	pre.mod_revision = base > 0 ? base : STORE_REV_ABSENT;
	ret = store_guaranteed_update(fs->store, key, key_len, base <= 0, &pre,
				      have_sugg ? &sugg : NULL, put_value, &arg,
				      &out, &err);
	free(sugg.value);
	if (ret == STORE_ENOTFOUND)
		ret = STORE_EPRECONDITION;	/* deleted since it was read */
	if (ret) {
		pthread_mutex_lock(&fs->lock);
		inflight_end(fs, &in);
		pthread_mutex_unlock(&fs->lock);
		if (ret == STORE_EPRECONDITION || ret == STORE_ECONFLICT)
			fuse_log(FUSE_LOG_WARNING,
				 "etcdfs: '%s' not saved: changed since "
				 "revision %lld\n", err.key,
				 (long long)(base > 0 ? base : 0));
		else
			fuse_log(FUSE_LOG_ERR, "etcdfs: '%s' not saved: %s\n",
				 err.key, err.msg);
		return -fs_errno(ret);
	}
	pthread_mutex_lock(&fs->lock);
	/* a handle's node may have been replaced: the tree's is the key's */
	cur = n->removed && !n->pending ? tree_find_key(fs, key, key_len) : n;
	/*
	 * Files open on it read the old value from the kernel's cache: the
	 * new one goes to a new inode (one inode, one revision), so that no
	 * reader ever sees a revision's attributes with another's bytes.
	 */
	if (cur && own && cur->nopen > (cur == n ? 1u : 0u) && !cur->local &&
	    !cur->pending)
		cur = tree_replace(fs, cur, &inv) ?: cur;
	if (cur && !node_set_value(fs, cur, data, len)) {
		cur->mod_revision = out.mod_revision;
		cur->create_revision = out.create_revision;
		cur->version = out.version;
		cur->lease = out.lease;
		cur->pending = false;
		cur->local = false;
		fs_now(&cur->mtime);
	}
	if (out.mod_revision > fs->revision)
		fs->revision = out.mod_revision;
	inflight_end(fs, &in);
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);
	if (rev)
		*rev = out.mod_revision;
	store_kv_release(&out);
	return 0;
}

/*
 * Commits @h's copy if it needs it: when written, when its file is new,
 * or (when @final) when it was only truncated.  Returns 1 if it
 * committed, 0 if there was nothing to, or a negative errno.
 * @h->lock held.
 */
static int handle_sync(struct fs *fs, struct handle *h, bool final)
{
	struct node *n = h->node;
	bool pending, gone, need, need_wake;
	int64_t rev = 0;
	char *key;
	size_t key_len;
	int64_t base;
	int ret;

	if (h->failed) {
		ret = -h->failed_err;
		h->failed_err = 0;
		return ret;
	}
	if (h->local || h->echo)
		return 0;
	pthread_mutex_lock(&fs->lock);
	pending = n->pending;
	gone = n->removed && (n->pending || n->local);
	base = n->pending ? n->mod_revision : h->base;
	key = NULL;
	key_len = n->key_len;
	need = h->dirty || (final && h->truncated) ||
	       (pending && (final || !h->truncated));
	if (!need && h->truncated && !h->trunc_waiting) {
		/* readers wait for this truncation (see fs_open) */
		h->trunc_waiting = true;
		n->trunc_waiting++;
	}
	need_wake = need && h->trunc_waiting;
	if (!gone && need) {
		key = malloc(key_len + 1);
		if (key)
			memcpy(key, n->key, key_len);
	}
	pthread_mutex_unlock(&fs->lock);
	if (gone || !need)
		return 0;
	if (!key)
		return -ENOMEM;
	ret = fs_commit_value(fs, n, key, key_len, base, h->buf, h->len,
			      h->pid, true, &rev);
	free(key);
	if (need_wake) {
		/* the value is in the mirror now: readers may go on */
		pthread_mutex_lock(&fs->lock);
		h->trunc_waiting = false;
		n->trunc_waiting--;
		pthread_cond_broadcast(&fs->inflight_cond);
		pthread_mutex_unlock(&fs->lock);
	}
	if (!ret)
		h->base = rev;
	h->dirty = false;
	h->truncated = false;
	if (ret)
		h->failed = true;
	return ret ? ret : 1;
}

/*
 * After a commit: readers' pages and sizes are the old value's; the
 * kernel drops them (open readers then read their snapshot from us).
 * After any flush of a writer too: its private maps (MAP_PRIVATE) fill
 * the pages the readers share from the writer's copy; that one is sent
 * before the flush is answered, others after the reply.
 */
static void committed(struct fs *fs, fuse_ino_t ino)
{
	if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
}

static struct handle *handle_new(struct fs *fs, struct node *n,
				 struct fuse_file_info *fi, pid_t pid,
				 bool echo);

/*
 * As handle_new, for a reader of @n whose key has moved on to the node
 * @src (n was replaced while the open waited): it reads @src's value.
 */
static struct handle *handle_new_from(struct fs *fs, struct node *n,
				      struct node *src,
				      struct fuse_file_info *fi, pid_t pid)
{
	struct handle *h = handle_new(fs, src, fi, pid, false);

	if (h && src != n) {
		src->nopen--;
		src->refs--;
		n->nopen++;
		n->refs++;
		h->node = n;
	}
	return h;
}

static struct handle *handle_new(struct fs *fs, struct node *n,
				 struct fuse_file_info *fi, pid_t pid,
				 bool echo)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->local = n->local;
	if (!echo && !h->local) {
		bool trunc = fi->flags & O_TRUNC;
		size_t len = trunc ? 0 : n->size;

		/* fs_open reads an evicted value again before this */
		if ((len && !n->value) || !(h->buf = malloc(len + 1))) {
			free(h);
			return NULL;
		}
		if (len)
			memcpy(h->buf, n->value, len);
		h->buf[len] = '\0';
		h->len = len;
		h->cap = len + 1;
		/* a shell's redirection closes once before it writes */
		h->truncated = trunc && (n->size > 0 || n->pending);
	} else if (!echo && (fi->flags & O_TRUNC)) {
		local_resize(fs, n, 0);
	}
	pthread_mutex_init(&h->lock, NULL);
	h->node = n;
	h->append = fi->flags & O_APPEND;
	h->pid = pid;
	h->base = n->mod_revision;
	h->echo = echo;
	if (!echo)
		n->nopen++;
	if (!echo && (fi->flags & O_ACCMODE) != O_RDONLY) {
		h->writer = true;
		h->nnext = n->handles;
		n->handles = h;
		/*
		 * The kernel fills the readers' pages from the writer's copy
		 * when it maps the file privately: they are not the
		 * revision's any more (see fs_open).
		 */
		n->cache_rev = 0;
	}
	n->refs++;
	return h;
}

static void handle_free(struct fs *fs, struct handle *h)
{
	struct inval_list inv = { 0 };
	struct node *n = h->node;

	pthread_mutex_lock(&fs->lock);
	if (!h->echo)
		n->nopen--;
	if (h->trunc_waiting) {
		n->trunc_waiting--;
		pthread_cond_broadcast(&fs->inflight_cond);
	}
	if (h->writer) {
		struct handle **p;

		for (p = &n->handles; *p; p = &(*p)->nnext) {
			if (*p == h) {
				*p = h->nnext;
				break;
			}
		}
	}
	/*
	 * A new file whose creation could not be saved does not exist: the
	 * kernel, which has its name from the create, forgets it too.
	 */
	if (n->pending && n->refs == 1 && !n->removed && n->parent) {
		struct node *dir = n->parent;

		inval_add(&inv, true, node_id(fs, dir), n->name, n->name_len);
		inval_add(&inv, false, node_id(fs, dir), NULL, 0);
		node_drop(fs, n);
		tree_keep(fs, dir);
	}
	node_unref(fs, n);
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);
	pthread_mutex_destroy(&h->lock);
	free(h->buf);
	free(h);
}

/*
 * Reads @n's key again: for -o nowatch, for -o quorum, or because the value
 * budget evicted its value.  With quorum and the watch, a linearizable read
 * of the key's revision alone comes first: when the mirror has that
 * revision, its value is served and the value is not sent again.  fs->lock
 * held; dropped for the requests and taken again.  Returns 0 or a negative
 * errno.
 */
static int refresh_file(struct fs *fs, struct node *n)
{
	bool probe = fs->cfg.quorum && !fs->cfg.nowatch && n->value;
	struct store_error err_info = { 0 };
	struct inval_list inv = { 0 };
	struct store_kv kv = { 0 };
	size_t key_len = n->key_len;
	char *key = malloc(key_len + 1);
	int ret, err;

	if (!key)
		return -ENOMEM;
	memcpy(key, n->key, key_len);
	n->refs++;
again:
	pthread_mutex_unlock(&fs->lock);
	ret = store_get(fs->store, key, key_len,
			(fs->cfg.quorum ? STORE_READ_QUORUM : 0) |
				(probe ? STORE_READ_KEYS_ONLY : 0),
			&kv, &err_info);
	pthread_mutex_lock(&fs->lock);
	if (ret == 0 && probe) {
		probe = false;
		if (kv.mod_revision == n->mod_revision && n->value &&
		    !n->removed) {
			err = 0;
			goto out;
		}
		store_kv_release(&kv);
		goto again;
	}
	if (ret == 0) {
		/* the revision the mirror has: only its value was missing */
		if (kv.mod_revision == n->mod_revision && !n->value &&
		    !n->removed)
			err = node_set_value(fs, n, kv.value, kv.value_len);
		else
			err = tree_put(fs, &kv, &inv);
	} else if (ret == STORE_ENOTFOUND) {
		err = tree_delete(fs, key, key_len, 0, &inv);
	} else {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot read '%s': %s\n",
			 err_info.key, err_info.msg);
		err = -fs_errno(ret);
	}
out:
	node_unref(fs, n);
	free(key);
	store_kv_release(&kv);
	inval_release(&inv);
	return err;
}

int fs_load_value(struct fs *fs, struct node *n)
{
	int err;

	if (n->value || n->local || n->pending || n->type != NODE_FILE)
		return 0;
	if (n->removed)
		return -ENOENT;
	err = refresh_file(fs, n);
	if (!err && !n->value)
		err = n->removed ? -ENOENT : -EIO;
	return err;
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
	int ret = fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
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

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	bool wr = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	bool trunc = fi->flags & O_TRUNC;
	struct inval_list inv = { 0 };
	struct echo_ev *echo;
	bool paged, fill, refreshed;
	struct handle *h;
	struct node *n, *src;
	int64_t rev;
	int err;

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
	if (echo && !echo->del && n->key_len == echo->kv.key_len &&
	    memcmp(n->key, echo->kv.key, n->key_len) == 0) {
		/* another client changed it: the echo's open applies it */
		tree_put(fs, &echo->kv, &inv);
		echo->applied = true;
	} else if (echo) {
		echo = NULL;
	}
	if (!echo && !wr && n->trunc_waiting) {
		/*
		 * A file was opened with O_TRUNC and closed unwritten: its
		 * empty value is committed at its last close, which follows
		 * at once, or it is written to; either way, wait a moment.
		 */
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		while (n->trunc_waiting &&
		       pthread_cond_timedwait(&fs->inflight_cond, &fs->lock,
					      &until) != ETIMEDOUT)
			;
	}
	/*
	 * What the handle starts from: @n, or for a reader of an inode
	 * replaced meanwhile, the key's node now.  It is read again first
	 * for nowatch and quorum, and when the value budget evicted its
	 * value (unless the open truncates it anyway).
	 */
	src = n;
	for (refreshed = false;; refreshed = true) {
		if (!echo && !wr && src->removed && !src->pending &&
		    !src->local)
			src = tree_find_key(fs, n->key, n->key_len) ?: src;
		if (echo || src->local || src->pending || src->removed)
			break;
		if ((src->value || trunc) &&
		    (refreshed || (!fs->cfg.nowatch && !fs->cfg.quorum)))
			break;
		err = refreshed ? EIO : -refresh_file(fs, src);
		if (err) {
			pthread_mutex_unlock(&fs->lock);
			fuse_reply_err(req, err);
			return;
		}
	}
	if (!echo && !src->local && !src->pending && !src->value && !trunc) {
		/* deleted while it was read again, or evicted and removed */
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (refreshed && src->removed && !src->pending && !src->local) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, ENOENT);
		return;
	}
	node_touch(fs, src);
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
	paged = !wr && h && !h->local && rev > 0 && src == n && !n->handles &&
		fs->se;
	fill = paged && n->cache_rev != rev;
	pthread_mutex_unlock(&fs->lock);
	inval_release(&inv);
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (fill)
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
	n = tree_new_node(fs, dir, name, strlen(name), NODE_FILE);
	if (!n || node_set_value(fs, n, "", 0)) {
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
	struct inval_list inv = { 0 };
	struct fuse_entry_param e;
	struct echo_ev *echo;
	struct handle *h;
	struct node *dir, *n;
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
		/* another client made this key: the echo's creat applies it */
		if (echo->del || tree_child(fs, dir, name, strlen(name)) ||
		    tree_put(fs, &echo->kv, &inv)) {
			err = EIO;
			goto out;
		}
		echo->applied = true;
		inval_release(&inv);
		n = tree_child(fs, dir, name, strlen(name));
		if (!n) {
			err = EIO;
			goto out;
		}
		goto open;
	}
	n = tree_child(fs, dir, name, strlen(name));
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
		n = tree_child(fs, dir, name, strlen(name));
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
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 0;
	fi->direct_io = !h->local;
	memset(&e, 0, sizeof(e));
	e.ino = node_id(fs, n);
	e.attr_timeout = fs->cfg.attr_timeout;
	e.entry_timeout = fs->cfg.entry_timeout;
	node_fill_attr(fs, n, &e.attr);
	n->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		pthread_mutex_lock(&fs->lock);
		node_forget(fs, n, 1);
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
	if (dir->type != NODE_DIR)
		err = ENOTDIR;
	else if (tree_child(fs, dir, name, strlen(name)))
		err = EEXIST;
	else
		err = -new_file(fs, dir, name, &n);
	if (err || n->local) {
		pthread_mutex_unlock(&fs->lock);
		if (err)
			fuse_reply_err(req, err);
		else
			fs_reply_entry(fs, req, n);
		return;
	}
	/* no close will follow: the empty key is made now */
	key = malloc(n->key_len + 1);
	key_len = n->key_len;
	if (key)
		memcpy(key, n->key, key_len);
	n->refs++;
	pthread_mutex_unlock(&fs->lock);
	err = key ? -fs_commit_value(fs, n, key, key_len, n->mod_revision,
				     "", 0, fuse_req_ctx(req)->pid, false,
				     NULL) : ENOMEM;
	free(key);
	pthread_mutex_lock(&fs->lock);
	if (err && n->pending && n->parent) {
		node_drop(fs, n);
	}
	node_unref(fs, n);
	pthread_mutex_unlock(&fs->lock);
	if (err)
		fuse_reply_err(req, err == ESTALE ? EEXIST : err);
	else
		fs_reply_entry(fs, req, n);
}

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	size_t o = (size_t)off;

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
		if (len && !copy)
			fuse_reply_err(req, ENOMEM);
		else
			fuse_reply_buf(req, copy, len);
		free(copy);
		return;
	}
	pthread_mutex_lock(&h->lock);
	if (o >= h->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, h->buf + o,
			       h->len - o < size ? h->len - o : size);
	pthread_mutex_unlock(&h->lock);
}

void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	size_t max = value_limit(fs, h->node->key_len), o = (size_t)off;
	int err = 0;

	if (h->echo)
		goto out;
	if (h->local) {
		struct node *n = h->node;

		pthread_mutex_lock(&fs->lock);
		if (h->append)
			o = n->size;
		if (o + size > n->size)
			err = -local_resize(fs, n, o + size);
		if (!err)
			memcpy(n->value + o, buf, size);
		pthread_mutex_unlock(&fs->lock);
		goto out;
	}
	pthread_mutex_lock(&h->lock);
	if (h->append)
		o = h->len;
	if (o + size > max) {
		/* what it holds can never be saved: close saves nothing */
		err = EFBIG;
		h->failed = true;
		h->failed_err = EFBIG;
	} else {
		if (o + size > h->len)
			err = -resize(&h->buf, &h->len, &h->cap, o + size);
		if (!err) {
			memcpy(h->buf + o, buf, size);
			h->dirty = true;
			h->written = true;
			h->truncated = false;
		}
	}
	pthread_mutex_unlock(&h->lock);
out:
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_write(req, size);
}

int fs_truncate_open(struct fs *fs, struct fuse_file_info *fi, off_t size)
{
	struct handle *h = handle_of(fi);
	int err;

	if (size < 0)
		return -EINVAL;
	if (h->echo)
		return 0;
	if (h->local) {
		pthread_mutex_lock(&fs->lock);
		err = local_resize(fs, h->node, (size_t)size);
		pthread_mutex_unlock(&fs->lock);
		return err;
	}
	if ((size_t)size > value_limit(fs, h->node->key_len))
		return -EFBIG;
	pthread_mutex_lock(&h->lock);
	err = resize(&h->buf, &h->len, &h->cap, (size_t)size);
	if (!err && size == 0 && !h->dirty && !h->written) {
		/*
		 * open(O_TRUNC), or a truncation before any write: committed
		 * with the first write's flush, or at the last close.
		 */
		pthread_mutex_lock(&fs->lock);
		h->truncated = h->node->size > 0 || h->node->pending;
		pthread_mutex_unlock(&fs->lock);
	} else if (!err) {
		h->dirty = true;
		h->truncated = false;
	}
	pthread_mutex_unlock(&h->lock);
	return err;
}

/*
 * truncate(2) of a path, or open(O_TRUNC): the kernel sends the latter as
 * a truncation to 0 without the file, right after the open, from the
 * thread that opened.  That one goes to the open file's copy, to be
 * committed with what is written to it; any other commits at once.
 */
int fs_truncate_path(struct fs *fs, struct node *n, off_t size, pid_t pid)
{
	char *data = NULL, *key = NULL;
	size_t len = 0, cap = 0, key_len;
	struct handle *h;
	int64_t base;
	int err;

	if (size < 0)
		return -EINVAL;
	if ((size_t)size > value_limit(fs, n->key_len))
		return -EFBIG;
	pthread_mutex_lock(&fs->lock);
	for (h = n->handles; size == 0 && h; h = h->nnext) {
		struct fuse_file_info fi = { .fh = (uint64_t)(uintptr_t)h };

		if (h->pid != pid || h->written || h->dirty || h->truncated)
			continue;
		/* the open has not returned yet: h cannot be released */
		pthread_mutex_unlock(&fs->lock);
		return fs_truncate_open(fs, &fi, 0);
	}
	if (n->local || n->pending) {
		err = local_resize(fs, n, (size_t)size);
		pthread_mutex_unlock(&fs->lock);
		return err;
	}
	if (size > 0) {
		/* the bytes kept are needed: read an evicted value again */
		err = fs_load_value(fs, n);
		if (err) {
			pthread_mutex_unlock(&fs->lock);
			return err;
		}
	}
	err = resize(&data, &len, &cap, size > 0 ? n->size : 0);
	if (!err) {
		if (size > 0 && n->value)
			memcpy(data, n->value, n->size);
		err = resize(&data, &len, &cap, (size_t)size);
	}
	key_len = n->key_len;
	key = err ? NULL : malloc(key_len + 1);
	if (key)
		memcpy(key, n->key, key_len);
	base = n->mod_revision;
	n->refs++;
	pthread_mutex_unlock(&fs->lock);
	if (!err && key)
		err = fs_commit_value(fs, n, key, key_len, base, data, len,
				      pid, false, NULL);
	else if (!err)
		err = -ENOMEM;
	pthread_mutex_lock(&fs->lock);
	node_unref(fs, n);
	pthread_mutex_unlock(&fs->lock);
	free(data);
	free(key);
	return err;
}

/* flush (every close) and fsync: commit now if the copy needs it */
static void sync_and_reply(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi, bool final)
{
	struct fs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	int ret;

	pthread_mutex_lock(&h->lock);
	ret = handle_sync(fs, h, final);
	pthread_mutex_unlock(&h->lock);
	/*
	 * A writer's private maps may have filled the readers' pages: they
	 * are gone before its close returns (no lock is held here).
	 */
	if (h->writer)
		committed(fs, ino);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
	if (ret > 0 && !h->writer)
		committed(fs, ino);
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

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	int ret;

	pthread_mutex_lock(&h->lock);
	/* nobody hears an error now: the commit logs it */
	ret = handle_sync(fs, h, true);
	pthread_mutex_unlock(&h->lock);
	handle_free(fs, h);
	fuse_reply_err(req, 0);
	if (ret > 0)
		committed(fs, ino);
}
