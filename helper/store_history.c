/*
 * store_history.c - the revisions of one key etcd still holds, behind
 * helper/store.h
 *
 * etcd keeps every revision of a key until a compaction: a range of the
 * key at revision R answers the key as it was at R (its mod_revision the
 * last write at or before R).  So the walk starts from the key as it is
 * now and asks for it at its mod_revision - 1, and so on back: one small
 * keys-only request per revision, never the values, until the key's
 * first version (its create_revision) or etcd's compacted revision.  A
 * version written before the compacted revision but still current at it
 * is readable there, not at its own revision: it is left out (etcdctl
 * get --rev of it fails too), unless it is the key's current version.
 *
 * store_check_revision tells whether the key space can be read at a
 * revision, and if etcd compacted it, which is the oldest it keeps: a
 * range says only "compacted", a watch from there is cancelled with the
 * compact revision.
 *
 * What it cannot do: go back past the key's last creation (the walk does
 * not know when an earlier life of the key ended); v2 has no reads at a
 * past revision (ENOTSUP).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_i.h"

/* The key @full as it was at @rev (0: now) into @v; *@found false if absent. */
static int at_rev(struct store *s, const char *full, size_t full_len,
		  int64_t rev, unsigned flags, struct store_version *v,
		  bool *found, struct store_error *err)
{
	struct store_list l = { 0 };
	bool more = false;
	int rc;

	*found = false;
	rc = s->be_ops->range(s, full, full_len, NULL, 0, rev, 1,
			      flags | STORE_READ_KEYS_ONLY, &l, &more, NULL,
			      err);
	if (rc == 0 && l.n > 1)
		rc = store_fail(err, STORE_EBADREPLY, full, full_len, 0,
				"%zu keys for one", l.n);
	if (rc == 0 && l.n == 1) {
		if (l.kvs[0].key_len != full_len ||
		    memcmp(l.kvs[0].key, full, full_len) != 0) {
			rc = store_fail(err, STORE_EBADREPLY, full, full_len,
					0, "the server answered another key");
		} else {
			v->mod_revision = l.kvs[0].mod_revision;
			v->create_revision = l.kvs[0].create_revision;
			v->version = l.kvs[0].version;
			*found = true;
		}
	}
	store_list_release(&l);
	return rc;
}

/* Newest first in @v (@n of them, at most @max): the walk back. */
static int walk(struct store *s, const char *full, size_t full_len,
		struct store_version *v, size_t max, size_t *n, bool *more,
		struct store_error *err)
{
	struct store_version prev;
	bool found;
	int rc;

	/* from now, or from the revision the store reads at */
	rc = at_rev(s, full, full_len, s->cfg.revision, STORE_READ_QUORUM,
		    &v[0], &found, err);
	if (rc < 0)
		return rc;
	if (!found)
		return store_fail(err, STORE_ENOTFOUND, full, full_len, 0,
				  "key not found");
	*n = 1;
	while (v[*n - 1].mod_revision > v[*n - 1].create_revision) {
		if (*n == max) {
			*more = true;
			break;
		}
		rc = at_rev(s, full, full_len, v[*n - 1].mod_revision - 1, 0,
			    &prev, &found, err);
		if (rc == STORE_ECOMPACTED) {
			/* the oldest one found may be before the compaction */
			if (*n > 1 &&
			    at_rev(s, full, full_len, v[*n - 1].mod_revision,
				   0, &prev, &found, err) == STORE_ECOMPACTED)
				(*n)--;
			return 0;
		}
		if (rc < 0)
			return rc;
		if (!found || prev.create_revision != v[0].create_revision ||
		    prev.mod_revision >= v[*n - 1].mod_revision)
			return store_fail(err, STORE_EBADREPLY, full, full_len,
					  v[*n - 1].mod_revision,
					  "the key's history does not go "
					  "back from revision %lld",
					  (long long)v[*n - 1].mod_revision);
		v[(*n)++] = prev;
	}
	return 0;
}

int store_key_history(struct store *s, const char *key, size_t key_len,
		      size_t max, struct store_version **out, size_t *n,
		      bool *more, struct store_error *err)
{
	struct store_version *v, t;
	size_t full_len, i;
	char *full;
	int rc;

	*out = NULL;
	*n = 0;
	*more = false;
	if (max == 0)
		return store_fail(err, STORE_EINVAL, key, key_len, 0,
				  "no room for a revision");
	if (!s->be_ops->past_reads)
		return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
				  "the backend keeps no history of a key");
	store_refresh_maybe(s);
	full = store_full_key(s, key, key_len, &full_len);
	v = full ? calloc(max, sizeof(*v)) : NULL;
	if (!v) {
		free(full);
		return store_enomem(err, key, key_len);
	}
	rc = walk(s, full, full_len, v, max, n, more, err);
	free(full);
	if (rc < 0) {
		free(v);
		*n = 0;
		*more = false;
		return rc;
	}
	for (i = 0; i < *n / 2; i++) {
		t = v[i];
		v[i] = v[*n - 1 - i];
		v[*n - 1 - i] = t;
	}
	*out = v;
	return 0;
}

/* What the watch of store_check_revision tells. */
struct compact_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;		/* protected by lock, as compact */
	int64_t compact;
};

static void compact_event(void *arg, const struct store_event *ev)
{
	struct compact_wait *w = arg;

	if (ev->type != STORE_EV_ERROR || ev->err != STORE_ECOMPACTED)
		return;
	pthread_mutex_lock(&w->lock);
	w->compact = ev->compact_revision;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* The oldest revision etcd keeps, @rev being compacted; 0 if unknown. */
static int64_t compact_revision(struct store *s, int64_t rev)
{
	struct compact_wait w = { .done = false };
	struct store_watch *watch = NULL;
	struct store_error e = { 0 };
	long ms = s->cfg.request_timeout_ms > 0 ?
		  s->cfg.request_timeout_ms : 5000;
	struct timespec until;
	int64_t got;

	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	if (store_watch(s, "", 0, true, rev, compact_event, &w, &watch,
			&e) == 0) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += ms / 1000;
		until.tv_nsec += (ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&w.lock);
		while (!w.done &&
		       pthread_cond_timedwait(&w.cond, &w.lock, &until) == 0)
			;
		pthread_mutex_unlock(&w.lock);
		store_watch_stop(watch);
	}
	got = w.compact;
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return got;
}

int store_check_revision(struct store *s, int64_t rev, int64_t *now,
			 int64_t *oldest, struct store_error *err)
{
	struct store_error e = { 0 };
	struct store_version v;
	bool found;
	int rc;

	*now = 0;
	*oldest = 0;
	if (!s->be_ops->past_reads)
		return store_fail(err, STORE_ENOTSUP, NULL, 0, 0,
				  "the %s backend cannot read at a past "
				  "revision", s->be_ops->name);
	rc = store_revision(s, now, err);
	if (rc < 0)
		return rc;
	if (rev <= 0 || rev > *now)
		return store_fail(err, STORE_EINVAL, NULL, 0, rev,
				  "revision %lld is in the future: the "
				  "cluster is at revision %lld",
				  (long long)rev, (long long)*now);
	/* any key will do: etcd refuses a compacted revision for all */
	rc = at_rev(s, s->prefix_len ? s->prefix : "",
		    s->prefix_len ? s->prefix_len : 1, rev, 0, &v, &found,
		    &e);
	if (rc != STORE_ECOMPACTED) {
		if (rc < 0 && err)
			*err = e;
		return rc;
	}
	/* a backend that knows it says so (a snapshot); etcd's watch tells */
	*oldest = e.revision > rev ? e.revision : compact_revision(s, rev);
	if (!*oldest)
		return store_fail(err, STORE_ECOMPACTED, NULL, 0, 0,
				  "revision %lld is compacted", (long long)rev);
	return store_fail(err, STORE_ECOMPACTED, NULL, 0, *oldest,
			  "revision %lld is compacted: the oldest revision "
			  "etcd keeps is %lld", (long long)rev,
			  (long long)*oldest);
}
