/*
 * store_txn.c - many keys moved in one transaction (store_move_keys), for
 * a directory renamed at once
 *
 * The store prefix goes on every key and on the guard's prefixes, the
 * backend sends one txn of compares (each key's, and the guard's two
 * ranges: the keys the caller does not know), puts and deletes.  A txn
 * over many keys is refused by etcd past its --max-txn-ops (128 by
 * default) or --max-request-bytes; the caller keeps below them.
 *
 * A txn whose answer was lost is settled as store_settle.c settles a
 * write, from etcd's history, which another client's later change cannot
 * rewrite: the sources are read at one revision, the cluster's latest.
 * All of them as the caller knew them: it was not applied, and it is
 * sent once more.  Some of them only: it was not applied, and never will
 * be (a source it compares moved on): a conflict.  None: the revision R
 * at which one of them first changed (a bisection of its history) is
 * this txn if at R - 1 every source was as the caller knew it, and at R
 * every source is gone and every target made, with its value and lease:
 * done, at R; else it was not, and never will be, applied: a conflict.
 * Where etcd no longer holds the revisions that tell (compacted), or
 * does not answer, it is STORE_EUNKNOWN.
 *
 * What it cannot do: tell this txn from another client's identical one
 * (the same keys, values and leases at the same revisions), which is
 * taken for it; take the write stripes of every key: the caller orders
 * its writes of these keys (fs/ does, with its in-flight list).  v2 has
 * no multi-key transaction (ENOTSUP).
 */
#include <stdlib.h>
#include <string.h>

#include "store_i.h"
#include "store_settle.h"

/* @guard with the store prefix on its prefixes; 0 or a store_err. */
static int txn_guard(struct store *s, const struct store_move_guard *guard,
		     struct store_move_guard *g, struct store_error *err)
{
	if (!guard->from_prefix_len || !guard->to_prefix_len ||
	    guard->revision <= 0)
		return store_fail(err, STORE_EINVAL, guard->from_prefix,
				  guard->from_prefix_len, 0,
				  "bad ranges to move");
	*g = *guard;
	g->from_prefix = store_full_key(s, guard->from_prefix,
					guard->from_prefix_len,
					&g->from_prefix_len);
	g->to_prefix = store_full_key(s, guard->to_prefix,
				      guard->to_prefix_len, &g->to_prefix_len);
	if (!g->from_prefix || !g->to_prefix)
		return store_enomem(err, guard->from_prefix,
				    guard->from_prefix_len);
	return 0;
}

/* What a txn of moves whose answer was lost left in etcd. */
enum txn_state {
	TXN_APPLIED,	/* etcd applied it, at *rev */
	TXN_UNCHANGED,	/* every source as the caller knew it: not applied */
	TXN_REFUSED,	/* not applied, and never will be: a source moved on */
	TXN_UNKNOWN,	/* etcd cannot tell any more */
};

/* Is @kv (NULL: absent) @k's source as the caller knew it? */
static bool txn_known(const struct store_kv *kv,
		      const struct store_move_key *k)
{
	return kv && kv->mod_revision == k->mod_revision;
}

/* Is @kv (NULL: absent) @k's target as this txn made it at @r? */
static bool txn_made(const struct store_kv *kv,
		     const struct store_move_key *k, int64_t r)
{
	return kv && kv->create_revision == r && kv->mod_revision == r &&
	       kv->version == 1 && kv->lease == k->lease &&
	       kv->value_len == k->value_len &&
	       (!kv->value_len || !memcmp(kv->value, k->value, kv->value_len));
}

/*
 * 1 if revision @r is the txn of the @n keys @k: every source as the
 * caller knew it at @r - 1 and gone at @r, every target made at @r; 0 if
 * not; or a store_err.
 */
static int txn_was(struct store *s, const struct store_move_key *k, size_t n,
		   int64_t r)
{
	struct store_error e = { 0 };
	struct store_kv kv;
	bool there, is = true;
	size_t i;
	int rc;

	for (i = 0; i < n && is; i++) {
		rc = store_settle_read_at(s, k[i].from, k[i].from_len, r - 1,
					  NULL, &kv, &there, &e);
		if (rc < 0)
			return rc;
		is = txn_known(there ? &kv : NULL, &k[i]);
		store_kv_release(&kv);
		if (!is)
			break;
		rc = store_settle_read_at(s, k[i].from, k[i].from_len, r,
					  NULL, &kv, &there, &e);
		if (rc < 0)
			return rc;
		is = !there;
		store_kv_release(&kv);
		if (!is)
			break;
		rc = store_settle_read_at(s, k[i].to, k[i].to_len, r, NULL,
					  &kv, &there, &e);
		if (rc < 0)
			return rc;
		is = txn_made(there ? &kv : NULL, &k[i], r);
		store_kv_release(&kv);
	}
	return is;
}

/*
 * The first revision after @k->mod_revision at which @k's source was no
 * longer at it, knowing that it was not at @now: its history, by
 * bisection (a key once moved on never comes back to a revision).
 */
static int txn_first_change(struct store *s, const struct store_move_key *k,
			    int64_t now, int64_t *r)
{
	struct store_error e = { 0 };
	int64_t lo = k->mod_revision, hi = now, mid;
	struct store_kv kv;
	bool there;
	int rc;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		rc = store_settle_read_at(s, k->from, k->from_len, mid, NULL,
					  &kv, &there, &e);
		if (rc < 0)
			return rc;
		if (txn_known(there ? &kv : NULL, k))
			lo = mid;
		else
			hi = mid;
		store_kv_release(&kv);
	}
	*r = hi;
	return 0;
}

/* What the txn of the @n keys @k left in etcd; *@why if unknown. */
static enum txn_state txn_state(struct store *s,
				const struct store_move_key *k, size_t n,
				int64_t *rev, const char **why)
{
	struct store_error e = { 0 };
	struct store_kv kv;
	int64_t now = 0, r = 0;
	size_t i, same = 0, moved = 0;
	bool there;
	int rc;

	*why = "cannot read the keys again";
	/* every source at one revision: the first read's, the latest */
	for (i = 0; i < n; i++) {
		rc = store_settle_read_at(s, k[i].from, k[i].from_len, now,
					  i ? NULL : &now, &kv, &there, &e);
		if (rc < 0)
			return TXN_UNKNOWN;
		if (txn_known(there ? &kv : NULL, &k[i]))
			same++;
		else
			moved = i;
		store_kv_release(&kv);
	}
	if (same == n)
		return TXN_UNCHANGED;
	/* one is as it was: not applied; one moved on: never will be */
	if (same)
		return TXN_REFUSED;
	*why = "etcd no longer holds the revisions that tell";
	rc = txn_first_change(s, &k[moved], now, &r);
	if (rc == 0)
		rc = txn_was(s, k, n, r);
	if (rc < 0)
		return TXN_UNKNOWN;
	if (!rc)
		return TXN_REFUSED;
	*rev = r;
	return TXN_APPLIED;
}

/*
 * be_ops->move_keys of the @n full keys @k, settled: 0 (applied, by this
 * copy or the first), the backend's error, EPRECONDITION where a source
 * moved on while the answer was lost, or EUNKNOWN.
 */
static int txn_settled(struct store *s, const struct store_move_key *k,
		       size_t n, const struct store_move_guard *g,
		       int64_t *rev, struct store_error *err)
{
	enum txn_state ts;
	bool retried = false;
	const char *why;
	int rc;

	rc = s->be_ops->move_keys(s, k, n, g, rev, err);
	while (store_err_unknown_outcome(rc)) {
		ts = txn_state(s, k, n, rev, &why);
		if (ts == TXN_APPLIED)
			return 0;
		if (ts == TXN_REFUSED)
			return store_fail(err, STORE_EPRECONDITION, k[0].from,
					  k[0].from_len, 0, "a key changed "
					  "since the caller saw it: nothing "
					  "was moved");
		if (ts == TXN_UNCHANGED && retried)
			why = "the keys are as they were, twice";
		if (ts != TXN_UNCHANGED || retried)
			return store_settle_unknown(err, k[0].from,
						    k[0].from_len, why);
		/* nothing was applied: once more */
		retried = true;
		store_note_retry(s);
		rc = s->be_ops->move_keys(s, k, n, g, rev, err);
	}
	/* the first copy, applied after all, may be what the compares met */
	if (rc == STORE_EPRECONDITION && retried &&
	    txn_state(s, k, n, rev, &why) == TXN_APPLIED)
		return 0;
	return rc;
}

int store_move_keys(struct store *s, const struct store_move_key *keys,
		    size_t n, const struct store_move_guard *guard,
		    int64_t *rev, struct store_error *err)
{
	struct store_move_guard g = { 0 };
	struct store_move_key *full;
	int64_t newrev = 0;
	size_t i;
	int rc = 0;

	if (rev)
		*rev = 0;
	if (n == 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "no keys to move");
	if (!s->be_ops->move_keys)
		return store_fail(err, STORE_ENOTSUP, keys[0].from,
				  keys[0].from_len, 0, "the %s backend has "
				  "no multi-key transactions",
				  s->be_ops->name);
	full = calloc(n, sizeof(*full));
	if (!full)
		return store_enomem(err, keys[0].from, keys[0].from_len);
	for (i = 0; i < n && rc == 0; i++) {
		full[i] = keys[i];
		full[i].from = store_full_key(s, keys[i].from,
					      keys[i].from_len,
					      &full[i].from_len);
		full[i].to = store_full_key(s, keys[i].to, keys[i].to_len,
					    &full[i].to_len);
		if (!full[i].from || !full[i].to)
			rc = store_enomem(err, keys[i].from, keys[i].from_len);
		else if (keys[i].mod_revision <= 0 || keys[i].lease < 0)
			rc = store_fail(err, STORE_EINVAL, keys[i].from,
					keys[i].from_len, 0,
					"bad revision or lease");
	}
	if (rc == 0 && guard)
		rc = txn_guard(s, guard, &g, err);
	if (rc == 0) {
		store_refresh_maybe(s);
		rc = txn_settled(s, full, n, guard ? &g : NULL, &newrev,
				 err);
		if (rc == 0 && rev)
			*rev = newrev;
	}
	free((char *)g.from_prefix);
	free((char *)g.to_prefix);
	for (i = 0; i < n; i++) {
		free((char *)full[i].from);
		free((char *)full[i].to);
	}
	free(full);
	return rc;
}
