/*
 * history.c - user.etcd.history: the revisions of a key etcd still holds
 *
 *	$ getfattr -n user.etcd.history --only-values FILE
 *	12 1 -
 *	15 2 2026-12-01T19:40:01.123Z
 *	31 3 2026-12-01T19:52:44.870Z
 *
 * One line per revision of the key since its last creation, oldest first:
 * its mod_revision, its version, and when this mount saw that change come
 * (its watch event, for the mount's own writes too), in UTC, or "-" where
 * the mount does not know (before it was mounted, under -o nowatch, or
 * more than SEEN_RING changes ago).  The revisions come from etcd
 * (store_key_history: one keys-only read per revision); a revision etcd
 * compacted away is not listed, and at most the HISTORY_MAX newest are.
 * So `etcdfs -o revision=R` of a line's R shows the key as it was.
 *
 * The times are the mirror's ring of the last SEEN_RING changes the
 * watch delivered (seen.c), read with fs->lock held.
 *
 * getfattr asks the size first (a size of 0), then reads with a buffer of
 * that size: a put in between would make the second text longer, and a
 * caller that followed the protocol would get ERANGE.  So the text a size
 * probe measured is kept (PROBE_SLOTS of them, per node and caller pid,
 * for PROBE_SECS) and the caller's next read of it gets exactly that
 * text, once; any other read asks etcd again.
 *
 * What it cannot do: v2, which keeps no history of a key but its last
 * 1,000 events of the whole cluster, is ENOTSUP; an earlier life of a key
 * (before it was deleted and made again) is not listed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"
#include "ops.h"
#include "seen.h"

/* Revisions listed at most: their lines stay under XATTR_SIZE_MAX. */
#define HISTORY_MAX	1000
/* Size probes' texts kept for the read that follows; how long at most. */
#define PROBE_SLOTS	8
#define PROBE_SECS	2

struct history_probe {
	fuse_ino_t ino;
	pid_t pid;
	struct timespec at;
	char *text;		/* NULL: a free slot */
	size_t len;
};

struct history {
	struct history_probe probe[PROBE_SLOTS];
};

bool fs_history_xattr(const char *name)
{
	return strcmp(name, "user.etcd.history") == 0;
}

/* fs->history, made at its first use: a mount nobody asks pays nothing. */
static struct history *history_of(struct fs *fs)
{
	if (!fs->history)
		fs->history = calloc(1, sizeof(*fs->history));
	return fs->history;
}

void history_free(struct fs *fs)
{
	size_t i;

	for (i = 0; fs->history && i < PROBE_SLOTS; i++)
		free(fs->history->probe[i].text);
	free(fs->history);
	fs->history = NULL;
}

static bool seen_at(const struct seen_change *seen, size_t n, int64_t rev,
		    struct timespec *at)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (seen[i].rev == rev) {
			*at = seen[i].at;
			return true;
		}
	}
	return false;
}

/* The lines of @v into a malloc()ed *@out; fs->lock held. */
static int format(struct fs *fs, const char *key, size_t key_len,
		  const struct store_version *v, size_t n, char **out,
		  size_t *len)
{
	size_t cap = n * 80 + 1, o = 0, i, nseen;
	struct seen_change *seen;
	struct timespec at;
	struct tm tm;
	char when[40];
	char *buf;

	if (seen_of_key(fs, key, key_len, &seen, &nseen) < 0)
		return -ENOMEM;
	buf = malloc(cap);
	if (!buf) {
		free(seen);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (seen_at(seen, nseen, v[i].mod_revision, &at) &&
		    gmtime_r(&at.tv_sec, &tm)) {
			size_t w = strftime(when, sizeof(when),
					    "%Y-%m-%dT%H:%M:%S", &tm);

			snprintf(when + w, sizeof(when) - w, ".%03ldZ",
				 at.tv_nsec / 1000000);
		} else {
			snprintf(when, sizeof(when), "-");
		}
		o += (size_t)snprintf(buf + o, cap - o, "%" PRId64 " %" PRId64
				      " %s\n", v[i].mod_revision,
				      v[i].version, when);
	}
	free(seen);
	*out = buf;
	*len = o;
	return 0;
}

/* Keeps @text (stolen) that @pid's size probe of @ino measured. */
static void probe_keep_own(struct fs *fs, fuse_ino_t ino, pid_t pid,
			   char *text, size_t len)
{
	struct history *h = history_of(fs);
	struct history_probe *p;
	size_t i, oldest = 0;

	if (!h) {
		free(text);	/* the read then asks etcd again */
		return;
	}
	/* this caller's earlier text first: it must not outlive this one */
	for (i = 0; i < PROBE_SLOTS; i++) {
		p = &h->probe[i];
		if (p->text && p->ino == ino && p->pid == pid)
			break;
	}
	for (; i == PROBE_SLOTS && oldest < PROBE_SLOTS; oldest++)
		if (!h->probe[oldest].text)
			i = oldest;
	if (i == PROBE_SLOTS) {
		for (i = 0, oldest = 0; i < PROBE_SLOTS; i++)
			if (h->probe[i].at.tv_sec < h->probe[oldest].at.tv_sec)
				oldest = i;
		i = oldest;
	}
	p = &h->probe[i];
	free(p->text);
	p->ino = ino;
	p->pid = pid;
	p->text = text;
	p->len = len;
	fs_now(&p->at);
}

/* The text @pid's size probe of @ino kept (free() it), or NULL. */
static char *probe_take(struct fs *fs, fuse_ino_t ino, pid_t pid,
			size_t *len)
{
	struct history *h = fs->history;
	struct timespec now;
	size_t i;
	char *text;

	if (!h)
		return NULL;
	fs_now(&now);
	for (i = 0; i < PROBE_SLOTS; i++) {
		struct history_probe *p = &h->probe[i];

		if (!p->text || p->ino != ino || p->pid != pid)
			continue;
		text = p->text;
		p->text = NULL;
		if (now.tv_sec - p->at.tv_sec > PROBE_SECS) {
			free(text);	/* too old: the caller's next try */
			return NULL;
		}
		*len = p->len;
		return text;
	}
	return NULL;
}

void fs_history_get(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs = fs_of(req);
	struct store_error err = { 0 };
	struct store_version *v = NULL;
	char *key = NULL, *text = NULL;
	size_t key_len = 0, n = 0, len = 0;
	bool more = false;
	pid_t pid = fuse_req_ctx(req)->pid;
	struct node *node;
	int ret = 0;

	pthread_mutex_lock(&fs->lock);
	text = size ? probe_take(fs, ino, pid, &len) : NULL;
	pthread_mutex_unlock(&fs->lock);
	if (text) {
		/* what the size probe measured, even if a put came since */
		if (size < len)
			fuse_reply_err(req, ERANGE);
		else
			fuse_reply_buf(req, text, len);
		free(text);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	node = node_of(fs, ino);
	if (node->type != NODE_FILE || node->local || node->pending)
		ret = -ENODATA;
	else if (!(key = malloc(node->key_len + 1)))
		ret = -ENOMEM;
	else {
		memcpy(key, node->key, node->key_len);
		key_len = node->key_len;
	}
	pthread_mutex_unlock(&fs->lock);
	if (ret == 0) {
		ret = store_key_history(fs->store, key, key_len, HISTORY_MAX,
					&v, &n, &more, &err);
		if (ret == STORE_ENOTSUP) {
			ret = -ENOTSUP;
		} else if (ret < 0) {
			fs_log_store_error("cannot read the history", &err);
			ret = fs_errno(ret);
		}
	}
	if (ret == 0) {
		pthread_mutex_lock(&fs->lock);
		ret = format(fs, key, key_len, v, n, &text, &len);
		if (ret == 0 && size == 0) {
			probe_keep_own(fs, ino, pid, text, len);
			text = NULL;
		}
		pthread_mutex_unlock(&fs->lock);
	}
	free(v);
	free(key);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, text, len);
	free(text);
}
