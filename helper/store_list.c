/*
 * store_list.c - listing a prefix at one revision, a page at a time
 * (store_list_pages, store_list of helper/store.h)
 *
 * Pages have tight range ends (the prefix's own end, each page starting
 * right after the last key of the one before), so that listing is linear
 * on etcd 3.4, which counts every key to the end of the range for each
 * page.  Every page is read at the first page's revision; if etcd
 * compacts that revision between two pages the listing starts over,
 * STORE_LIST_RESTARTS times at most.
 *
 * What it cannot do: a consistent listing of more than one prefix.
 */
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

/* A list whose later page was compacted away is read again, this often. */
#define STORE_LIST_RESTARTS		3

/*
 * Strips the prefix from out->kvs[from..], dropping the keys outside it;
 * a conforming server never returns one, but the mount must never show one.
 */
static void store_strip_list(struct store *s, struct store_list *out,
			     size_t from)
{
	size_t i, j = from;

	for (i = from; i < out->n; i++) {
		if (!out->kvs[i].key || !store_strip(s, &out->kvs[i])) {
			store_kv_release(&out->kvs[i]);
			continue;
		}
		if (i != j)
			out->kvs[j] = out->kvs[i];
		j++;
	}
	out->n = j;
}

int store_list_pages(struct store *s, const char *prefix, size_t prefix_len,
		     unsigned flags, store_page_fn page, void *arg,
		     int64_t *revision, struct store_error *err)
{
	struct store_list l = { 0 };
	char *full, *end, *start = NULL;
	size_t full_len, end_len, start_len = 0, got;
	const struct store_kv *last;
	int64_t rev;
	int rc = 0, restarts = 0;
	bool more, first;

	store_refresh_maybe(s);
	full = store_full_key(s, prefix, prefix_len, &full_len);
	if (!full)
		return store_enomem(err, prefix, prefix_len);
	end = store_range_end(full, full_len, &end_len);
	if (!end) {
		free(full);
		return store_enomem(err, prefix, prefix_len);
	}
	if (full_len == 0) {
		/* Every key: etcd starts a range at "\0", never at "". */
		free(full);
		full = calloc(1, 2);
		if (!full) {
			free(end);
			return store_enomem(err, NULL, 0);
		}
		full_len = 1;
	}

again:
	rev = s->cfg.revision;	/* 0: the first page's */
	for (first = true;; first = false) {
		more = false;
		rc = s->be_ops->range(s, start ? start : full,
				      start ? start_len : full_len, end,
				      end_len, rev, s->cfg.page_size, flags,
				      &l, &more, err);
		if (rc == STORE_ECOMPACTED && rev != 0 && !s->cfg.revision &&
		    restarts < STORE_LIST_RESTARTS) {
			/*
			 * Compacted between two pages: the first page's
			 * revision is gone; read the whole list again at a
			 * newer one rather than mix revisions.
			 */
			restarts++;
			store_list_release(&l);
			free(start);
			start = NULL;
			goto again;
		}
		if (rc < 0) {
			rc = store_read_rc(rc, err);
			goto out;
		}
		/* A later page's header holds the current revision, not
		 * the one it was read at. */
		if (rev == 0)
			rev = l.revision;
		else
			l.revision = rev;
		got = l.n;
		if (more && got) {
			/* Go on right after the last key: that key + "\0". */
			last = &l.kvs[l.n - 1];
			free(start);
			start = malloc(last->key_len + 2);
			if (!start) {
				rc = store_enomem(err, full, full_len);
				goto out;
			}
			memcpy(start, last->key, last->key_len);
			start[last->key_len] = '\0';
			start[last->key_len + 1] = '\0';
			start_len = last->key_len + 1;
		}
		if (more && !got) {
			rc = store_fail(err, STORE_EBADREPLY, full, full_len, 0,
					"the server promised more keys and "
					"sent none");
			goto out;
		}
		if (more && rev == 0) {
			rc = store_fail(err, STORE_EBADREPLY, full, full_len, 0,
					"no revision in a list reply");
			goto out;
		}
		store_strip_list(s, &l, 0);
		rc = page(arg, &l, first, err);
		store_list_release(&l);
		if (rc < 0)
			goto out;
		if (!more)
			break;
	}
	if (revision)
		*revision = rev;
out:
	store_list_release(&l);
	free(start);
	free(end);
	free(full);
	return rc;
}

/* store_list's page: moves the page's keys to the end of the list */
static int store_list_append(void *arg, struct store_list *page, bool first,
			     struct store_error *err)
{
	struct store_list *out = arg;
	size_t i;

	if (first)
		store_list_release(out);	/* read again after a compaction */
	out->revision = page->revision;
	for (i = 0; i < page->n; i++)
		if (store_list_push_own(out, &page->kvs[i]) < 0)
			return store_enomem(err, page->kvs[i].key,
					    page->kvs[i].key_len);
	return 0;
}

int store_list(struct store *s, const char *prefix, size_t prefix_len,
	       unsigned flags, struct store_list *out, struct store_error *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = store_list_pages(s, prefix, prefix_len, flags, store_list_append,
			      out, NULL, err);
	if (rc < 0)
		store_list_release(out);
	return rc;
}
