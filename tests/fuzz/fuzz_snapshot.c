/*
 * fuzz_snapshot.c - libFuzzer target for helper/snapshot.c and
 * helper/bbolt.c: an etcd snapshot file, hostile
 *
 * Each input is a whole file (the seeds: files of the real `etcdctl
 * snapshot save`, tests/fuzz/capture-snapshot.sh), put in a memfd and
 * opened twice: with the sha256 trailer checked (a mutation breaks it:
 * then it must be refused) and with it skipped, so that the mutations
 * reach the pages.  snapshot_open must return 0 or EINVAL (a message of
 * one line); an open snapshot must list its whole key space at its
 * newest and at its oldest revision with 0 or EBADREPLY, keys strictly
 * ascending, revisions within the one read at, create_revision at most
 * mod_revision, the count the keys; and read each key again alone,
 * the same.  It cannot find out-of-memory paths.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "snapshot.h"

static void check_list(struct snapshot *s, int64_t rev)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 }, one;
	int64_t count = -1;
	bool more = true;
	size_t i;
	int rc;

	rc = snapshot_range(s, "", 0, "", 1, rev, 0, false, &l, &more,
			    &count, &err);
	check(rc == 0 || rc == STORE_EBADREPLY);
	if (rc < 0) {
		fuzz_check_msg(err.msg, sizeof(err.msg));
		store_list_release(&l);
		return;
	}
	check(!more && count == (int64_t)l.n && l.revision == rev);
	for (i = 0; i < l.n; i++) {
		const struct store_kv *kv = &l.kvs[i];
		bool m;

		check(kv->key_len > 0 && kv->key[kv->key_len] == '\0');
		check(kv->value && kv->value[kv->value_len] == '\0');
		check(kv->mod_revision > 0 && kv->mod_revision <= rev);
		check(kv->create_revision > 0 &&
		      kv->create_revision <= kv->mod_revision);
		check(i == 0 || fuzz_cmp_bytes(l.kvs[i - 1].key,
					       l.kvs[i - 1].key_len, kv->key,
					       kv->key_len) < 0);
		memset(&one, 0, sizeof(one));
		rc = snapshot_range(s, kv->key, kv->key_len, NULL, 0, rev, 1,
				    true, &one, &m, NULL, &err);
		check(rc == 0 && one.n == 1 && !m);
		check(one.kvs[0].mod_revision == kv->mod_revision &&
		      !one.kvs[0].value);
		store_list_release(&one);
	}
	/* pages of one key: the same keys */
	if (l.n > 1) {
		memset(&one, 0, sizeof(one));
		rc = snapshot_range(s, "", 0, "", 1, rev, 1, true, &one,
				    &more, NULL, &err);
		check(rc == 0 && one.n == 1 && more);
		store_list_release(&one);
	}
	store_list_release(&l);
}

static void open_and_read(int fd, bool skip)
{
	struct store_error err = { 0 };
	struct snapshot_info info;
	struct snapshot *s = NULL;
	int dup_fd = dup(fd);
	int rc;

	check(dup_fd >= 0);
	rc = snapshot_open_fd(dup_fd, "fuzz", skip, &s, &err);
	check(rc == 0 || rc == STORE_EINVAL);
	if (rc < 0) {
		check(!s && err.code == rc);
		fuzz_check_msg(err.msg, sizeof(err.msg));
		return;
	}
	snapshot_get_info(s, &info);
	check(info.revision >= info.compact_revision &&
	      info.compact_revision >= 1);
	check(!info.hashed || skip || info.hash_checked);
	check(snapshot_check_revision(s, info.revision + 1, &err) ==
	      STORE_EINVAL);
	check(info.compact_revision == 1 ||
	      snapshot_check_revision(s, info.compact_revision - 1, &err) ==
	      STORE_ECOMPACTED);
	check_list(s, info.revision);
	if (info.compact_revision != info.revision)
		check_list(s, info.compact_revision);
	snapshot_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-snapshot", 0);

	check(fd >= 0);
	check(write(fd, data, size) == (ssize_t)size);
	open_and_read(fd, false);
	open_and_read(fd, true);
	close(fd);
	return 0;
}
