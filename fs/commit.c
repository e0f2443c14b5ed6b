/*
 * commit.c - writers' buffers and their commit to etcd as one
 * compare-and-swap
 *
 * An open file of a key holds its own copy of the value (file.c); writes
 * (handle_write) and truncations go to that copy.  The copy is committed
 * at flush (close), fsync or release, once, as a guaranteed update
 * preconditioned on the revision the copy was based on (or on a pin, see
 * pins.c): if
 * someone else changed the key meanwhile, the commit fails with ESTALE
 * and etcd keeps their value.
 *
 * A flush commits only when data was written or the file is new: a file
 * opened with O_TRUNC and not yet written (new or not) is committed at
 * release or fsync, because shells open, dup2() and close() a
 * redirection's file before the command writes to it, and that close must
 * not store an empty value in between.
 *
 * It never replies: file.c's write, flush and fsync answer the kernel
 * with what it returns.
 *
 * What it cannot do: a value can never exceed the cluster's limit (EFBIG
 * at write time).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "fs_i.h"

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
int node_local_resize(struct fs *fs, struct node *n, size_t size)
{
	size_t cap = n->value_cap ? n->value_cap + 1 : 0;
	int ret;

	if (!n->value)
		cap = 0;
	lru_unlink(&fs->tree, n);
	ret = resize(&n->value, &n->size, &cap, size);
	if (!ret)
		n->value_cap = cap - 1;
	lru_link(&fs->tree, n);
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

static int commit_raw(struct fs *fs, struct node *n, const char *key,
		      size_t key_len, int64_t base, const char *data,
		      size_t len, pid_t pid, bool own, int64_t *rev,
		      struct inflight *begun)
{
	struct store_preconditions pre = { 0 };
	struct store_error err = { 0 };
	struct store_kv sugg = { 0 }, out = { 0 };
	struct update_arg arg = { data, len };
	struct inval_list inv = { 0 };
	struct inflight own_in, *in = begun ? begun : &own_in;
	struct node *cur;
	bool have_sugg = false;
	int ret;

	pthread_mutex_lock(&fs->lock);
	if (len > value_limit(fs, key_len)) {
		if (begun)
			inflight_end(fs, begun);
		pthread_mutex_unlock(&fs->lock);
		return -EFBIG;
	}
	if (!begun)
		inflight_begin(fs, in, key, key_len);
	pin_take(fs, key, key_len, pid, &base);
	/* what the mirror knows saves the read, if it is what we based on */
	cur = tree_find_key(&fs->tree, key, key_len);
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
		inflight_end(fs, in);
		pthread_mutex_unlock(&fs->lock);
		if (ret == STORE_EPRECONDITION || ret == STORE_ECONFLICT)
			fuse_log(FUSE_LOG_WARNING,
				 "etcdfs: '%s' not saved: changed since "
				 "revision %lld\n", err.key,
				 (long long)(base > 0 ? base : 0));
		else
			fuse_log(FUSE_LOG_ERR, "etcdfs: '%s' not saved: %s\n",
				 err.key, err.msg);
		return fs_errno(ret);
	}
	pthread_mutex_lock(&fs->lock);
	/* a handle's node may have been replaced: the tree's is the key's */
	cur = n;
	if (n->removed && !n->pending)
		cur = tree_find_key(&fs->tree, key, key_len);
	/*
	 * Files open on it read the old value from the kernel's cache: the
	 * new one goes to a new inode (one inode, one revision), so that no
	 * reader ever sees a revision's attributes with another's bytes.
	 */
	if (cur && own && cur->nopen > (cur == n ? 1u : 0u) && !cur->local &&
	    !cur->pending)
		cur = tree_replace(&fs->tree, cur, &inv) ?: cur;
	if (cur && !node_set_value(&fs->tree, cur, data, len)) {
		cur->mod_revision = out.mod_revision;
		cur->create_revision = out.create_revision;
		cur->version = out.version;
		cur->lease = out.lease;
		cur->pending = false;
		cur->local = false;
		fs_now(&cur->mtime);
		/* the mirror has it: its watch event changes nothing */
		own_change_add(fs, key, key_len, out.mod_revision);
	}
	if (out.mod_revision > fs->tree.revision)
		fs->tree.revision = out.mod_revision;
	inflight_end(fs, in);
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);
	if (rev)
		*rev = out.mod_revision;
	store_kv_release(&out);
	return 0;
}

/* Under -o codec=, what is stored is the encoding of @data (codec.c). */
int fs_commit_value(struct fs *fs, struct node *n, const char *key,
		    size_t key_len, int64_t base, const char *data,
		    size_t len, pid_t pid, bool own, int64_t *rev,
		    struct inflight *begun)
{
	char *raw = NULL;
	size_t raw_len;
	int ret;

	if (!codec_key(fs, key, key_len))
		return commit_raw(fs, n, key, key_len, base, data, len, pid,
				  own, rev, begun);
	ret = codec_encode(fs, key, key_len, base, data, len, &raw, &raw_len);
	if (ret) {
		if (begun) {
			pthread_mutex_lock(&fs->lock);
			inflight_end(fs, begun);
			pthread_mutex_unlock(&fs->lock);
		}
		return ret;
	}
	ret = commit_raw(fs, n, key, key_len, base, raw, raw_len, pid, own,
			 rev, begun);
	free(raw);
	return ret;
}

/*
 * @h's copy changed: stat shows its size from now on.  @h->lock and
 * fs->lock held.
 */
static void handle_show(struct node *n, struct handle *h)
{
	struct handle **p;

	h->shown = true;
	h->shown_size = h->len;
	fs_now(&h->shown_mtime);
	if (n->handles == h)
		return;
	for (p = &n->handles; *p; p = &(*p)->nnext) {
		if (*p == h) {
			*p = h->nnext;
			h->nnext = n->handles;
			n->handles = h;
			return;
		}
	}
}

bool handle_unshow(struct node *n, struct handle *h)
{
	bool was = h->shown;

	h->shown = false;
	return was && (h->shown_size != n->size ||
		       h->shown_mtime.tv_sec != n->mtime.tv_sec ||
		       h->shown_mtime.tv_nsec != n->mtime.tv_nsec);
}

static struct handle *changed_writer(struct node *n)
{
	struct handle *h;

	for (h = n->handles; h; h = h->nnext)
		if (h->shown)
			return h;
	return NULL;
}

bool node_writer_changed(struct node *n)
{
	return changed_writer(n) != NULL;
}

bool node_writer_attr(struct node *n, struct stat *st)
{
	struct handle *h = changed_writer(n);

	if (!h || n->cached_readers)
		return false;
	st->st_size = (off_t)h->shown_size;
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_mtim = h->shown_mtime;
	return true;
}

bool node_closed_truncation(struct node *n)
{
	struct handle *h;

	for (h = n->handles; h; h = h->nnext)
		if (h->trunc_waiting && !h->dropped)
			return true;
	return false;
}

/* @h's truncation is in etcd, or never will be: readers go on. */
static void trunc_settled(struct fs *fs, struct node *n, struct handle *h)
{
	if (!h->trunc_waiting)
		return;
	h->trunc_waiting = false;
	n->trunc_waiting--;
	pthread_cond_broadcast(&fs->mirror.inflight_cond);
}

void node_drop_writers(struct fs *fs, struct node *n)
{
	struct handle *h;

	for (h = n->handles; h; h = h->nnext) {
		h->dropped = true;
		h->truncated = false;
		h->shown = false;
		trunc_settled(fs, n, h);
	}
}

void node_writers_moved(struct fs *fs, struct node *n, int64_t from_rev,
			int64_t rev)
{
	struct handle *h;

	for (h = n->handles; h; h = h->nnext) {
		if (h->dropped)
			continue;
		if (h->trunc_waiting) {
			/* the move carried its truncation */
			h->truncated = false;
			h->shown = false;
			trunc_settled(fs, n, h);
		}
		if (h->base == from_rev)
			h->base = rev;
	}
}

int handle_follow(struct fs *fs, struct handle *h)
{
	struct node *n = h->node;
	char *buf;

	if (!h->writer || h->echo || h->local == n->local || n->removed)
		return 0;
	if (n->local) {
		/* a key's file renamed to a temp name: what it holds moves in */
		if ((h->dirty || h->truncated || h->failed_err) &&
		    node_local_resize(fs, n, h->len))
			return -ENOMEM;
		if (h->dirty || h->truncated || h->failed_err)
			memcpy(n->value, h->buf, h->len);
		handle_unshow(n, h);
		trunc_settled(fs, n, h);
		free(h->buf);
		h->buf = NULL;
		h->len = h->cap = 0;
		h->dirty = h->truncated = false;
		h->failed_err = 0;
		h->local = true;
		return 0;
	}
	/* a temp file saved over a key: its content is the key's now */
	if (!n->value)
		return -EIO;	/* never evicted while open (refs) */
	buf = malloc(n->size + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, n->value, n->size);
	buf[n->size] = '\0';
	h->buf = buf;
	h->len = n->size;
	h->cap = n->size + 1;
	h->base = n->mod_revision;
	h->dirty = h->truncated = false;
	h->written = true;
	h->local = false;
	return 0;
}

int handle_commit(struct fs *fs, struct handle *h, enum commit_kind kind)
{
	struct node *n = h->node;
	bool final = kind != COMMIT_FLUSH, pending, gone, need, need_wake;
	int64_t rev = 0, base;
	struct inflight in;
	char *key = NULL;
	size_t key_len;
	int ret;

	if (h->echo)
		return 0;
	pthread_mutex_lock(&fs->lock);
	/* an unlink or rename of the file goes first, if it came first */
	if (!h->local)
		inflight_wait(fs, n);
	ret = handle_follow(fs, h);
	if (ret || h->dropped || h->local) {
		pthread_mutex_unlock(&fs->lock);
		return ret;
	}
	pending = n->pending;
	gone = n->removed && (n->pending || n->local);
	base = n->pending ? n->mod_revision : h->base;
	key_len = n->key_len;
	/*
	 * A commit that failed is tried again by the next flush or fsync,
	 * which then store what the file holds or fail again.  Release does
	 * not: its caller heard of the failure and may have acted on it.
	 */
	need = h->dirty || h->failed_err || (final && h->truncated) ||
	       (pending && (final || !h->truncated));
	if (kind == COMMIT_RELEASE && h->failed_err)
		need = false;
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
		if (key) {
			/* a retry keeps the precondition a pin gave */
			pin_take(fs, key, key_len, h->pid, &base);
			/* from now on, an unlink or rename waits for us */
			inflight_begin(fs, &in, key, key_len);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	if (gone || !need)
		return 0;
	if (!key)
		return -ENOMEM;
	ret = fs_commit_value(fs, n, key, key_len, base, h->buf, h->len,
			      h->pid, true, &rev, &in);
	pthread_mutex_lock(&fs->lock);
	if (!ret && h->set_times) {
		/* times set before the close (cp -a, tar): the key's now */
		struct node *cur = tree_find_key(&fs->tree, key, key_len);

		if (cur && cur->mod_revision == rev)
			node_set_times(cur, h->set_times, &h->set_atime,
				       &h->set_mtime);
		h->set_times = 0;
	}
	free(key);
	if (need_wake)
		trunc_settled(fs, n, h);	/* the value is in the mirror */
	if (!ret) {
		h->base = rev;
		h->dirty = false;
		h->truncated = false;
		h->failed_err = 0;
		/* the node has what it held: handle_committed tells the kernel */
		handle_unshow(n, h);
	} else {
		/* still not in etcd: the next flush or fsync tries again */
		h->base = base;
		h->failed_err = -ret;
	}
	pthread_mutex_unlock(&fs->lock);
	return ret ? ret : HANDLE_COMMITTED;
}

/*
 * After a commit: readers' pages and sizes are the old value's; the
 * kernel drops them (open readers then read their snapshot from us).
 * After any flush of a writer too: its private maps (MAP_PRIVATE) fill
 * the pages the readers share from the writer's copy; that one is sent
 * before the flush is answered, others after the reply.
 */
void handle_committed(struct fs *fs, fuse_ino_t ino)
{
	fs_notify_inval_inode(fs, ino, 0, 0);
}

int handle_write(struct fs *fs, struct handle *h, const char *buf,
		 size_t size, off_t off)
{
	size_t max = value_limit(fs, h->node->key_len), o = (size_t)off;
	int err = 0;

	if (h->echo)
		return 0;
	pthread_mutex_lock(&h->lock);
	pthread_mutex_lock(&fs->lock);
	err = handle_follow(fs, h);
	if (!err && h->local) {
		struct node *n = h->node;

		if (h->append)
			o = n->size;
		if (o + size > n->size)
			err = node_local_resize(fs, n, o + size);
		if (!err)
			memcpy(n->value + o, buf, size);
	}
	pthread_mutex_unlock(&fs->lock);
	if (err || h->local)
		goto out_unlock;
	if (h->append)
		o = h->len;
	if (o + size > max) {
		/* refused, and nothing else: close commits what it held */
		err = -EFBIG;
	} else {
		if (o + size > h->len)
			err = resize(&h->buf, &h->len, &h->cap, o + size);
		if (!err) {
			memcpy(h->buf + o, buf, size);
			h->dirty = true;
			h->written = true;
			pthread_mutex_lock(&fs->lock);
			h->truncated = false;
			handle_show(h->node, h);
			/* a write after utimensat: its mtime is the write's */
			h->set_times &= ~ATTR_SET_MTIME;
			pthread_mutex_unlock(&fs->lock);
		}
	}
out_unlock:
	pthread_mutex_unlock(&h->lock);
	return err;
}

int fs_truncate_open(struct fs *fs, struct fuse_file_info *fi, off_t size)
{
	struct handle *h = handle_of(fi);
	int err;

	if (size < 0)
		return -EINVAL;
	if (h->echo)
		return 0;
	pthread_mutex_lock(&h->lock);
	pthread_mutex_lock(&fs->lock);
	err = handle_follow(fs, h);
	if (!err && h->local)
		err = node_local_resize(fs, h->node, (size_t)size);
	else if (!err && (size_t)size > value_limit(fs, h->node->key_len))
		err = -EFBIG;
	pthread_mutex_unlock(&fs->lock);
	if (err || h->local) {
		pthread_mutex_unlock(&h->lock);
		return err;
	}
	err = resize(&h->buf, &h->len, &h->cap, (size_t)size);
	pthread_mutex_lock(&fs->lock);
	if (!err && size == 0 && !h->dirty && !h->written) {
		/*
		 * open(O_TRUNC), or a truncation before any write: committed
		 * with the first write's flush, or at the last close.
		 */
		h->truncated = h->node->size > 0 || h->node->pending;
	} else if (!err) {
		h->dirty = true;
		h->truncated = false;
	}
	if (!err)
		handle_show(h->node, h);
	pthread_mutex_unlock(&fs->lock);
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
	/* the raw bytes are not the text a codec shows: cutting them is not */
	if (size > 0 && codec_key(fs, n->key, n->key_len))
		return -EOPNOTSUPP;
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
		err = node_local_resize(fs, n, (size_t)size);
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
				      pid, false, NULL, NULL);
	else if (!err)
		err = -ENOMEM;
	pthread_mutex_lock(&fs->lock);
	node_unref(&fs->tree, n);
	pthread_mutex_unlock(&fs->lock);
	free(data);
	free(key);
	return err;
}
