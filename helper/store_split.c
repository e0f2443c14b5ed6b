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
/* Printable ASCII, where the bytes of most keys are (names, numbers). */
#define SPLIT_BAND_LO		0x20
#define SPLIT_BAND_HI		0x7e

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

/*
 * The values after @a, up to @vmax, of the byte after P to cut at, at
 * most @room, ascending, into @out: every one if they fit.  Else one per
 * printable byte, and what room is left spread evenly over the values
 * outside that band: the keys of a level of names or numbers use a dozen
 * or so values of it, and an even spread over all 256 would give those
 * a cut every two or three values, each part a few times bigger (and cut
 * again: one more walk of those keys).  If the band alone is too many,
 * evenly over the band; if none of it is left, evenly over them all.
 * Returns how many.
 */
static size_t split_values(int a, int vmax, size_t room, uint8_t *out)
{
	int b0 = a + 1 > SPLIT_BAND_LO ? a + 1 : SPLIT_BAND_LO;
	int b1 = vmax < SPLIT_BAND_HI ? vmax : SPLIT_BAND_HI;
	size_t nv = (size_t)(vmax - a), nb, nl, nh, rest, i, x, k = 0;

	if (nv <= room) {
		for (i = 0; i < nv; i++)
			out[k++] = (uint8_t)((size_t)(a + 1) + i);
		return k;
	}
	if (b1 < b0) {
		for (i = 0; i < room; i++)
			out[k++] = (uint8_t)((size_t)(a + 1) + i * nv / room);
		return k;
	}
	nb = (size_t)(b1 - b0 + 1);
	if (nb >= room) {
		for (i = 0; i < room; i++)
			out[k++] = (uint8_t)((size_t)b0 + i * nb / room);
		return k;
	}
	/* below the band a + 1 .. b0 - 1, above it b1 + 1 .. vmax; as nv is
	 * over room, rest is under nl + nh, so the spread values differ */
	nl = (size_t)(b0 - (a + 1));
	nh = (size_t)(vmax - b1);
	rest = room - nb;
	for (i = 0; i < rest; i++) {
		x = i * (nl + nh) / rest;
		if (x < nl)
			out[k++] = (uint8_t)((size_t)(a + 1) + x);
	}
	for (i = 0; i < nb; i++)
		out[k++] = (uint8_t)((size_t)b0 + i);
	for (i = 0; i < rest; i++) {
		x = i * (nl + nh) / rest;
		if (x >= nl)
			out[k++] = (uint8_t)((size_t)b1 + 1 + (x - nl));
	}
	return k;
}

int store_split_points(const char *lo, size_t lo_len, const char *hi,
		       size_t hi_len, size_t max, struct store_bound *out,
		       size_t *n)
{
	size_t p = store_split_prefix(lo, lo_len, hi, hi_len);
	size_t c = 0, geo = 0, k, room, i, nv;
	uint8_t v[256];
	int a, vmax;
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
		/* at most vmax - a <= 256 values: v holds them all */
		nv = split_values(a, vmax, room, v);
		for (i = 0; i < nv; i++) {
			if (bound_set(&out[k], lo, p, v[i]) < 0) {
				store_bounds_release(out, k);
				return -1;
			}
			k++;
		}
	}
	*n = k;
	return 0;
}
