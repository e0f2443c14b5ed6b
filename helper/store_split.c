/*
 * store_split.c - where a listing cuts a range of keys (store_split.h)
 *
 * Reasoning about [lo, hi): every key in it starts with a prefix Q of lo
 * exactly when hi is at most succ(Q), the first string after all those
 * that start with Q (Q without its trailing 0xff bytes, last byte + 1).
 * For the common prefix c of lo and hi that always holds; beyond it only
 * when hi is lo[0..c] with its last byte + 1, and then also for every
 * 0xff byte of lo that follows.
 *
 * What it cannot do: see store_split.h.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_split.h"

/* Of the cuts, at most this share go to the prefixes of lo. */
#define SPLIT_PREFIX_SHARE	4

void store_bounds_release(struct store_bound *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(b[i].key);
		b[i].key = NULL;
	}
}

static uint8_t byte_at(const char *p, size_t i)
{
	return (uint8_t)p[i];
}

size_t store_split_prefix(const char *lo, size_t lo_len, const char *hi,
			  size_t hi_len)
{
	size_t c = 0, p;

	if (hi) {
		while (c < lo_len && c < hi_len && lo[c] == hi[c])
			c++;
		/* hi == succ(lo[0..c]): keys start with one more byte */
		if (c < lo_len && hi_len == c + 1 &&
		    byte_at(hi, c) == byte_at(lo, c) + 1)
			p = c + 1;
		else
			return c;
	} else {
		p = 0;
	}
	/* hi is beyond every string that starts with lo[0..p]: so is it for
	 * lo[0..p] followed by 0xff bytes */
	while (p < lo_len && byte_at(lo, p) == 0xff)
		p++;
	return p;
}

static int bound_set(struct store_bound *b, const char *p, size_t len,
		     uint8_t last)
{
	b->key = malloc(len + 1);
	if (!b->key)
		return -1;
	memcpy(b->key, p, len);
	b->key[len] = (char)last;
	b->len = len + 1;
	return 0;
}

/*
 * The cuts at the ends of lo's prefixes longer than @p + 1: for each
 * position j past p + 1 whose byte is not 0xff, lo[0..j) + (lo[j] + 1).
 * The shortest prefixes (the coarsest blocks) are kept when there are more
 * than @max; cuts come out ascending (longest prefix first).
 */
static int split_prefixes(const char *lo, size_t lo_len, size_t p,
			  size_t max, struct store_bound *out, size_t *n)
{
	size_t j, last = p, cands = 0, k;

	*n = 0;
	for (j = p + 1; j < lo_len && cands < max; j++)
		if (byte_at(lo, j) != 0xff) {
			cands++;
			last = j;
		}
	if (cands == 0)
		return 0;
	k = 0;
	for (j = last + 1; j-- > p + 1;) {
		if (byte_at(lo, j) == 0xff)
			continue;
		if (bound_set(&out[k], lo, j, byte_at(lo, j) + 1) < 0) {
			store_bounds_release(out, k);
			return -1;
		}
		k++;
	}
	*n = k;
	return 0;
}

int store_split_points(const char *lo, size_t lo_len, const char *hi,
		       size_t hi_len, size_t max, struct store_bound *out,
		       size_t *n)
{
	size_t p = store_split_prefix(lo, lo_len, hi, hi_len);
	size_t c = 0, geo = 0, k, room, i;
	int a, vmax;
	unsigned span, v;
	bool top;

	*n = 0;
	if (max == 0)
		return 0;
	if (hi) {
		while (c < lo_len && c < hi_len && lo[c] == hi[c])
			c++;
		if (c == hi_len)
			return 0;	/* hi <= lo: an empty range */
	}
	/* hi at or past succ(P): the byte after P may be anything */
	top = !hi || p > c;
	a = p < lo_len ? byte_at(lo, p) : -1;
	if (top)
		vmax = 0xff;
	else
		vmax = hi_len > p + 1 ? byte_at(hi, p) : byte_at(hi, p) - 1;

	/* lo[0..p] + (a + 1) is the first value cut; before it, lo's own */
	if (a >= 0 && split_prefixes(lo, lo_len, p, vmax > a ?
				     max / SPLIT_PREFIX_SHARE : max, out,
				     &geo) < 0)
		return -1;
	k = geo;
	room = max - geo;
	if (vmax > a && room > 0) {
		span = (unsigned)(vmax - a);
		if (span > room)
			span = (unsigned)room;
		for (i = 0; i < span; i++) {
			/* evenly spread when the values outnumber the room */
			v = (unsigned)(a + 1) +
			    (unsigned)(i * (size_t)(vmax - a) / span);
			if (bound_set(&out[k], lo, p, (uint8_t)v) < 0) {
				store_bounds_release(out, k);
				return -1;
			}
			k++;
		}
	}
	*n = k;
	return 0;
}
