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
 * What it cannot do: settle a lost answer (it is STORE_EUNKNOWN: read the
 * keys), nor take the write stripes of every key: the caller orders its
 * writes of these keys (fs/ does, with its in-flight list).  v2 has no
 * multi-key transaction (ENOTSUP).
 */
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

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

int store_move_keys(struct store *s, const struct store_move_key *keys,
		    size_t n, const struct store_move_guard *guard,
		    int64_t *rev, struct store_error *err)
{
	struct store_move_guard g = { 0 };
	struct store_move_key *full;
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
		rc = s->be_ops->move_keys(s, full, n, guard ? &g : NULL, rev,
					  err);
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
