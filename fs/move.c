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
 * What it cannot do: rename a directory of more keys than one
 * transaction holds (fs/dirmove.c; EXDEV: mv then
 * copies and deletes), nor hard links.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"
#include "ops.h"

static double elapsed(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - since->tv_sec) +
	       (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

/*
 * Deletes @n's key if its revision is still @rev.  A key already gone
 * counts as deleted; then @n is out of the tree and its writers commit
 * nothing.  @in: begun for @key by the caller.  Takes fs->lock itself;
 * @n referenced.
 */
static int delete_key(struct fs *fs, struct node *n, const char *key,
		      size_t key_len, int64_t rev, struct inflight *in,
		      struct inval_list *inv)
{
	struct store_preconditions pre = { .mod_revision = rev };
	struct store_error err = { 0 };
	int64_t drev = 0;
	int ret;

	ret = store_delete(fs->store, key, key_len, &pre, NULL, &drev, &err);
	pthread_mutex_lock(&fs->lock);
	if (ret && ret != STORE_ENOTFOUND) {
		inflight_end(fs, in);
		pthread_mutex_unlock(&fs->lock);
		if (ret != STORE_EPRECONDITION)
			fs_log_store_error("cannot delete", &err);
		return fs_errno(ret);
	}
	/* the key is gone from the mirror too: its event changes nothing */
	if (!ret)
		own_change_add(fs, key, key_len, drev);
	inflight_end(fs, in);
	if (!n->removed && n->parent && !n->local) {
		struct node *dir = n->parent;

		inval_add(inv, true, node_id(fs, dir), n->name, n->name_len);
		inval_add(inv, false, node_id(fs, dir), NULL, 0);
		node_drop_writers(fs, n);
		node_drop(&fs->tree, n);
		tree_keep(&fs->tree, dir);
	}
	if (drev > fs->tree.revision)
		fs->tree.revision = drev;
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
	struct inflight in;
	int64_t rev;
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
again:
	err = -dir_of(fs, parent, &dir);
	if (err)
		goto out;
	if (echo) {
		/* another client deleted the key: gone from the mirror */
		if (!echo_remove(fs, echo, dir, name, NODE_FILE))
			err = EPERM;
		goto out;
	}
	n = tree_child(&fs->tree, dir, name, strlen(name));
	if (!n) {
		err = ENOENT;
		goto out;
	}
	if (n->type == NODE_DIR) {
		err = EISDIR;
		goto out;
	}
	/* a commit of this file (a close's, at release) goes first */
	if (!n->local && inflight_wait(fs, n))
		goto again;
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
		node_drop_writers(fs, n);
		node_drop(&fs->tree, n);
		tree_keep(&fs->tree, dir);
		goto out;
	}
	n->refs++;
	/* a close's commit that comes now waits for this delete */
	inflight_begin(fs, &in, key, key_len);
	pthread_mutex_unlock(&fs->lock);
	err = -delete_key(fs, n, key, key_len, rev, &in, &inv);
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

		node_drop_writers(fs, n);
		node_drop(&fs->tree, n);
		tree_keep(&fs->tree, d);
	}
	node_unref(&fs->tree, n);
	free(key);
out:
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, err);
	fs_send_invals(fs, &inv);
}

/*
 * Moves @n to (dir, name) in the tree, removing what was there: as after
 * an unlink, its writers commit nothing.
 */
static void tree_move(struct fs *fs, struct node *n, struct node *dir,
		      const char *name, struct node *old,
		      struct inval_list *inv)
{
	struct node *from = n->parent;

	if (old && old != n) {
		node_drop_writers(fs, old);
		node_drop(&fs->tree, old);
	}
	tree_detach(&fs->tree, n);
	tree_attach(&fs->tree, n, dir, name, strlen(name));
	if (from && from != dir)
		tree_keep(&fs->tree, from);
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
 * leaves both keys, with the same value; nothing is lost.  With @empty,
 * the target's value is empty (a truncation that goes with the move).
 * *@rev: the put's revision, *@del_rev: the delete's.
 */
static int move_in_two(struct fs *fs, const char *from, size_t from_len,
		       const struct store_preconditions *pre_from,
		       const char *to, size_t to_len,
		       const struct store_preconditions *pre_to, bool empty,
		       int64_t *rev, int64_t *del_rev,
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
	if (empty)
		src.value_len = 0;
	ret = store_guaranteed_update(fs->store, to, to_len,
				      pre_to->mod_revision <= 0, pre_to, NULL,
				      copy_value, &src, &out, err);
	if (ret == 0)
		ret = store_delete(fs->store, from, from_len, pre_from, NULL,
				   del_rev, err);
	if (ret == 0)
		*rev = out.mod_revision;
	store_kv_release(&src);
	store_kv_release(&out);
	return ret;
}

/*
 * One rename of a file, for the helpers below; fs->lock held in each, and
 * each returns 0 or -errno.
 */
struct rename_op {
	struct fs *fs;
	pid_t pid;
	struct node *n;		/* the file, referenced */
	struct node *old;	/* what the new name holds, or NULL */
	struct node *ndir;
	const char *newname;
	char *key;		/* the new name's key: owned, until placed */
	size_t key_len;
	int64_t pre_to;		/* old's revision, or STORE_REV_ABSENT */
	struct inval_list *inv;
};

/* @n takes its new name and key in the tree. */
static void rename_place(struct rename_op *op, bool local)
{
	struct node *n = op->n;

	if (n->removed)
		return;
	node_set_key_own(n, op->key, op->key_len);
	op->key = NULL;
	n->local = local;
	if (!local && n->rare && n->rare->mode_set) {
		/* a key's mode is the mount's: the kernel forgets the other */
		n->rare->mode_set = false;
		inval_add(op->inv, false, node_id(op->fs, n), NULL, 0);
	}
	tree_move(op->fs, n, op->ndir, op->newname, op->old, op->inv);
}

/* An empty directory of the mount's own: only its name changes. */
static int rename_dir(struct rename_op *op)
{
	struct node *old = op->old;
	int err;

	/* a directory of keys: one transaction if they fit (dirmove.c) */
	if (!op->n->local || op->n->nchildren)
		return fs_dirmove(op->fs, op->n, op->ndir, op->newname, old);
	if (old && (old->type != NODE_DIR || old->nchildren))
		return old->type != NODE_DIR ? -ENOTDIR : -ENOTEMPTY;
	err = fs_name_key(op->fs, op->ndir, op->newname, NODE_DIR, &op->key,
			   &op->key_len);
	if (!err) {
		node_set_key_own(op->n, op->key, op->key_len);
		op->key = NULL;
		tree_move(op->fs, op->n, op->ndir, op->newname, old, op->inv);
	}
	return err;
}

/* A key renamed to a temp name (an editor's backup): no key moves yet. */
static int rename_to_temp(struct rename_op *op)
{
	struct node *n = op->n;

	if (!n->local && !n->pending && !node_ghost(n)) {
		if (!node_rare(n))
			return -ENOMEM;
		n->rare->ghost_key = n->key;
		n->rare->ghost_key_len = n->key_len;
		n->rare->ghost_rev = n->mod_revision;
		n->key = NULL;
	}
	if (node_closed_truncation(n)) {
		/* what its writer left it: empty */
		node_local_resize(op->fs, n, 0);
		node_writers_moved(op->fs, n, n->mod_revision,
				   n->mod_revision);
	}
	n->pending = false;
	rename_place(op, true);
	return 0;
}

/* A new file, not in etcd yet: the commit creates the new name's key. */
static int rename_pending(struct rename_op *op)
{
	struct fs *fs = op->fs;
	struct node *n = op->n;
	int64_t from_rev = n->mod_revision, rev = 0;
	struct timespec mtime = n->mtime;
	struct inflight in_from, in_to;
	char *from_key;
	int err;

	n->mod_revision = op->pre_to > 0 ? op->pre_to : 0;
	if (!node_closed_truncation(n)) {
		/* still open: its close commits it, under the new name */
		rename_place(op, false);
		return 0;
	}
	/*
	 * Closed already: its creation is committed now, as it was called,
	 * and its release, which would commit it under the old name, waits.
	 */
	from_key = malloc(n->key_len + 1);
	if (!from_key) {
		n->mod_revision = from_rev;
		return -ENOMEM;
	}
	memcpy(from_key, n->key, n->key_len);
	inflight_begin(fs, &in_from, from_key, n->key_len);
	inflight_begin(fs, &in_to, op->key, op->key_len);
	pthread_mutex_unlock(&fs->lock);
	err = fs_commit_value(fs, n, op->key, op->key_len, n->mod_revision,
			      "", 0, op->pid, false, &rev, NULL);
	pthread_mutex_lock(&fs->lock);
	if (err) {
		n->mod_revision = from_rev;
	} else {
		n->mtime = mtime;	/* a rename keeps the file's times */
		node_writers_moved(fs, n, from_rev, rev);
		rename_place(op, false);
	}
	inflight_end(fs, &in_from);
	inflight_end(fs, &in_to);
	free(from_key);
	return err;
}

/* A temp file saved over a key: one put of its content. */
static int rename_local(struct rename_op *op)
{
	struct fs *fs = op->fs;
	struct node *n = op->n;
	struct store_preconditions pre_from = { 0 };
	struct store_error serr = { 0 };
	char *data = malloc(n->size + 1), *from_key;
	size_t len = n->size, from_len;
	struct timespec mtime = n->mtime;
	struct inflight in_to;
	int err, ret;

	if (!data)
		return -ENOMEM;
	memcpy(data, n->value, len);
	from_key = n->rare ? n->rare->ghost_key : NULL;
	from_len = n->rare ? n->rare->ghost_key_len : 0;
	pre_from.mod_revision = n->rare ? n->rare->ghost_rev : 0;
	if (n->rare)
		n->rare->ghost_key = NULL;
	if (op->pre_to == STORE_REV_ABSENT && from_key &&
	    from_len == op->key_len && memcmp(from_key, op->key, from_len) == 0)
		op->pre_to = pre_from.mod_revision;
	/* the watch event of this put waits until n is in place */
	inflight_begin(fs, &in_to, op->key, op->key_len);
	pthread_mutex_unlock(&fs->lock);
	err = fs_commit_value(fs, n, op->key, op->key_len, op->pre_to, data,
			      len, op->pid, false, NULL, NULL);
	free(data);
	pthread_mutex_lock(&fs->lock);
	if (!err) {
		n->mtime = mtime;	/* rsync -t set it on the temp file */
		rename_place(op, false);
	}
	inflight_end(fs, &in_to);
	if (err && from_key && n->rare && !n->rare->ghost_key) {
		/* not saved: the temp file still stands for that key */
		n->rare->ghost_key = from_key;
		from_key = NULL;
	}
	if (!err && from_key && (from_len != n->key_len ||
				 memcmp(from_key, n->key, from_len) != 0)) {
		/* the backup of another key was saved here: that key moved */
		int64_t drev = 0;

		pthread_mutex_unlock(&fs->lock);
		ret = store_delete(fs->store, from_key, from_len, &pre_from,
				   NULL, &drev, &serr);
		if (ret && ret != STORE_ENOTFOUND)
			fs_log_store_error("cannot delete", &serr);
		pthread_mutex_lock(&fs->lock);
		if (!ret)
			own_change_add(fs, from_key, from_len, drev);
	}
	free(from_key);
	return err;
}

/* A key renamed to another: one transaction (v3), or two (v2). */
static int rename_key(struct rename_op *op)
{
	struct fs *fs = op->fs;
	struct node *n = op->n;
	struct store_preconditions pre_from = { 0 };
	struct store_preconditions pre_to = { .mod_revision = op->pre_to };
	struct store_error serr = { 0 };
	int64_t rev = 0, del_rev = 0, from_rev = n->mod_revision;
	/* a truncation closed but not committed yet goes with the move */
	bool carry = node_closed_truncation(n);
	char *from_key = malloc(n->key_len + 1);
	size_t from_len = n->key_len;
	struct inflight in_from, in_to;
	int ret;

	if (!from_key)
		return -ENOMEM;
	memcpy(from_key, n->key, from_len);
	pre_from.mod_revision = n->mod_revision;
	pin_take(fs, from_key, from_len, op->pid, &pre_from.mod_revision);
	inflight_begin(fs, &in_from, from_key, from_len);
	inflight_begin(fs, &in_to, op->key, op->key_len);
	pthread_mutex_unlock(&fs->lock);
	ret = store_move(fs->store, from_key, from_len, &pre_from, op->key,
			 op->key_len, &pre_to, carry ? "" : NULL, 0, &rev,
			 &serr);
	if (!ret)
		del_rev = rev;	/* one transaction */
	if (ret == STORE_ENOTSUP)
		ret = move_in_two(fs, from_key, from_len, &pre_from, op->key,
				  op->key_len, &pre_to, carry, &rev, &del_rev,
				  &serr);
	pthread_mutex_lock(&fs->lock);
	if (ret && ret != STORE_EPRECONDITION)
		fs_log_store_error("cannot rename", &serr);
	if (!ret) {
		n->mod_revision = rev;
		n->create_revision = rev;
		n->version = 1;
		/* a rename keeps the file's times, as on a local disk */
		if (carry)
			node_set_value(&fs->tree, n, "", 0);
		if (rev > fs->tree.revision)
			fs->tree.revision = rev;
		node_writers_moved(fs, n, from_rev, rev);
		/* the mirror has the move: its events change nothing */
		own_change_add(fs, from_key, from_len, del_rev);
		if (!n->removed)
			own_change_add(fs, op->key, op->key_len, rev);
		rename_place(op, false);
	}
	inflight_end(fs, &in_from);
	inflight_end(fs, &in_to);
	free(from_key);
	return fs_errno(ret);
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct fs *fs = fs_of(req);
	struct inval_list inv = { 0 };
	struct rename_op op = { .fs = fs, .pid = fuse_req_ctx(req)->pid,
				.newname = newname, .inv = &inv };
	struct node *dir, *n, *old;
	bool to_temp, loaded = false;
	int err = 0;

	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (flags & ~RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (fs_name_too_long(name) || fs_name_too_long(newname)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	pthread_mutex_lock(&fs->lock);
again:
	err = -dir_of(fs, parent, &dir);
	if (!err)
		err = -dir_of(fs, newparent, &op.ndir);
	if (err)
		goto out;
	/*
	 * a rename of either directory in flight (dirmove.c) goes first: its
	 * keys are in flight, and the names here take its new prefix
	 */
	if (inflight_wait(fs, dir) || inflight_wait(fs, op.ndir)) {
		if (dir->removed || op.ndir->removed) {
			err = ENOENT;
			goto out;
		}
		goto again;
	}
	n = op.n = tree_child(&fs->tree, dir, name, strlen(name));
	old = op.old = tree_child(&fs->tree, op.ndir, newname, strlen(newname));
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
		err = -rename_dir(&op);
		goto out;
	}
	if (old && old->type == NODE_DIR) {
		err = EISDIR;
		goto out;
	}
	/* a commit of either file (a close's, at release) goes first */
	if ((!n->local && inflight_wait(fs, n)) ||
	    (old && !old->local && inflight_wait(fs, old)))
		goto again;
	to_temp = fs->cfg.temp_in_memory && fs_is_temp_name(fs, newname) &&
		  (!old || old->local);
	if (to_temp && !n->value && !n->local && !n->pending) {
		/* the temp file holds the content: an evicted value too */
		err = loaded ? EIO : -fs_load_value(fs, n);
		if (err)
			goto out;
		loaded = true;
		goto again;
	}
	err = -fs_name_key(fs, op.ndir, newname, NODE_FILE, &op.key,
			   &op.key_len);
	if (err)
		goto out;
	if (to_temp) {
		err = -rename_to_temp(&op);
		goto out;
	}
	op.pre_to = old && !old->local && !old->pending ? old->mod_revision :
							  STORE_REV_ABSENT;
	n->refs++;
	if (old)
		old->refs++;
	if (n->pending)
		err = -rename_pending(&op);
	else if (n->local)
		err = -rename_local(&op);
	else
		err = -rename_key(&op);
	if (old)
		node_unref(&fs->tree, old);
	node_unref(&fs->tree, n);
out:
	pthread_mutex_unlock(&fs->lock);
	free(op.key);
	fuse_reply_err(req, err);
	fs_send_invals(fs, &inv);
}
