/*
 * test_store_split.c - unit tests of helper/store_split.c: the prefix a
 * range of keys narrows to and the cuts a listing makes in it
 *
 * Hand-picked cases (a directory, every key, 0xff bytes, a key and its
 * NUL successor), then every pair of short strings over a few telling
 * bytes, checked against the definitions: the prefix is shared by every
 * string of the range (brute force) and no longer one is; the cuts are
 * ascending, strictly inside the range and under the prefix.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_split.h"
#include "tap.h"

#define S(lit) lit, sizeof(lit) - 1
#define MAX_CUTS 127

/* bytewise, shorter first on a tie: etcd's order */
static int cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* @s is in [lo, hi); hi NULL: no upper bound */
static bool in_range(const char *s, size_t n, const char *lo, size_t lo_len,
		     const char *hi, size_t hi_len)
{
	return cmp(s, n, lo, lo_len) >= 0 &&
	       (!hi || cmp(s, n, hi, hi_len) < 0);
}

static bool prefix_is(const char *lo, size_t lo_len, const char *hi,
		      size_t hi_len, size_t want)
{
	size_t got = store_split_prefix(lo, lo_len, hi, hi_len);

	if (got != want)
		tap_diag("prefix of a %zu-byte lo: %zu, expected %zu", lo_len,
			 got, want);
	return got == want;
}

static bool test_prefix_cases(void)
{
	CHECK(prefix_is(S("/a/"), S("/a0"), 3));
	CHECK(prefix_is(S("/registry/"), S("/registry0"), 10));
	CHECK(prefix_is("\0", 1, NULL, 0, 0));
	CHECK(prefix_is(S("\xff\xff"), NULL, 0, 2));
	CHECK(prefix_is(S("\xff\x01"), NULL, 0, 1));
	/* [ab, ac) is every key that starts with "ab" */
	CHECK(prefix_is(S("ab"), S("ac"), 2));
	CHECK(prefix_is(S("ab\xff\xff"), S("ac"), 4));
	CHECK(prefix_is(S("ab\xff\xfe"), S("ac"), 3));
	CHECK(prefix_is(S("ab"), S("b"), 1));
	CHECK(prefix_is(S("ab"), S("ad"), 1));
	CHECK(prefix_is(S("ab"), S("ac\0"), 1));
	/* lo a prefix of hi: every key starts with lo */
	CHECK(prefix_is(S("a"), "a\0", 2, 1));
	CHECK(prefix_is(S("k-00"), S("k-00\x05z"), 4));
	return true;
}

/* Is there a cut of @len + 1 bytes ending in each byte from @v0 to @v1? */
static bool has_values(const struct store_bound *b, size_t n, size_t len,
		       unsigned v0, unsigned v1)
{
	unsigned v;
	size_t i;

	for (v = v0; v <= v1; v++) {
		for (i = 0; i < n; i++)
			if (b[i].len == len + 1 &&
			    (unsigned char)b[i].key[len] == v)
				break;
		if (i == n) {
			tap_diag("no cut at the value 0x%02x", v);
			return false;
		}
	}
	return true;
}

static bool test_cuts_directory(void)
{
	struct store_bound b[MAX_CUTS];
	size_t n, i;

	/*
	 * a directory: 127 values of its next byte, one per printable byte
	 * (95), the other 32 evenly spread over the 161 other values
	 */
	CHECK(store_split_points(S("/r/"), S("/r0"), MAX_CUTS, b, &n) == 0);
	CHECK(n == MAX_CUTS);
	CHECK(b[0].len == 4 && memcmp(b[0].key, "/r/\0", 4) == 0);
	CHECK(b[n - 1].len == 4 && memcmp(b[n - 1].key, "/r/\xfa", 4) == 0);
	for (i = 0; i < n; i++)
		CHECK(b[i].len == 4 && memcmp(b[i].key, "/r/", 3) == 0);
	CHECK(has_values(b, n, 3, 0x20, 0x7e));
	store_bounds_release(b, n);

	/* after a digit: every digit after it a part of its own */
	CHECK(store_split_points(S("/r/5"), S("/r0"), MAX_CUTS, b, &n) == 0);
	CHECK(n == MAX_CUTS);
	CHECK(has_values(b, n, 3, '6', 0x7e));
	store_bounds_release(b, n);

	/* few values left: one cut each */
	CHECK(store_split_points(S("/r/\xa0"), S("/r0"), MAX_CUTS, b, &n) ==
	      0);
	CHECK(n == 0xff - 0xa0);
	for (i = 0; i < n; i++)
		CHECK(b[i].len == 4 &&
		      (unsigned char)b[i].key[3] == 0xa1 + i);
	store_bounds_release(b, n);
	return true;
}

static bool test_cuts_after_a_key(void)
{
	static const char *const want[] = {
		"k-000001", "k-00001", "k-0001", "k-001", "k-01", "k-1",
		"k.", "l", "m",
	};
	struct store_bound b[MAX_CUTS];
	size_t n, i;

	/* the blocks of the keys that share more and more of lo, then the
	 * values of the first byte */
	CHECK(store_split_points(S("k-000000"), NULL, 0, MAX_CUTS, b, &n) ==
	      0);
	CHECK(n == MAX_CUTS);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(b[i].len == strlen(want[i]) &&
		      memcmp(b[i].key, want[i], b[i].len) == 0);
	store_bounds_release(b, n);

	/* [a\xffb\xff, b) narrows to "a\xff"; 0xff bytes make no cut */
	CHECK(store_split_points(S("a\xff" "b\xff"), S("b"), MAX_CUTS, b,
				 &n) == 0);
	CHECK(n == MAX_CUTS);
	CHECK(b[0].len == 3 && memcmp(b[0].key, "a\xff" "c", 3) == 0);
	store_bounds_release(b, n);
	return true;
}

static bool test_cuts_none(void)
{
	struct store_bound b[MAX_CUTS];
	size_t n = 99;

	/* [a, a\0) holds "a" alone */
	CHECK(store_split_points(S("a"), "a\0", 2, MAX_CUTS, b, &n) == 0);
	CHECK(n == 0);
	CHECK(store_split_points(S("a"), S("b"), 0, b, &n) == 0);
	CHECK(n == 0);
	return true;
}

/* ---- every pair of short strings over a few telling bytes ---- */

static const char alphabet[] = { '\0', '\x01', 'a', '\x7f', '\x80', '\xfe',
				 '\xff' };
#define ALPHA ((int)sizeof(alphabet))
#define MAXLEN 3

struct strs {
	char s[600][MAXLEN];
	size_t len[600];
	size_t n;
};

static void gen(struct strs *st, char *cur, size_t len)
{
	int i;

	memcpy(st->s[st->n], cur, len);
	st->len[st->n++] = len;
	if (len == MAXLEN)
		return;
	for (i = 0; i < ALPHA; i++) {
		cur[len] = alphabet[i];
		gen(st, cur, len + 1);
	}
}

/* the prefix is shared by every string of the range, and is the longest */
static bool check_prefix(const struct strs *st, const char *lo, size_t ll,
			 const char *hi, size_t hl)
{
	size_t p = store_split_prefix(lo, ll, hi, hl), i, j;
	char succ[MAXLEN + 1];

	CHECK(p <= ll);
	for (i = 0; i < st->n; i++)
		if (in_range(st->s[i], st->len[i], lo, ll, hi, hl))
			CHECK(st->len[i] >= p && !memcmp(st->s[i], lo, p));
	if (p == ll)
		return true;
	/* succ(lo[0..p]) exists and is in the range: not all start so */
	j = p + 1;
	memcpy(succ, lo, j);
	while (j > 0 && (unsigned char)succ[j - 1] == 0xff)
		j--;
	CHECK(j > 0);
	succ[j - 1]++;
	CHECK(in_range(succ, j, lo, ll, hi, hl));
	return true;
}

static bool check_cuts(const char *lo, size_t ll, const char *hi, size_t hl,
		       size_t max)
{
	struct store_bound b[MAX_CUTS];
	size_t p = store_split_prefix(lo, ll, hi, hl), n, i;
	bool only_lo;

	CHECK(store_split_points(lo, ll, hi, hl, max, b, &n) == 0);
	CHECK(n <= max);
	for (i = 0; i < n; i++) {
		CHECK(in_range(b[i].key, b[i].len, lo, ll, hi, hl));
		CHECK(cmp(b[i].key, b[i].len, lo, ll) > 0);
		CHECK(b[i].len > p && !memcmp(b[i].key, lo, p));
		if (i)
			CHECK(cmp(b[i - 1].key, b[i - 1].len, b[i].key,
				  b[i].len) < 0);
	}
	store_bounds_release(b, n);
	only_lo = hi && hl == ll + 1 && !memcmp(lo, hi, ll) && hi[ll] == 0;
	if (max > 0)
		CHECK((n == 0) == only_lo);
	return true;
}

static bool test_all_pairs(void)
{
	struct strs *st = calloc(1, sizeof(*st));
	char cur[MAXLEN];
	size_t i, j, pairs = 0;

	CHECK(st);
	gen(st, cur, 0);
	for (i = 0; i < st->n; i++) {
		const char *lo = st->s[i];
		size_t ll = st->len[i];

		CHECK(check_prefix(st, lo, ll, NULL, 0));
		CHECK(check_cuts(lo, ll, NULL, 0, MAX_CUTS));
		CHECK(check_cuts(lo, ll, NULL, 0, 5));
		for (j = 0; j < st->n; j++) {
			if (cmp(lo, ll, st->s[j], st->len[j]) >= 0)
				continue;
			pairs++;
			CHECK(check_prefix(st, lo, ll, st->s[j], st->len[j]));
			CHECK(check_cuts(lo, ll, st->s[j], st->len[j],
					 MAX_CUTS));
			CHECK(check_cuts(lo, ll, st->s[j], st->len[j], 2));
		}
	}
	tap_diag("%zu strings, %zu ranges", st->n, pairs);
	free(st);
	return true;
}

int main(void)
{
	TAP_RUN(test_prefix_cases);
	TAP_RUN(test_cuts_directory);
	TAP_RUN(test_cuts_after_a_key);
	TAP_RUN(test_cuts_none);
	TAP_RUN(test_all_pairs);
	return tap_done(0);
}
