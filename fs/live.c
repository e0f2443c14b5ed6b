/*
 * live.c - the mirror kept live: the listing at mount, the watch that
 * follows it, the listing again after a compaction, and the keys the
 * mount is writing right now
 *
 * At mount the whole prefix is listed once (fs_load), a page at a time;
 * then a watch from the listing's revision keeps the tree current, and
 * each change it brings goes to the echo thread (echo.c) or, when there
 * is none, straight into the tree, which records what the kernel must
 * forget.  With nowatch there is no watch: fs_refresh_dir lists a
 * directory again when it is opened.
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

#define OWN_CHANGES_MAX 1024

struct own_change {
	char *key;		/* owned */
	size_t key_len;
	int64_t rev;
};

/* Forgets the own changes that no event will come for: up to @rev. */
static void own_changes_drop(struct fs *fs, int64_t rev)
{
	size_t i = 0;

	while (i < fs->nown) {
		if (fs->own[i].rev > rev) {
			i++;
			continue;
		}
		free(fs->own[i].key);
		fs->own[i] = fs->own[--fs->nown];
	}
}

void own_change_add(struct fs *fs, const char *key, size_t key_len,
		    int64_t rev)
{
	struct own_change *c;
	size_t i, oldest = 0;

	if (rev <= 0 || fs->cfg.nowatch)
		return;
	if (!fs->own) {
		fs->own = calloc(OWN_CHANGES_MAX, sizeof(*fs->own));
		if (!fs->own)
			return;
	}
	if (fs->nown == OWN_CHANGES_MAX) {
		/* an event that never came (the watch cut off meanwhile) */
		for (i = 1; i < fs->nown; i++)
			if (fs->own[i].rev < fs->own[oldest].rev)
				oldest = i;
		free(fs->own[oldest].key);
		fs->own[oldest] = fs->own[--fs->nown];
	}
	c = &fs->own[fs->nown];
	c->key = malloc(key_len + 1);
	if (!c->key)
		return;
	memcpy(c->key, key, key_len);
	c->key[key_len] = '\0';
	c->key_len = key_len;
	c->rev = rev;
	fs->nown++;
}

bool own_change_take(struct fs *fs, const char *key, size_t key_len,
		     int64_t rev)
{
	size_t i;

	for (i = 0; i < fs->nown; i++) {
		struct own_change *c = &fs->own[i];

		if (c->rev == rev && c->key_len == key_len &&
		    memcmp(c->key, key, key_len) == 0) {
			free(c->key);
			*c = fs->own[--fs->nown];
			return true;
		}
	}
	return false;
}

void own_changes_free(struct fs *fs)
{
	own_changes_drop(fs, INT64_MAX);
	free(fs->own);
	fs->own = NULL;
}

/* How long a change of a key waits for the one before it, at most. */
#define INFLIGHT_WAIT_MAX 60

bool inflight_wait(struct fs *fs, struct node *n)
{
	struct timespec until;
	bool waited = false;

	if (!n->key || !inflight_has(fs, n->key, n->key_len))
		return false;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += INFLIGHT_WAIT_MAX;
	/* the kernel may hold no reference to n: ours keeps it meanwhile */
	n->refs++;
	/* n->key is looked at again each time: a rename may change it */
	while (n->key && inflight_has(fs, n->key, n->key_len)) {
		waited = true;
		if (pthread_cond_timedwait(&fs->inflight_cond, &fs->lock,
					   &until) == ETIMEDOUT) {
			fuse_log(FUSE_LOG_WARNING, "etcdfs: '%s': a change "
				 "still in flight after %d s, going on\n",
				 n->name, INFLIGHT_WAIT_MAX);
			break;
		}
	}
	node_unref(&fs->tree, n);
	return waited;
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
	ret = dir->removed ? 0 : tree_reconcile(&fs->tree, dir, &l, &inv);
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
	fs->loaded = true;
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
	if (fs->stopping) {
		/* the filesystem stopped meanwhile: no watch outlives it */
		pthread_mutex_unlock(&fs->lock);
		if (w)
			store_watch_stop(w);
		return ret ? ret : STORE_EINVAL;
	}
	fs->watch = w;
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
		tree_delete(&fs->tree, kv->key, kv->key_len, rev, inv);
	else
		tree_put(&fs->tree, kv, inv);
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
	struct node **stale = NULL;
	size_t nstale = 0, i;
	unsigned tries;
	uint64_t gen;
	int64_t rev;

	fs_stats_relist(fs);
	for (tries = 0;; tries++) {
		pthread_mutex_lock(&fs->lock);
		/* unmounting: the join of this thread waits for us */
		if (fs->stopping) {
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
		 * The mount's own writes may be newer than the listing (one
		 * read from a member behind, or a write that completed
		 * meanwhile): a key it deleted would come back.  List again.
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
		if (!n || n->mod_revision < l.kvs[i].mod_revision)
			fs_apply(fs, false, &l.kvs[i], 0);
	}
	if (!tree_collect_stale(&fs->tree, gen, l.revision, &stale, &nstale)) {
		for (i = 0; i < nstale; i++) {
			struct store_kv kv = {
				.key = stale[i]->key,
				.key_len = stale[i]->key_len,
			};

			fs_apply(fs, true, &kv, l.revision);
		}
	}
	free(stale);
	/* the listing has them; their events will not come */
	own_changes_drop(fs, l.revision);
	if (l.revision > fs->tree.revision)
		fs->tree.revision = l.revision;
	rev = l.revision;
	/* this thread's watch ends when the callback returns: join it later */
	if (fs->watch && fs->nold < sizeof(fs->old) / sizeof(fs->old[0])) {
		fs->old[fs->nold++] = fs->watch;
		fs->watch = NULL;
	}
	unlock_and_send(fs);
	store_list_release(&l);
	/* on failure it is logged, and the mount goes on without a watch */
	fs_start_watch(fs, rev + 1);
}

/*
 * For tests that need the mount not to have seen another client's change
 * yet (tests/fs/dirmove.bats): while the file $ETCDFS_TEST_HOLD_WATCH
 * names exists, the watch applies nothing.  Unset: one branch.
 */
static void test_hold_watch(void)
{
	static const char *path;
	static bool read;
	int i;

	if (!read) {
		path = getenv("ETCDFS_TEST_HOLD_WATCH");
		read = true;
	}
	for (i = 0; path && access(path, F_OK) == 0 && i < 600; i++)
		usleep(100000);
}

static void watch_event(void *arg, const struct store_event *ev)
{
	struct fs *fs = arg;

	fs_stats_watch_event(fs, ev);
	test_hold_watch();
	pthread_mutex_lock(&fs->lock);
	switch (ev->type) {
	case STORE_EV_PUT:
		history_note(fs, ev->kv.key, ev->kv.key_len,
			     ev->kv.mod_revision);
		/* the mount's own: in the mirror already (or moved on) */
		if (!own_change_take(fs, ev->kv.key, ev->kv.key_len,
				     ev->kv.mod_revision))
			fs_apply(fs, false, &ev->kv, 0);
		fs->watch_ok = true;
		break;
	case STORE_EV_DELETE:
		if (!own_change_take(fs, ev->kv.key, ev->kv.key_len,
				     ev->revision))
			fs_apply(fs, true, &ev->kv, ev->revision);
		fs->watch_ok = true;
		break;
	case STORE_EV_PROGRESS:
		if (ev->revision > fs->tree.revision)
			fs->tree.revision = ev->revision;
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
