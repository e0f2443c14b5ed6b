/*
 * fuzz_names.c - libFuzzer target for fs/names.c, the key <-> path bijection
 *
 * Each input is tried both ways:
 *   - as a key: its path obeys the rules of a path (UTF-8 with no control
 *     character, checked by code points; no empty, "." or ".." component,
 *     none longer than NAME_MAX, parts only before the last component,
 *     every '%' an upper-case escape, every component canonical on its
 *     own) and decodes back to the key; every directory above it has a
 *     prefix of the key;
 *   - as a path: if names_path_to_key() accepts it, the key encodes back to
 *     the same path (without a last "%value"), and a single component is
 *     accepted exactly when names_component_kind() calls it plain.
 * The paths next to a key's path (a cut moved or dropped) are tried as
 * paths as well.
 * Any violation aborts.  It cannot find out-of-memory paths.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "names.h"

/* Aborts, saying which rule of the bijection @what broke, and where. */
#define violated(what) fuzz_fail(__FILE__, __LINE__, (what))

static bool is_part(const char *c, size_t n)
{
	return n >= 2 && c[n - 2] == '%' && c[n - 1] == '+';
}

/*
 * Whether @p is valid UTF-8 without control characters, by code points
 * (not the way names.c checks it).
 */
static bool printable_utf8(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint32_t cp, min;
		size_t len, k;

		if (p[i] < 0x80) {
			if (p[i] < 0x20 || p[i] == 0x7f)
				return false;
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0) {
			len = 2;
			cp = p[i] & 0x1f;
			min = 0x80;
		} else if ((p[i] & 0xf0) == 0xe0) {
			len = 3;
			cp = p[i] & 0x0f;
			min = 0x800;
		} else if ((p[i] & 0xf8) == 0xf0) {
			len = 4;
			cp = p[i] & 0x07;
			min = 0x10000;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static bool upper_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* Whether every '%' in the component @c starts "%XX" (upper case). */
static bool escapes_ok(const char *c, size_t n)
{
	size_t i;

	if (n == 1 && c[0] == '%')
		return true;		/* the empty segment */
	if (is_part(c, n))
		n -= 2;
	for (i = 0; i < n; i++) {
		if (c[i] != '%')
			continue;
		if (n - i < 3 || !upper_hex(c[i + 1]) || !upper_hex(c[i + 2]))
			return false;
		i += 2;
	}
	return true;
}

static void check_path_rules(const char *path, size_t len)
{
	size_t i = 0;

	if (len == 0 || path[0] == '/' || path[len - 1] == '/')
		violated("path empty or with a leading or trailing '/'");
	if (memchr(path, '\0', len))
		violated("NUL in a path");
	if (path[len] != '\0')
		violated("path not NUL-terminated");
	if (!printable_utf8((const unsigned char *)path, len))
		violated("path not UTF-8 or with control characters");
	while (i < len) {
		const char *c = path + i;
		const char *slash = memchr(c, '/', len - i);
		size_t n = (size_t)((slash ? slash : path + len) - c);
		enum names_kind kind = names_component_kind(c, n);

		if (n == 0)
			violated("empty component");
		if (n > NAME_MAX)
			violated("component longer than NAME_MAX");
		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			violated("'.' or '..' component");
		if (kind == NAMES_INVALID)
			violated("encoder wrote a component it calls invalid");
		if (kind == NAMES_VALUE_OF)
			violated("encoder wrote \"%value\"");
		if ((kind == NAMES_PART) != is_part(c, n))
			violated("component kind disagrees with \"%+\"");
		if (!slash && kind == NAMES_PART)
			violated("path ends in a part");
		if (!escapes_ok(c, n))
			violated("'%' that starts no escape");
		i += n + 1;
	}
}

static void check_prefix(const char *path, size_t len, const char *key,
			 size_t key_len)
{
	char *prefix;
	size_t prefix_len;

	if (names_dir_prefix(path, len, &prefix, &prefix_len) != 0)
		violated("dir prefix of a directory above a key refused");
	if (prefix_len > key_len || memcmp(prefix, key, prefix_len) != 0)
		violated("dir prefix is not a prefix of the key below");
	if (prefix[prefix_len] != '\0')
		violated("dir prefix not NUL-terminated");
	free(prefix);
}

static void as_path(const char *path, size_t len);

/*
 * Random mutation rarely lands a cut one unit off, so the paths with each
 * cut of @path moved a little or dropped are tried as paths too: every one
 * differs from @path, so it must be refused or be another key's path.
 */
static void near_cuts(const char *path, size_t len)
{
	char *m = malloc(len + 3);
	const char *cut = path;
	int cuts;

	if (!m)
		violated("out of memory");
	for (cuts = 0; cuts < 4; cuts++) {
		size_t q, d;

		cut = memmem(cut, len - (size_t)(cut - path), "%+/", 3);
		if (!cut)
			break;
		q = (size_t)(cut - path);
		for (d = 1; d <= 4 && d <= q; d++) {
			/* d bytes earlier */
			memcpy(m, path, q - d);
			memcpy(m + q - d, "%+/", 3);
			memcpy(m + q + 3 - d, path + q - d, d);
			memcpy(m + q + 3, path + q + 3, len - q - 3);
			as_path(m, len);
		}
		for (d = 1; d <= 4 && q + 3 + d <= len; d++) {
			/* d bytes later */
			memcpy(m, path, q);
			memcpy(m + q, path + q + 3, d);
			memcpy(m + q + d, "%+/", 3);
			memcpy(m + q + d + 3, path + q + 3 + d,
			       len - q - 3 - d);
			as_path(m, len);
		}
		/* none */
		memcpy(m, path, q);
		memcpy(m + q, path + q + 3, len - q - 3);
		as_path(m, len - 3);
		/* a final piece cut short */
		for (d = 1; d <= 4 && q + 3 + d < len; d++)
			as_path(path, q + 3 + d);
		cut += 3;
	}
	free(m);
}

static void as_key(const char *key, size_t key_len)
{
	char *path, *back, *prefix;
	size_t path_len, back_len, prefix_len, i;

	path = names_key_to_path(key, key_len, &path_len);
	if (!path)
		violated("key_to_path failed");
	check_path_rules(path, path_len);
	if (names_path_to_key(path, path_len, &back, &back_len) != 0)
		violated("path of a key refused");
	if (back_len != key_len || memcmp(back, key, key_len) != 0)
		violated("key -> path -> key changed the key");
	if (back[back_len] != '\0')
		violated("key not NUL-terminated");
	free(back);

	check_prefix(path, 0, key, key_len);
	for (i = 1; i < path_len; i++)
		if (path[i] == '/')
			check_prefix(path, i, key, key_len);

	/* The path as a directory: its prefix is the key and a '/'. */
	if (names_dir_prefix(path, path_len, &prefix, &prefix_len) != 0)
		violated("dir prefix of a key's path refused");
	if (prefix_len != key_len + 1 || memcmp(prefix, key, key_len) != 0 ||
	    prefix[key_len] != '/')
		violated("dir prefix of a key's path is not key + '/'");
	free(prefix);

	near_cuts(path, path_len);
	free(path);
}

static void as_path(const char *path, size_t len)
{
	static const char value[] = "/" NAMES_VALUE;
	char *key, *again;
	size_t key_len, again_len, want_len = len;
	int r = names_path_to_key(path, len, &key, &key_len);
	enum names_kind kind = NAMES_INVALID;

	if (!memchr(path, '/', len))
		kind = names_component_kind(path, len);
	if (r != 0) {
		if (r != -EINVAL)
			violated("path_to_key failed other than -EINVAL");
		if (kind == NAMES_PLAIN)
			violated("plain component refused as a path");
		return;
	}
	if (len == 0)
		violated("root accepted as a key");
	if (!memchr(path, '/', len) && kind != NAMES_PLAIN)
		violated("single component accepted but not plain");
	if (len >= sizeof(value) - 1 &&
	    memcmp(path + len - (sizeof(value) - 1), value,
		   sizeof(value) - 1) == 0)
		want_len = len - (sizeof(value) - 1);

	again = names_key_to_path(key, key_len, &again_len);
	if (!again)
		violated("key_to_path failed");
	if (again_len != want_len || memcmp(again, path, want_len) != 0)
		violated("accepted path is not the key's path");
	free(again);
	free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_key((const char *)data, size);
	as_path((const char *)data, size);
	return 0;
}
