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
 * What it cannot do: go back past the key's last creation (the walk does
 * not know when an earlier life of the key ended); v2 has no reads at a
 * past revision (ENOTSUP).
 */
#include <stdlib.h>
#include <string.h>

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
			      flags | STORE_READ_KEYS_ONLY, &l, &more, err);
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

	rc = at_rev(s, full, full_len, 0, STORE_READ_QUORUM, &v[0], &found,
		    err);
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
