/*
 * xattr.c - a key's revisions as extended attributes, and setting pins
 * (kept in pins.c)
 *
 * Readable on a file of a key:
 *   user.etcd.resourceVersion  its mod_revision (Kubernetes' name for it)
 *   user.etcd.createRevision   its create_revision (changes if recreated)
 *   user.etcd.version          how many times it was written since created
 *   user.etcd.lease            its lease id in hex, as etcdctl prints it;
 *                              0 if none
 *   user.etcd.key              the key itself, relative to the mount prefix
 * and on the mount root: user.etcd.endpoint, user.etcd.revision (the
 * revision the mount has seen, and told the kernel of: live.c's
 * fs_revision_shown), user.etcd.backend, user.etcd.watch,
 * user.etcd.valueBytes (the bytes of values held in memory: only counted
 * under -o value_budget, else "all"), user.etcd.stats (counters,
 * fs/stats.c).
 *
 * Readable on a file whose value is a Kubernetes object (protobuf with the
 * "k8s\0" magic, or a JSON object): user.k8s.apiVersion and user.k8s.kind,
 * from its TypeMeta (helper/object.c), read when asked for and not before;
 * an evicted value is read from etcd again for it.  ENODATA where the value
 * is not an object or has no such field, EBADMSG where its protobuf
 * envelope is malformed.  They are listed where the value is in memory and
 * its first bytes say it may be an object (listing parses nothing).
 *
 * user.etcd.ttl (the seconds a key has left, settable) is fs/ttl.c's; it
 * is listed where the key has a lease.  user.etcd.history (the key's
 * revisions etcd holds) is fs/history.c's, not listed: it costs requests.
 *
 * Writable: user.etcd.pin.  `setfattr -n user.etcd.pin -v REV FILE` pins the
 * revision that the next commit of FILE's key by the same script must be
 * based on.  The pin belongs to the script that ran setfattr (setfattr's
 * parent process) and applies to the next write, truncate, rename or
 * delete of that key by the script itself or by one of its children; it
 * is used once.  Scripts running at the same time each have their own pins,
 * so their read-modify-write loops never disturb one another:
 *
 *	rev=$(getfattr --only-values -n user.etcd.resourceVersion counter)
 *	n=$(cat counter)
 *	setfattr -n user.etcd.pin -v "$rev" counter
 *	echo $((n + 1)) | cat > counter || retry   # ESTALE if it moved on
 *
 * A pin is forgotten when its script exits or after ten minutes.
 *
 * What it cannot do: store arbitrary xattrs (etcd keys have none).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "ops.h"
#include "object.h"

#define XA_PREFIX "user.etcd."
#define XA_K8S_PREFIX "user.k8s."

static const char *const file_names[] = {
	"user.etcd.resourceVersion",
	"user.etcd.createRevision",
	"user.etcd.version",
	"user.etcd.lease",
	"user.etcd.key",
};

static const char *const k8s_names[] = {
	"user.k8s.apiVersion",
	"user.k8s.kind",
};

static const char *const root_names[] = {
	"user.etcd.endpoint",
	"user.etcd.revision",
	"user.etcd.backend",
	"user.etcd.watch",
	"user.etcd.valueBytes",
	"user.etcd.stats",
};

static bool is_key_file(struct node *n)
{
	return n->type == NODE_FILE && !n->local && !n->pending;
}

/* Fills @buf with the value of @name on @n; its length, or -errno. */
static ssize_t xattr_value(struct fs *fs, struct node *n, const char *name,
			   pid_t pid, char *buf, size_t size, char **big)
{
	int64_t v;

	*big = NULL;
	if (n == fs->tree.root) {
		if (strcmp(name, "user.etcd.endpoint") == 0)
			return snprintf(buf, size, "%s",
					store_endpoint(fs->store));
		if (strcmp(name, "user.etcd.revision") == 0)
			return snprintf(buf, size, "%" PRId64,
					fs_revision_shown(fs));
		if (strcmp(name, "user.etcd.backend") == 0)
			return snprintf(buf, size, "%s",
					store_backend_name(fs->store));
		if (strcmp(name, "user.etcd.watch") == 0)
			return snprintf(buf, size, "%s",
					fs->cfg.nowatch ? "off" :
					fs->mirror.watch_ok ? "connected" :
					"connecting");
		if (strcmp(name, "user.etcd.stats") == 0)
			return fs_stats_text(fs, big);	/* fs/stats.c */
		if (strcmp(name, "user.etcd.valueBytes") == 0)
			return fs->cfg.value_budget ?
				       snprintf(buf, size, "%zu",
						fs->tree.value_bytes) :
				       snprintf(buf, size, "all");
		return -ENODATA;
	}
	if (!is_key_file(n))
		return -ENODATA;
	if (strcmp(name, "user.etcd.resourceVersion") == 0)
		v = n->mod_revision;
	else if (strcmp(name, "user.etcd.createRevision") == 0)
		v = n->create_revision;
	else if (strcmp(name, "user.etcd.version") == 0)
		v = n->version;
	else if (strcmp(name, "user.etcd.lease") == 0)
		/* as etcdctl prints and takes it: 16 hex digits; 0: none */
		return n->lease ? snprintf(buf, size, "%016" PRIx64,
					   (uint64_t)n->lease) :
				  snprintf(buf, size, "0");
	else if (strcmp(name, "user.etcd.key") == 0) {
		*big = malloc(n->key_len ? n->key_len : 1);
		if (!*big)
			return -ENOMEM;
		memcpy(*big, n->key, n->key_len);
		return (ssize_t)n->key_len;
	} else if (strcmp(name, "user.etcd.pin") == 0) {
		if (!pin_peek(fs, n->key, n->key_len, pid, &v))
			return -ENODATA;
	} else {
		return -ENODATA;
	}
	return snprintf(buf, size, "%" PRId64, v);
}

/*
 * user.k8s.@name of @n into *@big: its length, or -errno.  fs->lock held;
 * dropped while an evicted value is read again, and while the copy of the
 * value is parsed, so that a large JSON object holds up no other call.
 */
static ssize_t k8s_value(struct fs *fs, struct node *n, const char *name,
			 char **big)
{
	struct object_meta m;
	char *copy, *s;
	size_t len;
	int err;

	*big = NULL;
	if (strcmp(name, "apiVersion") != 0 && strcmp(name, "kind") != 0)
		return -ENODATA;
	if (!is_key_file(n))
		return -ENODATA;
	err = fs_load_value(fs, n);
	if (err)
		return err;
	if (!n->value)
		return -EIO;
	len = n->size;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, n->value, len);
	pthread_mutex_unlock(&fs->lock);
	err = object_meta(copy, len, &m);
	free(copy);
	pthread_mutex_lock(&fs->lock);
	if (err)
		return err;
	if (strcmp(name, "kind") == 0) {
		s = m.kind;
		len = m.kind_len;
		m.kind = NULL;
	} else {
		s = m.api_version;
		len = m.api_version_len;
		m.api_version = NULL;
	}
	object_meta_release(&m);
	if (!s)
		return -ENODATA;
	*big = s;
	return (ssize_t)len;
}

void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 size_t size)
{
	struct fs *fs = fs_of(req);
	char buf[512], *big;
	const char *val;
	ssize_t len;
	bool k8s = strncmp(name, XA_K8S_PREFIX, strlen(XA_K8S_PREFIX)) == 0;

	if (!k8s && strncmp(name, XA_PREFIX, strlen(XA_PREFIX)) != 0) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (fs_ttl_xattr(name)) {
		fs_ttl_get(req, ino, size);
		return;
	}
	if (fs_history_xattr(name)) {
		fs_history_get(req, ino, size);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	if (k8s)
		len = k8s_value(fs, node_of(fs, ino),
				name + strlen(XA_K8S_PREFIX), &big);
	else
		len = xattr_value(fs, node_of(fs, ino), name,
				  fuse_req_ctx(req)->pid, buf, sizeof(buf),
				  &big);
	pthread_mutex_unlock(&fs->lock);
	val = big ? big : buf;
	if (len < 0)
		fuse_reply_err(req, (int)-len);
	else if ((size_t)len >= sizeof(buf) && !big)
		fuse_reply_err(req, E2BIG);
	else if (size == 0 && ino == FUSE_ROOT_ID &&
		 strcmp(name, "user.etcd.stats") == 0)
		/* the counters move between this call and the read */
		fuse_reply_xattr(req, (size_t)len + 1024);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else if (size < (size_t)len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, (size_t)len);
	free(big);
}

void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs = fs_of(req);
	const char *const *names = NULL;
	char buf[512];
	size_t n = 0, len = 0, i;
	struct node *node;
	bool k8s = false, ttl = false;

	pthread_mutex_lock(&fs->lock);
	node = node_of(fs, ino);
	if (node == fs->tree.root) {
		names = root_names;
		n = sizeof(root_names) / sizeof(root_names[0]);
	} else if (is_key_file(node)) {
		names = file_names;
		n = sizeof(file_names) / sizeof(file_names[0]);
		k8s = node->value && object_maybe(node->value, node->size);
		ttl = node->lease != 0;
	}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		size_t l = strlen(names[i]) + 1;

		memcpy(buf + len, names[i], l);
		len += l;
	}
	for (i = 0; k8s && i < sizeof(k8s_names) / sizeof(k8s_names[0]);
	     i++) {
		size_t l = strlen(k8s_names[i]) + 1;

		memcpy(buf + len, k8s_names[i], l);
		len += l;
	}
	if (ttl) {
		memcpy(buf + len, "user.etcd.ttl", sizeof("user.etcd.ttl"));
		len += sizeof("user.etcd.ttl");
	}
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
}

static int parse_rev(const char *value, size_t size, int64_t *rev)
{
	char buf[32], *end;
	long long v;

	while (size && (value[size - 1] == '\n' || value[size - 1] == ' '))
		size--;
	if (size == 0 || size >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, value, size);
	buf[size] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || *end || v <= 0)
		return -EINVAL;
	*rev = v;
	return 0;
}

void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags)
{
	struct fs *fs = fs_of(req);
	struct node *n;
	int64_t rev;
	int err;

	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (fs_ttl_xattr(name)) {
		fs_ttl_set(req, ino, value, size);
		return;
	}
	if (strcmp(name, "user.etcd.pin") != 0) {
		/* ENOTSUP, which cp -a and mv do not report as a failure */
		fuse_reply_err(req, ENOTSUP);
		return;
	}
	err = parse_rev(value, size, &rev);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	n = node_of(fs, ino);
	if (!is_key_file(n))
		err = n->type == NODE_DIR ? -EISDIR : -ENODATA;
	else
		err = pin_set(fs, n->key, n->key_len, fuse_req_ctx(req)->pid,
			      rev);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, -err);
}

void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fs *fs = fs_of(req);
	bool removed;
	struct node *n;

	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (fs_ttl_xattr(name)) {
		fs_ttl_remove(req, ino);
		return;
	}
	if (strcmp(name, "user.etcd.pin") != 0) {
		bool ours = strncmp(name, XA_PREFIX, strlen(XA_PREFIX)) == 0;

		fuse_reply_err(req, ours ? EPERM : ENODATA);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	n = node_of(fs, ino);
	/* removexattr runs in setfattr -x: the pin is its parent's */
	removed = is_key_file(n) &&
		  pin_remove(fs, n->key, n->key_len, fuse_req_ctx(req)->pid);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, removed ? 0 : ENODATA);
}
