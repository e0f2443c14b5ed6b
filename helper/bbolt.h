/*
 * bbolt.h - a read-only reader of bbolt database files (etcd's backend)
 *
 * Reads a bbolt file through a file descriptor with bounds-checked
 * pread(2)s, never a mapping: a file that shrinks under the reader gives
 * an error (STORE_EBADREPLY, "short read"), never SIGBUS.  Nothing is
 * ever written or locked.  The file is hostile: every page id, element
 * position, size and overflow is checked against the page and the file,
 * a walk that meets a page twice stops, and each failure names the page
 * or the offset that was wrong.
 *
 * The layout (native byte order, little-endian here): pages of
 * page_size bytes, each with a 16-byte header {id u64, flags u16, count
 * u16, overflow u32}; pages 0 and 1 hold the two metas, of which the
 * valid one with the higher txid is the current; a bucket is a B+tree of
 * branch and leaf pages, or inline: its leaf page inside its parent's
 * value.
 *
 * What it cannot do: write; read a file of the other byte order; use the
 * freelist (a reader has no need of it).
 */
#ifndef ETCDFS_BBOLT_H
#define ETCDFS_BBOLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"

#define BBOLT_MAGIC		0xED0CDAEDu
#define BBOLT_VERSION		2
#define BBOLT_PAGE_HEADER	16
#define BBOLT_META_SIZE		64
#define BBOLT_ELEM_SIZE		16	/* a branch or leaf element */
#define BBOLT_BUCKET_HEADER	16	/* a bucket value's {root, seq} */

#define BBOLT_PAGE_BRANCH	0x01
#define BBOLT_PAGE_LEAF		0x02
#define BBOLT_PAGE_META		0x04
#define BBOLT_PAGE_FREELIST	0x10

#define BBOLT_LEAF_BUCKET	0x01	/* a leaf element: a bucket */

/* How deep a tree may be: far past any real file, and a stop for loops. */
#define BBOLT_MAX_DEPTH		64

struct bbolt;

/*
 * A bucket: its root page, or (root 0) its inline leaf page, owned.
 * Zeroed, or released with bbolt_bucket_release().
 */
struct bbolt_bucket {
	uint64_t root;
	uint8_t *inline_page;
	size_t inline_len;
};

/* What bbolt_open found in the current meta. */
struct bbolt_info {
	uint32_t page_size;
	uint64_t txid;
	uint64_t high_water;	/* the meta's pgid: pages in use */
	unsigned meta_page;	/* 0 or 1 */
};

/*
 * Opens the bbolt database in the first @len bytes of @fd (borrowed: the
 * caller closes it after bbolt_close()).  Checks both metas (magic,
 * version, checksum, page size, root) and takes the valid one with the
 * higher txid.  STORE_EINVAL with a one-line message if the file is no
 * bbolt file or both metas are bad.
 */
int bbolt_open(int fd, uint64_t len, struct bbolt **out,
	       struct store_error *err);
void bbolt_close(struct bbolt *db);

void bbolt_get_info(const struct bbolt *db, struct bbolt_info *out);

/* The root bucket (the one whose keys are the top-level buckets). */
void bbolt_root(const struct bbolt *db, struct bbolt_bucket *out);

/*
 * Finds the sub-bucket @name of @parent into @out.  STORE_ENOTFOUND if
 * there is none (or @name is a plain key); STORE_EBADREPLY if the file
 * is damaged on the way.
 */
int bbolt_bucket(struct bbolt *db, const struct bbolt_bucket *parent,
		 const void *name, size_t name_len, struct bbolt_bucket *out,
		 struct store_error *err);

void bbolt_bucket_release(struct bbolt_bucket *b);

/*
 * The value of the plain key @key of @b into *@val (malloc()ed,
 * NUL-terminated past *@val_len).  STORE_ENOTFOUND if absent.
 */
int bbolt_get(struct bbolt *db, const struct bbolt_bucket *b,
	      const void *key, size_t key_len, uint8_t **val, size_t *val_len,
	      struct store_error *err);

/*
 * Called for each element of a bucket, in key order: @flags has
 * BBOLT_LEAF_BUCKET for a sub-bucket (@val is then its bucket value).
 * The bytes are borrowed for the call.  A non-zero return stops the walk
 * and is returned by bbolt_foreach.
 */
typedef int (*bbolt_foreach_fn)(void *arg, const uint8_t *key,
				size_t key_len, const uint8_t *val,
				size_t val_len, uint32_t flags);

/*
 * Walks @b in key order (checking that its keys ascend strictly and that
 * no page is met twice).  0, @fn's non-zero return, or STORE_EBADREPLY /
 * STORE_EINTERNAL.
 */
int bbolt_foreach(struct bbolt *db, const struct bbolt_bucket *b,
		  bbolt_foreach_fn fn, void *arg, struct store_error *err);

/* FNV-1a 64 of @len bytes, the metas' checksum. */
uint64_t bbolt_fnv1a64(const void *p, size_t len);

#endif /* ETCDFS_BBOLT_H */
