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
 * A transaction of many moves (store_txn.c) is settled with the reads of
 * this file too, at past revisions: store_settle_read_at.  A lease's
 * grant has no key to read: it names its own lease id (store_lease.c),
 * and is sent again with it until etcd answers, which grants the id or
 * says it has it already: either way the grant is done
 * (store_settle_grant).
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

/*
 * One read of @full at @rev (0: now, linearizably); with @at, through a
 * range of the one key, which tells the revision read at.  As store_read.
 */
static int settle_read_once(struct store *s, const char *full,
			    size_t full_len, int64_t rev, int64_t *at,
			    struct store_kv *cur, bool *exists,
			    struct store_error *err)
{
	struct store_list l = { 0 };
	bool more = false;
	int rc;

	if (!at)
		return store_read(s, full, full_len, STORE_READ_QUORUM, cur,
				  exists, err);
	memset(cur, 0, sizeof(*cur));
	*exists = false;
	rc = s->be_ops->range(s, full, full_len, NULL, 0, rev, 1,
			      STORE_READ_QUORUM, &l, &more, NULL, err);
	if (rc < 0) {
		store_list_release(&l);
		return store_read_rc(rc, err);
	}
	*at = l.revision;
	if (l.n > 1 || (l.n && (l.kvs[0].key_len != full_len ||
				memcmp(l.kvs[0].key, full, full_len) != 0 ||
				!store_strip(s, &l.kvs[0])))) {
		store_list_release(&l);
		return store_fail(err, STORE_EBADREPLY, full, full_len, rev,
				  "the server answered another key");
	}
	if (l.n) {
		store_kv_move(cur, &l.kvs[0]);
		*exists = true;
	}
	store_list_release(&l);
	return 0;
}

/* Until when a lost answer is settled: twice the request timeout. */
static int64_t settle_deadline(const struct store *s)
{
	return thread_now_ms() + 2 * s->cfg.request_timeout_ms;
}

/* Pauses before one more try, if it fits before @deadline. */
static bool settle_pause(int64_t deadline)
{
	if (thread_now_ms() + SETTLE_PAUSE_MS >= deadline)
		return false;
	thread_pause(SETTLE_PAUSE_MS);
	return true;
}

/* settle_read_once until etcd answers, for at most twice the timeout. */
static int settle_read_wait(struct store *s, const char *full,
			    size_t full_len, int64_t *at, struct store_kv *cur,
			    bool *exists, struct store_error *err)
{
	int64_t deadline = settle_deadline(s);
	int rc;

	do {
		rc = settle_read_once(s, full, full_len, 0, at, cur, exists,
				      err);
		if (rc != STORE_EUNREACHABLE && rc != STORE_ETIMEOUT)
			return rc;
	} while (settle_pause(deadline));
	return rc;
}

int store_settle_read(struct store *s, const char *full, size_t full_len,
		      struct store_kv *cur, bool *exists,
		      struct store_error *err)
{
	return settle_read_wait(s, full, full_len, NULL, cur, exists, err);
}

int store_settle_read_at(struct store *s, const char *full, size_t full_len,
			 int64_t rev, int64_t *at, struct store_kv *cur,
			 bool *exists, struct store_error *err)
{
	int64_t read_at = 0;

	if (rev > 0)
		return settle_read_once(s, full, full_len, rev,
					at ? at : &read_at, cur, exists, err);
	return settle_read_wait(s, full, full_len, at ? at : &read_at, cur,
				exists, err);
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

int store_settle_unknown(struct store_error *err, const char *full,
			 size_t full_len, const char *why)
{
	return settle_unknown(err, full, full_len, why);
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

/*
 * What the first change of @full after @expect says of the time to live
 * set of @st (@base's value, @ttl): 1 it is that set (*@rev its
 * revision), 0 another change came first (*@gone if a deletion), or a
 * store_err.
 */
static int settle_ttl_first(struct store_settle *st, const char *full,
			    size_t full_len, int64_t expect,
			    const struct store_kv *base, int64_t ttl,
			    int64_t *rev, bool *gone)
{
	struct store *s = st->s;
	struct store_error e = { 0 };
	struct store_kv now;
	int64_t left = 0;
	bool cas = false;
	int rc;

	rc = s->be_ops->first_change(s, full, full_len, expect, &cas, &now,
				     &left, &e);
	if (rc < 0)
		return rc;
	*gone = !now.key;
	rc = cas && now.mod_revision > st->floor &&
	     now.value_len == base->value_len &&
	     (!now.value_len ||
	      !memcmp(now.value, base->value, now.value_len)) &&
	     (!base->create_revision ||
	      now.create_revision == base->create_revision) &&
	     (ttl ? left > 0 && left <= ttl : left == 0);
	if (rc)
		*rev = now.mod_revision;
	store_kv_release(&now);
	return rc;
}

/* The key moved on from @expect: its first change since decides. */
static int settle_ttl_moved(struct store_settle *st, const char *full,
			    size_t full_len, int64_t expect,
			    const struct store_kv *base, int64_t ttl,
			    int64_t *rev, struct store_error *err)
{
	bool gone = false;
	int rc;

	rc = settle_ttl_first(st, full, full_len, expect, base, ttl, rev,
			      &gone);
	if (rc > 0)
		return 0;
	if (rc < 0)
		return settle_unknown(err, full, full_len, "the key changed, "
				      "and etcd no longer tells how");
	/* another change came first: a put on @expect never will be */
	if (gone)
		return store_fail(err, STORE_ENOTFOUND, full, full_len, 0,
				  "the key was deleted after revision %lld",
				  (long long)expect);
	return store_fail(err, STORE_EPRECONDITION, full, full_len, 0,
			  "the key changed after revision %lld",
			  (long long)expect);
}

int store_settle_ttl(struct store_settle *st, const char *full,
		     size_t full_len, int64_t expect,
		     const struct store_kv *base, int64_t ttl, int64_t *rev,
		     struct store_error *err)
{
	struct store *s = st->s;
	struct store_error e = { 0 };
	struct store_kv now;
	const char *value = base->value ? base->value : "";
	bool exists, same;
	int rc;

	rc = s->be_ops->set_ttl(s, full, full_len, expect, value,
				base->value_len, ttl, rev, err);
	while (store_err_unknown_outcome(rc) && s->be_ops->first_change) {
		if (store_settle_read(s, full, full_len, &now, &exists,
				      &e) < 0)
			return settle_unknown(err, full, full_len,
					      "cannot read the key again");
		same = exists && now.mod_revision == expect;
		store_kv_release(&now);
		if (!same)
			return settle_ttl_moved(st, full, full_len, expect,
						base, ttl, rev, err);
		if (st->retried)
			return settle_unknown(err, full, full_len,
					      "the key is as it was, twice");
		/* nothing was applied: once more */
		st->retried = true;
		store_note_retry(s);
		rc = s->be_ops->set_ttl(s, full, full_len, expect, value,
					base->value_len, ttl, rev, err);
	}
	/* the first copy, applied after all, may be what the compare met */
	if ((rc == STORE_EPRECONDITION || rc == STORE_ENOTFOUND) &&
	    st->retried &&
	    settle_ttl_moved(st, full, full_len, expect, base, ttl, rev,
			     NULL) == 0)
		return 0;
	return rc;
}

int store_settle_grant(struct store *s, int64_t ttl, int64_t id,
		       struct store_error *err)
{
	struct store_error e = { 0 };
	char why[sizeof(e.msg) + 64];
	int64_t deadline, got = id;
	int rc;

	rc = s->be_ops->lease_grant(s, ttl, &got, err);
	if (!store_err_unknown_outcome(rc))
		return rc;
	deadline = settle_deadline(s);
	do {
		/* the same id: a grant etcd applied is not applied twice */
		store_note_retry(s);
		got = id;
		rc = s->be_ops->lease_grant(s, ttl, &got, &e);
		/* granted now, or by the first copy: the id is ours */
		if (rc == 0 || rc == STORE_EEXISTS)
			return 0;
	} while ((rc == STORE_EUNREACHABLE || store_err_unknown_outcome(rc)) &&
		 settle_pause(deadline));
	snprintf(why, sizeof(why), "lease %llx sent again: %s", (long long)id,
		 e.msg);
	return settle_unknown(err, NULL, 0, why);
}
