/*
 * etcd3_grpc.c - the etcd v3 backend of helper/store_i.h over gRPC
 *
 * Every operation is one unary call through grpc_transport.c, built and
 * decoded by etcd3_pb.c: KV/Range, KV/Txn, Lease/LeaseGrant, LeaseRevoke,
 * LeaseTimeToLive, Cluster/MemberList, Maintenance/Status.  Writes are
 * transactions whose failure branch reads
 * the keys they compared, so a lost race answers with the state that won
 * it.  Watches are in etcd3_grpc_watch.c.
 *
 * Errors: a gRPC status maps to a store error (etcd3pb_map_error).  A
 * member that refused a request before proposing it ("no leader", "too
 * many requests") sends us to the next member, for writes too; a read
 * that met a transient failure ("leader changed", "request timed out") is
 * sent to the next member as well; a write that met one, or whose answer
 * the transport lost after sending it, is STORE_EUNKNOWN (or a timeout),
 * which the store settles (helper/store_settle.c); STORE_EUNREACHABLE
 * only when nothing was sent or etcd refused it before proposing it.
 *
 * What it cannot do: multi-key transactions other than the rename; keep a
 * lease alive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "etcd3_grpc.h"
#include "etcd3_pb.h"
#include "grpc_frame.h"
#include "thread.h"

/* A rename whose source changed between its read and its txn. */
#define G_MOVE_ATTEMPTS		16
/* Members tried after a transient refusal, at most. */
#define G_RETRIES		3

#define G_RANGE	"/etcdserverpb.KV/Range"
#define G_TXN	"/etcdserverpb.KV/Txn"

/* Puts @key into @err, whose message an inner layer wrote without it. */
static int g_rekey(struct store_error *err, int code, const char *key,
		   size_t key_len, const char *what)
{
	char msg[sizeof(err->msg)];

	if (!err)
		return code;
	snprintf(msg, sizeof(msg), "%s", err->msg);
	return store_fail(err, code, key, key_len, err->revision, "%s%s%s",
			  what ? what : "", what ? ": " : "", msg);
}

/*
 * Only writes have an unknown outcome (helper/errors.h): a read whose
 * answer was lost did nothing, and says unreachable, as store_read_rc.
 */
static int g_read_rc(bool write, int rc)
{
	return !write && rc == STORE_EUNKNOWN ? STORE_EUNREACHABLE : rc;
}

/* The kind of request @path is, for store_stats. */
static enum store_req g_kind(const char *path)
{
	if (strstr(path, "KV/Range"))
		return STORE_REQ_READ;
	if (strstr(path, "KV/"))
		return STORE_REQ_WRITE;
	if (strstr(path, "Lease/"))
		return STORE_REQ_LEASE;
	if (strstr(path, "Cluster/"))
		return STORE_REQ_MEMBERS;
	return STORE_REQ_STATUS;
}

/* What a call is, for g_call. */
#define G_READ		0u
#define G_WRITE		(1u << 0)	/* it may change the store */
#define G_BULK		(1u << 1)	/* its reply may be big */

/*
 * Calls @path with @req (freed here) about @key, a call of @kind.
 * Returns 0 with reply->code 0 and its message (released by the caller),
 * or an error with @err filled and nothing to release.
 */
static int g_call(struct store *s, const char *path, uint8_t *req, size_t len,
		  const char *key, size_t key_len, unsigned kind,
		  struct grpc_reply *reply, struct store_error *err)
{
	struct grpc_transport *t = etcd3g_transport(s);
	bool write = kind & G_WRITE;
	unsigned flags = (write ? 0 : GRPC_CALL_IDEMPOTENT) |
			 (kind & G_BULK ? GRPC_CALL_BULK : 0);
	char ep[1024];
	bool sent, retry;
	int rc, i;

	memset(reply, 0, sizeof(*reply));
	if (!req)
		return store_fail(err, STORE_EINTERNAL, key, key_len, 0,
				  "out of memory");
	for (i = 0;; i++) {
		int64_t start = thread_now_us();

		if (i)
			store_note_retry(s);
		rc = grpc_call(t, path, req, len, flags, reply, &sent, err);
		store_note(s, g_kind(path), path, key, key_len,
			   rc < 0 ? rc : reply->code ?
			   etcd3pb_map_error(reply->code, reply->message) : 0,
			   start, sent || rc == 0 ? len : 0,
			   rc < 0 ? 0 : reply->len);
		if (rc < 0) {
			free(req);
			return g_rekey(err, g_read_rc(write, rc), key, key_len,
				       NULL);
		}
		if (reply->code == 0)
			break;
		retry = write ? etcd3pb_error_not_applied(reply->code,
							  reply->message) :
			etcd3pb_error_transient(reply->code, reply->message);
		if (!retry || i + 1 >= G_RETRIES)
			break;
		snprintf(ep, sizeof(ep), "%s", grpc_transport_endpoint(t));
		grpc_transport_skip(t, ep);
		grpc_reply_release(reply);
		thread_pause(50L << i);
	}
	free(req);
	if (reply->code == 0)
		return 0;
	rc = g_read_rc(write, etcd3pb_map_error(reply->code, reply->message));
	if (write && store_err_unknown_outcome(rc))
		rc = store_fail(err, rc, key, key_len, 0, "%s: %s (%s), "
				"outcome unknown", path, reply->message,
				grpc_code_name(reply->code));
	else
		rc = store_fail(err, rc, key, key_len, 0, "%s: %s (%s)", path,
				reply->message[0] ? reply->message :
				"no message", grpc_code_name(reply->code));
	grpc_reply_release(reply);
	return rc;
}

/* A decoder's error @e into @err, naming @key and @path. */
static int g_decode_fail(struct store_error *err, const struct store_error *e,
			 const char *path, const char *key, size_t key_len)
{
	return store_fail(err, e->code, key, key_len, e->revision, "%s: %s",
			  path, e->msg);
}

static bool g_serializable(const struct store *s, unsigned flags)
{
	if (flags & STORE_READ_SERIAL)
		return true;
	if (flags & STORE_READ_QUORUM)
		return false;
	return !s->cfg.quorum;
}

static bool g_same_key(const struct store_kv *kv, const char *key,
		       size_t key_len)
{
	return kv->key_len == key_len && !memcmp(kv->key, key, key_len);
}

/* ---- init ---- */

static int g_init(struct store *s, struct store_error *err)
{
	const struct store_config *c = &s->cfg;
	struct grpc_transport_config gc = { 0 };
	struct endpoint_list eps;
	struct etcd3g *g;
	char why[256];
	int rc;

	/* the rules of store.c, which checked the list already */
	rc = endpoint_list_parse(&eps, c->endpoints ? c->endpoints :
				 ENDPOINT_DEFAULT, c->cacert || c->cert ||
				 c->key || c->insecure_skip_tls_verify, why,
				 sizeof(why));
	if (rc == -ENOMEM)
		return store_enomem(err, NULL, 0);
	if (rc < 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0, "%s", why);
	g = calloc(1, sizeof(*g));
	if (!g) {
		endpoint_list_release(&eps);
		return store_enomem(err, NULL, 0);
	}
	gc.endpoints = (const char *const *)eps.urls;
	gc.n_endpoints = eps.n;
	gc.cacert = c->cacert;
	gc.cert = c->cert;
	gc.key = c->key;
	gc.insecure_skip_tls_verify = c->insecure_skip_tls_verify;
	gc.user = c->user;
	gc.password = c->password;
	gc.connect_timeout_ms = c->connect_timeout_ms;
	gc.request_timeout_ms = c->request_timeout_ms;
	gc.max_msg_size = c->max_reply_size;
	gc.max_value_size = store_max_value_size(s);
	g->t = grpc_transport_new(&gc, err);
	endpoint_list_release(&eps);
	if (!g->t) {
		free(g);
		return err ? err->code : STORE_EINTERNAL;
	}
	s->be = g;
	return 0;
}

static void g_release(struct store *s)
{
	struct etcd3g *g = s->be;

	if (!g)
		return;
	grpc_transport_free(g->t);
	free(g);
	s->be = NULL;
}

static const char *g_endpoint(struct store *s)
{
	return grpc_transport_endpoint(etcd3g_transport(s));
}

static int g_set_endpoints(struct store *s, const char *const *eps, size_t n,
			   struct store_error *err)
{
	return grpc_transport_set_endpoints(etcd3g_transport(s), eps, n, err);
}

static uint64_t g_unreachable(struct store *s)
{
	return grpc_transport_unreachable_count(etcd3g_transport(s));
}

/* ---- reads ---- */

static int g_range_call(struct store *s, const struct etcd3pb_range_req *r,
			struct etcd3pb_result *res, struct store_error *err)
{
	struct grpc_reply reply;
	struct store_error e = { 0 };
	uint8_t *req;
	size_t len = 0;
	int rc;

	memset(res, 0, sizeof(*res));
	req = etcd3pb_req_range(r, &len);
	/* a range over many keys may be a big reply */
	rc = g_call(s, G_RANGE, req, len, r->key, r->key_len,
		    r->range_end && !r->count_only ? G_BULK : G_READ, &reply,
		    err);
	if (rc < 0)
		return rc;
	rc = etcd3pb_decode_range(reply.msg, reply.len, res, &e);
	grpc_reply_release(&reply);
	if (rc < 0)
		return g_decode_fail(err, &e, G_RANGE, r->key, r->key_len);
	return 0;
}

/* The cluster's revision by a linearizable count_only range. */
static int etcd3g_revision(struct store *s, int64_t *rev,
			   struct store_error *err)
{
	/* count one key, linearizably: the prefix (etcd has no empty key) */
	struct etcd3pb_range_req r = {
		.key = s->prefix_len ? s->prefix : "",
		.key_len = s->prefix_len ? s->prefix_len : 1,
		.count_only = true,
	};
	struct etcd3pb_result res;
	int rc;

	*rev = 0;
	rc = g_range_call(s, &r, &res, err);
	if (rc < 0)
		return rc;
	*rev = res.revision;
	etcd3pb_result_release(&res);
	return 0;
}

static int g_get(struct store *s, const char *key, size_t key_len,
		 unsigned flags, struct store_kv *out, struct store_error *err)
{
	struct etcd3pb_range_req r = {
		.key = key,
		.key_len = key_len,
		.serializable = g_serializable(s, flags),
		.keys_only = (flags & STORE_READ_KEYS_ONLY) != 0,
	};
	struct etcd3pb_result res;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = g_range_call(s, &r, &res, err);
	if (rc < 0)
		return rc;
	if (res.n == 0)
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found");
	else if (res.n > 1 || !g_same_key(&res.kvs[0], key, key_len))
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"%s: the server answered another key",
				G_RANGE);
	else
		store_kv_move(out, &res.kvs[0]);
	etcd3pb_result_release(&res);
	return rc;
}

static int g_range(struct store *s, const char *key, size_t key_len,
		   const char *range_end, size_t range_end_len, int64_t rev,
		   size_t limit, unsigned flags, struct store_list *out,
		   bool *more, int64_t *count, struct store_error *err)
{
	struct etcd3pb_range_req r = {
		.key = key,
		.key_len = key_len,
		.range_end = range_end,
		.range_end_len = range_end_len,
		.limit = limit <= INT64_MAX ? (int64_t)limit : 0,
		.revision = rev,
		.serializable = g_serializable(s, flags),
		.keys_only = (flags & STORE_READ_KEYS_ONLY) != 0,
	};
	struct etcd3pb_result res;
	size_t i;
	int rc;

	*more = false;
	if (count)
		*count = -1;
	rc = g_range_call(s, &r, &res, err);
	if (rc < 0)
		return rc;
	for (i = 0; i < res.n; i++) {
		rc = store_list_push_own(out, &res.kvs[i]);
		if (rc < 0) {
			rc = store_fail(err, rc, key, key_len, 0,
					"out of memory");
			break;
		}
	}
	if (rc == 0) {
		out->revision = rev > 0 ? rev : res.revision;
		*more = res.more;
		if (count)
			*count = res.count;
	}
	etcd3pb_result_release(&res);
	return rc;
}

/* Is @kv's key in [@key, @end) (@end "\0": to the end)? */
static bool g_in_span(const struct store_kv *kv, const struct store_span *sp)
{
	size_t n;
	int c;

	n = kv->key_len < sp->key_len ? kv->key_len : sp->key_len;
	c = memcmp(kv->key, sp->key, n);
	if (c < 0 || (c == 0 && kv->key_len < sp->key_len))
		return false;
	if (sp->range_end_len == 1 && sp->range_end[0] == '\0')
		return true;
	n = kv->key_len < sp->range_end_len ? kv->key_len : sp->range_end_len;
	c = memcmp(kv->key, sp->range_end, n);
	return c < 0 || (c == 0 && kv->key_len < sp->range_end_len);
}

/* Moves the count and first key of the txn's response @res into @sp. */
static int g_span_result(struct etcd3pb_result *res, struct store_span *sp,
			 struct store_error *err)
{
	if (res->op != ETCD3PB_RANGE || res->count < 0 ||
	    (res->count > 0) != (res->n == 1) || res->n > 1)
		return store_fail(err, STORE_EBADREPLY, sp->key, sp->key_len,
				  0, "%s: a count of %lld with %zu keys",
				  G_TXN, (long long)res->count, res->n);
	if (res->n && !g_in_span(&res->kvs[0], sp))
		return store_fail(err, STORE_EBADREPLY, sp->key, sp->key_len,
				  0, "%s: the server answered a key outside "
				  "the range", G_TXN);
	sp->count = res->count;
	if (res->n)
		store_kv_move(&sp->first, &res->kvs[0]);
	return 0;
}

/*
 * One read-only txn of ranges with a limit of 1: etcd counts each range,
 * walking its keys and no other.
 */
static int g_count(struct store *s, struct store_span *spans, size_t n,
		   int64_t rev, unsigned flags, struct store_error *err)
{
	struct etcd3pb_range_req r[STORE_SPANS_PER_REQUEST];
	struct store_error e = { 0 };
	struct etcd3pb_txn txn;
	struct grpc_reply reply;
	uint8_t *req;
	size_t len = 0, i;
	int rc;

	if (n == 0 || n > STORE_SPANS_PER_REQUEST)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "%zu ranges to count in one request", n);
	for (i = 0; i < n; i++) {
		spans[i].count = 0;
		memset(&spans[i].first, 0, sizeof(spans[i].first));
		r[i] = (struct etcd3pb_range_req){
			.key = spans[i].key,
			.key_len = spans[i].key_len,
			.range_end = spans[i].range_end,
			.range_end_len = spans[i].range_end_len,
			.limit = 1,
			.revision = rev,
			.serializable = g_serializable(s, flags),
			.keys_only = true,
		};
	}
	req = etcd3pb_req_txn_ranges(r, n, &len);
	rc = g_call(s, G_TXN, req, len, spans[0].key, spans[0].key_len,
		    G_READ, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3pb_decode_txn(reply.msg, reply.len, &txn, &e);
	grpc_reply_release(&reply);
	if (rc < 0)
		return g_decode_fail(err, &e, G_TXN, spans[0].key,
				     spans[0].key_len);
	if (!txn.succeeded || txn.n != n)
		rc = store_fail(err, STORE_EBADREPLY, spans[0].key,
				spans[0].key_len, 0, "%s: %zu responses to %zu "
				"ranges", G_TXN, txn.n, n);
	for (i = 0; rc == 0 && i < n; i++)
		rc = g_span_result(&txn.res[i], &spans[i], err);
	etcd3pb_txn_release(&txn);
	if (rc < 0)
		for (i = 0; i < n; i++)
			store_kv_release(&spans[i].first);
	return rc;
}

/* ---- writes ---- */

/*
 * Sends the txn @req about @key; its reply must have @n_ok responses if
 * it succeeded and @n_ko if not.
 */
static int g_txn_call(struct store *s, uint8_t *req, size_t len,
		      const char *key, size_t key_len, size_t n_ok,
		      size_t n_ko, struct etcd3pb_txn *txn,
		      struct store_error *err)
{
	struct grpc_reply reply;
	struct store_error e = { 0 };
	size_t want;
	int rc;

	memset(txn, 0, sizeof(*txn));
	rc = g_call(s, G_TXN, req, len, key, key_len, G_WRITE, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3pb_decode_txn(reply.msg, reply.len, txn, &e);
	grpc_reply_release(&reply);
	if (rc < 0)
		return g_decode_fail(err, &e, G_TXN, key, key_len);
	want = txn->succeeded ? n_ok : n_ko;
	if (txn->n != want) {
		etcd3pb_txn_release(txn);
		return store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				  "%s: %zu responses, not %zu", G_TXN, txn->n,
				  want);
	}
	return 0;
}

static bool g_txn_kinds(const struct etcd3pb_txn *txn, enum etcd3pb_op a,
			enum etcd3pb_op b)
{
	return txn->n >= 1 && txn->res[0].op == a &&
	       (txn->n < 2 || txn->res[1].op == b);
}

static int g_too_large(struct store *s, const char *key, size_t key_len,
		       size_t value_len, struct store_error *err)
{
	return store_fail(err, STORE_ETOOLARGE, key, key_len, 0,
			  "value of %zu bytes is larger than %zu bytes",
			  value_len, store_max_value_size(s));
}

static int g_cas(struct store *s, const char *key, size_t key_len,
		 int64_t expect, const char *value, size_t value_len,
		 int64_t lease, int64_t *rev, struct store_kv *cur,
		 struct store_error *err)
{
	struct etcd3pb_txn txn;
	struct etcd3pb_result *r;
	int64_t now = 0;
	uint8_t *req;
	size_t len = 0;
	int rc;

	if (cur)
		memset(cur, 0, sizeof(*cur));
	if (value_len > store_max_value_size(s))
		return g_too_large(s, key, key_len, value_len, err);
	/* an absent key has no lease to keep, and etcd fails such a put */
	if (lease == -1 && expect == 0)
		lease = 0;
	req = etcd3pb_req_cas(key, key_len, expect, value, value_len, lease,
			      &len);
	rc = g_txn_call(s, req, len, key, key_len, 1, 1, &txn, err);
	if (rc < 0)
		return rc;
	if (txn.succeeded) {
		if (!g_txn_kinds(&txn, ETCD3PB_PUT, ETCD3PB_PUT))
			rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
					"%s: a put answered as something else",
					G_TXN);
		else if (rev)
			*rev = txn.revision;
		goto out;
	}
	r = &txn.res[0];
	if (expect < 0 || r->op != ETCD3PB_RANGE || r->n > 1 ||
	    (r->n && !g_same_key(&r->kvs[0], key, key_len))) {
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"%s: a failed put came back without the key's "
				"state", G_TXN);
		goto out;
	}
	if (r->n) {
		now = r->kvs[0].mod_revision;
		store_kv_move(cur, &r->kvs[0]);
	}
	if (expect == 0)
		rc = store_fail(err, STORE_EPRECONDITION, key, key_len, now,
				"the key exists, at revision %lld",
				(long long)now);
	else if (!now)
		rc = store_fail(err, STORE_EPRECONDITION, key, key_len, 0,
				"the key was deleted since revision %lld",
				(long long)expect);
	else
		rc = store_fail(err, STORE_EPRECONDITION, key, key_len, now,
				"the key is at revision %lld, not %lld",
				(long long)now, (long long)expect);
out:
	etcd3pb_txn_release(&txn);
	return rc;
}

static int g_del(struct store *s, const char *key, size_t key_len,
		 int64_t expect_mod, int64_t expect_create,
		 struct store_kv *prev, int64_t *rev, struct store_error *err)
{
	struct etcd3pb_txn txn;
	struct etcd3pb_result *r;
	uint8_t *req;
	size_t len = 0;
	int rc;

	if (prev)
		memset(prev, 0, sizeof(*prev));
	req = etcd3pb_req_delete(key, key_len, expect_mod, expect_create,
				 &len);
	rc = g_txn_call(s, req, len, key, key_len, 1, 1, &txn, err);
	if (rc < 0)
		return rc;
	r = &txn.res[0];
	if (r->op != (txn.succeeded ? ETCD3PB_DELETE : ETCD3PB_RANGE) ||
	    r->n > 1 || (r->n && !g_same_key(&r->kvs[0], key, key_len))) {
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"%s: a delete came back with another key or "
				"response", G_TXN);
		goto out;
	}
	if (txn.succeeded) {
		if (r->count == 0) {
			rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
					"key not found");
			goto out;
		}
		if (r->n)
			store_kv_move(prev, &r->kvs[0]);
		if (rev)
			*rev = txn.revision;
		goto out;
	}
	if (!r->n) {
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found");
		goto out;
	}
	rc = store_fail(err, STORE_EPRECONDITION, key, key_len,
			r->kvs[0].mod_revision,
			"the key is at revision %lld, created at %lld",
			(long long)r->kvs[0].mod_revision,
			(long long)r->kvs[0].create_revision);
	store_kv_move(prev, &r->kvs[0]);
out:
	etcd3pb_txn_release(&txn);
	return rc;
}

/* Whether @cur (NULL: absent) passes compares on @mod and @create. */
static bool g_holds(const struct store_kv *cur, int64_t mod, int64_t create)
{
	if (mod >= 0 && (cur ? cur->mod_revision : 0) != mod)
		return false;
	if (create > 0 && (!cur || cur->create_revision != create))
		return false;
	return true;
}

/* The compares of @pre: mod -1 unchecked, 0 absent; create 0 unchecked. */
static void g_compares(const struct store_preconditions *pre, int64_t *mod,
		       int64_t *create)
{
	*mod = -1;
	*create = 0;
	if (!pre)
		return;
	if (pre->mod_revision == STORE_REV_ABSENT)
		*mod = 0;
	else if (pre->mod_revision > 0)
		*mod = pre->mod_revision;
	if (pre->create_revision > 0)
		*create = pre->create_revision;
}

/*
 * What a failed rename's reply says: EPRECONDITION, ENOTFOUND, or 1 when
 * only the value read went stale (read it again).
 */
static int g_move_failed(const struct etcd3pb_txn *txn, const char *from,
			 size_t from_len, const char *to, size_t to_len,
			 int64_t from_mod, int64_t from_create, int64_t to_mod,
			 int64_t to_create, bool implicit,
			 struct store_error *err)
{
	const struct store_kv *fcur, *tcur;

	if (!g_txn_kinds(txn, ETCD3PB_RANGE, ETCD3PB_RANGE) ||
	    txn->res[0].n > 1 || txn->res[1].n > 1)
		return store_fail(err, STORE_EBADREPLY, from, from_len, 0,
				  "%s: a failed rename came back without the "
				  "keys' state", G_TXN);
	fcur = txn->res[0].n ? &txn->res[0].kvs[0] : NULL;
	tcur = txn->res[1].n ? &txn->res[1].kvs[0] : NULL;
	if (!g_holds(tcur, to_mod, to_create))
		return store_fail(err, STORE_EPRECONDITION, to, to_len,
				  tcur ? tcur->mod_revision : 0,
				  "the target %s", tcur ? "exists or changed" :
				  "is gone");
	if (g_holds(fcur, from_mod, from_create))
		return store_fail(err, STORE_EBADREPLY, from, from_len, 0,
				  "%s: a rename failed with its compares "
				  "holding", G_TXN);
	if (!fcur)
		return store_fail(err, STORE_ENOTFOUND, from, from_len, 0,
				  "key not found");
	if (!implicit || !g_holds(fcur, -1, from_create))
		return store_fail(err, STORE_EPRECONDITION, from, from_len,
				  fcur->mod_revision, "the source changed");
	return 1;
}

static int g_move(struct store *s, const char *from, size_t from_len,
		  const struct store_preconditions *pre_from, const char *to,
		  size_t to_len, const struct store_preconditions *pre_to,
		  const char *value, size_t value_len, int64_t *rev,
		  struct store_error *err)
{
	struct store_kv src = { 0 };
	struct etcd3pb_txn txn;
	int64_t from_mod, from_create, to_mod, to_create;
	uint8_t *req;
	size_t len = 0;
	bool implicit;
	int rc, attempt;

	if (from_len == to_len && !memcmp(from, to, from_len))
		return store_fail(err, STORE_EINVAL, from, from_len, 0,
				  "rename of a key onto itself");
	for (attempt = 0; attempt < G_MOVE_ATTEMPTS; attempt++) {
		g_compares(pre_from, &from_mod, &from_create);
		g_compares(pre_to, &to_mod, &to_create);
		implicit = false;
		if (!value) {
			/* a txn cannot copy a value: read it, check it */
			rc = g_get(s, from, from_len, STORE_READ_QUORUM, &src,
				   err);
			if (rc < 0)
				return rc;
			rc = 0;
			if (!g_holds(&src, from_mod, from_create))
				rc = store_fail(err, STORE_EPRECONDITION, from,
						from_len, src.mod_revision,
						"the source is at revision "
						"%lld",
						(long long)src.mod_revision);
			else if (src.value_len > store_max_value_size(s))
				rc = g_too_large(s, to, to_len, src.value_len,
						 err);
			if (rc < 0) {
				store_kv_release(&src);
				return rc;
			}
			if (from_mod < 0) {
				from_mod = src.mod_revision;
				implicit = true;
			}
		} else if (value_len > store_max_value_size(s)) {
			return g_too_large(s, to, to_len, value_len, err);
		}
		req = etcd3pb_req_move(from, from_len, from_mod, from_create,
				       to, to_len, to_mod, to_create,
				       value ? value : src.value,
				       value ? value_len : src.value_len,
				       &len);
		rc = g_txn_call(s, req, len, from, from_len, 2, 2, &txn, err);
		store_kv_release(&src);
		if (rc < 0)
			return rc;
		if (txn.succeeded) {
			if (!g_txn_kinds(&txn, ETCD3PB_PUT, ETCD3PB_DELETE))
				rc = store_fail(err, STORE_EBADREPLY, from,
						from_len, 0, "%s: a rename "
						"answered as something else",
						G_TXN);
			else if (rev)
				*rev = txn.revision;
			etcd3pb_txn_release(&txn);
			return rc;
		}
		rc = g_move_failed(&txn, from, from_len, to, to_len, from_mod,
				   from_create, to_mod, to_create, implicit,
				   err);
		etcd3pb_txn_release(&txn);
		if (rc < 0)
			return rc;
	}
	return store_fail(err, STORE_ECONFLICT, from, from_len, 0,
			  "the source kept changing during the rename");
}

static int g_move_keys(struct store *s, const struct store_move_key *keys,
		       size_t n, const struct store_move_guard *guard,
		       int64_t *rev, struct store_error *err)
{
	struct etcd3pb_move_ranges r = { 0 };
	struct etcd3pb_txn txn;
	uint8_t *req;
	size_t len = 0, i;
	int rc;

	for (i = 0; i < n; i++)
		if (keys[i].value_len > store_max_value_size(s))
			return g_too_large(s, keys[i].to, keys[i].to_len,
					   keys[i].value_len, err);
	if (guard) {
		r.from = guard->from_prefix;
		r.from_len = guard->from_prefix_len;
		r.revision = guard->revision;
		r.to = guard->to_prefix;
		r.to_len = guard->to_prefix_len;
		r.from_end = store_range_end(r.from, r.from_len,
					     &r.from_end_len);
		r.to_end = store_range_end(r.to, r.to_len, &r.to_end_len);
	}
	if (guard && (!r.from_end || !r.to_end))
		req = NULL;
	else
		req = etcd3pb_req_move_keys(keys, n, guard ? &r : NULL, &len);
	free((char *)r.from_end);
	free((char *)r.to_end);
	rc = g_txn_call(s, req, len, keys[0].from, keys[0].from_len, 2 * n,
			0, &txn, err);
	if (rc < 0)
		return rc;
	if (!txn.succeeded)
		rc = store_fail(err, STORE_EPRECONDITION, keys[0].from,
				keys[0].from_len, 0, "a key changed, or a "
				"target exists, since the mount saw them");
	for (i = 0; rc == 0 && i < n; i++)
		if (!g_txn_kinds(&txn, ETCD3PB_PUT, ETCD3PB_DELETE) ||
		    txn.res[2 * i].op != ETCD3PB_PUT ||
		    txn.res[2 * i + 1].op != ETCD3PB_DELETE)
			rc = store_fail(err, STORE_EBADREPLY, keys[0].from,
					keys[0].from_len, 0, "%s: a move "
					"answered as something else", G_TXN);
	if (rc == 0 && rev)
		*rev = txn.revision;
	etcd3pb_txn_release(&txn);
	return rc;
}

/* ---- leases, members ---- */

/*
 * A write, even with an id: the transport must not send it again by
 * itself, for a second copy of a grant that was applied is "lease already
 * exists", which only the caller can tell from another's lease.
 */
static int g_lease_grant(struct store *s, int64_t ttl, int64_t *id,
			 struct store_error *err)
{
	static const char path[] = "/etcdserverpb.Lease/LeaseGrant";
	struct grpc_reply reply;
	struct store_error e = { 0 };
	int64_t want = *id, got, granted;
	uint8_t *req;
	size_t len = 0;
	int rc;

	req = etcd3pb_req_lease_grant(ttl, want, &len);
	rc = g_call(s, path, req, len, NULL, 0, G_WRITE, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3pb_decode_lease_grant(reply.msg, reply.len, &got, &granted,
					&e);
	grpc_reply_release(&reply);
	if (rc < 0)
		return g_decode_fail(err, &e, path, NULL, 0);
	if (want && got != want)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "%s: lease %llx granted, not %llx", path,
				  (long long)got, (long long)want);
	*id = got;
	return 0;
}

/* Revoking a lease deletes its keys: a write. */
static int g_lease_revoke(struct store *s, int64_t id,
			  struct store_error *err)
{
	static const char path[] = "/etcdserverpb.Lease/LeaseRevoke";
	struct grpc_reply reply;
	uint8_t *req;
	size_t len = 0;
	int rc;

	req = etcd3pb_req_lease_revoke(id, &len);
	rc = g_call(s, path, req, len, NULL, 0, G_WRITE, &reply, err);
	if (rc < 0)
		return rc;
	grpc_reply_release(&reply);
	return 0;
}

static int g_lease_ttl(struct store *s, int64_t id, int64_t *ttl,
		       struct store_error *err)
{
	static const char path[] = "/etcdserverpb.Lease/LeaseTimeToLive";
	struct grpc_reply reply;
	struct store_error e = { 0 };
	int64_t got;
	uint8_t *req;
	size_t len = 0;
	int rc;

	*ttl = -1;
	req = etcd3pb_req_lease_ttl(id, &len);
	rc = g_call(s, path, req, len, NULL, 0, G_READ, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3pb_decode_lease_ttl(reply.msg, reply.len, &got, ttl, &e);
	grpc_reply_release(&reply);
	if (rc < 0)
		return g_decode_fail(err, &e, path, NULL, 0);
	return 0;
}

static int g_members(struct store *s, struct store_member **members,
		     size_t *n, struct store_error *err)
{
	static const char path[] = "/etcdserverpb.Cluster/MemberList";
	struct grpc_reply reply;
	struct store_error e = { 0 };
	uint8_t *req;
	size_t len = 0;
	int rc;

	*members = NULL;
	*n = 0;
	req = etcd3pb_req_members(&len);
	rc = g_call(s, path, req, len, NULL, 0, G_READ, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3pb_decode_members(reply.msg, reply.len, members, n, &e);
	grpc_reply_release(&reply);
	if (rc < 0)
		return g_decode_fail(err, &e, path, NULL, 0);
	return 0;
}

static int g_status(struct store *s, struct store_status *out,
		    struct store_error *err)
{
	static const char path[] = "/etcdserverpb.Maintenance/Status";
	struct grpc_reply reply;
	struct store_error e = { 0 };
	struct etcd3pb_status st;
	uint8_t *req;
	size_t len = 0;
	int rc;

	req = etcd3pb_req_status(&len);
	rc = g_call(s, path, req, len, NULL, 0, G_READ, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3pb_decode_status(reply.msg, reply.len, &st, &e);
	grpc_reply_release(&reply);
	if (rc < 0)
		return g_decode_fail(err, &e, path, NULL, 0);
	out->db_size = st.db_size;
	out->db_size_in_use = st.db_size_in_use;
	/* each alarm is "memberID:N alarm:NOSPACE" in the errors */
	out->nospace = strstr(st.errors, "NOSPACE") != NULL;
	return 0;
}

const struct store_backend store_etcd3_backend = {
	.name = "etcd3",
	.past_reads = true,
	.init = g_init,
	.release = g_release,
	.revision = etcd3g_revision,
	.status = g_status,
	.get = g_get,
	.range = g_range,
	.count = g_count,
	.cas = g_cas,
	.del = g_del,
	.move = g_move,
	.move_keys = g_move_keys,
	.lease_grant = g_lease_grant,
	.lease_revoke = g_lease_revoke,
	.lease_ttl = g_lease_ttl,
	.watch = etcd3g_watch,
	.watch_stop = etcd3g_watch_stop,
	.watch_progress = etcd3g_watch_progress,
	.members = g_members,
	.endpoint = g_endpoint,
	.set_endpoints = g_set_endpoints,
	.unreachable_count = g_unreachable,
};
