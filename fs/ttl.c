/*
 * ttl.c - user.etcd.ttl: a key's time to live as an extended attribute
 *
 *	setfattr -n user.etcd.ttl -v SECONDS FILE   give the key that TTL
 *	getfattr -n user.etcd.ttl FILE              the seconds it has left
 *	setfattr -n user.etcd.ttl -v 0 FILE         make it permanent again
 *	setfattr -x user.etcd.ttl FILE              the same
 *
 * A set is one compare-and-swap on the revision the mount shows (or the
 * one pinned with user.etcd.pin by the same script): the value is put
 * again, unchanged, with a new lease of SECONDS (v3) or with that TTL
 * (v2), through store_set_ttl; if the key changed meanwhile it is ESTALE
 * and nothing changed.  The mirror takes the new revision at once, as
 * for any commit of the mount's own.  A read asks etcd (Lease
 * TimeToLive, or on v2 the key): a key without a time to live, or whose
 * lease has just run out, is ENODATA.  When the TTL runs out etcd
 * deletes the key, and the watch shows that as any other deletion.
 *
 * Once a new TTL or a detach has committed, the lease this mount granted
 * for the key before is revoked: it held that key alone and would only
 * run on, holding nothing.  A lease the mount did not grant for that key
 * (another client's, which may hold other keys) is left alone; so is one
 * the key still has (an edit, or another client, put the key with it
 * again).  A revoke that fails is logged: the TTL set has committed.
 *
 * What it cannot do: keep a lease alive; give the key back its old lease;
 * revoke a lease granted by an earlier mount, or one whose key was
 * deleted or moved to another lease by another client (it runs out); set
 * a TTL on a file that is not a key yet (a new file before its first
 * commit, a temp file: ENODATA); tell the TTL a key had at a past
 * revision (-o revision=: ENODATA, etcd keeps none).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "ops.h"

#define TTL_NAME "user.etcd.ttl"

bool fs_ttl_xattr(const char *name)
{
	return strcmp(name, TTL_NAME) == 0;
}

/* The seconds in @value: a decimal 0..STORE_TTL_MAX, or -EINVAL. */
static int parse_ttl(const char *value, size_t size, int64_t *ttl)
{
	char buf[32], *end;
	long long v;

	while (size && (value[size - 1] == '\n' || value[size - 1] == ' '))
		size--;
	if (size == 0 || size >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, value, size);
	buf[size] = '\0';
	if (buf[0] < '0' || buf[0] > '9')
		return -EINVAL;	/* no sign, no space: a number of seconds */
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || *end || v < 0 || v > STORE_TTL_MAX)
		return -EINVAL;
	*ttl = v;
	return 0;
}

static double elapsed(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - since->tv_sec) +
	       (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

static bool is_key(const struct node *n)
{
	return n->type == NODE_FILE && !n->local && !n->pending;
}

/*
 * A copy of @ino's key, its lease and the revision a change of it is
 * based on (@pid's pin, else the mirror's); fs->lock held.
 */
static int key_of(struct fs *fs, fuse_ino_t ino, pid_t pid, char **key,
		  size_t *key_len, int64_t *lease, int64_t *base)
{
	struct node *n = node_of(fs, ino);

	if (!is_key(n))
		return n->type == NODE_DIR ? -EISDIR : -ENODATA;
	*key = malloc(n->key_len + 1);
	if (!*key)
		return -ENOMEM;
	memcpy(*key, n->key, n->key_len);
	(*key)[n->key_len] = '\0';
	*key_len = n->key_len;
	*lease = n->lease;
	*base = n->mod_revision;
	if (!pid)
		return 0;
	pin_take(fs, *key, *key_len, pid, base);
	/*
	 * The kernel retries a path operation once on ESTALE, after looking
	 * the name up again (as for unlink, fs/move.c): a refused set stays
	 * refused for that retry, or it would set what it just refused to.
	 */
	if (n->rare && n->rare->ttl_refused_pid == pid &&
	    elapsed(&n->rare->ttl_refused_at) < 1.0) {
		n->rare->ttl_refused_pid = 0;
		free(*key);
		*key = NULL;
		return -ESTALE;
	}
	return 0;
}

/* @pid's set of @ino was refused: so is the kernel's retry of it. */
static void refused(struct fs *fs, fuse_ino_t ino, pid_t pid)
{
	struct node_rare *r = node_rare(node_of(fs, ino));

	if (r) {
		r->ttl_refused_pid = pid;
		clock_gettime(CLOCK_REALTIME, &r->ttl_refused_at);
	}
}

void fs_ttl_get(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs = fs_of(req);
	struct store_error err = { 0 };
	int64_t lease = 0, base = 0, ttl = 0;
	char buf[32], *key = NULL;
	size_t key_len = 0;
	int len, ret;

	if (fs->cfg.revision) {
		/* etcd keeps no past times to live: only the lease's now */
		fuse_reply_err(req, ENODATA);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	ret = key_of(fs, ino, 0, &key, &key_len, &lease, &base);
	pthread_mutex_unlock(&fs->lock);
	if (ret == 0) {
		ret = store_key_ttl(fs->store, key, key_len, lease, &ttl,
				    &err);
		if (ret < 0) {
			fs_log_store_error("cannot read the time to live",
					   &err);
			ret = fs_errno(ret);
		} else if (ttl == 0) {
			ret = -ENODATA;
		}
	}
	free(key);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	len = snprintf(buf, sizeof(buf), "%" PRId64, ttl);
	if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else if (size < (size_t)len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

/*
 * @ino's key was put with lease @now by this mount: remembers it, and
 * returns the lease this mount granted the key before if it is now free
 * to revoke (0 if none).  fs->lock held.
 */
static int64_t granted(struct fs *fs, fuse_ino_t ino, int64_t now)
{
	struct node *n = node_of(fs, ino);
	struct node_rare *r = now || n->rare ? node_rare(n) : NULL;
	int64_t old;

	if (!r)
		return 0;	/* no memory: the old one runs out */
	old = r->granted_lease;
	r->granted_lease = now;
	return old == now ? 0 : old;
}

/* Revokes @lease, which held @key alone; a failure is only logged. */
static void revoke_old(struct fs *fs, const char *key, int64_t lease)
{
	struct store_error err = { 0 };
	int ret = store_lease_revoke(fs->store, lease, &err);

	if (ret == STORE_ENOTFOUND || ret == 0)
		return;	/* gone already: it ran out */
	fuse_log(FUSE_LOG_WARNING, "etcdfs: '%s': cannot revoke its old "
		 "lease %llx: %s\n", key, (long long)lease,
		 err.msg[0] ? err.msg : store_strerror(ret));
}

/* Sets @ino's time to live to @ttl (0: none); 0 or -errno. */
static int ttl_set(struct fs *fs, fuse_ino_t ino, pid_t pid, int64_t ttl,
		   bool remove)
{
	struct store_error err = { 0 };
	struct store_kv out = { 0 };
	struct inval_list inv = { 0 };
	struct inflight in;
	int64_t lease = 0, base = 0, old = 0;
	char *key = NULL;
	size_t key_len = 0;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = key_of(fs, ino, pid, &key, &key_len, &lease, &base);
	pthread_mutex_unlock(&fs->lock);
	if (ret == 0 && remove) {
		/* as for any xattr: removing one that is not there fails */
		ret = store_key_ttl(fs->store, key, key_len, lease, &ttl,
				    &err);
		ret = ret < 0 ? fs_errno(ret) : ttl == 0 ? -ENODATA : 0;
		ttl = 0;
	}
	if (ret < 0) {
		free(key);
		return ret;
	}
	pthread_mutex_lock(&fs->lock);
	inflight_begin(fs, &in, key, key_len);
	pthread_mutex_unlock(&fs->lock);

	ret = store_set_ttl(fs->store, key, key_len, base, ttl, &out, &err);
	if (ret == STORE_ENOTFOUND)
		ret = STORE_EPRECONDITION;	/* deleted since it was seen */
	pthread_mutex_lock(&fs->lock);
	if (ret == 0 && out.mod_revision > base) {
		/* the mirror has it: its watch event changes nothing */
		tree_put(&fs->tree, &out, &inv);
		own_change_add(fs, key, key_len, out.mod_revision);
		old = granted(fs, ino, out.lease);
	} else if (ret == STORE_EPRECONDITION || ret == STORE_ECONFLICT) {
		refused(fs, ino, pid);
	}
	inflight_end(fs, &in);
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);
	if (old)
		revoke_old(fs, key, old);
	if (ret == STORE_EPRECONDITION || ret == STORE_ECONFLICT)
		fuse_log(FUSE_LOG_WARNING, "etcdfs: '%s': time to live not "
			 "set: changed since revision %lld\n", err.key,
			 (long long)base);
	else if (ret < 0)
		fs_log_store_error("cannot set the time to live", &err);
	store_kv_release(&out);
	free(key);
	return ret < 0 ? fs_errno(ret) : 0;
}

void fs_ttl_set(fuse_req_t req, fuse_ino_t ino, const char *value,
		size_t size)
{
	struct fs *fs = fs_of(req);
	int64_t ttl = 0;
	int ret;

	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	ret = parse_ttl(value, size, &ttl);
	if (ret == 0)
		ret = ttl_set(fs, ino, fuse_req_ctx(req)->pid, ttl, false);
	fuse_reply_err(req, -ret);
}

void fs_ttl_remove(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);

	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fuse_reply_err(req, -ttl_set(fs, ino, fuse_req_ctx(req)->pid, 0,
				     true));
}
