/*
 * names.c - the bijection between etcd keys and paths in the mount
 *
 * Encoding is one pass over the key: each byte is classed by a table, a
 * byte >= 0x80 starts a raw UTF-8 character only when a well-formed
 * sequence (Unicode 3-7: no overlongs, no surrogates, nothing above
 * U+10FFFF) starts there, and a long segment is cut while it is written,
 * by moving the few bytes written past the last cut point three places
 * on to make room for "%+/".
 *
 * Decoding is one pass over the path that also proves the path canonical,
 * i.e. that names_key_to_path() of the result gives the path back, without
 * encoding again:
 *   - a raw byte must be one the encoder leaves raw, a raw UTF-8 character
 *     must be whole inside its component;
 *   - an escape must be upper-case and stand for a byte the encoder
 *     escapes: '%', a control byte, or a byte >= 0x80 that does not start a
 *     well-formed sequence.  The last needs the bytes after it, which may
 *     be escapes in the next part, so an escaped lead byte leaves a small
 *     state ("the next n escaped bytes would complete a character") that
 *     the following escapes update;
 *   - a part is as long as the greedy cut makes it (the first unit of the
 *     next component would not have fitted), and the parts and final piece
 *     of a segment together are longer than NAME_MAX.
 *
 * It cannot say whether a key exists, and names_dir_prefix() of a part
 * also matches keys whose path is elsewhere (a 254-byte segment starting
 * with the part's 253 bytes is a plain component): the caller filters.
 */
#include "names.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if NAME_MAX != 255
#error "the encoding is defined for NAME_MAX 255"
#endif

/* The longest unit: a 4-byte UTF-8 character (an escape is 3). */
#define NAMES_UNIT_MAX 4
/* The shortest part a greedy cut can leave. */
#define NAMES_PART_MIN (NAMES_PART_MAX - NAMES_UNIT_MAX + 1)

/* Keys this short are encoded on the stack, then copied to a fitting block. */
#define NAMES_STACK_BUF 1024

enum names_class {
	C_RAW = 0,	/* printable ASCII, stands as it is */
	C_HIGH,		/* >= 0x80: raw if it starts well-formed UTF-8 */
	C_CTRL,		/* NUL, 0x01-0x1f, 0x7f: always escaped */
	C_PCT,		/* '%': always escaped; the escape character */
	C_SLASH,	/* '/': never inside a segment or component */
};

static const unsigned char names_class[256] = {
	[0x00 ... 0x1f] = C_CTRL,
	['%'] = C_PCT,
	['/'] = C_SLASH,
	[0x7f] = C_CTRL,
	[0x80 ... 0xff] = C_HIGH,
};

static const char names_hex[] = "0123456789ABCDEF";

/*
 * Returns the length (2-4) of the UTF-8 sequence lead byte @c starts, and
 * the range its second byte must lie in; 0 if @c starts none.
 */
static inline unsigned utf8_lead(unsigned char c, unsigned char *lo,
				 unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c < 0xc2)
		return 0;
	if (c < 0xe0)
		return 2;
	if (c < 0xf0) {
		if (c == 0xe0)
			*lo = 0xa0;	/* overlong */
		else if (c == 0xed)
			*hi = 0x9f;	/* surrogates */
		return 3;
	}
	if (c < 0xf5) {
		if (c == 0xf0)
			*lo = 0x90;	/* overlong */
		else if (c == 0xf4)
			*hi = 0x8f;	/* above U+10FFFF */
		return 4;
	}
	return 0;
}

/* Length of the well-formed UTF-8 character at @p (@n bytes left), or 0. */
static inline size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned char lo, hi;
	size_t len = utf8_lead(p[0], &lo, &hi);

	if (len == 0 || n < len || p[1] < lo || p[1] > hi)
		return 0;
	if (len > 2 && (p[2] & 0xc0) != 0x80)
		return 0;
	if (len > 3 && (p[3] & 0xc0) != 0x80)
		return 0;
	return len;
}

static inline int hex_val(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;	/* lower case is not canonical */
}

/* --- encoding --- */

/*
 * Writes the component(s) of one segment @s (@n bytes, no '/') at @o and
 * returns the end.  Room: 3 bytes a byte, 3 more ("%+/") per cut, 1 if
 * empty.
 */
static char *encode_segment(char *o, const unsigned char *s, size_t n)
{
	char *part = o;	/* start of the component being written */
	char *fit = o;	/* last unit boundary within NAMES_PART_MAX of it */
	const unsigned char *end = s + n;

	if (n == 0) {
		*o = '%';
		return o + 1;
	}
	if (s[0] == '.' && (n == 1 || (n == 2 && s[1] == '.'))) {
		memcpy(o, "%2E%2E", 3 * n);
		return o + 3 * n;
	}
	while (s < end) {
		unsigned char c = *s;
		size_t u;

		if (names_class[c] == C_RAW &&
		    o - part < NAMES_PART_MAX) {
			/*
			 * A run of printable ASCII that cannot reach a cut is
			 * copied in one go; near a cut, byte by byte below.
			 */
			const unsigned char *r = s + 1;
			const unsigned char *lim = s + (NAMES_PART_MAX -
							(o - part));

			if (lim > end)
				lim = end;
			while (r < lim && names_class[*r] == C_RAW)
				r++;
			memcpy(o, s, (size_t)(r - s));
			o += r - s;
			s = r;
			fit = o;
			continue;
		}
		if (names_class[c] == C_RAW) {
			*o++ = (char)c;
			s++;
		} else if (names_class[c] == C_HIGH &&
			   (u = utf8_len(s, (size_t)(end - s))) != 0) {
			memcpy(o, s, u);
			o += u;
			s += u;
		} else {
			o[0] = '%';
			o[1] = names_hex[c >> 4];
			o[2] = names_hex[c & 15];
			o += 3;
			s++;
		}
		if (o - part <= NAMES_PART_MAX) {
			fit = o;
		} else if (o - part > NAME_MAX) {
			/*
			 * Only now is a cut certain (a segment of at most
			 * NAME_MAX bytes stays whole); the bytes past the cut
			 * point are at most NAME_MAX + NAMES_UNIT_MAX -
			 * NAMES_PART_MIN, so moving them is cheap.
			 */
			size_t tail = (size_t)(o - fit);

			memmove(fit + 3, fit, tail);
			memcpy(fit, "%+/", 3);
			o += 3;
			part = fit + 3;
			fit = o;
		}
	}
	return o;
}

char *names_key_to_path(const char *key, size_t key_len, size_t *path_len)
{
	const unsigned char *k = (const unsigned char *)key;
	const unsigned char *end = k + key_len;
	char stack_buf[NAMES_STACK_BUF];
	char *heap = NULL, *buf = stack_buf;
	char *o, *path;
	size_t cap, len;

	/*
	 * See encode_segment(): at most 3 bytes a byte, and 3 more for a cut,
	 * which comes at most every NAMES_PART_MIN (250) bytes of that: less
	 * than 3.04 bytes a byte.  An empty segment ("%") and its '/' in the
	 * path stand for one '/' of the key, 2 bytes for 1.
	 */
	if (key_len > (SIZE_MAX - 16) / 4)
		return NULL;
	cap = 3 * key_len + key_len / 16 + 16;
	if (cap > sizeof(stack_buf)) {
		heap = malloc(cap);
		if (!heap)
			return NULL;
		buf = heap;
	}

	o = buf;
	for (;;) {
		/* k may be NULL for the empty key: no memchr() on it. */
		const unsigned char *slash =
			k < end ? memchr(k, '/', (size_t)(end - k)) : NULL;
		const unsigned char *seg_end = slash ? slash : end;

		o = encode_segment(o, k, (size_t)(seg_end - k));
		if (!slash)
			break;
		*o++ = '/';
		k = slash + 1;
	}
	len = (size_t)(o - buf);

	if (!heap) {
		path = malloc(len + 1);
		if (!path)
			return NULL;
		memcpy(path, stack_buf, len);
	} else {
		/* Shrinking in place is cheap; keep the big block if not. */
		path = realloc(heap, len + 1);
		if (!path)
			path = heap;
	}
	path[len] = '\0';
	*path_len = len;
	return path;
}

/* --- decoding --- */

struct names_dec {
	unsigned char *out;	/* the key so far; may be NULL to only check */
	size_t len;
	/*
	 * Escaped bytes that would still complete a well-formed character
	 * begun by an escaped lead byte, and the range the next must lie in.
	 */
	unsigned need;
	unsigned char lo, hi;
};

static inline void dec_put(struct names_dec *d, const void *p, size_t n)
{
	if (d->out)
		memcpy(d->out + d->len, p, n);
	d->len += n;
}

/* Whether the encoder would have escaped the byte @b at this point. */
static inline bool dec_escape_ok(struct names_dec *d, unsigned char b)
{
	if (d->need) {
		if (b >= d->lo && b <= d->hi) {
			/* A complete character would have stood raw. */
			if (--d->need == 0)
				return false;
			d->lo = 0x80;
			d->hi = 0xbf;
			return true;
		}
		d->need = 0;
	}
	if (b < 0x80)
		return names_class[b] == C_CTRL || names_class[b] == C_PCT;
	d->need = utf8_lead(b, &d->lo, &d->hi);
	if (d->need)
		d->need--;
	return true;
}

struct names_comp {
	bool part;		/* ended in "%+" */
	size_t len;		/* bytes, without "%+" */
	size_t first_unit;	/* encoded length of the first unit, 0 if none */
};

/*
 * Decodes the units of the component @p (@n bytes) into @d, the component
 * continuing the segment that @d holds.  Does not handle the whole-
 * component specials ("%", "%2E", "%2E%2E", "%value").
 */
static int dec_units(struct names_dec *d, const unsigned char *p, size_t n,
		     struct names_comp *c)
{
	size_t i = 0;

	c->part = false;
	c->len = n;
	c->first_unit = 0;
	while (i < n) {
		unsigned char ch = p[i];
		size_t u;
		int h, l;

		switch (names_class[ch]) {
		case C_RAW:
			/* A run at once; its first byte is the first unit. */
			u = i + 1;
			while (u < n && names_class[p[u]] == C_RAW)
				u++;
			dec_put(d, p + i, u - i);
			d->need = 0;
			if (i == 0)
				c->first_unit = 1;
			i = u;
			continue;
		case C_HIGH:
			u = utf8_len(p + i, n - i);
			if (!u)
				return -EINVAL;
			dec_put(d, p + i, u);
			d->need = 0;
			break;
		case C_PCT:
			if (i + 2 == n && p[i + 1] == '+') {
				c->part = true;
				c->len = i;
				return 0;
			}
			if (n - i < 3)
				return -EINVAL;
			h = hex_val(p[i + 1]);
			l = hex_val(p[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			ch = (unsigned char)(h << 4 | l);
			if (!dec_escape_ok(d, ch))
				return -EINVAL;
			dec_put(d, &ch, 1);
			u = 3;
			break;
		default:	/* a raw control byte or '/' */
			return -EINVAL;
		}
		if (i == 0)
			c->first_unit = u;
		i += u;
	}
	return 0;
}

static inline bool comp_is(const unsigned char *p, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(p, s, n) == 0;
}

enum walk_end {
	WALK_SEGMENT,	/* the last component ends a segment */
	WALK_PART,	/* the last component is a part */
	WALK_VALUE,	/* "%value", dropped from the key */
};

/*
 * Decodes and checks the non-empty @path into @out (room for @path_len
 * bytes: no component decodes to more than its own length).
 */
static int names_walk(const char *path, size_t path_len, unsigned char *out,
		      size_t *out_len, enum walk_end *end)
{
	struct names_dec d = { .out = out };
	const unsigned char *p = (const unsigned char *)path;
	const unsigned char *path_end = p + path_len;
	bool in_part = false;	/* the previous component was a part */
	size_t part_len = 0;	/* its length */
	bool first = true;

	for (;;) {
		const unsigned char *slash = memchr(p, '/',
						    (size_t)(path_end - p));
		size_t n = (size_t)((slash ? slash : path_end) - p);
		struct names_comp c;
		int r;

		if (n == 0 || n > NAME_MAX)
			return -EINVAL;
		if (!in_part) {
			/* A new segment. */
			d.need = 0;
			if (!first)
				dec_put(&d, "/", 1);
			if (comp_is(p, n, NAMES_VALUE)) {
				if (first || slash)
					return -EINVAL;
				d.len--;
				*end = WALK_VALUE;
				*out_len = d.len;
				return 0;
			}
			if (comp_is(p, n, "%")) {
				goto next;
			} else if (comp_is(p, n, "%2E")) {
				dec_put(&d, ".", 1);
				goto next;
			} else if (comp_is(p, n, "%2E%2E")) {
				dec_put(&d, "..", 2);
				goto next;
			} else if (comp_is(p, n, ".") || comp_is(p, n, "..")) {
				return -EINVAL;
			}
		}
		r = dec_units(&d, p, n, &c);
		if (r)
			return r;
		/* The greedy cut would have taken this unit too. */
		if (in_part && part_len + c.first_unit <= NAMES_PART_MAX)
			return -EINVAL;
		if (c.part) {
			if (c.len < NAMES_PART_MIN || c.len > NAMES_PART_MAX)
				return -EINVAL;
			in_part = true;
			part_len = c.len;
		} else {
			/* The last cut is made only when more than NAME_MAX
			 * bytes are left, so every earlier one was too. */
			if (in_part && part_len + c.len <= NAME_MAX)
				return -EINVAL;
			in_part = false;
		}
next:
		first = false;
		if (!slash)
			break;
		p = slash + 1;
	}
	*end = in_part ? WALK_PART : WALK_SEGMENT;
	*out_len = d.len;
	return 0;
}

enum names_kind names_component_kind(const char *name, size_t len)
{
	const unsigned char *p = (const unsigned char *)name;
	struct names_dec d = { .out = NULL };
	struct names_comp c;

	if (len == 0 || len > NAME_MAX)
		return NAMES_INVALID;
	if (comp_is(p, len, NAMES_VALUE))
		return NAMES_VALUE_OF;
	if (comp_is(p, len, "%") || comp_is(p, len, "%2E") ||
	    comp_is(p, len, "%2E%2E"))
		return NAMES_PLAIN;
	if (comp_is(p, len, ".") || comp_is(p, len, ".."))
		return NAMES_INVALID;
	if (dec_units(&d, p, len, &c))
		return NAMES_INVALID;
	if (!c.part)
		return NAMES_PLAIN;
	/* How long exactly depends on the next component's first unit. */
	if (c.len < NAMES_PART_MIN || c.len > NAMES_PART_MAX)
		return NAMES_INVALID;
	return NAMES_PART;
}

int names_path_to_key(const char *path, size_t path_len, char **key,
		      size_t *key_len)
{
	enum walk_end end;
	unsigned char *buf;
	size_t len;
	int r;

	/* The root is a directory, never a key. */
	if (path_len == 0 || path_len == SIZE_MAX)
		return -EINVAL;
	buf = malloc(path_len + 1);
	if (!buf)
		return -ENOMEM;
	r = names_walk(path, path_len, buf, &len, &end);
	if (!r && end == WALK_PART)
		r = -EINVAL;
	if (r) {
		free(buf);
		return r;
	}
	buf[len] = '\0';
	*key = (char *)buf;
	*key_len = len;
	return 0;
}

int names_dir_prefix(const char *path, size_t path_len, char **prefix,
		     size_t *prefix_len)
{
	enum walk_end end;
	unsigned char *buf;
	size_t len = 0;
	int r = 0;

	if (path_len > SIZE_MAX - 2)
		return -EINVAL;
	buf = malloc(path_len + 2);
	if (!buf)
		return -ENOMEM;
	if (path_len) {
		r = names_walk(path, path_len, buf, &len, &end);
		if (!r && end == WALK_VALUE)
			r = -EINVAL;	/* a file */
		if (r) {
			free(buf);
			return r;
		}
		if (end == WALK_SEGMENT)
			buf[len++] = '/';
	}
	buf[len] = '\0';
	*prefix = (char *)buf;
	*prefix_len = len;
	return 0;
}
