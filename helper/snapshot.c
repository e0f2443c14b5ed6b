/*
 * snapshot.c - etcd's schema on a bbolt file: the key space of a
 * snapshot at any revision it keeps (snapshot.h)
 *
 * At open: the sha256 trailer, the metas (bbolt.c), bucket "meta" (the
 * compaction), bucket "lease", then one walk over bucket "key" that
 * decodes every mvccpb.KeyValue into an index sorted by key, then
 * revision.  A range at revision R finds its first key by binary search
 * and takes, for each key, the last entry of its run at most R.  Values
 * are read from the file again when asked for (bbolt_get of the
 * revision), so the index holds keys and numbers only.
 *
 * What it cannot do: keep its memory under the size of the keys of every
 * revision the file holds; see snapshot.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "bbolt.h"
#include "kv.pb-c.h"
#include "snapshot.h"

#define SNAP_REV_LEN	17	/* main, '_', sub */

/* One entry of bucket "key". */
struct snap_rev {
	char *key;		/* owned, NUL-terminated past key_len */
	size_t key_len;
	int64_t main;
	int64_t sub;
	bool tombstone;
	int64_t create_revision;
	int64_t version;
	int64_t lease;
};

struct snap_lease {
	int64_t id;
	int64_t ttl;
};

struct snapshot {
	int fd;				/* owned, read-only */
	char *name;			/* owned: the path, for messages */
	struct bbolt *db;
	struct bbolt_bucket keys;	/* bucket "key" */
	struct snap_rev *revs;		/* owned; by key, main, sub */
	size_t n_revs, cap_revs;
	struct snap_lease *leases;	/* owned, sorted by id */
	size_t n_leases, cap_leases;
	struct snapshot_info info;
};

static int64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

static void be64_put(uint8_t *p, int64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v = (int64_t)((uint64_t)v >> 8);
	}
}

/* --- the sha256 trailer --- */

static int snap_hash(struct snapshot *s, uint64_t len, bool skip,
		     struct store_error *err)
{
	uint8_t want[SNAPSHOT_HASH_SIZE], got[EVP_MAX_MD_SIZE];
	unsigned got_len = 0;
	char wh[2 * SNAPSHOT_HASH_SIZE + 1], gh[2 * SNAPSHOT_HASH_SIZE + 1];
	EVP_MD_CTX *ctx;
	uint8_t *buf;
	uint64_t off = 0;
	ssize_t r;
	int i, rc = 0;

	s->info.hashed = true;
	if (skip)
		return 0;
	if (pread(s->fd, want, sizeof(want), (off_t)len) !=
	    (ssize_t)sizeof(want))
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "cannot read its sha256 trailer");
	buf = malloc(1 << 20);
	ctx = EVP_MD_CTX_new();
	if (!buf || !ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		rc = store_enomem(err, NULL, 0);
		goto out;
	}
	while (off < len) {
		size_t n = len - off < (1 << 20) ? (size_t)(len - off) :
			   (1 << 20);

		r = pread(s->fd, buf, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = store_fail(err, STORE_EINVAL, NULL, 0, 0,
					"cannot read offset %llu to "
					"hash it",
					(unsigned long long)off);
			goto out;
		}
		EVP_DigestUpdate(ctx, buf, (size_t)r);
		off += (uint64_t)r;
	}
	EVP_DigestFinal_ex(ctx, got, &got_len);
	if (got_len != SNAPSHOT_HASH_SIZE ||
	    memcmp(got, want, SNAPSHOT_HASH_SIZE) != 0) {
		for (i = 0; i < SNAPSHOT_HASH_SIZE; i++) {
			snprintf(wh + 2 * i, 3, "%02x", want[i]);
			snprintf(gh + 2 * i, 3, "%02x", got[i]);
		}
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0,
				"sha256 mismatch: its trailer says %s, "
				"its %llu bytes hash to %s (skip_hash_check "
				"opens it anyway)", wh,
				(unsigned long long)len, gh);
		goto out;
	}
	s->info.hash_checked = true;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	return rc;
}

/* --- bucket "meta" and "lease" --- */

/* The main revision of a 17-byte revision value, or -1. */
static int64_t snap_rev_value(const uint8_t *v, size_t len)
{
	if (len != SNAP_REV_LEN || v[8] != '_')
		return -1;
	return be64(v);
}

static int snap_meta(struct snapshot *s, const struct bbolt_bucket *root,
		     struct store_error *err)
{
	static const char *const compact_keys[] = {
		"finishedCompactRev", "scheduledCompactRev",
	};
	struct bbolt_bucket meta;
	struct store_error e;
	uint8_t *v;
	size_t len, i;
	int64_t rev;
	int rc;

	rc = bbolt_bucket(s->db, root, "meta", 4, &meta, err);
	if (rc == STORE_ENOTFOUND)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "a bbolt file without etcd's bucket "
				  "'meta': not an etcd database");
	if (rc < 0)
		return rc;
	for (i = 0; i < 2; i++) {
		rc = bbolt_get(s->db, &meta, compact_keys[i],
			       strlen(compact_keys[i]), &v, &len, &e);
		if (rc == STORE_ENOTFOUND)
			continue;
		if (rc < 0) {
			*err = e;
			goto out;
		}
		rev = snap_rev_value(v, len);
		free(v);
		if (rev < 0) {
			rc = store_fail(err, STORE_EINVAL, NULL, 0, 0,
					"meta '%s' is not a revision "
					"(%zu bytes)",
					compact_keys[i], len);
			goto out;
		}
		/* a scheduled compaction etcd would finish at its start */
		if (rev > s->info.compact_revision)
			s->info.compact_revision = rev;
	}
	rc = bbolt_get(s->db, &meta, "consistent_index", 16, &v, &len, &e);
	if (rc == 0 && len == 8)
		s->info.consistent_index = (uint64_t)be64(v);
	if (rc == 0)
		free(v);
	rc = rc == STORE_ENOTFOUND ? 0 : rc;
	if (rc < 0)
		*err = e;
out:
	bbolt_bucket_release(&meta);
	return rc;
}

/* A varint at *@p before @end into *@v; false if truncated. */
static bool snap_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	int shift;

	*v = 0;
	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* leasepb.Lease {ID=1, TTL=2, RemainingTTL=3}: the id and TTL. */
static bool snap_lease_decode(const uint8_t *p, size_t len,
			      struct snap_lease *out)
{
	const uint8_t *end = p + len;
	uint64_t tag, v;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		if (!snap_varint(&p, end, &tag))
			return false;
		switch (tag & 7) {
		case 0:
			if (!snap_varint(&p, end, &v))
				return false;
			if (tag >> 3 == 1)
				out->id = (int64_t)v;
			else if (tag >> 3 == 2)
				out->ttl = (int64_t)v;
			break;
		case 1:
			if (end - p < 8)
				return false;
			p += 8;
			break;
		case 2:
			if (!snap_varint(&p, end, &v) ||
			    v > (uint64_t)(end - p))
				return false;
			p += v;
			break;
		case 5:
			if (end - p < 4)
				return false;
			p += 4;
			break;
		default:
			return false;
		}
	}
	return true;
}

static int snap_lease_one(void *arg, const uint8_t *key, size_t key_len,
			  const uint8_t *val, size_t val_len, uint32_t flags)
{
	struct snapshot *s = arg;
	struct snap_lease l;

	if (flags & BBOLT_LEAF_BUCKET)
		return 0;
	if (key_len != 8 || !snap_lease_decode(val, val_len, &l) ||
	    l.id != be64(key))
		return 1;
	if (s->n_leases == s->cap_leases) {
		size_t cap = s->cap_leases ? 2 * s->cap_leases : 16;
		struct snap_lease *n = realloc(s->leases, cap * sizeof(*n));

		if (!n)
			return STORE_EINTERNAL;
		s->leases = n;
		s->cap_leases = cap;
	}
	/* the walk is in key order: big-endian ids, so sorted if positive */
	if (s->n_leases && s->leases[s->n_leases - 1].id >= l.id)
		return 1;
	s->leases[s->n_leases++] = l;
	return 0;
}

static int snap_leases(struct snapshot *s, const struct bbolt_bucket *root,
		       struct store_error *err)
{
	struct bbolt_bucket b;
	struct store_error e;
	int rc;

	rc = bbolt_bucket(s->db, root, "lease", 5, &b, &e);
	if (rc == STORE_ENOTFOUND)
		return 0;
	if (rc < 0) {
		*err = e;
		return rc;
	}
	rc = bbolt_foreach(s->db, &b, snap_lease_one, s, err);
	bbolt_bucket_release(&b);
	if (rc == 1)
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0,
				"bucket 'lease' holds an entry that is "
				"no lease (after %zu good ones)",
				s->n_leases);
	else if (rc == STORE_EINTERNAL)
		rc = store_enomem(err, NULL, 0);
	s->info.leases = s->n_leases;
	return rc;
}

/* --- bucket "key" --- */

/* What the walk of bucket "key" found wrong, for its one message. */
struct snap_walk {
	struct snapshot *s;
	char why[200];
};

static int snap_key_one(void *arg, const uint8_t *key, size_t key_len,
			const uint8_t *val, size_t val_len, uint32_t flags)
{
	struct snap_walk *w = arg;
	struct snapshot *s = w->s;
	Mvccpb__KeyValue *kv;
	struct snap_rev r = { 0 };

	if (flags & BBOLT_LEAF_BUCKET) {
		snprintf(w->why, sizeof(w->why), "a bucket among revisions");
		return 1;
	}
	if ((key_len != SNAP_REV_LEN && key_len != SNAP_REV_LEN + 1) ||
	    key[8] != '_' || (key_len == SNAP_REV_LEN + 1 &&
			      key[SNAP_REV_LEN] != 't')) {
		snprintf(w->why, sizeof(w->why), "a key of %zu bytes that is "
			 "no revision", key_len);
		return 1;
	}
	r.main = be64(key);
	r.sub = be64(key + 9);
	r.tombstone = key_len == SNAP_REV_LEN + 1;
	if (r.main <= 0 || r.sub < 0) {
		snprintf(w->why, sizeof(w->why), "revision %lld_%lld",
			 (long long)r.main, (long long)r.sub);
		return 1;
	}
	kv = mvccpb__key_value__unpack(NULL, val_len, val);
	if (!kv || kv->key.len == 0 ||
	    (!r.tombstone && (kv->mod_revision != r.main ||
			      kv->create_revision <= 0 ||
			      kv->create_revision > r.main ||
			      kv->version <= 0 || kv->lease < 0))) {
		snprintf(w->why, sizeof(w->why), "revision %lld: %s",
			 (long long)r.main, kv ? "a KeyValue whose fields "
			 "do not fit its revision" : "not a KeyValue");
		if (kv)
			mvccpb__key_value__free_unpacked(kv, NULL);
		return 1;
	}
	r.key = malloc(kv->key.len + 1);
	if (!r.key) {
		mvccpb__key_value__free_unpacked(kv, NULL);
		return STORE_EINTERNAL;
	}
	memcpy(r.key, kv->key.data, kv->key.len);
	r.key[kv->key.len] = '\0';
	r.key_len = kv->key.len;
	r.create_revision = kv->create_revision;
	r.version = kv->version;
	r.lease = kv->lease;
	mvccpb__key_value__free_unpacked(kv, NULL);
	if (s->n_revs == s->cap_revs) {
		size_t cap = s->cap_revs ? 2 * s->cap_revs : 256;
		struct snap_rev *n = realloc(s->revs, cap * sizeof(*n));

		if (!n) {
			free(r.key);
			return STORE_EINTERNAL;
		}
		s->revs = n;
		s->cap_revs = cap;
	}
	s->revs[s->n_revs++] = r;
	if (r.main > s->info.revision)
		s->info.revision = r.main;
	return 0;
}

static int snap_cmp_key(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

static int snap_rev_cmp(const void *pa, const void *pb)
{
	const struct snap_rev *a = pa, *b = pb;
	int c = snap_cmp_key(a->key, a->key_len, b->key, b->key_len);

	if (c)
		return c;
	if (a->main != b->main)
		return a->main < b->main ? -1 : 1;
	return a->sub < b->sub ? -1 : a->sub > b->sub;
}

static int snap_keys(struct snapshot *s, const struct bbolt_bucket *root,
		     struct store_error *err)
{
	struct snap_walk w = { .s = s };
	int rc;

	rc = bbolt_bucket(s->db, root, "key", 3, &s->keys, err);
	if (rc == STORE_ENOTFOUND)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "a bbolt file without etcd's bucket "
				  "'key': not an etcd database");
	if (rc < 0)
		return rc;
	rc = bbolt_foreach(s->db, &s->keys, snap_key_one, &w, err);
	if (rc == 1)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "bucket 'key', entry %zu: %s",
				  s->n_revs, w.why);
	if (rc == STORE_EINTERNAL)
		return store_enomem(err, NULL, 0);
	if (rc < 0)
		return rc;
	if (s->n_revs)
		qsort(s->revs, s->n_revs, sizeof(*s->revs), snap_rev_cmp);
	s->info.revisions = s->n_revs;
	return 0;
}

/* --- open --- */

int snapshot_open_fd(int fd, const char *name, bool skip_hash_check,
		     struct snapshot **out, struct store_error *err)
{
	struct bbolt_bucket root;
	struct bbolt_info binfo;
	struct snapshot *s;
	struct stat st;
	uint64_t len;
	int rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (s)
		s->name = strdup(name);
	if (!s || !s->name) {
		free(s);
		close(fd);
		return store_enomem(err, NULL, 0);
	}
	s->fd = fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0,
				"the snapshot is not a regular file");
		goto fail;
	}
	len = (uint64_t)st.st_size;
	s->info.size = len;
	if (len % 512 == SNAPSHOT_HASH_SIZE) {
		len -= SNAPSHOT_HASH_SIZE;
		rc = snap_hash(s, len, skip_hash_check, err);
		if (rc < 0)
			goto fail;
	}
	rc = bbolt_open(fd, len, &s->db, err);
	if (rc < 0)
		goto fail_damaged;
	bbolt_get_info(s->db, &binfo);
	s->info.in_use = binfo.high_water * binfo.page_size;
	bbolt_root(s->db, &root);
	rc = snap_meta(s, &root, err);
	if (rc == 0)
		rc = snap_leases(s, &root, err);
	if (rc == 0)
		rc = snap_keys(s, &root, err);
	if (rc < 0)
		goto fail_damaged;
	if (s->info.compact_revision > s->info.revision)
		s->info.revision = s->info.compact_revision;
	if (s->info.revision == 0)
		s->info.revision = 1;	/* etcd's first revision */
	if (s->info.compact_revision == 0)
		s->info.compact_revision = 1;
	*out = s;
	return 0;

fail_damaged:
	/* a damaged file, whatever bbolt.c calls it */
	if (rc != STORE_EINTERNAL)
		rc = STORE_EINVAL;
	if (err)
		err->code = rc;
fail:
	snapshot_free(s);
	return rc;
}

int snapshot_open(const char *path, bool skip_hash_check,
		  struct snapshot **out, struct store_error *err)
{
	int fd, e;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "cannot open snapshot '%s': %s", path,
				  strerror(e));
	}
	return snapshot_open_fd(fd, path, skip_hash_check, out, err);
}

void snapshot_free(struct snapshot *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n_revs; i++)
		free(s->revs[i].key);
	free(s->revs);
	free(s->leases);
	bbolt_bucket_release(&s->keys);
	bbolt_close(s->db);
	if (s->fd >= 0)
		close(s->fd);
	free(s->name);
	free(s);
}

void snapshot_get_info(const struct snapshot *s, struct snapshot_info *out)
{
	*out = s->info;
}

/* --- reads --- */

int snapshot_check_revision(const struct snapshot *s, int64_t rev,
			    struct store_error *err)
{
	if (rev > s->info.revision)
		return store_fail(err, STORE_EINVAL, NULL, 0,
				  s->info.revision, "revision %lld is in the "
				  "future: the snapshot's newest is %lld",
				  (long long)rev,
				  (long long)s->info.revision);
	if (rev < s->info.compact_revision)
		return store_fail(err, STORE_ECOMPACTED, NULL, 0,
				  s->info.compact_revision, "revision %lld is "
				  "compacted: the oldest revision the "
				  "snapshot keeps is %lld", (long long)rev,
				  (long long)s->info.compact_revision);
	return 0;
}

/* The first entry whose key is at least @key. */
static size_t snap_lower_bound(const struct snapshot *s, const char *key,
			       size_t key_len)
{
	size_t lo = 0, hi = s->n_revs, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (snap_cmp_key(s->revs[mid].key, s->revs[mid].key_len, key,
				 key_len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Reads the value of @r from the file into @kv. */
static int snap_value(struct snapshot *s, const struct snap_rev *r,
		      struct store_kv *kv, struct store_error *err)
{
	uint8_t rk[SNAP_REV_LEN];
	Mvccpb__KeyValue *m;
	uint8_t *v;
	size_t len;
	int rc;

	be64_put(rk, r->main);
	rk[8] = '_';
	be64_put(rk + 9, r->sub);
	rc = bbolt_get(s->db, &s->keys, rk, sizeof(rk), &v, &len, err);
	if (rc < 0)
		return store_fail(err, STORE_EBADREPLY, r->key, r->key_len,
				  r->main, "'%s': revision %lld cannot be "
				  "read again: %s", s->name,
				  (long long)r->main, err ? err->msg : "");
	m = mvccpb__key_value__unpack(NULL, len, v);
	free(v);
	if (!m || m->key.len != r->key_len ||
	    memcmp(m->key.data, r->key, r->key_len) != 0) {
		if (m)
			mvccpb__key_value__free_unpacked(m, NULL);
		return store_fail(err, STORE_EBADREPLY, r->key, r->key_len,
				  r->main, "'%s': revision %lld changed in "
				  "the file", s->name, (long long)r->main);
	}
	kv->value = store_memdup((const char *)m->value.data, m->value.len);
	kv->value_len = m->value.len;
	mvccpb__key_value__free_unpacked(m, NULL);
	if (!kv->value)
		return store_enomem(err, r->key, r->key_len);
	return 0;
}

static bool snap_in_range(const struct snap_rev *r, const char *key,
			  size_t key_len, const char *end, size_t end_len)
{
	if (!end)
		return r->key_len == key_len &&
		       memcmp(r->key, key, key_len) == 0;
	if (end_len == 1 && end[0] == '\0')
		return true;
	return snap_cmp_key(r->key, r->key_len, end, end_len) < 0;
}

int snapshot_range(struct snapshot *s, const char *key, size_t key_len,
		   const char *range_end, size_t range_end_len, int64_t rev,
		   size_t limit, bool keys_only, struct store_list *out,
		   bool *more, int64_t *count, struct store_error *err)
{
	const struct snap_rev *pick;
	struct store_kv kv;
	int64_t live = 0;
	size_t i, n = 0;
	int rc;

	*more = false;
	if (count)
		*count = -1;
	if (rev == 0)
		rev = s->info.revision;
	rc = snapshot_check_revision(s, rev, err);
	if (rc < 0)
		return rc;
	out->revision = rev;
	i = snap_lower_bound(s, key, key_len);
	while (i < s->n_revs && snap_in_range(&s->revs[i], key, key_len,
					      range_end, range_end_len)) {
		/* the run of one key: its last entry at most @rev */
		pick = NULL;
		do {
			if (s->revs[i].main <= rev)
				pick = &s->revs[i];
			i++;
		} while (i < s->n_revs &&
			 s->revs[i].key_len == s->revs[i - 1].key_len &&
			 memcmp(s->revs[i].key, s->revs[i - 1].key,
				s->revs[i].key_len) == 0);
		if (!pick || pick->tombstone)
			continue;
		live++;
		if (limit && n == limit) {
			*more = true;
			if (!count)
				break;
			continue;
		}
		memset(&kv, 0, sizeof(kv));
		kv.key = store_memdup(pick->key, pick->key_len);
		if (!kv.key)
			return store_enomem(err, pick->key, pick->key_len);
		kv.key_len = pick->key_len;
		kv.create_revision = pick->create_revision;
		kv.mod_revision = pick->main;
		kv.version = pick->version;
		kv.lease = pick->lease;
		rc = keys_only ? 0 : snap_value(s, pick, &kv, err);
		if (rc == 0)
			rc = store_list_push_own(out, &kv);
		if (rc < 0) {
			store_kv_release(&kv);
			return rc == STORE_EINTERNAL ?
			       store_enomem(err, NULL, 0) : rc;
		}
		n++;
	}
	if (count)
		*count = live;
	return 0;
}

int snapshot_lease_ttl(const struct snapshot *s, int64_t id, int64_t *ttl,
		       struct store_error *err)
{
	size_t lo = 0, hi = s->n_leases, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->leases[mid].id == id) {
			*ttl = s->leases[mid].ttl;
			return 0;
		}
		if (s->leases[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return store_fail(err, STORE_ENOTFOUND, NULL, 0, 0,
			  "lease %llx is not in the snapshot",
			  (unsigned long long)id);
}
