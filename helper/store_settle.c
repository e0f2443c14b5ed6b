/*
 * store_settle.c - what became of a write whose answer was lost
 *
 * A write that went out and got no answer (a connection reset, a timeout
 * after sending, etcd's "leader changed" mid-request: the backends say
 * STORE_EUNKNOWN or STORE_ETIMEOUT) may or may not have been applied.
 * Every write of the store (the guaranteed update's compare-and-swap, a
 * create, a delete with preconditions, a rename) is sent through here:
 * when its outcome is unknown the key is read again, linearizably, as
 * soon as etcd answers (for at most twice the request timeout), and
 *   - if it is still as the write's precondition saw it, nothing was
 *     applied, and the write is sent once more;
 *   - if it holds this write (this write's value at a revision newer than
 *     every write this store made before it on the key, created by it
 *     for a create, one version on from the base for an update; for a
 *     delete: gone), the write is reported done;
 *   - if a write this store saw done before this one went out changed
 *     it, the compare failed: STORE_EPRECONDITION;
 *   - else STORE_EUNKNOWN: it may have been applied.
 * A write sent again that then fails its compare is checked the same way:
 * the first copy may have been applied late.
 *
 * Writes of one key by this store go one at a time (a stripe lock held
 * across the request and its settling), so that a concurrent write of the
 * same value by another thread of this store is never taken for this
 * one; each stripe remembers the newest revision its writes made.
 *
 * What it cannot do: tell this write from another client's write of the
 * same bytes at the same base made at the same moment (etcd records no
 * writer); such a write is reported done.  A deletion's revision, when
 * found this way, is the cluster's revision after it, not its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"
#include "store_settle.h"
#include "thread.h"

/* Between two reads of a key whose write's answer was lost. */
#define SETTLE_PAUSE_MS		100

/* FNV-1a of the key: which stripe serializes its writes. */
static size_t settle_stripe(const char *key, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 16777619u;
	}
	return h % STORE_WRITE_STRIPES;
}

void store_settle_lock(struct store *s, struct store_settle *st,
		       const char *key, size_t key_len)
{
	struct store_priv *p = store_priv(s);

	st->s = s;
	st->stripe = settle_stripe(key, key_len);
	pthread_mutex_lock(&p->write_locks[st->stripe]);
	st->floor = p->write_revs[st->stripe];
	st->retried = false;
}

void store_settle_unlock(struct store_settle *st, int64_t rev)
{
	struct store_priv *p = store_priv(st->s);

	if (rev > p->write_revs[st->stripe])
		p->write_revs[st->stripe] = rev;
	pthread_mutex_unlock(&p->write_locks[st->stripe]);
}

bool store_settle_lock2(struct store *s, struct store_settle *a,
			struct store_settle *b, const char *key1,
			size_t key1_len, const char *key2, size_t key2_len)
{
	struct store_priv *p = store_priv(s);
	size_t s1 = settle_stripe(key1, key1_len);
	size_t s2 = settle_stripe(key2, key2_len);

	if (s1 == s2) {
		store_settle_lock(s, a, key1, key1_len);
		*b = *a;
		return false;
	}
	/* lock order: the lower stripe first */
	pthread_mutex_lock(&p->write_locks[s1 < s2 ? s1 : s2]);
	pthread_mutex_lock(&p->write_locks[s1 < s2 ? s2 : s1]);
	a->s = b->s = s;
	a->stripe = s1;
	b->stripe = s2;
	a->floor = p->write_revs[s1];
	if (p->write_revs[s2] > a->floor)
		a->floor = p->write_revs[s2];
	b->floor = a->floor;
	a->retried = b->retried = false;
	return true;
}

void store_settle_unlock2(struct store_settle *a, struct store_settle *b,
			  bool two, int64_t rev)
{
	if (two)
		store_settle_unlock(b, rev);
	store_settle_unlock(a, rev);
}

/*
 * Moves @now (read with the prefix stripped) into @dst as a backend gives
 * a key: with its full key @full.
 */
static void settle_give(struct store_kv *dst, struct store_kv *now,
			const char *full, size_t full_len)
{
	char *k = store_memdup(full, full_len);

	if (!k) {
		store_kv_release(now);
		return;
	}
	free(now->key);
	now->key = k;
	now->key_len = full_len;
	store_kv_move(dst, now);
}

int store_settle_read(struct store *s, const char *full, size_t full_len,
		      struct store_kv *cur, bool *exists,
		      struct store_error *err)
{
	int64_t deadline = thread_now_ms() + 2 * s->cfg.request_timeout_ms;
	int rc;

	for (;;) {
		rc = store_read(s, full, full_len, STORE_READ_QUORUM, cur,
				exists, err);
		if (rc != STORE_EUNREACHABLE && rc != STORE_ETIMEOUT)
			return rc;
		if (thread_now_ms() + SETTLE_PAUSE_MS >= deadline)
			return rc;
		thread_pause(SETTLE_PAUSE_MS);
	}
}

bool store_settle_is_put(const struct store_settle *st,
			 const struct store_kv *now, int64_t expect,
			 const char *value, size_t value_len, int64_t lease,
			 const struct store_kv *base)
{
	if (!now || now->mod_revision <= st->floor ||
	    now->mod_revision <= expect || now->value_len != value_len ||
	    (value_len && memcmp(now->value, value, value_len) != 0))
		return false;
	if (lease >= 0 && now->lease != lease)
		return false;
	if (expect == 0)
		return now->create_revision == now->mod_revision &&
		       now->version <= 1;
	if (base && base->create_revision &&
	    now->create_revision != base->create_revision)
		return false;
	if (base && base->version && now->version != base->version + 1)
		return false;
	return expect > 0;
}

/*
 * The message of an unsettled write: what the transport said first, and
 * what the read found.
 */
static int settle_unknown(struct store_error *err, const char *full,
			  size_t full_len, const char *why)
{
	char first[sizeof(err->msg)] = "";

	if (err)
		memcpy(first, err->msg, sizeof(first));
	return store_fail(err, STORE_EUNKNOWN, full, full_len, 0,
			  "the write may have been applied: %s (%s)", first,
			  why);
}

int store_settle_cas(struct store_settle *st, const char *full,
		     size_t full_len, int64_t expect, const char *value,
		     size_t value_len, int64_t lease,
		     const struct store_kv *base, int64_t *rev,
		     struct store_kv *cur, struct store_error *err)
{
	struct store *s = st->s;
	struct store_error e = { 0 };
	struct store_kv now;
	bool exists;
	int rc;

	rc = s->be_ops->cas(s, full, full_len, expect, value, value_len,
			    lease, rev, cur, err);
	while (store_err_unknown_outcome(rc)) {
		if (store_settle_read(s, full, full_len, &now, &exists,
				      &e) < 0)
			return settle_unknown(err, full, full_len,
					      "cannot read the key again");
		if (store_settle_is_put(st, exists ? &now : NULL, expect,
					value, value_len, lease, base)) {
			*rev = now.mod_revision;
			store_kv_release(&now);
			return 0;
		}
		/*
		 * Changed by a write this store saw done before this one
		 * went out: the compare failed, nothing was applied.
		 */
		if (exists && now.mod_revision != expect &&
		    now.mod_revision <= st->floor) {
			rc = store_fail(err, STORE_EPRECONDITION, full,
					full_len, now.mod_revision,
					"the key is at revision %lld, not %lld",
					(long long)now.mod_revision,
					(long long)expect);
			settle_give(cur, &now, full, full_len);
			return rc;
		}
		if (st->retried || (exists ? now.mod_revision != expect :
				    expect != 0)) {
			char why[160];

			snprintf(why, sizeof(why), "%s: it is %s%lld, "
				 "version %lld, after revision %lld",
				 st->retried ? "the key is as it was, twice" :
				 "the key changed", exists ? "at revision " :
				 "absent: ", (long long)now.mod_revision,
				 (long long)now.version, (long long)expect);
			store_kv_release(&now);
			return settle_unknown(err, full, full_len, why);
		}
		/* nothing was applied: once more */
		store_kv_release(&now);
		st->retried = true;
		store_note_retry(s);
		if (cur)
			store_kv_release(cur);
		rc = s->be_ops->cas(s, full, full_len, expect, value,
				    value_len, lease, rev, cur, err);
	}
	/* the first copy, applied after all, may be what the compare met */
	if (rc == STORE_EPRECONDITION && st->retried && cur &&
	    store_settle_is_put(st, cur->key ? cur : NULL, expect, value,
				value_len, lease, base)) {
		*rev = cur->mod_revision;
		return 0;
	}
	return rc;
}

int store_settle_del(struct store_settle *st, const char *full,
		     size_t full_len, int64_t expect_mod,
		     int64_t expect_create, struct store_kv *prev,
		     int64_t *rev, struct store_error *err)
{
	struct store *s = st->s;
	struct store_error e = { 0 };
	struct store_kv now;
	bool exists;
	int rc;

	rc = s->be_ops->del(s, full, full_len, expect_mod, expect_create,
			    prev, rev, err);
	while (store_err_unknown_outcome(rc)) {
		if (store_settle_read(s, full, full_len, &now, &exists,
				      &e) < 0)
			return settle_unknown(err, full, full_len,
					      "cannot read the key again");
		if (!exists) {
			/* gone: the revision after the deletion */
			if (s->be_ops->revision(s, rev, &e) < 0)
				*rev = 0;
			return 0;
		}
		if (expect_create && now.create_revision != expect_create) {
			store_kv_release(&now);
			return settle_unknown(err, full, full_len,
					      "the key was made again");
		}
		if (expect_mod > 0 && now.mod_revision != expect_mod) {
			/* changed by someone else and not deleted: the
			 * delete's compare failed */
			rc = store_fail(err, STORE_EPRECONDITION, full,
					full_len, now.mod_revision,
					"the key is at revision %lld",
					(long long)now.mod_revision);
			settle_give(prev, &now, full, full_len);
			return rc;
		}
		store_kv_release(&now);
		if (st->retried)
			return settle_unknown(err, full, full_len,
					      "the key is as it was, twice");
		st->retried = true;
		store_note_retry(s);
		if (prev)
			store_kv_release(prev);
		rc = s->be_ops->del(s, full, full_len, expect_mod,
				    expect_create, prev, rev, err);
	}
	/* gone by the first copy, applied after all */
	if (rc == STORE_ENOTFOUND && st->retried) {
		if (s->be_ops->revision(s, rev, &e) < 0)
			*rev = 0;
		return 0;
	}
	return rc;
}
