/*
 * test_store_snapshot.c - the store over an etcd snapshot file
 * (store_config.snapshot: helper/store_snapshot.c, snapshot.c, bbolt.c)
 * against the live etcd it was saved from
 *
 * Runs under tests/lib/with-etcd.  Writes a history into the private etcd
 * (puts, overwrites, deletes and re-creations, binary keys and values, a
 * value that spans overflow pages, keys enough for branch pages, a key
 * with a lease, a compaction, writes after it), saves it with the real
 * `etcdctl snapshot save`, then compares, at every revision from the
 * compaction to the newest, every key, revision and value the snapshot
 * store lists with what `etcdctl get --rev` answers on the live etcd.
 * Then: revisions refused (compacted, future), a key's history, writes
 * refused and the file untouched, damaged copies (truncated, flipped
 * bytes, a bad hash, bad metas, no bbolt at all, bytes overwritten at
 * many places), a file that shrinks under an open store, and a member's
 * own db copied from its data dir (no trailer).
 *
 * What it cannot test: etcd 3.6 files (not in Debian); it relies on
 * with-etcd's layout (the etcd's data dir next to the scratch dir) to
 * find the member's db.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"

static char *snap_file;		/* the saved snapshot */
static int64_t compact_rev;	/* what the test compacted at */
static int64_t newest_rev;	/* etcd's revision when saved */
static int64_t lease_id;
static int64_t hist_revs[3];	/* the puts of /s/h, after the compaction */

static const char bin_key[] = "/s/bin/\x00\xff\x01k";
static const char bin_val[] = "\x00\x01\xfe\xff value \x00";

static struct store *snap_open(const char *file, int64_t rev, size_t page,
			       bool skip, struct store_error *err)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.snapshot = file,
		.revision = rev,
		.page_size = page,
		.skip_hash_check = skip,
	};

	memset(err, 0, sizeof(*err));
	return store_new(&cfg, err);
}

/* Puts @n keys /s/many/<base + i> in one txn (one revision). */
static bool txn_puts(int base, int n)
{
	char *path = util_fmt("%s/txn", util_scratch);
	FILE *f = fopen(path, "w");
	int i, rc;

	if (!f)
		return false;
	fputs("\n", f);
	for (i = 0; i < n; i++)
		fprintf(f, "put /s/many/%04d value-%d\n", base + i, base + i);
	fputs("\n\n", f);
	fclose(f);
	rc = util_sh("%s txn <'%s' >/dev/null", ctl_cmd, path);
	free(path);
	return rc == 0;
}

static bool test_history_written(void)
{
	struct store_error err = { 0 };
	struct store *w = ctl_store_open("");
	char big[100000];
	char line[256];
	size_t i;
	int k;

	CHECK(w);
	for (k = 0; k < 20; k++) {
		char key[32], val[32];

		snprintf(key, sizeof(key), "/s/a/k%02d", k);
		snprintf(val, sizeof(val), "v%d", k);
		CHECK(ctl_put(key, val));
	}
	CHECK(ctl_put("/s/a/k03", "v3-b"));
	CHECK(ctl_put("/s/a/k03", "v3-c"));
	CHECK(ctl_del("/s/a/k05") && ctl_del("/s/a/k06"));
	CHECK(ctl_put("/s/a/k05", "again"));
	CHECK_RC(store_create(w, bin_key, sizeof(bin_key) - 1, bin_val,
			      sizeof(bin_val) - 1, 0, NULL, &err), STORE_OK);
	CHECK_RC(store_create(w, S("/s/bin/gone\xff"), S("x"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_delete(w, S("/s/bin/gone\xff"), NULL, NULL, NULL,
			      &err), STORE_OK);
	/* a value over many pages: overflow pages */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 251);
	CHECK_RC(store_create(w, S("/s/big"), big, sizeof(big), 0, NULL,
			      &err), STORE_OK);
	/* keys enough for branch pages */
	CHECK(txn_puts(0, 100) && txn_puts(100, 100) && txn_puts(200, 100));
	CHECK(util_run(line, sizeof(line), "%s lease grant 3600", ctl_cmd) ==
	      0);
	CHECK(sscanf(line, "lease %" SCNx64 " granted", &lease_id) == 1);
	CHECK(util_sh("%s put --lease=%" PRIx64 " /s/l/k leased >/dev/null",
		      ctl_cmd, lease_id) == 0);

	compact_rev = ctl_revision() - 2;
	CHECK(util_sh("%s compact %" PRId64 " >/dev/null", ctl_cmd,
		      compact_rev) == 0);
	for (k = 0; k < 3; k++) {
		char val[32];

		snprintf(val, sizeof(val), "h%d", k);
		CHECK(ctl_put("/s/h", val));
		hist_revs[k] = ctl_mod("/s/h");
	}
	CHECK(ctl_put("/s/a/k03", "v3-d"));
	CHECK(ctl_del("/s/a/k07"));
	CHECK(ctl_del("/s/many/0150"));
	CHECK(ctl_put("/s/a/k07", "back"));
	newest_rev = ctl_revision();
	store_free(w);

	snap_file = util_fmt("%s/snap.db", util_scratch);
	CHECK(util_sh("%s snapshot save '%s' >/dev/null 2>&1", ctl_cmd,
		      snap_file) == 0);
	return true;
}

/* The snapshot store's listing of everything equals etcdctl's at @rev. */
static bool same_at(const char *file, int64_t rev, size_t page)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct ctl_list c;
	struct store *s;
	char *args;
	size_t i;
	bool ok;

	s = snap_open(file, rev, page, false, &err);
	if (!s)
		tap_diag("revision %" PRId64 ": %s", rev, err.msg);
	CHECK(s);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	args = rev ? util_fmt("--from-key '' --rev=%" PRId64, rev) :
		     util_fmt("--from-key ''");
	ok = ctl_range(ctl_cmd, args, &c);
	free(args);
	store_free(s);
	CHECK(ok);
	if (l.n != c.n)
		tap_diag("revision %" PRId64 ": %zu keys, etcd has %zu", rev,
			 l.n, c.n);
	for (i = 0; ok && i < l.n && i < c.n; i++) {
		const struct store_kv *a = &l.kvs[i];
		const struct ctl_kv *b = &c.kvs[i];

		if (!util_mem_is(a->key, a->key_len, b->key, b->key_len) ||
		    !util_mem_is(a->value, a->value_len, b->value,
				 b->value_len) ||
		    a->create_revision != b->create_revision ||
		    a->mod_revision != b->mod_revision ||
		    a->version != b->version || a->lease != b->lease) {
			tap_diag("revision %" PRId64 ": key %zu '%s' differs "
				 "from etcd's '%s'", rev, i,
				 util_show(a->key, a->key_len),
				 util_show(b->key, b->key_len));
			ok = false;
		}
	}
	ok = ok && l.n == c.n && (rev == 0 || l.revision == rev);
	store_list_release(&l);
	ctl_list_release(&c);
	return ok;
}

static bool test_every_revision(void)
{
	int64_t r;

	CHECK(snap_file);
	for (r = compact_rev; r <= newest_rev; r++)
		CHECK(same_at(snap_file, r, 7));
	/* unpinned: the newest; and in one page */
	CHECK(same_at(snap_file, 0, 0));
	return true;
}

static bool test_revisions_refused(void)
{
	struct store_error err;
	struct store *s;
	int64_t now = 0, oldest = 0;
	char want[128];

	CHECK(snap_file);
	s = snap_open(snap_file, compact_rev - 1, 0, false, &err);
	CHECK(!s && err.code == STORE_ECOMPACTED);
	snprintf(want, sizeof(want), "oldest revision the snapshot keeps is "
		 "%" PRId64, compact_rev);
	CHECK(strstr(err.msg, want));
	s = snap_open(snap_file, newest_rev + 1, 0, false, &err);
	CHECK(!s && err.code == STORE_EINVAL);
	snprintf(want, sizeof(want), "newest is %" PRId64, newest_rev);
	CHECK(strstr(err.msg, want));

	s = snap_open(snap_file, 0, 0, false, &err);
	CHECK(s);
	CHECK_RC(store_revision(s, &now, &err), STORE_OK);
	CHECK(now == newest_rev);
	CHECK_RC(store_check_revision(s, compact_rev - 1, &now, &oldest,
				      &err), STORE_ECOMPACTED);
	CHECK(oldest == compact_rev);
	CHECK_RC(store_check_revision(s, compact_rev, &now, &oldest, &err),
		 STORE_OK);
	store_free(s);
	return true;
}

static bool test_reads(void)
{
	struct store_error err = { 0 };
	struct store_version *v = NULL;
	struct store_status status;
	struct store_kv kv = { 0 };
	struct store *s;
	struct stat st;
	int64_t ttl = 0;
	size_t n = 0;
	bool more;

	CHECK(snap_file);
	s = snap_open(snap_file, 0, 0, false, &err);
	CHECK(s);
	/* df's numbers: the file, and the pages bbolt uses in it */
	CHECK_RC(store_status(s, &status, &err), STORE_OK);
	CHECK(stat(snap_file, &st) == 0);
	CHECK(status.db_size == st.st_size && !status.nospace);
	CHECK(status.db_size_in_use > 0 &&
	      status.db_size_in_use == st.st_size - 32);
	CHECK_RC(store_get(s, bin_key, sizeof(bin_key) - 1, 0, &kv, &err),
		 STORE_OK);
	CHECK(util_mem_is(kv.value, kv.value_len, bin_val,
			  sizeof(bin_val) - 1));
	store_kv_release(&kv);
	CHECK_RC(store_get(s, S("/s/bin/gone\xff"), 0, &kv, &err),
		 STORE_ENOTFOUND);
	CHECK_RC(store_get(s, S("/s/l/k"), 0, &kv, &err), STORE_OK);
	CHECK(kv.lease == lease_id);
	CHECK_RC(store_key_ttl(s, S("/s/l/k"), kv.lease, &ttl, &err),
		 STORE_OK);
	CHECK(ttl == 3600);
	store_kv_release(&kv);

	/* every revision the file holds, and no more */
	CHECK_RC(store_key_history(s, S("/s/h"), 10, &v, &n, &more, &err),
		 STORE_OK);
	CHECK(n == 3 && !more);
	CHECK(v[0].mod_revision == hist_revs[0] &&
	      v[1].mod_revision == hist_revs[1] &&
	      v[2].mod_revision == hist_revs[2]);
	free(v);
	/* k03: v3-c is still current at the compaction, then v3-d */
	CHECK_RC(store_key_history(s, S("/s/a/k03"), 10, &v, &n, &more,
				   &err), STORE_OK);
	/* as etcd reads it: v3-c is readable at the compaction only */
	CHECK(n == 1 && v[0].mod_revision == ctl_mod("/s/a/k03"));
	free(v);
	store_free(s);

	/* a prefix store */
	{
		struct store_config cfg = {
			.api = STORE_API_V3, .snapshot = snap_file,
			.prefix = "/s/a/",
		};
		struct store_list l = { 0 };

		s = store_new(&cfg, &err);
		CHECK(s);
		CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
		CHECK(l.n == 19);	/* 20, k06 deleted */
		CHECK(util_mem_is(l.kvs[0].key, l.kvs[0].key_len, S("k00")));
		store_list_release(&l);
		store_free(s);
	}
	return true;
}

static bool test_writes_refused(void)
{
	struct store_error err = { 0 };
	struct stat before, after;
	struct store *s;
	int64_t id = 0;
	char *sum0, *sum1;

	CHECK(snap_file);
	CHECK(stat(snap_file, &before) == 0);
	sum0 = util_sh_out("sha256sum '%s'", snap_file);
	s = snap_open(snap_file, 0, 0, false, &err);
	CHECK(s);
	CHECK_RC(store_create(s, S("/s/new"), S("x"), 0, NULL, &err),
		 STORE_ENOTSUP);
	CHECK(strstr(err.msg, "read-only"));
	CHECK_RC(store_delete(s, S("/s/a/k00"), NULL, NULL, NULL, &err),
		 STORE_ENOTSUP);
	CHECK_RC(store_lease_grant(s, 60, &id, &err), STORE_ENOTSUP);
	store_free(s);
	sum1 = util_sh_out("sha256sum '%s'", snap_file);
	CHECK(stat(snap_file, &after) == 0);
	CHECK(sum0 && sum1 && strcmp(sum0, sum1) == 0);
	CHECK(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
	      before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
	free(sum0);
	free(sum1);
	return true;
}

/* A copy of the snapshot named @name, made by the shell command @how. */
static char *damaged(const char *name, const char *how)
{
	char *p = util_fmt("%s/%s", util_scratch, name);

	if (util_sh("cp '%s' '%s' && f='%s' && %s", snap_file, p, p, how) !=
	    0) {
		free(p);
		return NULL;
	}
	return p;
}

/* Opening @file fails with EINVAL and a message holding @what. */
static bool refused(const char *file, bool skip, const char *what)
{
	struct store_error err;
	struct store *s = snap_open(file, 0, 0, skip, &err);

	if (s) {
		store_free(s);
		tap_diag("'%s' opened", file);
		return false;
	}
	if (err.code != STORE_EINVAL || !strstr(err.msg, what)) {
		tap_diag("'%s': %d '%s', not '%s'", file, err.code, err.msg,
			 what);
		return false;
	}
	return true;
}

/* Writes byte @b at @off of $f (the shell's). */
#define POKE(off, b) "printf '\\x" b "' | dd of=\"$f\" bs=1 seek=" off \
	" conv=notrunc status=none"

static bool test_damaged(void)
{
	struct store_error err;
	struct store_list l = { 0 };
	struct store *s;
	char *f;
	int i, opened = 0;

	CHECK(snap_file);
	/* one byte flipped past the metas: the hash says so */
	f = damaged("flip", POKE("9000", "5a"));
	CHECK(f && refused(f, false, "sha256 mismatch"));
	free(f);
	/* meta 0 broken: refused by the hash; meta 1 serves without it */
	f = damaged("meta0", POKE("40", "ff"));
	CHECK(f && refused(f, false, "sha256 mismatch"));
	s = snap_open(f, 0, 0, true, &err);
	CHECK(s);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n > 300);
	store_list_release(&l);
	store_free(s);
	free(f);
	/* both metas broken */
	f = damaged("metas", POKE("16", "00") " && " POKE("4112", "00"));
	CHECK(f && refused(f, true, "not a bbolt file: meta page 0 "
			   "(offset 0): magic"));
	free(f);
	/* truncated: no trailer any more, pages missing */
	f = damaged("short", "truncate -s 12288 \"$f\"");
	CHECK(f && refused(f, false, "the file holds 3"));
	free(f);
	f = damaged("empty", "truncate -s 0 \"$f\"");
	CHECK(f && refused(f, false, "not a bbolt file"));
	free(f);
	f = damaged("text", "head -c 8192 /etc/services >\"$f\"");
	CHECK(f && refused(f, false, "not a bbolt file: meta page 0 "
			   "(offset 0): magic"));
	free(f);
	CHECK(refused(util_scratch, false, "not a regular file"));

	/*
	 * Bytes overwritten all over the pages, the hash skipped: each copy
	 * is refused with a message, or opens and lists; never a crash (the
	 * sanitizer pass runs this too).
	 */
	for (i = 0; i < 60; i++) {
		char name[32], *how;

		snprintf(name, sizeof(name), "poke%d", i);
		how = util_fmt("printf '\\x%02x\\x%02x\\x%02x' | dd of=\"$f\" "
			       "bs=1 seek=%d conv=notrunc status=none",
			       (i * 37) & 0xff, (i * 91 + 3) & 0xff, i & 0xff,
			       8192 + i * 1531 + (i % 7) * 8);
		f = damaged(name, how);
		free(how);
		CHECK(f);
		s = snap_open(f, 0, 0, true, &err);
		if (s) {
			opened++;
			if (store_list(s, "", 0, 0, &l, &err) < 0)
				CHECK(err.msg[0]);
			store_list_release(&l);
			store_free(s);
		} else {
			CHECK(err.code == STORE_EINVAL && err.msg[0]);
		}
		unlink(f);
		free(f);
	}
	tap_diag("%d of 60 damaged copies opened", opened);
	return true;
}

static bool test_shrinks(void)
{
	struct store_error err;
	struct store_list l = { 0 };
	struct store *s;
	char *f;

	CHECK(snap_file);
	f = damaged("shrinks", "true");
	CHECK(f);
	s = snap_open(f, 0, 0, false, &err);
	CHECK(s);
	CHECK(util_sh("truncate -s 8192 '%s'", f) == 0);
	CHECK_RC(store_list(s, "/s/big", 6, 0, &l, &err), STORE_EBADREPLY);
	CHECK(strstr(err.msg, "shrank"));
	store_list_release(&l);
	store_free(s);
	free(f);
	return true;
}

static bool test_member_db(void)
{
	char *db = util_fmt("%s/member.db", util_scratch);
	bool ok;

	CHECK(util_sh("cp '%s/../etcd/data/member/snap/db' '%s'",
		      util_scratch, db) == 0);
	ok = same_at(db, 0, 0) && same_at(db, compact_rev, 5);
	free(db);
	return ok;
}

int main(void)
{
	if (!ctl_setup())
		return 1;
	tap_plan(8);
	TAP_RUN(test_history_written);
	TAP_RUN(test_every_revision);
	TAP_RUN(test_revisions_refused);
	TAP_RUN(test_reads);
	TAP_RUN(test_writes_refused);
	TAP_RUN(test_damaged);
	TAP_RUN(test_shrinks);
	TAP_RUN(test_member_db);
	free(snap_file);
	return tap_done(8);
}
