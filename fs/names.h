/*
 * names.h - the bijection between etcd keys and paths in the mount
 *
 * A key (relative to the mount prefix) is cut at each '/' into segments;
 * each segment becomes one path component, encoded so that every key has
 * exactly one path and every canonical path exactly one key:
 *
 *   - '%' is the escape character: "%XX" (two upper-case hex digits) is the
 *     byte 0xXX.  '%' itself, NUL, the control bytes 0x01-0x1f and 0x7f, and
 *     every byte that is not part of well-formed UTF-8 are escaped; all other
 *     bytes (printable ASCII but '%' and '/', well-formed UTF-8) stand as
 *     they are.
 *   - The empty segment (in "a//b", a trailing '/', a leading '/') is "%".
 *   - The segments "." and ".." are "%2E" and "%2E%2E".
 *   - A component longer than NAME_MAX is cut into parts of at most 253
 *     bytes (never inside an escape or a UTF-8 character), each but the last
 *     followed by "%+"; the parts are nested directories.  A 300-byte segment
 *     "xxx..." is the directory "x{253}%+" holding the file "x{47}".
 *   - "%value" names the value of a key that is also the prefix of other
 *     keys: with keys "a" and "a/b", "a" is a directory holding "b" and
 *     "%value" (the key "a").  The filesystem decides when to show it;
 *     names_key_to_path() never produces it.
 *
 * Any other name is not canonical ("50%", "%41", "%2e") and maps to no key:
 * the filesystem answers ENOENT on lookup and EINVAL on create; a name
 * longer than NAME_MAX is none of the encoder's, and ENAMETOOLONG.
 *
 * Paths here are relative to the mount root, components joined by '/',
 * with no leading or trailing '/'; the root is the empty path.
 */
#ifndef ETCDFS_NAMES_H
#define ETCDFS_NAMES_H

#include <stddef.h>

#define NAMES_VALUE "%value"
#define NAMES_PART_MAX 253

enum names_kind {
	NAMES_INVALID = -1,	/* not canonical */
	NAMES_PLAIN = 0,	/* a whole segment */
	NAMES_PART = 1,		/* a part of a long segment, ending in "%+" */
	NAMES_VALUE_OF = 2,	/* "%value" */
};

/*
 * Returns the kind of the component @name (@len bytes, no '/').
 * A plain component or a part is checked to be the canonical encoding
 * of what it decodes to, except that a part must also be exactly as
 * long as the encoder makes non-final parts.
 */
enum names_kind names_component_kind(const char *name, size_t len);

/*
 * Encodes @key into a malloc()ed, NUL-terminated path; *@path_len is its
 * length.  Returns NULL only when out of memory.
 */
char *names_key_to_path(const char *key, size_t key_len, size_t *path_len);

/*
 * Decodes the canonical path @path into a malloc()ed key (NUL-terminated
 * past *@key_len).  A last component "%value" names the key of the path
 * before it.  Returns 0, -EINVAL if the path is not canonical or ends in a
 * part, or -ENOMEM.
 */
int names_path_to_key(const char *path, size_t path_len, char **key,
		      size_t *key_len);

/*
 * The prefix of every key whose path lies below the directory @path:
 * "" for the root, the key so far for a path ending in a part, else the
 * path's key followed by '/'.  Returns 0, -EINVAL or -ENOMEM.
 */
int names_dir_prefix(const char *path, size_t path_len, char **prefix,
		     size_t *prefix_len);

#endif /* ETCDFS_NAMES_H */
