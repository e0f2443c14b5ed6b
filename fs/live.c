/*
 * live.c - the mirror kept live: the listing at mount, the watch that
 * follows it, the listing again after a compaction, and the reads of
 * what the mirror lacks (the keys the mount is writing right now are
 * inflight.c's)
 *
 * At mount the whole prefix is listed once (fs_load), a page at a time;
 * then a watch from the listing's revision keeps the tree current: each
 * change it brings goes into the tree at once, which records what the
 * kernel must forget, and to the mirror's observer, the echo thread
 * (echo.c), for its inotify events.  A change of a key the mount is
 * writing waits, in the watch's thread, for that write's reply
 * (inflight.c's own_write_wait), and the changes behind it with it.
 * fs_mirror_applied is where the mirror's revision moves.  With nowatch
 * there is no watch: fs_refresh_dir lists a directory again when it is
 * opened, and fs_lookup_key reads a name the mirror does not hold.
 * fs_name_key makes the key of a name in the mirror (fs/names.h).
 *
 * What it cannot do: follow a change made while the watch was cut off
 * for longer than etcd keeps its history, but by listing everything
 * again (relist).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "names.h"
#include "seen.h"

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
 * Reads @n's key again: for -o nowatch, for -o quorum, or because the value
 * budget evicted its value.  With quorum and the watch, a linearizable read
 * of the key's revision alone comes first: when the mirror has that
 * revision, its value is served and the value is not sent again.  fs->lock
 * held; dropped for the requests and taken again.  Returns 0 or a negative
 * errno.
 */
int fs_refresh_file(struct fs *fs, struct node *n)
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
			err = node_set_value(&fs->tree, n, kv.value,
					     kv.value_len);
		else
			err = tree_put(&fs->tree, &kv, &inv);
	} else if (ret == STORE_ENOTFOUND) {
		err = tree_delete(&fs->tree, key, key_len, 0, &inv);
	} else {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot read '%s': %s\n",
			 err_info.key, err_info.msg);
		err = fs_errno(ret);
	}
out:
	node_unref(&fs->tree, n);
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
	err = fs_refresh_file(fs, n);
	if (!err && !n->value)
		err = n->removed ? -ENOENT : -EIO;
	return err;
}

/*
 * A batch of invalidations begins, before the changes it is for go into
 * the tree: until invals_end, user.etcd.revision stays at the revision
 * the mirror had then.  The mirror moves first and the kernel is told
 * after, with fs->lock dropped (an invalidation sent the other way round
 * could be undone by a lookup answered in between from the old mirror);
 * a script that waits for the revision of a put and then runs stat must
 * find the kernel's attributes and names of before it gone.  fs->lock
 * held, by both.
 */
static void invals_begin(struct fs *fs)
{
	if (fs->mirror.invals_sending++ == 0)
		fs->mirror.invals_floor = fs->tree.revision;
}

static void invals_end(struct fs *fs)
{
	fs->mirror.invals_sending--;
}

int64_t fs_revision_shown(struct fs *fs)
{
	if (fs->mirror.invals_sending &&
	    fs->mirror.invals_floor < fs->tree.revision)
		return fs->mirror.invals_floor;
	return fs->tree.revision;
}

/*
 * Lists the keys below @dir's prefix and makes the subtree match them.
 * Takes and drops fs->lock itself; @dir must be referenced.
 */
int fs_refresh_dir(struct fs *fs, struct node *dir)
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
		fs_log_store_error("cannot list", &err);
		return fs_errno(ret);
	}
	pthread_mutex_lock(&fs->lock);
	invals_begin(fs);
	ret = dir->removed ? 0 : tree_reconcile(&fs->tree, dir, &l, &inv);
	pthread_mutex_unlock(&fs->lock);
	store_list_release(&l);
	fs_send_invals(fs, &inv);
	pthread_mutex_lock(&fs->lock);
	invals_end(fs);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* As fs_lookup_key, for the directory (dir, name): the keys below it. */
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
	node_unref(&fs->tree, dir);
	free(prefix);
	if (ret) {
		store_list_release(&l);
		return fs_errno(ret);
	}
	ret = l.n ? 0 : -ENOENT;
	for (i = 0; i < l.n && !ret; i++)
		ret = tree_put(&fs->tree, &l.kvs[i], inv);
	store_list_release(&l);
	return ret;
}

int fs_lookup_key(struct fs *fs, struct node *dir, const char *name)
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
	node_unref(&fs->tree, dir);
	if (ret == 0)
		ret = tree_put(&fs->tree, &kv, &inv);
	else if (ret == STORE_ENOTFOUND)
		ret = lookup_dir(fs, dir, name, &inv);
	else
		ret = fs_errno(ret);
	store_kv_release(&kv);
	inval_release(&inv);
	free(key);
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
		ld->gen = tree_reconcile_begin(&fs->tree);
	ret = tree_reconcile_page(&fs->tree, ld->gen, page, &inv);
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
		ld.nomem = tree_reconcile_end(&fs->tree, fs->tree.root, ld.gen,
					      rev, &inv) != 0;
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
	fs->mirror.loaded = true;
	return 0;
}

static void watch_event(void *arg, const struct store_event *ev);

int fs_start_watch(struct fs *fs, int64_t from)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	int ret;

	ret = store_watch(fs->store, "", 0, true, from, watch_event, fs, &w,
			  &err);
	if (ret)
		fs_log_store_error("cannot watch", &err);
	pthread_mutex_lock(&fs->lock);
	if (fs->mirror.stopping) {
		/* the filesystem stopped meanwhile: no watch outlives it */
		pthread_mutex_unlock(&fs->lock);
		if (w)
			store_watch_stop(w);
		return ret ? ret : STORE_EINVAL;
	}
	fs->mirror.watch = w;
	fs->mirror.watch_ok = ret == 0;
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

void fs_mirror_applied(struct fs *fs, int64_t rev)
{
	if (rev > fs->tree.revision)
		fs->tree.revision = rev;
	if (rev <= fs->mirror.applied_rev)
		return;
	fs->mirror.applied_rev = rev;
	/*
	 * -o quorum's barrier waits for this, not for the invalidations
	 * (fs_revision_shown): what it guards is answered from the mirror,
	 * and a lookup waiting at it holds its directory's lock in the
	 * kernel, which an entry invalidation of the same batch would wait
	 * for (unlock_and_send).
	 */
	if (fs->mirror.applied_wake)
		pthread_cond_broadcast(fs->mirror.applied_wake);
}

/*
 * Applies a change from elsewhere to the mirror at once, and hands it to
 * the mirror's observer, the echo thread, for its inotify events
 * (fs->mirror.observer, which echo.c registers: this file never calls it by
 * name); without one (or when it refuses, its queue long), it is applied
 * without one.  The
 * caller moves the mirror's revision (fs_mirror_applied) once every
 * change up to it is in.  fs->lock held.
 */
void fs_apply(struct fs *fs, bool del, const struct store_kv *kv, int64_t rev)
{
	struct inval_list *inv = &fs->mirror.pending_invals;
	struct node *n;

	/* sent, and ended, by unlock_and_send */
	if (!fs->mirror.watch_batch) {
		fs->mirror.watch_batch = true;
		invals_begin(fs);
	}
	/*
	 * Files opened without a message (file.c, fs->no_open) read the
	 * node of their inode: while the kernel knows it, it keeps its
	 * revision, and the change goes to a new inode, as for open files
	 * (echo_plan.c), which the daemon cannot count here.
	 */
	if (fs->no_open && !del) {
		n = tree_find_key(&fs->tree, kv->key, kv->key_len);
		if (n && n->nlookup && !n->local && !n->pending &&
		    kv->mod_revision > n->mod_revision)
			tree_replace(&fs->tree, n, inv);
	}
	/* the echo, if it runs, takes it (and puts it in the tree) */
	if (fs->mirror.observer &&
	    fs->mirror.observer(fs, del, kv, rev, inv) == 0)
		return;
	if (del)
		tree_delete(&fs->tree, kv->key, kv->key_len, rev, inv);
	else
		tree_put(&fs->tree, kv, inv);
}

/*
 * A change the watch brought (@kv; a deletion at @rev if @del): the
 * mount's own is in the mirror already; another client's goes in now.
 * Either way the mirror is at its revision then.  fs->lock held, dropped
 * meanwhile.
 */
static void watch_change(struct fs *fs, bool del, const struct store_kv *kv,
			 int64_t rev)
{
	own_write_wait(fs, kv->key, kv->key_len);
	if (!own_change_take(fs, kv->key, kv->key_len, rev))
		fs_apply(fs, del, kv, del ? rev : 0);
	fs_mirror_applied(fs, rev);
}

/*
 * For tests: while the file an environment variable names exists (a
 * minute at most), the watch's thread waits where @hold says.  Unset:
 * one branch.
 *   TEST_HOLD_WATCH, $ETCDFS_TEST_HOLD_WATCH: it applies nothing, so the
 *	mount has not seen another client's change yet
 *	(tests/fs/dirmove.bats);
 *   TEST_HOLD_INVALS, $ETCDFS_TEST_HOLD_INVALS: it sends the kernel no
 *	invalidation (nor applies what comes next), so the kernel still
 *	knows a name the mirror has replaced (tests/fs/mmap.bats).
 */
enum test_hold { TEST_HOLD_WATCH, TEST_HOLD_INVALS, TEST_HOLDS };

static const char *test_hold_paths[TEST_HOLDS];

static void test_hold_read(void)
{
	test_hold_paths[TEST_HOLD_WATCH] = getenv("ETCDFS_TEST_HOLD_WATCH");
	test_hold_paths[TEST_HOLD_INVALS] = getenv("ETCDFS_TEST_HOLD_INVALS");
}

static void test_hold(enum test_hold hold)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *path;
	int i;

	pthread_once(&once, test_hold_read);
	path = test_hold_paths[hold];
	for (i = 0; path && access(path, F_OK) == 0 && i < 600; i++)
		usleep(100000);
}

/*
 * Sends the invalidations fs_apply() gathered, then lets
 * user.etcd.revision show the changes they were for (invals_begin).
 * fs->lock held, dropped.
 * Not with -o quorum while the kernel caches no name and no attribute
 * (entry_timeout and attr_timeout 0, its defaults): a lookup waiting at
 * the barrier for this very thread's next event holds its directory's
 * lock, which an entry invalidation waits for, and an inode's
 * invalidation would make the kernel throw away the attributes that
 * lookup answers with (they look older than the invalidation), keeping
 * the size it had.  The kernel asks for names and attributes each time
 * then anyway, and an open drops the pages of an older revision
 * (file.c's cache_rev).  With quorum and entry_timeout 0 alone, the
 * inodes' invalidations go, the entries' not (no name is cached, and
 * the lock above would stall the watch, and the echo with it, until the
 * barrier's timeout).
 */
static void unlock_and_send(struct fs *fs)
{
	struct inval_list inv = fs->mirror.pending_invals;
	bool batch = fs->mirror.watch_batch;

	memset(&fs->mirror.pending_invals, 0,
	       sizeof(fs->mirror.pending_invals));
	fs->mirror.watch_batch = false;
	/* inval_release and inval_drop_entries only free memory */
	if (fs->cfg.quorum && fs->cfg.entry_timeout == 0 &&
	    fs->cfg.attr_timeout == 0)
		inval_release(&inv);
	else if (fs->cfg.quorum && fs->cfg.entry_timeout == 0)
		inval_drop_entries(&inv);
	if (!inv.n) {
		inval_release(&inv);
		if (batch)
			invals_end(fs);
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	pthread_mutex_unlock(&fs->lock);
	test_hold(TEST_HOLD_INVALS);
	/* never while the echo's syscall holds a directory (fs_i.h) */
	pthread_mutex_lock(&fs->replay_lock);
	fs_send_invals(fs, &inv);
	pthread_mutex_unlock(&fs->replay_lock);
	if (batch) {
		pthread_mutex_lock(&fs->lock);
		invals_end(fs);
		pthread_mutex_unlock(&fs->lock);
	}
}

/* Counts @ev for user.etcd.stats (stats.c reads fs->mirror.watch_count). */
static void count_watch_event(struct fs *fs, const struct store_event *ev)
{
	struct watch_count *c = &fs->mirror.watch_count;
	int64_t rev = ev->type == STORE_EV_PUT ? ev->kv.mod_revision :
		      ev->revision;
	int_fast64_t cur;

	if (ev->type != STORE_EV_PUT && ev->type != STORE_EV_DELETE)
		return;
	atomic_fetch_add_explicit(&c->events, 1, memory_order_relaxed);
	cur = atomic_load(&c->rev);
	while (rev > cur &&
	       !atomic_compare_exchange_weak(&c->rev, &cur, rev))
		;
}

static void count_relist(struct fs *fs)
{
	atomic_fetch_add_explicit(&fs->mirror.watch_count.relists, 1,
				  memory_order_relaxed);
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
	struct node **stale = NULL;
	size_t nstale = 0, i;
	unsigned tries;
	uint64_t gen;
	int64_t rev;

	count_relist(fs);
	for (tries = 0;; tries++) {
		pthread_mutex_lock(&fs->lock);
		/* unmounting: the join of this thread waits for us */
		if (fs->mirror.stopping) {
			pthread_mutex_unlock(&fs->lock);
			return;
		}
		pthread_mutex_unlock(&fs->lock);
		if (store_list(fs->store, "", 0, 0, &l, &err)) {
			fs_log_store_error("cannot list again after compaction",
					&err);
			store_list_release(&l);
			sleep(1);
			continue;
		}
		pthread_mutex_lock(&fs->lock);
		/*
		 * A write of the mount's that was in flight while the listing
		 * was read may be in it, but not yet in the mirror: it would
		 * look like another client's, and be echoed.  Its reply puts
		 * it in the mirror; wait for that.
		 */
		inflight_wait_begun_before(fs, inflight_seq_now(fs));
		/*
		 * The mount's own writes may be newer than the listing (one
		 * read from a member behind, or a write that completed
		 * meanwhile): a key it deleted would come back.  List again;
		 * after 5 tries (the mount writing all along) the listing is
		 * taken, and the mount's changes after it are kept
		 * (own_change_after, collect_stale).
		 */
		if (l.revision >= fs->tree.revision || tries >= 5)
			break;
		pthread_mutex_unlock(&fs->lock);
		store_list_release(&l);
	}
	gen = tree_reconcile_begin(&fs->tree);
	for (i = 0; i < l.n; i++) {
		struct node *n = tree_find_key(&fs->tree, l.kvs[i].key,
					       l.kvs[i].key_len);

		if (n)
			n->seen = gen;
	}
	/* found before the puts: a node they make is not stale */
	if (tree_collect_stale(&fs->tree, gen, l.revision, &stale, &nstale))
		nstale = 0;
	for (i = 0; i < l.n; i++) {
		struct node *n = tree_find_key(&fs->tree, l.kvs[i].key,
					       l.kvs[i].key_len);

		/* a key the mount deleted after the listing stays deleted */
		if (!n && own_change_after(fs, l.kvs[i].key,
					   l.kvs[i].key_len, l.revision))
			continue;
		if (!n || n->mod_revision < l.kvs[i].mod_revision)
			fs_apply(fs, false, &l.kvs[i], 0);
	}
	/* no put above frees a stale node: each replaces only its own key */
	for (i = 0; i < nstale; i++) {
		struct store_kv kv = { 0 };

		/* the deletion may free the node: the key is copied first */
		if (store_kv_copy(&kv, &(struct store_kv){
				.key = stale[i]->key,
				.key_len = stale[i]->key_len }))
			continue;
		fs_apply(fs, true, &kv, l.revision);
		store_kv_release(&kv);
	}
	free(stale);
	/* the listing has them; their events will not come */
	own_changes_drop(fs, l.revision);
	fs_mirror_applied(fs, l.revision);
	rev = l.revision;
	/* this thread's watch ends when the callback returns: join it later */
	if (fs->mirror.watch && fs->mirror.nold <
	    sizeof(fs->mirror.old) / sizeof(fs->mirror.old[0])) {
		fs->mirror.old[fs->mirror.nold++] = fs->mirror.watch;
		fs->mirror.watch = NULL;
	}
	unlock_and_send(fs);
	store_list_release(&l);
	/* on failure it is logged, and the mount goes on without a watch */
	fs_start_watch(fs, rev + 1);
}

static void watch_event(void *arg, const struct store_event *ev)
{
	struct fs *fs = arg;

	count_watch_event(fs, ev);
	test_hold(TEST_HOLD_WATCH);
	pthread_mutex_lock(&fs->lock);
	switch (ev->type) {
	case STORE_EV_PUT:
		seen_note(fs, ev->kv.key, ev->kv.key_len,
			  ev->kv.mod_revision);
		watch_change(fs, false, &ev->kv, ev->kv.mod_revision);
		fs->mirror.watch_ok = true;
		break;
	case STORE_EV_DELETE:
		watch_change(fs, true, &ev->kv, ev->revision);
		fs->mirror.watch_ok = true;
		break;
	case STORE_EV_PROGRESS:
		fs_mirror_applied(fs, ev->revision);
		fs->mirror.watch_ok = true;
		break;
	case STORE_EV_ERROR:
		fs->mirror.watch_ok = false;
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
