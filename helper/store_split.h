/*
 * store_split.h - where a listing cuts a range of keys in smaller ones
 * (used by store_list.c)
 *
 * etcd walks every key of a range to count it, even when the range has a
 * limit, so a listing that pages with an open end is quadratic.  A
 * listing instead cuts its range into sub-ranges with tight ends, counts
 * them, and fetches those of at most a page whole; these functions choose
 * the cuts.  Keys compare bytewise, as etcd's; an upper bound NULL means
 * "no upper bound" (etcd's range end "\0").
 *
 * Cuts: first narrow the range [lo, hi) to the longest prefix P that every
 * key in it must have (the prefix of lo that hi does not exceed); then,
 * right after lo, one cut at the end of each longer prefix of lo (so that
 * keys sharing much of lo, such as a big subtree next to lo, fall apart in
 * blocks of their own), then one cut per value of the byte after P; when
 * there are too many, one per printable byte (where the bytes of most
 * names and numbers are) and the rest evenly spread over the other
 * values.  Every cut is strictly inside the range, and the cuts are in
 * ascending order.
 *
 * Pure functions, no I/O: tests/unit/test_store_split.c.
 *
 * What it cannot do: know where the keys are; a cut may leave every key
 * on one side, and the caller cuts that side again (store_list.c bounds
 * how often).
 */
#ifndef ETCDFS_STORE_SPLIT_H
#define ETCDFS_STORE_SPLIT_H

#include <stddef.h>

struct store_bound {
	char *key;		/* owned, malloc()ed */
	size_t len;
};

void store_bounds_release(struct store_bound *b, size_t n);

/*
 * The length of the longest prefix of @lo that every key in [@lo, @hi)
 * starts with (@hi NULL: no upper bound).  The range must not be empty
 * (@lo < @hi).
 */
size_t store_split_prefix(const char *lo, size_t lo_len, const char *hi,
			  size_t hi_len);

/*
 * Chooses at most @max cuts strictly inside the non-empty range [@lo, @hi)
 * (@hi NULL: no upper bound), in ascending order, into @out (room for
 * @max; each key malloc()ed, released by the caller with
 * store_bounds_release), their number in *@n.  None (*@n 0) when the
 * range cannot be cut at all: it holds @lo alone.  Returns 0, or -1 when
 * out of memory (nothing to release).
 */
int store_split_points(const char *lo, size_t lo_len, const char *hi,
		       size_t hi_len, size_t max, struct store_bound *out,
		       size_t *n);

#endif /* ETCDFS_STORE_SPLIT_H */
