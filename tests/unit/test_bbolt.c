/*
 * test_bbolt.c - unit tests of helper/bbolt.c on hand-made tiny files
 *
 * A file of 512-byte pages built here byte by byte (two metas, a
 * freelist, a root leaf with a bucket of its own pages, an inline
 * bucket and a plain key; that bucket a branch over two leaves, one
 * with an overflow page) is read back whole, then damaged one way at a
 * time: a bad meta (the other serves), both bad, links out of the file,
 * a loop, positions past the page, an overflow past the pages in use,
 * keys out of order, a page that says it is another, a count too big, a
 * short file, an inline bucket too short.  Each damage must give its
 * error with the page it is at, never a crash (the sanitizer pass runs
 * this too).
 *
 * What it cannot test: real files (tests/integration/
 * test_store_snapshot.c reads those of etcdctl snapshot save).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bbolt.h"
#include "tap.h"

#define PS 512
#define NPAGES 8
#define S(lit) lit, sizeof(lit) - 1

static uint8_t img[NPAGES * PS];
static char big_val[700];

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static void header(uint8_t *p, uint64_t id, uint16_t flags, uint16_t count,
		   uint32_t overflow)
{
	put64(p, id);
	put16(p + 8, flags);
	put16(p + 10, count);
	put32(p + 12, overflow);
}

struct elem {
	uint32_t flags;
	const void *key;
	size_t key_len;
	const void *val;
	size_t val_len;
	uint64_t child;		/* branch */
};

/* A leaf (or branch) page of @n elements at @p; returns its length. */
static size_t page(uint8_t *p, uint64_t id, bool branch,
		   const struct elem *e, size_t n, uint32_t overflow)
{
	size_t i, data = BBOLT_PAGE_HEADER + n * BBOLT_ELEM_SIZE;

	header(p, id, branch ? BBOLT_PAGE_BRANCH : BBOLT_PAGE_LEAF,
	       (uint16_t)n, overflow);
	for (i = 0; i < n; i++) {
		uint8_t *el = p + BBOLT_PAGE_HEADER + i * BBOLT_ELEM_SIZE;
		uint32_t pos = (uint32_t)(data - (size_t)(el - p));

		if (branch) {
			put32(el, pos);
			put32(el + 4, (uint32_t)e[i].key_len);
			put64(el + 8, e[i].child);
		} else {
			put32(el, e[i].flags);
			put32(el + 4, pos);
			put32(el + 8, (uint32_t)e[i].key_len);
			put32(el + 12, (uint32_t)e[i].val_len);
		}
		memcpy(p + data, e[i].key, e[i].key_len);
		data += e[i].key_len;
		if (!branch) {
			memcpy(p + data, e[i].val, e[i].val_len);
			data += e[i].val_len;
		}
	}
	return data;
}

static void meta(uint8_t *p, uint64_t id, uint64_t txid, uint64_t root,
		 uint64_t high_water)
{
	uint8_t *m = p + BBOLT_PAGE_HEADER;

	header(p, id, BBOLT_PAGE_META, 0, 0);
	put32(m, BBOLT_MAGIC);
	put32(m + 4, BBOLT_VERSION);
	put32(m + 8, PS);
	put32(m + 12, 0);
	put64(m + 16, root);
	put64(m + 24, 0);
	put64(m + 32, 2);	/* the freelist */
	put64(m + 40, high_water);
	put64(m + 48, txid);
	put64(m + 56, bbolt_fnv1a64(m, 56));
}

static void build(void)
{
	uint8_t inl[128], bucket_big[16];
	size_t i, n;

	memset(img, 0, sizeof(img));
	for (i = 0; i < sizeof(big_val); i++)
		big_val[i] = (char)('a' + i % 26);
	meta(img, 0, 2, 3, NPAGES);
	meta(img + PS, 1, 1, 3, NPAGES);
	header(img + 2 * PS, 2, BBOLT_PAGE_FREELIST, 0, 0);

	/* the inline bucket's value: {root 0, sequence}, then its leaf */
	{
		struct elem e[] = {
			{ 0, S("x"), S("1"), 0 },
			{ 0, S("y"), S("2"), 0 },
		};

		memset(inl, 0, 16);
		n = page(inl + 16, 0, false, e, 2, 0);
	}
	memset(bucket_big, 0, sizeof(bucket_big));
	put64(bucket_big, 4);
	{
		struct elem e[] = {
			{ BBOLT_LEAF_BUCKET, S("big"), bucket_big, 16, 0 },
			{ BBOLT_LEAF_BUCKET, S("inl"), inl, 16 + n, 0 },
			{ 0, S("plain"), S("val"), 0 },
		};

		page(img + 3 * PS, 3, false, e, 3, 0);
	}
	{
		struct elem e[] = {
			{ 0, S("a"), NULL, 0, 5 },
			{ 0, S("m"), NULL, 0, 6 },
		};

		page(img + 4 * PS, 4, true, e, 2, 0);
	}
	{
		struct elem e[] = {
			{ 0, S("a"), S("A"), 0 },
			{ 0, S("b"), S("B"), 0 },
		};

		page(img + 5 * PS, 5, false, e, 2, 0);
	}
	{
		struct elem e[] = {
			{ 0, S("m"), big_val, sizeof(big_val), 0 },
			{ 0, S("n"), S("N"), 0 },
		};

		/* spans pages 6 and 7 */
		page(img + 6 * PS, 6, false, e, 2, 1);
	}
}

/* A file holding the first @len bytes of img. */
static int image_fd(size_t len)
{
	int fd = memfd_create("bbolt", 0);

	if (fd < 0)
		return -1;
	if (write(fd, img, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What a walk saw: the keys, joined by ',', '+' after a bucket's. */
struct seen {
	char keys[256];
	size_t len;
	size_t big_len;
	bool big_ok;
};

static int seen_fn(void *arg, const uint8_t *key, size_t key_len,
		   const uint8_t *val, size_t val_len, uint32_t flags)
{
	struct seen *s = arg;

	if (s->len + key_len + 3 > sizeof(s->keys))
		return -100;
	if (s->len)
		s->keys[s->len++] = ',';
	memcpy(s->keys + s->len, key, key_len);
	s->len += key_len;
	if (flags & BBOLT_LEAF_BUCKET)
		s->keys[s->len++] = '+';
	s->keys[s->len] = '\0';
	if (key_len == 1 && key[0] == 'm') {
		s->big_len = val_len;
		s->big_ok = val_len == sizeof(big_val) &&
			    memcmp(val, big_val, val_len) == 0;
	}
	return 0;
}

/* Opens img's first @len bytes: *@fd, *@db (NULL and err on failure). */
static int open_image(size_t len, int *fd, struct bbolt **db,
		      struct store_error *err)
{
	memset(err, 0, sizeof(*err));
	*db = NULL;
	*fd = image_fd(len);
	if (*fd < 0)
		return STORE_EINTERNAL;
	return bbolt_open(*fd, len, db, err);
}

static void close_image(int fd, struct bbolt *db)
{
	bbolt_close(db);
	close(fd);
}

/* Walks bucket "big" of img: its return, what it saw in @s. */
static int walk_big(struct seen *s, struct store_error *err)
{
	struct bbolt_bucket root, big;
	struct bbolt *db;
	int fd, rc;

	memset(s, 0, sizeof(*s));
	rc = open_image(sizeof(img), &fd, &db, err);
	if (rc < 0)
		return rc;
	bbolt_root(db, &root);
	rc = bbolt_bucket(db, &root, S("big"), &big, err);
	if (rc == 0)
		rc = bbolt_foreach(db, &big, seen_fn, s, err);
	bbolt_bucket_release(&big);
	close_image(fd, db);
	return rc;
}

static bool test_whole(void)
{
	struct store_error err;
	struct bbolt_bucket root, b;
	struct bbolt_info info;
	struct bbolt *db;
	struct seen s = { .len = 0 };
	uint8_t *v;
	size_t vl;
	int fd;

	build();
	CHECK(open_image(sizeof(img), &fd, &db, &err) == 0);
	bbolt_get_info(db, &info);
	CHECK(info.page_size == PS && info.txid == 2 && info.meta_page == 0);
	bbolt_root(db, &root);
	CHECK(bbolt_foreach(db, &root, seen_fn, &s, &err) == 0);
	CHECK(strcmp(s.keys, "big+,inl+,plain") == 0);

	CHECK(bbolt_bucket(db, &root, S("big"), &b, &err) == 0);
	memset(&s, 0, sizeof(s));
	CHECK(bbolt_foreach(db, &b, seen_fn, &s, &err) == 0);
	CHECK(strcmp(s.keys, "a,b,m,n") == 0);
	CHECK(s.big_ok);
	CHECK(bbolt_get(db, &b, S("n"), &v, &vl, &err) == 0);
	CHECK(vl == 1 && v[0] == 'N' && v[1] == '\0');
	free(v);
	CHECK(bbolt_get(db, &b, S("m"), &v, &vl, &err) == 0);
	CHECK(vl == sizeof(big_val) && memcmp(v, big_val, vl) == 0);
	free(v);
	CHECK(bbolt_get(db, &b, S("a"), &v, &vl, &err) == 0);
	CHECK(vl == 1 && v[0] == 'A');
	free(v);
	CHECK(bbolt_get(db, &b, S("0"), &v, &vl, &err) == STORE_ENOTFOUND);
	CHECK(bbolt_get(db, &b, S("c"), &v, &vl, &err) == STORE_ENOTFOUND);
	CHECK(bbolt_get(db, &b, S("zz"), &v, &vl, &err) == STORE_ENOTFOUND);
	bbolt_bucket_release(&b);

	CHECK(bbolt_bucket(db, &root, S("inl"), &b, &err) == 0);
	CHECK(b.root == 0 && b.inline_page);
	memset(&s, 0, sizeof(s));
	CHECK(bbolt_foreach(db, &b, seen_fn, &s, &err) == 0);
	CHECK(strcmp(s.keys, "x,y") == 0);
	CHECK(bbolt_get(db, &b, S("y"), &v, &vl, &err) == 0);
	CHECK(vl == 1 && v[0] == '2');
	free(v);
	bbolt_bucket_release(&b);

	/* a plain key is no bucket, a bucket no plain key */
	CHECK(bbolt_bucket(db, &root, S("plain"), &b, &err) ==
	      STORE_ENOTFOUND);
	CHECK(bbolt_get(db, &root, S("big"), &v, &vl, &err) ==
	      STORE_ENOTFOUND);
	CHECK(bbolt_get(db, &root, S("plain"), &v, &vl, &err) == 0);
	CHECK(vl == 3 && memcmp(v, "val", 3) == 0);
	free(v);
	close_image(fd, db);
	return true;
}

/* The current meta is the valid one with the higher txid. */
static bool test_metas(void)
{
	struct store_error err;
	struct bbolt_info info;
	struct bbolt *db;
	int fd;

	build();
	img[16 + 20] ^= 1;	/* meta 0's root: its checksum fails */
	CHECK(open_image(sizeof(img), &fd, &db, &err) == 0);
	bbolt_get_info(db, &info);
	CHECK(info.meta_page == 1 && info.txid == 1);
	close_image(fd, db);

	build();
	meta(img + PS, 1, 5, 3, NPAGES);	/* meta 1 newer */
	CHECK(open_image(sizeof(img), &fd, &db, &err) == 0);
	bbolt_get_info(db, &info);
	CHECK(info.meta_page == 1 && info.txid == 5);
	close_image(fd, db);

	build();
	img[16 + 20] ^= 1;
	img[PS + 16] ^= 1;	/* meta 1's magic */
	CHECK(open_image(sizeof(img), &fd, &db, &err) == STORE_EINVAL);
	CHECK(strstr(err.msg, "meta page 0 (offset 0): checksum mismatch; "
		      "meta page 1: "));

	/* a root page outside the pages in use */
	build();
	meta(img, 0, 2, 8, NPAGES);
	meta(img + PS, 1, 1, 1, NPAGES);
	CHECK(open_image(sizeof(img), &fd, &db, &err) == STORE_EINVAL);
	CHECK(strstr(err.msg, "root page 8 outside the pages in use"));

	/* a file shorter than the pages the metas say are in use */
	build();
	CHECK(open_image(6 * PS, &fd, &db, &err) == STORE_EINVAL);
	CHECK(strstr(err.msg, "8 pages in use of 512 bytes, and the file "
		      "holds 6"));
	close(fd);
	CHECK(open_image(40, &fd, &db, &err) == STORE_EINVAL);
	CHECK(strstr(err.msg, "not a bbolt file"));
	close(fd);
	return true;
}

/* Damages @build's image with @poke, walks "big": the error holds @what. */
static bool damaged(const char *what)
{
	struct store_error err;
	struct seen s;
	int rc = walk_big(&s, &err);

	if (rc != STORE_EBADREPLY || !strstr(err.msg, what)) {
		tap_diag("walk: %d '%s', not '%s'", rc, err.msg, what);
		return false;
	}
	return true;
}

static bool test_damage(void)
{
	struct store_error err;
	struct bbolt_bucket root, big;
	struct bbolt *db;
	uint8_t *v;
	size_t vl;
	int fd;

	/* a link out of the pages in use */
	build();
	put64(img + 4 * PS + 16 + 16 + 8, 99);
	CHECK(damaged("a link to page 99, outside the pages in use"));

	/* a loop: the branch links to itself */
	build();
	put64(img + 4 * PS + 16 + 16 + 8, 4);
	CHECK(damaged("page 4 is linked twice"));
	CHECK(open_image(sizeof(img), &fd, &db, &err) == 0);
	bbolt_root(db, &root);
	CHECK(bbolt_bucket(db, &root, S("big"), &big, &err) == 0);
	CHECK(bbolt_get(db, &big, S("n"), &v, &vl, &err) == STORE_EBADREPLY);
	CHECK(strstr(err.msg, "deeper than"));
	bbolt_bucket_release(&big);
	close_image(fd, db);

	/* a key past its page */
	build();
	put32(img + 5 * PS + 16 + 16 + 4, PS);
	CHECK(damaged("page 5: element 1 (1 + 1 bytes at 544) runs past the "
		      "page (512 bytes)"));
	build();
	put32(img + 4 * PS + 16 + 4, 0xffffffffu);
	CHECK(damaged("page 4: element 0's key"));

	/* an overflow past the pages in use */
	build();
	put32(img + 6 * PS + 12, 2);
	CHECK(damaged("page 6: 2 overflow pages run past the pages in use"));

	/* keys out of order */
	build();
	img[5 * PS + 16 + 2 * 16 + 0] = 'c';	/* "a" -> "c", after "b"? */
	CHECK(damaged("page 5: element 1 is out of key order"));

	/* a page that says it is another */
	build();
	put64(img + 5 * PS, 9);
	CHECK(damaged("page 5 (offset 2560) says it is page 9"));

	/* more elements than the page holds */
	build();
	put16(img + 5 * PS + 10, 40);
	CHECK(damaged("page 5: 40 elements do not fit in its 512 bytes"));

	/* a tree page that is neither */
	build();
	put16(img + 5 * PS + 8, BBOLT_PAGE_META);
	CHECK(damaged("page 5: flags 0x4, not a branch or leaf page"));
	return true;
}

static bool test_inline_short(void)
{
	struct store_error err;
	struct bbolt_bucket b = { .root = 0 };
	struct bbolt *db;
	struct seen s = { .len = 0 };
	uint8_t small[8] = { 0 };
	int fd;

	build();
	CHECK(open_image(sizeof(img), &fd, &db, &err) == 0);
	b.inline_page = small;
	b.inline_len = sizeof(small);
	CHECK(bbolt_foreach(db, &b, seen_fn, &s, &err) == STORE_EBADREPLY);
	CHECK(strstr(err.msg, "shorter than a page header"));
	close_image(fd, db);
	return true;
}

int main(void)
{
	tap_plan(4);
	TAP_RUN(test_whole);
	TAP_RUN(test_metas);
	TAP_RUN(test_damage);
	TAP_RUN(test_inline_short);
	return tap_done(4);
}
