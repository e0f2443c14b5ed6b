/*
 * dirmove.c - a directory of keys renamed in one transaction
 *
 * mv DIR NEW, where DIR's keys fit in one etcd transaction (each key is a
 * compare of its revision, a put and a delete, and two range compares:
 * N + 2 compares and 2 * N ops, so N <= max_txn_ops / 2, etcd's
 * --max-txn-ops being 128 by default), is one Txn (store_move_keys):
 * every key compared at the mod_revision the mount knows, the whole old
 * prefix at most at the revision the mirror had applied (so that a key
 * another client added there, and the mount has not seen, fails it), the
 * whole new prefix empty (a key there the mount has not seen fails it
 * too), then each key put under the new prefix with its value and lease,
 * deleted under the old, all at one revision.  A conflict is ESTALE and
 * changes nothing.  While the Txn is in flight (fs->lock dropped) the
 * directory and every directory below it are in the in-flight list: a
 * file or directory created in one of them, or a rename in one, waits
 * (dirmove_wait, inflight_wait), so that its key takes the new prefix,
 * not the old one.  Then the mirror moves the directory node itself, so that
 * every inode (the directory's, its files') stays what the kernel has,
 * as after a local rename: the kernel moves its own entries, and inotify
 * watchers see the rename's MOVED_FROM and MOVED_TO.  The keys' new
 * revisions are the mount's own changes: their watch events change
 * nothing.
 *
 * What it cannot do (EXDEV, and mv copies and deletes key by key): more
 * keys than fit, or more than DM_MAX_TXN_BYTES of keys and values (or
 * more than the cluster's --max-request-bytes: etcd's ETOOLARGE); a
 * directory holding a file open for writing, a temp file, a file not
 * committed yet, or a key being written; v2, which has no multi-key
 * transaction.  A renamed key is a new key for etcd: its version is 1 and
 * its create_revision the rename's.  A lost answer is settled by the
 * store from etcd's history of the keys (helper/store_txn.c): done,
 * ESTALE where a key moved on meanwhile, ETIMEDOUT ("may have been
 * applied") only where etcd can no longer tell.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/*
 * The bytes one transaction carries at most: etcd refuses a request past
 * its --max-request-bytes (1.5 MiB by default) with "request is too
 * large"; below it with room for the framing.
 */
#define DM_MAX_TXN_BYTES (1024 * 1024)

/* One node of the directory, and what becomes of its key. */
struct dm_item {
	struct node *n;		/* referenced */
	char *from;		/* owned copies */
	size_t from_len;
	char *to;
	size_t to_len;
	struct inflight in_from, in_to;
};

struct dirmove {
	struct fs *fs;
	const char *from_prefix;	/* the directory's key, with its '/' */
	size_t from_plen;
	char *to_prefix;		/* the new name's, owned */
	size_t to_plen;
	struct dm_item *items;
	size_t n, cap;
	size_t nfiles;
	size_t max_files;
	size_t bytes;		/* the keys' (a source twice) and values' */
	int64_t revision;	/* the mirror's when collected */
	char *dir_key;		/* a copy of the directory's, for in_dir */
	struct inflight in_dir;
};

/*
 * The key @key under the new prefix: a key below the directory's prefix,
 * or the directory's own "%value" (its prefix without the '/').
 */
static int dm_rekey(struct dirmove *d, const char *key, size_t len,
		    char **out, size_t *out_len)
{
	size_t keep;

	if (len >= d->from_plen && memcmp(key, d->from_prefix,
					   d->from_plen) == 0)
		keep = d->to_plen;
	else if (len == d->from_plen - 1 &&
		 memcmp(key, d->from_prefix, len) == 0)
		keep = d->to_plen - 1;
	else
		return -EXDEV;	/* not below it: not ours to move */
	*out_len = keep + len - (len >= d->from_plen ? d->from_plen :
				 d->from_plen - 1);
	*out = malloc(*out_len + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, d->to_prefix, keep);
	memcpy(*out + keep, key + (len >= d->from_plen ? d->from_plen :
				   d->from_plen - 1), *out_len - keep);
	(*out)[*out_len] = '\0';
	return 0;
}

static int dm_add(struct dirmove *d, struct node *n)
{
	struct dm_item *it;
	int err;

	if (n->type == NODE_FILE) {
		if (n->local || n->pending || n->handles ||
		    inflight_has(d->fs, n->key, n->key_len))
			return -EXDEV;
		if (++d->nfiles > d->max_files)
			return -EXDEV;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		struct dm_item *p = realloc(d->items, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		d->items = p;
		d->cap = cap;
	}
	it = &d->items[d->n];
	memset(it, 0, sizeof(*it));
	it->from = malloc(n->key_len + 1);
	if (!it->from)
		return -ENOMEM;
	memcpy(it->from, n->key, n->key_len);
	it->from[n->key_len] = '\0';
	it->from_len = n->key_len;
	err = dm_rekey(d, n->key, n->key_len, &it->to, &it->to_len);
	if (err) {
		free(it->from);
		return err;
	}
	if (n->type == NODE_FILE) {
		d->bytes += 2 * it->from_len + it->to_len + n->size;
		if (d->bytes > DM_MAX_TXN_BYTES) {
			free(it->from);
			free(it->to);
			return -EXDEV;
		}
	}
	it->n = n;
	n->refs++;
	d->n++;
	return 0;
}

/* @dir's subtree (without @dir) into d->items; fs->lock held. */
static int dm_collect(struct dirmove *d, struct node *dir)
{
	struct node *c;
	int err;

	for (c = dir->child; c; c = c->next) {
		err = dm_add(d, c);
		if (!err && c->type == NODE_DIR)
			err = dm_collect(d, c);
		if (err)
			return err;
	}
	return 0;
}

static void dm_release(struct dirmove *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		node_unref(&d->fs->tree, d->items[i].n);
		free(d->items[i].from);
		free(d->items[i].to);
	}
	free(d->items);
	free(d->to_prefix);
	free(d->dir_key);
}

int dirmove_wait(struct fs *fs, struct node *dir)
{
	if (dir->type == NODE_DIR && inflight_wait(fs, dir) && dir->removed)
		return -ENOENT;
	return 0;
}

/*
 * The files' keys as store_move_keys takes them, values copied (or read,
 * if the value budget evicted them).  fs->lock not held.
 */
static int dm_keys(struct dirmove *d, struct store_move_key *k,
		   char **values)
{
	struct store_error err = { 0 };
	struct store_kv kv;
	size_t i, j = 0;
	int ret;

	for (i = 0; i < d->n; i++) {
		struct dm_item *it = &d->items[i];
		struct node *n = it->n;

		if (n->type != NODE_FILE)
			continue;
		k[j].from = it->from;
		k[j].from_len = it->from_len;
		k[j].to = it->to;
		k[j].to_len = it->to_len;
		pthread_mutex_lock(&d->fs->lock);
		k[j].mod_revision = n->mod_revision;
		k[j].lease = n->lease;
		values[j] = n->value ? malloc(n->size + 1) : NULL;
		if (values[j]) {
			memcpy(values[j], n->value, n->size);
			k[j].value_len = n->size;
		}
		pthread_mutex_unlock(&d->fs->lock);
		if (!values[j]) {
			ret = store_get(d->fs->store, it->from, it->from_len,
					0, &kv, &err);
			if (ret == STORE_ENOTFOUND)
				return -ESTALE;
			if (ret < 0) {
				fs_log_store_error("cannot rename", &err);
				return fs_errno(ret);
			}
			if (kv.mod_revision != k[j].mod_revision) {
				store_kv_release(&kv);
				return -ESTALE;	/* the txn would fail too */
			}
			values[j] = kv.value;
			k[j].value_len = kv.value_len;
			kv.value = NULL;
			store_kv_release(&kv);
		}
		k[j].value = values[j];
		j++;
	}
	return 0;
}

/* The transaction; fs->lock held, dropped meanwhile.  0 or -errno. */
static int dm_send(struct dirmove *d, int64_t *rev)
{
	struct store_error err = { 0 };
	struct store_move_guard g = {
		.from_prefix = d->from_prefix,
		.from_prefix_len = d->from_plen,
		.revision = d->revision,
		.to_prefix = d->to_prefix,
		.to_prefix_len = d->to_plen,
	};
	struct store_move_key *k = calloc(d->nfiles + 1, sizeof(*k));
	char **values = calloc(d->nfiles + 1, sizeof(*values));
	size_t i;
	int ret;

	if (!k || !values) {
		free(k);
		free(values);
		return -ENOMEM;
	}
	pthread_mutex_unlock(&d->fs->lock);
	ret = dm_keys(d, k, values);
	if (ret == 0) {
		ret = store_move_keys(d->fs->store, k, d->nfiles, &g, rev,
				      &err);
		if (ret == STORE_EPRECONDITION || ret == STORE_ENOTFOUND) {
			fuse_log(FUSE_LOG_WARNING, "etcdfs: '%s' not renamed: "
				 "a key below it changed\n", err.key);
			ret = -ESTALE;
		} else if (ret == STORE_EINVAL || ret == STORE_ENOTSUP ||
			   ret == STORE_ETOOLARGE) {
			/*
			 * the cluster's --max-txn-ops or --max-request-bytes
			 * is lower: mv copies
			 */
			fs_log_store_error("renaming a directory in one "
					   "transaction", &err);
			ret = -EXDEV;
		} else if (ret < 0) {
			fs_log_store_error("cannot rename", &err);
			ret = fs_errno(ret);
		}
	}
	for (i = 0; i < d->nfiles; i++)
		free(values[i]);
	free(values);
	free(k);
	pthread_mutex_lock(&d->fs->lock);
	return ret;
}

/* The mirror follows: keys, revisions, and the node itself. */
static void dm_apply(struct dirmove *d, struct node *dir, struct node *ndir,
		     const char *newname, struct node *old, int64_t rev)
{
	struct fs *fs = d->fs;
	struct node *from = dir->parent;
	size_t i;

	for (i = 0; i < d->n; i++) {
		struct dm_item *it = &d->items[i];
		struct node *n = it->n;

		if (n->type == NODE_FILE) {
			own_change_add(fs, it->from, it->from_len, rev);
			own_change_add(fs, it->to, it->to_len, rev);
			n->mod_revision = rev;
			n->create_revision = rev;
			n->version = 1;
		}
		free(n->key);
		n->key = it->to;
		n->key_len = it->to_len;
		it->to = NULL;
	}
	free(dir->key);
	dir->key = d->to_prefix;
	dir->key_len = d->to_plen;
	d->to_prefix = NULL;
	if (old)
		node_drop(&fs->tree, old);
	tree_detach(&fs->tree, dir);
	tree_attach(&fs->tree, dir, ndir, newname, strlen(newname));
	if (from && from != ndir)
		tree_keep(&fs->tree, from);
	if (rev > fs->tree.revision)
		fs->tree.revision = rev;
}

int fs_dirmove(struct fs *fs, struct node *dir, struct node *ndir,
	       const char *newname, struct node *old)
{
	struct dirmove d = { .fs = fs };
	int64_t rev = 0;
	size_t i, ops;
	int err;

	if (old && old->type != NODE_DIR)
		return -ENOTDIR;
	if (old && old->nchildren)
		return -ENOTEMPTY;
	if (strcmp(store_backend_name(fs->store), "etcd2") == 0 ||
	    dir->key_len == 0 || dir->key[dir->key_len - 1] != '/')
		return -EXDEV;
	d.from_prefix = dir->key;
	d.from_plen = dir->key_len;
	ops = fs->cfg.max_txn_ops ? fs->cfg.max_txn_ops : FS_MAX_TXN_OPS;
	/* 2 * N ops, N + 2 compares */
	d.max_files = ops / 2 < ops - 2 ? ops / 2 : ops - 2;
	d.revision = fs->tree.revision;
	err = fs_name_key(fs, ndir, newname, NODE_DIR, &d.to_prefix,
			  &d.to_plen);
	if (!err)
		err = dm_collect(&d, dir);
	if (!err && !d.nfiles)
		err = -EXDEV;	/* no keys: not a directory of keys */
	if (!err && !(d.dir_key = malloc(d.from_plen + 1)))
		err = -ENOMEM;
	if (err) {
		dm_release(&d);
		return err;
	}
	dir->refs++;
	memcpy(d.dir_key, d.from_prefix, d.from_plen);
	d.dir_key[d.from_plen] = '\0';
	inflight_begin(fs, &d.in_dir, d.dir_key, d.from_plen);
	for (i = 0; i < d.n; i++) {
		inflight_begin(fs, &d.items[i].in_from, d.items[i].from,
			       d.items[i].from_len);
		inflight_begin(fs, &d.items[i].in_to, d.items[i].to,
			       d.items[i].to_len);
	}
	if (old)
		old->refs++;
	err = dm_send(&d, &rev);
	/*
	 * Done in etcd.  Should the tree have changed meanwhile (an rmdir
	 * of a place), the watch's events bring the mirror there instead.
	 */
	if (!err && !dir->removed && !ndir->removed)
		dm_apply(&d, dir, ndir, newname,
			 old && !old->removed ? old : NULL, rev);
	if (old)
		node_unref(&fs->tree, old);
	for (i = 0; i < d.n; i++) {
		inflight_end(fs, &d.items[i].in_from);
		inflight_end(fs, &d.items[i].in_to);
	}
	inflight_end(fs, &d.in_dir);
	node_unref(&fs->tree, dir);
	/* the keys came from d.items[].from: freed after inflight_end */
	dm_release(&d);
	return err;
}
