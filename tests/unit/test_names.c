/*
 * test_names.c - unit tests of fs/names.c, the key <-> path bijection
 *
 * Each case of the Names section of the design is checked both ways
 * against a literal expected path, non-canonical names are checked to be
 * refused, and a few thousand pseudo-random keys (fixed seed) are checked
 * against a second, deliberately naive encoder written here from the
 * header's rules (code points decoded arithmetically, parts cut from a
 * list of units), then mutated to check that whatever path is accepted
 * encodes back to itself.  It does not test out-of-memory paths.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "names.h"
#include "tap.h"

/* A string literal and its length, NULs included. */
#define S(lit) lit, (sizeof(lit) - 1)

/* A byte string built by the test. */
struct str {
	char b[8192];
	size_t n;
};

static struct str *str_add(struct str *s, const char *p, size_t n)
{
	if (s->n + n > sizeof(s->b))
		abort();
	memcpy(s->b + s->n, p, n);
	s->n += n;
	return s;
}

/* Appends @unit (a C string) @times times. */
static struct str *str_rep(struct str *s, const char *unit, size_t times)
{
	while (times--)
		str_add(s, unit, strlen(unit));
	return s;
}

static struct str *str_cat(struct str *s, const char *p)
{
	return str_add(s, p, strlen(p));
}

/* Shows @p in a diagnostic with the bytes that are not printable escaped. */
static const char *show(const char *p, size_t n)
{
	static char out[4][1024];
	static int which;
	char *o = out[which++ & 3];
	size_t i, k = 0;

	for (i = 0; i < n && k + 8 < sizeof(out[0]); i++) {
		unsigned char c = (unsigned char)p[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			o[k++] = (char)c;
		else
			k += (size_t)snprintf(o + k, 8, "\\x%02x", c);
	}
	if (i < n)
		k += (size_t)snprintf(o + k, 8, "...");
	o[k] = '\0';
	return o;
}

/*
 * The key @key encodes to @want, and @want decodes to @key.
 */
static bool maps(const char *key, size_t key_len, const char *want,
		 size_t want_len)
{
	char *path, *back = NULL;
	size_t path_len, back_len = 0;
	bool ok;
	int r;

	path = names_key_to_path(key, key_len, &path_len);
	if (!path)
		return false;
	ok = path_len == want_len && memcmp(path, want, want_len) == 0 &&
	     path[path_len] == '\0';
	if (!ok)
		tap_diag("key '%s' gave '%s', want '%s'", show(key, key_len),
			 show(path, path_len), show(want, want_len));
	free(path);
	r = names_path_to_key(want, want_len, &back, &back_len);
	if (r != 0) {
		tap_diag("path '%s' refused: %d", show(want, want_len), r);
		return false;
	}
	if (back_len != key_len || memcmp(back, key, key_len) != 0 ||
	    back[back_len] != '\0') {
		tap_diag("path '%s' gave key '%s', want '%s'",
			 show(want, want_len), show(back, back_len),
			 show(key, key_len));
		ok = false;
	}
	free(back);
	return ok;
}

#define MAPS(key, path) maps(S(key), S(path))

/* names_path_to_key() refuses @path with -EINVAL. */
static bool refused(const char *path, size_t len)
{
	char *key = NULL;
	size_t key_len;
	int r = names_path_to_key(path, len, &key, &key_len);

	if (r == -EINVAL)
		return true;
	if (r == 0)
		tap_diag("path '%s' accepted as key '%s'", show(path, len),
			 show(key, key_len));
	else
		tap_diag("path '%s' gave %d, want -EINVAL", show(path, len), r);
	free(key);
	return false;
}

#define REFUSED(path) refused(S(path))

static bool str_maps(const struct str *key, const struct str *path)
{
	return maps(key->b, key->n, path->b, path->n);
}

static bool str_refused(const struct str *path)
{
	return refused(path->b, path->n);
}

static bool test_plain(void)
{
	CHECK(MAPS("a", "a"));
	CHECK(MAPS("a/b/c", "a/b/c"));
	CHECK(MAPS("registry/services/kube-dns",
		   "registry/services/kube-dns"));
	CHECK(MAPS("~!@#$^&*()_+-=[]{};':\",<>?`|\\",
		   "~!@#$^&*()_+-=[]{};':\",<>?`|\\"));
	CHECK(MAPS("value", "value"));
	CHECK(MAPS("+", "+"));
	/* The key equal to the mount prefix itself. */
	CHECK(MAPS("", "%"));
	return true;
}

static bool test_empty_segments(void)
{
	CHECK(MAPS("a//b", "a/%/b"));
	CHECK(MAPS("a/", "a/%"));
	CHECK(MAPS("/a", "%/a"));
	CHECK(MAPS("/", "%/%"));
	CHECK(MAPS("//", "%/%/%"));
	CHECK(MAPS("/a/", "%/a/%"));
	CHECK(MAPS("a///b/", "a/%/%/b/%"));
	return true;
}

static bool test_dot_segments(void)
{
	CHECK(MAPS(".", "%2E"));
	CHECK(MAPS("..", "%2E%2E"));
	CHECK(MAPS("a/./b", "a/%2E/b"));
	CHECK(MAPS("../x", "%2E%2E/x"));
	CHECK(MAPS("a/..", "a/%2E%2E"));
	CHECK(MAPS("./.", "%2E/%2E"));
	/* Only the whole segments are special. */
	CHECK(MAPS("...", "..."));
	CHECK(MAPS(".a", ".a"));
	CHECK(MAPS("a.", "a."));
	CHECK(MAPS("..a", "..a"));
	CHECK(MAPS(".bashrc/..x", ".bashrc/..x"));
	return true;
}

static bool test_percent(void)
{
	CHECK(MAPS("%", "%25"));
	CHECK(MAPS("50%", "50%25"));
	CHECK(MAPS("%41", "%2541"));
	CHECK(MAPS("%2E", "%252E"));
	CHECK(MAPS("%value", "%25value"));
	CHECK(MAPS("a/%value", "a/%25value"));
	CHECK(MAPS("%+", "%25+"));
	CHECK(MAPS("%%", "%25%25"));
	return true;
}

static bool test_spaces_newlines(void)
{
	CHECK(MAPS(" ", " "));
	CHECK(MAPS("a b", "a b"));
	CHECK(MAPS(" lead/trail ", " lead/trail "));
	CHECK(MAPS("\n", "%0A"));
	CHECK(MAPS("line\nbreak", "line%0Abreak"));
	CHECK(MAPS("\t\r", "%09%0D"));
	CHECK(MAPS("\x1f\x7f", "%1F%7F"));
	CHECK(MAPS("\x1b[0m", "%1B[0m"));
	return true;
}

static bool test_nul(void)
{
	CHECK(MAPS("\0", "%00"));
	CHECK(MAPS("a\0b", "a%00b"));
	CHECK(MAPS("\0/\0\0", "%00/%00%00"));
	return true;
}

static bool test_utf8(void)
{
	/* Well-formed: raw, at each length and at the edges of the ranges. */
	CHECK(MAPS("caf\xc3\xa9", "caf\xc3\xa9"));
	CHECK(MAPS("\xe2\x82\xac", "\xe2\x82\xac"));
	CHECK(MAPS("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"));
	CHECK(MAPS("\xc2\x80", "\xc2\x80"));		/* U+0080 */
	CHECK(MAPS("\xdf\xbf", "\xdf\xbf"));		/* U+07FF */
	CHECK(MAPS("\xe0\xa0\x80", "\xe0\xa0\x80"));	/* U+0800 */
	CHECK(MAPS("\xed\x9f\xbf", "\xed\x9f\xbf"));	/* U+D7FF */
	CHECK(MAPS("\xee\x80\x80", "\xee\x80\x80"));	/* U+E000 */
	CHECK(MAPS("\xef\xbf\xbf", "\xef\xbf\xbf"));	/* U+FFFF */
	CHECK(MAPS("\xf0\x90\x80\x80", "\xf0\x90\x80\x80")); /* U+10000 */
	CHECK(MAPS("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf")); /* U+10FFFF */

	/* Not UTF-8: escaped byte by byte. */
	CHECK(MAPS("\xff", "%FF"));
	CHECK(MAPS("\xfe\xfe", "%FE%FE"));
	CHECK(MAPS("\x80", "%80"));			/* lone continuation */
	CHECK(MAPS("\xc3", "%C3"));			/* truncated */
	CHECK(MAPS("\xc3" "a", "%C3a"));
	CHECK(MAPS("\xe2\x82", "%E2%82"));		/* truncated */
	CHECK(MAPS("\xf0\x9f\x98", "%F0%9F%98"));	/* truncated */
	CHECK(MAPS("\xc0\xaf", "%C0%AF"));		/* overlong '/' */
	CHECK(MAPS("\xc1\xbf", "%C1%BF"));		/* overlong */
	CHECK(MAPS("\xe0\x80\xaf", "%E0%80%AF"));	/* overlong */
	CHECK(MAPS("\xf0\x80\x80\xaf", "%F0%80%80%AF"));	/* overlong */
	CHECK(MAPS("\xed\xa0\x80", "%ED%A0%80"));	/* U+D800 */
	CHECK(MAPS("\xed\xbf\xbf", "%ED%BF%BF"));	/* U+DFFF */
	CHECK(MAPS("\xf4\x90\x80\x80", "%F4%90%80%80"));	/* U+110000 */
	CHECK(MAPS("\xf5\x80\x80\x80", "%F5%80%80%80"));
	/* A bad lead, then a good character right behind it. */
	CHECK(MAPS("\xf0\xe2\x82\xac", "%F0\xe2\x82\xac"));
	CHECK(MAPS("\xe2\xe2\x82\xac\x82", "%E2\xe2\x82\xac%82"));
	CHECK(MAPS("\xc3\xc3\xa9", "%C3\xc3\xa9"));
	/* A '/' never belongs to a character. */
	CHECK(MAPS("\xc3/\xa9", "%C3/%A9"));
	return true;
}

/* Segments of n 'x', encoded exactly. */
static bool long_plain(size_t n, const char *want_parts)
{
	struct str key = { .n = 0 }, path = { .n = 0 };
	const char *p = want_parts;

	str_rep(&key, "x", n);
	/* want_parts: the lengths of the components, e.g. "253 47". */
	while (*p) {
		char *end;
		long len = strtol(p, &end, 10);

		if (end == p)
			return false;
		if (path.n)
			str_cat(&path, "/");
		str_rep(&path, "x", (size_t)len);
		p = end;
		while (*p == ' ')
			p++;
		if (*p)
			str_cat(&path, "%+");
	}
	return str_maps(&key, &path);
}

static bool test_long_segments(void)
{
	CHECK(long_plain(253, "253"));
	CHECK(long_plain(254, "254"));
	CHECK(long_plain(255, "255"));
	CHECK(long_plain(256, "253 3"));
	CHECK(long_plain(300, "253 47"));
	CHECK(long_plain(506, "253 253"));
	CHECK(long_plain(508, "253 255"));
	CHECK(long_plain(509, "253 253 3"));
	CHECK(long_plain(1000, "253 253 253 241"));
	return true;
}

static bool test_long_with_prefix(void)
{
	struct str key = { .n = 0 }, path = { .n = 0 };

	/* Cutting happens per segment; other segments stay whole. */
	str_rep(str_cat(&key, "a/"), "y", 300);
	str_cat(&key, "/b");
	str_rep(str_cat(&path, "a/"), "y", 253);
	str_rep(str_cat(&path, "%+/"), "y", 47);
	str_cat(&path, "/b");
	CHECK(str_maps(&key, &path));
	return true;
}

/* Builds key = x{nx} @mid y{ny}; path = x{nx} @mid_enc y{ny}, cut at @cut. */
static bool cut_case(size_t nx, const char *mid, const char *mid_enc,
		     size_t ny, const char *part_tail, const char *final_head)
{
	struct str key = { .n = 0 }, path = { .n = 0 };

	str_rep(&key, "x", nx);
	str_cat(&key, mid);
	str_rep(&key, "y", ny);
	if (!part_tail) {
		/* No cut. */
		str_rep(&path, "x", nx);
		str_cat(&path, mid_enc);
		str_rep(&path, "y", ny);
	} else {
		str_rep(&path, "x", nx);
		str_cat(&path, part_tail);
		str_cat(&path, "%+/");
		str_cat(&path, final_head);
		str_rep(&path, "y", ny);
	}
	return str_maps(&key, &path);
}

static bool test_long_cut_points(void)
{
	/* 252 + 3 = 255: no cut at all. */
	CHECK(cut_case(252, "\n", "%0A", 0, NULL, NULL));
	CHECK(cut_case(251, "\xe2\x82\xac", "\xe2\x82\xac", 1, NULL, NULL));
	CHECK(cut_case(251, "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80", 0, NULL,
		       NULL));
	/* 253 + 3 = 256: the escape is the whole final piece. */
	CHECK(cut_case(253, "\n", NULL, 0, "", "%0A"));
	/* An escape that ends exactly at 253 stays in the part. */
	CHECK(cut_case(250, "\n", NULL, 3, "%0A", ""));
	/* An escape across 253 goes to the next component. */
	CHECK(cut_case(251, "%", NULL, 10, "", "%25"));
	CHECK(cut_case(252, "\xff", NULL, 10, "", "%FF"));
	/* UTF-8 characters across 253 go whole to the next component. */
	CHECK(cut_case(252, "\xc3\xa9", NULL, 5, "", "\xc3\xa9"));
	CHECK(cut_case(251, "\xe2\x82\xac", NULL, 10, "", "\xe2\x82\xac"));
	CHECK(cut_case(250, "\xf0\x9f\x98\x80", NULL, 5, "",
		       "\xf0\x9f\x98\x80"));
	/* ... and one that ends at 253 stays. */
	CHECK(cut_case(250, "\xe2\x82\xac", NULL, 10, "\xe2\x82\xac", ""));
	CHECK(cut_case(249, "\xf0\x9f\x98\x80", NULL, 10,
		       "\xf0\x9f\x98\x80", ""));
	/* A broken character cut between its escapes. */
	CHECK(cut_case(250, "\xe2\x82", NULL, 10, "%E2", "%82"));
	return true;
}

static bool test_long_all_escapes(void)
{
	struct str key = { .n = 0 }, path = { .n = 0 };

	/* 100 escapes: 84 fit a part (252 bytes), 16 are left. */
	str_rep(&key, "\n", 100);
	str_rep(&path, "%0A", 84);
	str_cat(&path, "%+/");
	str_rep(&path, "%0A", 16);
	CHECK(str_maps(&key, &path));

	/* 1000 bytes of 2-byte characters: 126 (252 bytes) per part. */
	key.n = path.n = 0;
	str_rep(&key, "\xc3\xa9", 500);
	str_rep(&path, "\xc3\xa9", 126);
	str_cat(&path, "%+/");
	str_rep(&path, "\xc3\xa9", 126);
	str_cat(&path, "%+/");
	str_rep(&path, "\xc3\xa9", 126);
	str_cat(&path, "%+/");
	str_rep(&path, "\xc3\xa9", 122);
	CHECK(str_maps(&key, &path));

	/* 300 bytes of 4-byte characters: 63 (252 bytes) in the part. */
	key.n = path.n = 0;
	str_rep(&key, "\xf0\x9f\x98\x80", 75);
	str_rep(&path, "\xf0\x9f\x98\x80", 63);
	str_cat(&path, "%+/");
	str_rep(&path, "\xf0\x9f\x98\x80", 12);
	CHECK(str_maps(&key, &path));
	return true;
}

static bool test_value(void)
{
	char *key = NULL;
	size_t len = 0;
	struct str path = { .n = 0 };

	CHECK(names_path_to_key(S("a/%value"), &key, &len) == 0);
	CHECK(len == 1 && memcmp(key, "a", 1) == 0 && key[1] == '\0');
	free(key);
	CHECK(names_path_to_key(S("a/b/%value"), &key, &len) == 0);
	CHECK(len == 3 && memcmp(key, "a/b", 3) == 0);
	free(key);
	/* The empty segment names the key "" (or "x/"). */
	CHECK(names_path_to_key(S("%/%value"), &key, &len) == 0);
	CHECK(len == 0 && key[0] == '\0');
	free(key);
	CHECK(names_path_to_key(S("x/%/%value"), &key, &len) == 0);
	CHECK(len == 2 && memcmp(key, "x/", 2) == 0);
	free(key);
	/* The value of the key a long segment makes. */
	str_rep(&path, "x", 253);
	str_cat(&path, "%+/xxx/%value");
	CHECK(names_path_to_key(path.b, path.n, &key, &len) == 0);
	CHECK(len == 256 && key[0] == 'x' && key[255] == 'x');
	free(key);

	CHECK(REFUSED("%value"));
	CHECK(REFUSED("a/%value/b"));
	CHECK(REFUSED("a/%value/%value"));
	CHECK(REFUSED("a/%value/"));
	CHECK(REFUSED("a/%Value"));
	CHECK(REFUSED("a/%valu"));
	CHECK(REFUSED("a/%values"));
	/* After a part there is no key yet to name. */
	path.n = 0;
	str_rep(&path, "x", 253);
	str_cat(&path, "%+/%value");
	CHECK(str_refused(&path));
	/* The encoder never writes it. */
	CHECK(MAPS("a/%value", "a/%25value"));
	return true;
}

static bool test_refuse_noncanonical(void)
{
	struct str p = { .n = 0 };

	CHECK(REFUSED(""));		/* the root is no key */
	CHECK(REFUSED("/"));
	CHECK(REFUSED("/a"));
	CHECK(REFUSED("a/"));
	CHECK(REFUSED("a//b"));
	CHECK(REFUSED("."));
	CHECK(REFUSED(".."));
	CHECK(REFUSED("a/./b"));
	CHECK(REFUSED("a/.."));
	CHECK(REFUSED("50%"));
	CHECK(REFUSED("%%"));
	CHECK(REFUSED("%2"));
	CHECK(REFUSED("a%4"));
	CHECK(REFUSED("%G0"));
	CHECK(REFUSED("%41"));		/* 'A' stands raw */
	CHECK(REFUSED("%20"));		/* so does ' ' */
	CHECK(REFUSED("%7E"));
	CHECK(REFUSED("%2F"));		/* '/' is a separator, never a byte */
	CHECK(REFUSED("%2e"));		/* lower case */
	CHECK(REFUSED("%0a"));
	CHECK(REFUSED("%c3%a9"));
	CHECK(REFUSED("a%2E"));		/* only the whole segment */
	CHECK(REFUSED("%2Ea"));
	CHECK(REFUSED("%2E%2E%2E"));
	CHECK(REFUSED("%2E."));
	CHECK(REFUSED("%C3%A9"));	/* well-formed: stands raw */
	CHECK(REFUSED("%E2%82%AC"));
	CHECK(REFUSED("%F0%9F%98%80"));
	CHECK(REFUSED("%C3\xa9"));	/* half escaped */
	CHECK(REFUSED("%E2%82\xac"));
	CHECK(REFUSED("\xe2%82%AC"));
	CHECK(REFUSED("%F0%E2%82%AC"));	/* the bad lead is fine, "€" not */
	CHECK(REFUSED("\n"));		/* raw control bytes */
	CHECK(REFUSED("a\tb"));
	CHECK(REFUSED("\x7f"));
	CHECK(REFUSED("a\0b"));
	CHECK(REFUSED("\xff"));		/* raw bytes that are not UTF-8 */
	CHECK(REFUSED("\x80"));
	CHECK(REFUSED("\xc3"));
	CHECK(REFUSED("\xc3" "a"));
	CHECK(REFUSED("\xe2\x82"));
	CHECK(REFUSED("\xc0\xaf"));
	CHECK(REFUSED("\xed\xa0\x80"));
	CHECK(REFUSED("\xf4\x90\x80\x80"));
	CHECK(REFUSED("%+"));
	CHECK(REFUSED("a%+"));
	CHECK(REFUSED("a%+b"));
	CHECK(REFUSED("a%+/b"));
	CHECK(REFUSED("%+/a"));

	/* A plain component of 256 bytes would have been cut. */
	str_rep(&p, "x", 256);
	CHECK(str_refused(&p));
	/* A path may not end in a part. */
	p.n = 0;
	str_rep(&p, "x", 253);
	str_cat(&p, "%+");
	CHECK(str_refused(&p));
	/* Parts must be as long as the greedy cut makes them. */
	p.n = 0;
	str_rep(&p, "x", 100);
	str_rep(str_cat(&p, "%+/"), "y", 300 - 100);
	CHECK(str_refused(&p));
	p.n = 0;
	str_rep(&p, "x", 252);
	str_rep(str_cat(&p, "%+/"), "y", 10);	/* 'y' would have fitted */
	CHECK(str_refused(&p));
	p.n = 0;
	str_rep(&p, "x", 250);
	str_cat(&p, "%+/\xe2\x82\xac");		/* so would "€" */
	str_rep(&p, "y", 10);
	CHECK(str_refused(&p));
	p.n = 0;
	str_rep(&p, "x", 250);
	str_cat(&p, "%+/%0A");			/* and an escape */
	str_rep(&p, "y", 10);
	CHECK(str_refused(&p));
	p.n = 0;
	str_rep(&p, "x", 254);
	str_rep(str_cat(&p, "%+/"), "y", 10);	/* too long a part */
	CHECK(str_refused(&p));
	/* A segment of at most 255 bytes is never cut. */
	p.n = 0;
	str_rep(&p, "x", 253);
	str_cat(&p, "%+/yy");
	CHECK(str_refused(&p));
	/* The final piece follows the plain rules, without specials. */
	p.n = 0;
	str_rep(&p, "x", 253);
	str_cat(&p, "%+/%");
	CHECK(str_refused(&p));
	p.n = 0;
	str_rep(&p, "x", 253);
	str_cat(&p, "%+/%2E%2E");		/* ".." would stand raw here */
	CHECK(str_refused(&p));
	p.n = 0;
	str_rep(&p, "x", 253);
	str_cat(&p, "%+/");
	CHECK(str_refused(&p));
	/* A character escaped across the cut is still well-formed. */
	p.n = 0;
	str_rep(&p, "x", 250);
	str_cat(&p, "%E2%+/%82%AC");
	str_rep(&p, "y", 10);
	CHECK(str_refused(&p));
	/* ... and accepted where it is not. */
	p.n = 0;
	str_rep(&p, "x", 250);
	str_cat(&p, "%E2%+/%82");
	str_rep(&p, "y", 10);
	CHECK(names_component_kind(p.b, 255) == NAMES_PART);
	{
		char *key;
		size_t len;

		CHECK(names_path_to_key(p.b, p.n, &key, &len) == 0);
		CHECK(len == 250 + 2 + 10);
		CHECK((unsigned char)key[250] == 0xe2);
		free(key);
	}
	return true;
}

static bool test_component_kind(void)
{
	struct str p = { .n = 0 };

	CHECK(names_component_kind(S("a")) == NAMES_PLAIN);
	CHECK(names_component_kind(S("%")) == NAMES_PLAIN);
	CHECK(names_component_kind(S("%2E")) == NAMES_PLAIN);
	CHECK(names_component_kind(S("%2E%2E")) == NAMES_PLAIN);
	CHECK(names_component_kind(S("%25value")) == NAMES_PLAIN);
	CHECK(names_component_kind(S("caf\xc3\xa9 %0A")) == NAMES_PLAIN);
	CHECK(names_component_kind(S(NAMES_VALUE)) == NAMES_VALUE_OF);
	CHECK(names_component_kind(S("")) == NAMES_INVALID);
	CHECK(names_component_kind(S(".")) == NAMES_INVALID);
	CHECK(names_component_kind(S("..")) == NAMES_INVALID);
	CHECK(names_component_kind(S("a/b")) == NAMES_INVALID);
	CHECK(names_component_kind(S("50%")) == NAMES_INVALID);
	CHECK(names_component_kind(S("%41")) == NAMES_INVALID);
	CHECK(names_component_kind(S("%2e")) == NAMES_INVALID);
	CHECK(names_component_kind(S("a%2E")) == NAMES_INVALID);
	CHECK(names_component_kind(S("%C3%A9")) == NAMES_INVALID);
	CHECK(names_component_kind(S("a\0")) == NAMES_INVALID);
	CHECK(names_component_kind(S("%+")) == NAMES_INVALID);
	CHECK(names_component_kind(S("a%+")) == NAMES_INVALID);

	str_rep(&p, "x", 255);
	CHECK(names_component_kind(p.b, p.n) == NAMES_PLAIN);
	str_cat(&p, "x");
	CHECK(names_component_kind(p.b, p.n) == NAMES_INVALID);

	/* Parts: 250 to 253 bytes before "%+", whole units only. */
	p.n = 0;
	str_rep(&p, "x", 253);
	str_cat(&p, "%+");
	CHECK(names_component_kind(p.b, p.n) == NAMES_PART);
	p.n = 0;
	str_rep(&p, "x", 250);
	str_cat(&p, "%+");
	CHECK(names_component_kind(p.b, p.n) == NAMES_PART);
	p.n = 0;
	str_rep(&p, "x", 249);
	str_cat(&p, "%+");
	CHECK(names_component_kind(p.b, p.n) == NAMES_INVALID);
	p.n = 0;
	str_rep(&p, "x", 254);
	str_cat(&p, "%+");
	CHECK(names_component_kind(p.b, p.n) == NAMES_INVALID);
	p.n = 0;
	str_rep(&p, "x", 251);
	str_cat(&p, "%0%+");			/* a cut escape */
	CHECK(names_component_kind(p.b, p.n) == NAMES_INVALID);
	p.n = 0;
	str_rep(&p, "x", 251);
	str_cat(&p, "\xe2\x82%+");		/* a cut character */
	CHECK(names_component_kind(p.b, p.n) == NAMES_INVALID);
	p.n = 0;
	str_rep(&p, "x", 250);
	str_cat(&p, "%0A%+");
	CHECK(names_component_kind(p.b, p.n) == NAMES_PART);
	p.n = 0;
	str_rep(&p, "x", 252);
	str_cat(&p, "%+x%+");
	CHECK(names_component_kind(p.b, p.n) == NAMES_INVALID);
	return true;
}

static bool prefix_is(const char *path, size_t path_len, const char *want,
		      size_t want_len)
{
	char *prefix = NULL;
	size_t len = 0;
	int r = names_dir_prefix(path, path_len, &prefix, &len);
	bool ok = r == 0 && len == want_len &&
		  memcmp(prefix, want, want_len) == 0 && prefix[len] == '\0';

	if (!ok)
		tap_diag("prefix of '%s': %d '%s', want '%s'",
			 show(path, path_len), r, r ? "" : show(prefix, len),
			 show(want, want_len));
	free(prefix);
	return ok;
}

static bool test_dir_prefix(void)
{
	struct str path = { .n = 0 }, want = { .n = 0 };
	char *prefix = NULL;
	size_t len;

	CHECK(prefix_is(S(""), S("")));
	CHECK(prefix_is(S("a"), S("a/")));
	CHECK(prefix_is(S("a/b"), S("a/b/")));
	CHECK(prefix_is(S("%"), S("/")));
	CHECK(prefix_is(S("a/%"), S("a//")));
	CHECK(prefix_is(S("%2E%2E/%25"), S("../%/")));
	CHECK(prefix_is(S("caf\xc3\xa9/%0A"), S("caf\xc3\xa9/\n/")));

	/* A part: the key so far, no '/'. */
	str_rep(&path, "x", 253);
	str_cat(&path, "%+");
	str_rep(&want, "x", 253);
	CHECK(prefix_is(path.b, path.n, want.b, want.n));
	str_cat(&path, "/");
	str_rep(&path, "y", 250);
	str_cat(&path, "%0A%+");
	str_rep(&want, "y", 250);
	str_cat(&want, "\n");
	CHECK(prefix_is(path.b, path.n, want.b, want.n));
	/* The final piece after it: a directory again. */
	str_cat(&path, "/zzz");
	str_cat(&want, "zzz/");
	CHECK(prefix_is(path.b, path.n, want.b, want.n));
	path.n = want.n = 0;
	str_rep(str_cat(&path, "a/"), "x", 253);
	str_cat(&path, "%+");
	str_rep(str_cat(&want, "a/"), "x", 253);
	CHECK(prefix_is(path.b, path.n, want.b, want.n));

	CHECK(names_dir_prefix(S("a/%value"), &prefix, &len) == -EINVAL);
	CHECK(names_dir_prefix(S("a/"), &prefix, &len) == -EINVAL);
	CHECK(names_dir_prefix(S("/"), &prefix, &len) == -EINVAL);
	CHECK(names_dir_prefix(S("a//b"), &prefix, &len) == -EINVAL);
	CHECK(names_dir_prefix(S("%41"), &prefix, &len) == -EINVAL);
	CHECK(names_dir_prefix(S(".."), &prefix, &len) == -EINVAL);
	path.n = 0;
	str_rep(&path, "x", 249);
	str_cat(&path, "%+");
	CHECK(names_dir_prefix(path.b, path.n, &prefix, &len) == -EINVAL);
	return true;
}

/* --- the reference encoder --- */

/* Length of the well-formed character at @p, by its code point; or 0. */
static size_t ref_utf8(const unsigned char *p, size_t n)
{
	uint32_t cp, min;
	size_t len, i;

	if (p[0] >= 0xf0 && p[0] <= 0xf7) {
		len = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0f;
		min = 0x800;
	} else if (p[0] >= 0xc0 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
		min = 0x80;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Encodes @key into @out (big enough); returns the length. */
static size_t ref_encode(const unsigned char *key, size_t n, char *out)
{
	static char enc[8 * 8192];
	static size_t unit_end[8 * 8192];
	size_t o = 0, i = 0;

	for (;;) {
		size_t start = i, seg, units = 0, e = 0, done, u;

		while (i < n && key[i] != '/')
			i++;
		seg = i - start;
		if (seg == 0) {
			out[o++] = '%';
		} else if (seg <= 2 && memcmp(key + start, "..", seg) == 0) {
			memcpy(out + o, "%2E%2E", 3 * seg);
			o += 3 * seg;
		} else {
			size_t j = start;

			/* The segment as a list of units. */
			while (j < i) {
				unsigned char c = key[j];
				size_t l = 0;

				if (c >= 0x80)
					l = ref_utf8(key + j, i - j);
				if (c >= 0x20 && c < 0x7f && c != '%') {
					enc[e++] = (char)c;
					j++;
				} else if (l) {
					memcpy(enc + e, key + j, l);
					e += l;
					j += l;
				} else {
					e += (size_t)snprintf(enc + e, 4,
							      "%%%02X", c);
					j++;
				}
				unit_end[units++] = e;
			}
			/* Greedy parts while more than NAME_MAX is left. */
			done = 0;
			u = 0;
			while (e - done > 255) {
				size_t cut = done;

				while (unit_end[u] - done <= 253)
					cut = unit_end[u++];
				memcpy(out + o, enc + done, cut - done);
				o += cut - done;
				memcpy(out + o, "%+/", 3);
				o += 3;
				done = cut;
			}
			memcpy(out + o, enc + done, e - done);
			o += e - done;
		}
		if (i == n)
			break;
		out[o++] = '/';
		i++;
	}
	return o;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t random_key(unsigned char *key, size_t cap)
{
	static const struct {
		const char *p;
		size_t n;
	} atoms[] = {
		{ S("a") }, { S("b") }, { S("Z") }, { S("0") }, { S("/") },
		{ S("/") }, { S(".") }, { S("..") }, { S("%") }, { S("%2E") },
		{ S("+") }, { S(" ") }, { S("\n") }, { S("\t") }, { S("\x7f") },
		{ S("\0") }, { S("\xc3\xa9") }, { S("\xe2\x82\xac") },
		{ S("\xf0\x9f\x98\x80") }, { S("\xc2\x80") },
		{ S("\xef\xbf\xbf") }, { S("\xf4\x8f\xbf\xbf") }, { S("\xff") },
		{ S("\x80") }, { S("\xbf") }, { S("\xc3") }, { S("\xe2\x82") },
		{ S("\xf0\x9f\x98") }, { S("\xc0\xaf") }, { S("\xed\xa0\x80") },
		{ S("\xf4\x90\x80\x80") }, { S("\xe0\x80") },
	};
	size_t n = 0, atoms_n = rng() % 4 == 0 ? 400 : rng() % 24;
	size_t i;

	for (i = 0; i < atoms_n; i++) {
		size_t a;

		if (rng() % 16 == 0) {
			/* A long run, to reach the cut points. */
			size_t run = 200 + rng() % 120;

			if (n + run > cap)
				break;
			memset(key + n, rng() % 2 ? 'x' : '\0', run);
			n += run;
			continue;
		}
		if (rng() % 8 == 0) {
			/* Any byte at all. */
			if (n + 1 > cap)
				break;
			key[n++] = (unsigned char)rng();
			continue;
		}
		a = rng() % (sizeof(atoms) / sizeof(atoms[0]));
		if (n + atoms[a].n > cap)
			break;
		memcpy(key + n, atoms[a].p, atoms[a].n);
		n += atoms[a].n;
	}
	return n;
}

/* The rules every path the encoder makes obeys. */
static bool path_ok(const char *path, size_t len)
{
	size_t i = 0;

	if (len == 0 || path[0] == '/' || path[len - 1] == '/')
		return false;
	if (memchr(path, '\0', len))
		return false;
	while (i < len) {
		const char *c = path + i;
		const char *slash = memchr(c, '/', len - i);
		size_t n = (size_t)((slash ? slash : path + len) - c);
		enum names_kind kind = names_component_kind(c, n);
		bool is_part = n >= 2 && c[n - 2] == '%' && c[n - 1] == '+';

		if (n == 0 || n > NAME_MAX)
			return false;
		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (kind == NAMES_INVALID || kind == NAMES_VALUE_OF)
			return false;
		if ((kind == NAMES_PART) != is_part)
			return false;
		if (!slash && is_part)
			return false;
		i += n + 1;
	}
	return true;
}

static bool test_property(void)
{
	static unsigned char key[4096];
	static char want[4 * 4096 + 64];
	unsigned accepted = 0, refused_n = 0, cuts = 0;
	int round;

	rng_state = 0x5eed5eed5eed5eedull;
	for (round = 0; round < 5000; round++) {
		size_t n = random_key(key, sizeof(key));
		size_t want_len = ref_encode(key, n, want);
		size_t path_len, back_len, i;
		char *path, *back;
		int r;

		path = names_key_to_path((const char *)key, n, &path_len);
		CHECK(path);
		if (path_len != want_len || memcmp(path, want, want_len)) {
			tap_diag("key '%s': '%s', reference '%s'",
				 show((char *)key, n), show(path, path_len),
				 show(want, want_len));
			return false;
		}
		CHECK(path_ok(path, path_len));
		if (strstr(path, "%+/"))
			cuts++;
		CHECK(names_path_to_key(path, path_len, &back, &back_len) ==
		      0);
		CHECK(back_len == n && memcmp(back, key, n) == 0);
		free(back);

		/* Every directory above the key has a prefix of the key. */
		for (i = 0; i <= path_len; i++) {
			char *prefix;
			size_t prefix_len;

			if (i != 0 && i != path_len && path[i] != '/')
				continue;
			if (i == path_len)
				break;
			CHECK(names_dir_prefix(path, i, &prefix,
					       &prefix_len) == 0);
			CHECK(prefix_len <= n &&
			      memcmp(prefix, key, prefix_len) == 0);
			free(prefix);
		}

		/* Mutations: whatever is accepted must encode back to it. */
		for (i = 0; i < 8 && path_len; i++) {
			static const char bytes[] = "%+/.2EeAF0a\xc3\xa9\x80";
			char m[4 * 4096 + 64];
			size_t m_len = path_len, at = rng() % path_len;
			char *again;
			size_t again_len;

			memcpy(m, path, path_len);
			switch (rng() % 3) {
			case 0:
				m[at] = bytes[rng() % (sizeof(bytes) - 1)];
				break;
			case 1:
				memmove(m + at, m + at + 1, path_len - at - 1);
				m_len--;
				break;
			default:
				memmove(m + at + 1, m + at, path_len - at);
				m[at] = bytes[rng() % (sizeof(bytes) - 1)];
				m_len++;
				break;
			}
			r = names_path_to_key(m, m_len, &back, &back_len);
			if (r != 0) {
				CHECK(r == -EINVAL);
				refused_n++;
				continue;
			}
			accepted++;
			again = names_key_to_path(back, back_len, &again_len);
			CHECK(again);
			if (m_len >= 7 &&
			    memcmp(m + m_len - 7, "/" NAMES_VALUE, 7) == 0)
				m_len -= 7;
			if (again_len != m_len || memcmp(again, m, m_len)) {
				tap_diag("path '%s' accepted, key '%s' gives "
					 "'%s'", show(m, m_len),
					 show(back, back_len),
					 show(again, again_len));
				return false;
			}
			free(again);
			free(back);
		}
		free(path);
	}
	tap_diag("%u mutated paths accepted, %u refused, %u keys cut",
		 accepted, refused_n, cuts);
	/* Or the generator has drifted and tests nothing. */
	CHECK(accepted > 1000 && refused_n > 1000 && cuts > 200);
	return true;
}

/* 1.5 MiB keys of several shapes, in linear time. */
static bool test_big_keys(void)
{
	const size_t n = 1536 * 1024;
	unsigned char *key = malloc(n);
	clock_t t0 = clock();
	int shape;

	CHECK(key);
	for (shape = 0; shape < 4; shape++) {
		size_t i, path_len, back_len, prefix_len;
		char *path, *back, *prefix, *slash;

		for (i = 0; i < n; i++) {
			switch (shape) {
			case 0:
				key[i] = 'k';		/* one huge segment */
				break;
			case 1:
				key[i] = (unsigned char)i;	/* escapes */
				break;
			case 2:
				key[i] = '/';		/* empty segments */
				break;
			default:	/* characters of every length */
				key[i] = (unsigned char)"\xf0\x9f\x98\x80"
					"\xe2\x82\xac\xc3\xa9z"[i % 10];
				break;
			}
		}
		path = names_key_to_path((char *)key, n, &path_len);
		CHECK(path);
		CHECK(names_path_to_key(path, path_len, &back, &back_len) ==
		      0);
		CHECK(back_len == n && memcmp(back, key, n) == 0);
		free(back);
		slash = memrchr(path, '/', path_len);
		if (slash) {
			CHECK(names_dir_prefix(path, (size_t)(slash - path),
					       &prefix, &prefix_len) == 0);
			CHECK(prefix_len <= n &&
			      memcmp(prefix, key, prefix_len) == 0);
			free(prefix);
		}
		free(path);
	}
	free(key);
	/*
	 * Linear work takes about 0.1 s (1 s under valgrind); going over
	 * the rest of the key once per segment, as a strlen() or a copy per
	 * component would, takes minutes on the 1.5 M empty segments.
	 */
	tap_diag("big keys: %.3f s", (double)(clock() - t0) / CLOCKS_PER_SEC);
	CHECK(clock() - t0 < 20 * CLOCKS_PER_SEC);
	return true;
}

int main(void)
{
	TAP_RUN(test_plain);
	TAP_RUN(test_empty_segments);
	TAP_RUN(test_dot_segments);
	TAP_RUN(test_percent);
	TAP_RUN(test_spaces_newlines);
	TAP_RUN(test_nul);
	TAP_RUN(test_utf8);
	TAP_RUN(test_long_segments);
	TAP_RUN(test_long_with_prefix);
	TAP_RUN(test_long_cut_points);
	TAP_RUN(test_long_all_escapes);
	TAP_RUN(test_value);
	TAP_RUN(test_refuse_noncanonical);
	TAP_RUN(test_component_kind);
	TAP_RUN(test_dir_prefix);
	TAP_RUN(test_property);
	TAP_RUN(test_big_keys);
	return tap_done(0);
}
