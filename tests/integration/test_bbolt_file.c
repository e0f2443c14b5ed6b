/*
 * test_bbolt_file.c - helper/bbolt.c on the file of a real `etcdctl
 * snapshot save`
 *
 * Runs under tests/lib/with-etcd: writes keys enough for branch pages
 * (txns of 100 puts) and a value that spans overflow pages, saves a
 * snapshot, and reads it with bbolt alone, without the trailer: the
 * top-level names are etcd's buckets, bucket "key" holds one entry per
 * change (etcd's revision minus its first, as many as the keys put plus
 * the overwrites), in revision order, and each revision can be found
 * again by lookup; the big value reads back whole.
 *
 * What it cannot test: etcd's schema (test_store_snapshot.c does).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "bbolt.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"

#define N_TXNS 4
#define PER_TXN 100

struct walk {
	char names[512];
	size_t len;
	size_t n;
	uint8_t last[18];
	bool ordered;
	uint8_t (*revs)[17];
	size_t cap;
};

static int name_fn(void *arg, const uint8_t *key, size_t key_len,
		   const uint8_t *val, size_t val_len, uint32_t flags)
{
	struct walk *w = arg;

	if (!(flags & BBOLT_LEAF_BUCKET) ||
	    w->len + key_len + 2 > sizeof(w->names))
		return 1;
	if (!w->len)
		w->names[w->len++] = ' ';
	memcpy(w->names + w->len, key, key_len);
	w->len += key_len;
	w->names[w->len++] = ' ';
	w->names[w->len] = '\0';
	return 0;
}

static int rev_fn(void *arg, const uint8_t *key, size_t key_len,
		  const uint8_t *val, size_t val_len, uint32_t flags)
{
	struct walk *w = arg;

	if (flags || key_len != 17 || key[8] != '_' || w->n == w->cap)
		return 1;
	if (w->n && memcmp(w->last, key, 17) >= 0)
		w->ordered = false;
	memcpy(w->last, key, 17);
	memcpy(w->revs[w->n++], key, 17);
	return 0;
}

static bool test_snapshot_file(void)
{
	struct store_error err = { 0 };
	struct bbolt_bucket root, keys;
	struct walk w = { .ordered = true };
	struct bbolt_info info;
	struct bbolt *db;
	struct stat st;
	char *file = util_fmt("%s/snap.db", util_scratch);
	char *txn = util_fmt("%s/txn", util_scratch);
	uint8_t *v;
	size_t vl, i;
	int64_t rev;
	uint64_t last;
	int fd, t, k;
	FILE *f;

	for (t = 0; t < N_TXNS; t++) {
		f = fopen(txn, "w");
		CHECK(f);
		fputs("\n", f);
		for (k = 0; k < PER_TXN; k++)
			fprintf(f, "put /b/%d/%03d some-value-%d\n", t, k, k);
		fputs("\n\n", f);
		fclose(f);
		CHECK(util_sh("%s txn <'%s' >/dev/null", ctl_cmd, txn) == 0);
	}
	CHECK(util_sh("head -c 30000 /dev/urandom | %s put /b/big >/dev/null",
		      ctl_cmd) == 0);
	CHECK(ctl_put("/b/0/000", "again"));
	rev = ctl_revision();
	CHECK(util_sh("%s snapshot save '%s' >/dev/null 2>&1", ctl_cmd,
		      file) == 0);

	fd = open(file, O_RDONLY);
	CHECK(fd >= 0 && fstat(fd, &st) == 0);
	CHECK(st.st_size % 512 == 32);	/* the sha256 trailer */
	CHECK(bbolt_open(fd, (uint64_t)st.st_size - 32, &db, &err) == 0);
	bbolt_get_info(db, &info);
	CHECK(info.page_size == (uint32_t)sysconf(_SC_PAGESIZE));
	CHECK(info.high_water * info.page_size <=
	      (uint64_t)st.st_size - 32);
	bbolt_root(db, &root);
	CHECK(bbolt_foreach(db, &root, name_fn, &w, &err) == 0);
	tap_diag("buckets:%s", w.names);
	CHECK(strstr(w.names, " key ") && strstr(w.names, " meta ") &&
	      strstr(w.names, " lease ") && strstr(w.names, " members "));

	CHECK(bbolt_bucket(db, &root, S("key"), &keys, &err) == 0);
	CHECK(keys.root != 0);	/* pages of its own, not inline */
	w.cap = N_TXNS * PER_TXN + 10;
	w.revs = calloc(w.cap, 17);
	CHECK(w.revs);
	CHECK(bbolt_foreach(db, &keys, rev_fn, &w, &err) == 0);
	/* every change since revision 1, each once, in order */
	CHECK(w.n == (size_t)(N_TXNS * PER_TXN + 2));
	CHECK(w.ordered);
	/* the last change is etcd's revision: 8 bytes big-endian */
	for (i = 0, last = 0; i < 8; i++)
		last = last << 8 | w.revs[w.n - 1][i];
	CHECK(last == (uint64_t)rev);
	for (i = 0; i < w.n; i += 37) {
		CHECK(bbolt_get(db, &keys, w.revs[i], 17, &v, &vl, &err) == 0);
		CHECK(vl > 0);
		free(v);
	}
	/* the big value: its revision is the last but one */
	CHECK(bbolt_get(db, &keys, w.revs[w.n - 2], 17, &v, &vl, &err) == 0);
	CHECK(vl > 30000 && vl < 30100);
	free(v);
	CHECK(bbolt_get(db, &keys, "nope", 4, &v, &vl, &err) ==
	      STORE_ENOTFOUND);
	free(w.revs);
	bbolt_bucket_release(&keys);
	bbolt_close(db);
	close(fd);
	free(file);
	free(txn);
	return true;
}

int main(void)
{
	if (!ctl_setup())
		return 1;
	tap_plan(1);
	TAP_RUN(test_snapshot_file);
	return tap_done(1);
}
