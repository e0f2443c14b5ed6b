/*
 * inflight.c - the mount's own writes, as the mirror knows them: the keys
 * being written right now (inflight_*), and the changes the mount made
 * whose watch events are still to come (own_change_*)
 *
 * A write begins an inflight under fs->lock when it decides to commit,
 * and ends it once its result is in the mirror; the watch's thread waits
 * (own_write_wait) for a write of the key its event is about, so that the
 * event is known as the mount's own and never echoed.  Every function is
 * called with fs->lock held, which guards fs->mirror's inflight and own
 * fields; the waits drop it meanwhile, bounded by INFLIGHT_WAIT_MAX.
 *
 * What it cannot do: know a write of another mount's; remember more than
 * OWN_CHANGES_MAX changes (the oldest are forgotten).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"

void inflight_begin(struct fs *fs, struct inflight *in, const char *key,
		    size_t key_len)
{
	in->key = key;
	in->key_len = key_len;
	in->seq = fs->mirror.inflight_seq++;
	in->next = fs->mirror.inflight;
	fs->mirror.inflight = in;
}

void inflight_end(struct fs *fs, struct inflight *in)
{
	struct inflight **p;

	for (p = &fs->mirror.inflight; *p; p = &(*p)->next) {
		if (*p == in) {
			*p = in->next;
			break;
		}
	}
	pthread_cond_broadcast(&fs->mirror.inflight_cond);
}

bool inflight_has(struct fs *fs, const char *key, size_t key_len)
{
	struct inflight *in;

	for (in = fs->mirror.inflight; in; in = in->next) {
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
void own_changes_drop(struct fs *fs, int64_t rev)
{
	size_t i = 0;

	while (i < fs->mirror.nown) {
		if (fs->mirror.own[i].rev > rev) {
			i++;
			continue;
		}
		free(fs->mirror.own[i].key);
		fs->mirror.own[i] = fs->mirror.own[--fs->mirror.nown];
	}
}

void own_change_add(struct fs *fs, const char *key, size_t key_len,
		    int64_t rev)
{
	struct own_change *c;
	size_t i, oldest = 0;

	if (rev <= 0 || fs->cfg.nowatch)
		return;
	if (!fs->mirror.own) {
		fs->mirror.own = calloc(OWN_CHANGES_MAX,
					sizeof(*fs->mirror.own));
		if (!fs->mirror.own)
			return;
	}
	if (fs->mirror.nown == OWN_CHANGES_MAX) {
		/* an event that never came (the watch cut off meanwhile) */
		for (i = 1; i < fs->mirror.nown; i++)
			if (fs->mirror.own[i].rev < fs->mirror.own[oldest].rev)
				oldest = i;
		free(fs->mirror.own[oldest].key);
		fs->mirror.own[oldest] = fs->mirror.own[--fs->mirror.nown];
	}
	c = &fs->mirror.own[fs->mirror.nown];
	c->key = malloc(key_len + 1);
	if (!c->key)
		return;
	memcpy(c->key, key, key_len);
	c->key[key_len] = '\0';
	c->key_len = key_len;
	c->rev = rev;
	fs->mirror.nown++;
}

bool own_change_take(struct fs *fs, const char *key, size_t key_len,
		     int64_t rev)
{
	size_t i;

	for (i = 0; i < fs->mirror.nown; i++) {
		struct own_change *c = &fs->mirror.own[i];

		if (c->rev == rev && c->key_len == key_len &&
		    memcmp(c->key, key, key_len) == 0) {
			free(c->key);
			*c = fs->mirror.own[--fs->mirror.nown];
			return true;
		}
	}
	return false;
}

/*
 * True if the mount changed @key itself after @rev (a change whose event
 * is still to come): a listing at @rev that has the key older than that,
 * or has it where the mount since deleted it, is behind the mirror there.
 */
bool own_change_after(struct fs *fs, const char *key, size_t key_len,
		      int64_t rev)
{
	size_t i;

	for (i = 0; i < fs->mirror.nown; i++) {
		struct own_change *c = &fs->mirror.own[i];

		if (c->rev > rev && c->key_len == key_len &&
		    memcmp(c->key, key, key_len) == 0)
			return true;
	}
	return false;
}

void own_changes_free(struct fs *fs)
{
	own_changes_drop(fs, INT64_MAX);
	free(fs->mirror.own);
	fs->mirror.own = NULL;
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
		if (pthread_cond_timedwait(&fs->mirror.inflight_cond, &fs->lock,
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
 * How long a change waits for the mount's own write of its key, at most:
 * as long as a change of a key waits for the one before it (inflight_wait),
 * since a write whose answer was lost is settled by more requests, each
 * bounded by the request timeout.  Past it, the change is applied as
 * another client's (and maybe echoed although it is the mount's own).
 */
#define OWN_WRITE_WAIT_MAX INFLIGHT_WAIT_MAX

/*
 * Waits until no write of @key by this mount is in flight: its watch event
 * may come before its reply, and must then be known as the mount's own
 * (own_change_take) rather than applied and echoed as another client's.
 * In the watch's thread, so that the changes behind it wait too and the
 * mirror applies them in order.  The write's request never waits for the
 * watch, so this ends when it does (bounded all the same).  fs->lock held,
 * dropped meanwhile.
 */
void own_write_wait(struct fs *fs, const char *key, size_t key_len)
{
	struct timespec until;

	if (!inflight_has(fs, key, key_len))
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += OWN_WRITE_WAIT_MAX;
	while (inflight_has(fs, key, key_len)) {
		if (pthread_cond_timedwait(&fs->mirror.inflight_cond, &fs->lock,
					   &until) == ETIMEDOUT) {
			fuse_log(FUSE_LOG_WARNING, "etcdfs: watch: a write of "
				 "'%.*s' still in flight after %d s, going "
				 "on\n", (int)(key_len < 200 ? key_len : 200),
				 key, OWN_WRITE_WAIT_MAX);
			break;
		}
	}
}

uint64_t inflight_seq_now(struct fs *fs)
{
	return fs->mirror.inflight_seq;
}

static bool inflight_begun_before(struct fs *fs, uint64_t seq)
{
	struct inflight *in;

	for (in = fs->mirror.inflight; in; in = in->next) {
		if (in->seq < seq)
			return true;
	}
	return false;
}

bool inflight_wait_begun_before(struct fs *fs, uint64_t seq)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += OWN_WRITE_WAIT_MAX;
	while (inflight_begun_before(fs, seq)) {
		if (pthread_cond_timedwait(&fs->mirror.inflight_cond, &fs->lock,
					   &until) == ETIMEDOUT) {
			fuse_log(FUSE_LOG_WARNING, "etcdfs: watch: writes "
				 "still in flight after %d s, going on\n",
				 OWN_WRITE_WAIT_MAX);
			return false;
		}
	}
	return true;
}
