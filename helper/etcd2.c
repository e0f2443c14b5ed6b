/*
 * etcd2.c - the etcd v2 backend of helper/store.h, over /v2/keys
 *
 * Speaks etcd's v2 keys API (etcd 3.4 serves it when started with
 * --enable-v2=true; its key space is apart from v3's) through transport.c,
 * with the requests and replies of etcd2_codec.c.  The mapping:
 *
 *   mod_revision     modifiedIndex      create_revision  createdIndex
 *   version          0 (v2 has none)    lease            0 (v2 has none)
 *   get              GET key (quorum=true for linearizable reads)
 *   range            GET dir?recursive=true, flattened and filtered
 *   cas              PUT key with prevExist=false (expect 0), prevIndex=N
 *                    (expect N) or nothing (expect -1)
 *   del              DELETE key, with prevIndex=N when checked
 *   watch            long polls GET dir?wait=true&waitIndex=N&recursive=true,
 *                    one event per request, resumed at modifiedIndex + 1
 *   revision         etcd's index: the "index" of the not-found error a
 *                    quorum GET of an absent key gets (see e2_probe)
 *   first_change     GET key?wait=true&waitIndex=N+1, which the event
 *                    history answers at once when the key changed
 *   status           the database's gauges in GET /metrics
 *
 * What it cannot do, because v2 cannot:
 * - keys that are not clean UTF-8 paths (etcd2_codec_key_ok): writes of
 *   them are EINVAL, reads ENOTFOUND (no such key can exist);
 * - values that are not UTF-8: ENOTSUP (etcd would send them back with
 *   U+FFFD in place of each bad byte);
 * - a key that is also a directory ("/a" and "/a/b"): the second write is
 *   EINVAL ("not a directory" or "not a file");
 * - leases (lease_grant and a put with a lease are ENOTSUP: a key's own
 *   TTL stands for one, see set_ttl and key_ttl), atomic moves
 *   (move is NULL: ENOTSUP), reads at a past revision (ENOTSUP), paging
 *   (a range comes back whole in one request, whatever the limit);
 * - listing keys with a path segment that starts with '_': v2 hides them
 *   from directory listings (a get of one works);
 * - more than the last 1,000 events of the whole cluster: a watch that
 *   falls further behind gets ECOMPACTED;
 * - the keys of a removed directory: v2 sends one event for the
 *   directory, so a watch over it reports ECOMPACTED, and its owner lists
 *   again; a one-key watch reports the key deleted.
 * An unconditional put (expect -1) is a v2 "set", which replaces the node:
 * its createdIndex becomes the new index.
 *
 * Threads: any number of threads may call in at once; a watch has a
 * thread of its own (etcd2_watch.c).  Lock order: only a watch's lock,
 * taken alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd2.h"
#include "etcd2_codec.h"
#include "store_i.h"
#include "thread.h"
#include "transport.h"

#define E2_FORM		"application/x-www-form-urlencoded"
/* The absent key whose not-found error tells etcd's index (hidden). */
#define E2_PROBE	"/_etcdfs_revision_probe"
/* How deep the probe goes when someone made its key. */
#define E2_PROBE_DEPTH	8

/* The backend's state, in s->be. */
struct e2_state {
	char *probe_dir;	/* the directory of the store prefix, where
				 * the revision probe looks: a user allowed
				 * there by v2 auth may read it */
	size_t probe_dir_len;
};

static int e2_nomem(struct store_error *err, const char *key, size_t len)
{
	return store_fail(err, STORE_EINTERNAL, key, len, 0, "out of memory");
}

/*
 * Refills @err, which holds the message of an error a lower layer
 * reported, with the code @rc, @key and the revision @rev.
 */
static int e2_refail(struct store_error *err, int rc, const char *key,
		     size_t len, int64_t rev)
{
	/* store_fail reads its arguments before it writes @err */
	if (!err)
		return rc;
	return store_fail(err, rc, key, len, rev, "%s", err->msg);
}

static int e2_rekey(struct store_error *err, int rc, const char *key,
		    size_t len)
{
	return e2_refail(err, rc, key, len, 0);
}

static bool e2_quorum(struct store *s, unsigned flags)
{
	if (flags & STORE_READ_QUORUM)
		return true;
	if (flags & STORE_READ_SERIAL)
		return false;
	return s->cfg.quorum;
}

/*
 * Sends @method on @key (the root if @key_len is 0) with @query and the
 * form @body (NULL: none), and parses the reply into @r (released by the
 * caller).  Returns 0, or the error of the transport or of the reply, with
 * @err filled; r->error_code then says which etcd error it was.
 */
static int e2_call(struct store *s, const char *method, const char *key,
		   size_t key_len, const char *query, const char *body,
		   size_t body_len, struct etcd2_reply *r,
		   struct store_error *err)
{
	struct transport_reply tr = { 0 };
	struct store_error ce = { 0 };
	char what[32];
	int64_t start;
	char *path;
	int rc, trc;

	memset(r, 0, sizeof(*r));
	path = etcd2_codec_path(key, key_len, query);
	if (!path)
		return e2_nomem(err, key, key_len);
	start = thread_now_us();
	trc = transport_request(s->tr, method, path, body ? E2_FORM : NULL,
				body, body_len, &tr, err);
	rc = trc < 0 ? trc :
	     etcd2_codec_reply(tr.status, tr.body, tr.len, r, &ce);
	snprintf(what, sizeof(what), "%s /v2/keys", method);
	store_note(s, strcmp(method, "GET") ? STORE_REQ_WRITE :
		   STORE_REQ_READ, what, key, key_len, rc, start,
		   rc == STORE_EUNREACHABLE ? 0 : body_len, tr.len);
	free(path);
	if (trc < 0)
		return e2_rekey(err, rc, key, key_len);
	transport_reply_release(&tr);
	if (rc < 0)
		store_fail(err, rc, key, key_len, 0, "%s", ce.msg);
	return rc;
}

/*
 * etcd's index now, from the not-found error of a GET of an absent key
 * under the store prefix: every v2 error made by the store carries the
 * index, while a node reply carries only the node's.  (The X-Etcd-Index
 * header of any reply would do, but the transport does not give headers.)
 * If someone made the probe's key, the probe looks below it: a file there
 * answers "not a directory", with the index too.
 */
static int e2_probe(struct store *s, bool quorum, int64_t *index,
		    struct store_error *err)
{
	struct e2_state *st = s->be;
	struct store_error tmp;		/* the expected not-found lands here */
	struct etcd2_reply r;
	size_t plen = sizeof(E2_PROBE) - 1, len = st->probe_dir_len, cap;
	char *key;
	int rc = 0, depth;

	*index = 0;
	cap = st->probe_dir_len + E2_PROBE_DEPTH * plen + 1;
	key = malloc(cap);
	if (!key)
		return e2_nomem(err, NULL, 0);
	memcpy(key, st->probe_dir, st->probe_dir_len);
	for (depth = 0; depth < E2_PROBE_DEPTH; depth++) {
		memcpy(key + len, E2_PROBE, plen);
		len += plen;
		rc = e2_call(s, "GET", key, len, quorum ? "quorum=true" : NULL,
			     NULL, 0, &r, &tmp);
		if (r.error_code == ETCD2_EKEY_NOT_FOUND ||
		    r.error_code == ETCD2_ENOT_DIR) {
			*index = r.index;
			etcd2_reply_release(&r);
			if (*index <= 0)
				rc = store_fail(err, STORE_EBADREPLY, key, len,
						0, "no index in etcd's "
						"not-found error");
			else
				rc = 0;
			goto out;
		}
		etcd2_reply_release(&r);
		if (rc < 0) {
			if (err)
				*err = tmp;
			goto out;
		}
	}
	rc = store_fail(err, STORE_EBADREPLY, key, len, 0,
			"no absent key to learn etcd's index from");
out:
	free(key);
	return rc;
}

static int e2_init(struct store *s, struct store_error *err)
{
	struct e2_state *st;
	size_t d;

	/*
	 * Every key is the prefix and more: it must be a path, and the
	 * directory part of the prefix a clean one.
	 */
	if (s->prefix_len && s->prefix[0] != '/')
		return store_fail(err, STORE_EINVAL, s->prefix, s->prefix_len,
				  0, "an etcd v2 prefix starts with '/'");
	for (d = s->prefix_len; d > 0 && s->prefix[d - 1] != '/'; d--)
		;
	d = d ? d - 1 : 0;
	if (d && !etcd2_codec_key_ok(s->prefix, d, NULL))
		return store_fail(err, STORE_EINVAL, s->prefix, s->prefix_len,
				  0, "the directory of an etcd v2 prefix must "
				  "be a clean path of UTF-8");
	st = calloc(1, sizeof(*st));
	if (!st)
		return e2_nomem(err, NULL, 0);
	st->probe_dir = malloc(d + 1);
	if (!st->probe_dir) {
		free(st);
		return e2_nomem(err, NULL, 0);
	}
	memcpy(st->probe_dir, s->prefix, d);
	st->probe_dir[d] = '\0';
	st->probe_dir_len = d;
	s->be = st;
	return 0;
}

static void e2_release(struct store *s)
{
	struct e2_state *st = s->be;

	if (!st)
		return;
	free(st->probe_dir);
	free(st);
	s->be = NULL;
}

static int e2_revision(struct store *s, int64_t *rev, struct store_error *err)
{
	return e2_probe(s, true, rev, err);
}

/*
 * Reads @key into @r: 0 with a node, ENOTFOUND if there is no such key
 * (absent, below a file, or not a key v2 can hold), else an error.
 */
static int e2_read(struct store *s, const char *key, size_t key_len,
		   bool quorum, struct etcd2_reply *r, struct store_error *err)
{
	const char *why;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!etcd2_codec_key_ok(key, key_len, &why))
		return store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				  "no such key in etcd v2: %s", why);
	rc = e2_call(s, "GET", key, key_len, quorum ? "quorum=true" : NULL,
		     NULL, 0, r, err);
	if (rc < 0 && r->error_code == ETCD2_ENOT_DIR)
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found: '%s' above it is a key, not a "
				"directory", r->cause);
	return rc;
}

static int e2_get(struct store *s, const char *key, size_t key_len,
		  unsigned flags, struct store_kv *out, struct store_error *err)
{
	struct etcd2_reply r;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = e2_read(s, key, key_len, e2_quorum(s, flags), &r, err);
	if (rc == 0 && r.node.dir)
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found: it is a directory");
	if (rc == 0) {
		*out = r.node.kv;
		memset(&r.node.kv, 0, sizeof(r.node.kv));
	}
	etcd2_reply_release(&r);
	return rc;
}

/*
 * The key's current state into @cur after a failed comparison (zeroed if
 * it is absent or a directory), read linearizably so that a retry works
 * from the newest state.
 */
static int e2_current(struct store *s, const char *key, size_t key_len,
		      struct store_kv *cur, struct store_error *err)
{
	struct store_error tmp;
	struct etcd2_reply r;
	int rc;

	memset(cur, 0, sizeof(*cur));
	rc = e2_read(s, key, key_len, true, &r, &tmp);
	if (rc == 0 && !r.node.dir) {
		*cur = r.node.kv;
		memset(&r.node.kv, 0, sizeof(r.node.kv));
	}
	etcd2_reply_release(&r);
	if (rc == STORE_ENOTFOUND)
		return 0;
	if (rc < 0 && err)
		*err = tmp;
	return rc < 0 ? rc : 0;
}

static int e2_range(struct store *s, const char *key, size_t key_len,
		    const char *range_end, size_t range_end_len, int64_t rev,
		    size_t limit, unsigned flags, struct store_list *out,
		    bool *more, int64_t *count, struct store_error *err)
{
	struct transport_reply tr = { 0 };
	struct etcd2_reply r;
	bool quorum = e2_quorum(s, flags);
	int64_t probe, max_index = 0;
	size_t dir_len;
	struct store_error ce = { 0 };
	char *path;
	int64_t start;
	int rc;

	*more = false;
	if (count)
		*count = -1;	/* the whole tree comes in one reply */
	if (rev != 0)
		return store_fail(err, STORE_ENOTSUP, key, key_len, rev,
				  "etcd v2 cannot read at a past revision");
	dir_len = etcd2_codec_range_dir(key, key_len, range_end,
					range_end_len);
	/*
	 * The index first: the listing is at that index or a later one, so
	 * a watch from it + 1 may see again a change the listing holds, but
	 * misses none.  The largest modifiedIndex of the listing would not
	 * do: a directory removed under it is in no node.
	 */
	rc = e2_probe(s, quorum, &probe, err);
	if (rc < 0)
		return rc;
	path = etcd2_codec_path(key, dir_len, quorum ?
				"recursive=true&quorum=true" :
				"recursive=true");
	if (!path)
		return e2_nomem(err, key, dir_len);
	start = thread_now_us();
	rc = transport_request(s->tr, "GET", path, NULL, NULL, 0, &tr, err);
	store_note(s, STORE_REQ_READ, "GET /v2/keys?recursive", key, dir_len,
		   rc, start, 0, tr.len);
	free(path);
	if (rc < 0)
		return e2_rekey(err, rc, key, dir_len);
	if (tr.status >= 200 && tr.status < 300) {
		rc = etcd2_codec_list(tr.body, tr.len, key, key_len, range_end,
				      range_end_len,
				      flags & STORE_READ_KEYS_ONLY, out,
				      &max_index, &ce);
	} else {
		rc = etcd2_codec_reply(tr.status, tr.body, tr.len, &r, &ce);
		/* no directory there, or a key above it: no keys */
		if (r.error_code == ETCD2_EKEY_NOT_FOUND ||
		    r.error_code == ETCD2_ENOT_DIR) {
			max_index = r.index;
			rc = 0;
		}
		etcd2_reply_release(&r);
	}
	transport_reply_release(&tr);
	if (rc < 0)
		return store_fail(err, rc, key, dir_len, 0, "%s", ce.msg);
	out->revision = probe > max_index ? probe : max_index;
	return 0;
}

static int e2_cas(struct store *s, const char *key, size_t key_len,
		  int64_t expect, const char *value, size_t value_len,
		  int64_t lease, int64_t *rev, struct store_kv *cur,
		  struct store_error *err)
{
	struct etcd2_reply r;
	char query[48] = "";
	const char *why;
	size_t body_len;
	char *body;
	int rc;

	memset(cur, 0, sizeof(*cur));
	*rev = 0;
	if (lease != 0)
		return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
				  "etcd v2 has no leases");
	if (!etcd2_codec_key_ok(key, key_len, &why))
		return store_fail(err, STORE_EINVAL, key, key_len, 0, "%s",
				  why);
	if (!etcd2_codec_utf8_ok(value, value_len))
		return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
				  "etcd v2 cannot hold a value that is not "
				  "UTF-8");
	if (expect == 0)
		snprintf(query, sizeof(query), "prevExist=false");
	else if (expect > 0)
		snprintf(query, sizeof(query), "prevIndex=%" PRId64, expect);
	else if (expect != -1)
		return store_fail(err, STORE_EINVAL, key, key_len, 0,
				  "bad expected revision %" PRId64, expect);
	body = etcd2_codec_form_value(value, value_len, &body_len);
	if (!body)
		return e2_nomem(err, key, key_len);
	rc = e2_call(s, "PUT", key, key_len, query, body, body_len, &r, err);
	free(body);
	if (rc == 0) {
		if (r.node.dir || r.node.kv.mod_revision <= 0)
			rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
					"a put answered with a directory or "
					"without an index");
		else
			*rev = r.node.kv.mod_revision;
	} else if (rc == STORE_EPRECONDITION ||
		   (rc == STORE_ENOTFOUND && expect > 0)) {
		/* 101, 105, or 100: the key is gone since */
		rc = e2_current(s, key, key_len, cur, err);
		if (rc == 0)
			rc = e2_refail(err, STORE_EPRECONDITION, key, key_len,
				       cur->mod_revision);
	}
	etcd2_reply_release(&r);
	return rc;
}

static int e2_del(struct store *s, const char *key, size_t key_len,
		  int64_t expect_mod, int64_t expect_create,
		  struct store_kv *prev, int64_t *rev, struct store_error *err)
{
	struct etcd2_reply r;
	char query[48] = "";
	int rc;

	memset(prev, 0, sizeof(*prev));
	*rev = 0;
	if (expect_create > 0) {
		/*
		 * v2 compares modifiedIndex only: read the key, check both,
		 * and delete it on the modifiedIndex read, which cannot have
		 * another createdIndex.
		 */
		rc = e2_read(s, key, key_len, true, &r, err);
		if (rc == 0 && r.node.dir)
			rc = store_fail(err, STORE_EINVAL, key, key_len, 0,
					"not a file: it is a directory");
		if (rc == 0 &&
		    (r.node.kv.create_revision != expect_create ||
		     (expect_mod > 0 &&
		      r.node.kv.mod_revision != expect_mod))) {
			rc = store_fail(err, STORE_EPRECONDITION, key, key_len,
					r.node.kv.mod_revision,
					"precondition failed: the key is at "
					"revision %" PRId64 ", created at %"
					PRId64, r.node.kv.mod_revision,
					r.node.kv.create_revision);
			*prev = r.node.kv;
			memset(&r.node.kv, 0, sizeof(r.node.kv));
		}
		expect_mod = r.node.kv.mod_revision;
		etcd2_reply_release(&r);
		if (rc < 0)
			return rc;
	} else if (!etcd2_codec_key_ok(key, key_len, NULL)) {
		return store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				  "key not found: etcd v2 cannot hold it");
	}
	if (expect_mod > 0)
		snprintf(query, sizeof(query), "prevIndex=%" PRId64,
			 expect_mod);
	rc = e2_call(s, "DELETE", key, key_len, query, NULL, 0, &r, err);
	if (rc == 0) {
		if (r.node.kv.mod_revision <= 0) {
			rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
					"a delete answered without an index");
		} else {
			*rev = r.node.kv.mod_revision;
			if (r.prev.present && !r.prev.dir) {
				*prev = r.prev.kv;
				memset(&r.prev.kv, 0, sizeof(r.prev.kv));
			}
		}
	} else if (rc == STORE_EPRECONDITION) {
		rc = e2_current(s, key, key_len, prev, err);
		if (rc == 0)
			rc = e2_refail(err, STORE_EPRECONDITION, key, key_len,
				       prev->mod_revision);
	} else if (r.error_code == ETCD2_ENOT_DIR) {
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found: '%s' above it is a key, not a "
				"directory", r.cause);
	}
	etcd2_reply_release(&r);
	return rc;
}

/* A put of @value on its index @expect with ttl=@ttl (0: ttl=, none). */
static int e2_set_ttl(struct store *s, const char *key, size_t key_len,
		      int64_t expect, const char *value, size_t value_len,
		      int64_t ttl, int64_t *rev, struct store_error *err)
{
	struct etcd2_reply r;
	char query[48], extra[40];
	size_t body_len, extra_len;
	char *body, *b;
	int rc;

	*rev = 0;
	if (!etcd2_codec_key_ok(key, key_len, NULL))
		return store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				  "key not found: etcd v2 cannot hold it");
	snprintf(query, sizeof(query), "prevIndex=%" PRId64, expect);
	if (ttl > 0)
		snprintf(extra, sizeof(extra), "&ttl=%" PRId64, ttl);
	else
		snprintf(extra, sizeof(extra), "&ttl=");
	extra_len = strlen(extra);
	body = etcd2_codec_form_value(value, value_len, &body_len);
	b = body ? realloc(body, body_len + extra_len + 1) : NULL;
	if (!b) {
		free(body);
		return e2_nomem(err, key, key_len);
	}
	memcpy(b + body_len, extra, extra_len + 1);
	rc = e2_call(s, "PUT", key, key_len, query, b, body_len + extra_len,
		     &r, err);
	free(b);
	if (rc == 0 && (r.node.dir || r.node.kv.mod_revision <= 0))
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"a put answered with a directory or without "
				"an index");
	else if (rc == 0)
		*rev = r.node.kv.mod_revision;
	/*
	 * A key deleted since it was read: v2 answers errorCode 100 to the
	 * prevIndex put, ENOTFOUND as store_set_ttl() promises, not
	 * EPRECONDITION (errorCode 101, the index moved on).
	 */
	etcd2_reply_release(&r);
	return rc;
}

static int e2_key_ttl(struct store *s, const char *key, size_t key_len,
		      int64_t *ttl, struct store_error *err)
{
	struct etcd2_reply r;
	int rc;

	*ttl = 0;
	rc = e2_read(s, key, key_len, true, &r, err);
	if (rc == 0 && r.node.dir)
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found: it is a directory");
	if (rc == 0)
		*ttl = r.node.ttl;
	etcd2_reply_release(&r);
	return rc;
}

/*
 * A wait from @after + 1, which etcd answers at once from its history
 * when the key changed since: the event is the key's first change after
 * @after (a put of it, its deletion or expiry, or a directory above it
 * removed).
 */
static int e2_first_change(struct store *s, const char *key, size_t key_len,
			   int64_t after, bool *cas, struct store_kv *now,
			   int64_t *ttl, struct store_error *err)
{
	struct etcd2_reply r;
	char query[64];
	bool same;
	int rc;

	*cas = false;
	*ttl = 0;
	memset(now, 0, sizeof(*now));
	if (!etcd2_codec_key_ok(key, key_len, NULL))
		return store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				  "key not found: etcd v2 cannot hold it");
	snprintf(query, sizeof(query), "wait=true&waitIndex=%" PRId64,
		 after + 1);
	rc = e2_call(s, "GET", key, key_len, query, NULL, 0, &r, err);
	if (rc == 0) {
		same = !r.node.dir && r.node.kv.key_len == key_len &&
		       !memcmp(r.node.kv.key, key, key_len);
		*cas = same && r.action == ETCD2_CAS && r.prev.present &&
		       r.prev.kv.mod_revision == after;
		if (same && r.action != ETCD2_DELETE &&
		    r.action != ETCD2_CAD && r.action != ETCD2_EXPIRE) {
			*now = r.node.kv;
			memset(&r.node.kv, 0, sizeof(r.node.kv));
			*ttl = r.node.ttl;
		}
	}
	etcd2_reply_release(&r);
	return rc;
}

static int e2_lease_grant(struct store *s, int64_t ttl, int64_t *id,
			  struct store_error *err)
{
	*id = 0;
	return store_fail(err, STORE_ENOTSUP, NULL, 0, 0,
			  "etcd v2 has no leases");
}

/*
 * Directories, which only v2 has: for store_mkdir and store_rmdir, through
 * the optional members mkdir and rmdir of struct store_backend.
 */

/* Makes the directory @key; EEXISTS if a key or directory is there. */
static int e2_mkdir(struct store *s, const char *key, size_t key_len,
		    int64_t *rev, struct store_error *err)
{
	struct etcd2_reply r;
	const char *why;
	int rc;

	*rev = 0;
	if (!etcd2_codec_key_ok(key, key_len, &why))
		return store_fail(err, STORE_EINVAL, key, key_len, 0, "%s",
				  why);
	rc = e2_call(s, "PUT", key, key_len, "dir=true&prevExist=false", NULL,
		     0, &r, err);
	if (rc == 0 && (!r.node.dir || r.node.kv.mod_revision <= 0))
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"a mkdir answered with a key or without an "
				"index");
	else if (rc == 0)
		*rev = r.node.kv.mod_revision;
	else if (r.error_code == ETCD2_ENODE_EXIST)
		rc = store_fail(err, STORE_EEXISTS, key, key_len, 0,
				"a key or directory of that name exists");
	etcd2_reply_release(&r);
	return rc;
}

/*
 * Removes the empty directory @key: ENOTFOUND if there is none, EINVAL if
 * it is a key, EEXISTS if it is not empty (as rmdir(2) may say EEXIST).
 * v2 deletes a key as well as a directory when asked with dir=true, and
 * cannot compare a directory's index: the read before the delete is the
 * check, and a key that replaces the directory in between is deleted.
 */
static int e2_rmdir(struct store *s, const char *key, size_t key_len,
		    int64_t *rev, struct store_error *err)
{
	struct etcd2_reply r;
	int rc;

	*rev = 0;
	rc = e2_read(s, key, key_len, true, &r, err);
	if (rc == 0 && !r.node.dir)
		rc = store_fail(err, STORE_EINVAL, key, key_len, 0,
				"not a directory: it is a key");
	etcd2_reply_release(&r);
	if (rc < 0)
		return rc;
	rc = e2_call(s, "DELETE", key, key_len, "dir=true", NULL, 0, &r, err);
	if (rc == 0 && r.node.kv.mod_revision <= 0)
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"a rmdir answered without an index");
	else if (rc == 0)
		*rev = r.node.kv.mod_revision;
	else if (r.error_code == ETCD2_EDIR_NOT_EMPTY)
		rc = store_fail(err, STORE_EEXISTS, key, key_len, 0,
				"directory not empty");
	etcd2_reply_release(&r);
	return rc;
}

/* --- cluster --- */

static int e2_members(struct store *s, struct store_member **members,
		      size_t *n, struct store_error *err)
{
	struct transport_reply tr = { 0 };
	struct etcd2_reply r;
	struct store_error ce = { 0 };
	int64_t start;
	int rc;

	*members = NULL;
	*n = 0;
	start = thread_now_us();
	rc = transport_request(s->tr, "GET", "/v2/members", NULL, NULL, 0, &tr,
			       err);
	store_note(s, STORE_REQ_MEMBERS, "GET /v2/members", NULL, 0, rc,
		   start, 0, tr.len);
	if (rc < 0)
		return rc;
	if (tr.status >= 200 && tr.status < 300) {
		rc = etcd2_codec_members(tr.body, tr.len, members, n, &ce);
	} else {
		rc = etcd2_codec_reply(tr.status, tr.body, tr.len, &r, &ce);
		etcd2_reply_release(&r);
	}
	transport_reply_release(&tr);
	if (rc < 0)
		return store_fail(err, rc, NULL, 0, 0, "%s", ce.msg);
	return 0;
}

/*
 * The value of the gauge @name in the Prometheus text @body ("NAME VALUE"
 * lines, '#' comments), or -1 if it is not there or not a size.
 */
static int64_t e2_gauge(const char *body, const char *name)
{
	size_t nlen = strlen(name);
	const char *p;
	char *end;
	double v;

	for (p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, nlen) != 0 || p[nlen] != ' ')
			continue;
		errno = 0;
		v = strtod(p + nlen + 1, &end);
		if (errno || end == p + nlen + 1 || (*end && *end != '\n') ||
		    !(v >= 0 && v < 9.2e18))
			return -1;
		return (int64_t)v;
	}
	return -1;
}

/*
 * v2 has no status call: the member's /metrics has the size of its
 * database (where the v3 key space lives; v2 keys are in memory and in
 * the snapshots).  v2 writes are never refused for space.
 */
static int e2_status(struct store *s, struct store_status *out,
		     struct store_error *err)
{
	struct transport_reply tr = { 0 };
	int64_t start = thread_now_us();
	int rc;

	rc = transport_request(s->tr, "GET", "/metrics", NULL, NULL, 0, &tr,
			       err);
	store_note(s, STORE_REQ_STATUS, "GET /metrics", NULL, 0, rc, start, 0,
		   tr.len);
	if (rc < 0)
		return rc;
	if (tr.status != 200) {
		rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				"/metrics: http %ld", tr.status);
		goto out;
	}
	out->db_size = e2_gauge(tr.body, "etcd_mvcc_db_total_size_in_bytes");
	out->db_size_in_use =
		e2_gauge(tr.body, "etcd_mvcc_db_total_size_in_use_in_bytes");
	if (out->db_size < 0)
		rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0, "/metrics: "
				"no etcd_mvcc_db_total_size_in_bytes");
	if (out->db_size_in_use < 0)
		out->db_size_in_use = 0;
out:
	transport_reply_release(&tr);
	return rc;
}

const struct store_backend store_etcd2_backend = {
	.name = "etcd2",
	.init = e2_init,
	.release = e2_release,
	.revision = e2_revision,
	.status = e2_status,
	.get = e2_get,
	.range = e2_range,
	.cas = e2_cas,
	.del = e2_del,
	.move = NULL,		/* v2 cannot rename atomically */
	.lease_grant = e2_lease_grant,
	.set_ttl = e2_set_ttl,
	.key_ttl = e2_key_ttl,
	.first_change = e2_first_change,
	.watch = etcd2_watch,
	.watch_stop = etcd2_watch_stop,
	.members = e2_members,
	.mkdir = e2_mkdir,
	.rmdir = e2_rmdir,
};
