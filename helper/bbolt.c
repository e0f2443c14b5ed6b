/*
 * bbolt.c - a read-only, bounds-checked reader of bbolt files (bbolt.h)
 *
 * Every page is read whole (with its overflow pages) into a buffer of its
 * own by pread(2) and checked before a byte of it is used: its id, its
 * flags, its span inside the file and the pages the meta says are in
 * use, its element table inside the page, each key and value inside the
 * page.  Lookups descend at most BBOLT_MAX_DEPTH levels; a walk keeps a
 * bitmap of the pages it met, so that a page linked twice (a loop, or a
 * tree that is no tree) is an error, not a hang.
 *
 * What it cannot do: cache pages (each lookup reads its path again);
 * check the freelist.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bbolt.h"

struct bbolt {
	int fd;			/* borrowed */
	uint64_t len;		/* the bytes that are the database */
	uint32_t page_size;
	uint64_t high_water;	/* pages in use, from the meta */
	uint64_t txid;
	uint64_t root;		/* the root bucket's root page */
	unsigned meta_page;
};

/* One page as read: its bytes (owned unless inline), flags and count. */
struct bb_page {
	uint8_t *buf;
	size_t len;
	uint64_t id;		/* 0: an inline page */
	uint16_t flags;
	uint16_t count;
	bool owned;
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

uint64_t bbolt_fnv1a64(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Reads @n bytes at @off, all of them or an error naming the offset. */
static int bb_read(struct bbolt *db, void *buf, size_t n, uint64_t off,
		   struct store_error *err)
{
	size_t got = 0;
	ssize_t r;

	if (off > db->len || n > db->len - off)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: %zu bytes at offset %llu are past "
				  "the end of the file (%llu bytes)", n,
				  (unsigned long long)off,
				  (unsigned long long)db->len);
	while (got < n) {
		r = pread(db->fd, (char *)buf + got, n - got,
			  (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
					  "bbolt: cannot read offset %llu: %s",
					  (unsigned long long)(off + got),
					  strerror(errno));
		if (r == 0)
			return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
					  "bbolt: short read at offset %llu: "
					  "the file shrank",
					  (unsigned long long)(off + got));
		got += (size_t)r;
	}
	return 0;
}

static void bb_page_release(struct bb_page *pg)
{
	if (pg->owned)
		free(pg->buf);
	memset(pg, 0, sizeof(*pg));
}

/* Checks the header and element table of @pg (its bytes in place). */
static int bb_page_check(const struct bb_page *pg, struct store_error *err)
{
	if (pg->flags != BBOLT_PAGE_BRANCH && pg->flags != BBOLT_PAGE_LEAF)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu: flags 0x%x, not a branch "
				  "or leaf page", (unsigned long long)pg->id,
				  pg->flags);
	if (pg->flags == BBOLT_PAGE_BRANCH && pg->count == 0)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu: a branch page without "
				  "elements", (unsigned long long)pg->id);
	if (BBOLT_PAGE_HEADER + (size_t)pg->count * BBOLT_ELEM_SIZE > pg->len)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu: %u elements do not fit "
				  "in its %zu bytes",
				  (unsigned long long)pg->id, pg->count,
				  pg->len);
	return 0;
}

/* Reads tree page @id (with its overflow) into @pg, checked. */
static int bb_page_read(struct bbolt *db, uint64_t id, struct bb_page *pg,
			struct store_error *err)
{
	uint8_t hdr[BBOLT_PAGE_HEADER];
	uint64_t overflow, span;
	int rc;

	memset(pg, 0, sizeof(*pg));
	if (id < 2 || id >= db->high_water)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: a link to page %llu, outside the "
				  "pages in use (2 to %llu)",
				  (unsigned long long)id,
				  (unsigned long long)db->high_water - 1);
	rc = bb_read(db, hdr, sizeof(hdr), id * db->page_size, err);
	if (rc < 0)
		return rc;
	if (le64(hdr) != id)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu (offset %llu) says it is "
				  "page %llu", (unsigned long long)id,
				  (unsigned long long)id * db->page_size,
				  (unsigned long long)le64(hdr));
	overflow = le32(hdr + 12);
	if (overflow >= db->high_water - id)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu: %llu overflow pages run "
				  "past the pages in use (%llu)",
				  (unsigned long long)id,
				  (unsigned long long)overflow,
				  (unsigned long long)db->high_water);
	span = (overflow + 1) * db->page_size;
	if (span > SIZE_MAX)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu is too big",
				  (unsigned long long)id);
	pg->buf = malloc((size_t)span);
	if (!pg->buf)
		return store_enomem(err, NULL, 0);
	pg->owned = true;
	pg->len = (size_t)span;
	pg->id = id;
	rc = bb_read(db, pg->buf, pg->len, id * db->page_size, err);
	if (rc < 0)
		goto fail;
	pg->flags = le16(pg->buf + 8);
	pg->count = le16(pg->buf + 10);
	rc = bb_page_check(pg, err);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	bb_page_release(pg);
	return rc;
}

/* The inline page of @b as a page (borrowed bytes), checked. */
static int bb_page_inline(const struct bbolt_bucket *b, struct bb_page *pg,
			  struct store_error *err)
{
	memset(pg, 0, sizeof(*pg));
	if (!b->inline_page || b->inline_len < BBOLT_PAGE_HEADER)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: an inline bucket of %zu bytes, "
				  "shorter than a page header", b->inline_len);
	pg->buf = b->inline_page;
	pg->len = b->inline_len;
	pg->flags = le16(pg->buf + 8);
	pg->count = le16(pg->buf + 10);
	if (pg->flags != BBOLT_PAGE_LEAF)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: an inline bucket whose page has "
				  "flags 0x%x, not a leaf", pg->flags);
	return bb_page_check(pg, err);
}

/* Element @i of a branch page: its key and child page. */
static int bb_branch_elem(const struct bb_page *pg, unsigned i,
			  const uint8_t **key, size_t *key_len,
			  uint64_t *child, struct store_error *err)
{
	const uint8_t *e = pg->buf + BBOLT_PAGE_HEADER +
			   (size_t)i * BBOLT_ELEM_SIZE;
	uint64_t off = (uint64_t)(e - pg->buf) + le32(e);
	uint32_t ksize = le32(e + 4);

	if (off > pg->len || ksize > pg->len - off)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu: element %u's key (%u "
				  "bytes at %llu) runs past the page (%zu "
				  "bytes)", (unsigned long long)pg->id, i,
				  ksize, (unsigned long long)off, pg->len);
	*key = pg->buf + off;
	*key_len = ksize;
	*child = le64(e + 8);
	return 0;
}

/* Element @i of a leaf page: flags, key and value. */
static int bb_leaf_elem(const struct bb_page *pg, unsigned i,
			uint32_t *flags, const uint8_t **key, size_t *key_len,
			const uint8_t **val, size_t *val_len,
			struct store_error *err)
{
	const uint8_t *e = pg->buf + BBOLT_PAGE_HEADER +
			   (size_t)i * BBOLT_ELEM_SIZE;
	uint64_t off = (uint64_t)(e - pg->buf) + le32(e + 4);
	uint64_t ksize = le32(e + 8), vsize = le32(e + 12);

	if (off > pg->len || ksize + vsize > pg->len - off)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu: element %u (%llu + %llu "
				  "bytes at %llu) runs past the page (%zu "
				  "bytes)", (unsigned long long)pg->id, i,
				  (unsigned long long)ksize,
				  (unsigned long long)vsize,
				  (unsigned long long)off, pg->len);
	*flags = le32(e);
	*key = pg->buf + off;
	*key_len = (size_t)ksize;
	*val = pg->buf + off + ksize;
	*val_len = (size_t)vsize;
	return 0;
}

static int bb_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* Makes @out the bucket whose value is @val. */
static int bb_bucket_value(const uint8_t *val, size_t val_len,
			   struct bbolt_bucket *out, struct store_error *err)
{
	memset(out, 0, sizeof(*out));
	if (val_len < BBOLT_BUCKET_HEADER)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: a bucket value of %zu bytes, "
				  "shorter than its header", val_len);
	out->root = le64(val);
	if (out->root)
		return 0;
	out->inline_len = val_len - BBOLT_BUCKET_HEADER;
	out->inline_page = malloc(out->inline_len ? out->inline_len : 1);
	if (!out->inline_page)
		return store_enomem(err, NULL, 0);
	memcpy(out->inline_page, val + BBOLT_BUCKET_HEADER, out->inline_len);
	return 0;
}

void bbolt_bucket_release(struct bbolt_bucket *b)
{
	if (!b)
		return;
	free(b->inline_page);
	memset(b, 0, sizeof(*b));
}

/* The first page of @b: its root page, or its inline page. */
static int bb_bucket_page(struct bbolt *db, const struct bbolt_bucket *b,
			  struct bb_page *pg, struct store_error *err)
{
	if (b->root)
		return bb_page_read(db, b->root, pg, err);
	return bb_page_inline(b, pg, err);
}

/*
 * Finds @key in @b: its leaf element's flags and a copy of its value
 * (malloc()ed, NUL-terminated).  ENOTFOUND if absent.
 */
static int bb_find(struct bbolt *db, const struct bbolt_bucket *b,
		   const void *key, size_t key_len, uint32_t *flags,
		   uint8_t **val, size_t *val_len, struct store_error *err)
{
	struct bb_page pg;
	const uint8_t *k, *v;
	size_t kl, vl;
	uint64_t child;
	unsigned i, depth = 0, pick;
	int rc, c;

	rc = bb_bucket_page(db, b, &pg, err);
	while (rc == 0 && pg.flags == BBOLT_PAGE_BRANCH) {
		if (++depth > BBOLT_MAX_DEPTH) {
			rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
					"bbolt: page %llu: the tree is deeper "
					"than %d levels", (unsigned long long)
					pg.id, BBOLT_MAX_DEPTH);
			break;
		}
		/* the last element whose key is at most @key, or the first */
		pick = 0;
		for (i = 0; i < pg.count; i++) {
			rc = bb_branch_elem(&pg, i, &k, &kl, &child, err);
			if (rc < 0)
				break;
			c = bb_cmp(k, kl, key, key_len);
			if (c > 0)
				break;
			pick = i;
			if (c == 0)
				break;
		}
		if (rc < 0)
			break;
		rc = bb_branch_elem(&pg, pick, &k, &kl, &child, err);
		bb_page_release(&pg);
		if (rc < 0)
			return rc;
		rc = bb_page_read(db, child, &pg, err);
	}
	if (rc < 0) {
		bb_page_release(&pg);
		return rc;
	}
	rc = STORE_ENOTFOUND;
	for (i = 0; i < pg.count; i++) {
		rc = bb_leaf_elem(&pg, i, flags, &k, &kl, &v, &vl, err);
		if (rc < 0)
			break;
		c = bb_cmp(k, kl, key, key_len);
		rc = STORE_ENOTFOUND;
		if (c > 0)
			break;
		if (c < 0)
			continue;
		*val = malloc(vl + 1);
		if (!*val) {
			rc = store_enomem(err, NULL, 0);
			break;
		}
		memcpy(*val, v, vl);
		(*val)[vl] = 0;
		*val_len = vl;
		rc = 0;
		break;
	}
	bb_page_release(&pg);
	return rc;
}

int bbolt_get(struct bbolt *db, const struct bbolt_bucket *b,
	      const void *key, size_t key_len, uint8_t **val, size_t *val_len,
	      struct store_error *err)
{
	uint32_t flags = 0;
	int rc;

	*val = NULL;
	*val_len = 0;
	rc = bb_find(db, b, key, key_len, &flags, val, val_len, err);
	if (rc == 0 && (flags & BBOLT_LEAF_BUCKET)) {
		free(*val);
		*val = NULL;
		*val_len = 0;
		rc = STORE_ENOTFOUND;
	}
	if (rc == STORE_ENOTFOUND)
		return store_fail(err, rc, key, key_len, 0,
				  "bbolt: no such key");
	return rc;
}

int bbolt_bucket(struct bbolt *db, const struct bbolt_bucket *parent,
		 const void *name, size_t name_len, struct bbolt_bucket *out,
		 struct store_error *err)
{
	uint32_t flags = 0;
	uint8_t *val = NULL;
	size_t val_len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = bb_find(db, parent, name, name_len, &flags, &val, &val_len, err);
	if (rc == 0 && !(flags & BBOLT_LEAF_BUCKET))
		rc = STORE_ENOTFOUND;
	if (rc == STORE_ENOTFOUND)
		rc = store_fail(err, rc, name, name_len, 0,
				"bbolt: no such bucket");
	if (rc == 0)
		rc = bb_bucket_value(val, val_len, out, err);
	free(val);
	return rc;
}

/* A walk's state: what it met, and the last key, for the order. */
struct bb_walk {
	struct bbolt *db;
	uint8_t *seen;		/* a bit a page; owned */
	uint8_t *last;		/* owned copy of the last key */
	size_t last_len, last_cap;
	bool any;
	bbolt_foreach_fn fn;
	void *arg;
	struct store_error *err;
};

static int bb_walk_leaf(struct bb_walk *w, const struct bb_page *pg)
{
	const uint8_t *k, *v;
	size_t kl, vl;
	uint32_t flags;
	unsigned i;
	int rc;

	for (i = 0; i < pg->count; i++) {
		rc = bb_leaf_elem(pg, i, &flags, &k, &kl, &v, &vl, w->err);
		if (rc < 0)
			return rc;
		if (w->any && bb_cmp(w->last, w->last_len, k, kl) >= 0)
			return store_fail(w->err, STORE_EBADREPLY, NULL, 0, 0,
					  "bbolt: page %llu: element %u is "
					  "out of key order",
					  (unsigned long long)pg->id, i);
		if (kl > w->last_cap) {
			uint8_t *n = realloc(w->last, kl);

			if (!n)
				return store_enomem(w->err, NULL, 0);
			w->last = n;
			w->last_cap = kl;
		}
		if (kl)
			memcpy(w->last, k, kl);
		w->last_len = kl;
		w->any = true;
		rc = w->fn(w->arg, k, kl, v, vl, flags);
		if (rc)
			return rc;
	}
	return 0;
}

static int bb_walk_page(struct bb_walk *w, uint64_t id, unsigned depth)
{
	struct bb_page pg;
	const uint8_t *k;
	size_t kl;
	uint64_t child;
	unsigned i;
	int rc;

	if (depth > BBOLT_MAX_DEPTH)
		return store_fail(w->err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu: the tree is deeper than "
				  "%d levels", (unsigned long long)id,
				  BBOLT_MAX_DEPTH);
	if (id < w->db->high_water && (w->seen[id / 8] & (1u << (id % 8))))
		return store_fail(w->err, STORE_EBADREPLY, NULL, 0, 0,
				  "bbolt: page %llu is linked twice",
				  (unsigned long long)id);
	rc = bb_page_read(w->db, id, &pg, w->err);
	if (rc < 0)
		return rc;
	w->seen[id / 8] |= (uint8_t)(1u << (id % 8));
	if (pg.flags == BBOLT_PAGE_LEAF) {
		rc = bb_walk_leaf(w, &pg);
		bb_page_release(&pg);
		return rc;
	}
	for (i = 0; i < pg.count; i++) {
		rc = bb_branch_elem(&pg, i, &k, &kl, &child, w->err);
		if (rc == 0)
			rc = bb_walk_page(w, child, depth + 1);
		if (rc)
			break;
	}
	bb_page_release(&pg);
	return rc;
}

int bbolt_foreach(struct bbolt *db, const struct bbolt_bucket *b,
		  bbolt_foreach_fn fn, void *arg, struct store_error *err)
{
	struct bb_walk w = {
		.db = db, .fn = fn, .arg = arg, .err = err,
	};
	struct bb_page pg;
	int rc;

	if (!b->root) {
		rc = bb_page_inline(b, &pg, err);
		if (rc == 0)
			rc = bb_walk_leaf(&w, &pg);
		free(w.last);
		return rc;
	}
	w.seen = calloc(db->high_water / 8 + 1, 1);
	if (!w.seen)
		return store_enomem(err, NULL, 0);
	rc = bb_walk_page(&w, b->root, 0);
	free(w.seen);
	free(w.last);
	return rc;
}

/* Why the meta at @m (of page @id) is not valid, or NULL if it is. */
static const char *bb_meta_bad(const uint8_t *hdr, const uint8_t *m,
			       uint64_t id, uint64_t len, char *why,
			       size_t size)
{
	uint32_t ps = le32(m + 8);
	uint64_t root = le64(m + 16), hw = le64(m + 40);

	if (le32(m) != BBOLT_MAGIC)
		snprintf(why, size, "magic 0x%08x, not 0x%08x", le32(m),
			 BBOLT_MAGIC);
	else if (le32(m + 4) != BBOLT_VERSION)
		snprintf(why, size, "version %u, not %d", le32(m + 4),
			 BBOLT_VERSION);
	else if (bbolt_fnv1a64(m, 56) != le64(m + 56))
		snprintf(why, size, "checksum mismatch");
	else if (!(le16(hdr + 8) & BBOLT_PAGE_META) || le64(hdr) != id)
		snprintf(why, size, "its page header is not meta page %llu's",
			 (unsigned long long)id);
	else if (ps < 512 || ps > (1u << 20) || (ps & (ps - 1)))
		snprintf(why, size, "page size %u", ps);
	else if (hw < 4 || hw > len / ps)
		snprintf(why, size, "%llu pages in use of %u bytes, and the "
			 "file holds %llu", (unsigned long long)hw, ps,
			 (unsigned long long)(len / ps));
	else if (root < 2 || root >= hw)
		snprintf(why, size, "root page %llu outside the pages in use",
			 (unsigned long long)root);
	else
		return NULL;
	return why;
}

/* Reads the meta of page @id at @off: *@ok and its fields, or why not. */
static int bb_meta_at(struct bbolt *db, uint64_t id, uint64_t off,
		      uint8_t *m, bool *ok, char *why, size_t size,
		      struct store_error *err)
{
	uint8_t buf[BBOLT_PAGE_HEADER + BBOLT_META_SIZE];
	int rc;

	*ok = false;
	memset(m, 0, BBOLT_META_SIZE);
	if (off > db->len || sizeof(buf) > db->len - off) {
		snprintf(why, size, "the file ends at %llu, before it",
			 (unsigned long long)db->len);
		return 0;
	}
	rc = bb_read(db, buf, sizeof(buf), off, err);
	if (rc < 0)
		return rc;
	memcpy(m, buf + BBOLT_PAGE_HEADER, BBOLT_META_SIZE);
	*ok = !bb_meta_bad(buf, m, id, db->len, why, size);
	return 0;
}

int bbolt_open(int fd, uint64_t len, struct bbolt **out,
	       struct store_error *err)
{
	uint8_t m[2][BBOLT_META_SIZE];
	char why[2][160];
	bool ok[2], magic = false;
	struct bbolt *db;
	uint32_t ps;
	int rc, pick;

	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return store_enomem(err, NULL, 0);
	db->fd = fd;
	db->len = len;
	rc = bb_meta_at(db, 0, 0, m[0], &ok[0], why[0], sizeof(why[0]), err);
	if (rc < 0)
		goto fail;
	/* meta 1 is one page on: meta 0's page size, else the usual ones */
	ok[1] = false;
	snprintf(why[1], sizeof(why[1]), "no page size gives a meta");
	if (ok[0]) {
		rc = bb_meta_at(db, 1, le32(m[0] + 8), m[1], &ok[1], why[1],
				sizeof(why[1]), err);
	} else {
		for (ps = 512; ps <= (1u << 20) && !ok[1]; ps <<= 1) {
			char w[160];

			rc = bb_meta_at(db, 1, ps, m[1], &ok[1], w, sizeof(w),
					err);
			if (rc < 0)
				goto fail;
			if (ok[1] && le32(m[1] + 8) != ps)
				ok[1] = false;
			/* why of the usual size, or of one with the magic */
			if (!ok[1] && (ps == 4096 || (le32(m[1]) ==
						      BBOLT_MAGIC && !magic))) {
				memcpy(why[1], w, sizeof(w));
				magic = magic || le32(m[1]) == BBOLT_MAGIC;
			}
		}
	}
	if (rc < 0)
		goto fail;
	if (!ok[0] && !ok[1]) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0,
				"not a bbolt file: meta page 0 (offset 0): "
				"%s; meta page 1: %s", why[0], why[1]);
		goto fail;
	}
	pick = !ok[0] || (ok[1] && le64(m[1] + 48) > le64(m[0] + 48));
	db->meta_page = (unsigned)pick;
	db->page_size = le32(m[pick] + 8);
	db->root = le64(m[pick] + 16);
	db->high_water = le64(m[pick] + 40);
	db->txid = le64(m[pick] + 48);
	*out = db;
	return 0;
fail:
	free(db);
	return rc;
}

void bbolt_close(struct bbolt *db)
{
	free(db);
}

void bbolt_get_info(const struct bbolt *db, struct bbolt_info *out)
{
	out->page_size = db->page_size;
	out->txid = db->txid;
	out->high_water = db->high_water;
	out->meta_page = db->meta_page;
}

void bbolt_root(const struct bbolt *db, struct bbolt_bucket *out)
{
	memset(out, 0, sizeof(*out));
	out->root = db->root;
}
