/*
 * move.c - unlink and rename: the changes of names that reach etcd
 *
 * unlink deletes a key only if it is still at the revision the mount
 * knows; a rename of a file is one transaction where the backend has one
 * (check both revisions, put the target, delete the source) and a put
 * then a delete otherwise (etcd v2).  Editors' temp files (file.c) move
 * in memory, and a key renamed to a temp name is deleted only once the
 * temp file goes without a new file taking the key's place.
 *
 * What it cannot do: rename a directory that holds keys (EXDEV: mv then
 * copies and deletes), nor hard links.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"

static struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static double elapsed(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - since->tv_sec) +
	       (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

/*
 * Deletes @n's key if its revision is still @rev.  A key already gone
 * counts as deleted.  Takes fs->lock itself; @n referenced.
 */
static int delete_key(struct fs *fs, struct node *n, const char *key,
		      size_t key_len, int64_t rev, struct inval_list *inv)
{
	struct store_preconditions pre = { .mod_revision = rev };
	struct store_error err = { 0 };
	struct inflight in;
	int64_t drev = 0;
	int ret;

	pthread_mutex_lock(&fs->lock);
	inflight_begin(fs, &in, key, key_len);
	pthread_mutex_unlock(&fs->lock);
	ret = store_delete(fs->store, key, key_len, &pre, NULL, &drev, &err);
	pthread_mutex_lock(&fs->lock);
	if (ret && ret != STORE_ENOTFOUND) {
		inflight_end(fs, &in);
		pthread_mutex_unlock(&fs->lock);
		if (ret != STORE_EPRECONDITION)
			fs_log_store_error("cannot delete", &err);
		return -fs_errno(ret);
	}
	inflight_end(fs, &in);
	if (!n->removed && n->parent && !n->local) {
		struct node *dir = n->parent;

		inval_add(inv, true, node_id(fs, dir), n->name, n->name_len);
		inval_add(inv, false, node_id(fs, dir), NULL, 0);
		node_drop(fs, n);
		tree_keep(fs, dir);
	}
	if (drev > fs->revision)
		fs->revision = drev;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct inval_list inv = { 0 };
	pid_t pid = fuse_req_ctx(req)->pid;
	struct node *dir, *n;
	char *key = NULL;
	size_t key_len = 0;
	struct echo_ev *echo;
	int64_t rev;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	echo = echo_of(fs, req);
	if (fs->cfg.ro && !echo) {
		err = EROFS;
		goto out;
	}
	dir = dir_of(fs, parent, &err);
	if (!dir)
		goto out;
	n = tree_child(fs, dir, name, strlen(name));
	if (!n) {
		err = ENOENT;
		goto out;
	}
	if (n->type == NODE_DIR) {
		err = EISDIR;
		goto out;
	}
	if (echo) {
		/* another client deleted it: the echo's rmdirs prune */
		if (echo->del && n->key_len == echo->kv.key_len &&
		    memcmp(n->key, echo->kv.key, n->key_len) == 0) {
			node_drop(fs, n);
			echo->applied = true;
			if (echo->rev > fs->revision)
				fs->revision = echo->rev;
		} else {
			err = EPERM;
		}
		goto out;
	}
	if (n->local && node_ghost(n)) {
		/* a key moved away to a temp name and never replaced */
		key = n->rare->ghost_key;
		key_len = n->rare->ghost_key_len;
		rev = n->rare->ghost_rev;
		n->rare->ghost_key = NULL;
	} else if (!n->local && !n->pending) {
		key = malloc(n->key_len + 1);
		if (!key) {
			err = ENOMEM;
			goto out;
		}
		memcpy(key, n->key, n->key_len);
		key_len = n->key_len;
		rev = n->mod_revision;
		pin_take(fs, key, key_len, pid, &rev);
		/*
		 * The kernel retries a path operation once on ESTALE, after
		 * looking the name up again: a refused delete stays refused
		 * for that retry, or it would delete what it just refused to.
		 */
		if (n->rare && n->rare->refused_pid == pid &&
		    elapsed(&n->rare->refused_at) < 1.0) {
			n->rare->refused_pid = 0;
			free(key);
			err = ESTALE;
			goto out;
		}
	}
	if (!key) {
		/* local or not committed yet: nothing in etcd */
		node_drop(fs, n);
		tree_keep(fs, dir);
		goto out;
	}
	n->refs++;
	pthread_mutex_unlock(&fs->lock);
	err = -delete_key(fs, n, key, key_len, rev, &inv);
	pthread_mutex_lock(&fs->lock);
	if (err == ESTALE && node_rare(n)) {
		n->rare->refused_pid = pid;
		fs_now(&n->rare->refused_at);
		if (n->local && !n->rare->ghost_key) {
			/* keep the ghost: the key is still there */
			n->rare->ghost_key = key;
			n->rare->ghost_key_len = key_len;
			n->rare->ghost_rev = rev;
			key = NULL;
		}
	} else if (!err && n->local && !n->removed && n->parent) {
		struct node *d = n->parent;

		node_drop(fs, n);
		tree_keep(fs, d);
	}
	node_unref(fs, n);
	free(key);
out:
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, err);
	fs_send_invals(fs, &inv);
}

/* Moves @n to (dir, name) in the tree, removing what was there. */
static void tree_move(struct fs *fs, struct node *n, struct node *dir,
		      const char *name, struct node *old,
		      struct inval_list *inv)
{
	struct node *from = n->parent;

	if (old && old != n) {
		node_drop(fs, old);
	}
	tree_detach(fs, n);
	tree_attach(fs, n, dir, name, strlen(name));
	if (from && from != dir)
		tree_keep(fs, from);
}

/* Replaces @n's key (a malloc()ed buffer it takes). */
static void node_set_key_own(struct node *n, char *key, size_t len)
{
	free(n->key);
	n->key = key;
	n->key_len = len;
}

static int copy_value(void *arg, const struct store_kv *cur,
		      struct store_update *out)
{
	const struct store_kv *src = arg;

	out->value = malloc(src->value_len + 1);
	if (!out->value)
		return STORE_EINTERNAL;
	memcpy(out->value, src->value, src->value_len);
	out->value[src->value_len] = '\0';
	out->value_len = src->value_len;
	out->lease = 0;
	return 0;
}

/*
 * A rename where the backend has no transaction for it (etcd v2): the
 * target is written with a compare-and-swap on what the mount knows of it,
 * then the source deleted with a compare-and-delete.  A crash in between
 * leaves both keys, with the same value; nothing is lost.
 */
static int move_in_two(struct fs *fs, const char *from, size_t from_len,
		       const struct store_preconditions *pre_from,
		       const char *to, size_t to_len,
		       const struct store_preconditions *pre_to, int64_t *rev,
		       struct store_error *err)
{
	struct store_kv src = { 0 }, out = { 0 };
	int ret;

	ret = store_get(fs->store, from, from_len, STORE_READ_QUORUM, &src,
			err);
	if (ret)
		return ret;
	if (pre_from->mod_revision > 0 &&
	    src.mod_revision != pre_from->mod_revision) {
		store_kv_release(&src);
		return STORE_EPRECONDITION;
	}
	ret = store_guaranteed_update(fs->store, to, to_len,
				      pre_to->mod_revision <= 0, pre_to, NULL,
				      copy_value, &src, &out, err);
	if (ret == 0)
		ret = store_delete(fs->store, from, from_len, pre_from, NULL,
				   NULL, err);
	if (ret == 0)
		*rev = out.mod_revision;
	store_kv_release(&src);
	store_kv_release(&out);
	return ret;
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct fs *fs = fs_of(req);
	struct inval_list inv = { 0 };
	struct store_error serr = { 0 };
	struct store_preconditions pre_from = { 0 }, pre_to = { 0 };
	struct node *dir, *ndir, *n, *old;
	struct inflight in_from, in_to;
	char *key = NULL, *from_key = NULL;
	size_t key_len, from_len = 0;
	bool to_temp, in_end = false, loaded = false;
	int64_t rev = 0;
	int err = 0, ret;

	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (flags & ~RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	pthread_mutex_lock(&fs->lock);
again:
	dir = dir_of(fs, parent, &err);
	ndir = dir ? dir_of(fs, newparent, &err) : NULL;
	if (!ndir)
		goto out;
	n = tree_child(fs, dir, name, strlen(name));
	old = tree_child(fs, ndir, newname, strlen(newname));
	if (!n) {
		err = ENOENT;
		goto out;
	}
	if (old == n)
		goto out;
	if (old && (flags & RENAME_NOREPLACE)) {
		err = EEXIST;
		goto out;
	}
	if (n->type == NODE_DIR) {
		/* a directory of keys would be many transactions: mv copies */
		if (!n->local || n->nchildren)
			err = EXDEV;
		else if (old && (old->type != NODE_DIR || old->nchildren))
			err = old->type != NODE_DIR ? ENOTDIR : ENOTEMPTY;
		else
			err = -fs_name_key(fs, ndir, newname, NODE_DIR, &key,
					   &key_len);
		if (!err) {
			node_set_key_own(n, key, key_len);
			key = NULL;
			tree_move(fs, n, ndir, newname, old, &inv);
		}
		goto out;
	}
	if (old && old->type == NODE_DIR) {
		err = EISDIR;
		goto out;
	}
	to_temp = fs->cfg.temp_in_memory && fs_is_temp_name(newname) &&
		  (!old || old->local);
	if (to_temp && !n->value && !n->local && !n->pending) {
		/* the temp file holds the content: an evicted value too */
		err = loaded ? EIO : -fs_load_value(fs, n);
		if (err)
			goto out;
		loaded = true;
		goto again;
	}
	if (to_temp) {
		/* an editor's backup: no key moves until we know more */
		err = -fs_name_key(fs, ndir, newname, NODE_FILE, &key,
				   &key_len);
		if (err)
			goto out;
		if (!n->local && !n->pending && !node_ghost(n)) {
			if (!node_rare(n)) {
				free(key);
				key = NULL;
				err = ENOMEM;
				goto out;
			}
			n->rare->ghost_key = n->key;
			n->rare->ghost_key_len = n->key_len;
			n->rare->ghost_rev = n->mod_revision;
			n->key = NULL;
		}
		n->local = true;
		n->pending = false;
		node_set_key_own(n, key, key_len);
		key = NULL;
		tree_move(fs, n, ndir, newname, old, &inv);
		goto out;
	}
	err = -fs_name_key(fs, ndir, newname, NODE_FILE, &key, &key_len);
	if (err)
		goto out;
	pre_to.mod_revision = old && !old->local && !old->pending ?
			      old->mod_revision : STORE_REV_ABSENT;
	if (n->pending) {
		/* not in etcd yet: the commit at close creates the new key */
		node_set_key_own(n, key, key_len);
		key = NULL;
		n->mod_revision = pre_to.mod_revision > 0 ?
				  pre_to.mod_revision : 0;
		tree_move(fs, n, ndir, newname, old, &inv);
		goto out;
	}
	n->refs++;
	if (old)
		old->refs++;
	if (n->local) {
		/* a temp file saved over a key: one put of its content */
		char *data = malloc(n->size + 1);
		size_t len = n->size;

		if (!data) {
			err = ENOMEM;
			goto out_unref;
		}
		memcpy(data, n->value, len);
		from_key = n->rare ? n->rare->ghost_key : NULL;
		from_len = n->rare ? n->rare->ghost_key_len : 0;
		pre_from.mod_revision = n->rare ? n->rare->ghost_rev : 0;
		if (n->rare)
			n->rare->ghost_key = NULL;
		if (pre_to.mod_revision == STORE_REV_ABSENT && from_key &&
		    from_len == key_len && memcmp(from_key, key, key_len) == 0)
			pre_to.mod_revision = pre_from.mod_revision;
		/* the watch event of this put waits until n is in place */
		inflight_begin(fs, &in_to, key, key_len);
		in_from.key = NULL;
		in_end = true;
		pthread_mutex_unlock(&fs->lock);
		ret = fs_commit_value(fs, n, key, key_len,
				      pre_to.mod_revision, data, len,
				      fuse_req_ctx(req)->pid, false, NULL);
		free(data);
		pthread_mutex_lock(&fs->lock);
		err = -ret;
	} else {
		from_key = malloc(n->key_len + 1);
		if (!from_key) {
			err = ENOMEM;
			goto out_unref;
		}
		memcpy(from_key, n->key, n->key_len);
		from_len = n->key_len;
		pre_from.mod_revision = n->mod_revision;
		pin_take(fs, from_key, from_len, fuse_req_ctx(req)->pid,
			 &pre_from.mod_revision);
		inflight_begin(fs, &in_from, from_key, from_len);
		inflight_begin(fs, &in_to, key, key_len);
		pthread_mutex_unlock(&fs->lock);
		ret = store_move(fs->store, from_key, from_len, &pre_from, key,
				 key_len, &pre_to, NULL, 0, &rev, &serr);
		if (ret == STORE_ENOTSUP)
			ret = move_in_two(fs, from_key, from_len, &pre_from,
					  key, key_len, &pre_to, &rev, &serr);
		pthread_mutex_lock(&fs->lock);
		in_end = true;
		err = fs_errno(ret);
		if (ret && ret != STORE_EPRECONDITION)
			fs_log_store_error("cannot rename", &serr);
		if (!ret) {
			n->mod_revision = rev;
			n->create_revision = rev;
			n->version = 1;
			fs_now(&n->mtime);
			if (rev > fs->revision)
				fs->revision = rev;
		}
		free(from_key);
		from_key = NULL;
	}
	if (!err && !n->removed) {
		node_set_key_own(n, key, key_len);
		key = NULL;
		n->local = false;
		tree_move(fs, n, ndir, newname, old, &inv);
	}
	if (in_end) {
		if (in_from.key)
			inflight_end(fs, &in_from);
		inflight_end(fs, &in_to);
	}
	if (!err && from_key && (from_len != key_len ||
				 memcmp(from_key, n->key, key_len) != 0)) {
		/* the backup of another key was saved here: that key moved */
		pthread_mutex_unlock(&fs->lock);
		ret = store_delete(fs->store, from_key, from_len, &pre_from,
				   NULL, NULL, &serr);
		if (ret && ret != STORE_ENOTFOUND)
			fs_log_store_error("cannot delete", &serr);
		pthread_mutex_lock(&fs->lock);
	}
out_unref:
	if (old)
		node_unref(fs, old);
	node_unref(fs, n);
out:
	pthread_mutex_unlock(&fs->lock);
	free(key);
	free(from_key);
	fuse_reply_err(req, err);
	fs_send_invals(fs, &inv);
}
