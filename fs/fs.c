/*
 * fs.c - the FUSE low-level operations on names and directories, the
 * mirror's lifecycle and the watch that keeps it current
 *
 * At mount the whole prefix is listed once (fs_load); then a watch from the
 * listing's revision keeps the tree current, and each change it brings
 * invalidates exactly the kernel's entries and inodes it touches.  With
 * nowatch there is no watch: a directory is listed again when it is opened
 * and a file read again when it is opened, so what the mount shows is as
 * fresh as the last readdir or open.
 *
 * Files (open, read, write, commit) are in file.c, extended attributes and
 * pins in xattr.c, the tree itself in node.c.
 *
 * What it cannot do: hard links, symbolic links, special files, and
 * renaming a directory that holds keys (EXDEV: mv copies instead).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs_i.h"
#include "names.h"

int fs_errno(int err)
{
	switch (err) {
	case STORE_OK:
		return 0;
	case STORE_ENOTFOUND:
		return ENOENT;
	case STORE_EEXISTS:
		return EEXIST;
	case STORE_ECONFLICT:
	case STORE_EPRECONDITION:
		return ESTALE;
	case STORE_EUNREACHABLE:
		return ENOTCONN;
	case STORE_ETIMEOUT:
	case STORE_EUNKNOWN:	/* a write that may have been applied */
		return ETIMEDOUT;
	case STORE_EUNAUTHENTICATED:
	case STORE_EPERMISSION:
		return EACCES;
	case STORE_ETOOLARGE:
		return EFBIG;
	case STORE_EINVAL:
		return EINVAL;
	case STORE_ENOTSUP:
		return ENOTSUP;
	case STORE_EINTERNAL:
		return ENOMEM;
	case STORE_ECOMPACTED:
	case STORE_EBADREPLY:
	default:
		return EIO;
	}
}

void fs_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

static double elapsed(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - since->tv_sec) +
	       (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

fuse_ino_t node_id(struct fs *fs, struct node *n)
{
	return n == fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

struct node *node_of(struct fs *fs, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? fs->root : (struct node *)(uintptr_t)ino;
}

static struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

void node_fill_attr(struct fs *fs, struct node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = fs->cfg.uid;
	st->st_gid = fs->cfg.gid;
	st->st_blksize = 4096;
	if (n->type == NODE_DIR) {
		st->st_mode = S_IFDIR | (0777 & ~fs->cfg.umask);
		/* "." and the entry in its parent, and each child's ".." */
		st->st_nlink = n->removed ? 0 : 2 + n->ndirs;
		st->st_mtim = n->mtime;
	} else {
		st->st_mode = S_IFREG | (0666 & ~fs->cfg.umask);
		st->st_nlink = n->removed ? 0 : 1;
		/* what etcd has: writers' buffers show only once committed */
		st->st_size = (off_t)n->size;
		st->st_blocks = (st->st_size + 511) / 512;
		st->st_mtim = n->mtime;
	}
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
	if (fs->cfg.ro)
		st->st_mode &= ~0222;
}

/* Fills @e for @n and counts the kernel's new reference; fs->lock held. */
static void fill_entry(struct fs *fs, struct node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = node_id(fs, n);
	e->attr_timeout = fs->cfg.attr_timeout;
	e->entry_timeout = fs->cfg.entry_timeout;
	node_fill_attr(fs, n, &e->attr);
	n->nlookup++;
}

void fs_reply_entry(struct fs *fs, fuse_req_t req, struct node *n)
{
	struct fuse_entry_param e;

	pthread_mutex_lock(&fs->lock);
	fill_entry(fs, n, &e);
	pthread_mutex_unlock(&fs->lock);
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		/* the request was interrupted: the kernel took no reference */
		pthread_mutex_lock(&fs->lock);
		node_forget(fs, n, 1);
		pthread_mutex_unlock(&fs->lock);
	}
}

void fs_send_invals(struct fs *fs, struct inval_list *l)
{
	size_t i;

	for (i = 0; fs->se && i < l->n; i++) {
		struct inval *iv = &l->v[i];

		if (iv->entry)
			fuse_lowlevel_notify_inval_entry(fs->se, iv->ino,
							 iv->name,
							 iv->name_len);
		else
			fuse_lowlevel_notify_inval_inode(fs->se, iv->ino, 0, 0);
	}
	inval_release(l);
}

#define ECHO_QUEUE_MAX 100000

void inflight_begin(struct fs *fs, struct inflight *in, const char *key,
		    size_t key_len)
{
	in->key = key;
	in->key_len = key_len;
	in->next = fs->inflight;
	fs->inflight = in;
}

void inflight_end(struct fs *fs, struct inflight *in)
{
	struct inflight **p;

	for (p = &fs->inflight; *p; p = &(*p)->next) {
		if (*p == in) {
			*p = in->next;
			break;
		}
	}
	pthread_cond_broadcast(&fs->inflight_cond);
}

bool inflight_has(struct fs *fs, const char *key, size_t key_len)
{
	struct inflight *in;

	for (in = fs->inflight; in; in = in->next) {
		if (in->key_len == key_len &&
		    memcmp(in->key, key, key_len) == 0)
			return true;
	}
	return false;
}

static void log_store_error(const char *what, const struct store_error *err)
{
	fuse_log(FUSE_LOG_ERR, "etcdfs: %s '%s': %s\n", what, err->key,
		 err->msg[0] ? err->msg : store_strerror(err->code));
}

/*
 * Lists the keys below @dir's prefix and makes the subtree match them.
 * Takes and drops fs->lock itself; @dir must be referenced.
 */
static int refresh_dir(struct fs *fs, struct node *dir)
{
	struct store_list l = { 0 };
	struct store_error err = { 0 };
	struct inval_list inv = { 0 };
	char *prefix;
	size_t len;
	int ret;

	pthread_mutex_lock(&fs->lock);
	len = dir->key_len;
	prefix = malloc(len + 1);
	if (prefix)
		memcpy(prefix, dir->key, len);
	pthread_mutex_unlock(&fs->lock);
	if (!prefix)
		return -ENOMEM;
	ret = store_list(fs->store, prefix, len, 0, &l, &err);
	free(prefix);
	if (ret) {
		log_store_error("cannot list", &err);
		return -fs_errno(ret);
	}
	pthread_mutex_lock(&fs->lock);
	ret = dir->removed ? 0 : tree_reconcile(fs, dir, &l, &inv);
	pthread_mutex_unlock(&fs->lock);
	store_list_release(&l);
	fs_send_invals(fs, &inv);
	return ret;
}

struct load {
	struct fs *fs;
	uint64_t gen;
	bool nomem;
};

/* A page of the listing at mount into the tree, so that no more than a
 * page of the prefix is ever held twice. */
static int load_page(void *arg, struct store_list *page, bool first,
		     struct store_error *err)
{
	struct load *ld = arg;
	struct fs *fs = ld->fs;
	struct inval_list inv = { 0 };
	int ret;

	(void)err;
	pthread_mutex_lock(&fs->lock);
	if (first)
		ld->gen = tree_reconcile_begin(fs);
	ret = tree_reconcile_page(fs, ld->gen, page, &inv);
	pthread_mutex_unlock(&fs->lock);
	inval_release(&inv);
	if (ret) {
		ld->nomem = true;
		return STORE_EINTERNAL;
	}
	return 0;
}

int fs_load(struct fs *fs, struct store_error *err)
{
	struct load ld = { .fs = fs };
	struct inval_list inv = { 0 };
	int64_t rev = 0;
	int ret;

	ret = store_list_pages(fs->store, "", 0, 0, load_page, &ld, &rev, err);
	if (!ret) {
		pthread_mutex_lock(&fs->lock);
		ld.nomem = tree_reconcile_end(fs, fs->root, ld.gen, rev,
					      &inv) != 0;
		pthread_mutex_unlock(&fs->lock);
		inval_release(&inv);
	}
	if (ld.nomem) {
		if (err) {
			memset(err, 0, sizeof(*err));
			err->code = STORE_EINTERNAL;
			snprintf(err->msg, sizeof(err->msg),
				 "out of memory while loading the keys");
		}
		return STORE_EINTERNAL;
	}
	if (ret)
		return ret;
	fs->loaded = true;
	return 0;
}

static void watch_event(void *arg, const struct store_event *ev);

static int start_watch(struct fs *fs, int64_t from)
{
	struct store_error err = { 0 };
	int ret;

	ret = store_watch(fs->store, "", 0, true, from, watch_event, fs,
			  &fs->watch, &err);
	if (ret)
		log_store_error("cannot watch", &err);
	pthread_mutex_lock(&fs->lock);
	fs->watch_ok = ret == 0;
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/*
 * Hands a change from elsewhere to the echo thread, or applies it at once
 * when there is none (or its queue is long).  fs->lock held.
 */
void fs_apply(struct fs *fs, bool del, const struct store_kv *kv, int64_t rev)
{
	struct inval_list *inv = &fs->pending_invals;

	if (fs->echo_running && fs->echo_len < ECHO_QUEUE_MAX &&
	    echo_queue(fs, del, kv, rev) == 0)
		return;
	if (del)
		tree_delete(fs, kv->key, kv->key_len, rev, inv);
	else
		tree_put(fs, kv, inv);
}

/* Sends the invalidations fs_apply() gathered.  fs->lock held, dropped. */
static void unlock_and_send(struct fs *fs)
{
	struct inval_list inv = fs->pending_invals;

	memset(&fs->pending_invals, 0, sizeof(fs->pending_invals));
	pthread_mutex_unlock(&fs->lock);
	fs_send_invals(fs, &inv);
}

/*
 * The watch's history is gone: list everything again, turn the
 * differences into changes (echoed, so watchers see them), and watch again
 * from there.  The old watch's thread ends when this callback returns; it
 * is joined when the filesystem stops.
 */
static void relist(struct fs *fs)
{
	struct store_list l = { 0 };
	struct store_error err = { 0 };
	struct store_watch *old = fs->watch;
	struct node **stale = NULL;
	size_t nstale = 0, i;
	unsigned tries;
	uint64_t gen;
	int64_t rev;

	for (tries = 0;; tries++) {
		if (store_list(fs->store, "", 0, 0, &l, &err)) {
			log_store_error("cannot list again after compaction",
					&err);
			store_list_release(&l);
			sleep(1);
			continue;
		}
		pthread_mutex_lock(&fs->lock);
		/*
		 * The mount's own writes may be newer than the listing (one
		 * read from a member behind, or a write that completed
		 * meanwhile): a key it deleted would come back.  List again.
		 */
		if (l.revision >= fs->revision || tries >= 5)
			break;
		pthread_mutex_unlock(&fs->lock);
		store_list_release(&l);
	}
	gen = ++fs->gen;
	for (i = 0; i < l.n; i++) {
		struct node *n = tree_find_key(fs, l.kvs[i].key,
					       l.kvs[i].key_len);

		if (n)
			n->seen = gen;
		if (!n || n->mod_revision < l.kvs[i].mod_revision)
			fs_apply(fs, false, &l.kvs[i], 0);
	}
	if (tree_collect_stale(fs, gen, l.revision, &stale, &nstale) == 0) {
		for (i = 0; i < nstale; i++) {
			struct store_kv kv = {
				.key = stale[i]->key,
				.key_len = stale[i]->key_len,
			};

			fs_apply(fs, true, &kv, l.revision);
		}
	}
	free(stale);
	if (l.revision > fs->revision)
		fs->revision = l.revision;
	rev = l.revision;
	if (fs->nold < sizeof(fs->old) / sizeof(fs->old[0]))
		fs->old[fs->nold++] = old;
	unlock_and_send(fs);
	store_list_release(&l);
	/* on failure it is logged, and the mount goes on without a watch */
	start_watch(fs, rev + 1);
}

static void watch_event(void *arg, const struct store_event *ev)
{
	struct fs *fs = arg;

	pthread_mutex_lock(&fs->lock);
	switch (ev->type) {
	case STORE_EV_PUT:
		fs_apply(fs, false, &ev->kv, 0);
		fs->watch_ok = true;
		break;
	case STORE_EV_DELETE:
		fs_apply(fs, true, &ev->kv, ev->revision);
		fs->watch_ok = true;
		break;
	case STORE_EV_PROGRESS:
		if (ev->revision > fs->revision)
			fs->revision = ev->revision;
		fs->watch_ok = true;
		break;
	case STORE_EV_ERROR:
		fs->watch_ok = false;
		break;
	}
	unlock_and_send(fs);
	if (ev->type == STORE_EV_ERROR) {
		fuse_log(FUSE_LOG_WARNING, "etcdfs: watch: %s\n",
			 store_strerror(ev->err));
		if (ev->err == STORE_ECOMPACTED)
			relist(fs);
	}
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	struct store_error err = { 0 };
	int64_t from;

	/*
	 * Without atomic O_TRUNC the kernel truncates with a setattr right
	 * after the open (see fs_truncate_path), whose reply, the committed
	 * size, it believes; with it, it would cut the size and the pages
	 * every reader shares.
	 */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	/* writes must reach us with the writer's pid, and one per write(2) */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if (!fs->loaded && fs_load(fs, &err))
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot list the keys: %s\n",
			 err.msg);
	if (fs->cfg.nowatch)
		return;
	if (fs->se && fs->cfg.mountpoint && echo_start(fs))
		fuse_log(FUSE_LOG_WARNING, "etcdfs: no echo thread: remote "
			 "changes will not show as inotify events\n");
	pthread_mutex_lock(&fs->lock);
	from = fs->revision + 1;
	pthread_mutex_unlock(&fs->lock);
	start_watch(fs, from);
}

static void fs_destroy(void *userdata)
{
	struct fs *fs = userdata;
	size_t i;

	if (fs->watch)
		store_watch_stop(fs->watch);
	fs->watch = NULL;
	for (i = 0; i < fs->nold; i++)
		store_watch_stop(fs->old[i]);
	fs->nold = 0;
	echo_stop(fs);
}

static struct node *dir_of(struct fs *fs, fuse_ino_t ino, int *errp)
{
	struct node *dir = node_of(fs, ino);

	if (dir->type != NODE_DIR) {
		*errp = ENOTDIR;
		return NULL;
	}
	return dir;
}

/* As lookup_key, for the directory (dir, name): the keys below it. */
static int lookup_dir(struct fs *fs, struct node *dir, const char *name,
		      struct inval_list *inv)
{
	struct store_error serr = { 0 };
	struct store_list l = { 0 };
	size_t prefix_len, i;
	char *prefix;
	int ret;

	ret = fs_name_key(fs, dir, name, NODE_DIR, &prefix, &prefix_len);
	if (ret)
		return ret == -EINVAL ? -ENOENT : ret;
	dir->refs++;
	pthread_mutex_unlock(&fs->lock);
	ret = store_list(fs->store, prefix, prefix_len,
			 fs->cfg.quorum ? STORE_READ_QUORUM : 0, &l, &serr);
	pthread_mutex_lock(&fs->lock);
	node_unref(fs, dir);
	free(prefix);
	if (ret) {
		store_list_release(&l);
		return -fs_errno(ret);
	}
	ret = l.n ? 0 : -ENOENT;
	for (i = 0; i < l.n && !ret; i++)
		ret = tree_put(fs, &l.kvs[i], inv);
	store_list_release(&l);
	return ret;
}

/*
 * Reads the key that (dir, name) names into the tree, or the keys below
 * the directory it names.  fs->lock held, and
 * dropped for the request; @dir referenced meanwhile.  0 if it is there
 * now, -ENOENT if etcd has no such key, or another negative errno.
 */
static int lookup_key(struct fs *fs, struct node *dir, const char *name)
{
	struct store_error serr = { 0 };
	struct inval_list inv = { 0 };
	struct store_kv kv = { 0 };
	size_t key_len;
	char *key;
	int ret;

	ret = fs_name_key(fs, dir, name, NODE_FILE, &key, &key_len);
	if (ret)
		return ret == -EINVAL ? -ENOENT : ret;
	dir->refs++;
	pthread_mutex_unlock(&fs->lock);
	ret = store_get(fs->store, key, key_len,
			fs->cfg.quorum ? STORE_READ_QUORUM : 0, &kv, &serr);
	pthread_mutex_lock(&fs->lock);
	node_unref(fs, dir);
	if (ret == 0)
		ret = tree_put(fs, &kv, &inv);
	else if (ret == STORE_ENOTFOUND)
		ret = lookup_dir(fs, dir, name, &inv);
	else
		ret = -fs_errno(ret);
	store_kv_release(&kv);
	inval_release(&inv);
	free(key);
	return ret;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
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
	dir = dir_of(fs, parent, &err);
	if (!dir) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, err);
		return;
	}
	n = tree_child(fs, dir, name, len);
	if (!n && fs->cfg.nowatch && !refreshed) {
		/* without a watch the tree may be old: ask etcd */
		int ret = lookup_key(fs, dir, name);

		if (ret && ret != -ENOENT) {
			pthread_mutex_unlock(&fs->lock);
			fuse_reply_err(req, -ret);
			return;
		}
		refreshed = true;
		goto again;
	}
	if (!n) {
		pthread_mutex_unlock(&fs->lock);
		if (fs->cfg.nowatch) {
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
		node_forget(fs, n, 1);
		pthread_mutex_unlock(&fs->lock);
	}
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = fs_of(req);

	pthread_mutex_lock(&fs->lock);
	if (ino != FUSE_ROOT_ID)
		node_forget(fs, node_of(fs, ino), nlookup);
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
			node_forget(fs, node_of(fs, forgets[i].ino),
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

static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct node *n;
	struct stat st;
	bool echo;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	n = node_of(fs, ino);
	node_fill_attr(fs, n, &st);
	echo = echo_of(fs, req) != NULL;
	pthread_mutex_unlock(&fs->lock);

	if (echo) {
		/* the echo's truncation: the mirror has the value already */
		fuse_reply_attr(req, &st, fs->cfg.attr_timeout);
		return;
	}
	if (fs->cfg.ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* chmod and chown that change nothing succeed: cp and sed call them */
	if ((to_set & FUSE_SET_ATTR_MODE) && !fs->cfg.chmod_ok &&
	    (attr->st_mode & 07777) != (st.st_mode & 07777))
		err = EPERM;
	if ((to_set & FUSE_SET_ATTR_UID) && !fs->cfg.chmod_ok &&
	    attr->st_uid != st.st_uid)
		err = EPERM;
	if ((to_set & FUSE_SET_ATTR_GID) && !fs->cfg.chmod_ok &&
	    attr->st_gid != st.st_gid)
		err = EPERM;
	if (!err && (to_set & FUSE_SET_ATTR_SIZE)) {
		if (n->type == NODE_DIR)
			err = EISDIR;
		else if (fi)
			err = -fs_truncate_open(fs, fi, attr->st_size);
		else
			err = -fs_truncate_path(fs, n, attr->st_size,
						fuse_req_ctx(req)->pid);
	}
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	/* times follow revisions: setting them is accepted and forgotten */
	pthread_mutex_lock(&fs->lock);
	node_fill_attr(fs, n, &st);
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
};

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
	dir = dir_of(fs, ino, &err);
	if (!dir)
		goto out_unlock;
	dir->refs++;
	dh->dir = dir;
	if (fs->cfg.nowatch) {
		pthread_mutex_unlock(&fs->lock);
		err = -refresh_dir(fs, dir);
		pthread_mutex_lock(&fs->lock);
		if (err)
			goto out_unref;
	}
	pthread_mutex_unlock(&fs->lock);
	fi->fh = (uint64_t)(uintptr_t)dh;
	/*
	 * With the watch, the kernel may keep the listing: every name that
	 * comes or goes invalidates the directory's inode (node.c), and the
	 * kernel drops the listing itself on the mount's own changes.
	 */
	fi->cache_readdir = !fs->cfg.nowatch;
	fi->keep_cache = !fs->cfg.nowatch;
	fuse_reply_open(req, fi);
	return;
out_unref:
	node_unref(fs, dir);
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
	size_t left = size, i;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	if (!dh->snapped && snap_dir(dh)) {
		pthread_mutex_unlock(&fs->lock);
		free(buf);
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
				c = tree_child(fs, dh->dir, d->name,
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
			if (used > left) {
				if (c)
					node_forget(fs, c, 1);
				break;
			}
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
	fuse_reply_buf(req, buf, size - left);
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
	node_unref(fs, dh->dir);
	pthread_mutex_unlock(&fs->lock);
	free_dir_handle(dh);
	fuse_reply_err(req, 0);
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

	for (p = n; p && p != fs->root; p = p->parent)
		total += p->name_len + 1;
	path = malloc(total + 1);
	if (!path)
		return NULL;
	off = total ? total - 1 : 0;
	path[off] = '\0';
	for (p = n; p && p != fs->root; p = p->parent) {
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
	    (kind == NAMES_VALUE_OF && (type == NODE_DIR || dir == fs->root)))
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
 * fs->lock held, and dropped for the request.  0, or the errno (logged);
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
		return ENOMEM;
	memcpy(key, n->key, len);
	n->refs++;
	pthread_mutex_unlock(&fs->lock);
	ret = make ? store_mkdir(fs->store, key, len, NULL, &serr) :
		     store_rmdir(fs->store, key, len, NULL, &serr);
	pthread_mutex_lock(&fs->lock);
	n->refs--;
	free(key);
	if (!make && ret == STORE_EEXISTS)
		return ENOTEMPTY;	/* keys below it that we do not know */
	if (ret == STORE_ENOTSUP || ret == STORE_EEXISTS ||
	    ret == STORE_ENOTFOUND)
		return 0;
	if (ret)
		log_store_error(make ? "cannot make directory" :
				"cannot remove directory", &serr);
	return ret ? fs_errno(ret) : 0;
}

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct fs *fs = fs_of(req);
	struct node *dir, *n;
	char *key;
	size_t key_len;
	bool echo;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	echo = echo_of(fs, req) != NULL;
	if (fs->cfg.ro && !echo) {
		err = EROFS;
		goto out;
	}
	dir = dir_of(fs, parent, &err);
	if (!dir)
		goto out;
	if (tree_child(fs, dir, name, strlen(name))) {
		err = EEXIST;
		goto out;
	}
	err = -fs_name_key(fs, dir, name, NODE_DIR, &key, &key_len);
	if (err)
		goto out;
	n = tree_new_node(fs, dir, name, strlen(name), NODE_DIR);
	if (!n) {
		free(key);
		err = ENOMEM;
		goto out;
	}
	n->key = key;
	n->key_len = key_len;
	/* a directory the echo makes holds a key in a moment */
	n->local = !echo;
	err = echo ? 0 : dir_op(fs, n, true);
	if (err) {
		if (!n->removed)
			node_drop(fs, n);
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(req, err);
		return;
	}
	pthread_mutex_unlock(&fs->lock);
	fs_reply_entry(fs, req, n);
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
	bool echo;
	int err = 0;

	if (fs_name_too_long(name)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	echo = echo_of(fs, req) != NULL;
	if (fs->cfg.ro && !echo) {
		err = EROFS;
		goto out;
	}
	dir = dir_of(fs, parent, &err);
	if (!dir)
		goto out;
	n = tree_child(fs, dir, name, strlen(name));
	if (!n)
		err = ENOENT;
	else if (echo && n->local)
		err = EBUSY;	/* somebody's mkdir: it stays */
	else if (n->type != NODE_DIR)
		err = ENOTDIR;
	else if (n->nchildren)
		err = ENOTEMPTY;
	if (err)
		goto out;
	/* only a mkdir'd directory can be empty: the others are pruned */
	err = echo ? 0 : dir_op(fs, n, false);
	if (err)
		goto out;
	if (!n->removed)
		node_drop(fs, n);
	if (!echo)
		tree_keep(fs, dir);
out:
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(req, err);
	fs_send_invals(fs, &inv);
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
			log_store_error("cannot delete", &err);
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

static void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
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

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
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
	if (fs_name_too_long(name) || fs_name_too_long(newname)) {
		fuse_reply_err(req, ENAMETOOLONG);
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
			log_store_error("cannot rename", &serr);
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
			log_store_error("cannot delete", &serr);
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

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);
	struct statvfs sv = { 0 };

	pthread_mutex_lock(&fs->lock);
	sv.f_files = fs->nnodes;
	pthread_mutex_unlock(&fs->lock);
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	/* etcd's quota is not ours to know; say there is room */
	sv.f_blocks = 2u << 20;
	sv.f_bfree = sv.f_bavail = 1u << 20;
	sv.f_ffree = sv.f_favail = 1u << 20;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
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
	return &ops;
}

struct fs *fs_new(const struct fs_config *cfg)
{
	struct fs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->cfg = *cfg;
	fs->store = cfg->store;
	/* the mount checked the patterns: only ENOMEM is left */
	if (temp_names_parse(cfg->temp_names, &fs->temp)) {
		free(fs);
		return NULL;
	}
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->echo_lock, NULL);
	pthread_cond_init(&fs->echo_cond, NULL);
	pthread_cond_init(&fs->inflight_cond, NULL);
	fs->nbuckets = 1024;
	fs->buckets = calloc(fs->nbuckets, sizeof(*fs->buckets));
	fs->root = calloc(1, sizeof(*fs->root));
	if (!fs->buckets || !fs->root)
		goto err;
	fs->root->type = NODE_DIR;
	fs->root->ino = FUSE_ROOT_ID;
	fs->root->nlookup = 1;
	fs->root->name = strdup("");
	fs->root->key = strdup("");
	if (!fs->root->name || !fs->root->key)
		goto err;
	fs->next_ino = FUSE_ROOT_ID;
	fs_now(&fs->mounted);
	fs->root->mtime = fs->mounted;
	return fs;
err:
	if (fs->root) {
		free(fs->root->name);
		free(fs->root->key);
	}
	free(fs->root);
	free(fs->buckets);
	temp_names_free(fs->temp);
	free(fs);
	return NULL;
}

void fs_set_session(struct fs *fs, struct fuse_session *se)
{
	fs->se = se;
}

static void free_subtree(struct node *n)
{
	struct node *c, *next;

	for (c = n->child; c; c = next) {
		next = c->next;
		free_subtree(c);
	}
	if (n->name != n->name_buf)
		free(n->name);
	free(n->key);
	free(n->value);
	if (n->rare)
		free(n->rare->ghost_key);
	free(n->rare);
	free(n);
}

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	fs_destroy(fs);
	/* the session is gone: every node still in the tree goes with it */
	free_subtree(fs->root);
	limbo_free(fs);
	free(fs->buckets);
	pins_free(fs);
	temp_names_free(fs->temp);
	inval_release(&fs->pending_invals);
	pthread_cond_destroy(&fs->echo_cond);
	pthread_cond_destroy(&fs->inflight_cond);
	pthread_mutex_destroy(&fs->echo_lock);
	pthread_mutex_destroy(&fs->lock);
	free(fs);
}
