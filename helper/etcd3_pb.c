/*
 * etcd3_pb.c - etcd v3 gRPC replies to the store's types, and etcd's
 * errors to store errors (etcd3_pb.h)
 *
 * Replies are unpacked by protobuf-c (which rejects bad wire types and
 * lengths and skips unknown fields), then checked and copied into store
 * types, so that nothing of protobuf-c leaks past this file.  Requests are
 * etcd3_pb_req.c's.
 *
 * What it cannot do: see etcd3_pb.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd3_pb.h"
#include "grpc_frame.h"
#include "rpc.pb-c.h"

/* A token longer than this, or with bytes a header cannot carry, is bad. */
#define ETCD3PB_TOKEN_MAX 4096

static int pb_fail(struct store_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int pb_fail(struct store_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		memset(err, 0, sizeof(*err));
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- replies ---- */

static void pb_kvs_free(struct store_kv *kvs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_kv_release(&kvs[i]);
	free(kvs);
}

void etcd3pb_result_release(struct etcd3pb_result *r)
{
	if (!r)
		return;
	pb_kvs_free(r->kvs, r->n);
	memset(r, 0, sizeof(*r));
}

void etcd3pb_txn_release(struct etcd3pb_txn *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		etcd3pb_result_release(&t->res[i]);
	free(t->res);
	memset(t, 0, sizeof(*t));
}

/*
 * Copies @kv into @out after checking it; @what names it in messages.
 * @full: a key with its revisions (a range or a put event), else only the
 * key and mod_revision are required (a delete event).
 */
static int pb_kv(const Mvccpb__KeyValue *kv, struct store_kv *out, bool full,
		 const char *what, struct store_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!kv)
		return pb_fail(err, STORE_EBADREPLY, "'%s' is missing", what);
	if (kv->key.len == 0)
		return pb_fail(err, STORE_EBADREPLY, "'%s.key' is empty", what);
	if (kv->mod_revision <= 0 || kv->create_revision < 0 ||
	    kv->version < 0 || kv->lease < 0 ||
	    (full && (kv->create_revision <= 0 || kv->version <= 0 ||
		      kv->create_revision > kv->mod_revision)))
		return pb_fail(err, STORE_EBADREPLY,
			       "'%s' has bad revisions (create %lld, mod %lld, "
			       "version %lld, lease %lld)", what,
			       (long long)kv->create_revision,
			       (long long)kv->mod_revision,
			       (long long)kv->version, (long long)kv->lease);
	out->key = store_memdup((const char *)kv->key.data, kv->key.len);
	out->value = store_memdup((const char *)kv->value.data,
				  kv->value.len);
	if (!out->key || !out->value) {
		store_kv_release(out);
		return pb_fail(err, STORE_EINTERNAL, "out of memory");
	}
	out->key_len = kv->key.len;
	out->value_len = kv->value.len;
	out->create_revision = kv->create_revision;
	out->mod_revision = kv->mod_revision;
	out->version = kv->version;
	out->lease = kv->lease;
	return 0;
}

static int pb_kvs(Mvccpb__KeyValue **kvs, size_t n, struct etcd3pb_result *out,
		  const char *what, struct store_error *err)
{
	char name[64];
	size_t i;
	int rc;

	if (n == 0)
		return 0;
	out->kvs = calloc(n, sizeof(*out->kvs));
	if (!out->kvs)
		return pb_fail(err, STORE_EINTERNAL, "out of memory");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s[%zu]", what, i);
		rc = pb_kv(kvs[i], &out->kvs[i], true, name, err);
		if (rc < 0) {
			pb_kvs_free(out->kvs, i);
			out->kvs = NULL;
			return rc;
		}
	}
	out->n = n;
	return 0;
}

/* header.revision, which must be there and positive. */
static int pb_header(const Etcdserverpb__ResponseHeader *h, int64_t *rev,
		     const char *what, struct store_error *err)
{
	if (!h)
		return pb_fail(err, STORE_EBADREPLY, "%s: no 'header'", what);
	if (h->revision <= 0)
		return pb_fail(err, STORE_EBADREPLY,
			       "%s: bad 'header.revision' %lld", what,
			       (long long)h->revision);
	*rev = h->revision;
	return 0;
}

static int pb_unpack_fail(struct store_error *err, const char *what,
			  size_t len)
{
	return pb_fail(err, STORE_EBADREPLY, "%s: not a valid message (%zu "
		       "bytes)", what, len);
}

static int pb_range(const Etcdserverpb__RangeResponse *m,
		    struct etcd3pb_result *out, struct store_error *err)
{
	int rc;

	out->op = ETCD3PB_RANGE;
	rc = pb_header(m->header, &out->revision, "range", err);
	if (rc < 0)
		return rc;
	if (m->count < 0 || (uint64_t)m->count < m->n_kvs)
		return pb_fail(err, STORE_EBADREPLY, "range: 'count' %lld is "
			       "below the %zu keys sent", (long long)m->count,
			       m->n_kvs);
	rc = pb_kvs(m->kvs, m->n_kvs, out, "kvs", err);
	if (rc < 0)
		return rc;
	out->count = m->count;
	out->more = m->more;
	return 0;
}

static int pb_put(const Etcdserverpb__PutResponse *m,
		  struct etcd3pb_result *out, struct store_error *err)
{
	int rc;

	out->op = ETCD3PB_PUT;
	rc = pb_header(m->header, &out->revision, "put", err);
	if (rc < 0 || !m->prev_kv)
		return rc;
	return pb_kvs((Mvccpb__KeyValue **)&m->prev_kv, 1, out, "prev_kv",
		      err);
}

static int pb_delete(const Etcdserverpb__DeleteRangeResponse *m,
		     struct etcd3pb_result *out, struct store_error *err)
{
	int rc;

	out->op = ETCD3PB_DELETE;
	rc = pb_header(m->header, &out->revision, "delete", err);
	if (rc < 0)
		return rc;
	if (m->deleted < 0 || (m->n_prev_kvs && (uint64_t)m->deleted !=
						   m->n_prev_kvs))
		return pb_fail(err, STORE_EBADREPLY, "delete: 'deleted' %lld "
			       "with %zu previous keys", (long long)m->deleted,
			       m->n_prev_kvs);
	rc = pb_kvs(m->prev_kvs, m->n_prev_kvs, out, "prev_kvs", err);
	if (rc == 0)
		out->count = m->deleted;
	return rc;
}

/* Unpacks @type from @msg into @var, or fails naming @what. */
#define PB_UNPACK(var, type, msg, len, what, err)			\
	do {								\
		var = etcdserverpb__##type##__unpack(NULL, len, msg);	\
		if (!var)						\
			return pb_unpack_fail(err, what, len);		\
	} while (0)

int etcd3pb_decode_range(const uint8_t *msg, size_t len,
			 struct etcd3pb_result *out, struct store_error *err)
{
	Etcdserverpb__RangeResponse *m;
	int rc;

	memset(out, 0, sizeof(*out));
	PB_UNPACK(m, range_response, msg, len, "range", err);
	rc = pb_range(m, out, err);
	etcdserverpb__range_response__free_unpacked(m, NULL);
	return rc;
}

int etcd3pb_decode_put(const uint8_t *msg, size_t len,
		       struct etcd3pb_result *out, struct store_error *err)
{
	Etcdserverpb__PutResponse *m;
	int rc;

	memset(out, 0, sizeof(*out));
	PB_UNPACK(m, put_response, msg, len, "put", err);
	rc = pb_put(m, out, err);
	etcdserverpb__put_response__free_unpacked(m, NULL);
	return rc;
}

int etcd3pb_decode_delete(const uint8_t *msg, size_t len,
			  struct etcd3pb_result *out, struct store_error *err)
{
	Etcdserverpb__DeleteRangeResponse *m;
	int rc;

	memset(out, 0, sizeof(*out));
	PB_UNPACK(m, delete_range_response, msg, len, "delete", err);
	rc = pb_delete(m, out, err);
	etcdserverpb__delete_range_response__free_unpacked(m, NULL);
	return rc;
}

static int pb_txn(const Etcdserverpb__TxnResponse *m, struct etcd3pb_txn *out,
		  struct store_error *err)
{
	const Etcdserverpb__ResponseOp *op;
	size_t i;
	int rc;

	rc = pb_header(m->header, &out->revision, "txn", err);
	if (rc < 0)
		return rc;
	out->succeeded = m->succeeded;
	if (m->n_responses == 0)
		return 0;
	out->res = calloc(m->n_responses, sizeof(*out->res));
	if (!out->res)
		return pb_fail(err, STORE_EINTERNAL, "out of memory");
	for (i = 0; i < m->n_responses; i++) {
		op = m->responses[i];
		switch (op->response_case) {
		case ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_RANGE:
			rc = pb_range(op->response_range, &out->res[i], err);
			break;
		case ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_PUT:
			rc = pb_put(op->response_put, &out->res[i], err);
			break;
		case ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_DELETE_RANGE:
			rc = pb_delete(op->response_delete_range, &out->res[i],
				       err);
			break;
		default:
			rc = pb_fail(err, STORE_EBADREPLY, "txn: response %zu "
				     "is of no known kind", i);
			break;
		}
		out->n = i + 1;
		if (rc < 0)
			return rc;
	}
	return 0;
}

int etcd3pb_decode_txn(const uint8_t *msg, size_t len, struct etcd3pb_txn *out,
		       struct store_error *err)
{
	Etcdserverpb__TxnResponse *m;
	int rc;

	memset(out, 0, sizeof(*out));
	PB_UNPACK(m, txn_response, msg, len, "txn", err);
	rc = pb_txn(m, out, err);
	etcdserverpb__txn_response__free_unpacked(m, NULL);
	if (rc < 0)
		etcd3pb_txn_release(out);
	return rc;
}

int etcd3pb_decode_lease_grant(const uint8_t *msg, size_t len, int64_t *id,
			       int64_t *ttl, struct store_error *err)
{
	Etcdserverpb__LeaseGrantResponse *m;
	int64_t rev;
	int rc;

	*id = 0;
	*ttl = 0;
	PB_UNPACK(m, lease_grant_response, msg, len, "lease grant", err);
	rc = pb_header(m->header, &rev, "lease grant", err);
	if (rc == 0 && m->error && m->error[0])
		rc = pb_fail(err, STORE_EINTERNAL, "lease grant: %.200s",
			     m->error);
	else if (rc == 0 && (m->id <= 0 || m->ttl <= 0))
		rc = pb_fail(err, STORE_EBADREPLY, "lease grant: bad 'ID' %lld "
			     "or 'TTL' %lld", (long long)m->id,
			     (long long)m->ttl);
	if (rc == 0) {
		*id = m->id;
		*ttl = m->ttl;
	}
	etcdserverpb__lease_grant_response__free_unpacked(m, NULL);
	return rc;
}

int etcd3pb_decode_lease_ttl(const uint8_t *msg, size_t len, int64_t *id,
			     int64_t *ttl, struct store_error *err)
{
	Etcdserverpb__LeaseTimeToLiveResponse *m;

	/* KeepAlive's reply has the same fields 1-3: header, ID, TTL. */
	*id = 0;
	*ttl = -1;
	PB_UNPACK(m, lease_time_to_live_response, msg, len, "lease ttl", err);
	if (!m->header) {
		etcdserverpb__lease_time_to_live_response__free_unpacked(m,
									 NULL);
		return pb_fail(err, STORE_EBADREPLY, "lease ttl: no 'header'");
	}
	*id = m->id;
	*ttl = m->ttl > 0 ? m->ttl : -1;
	etcdserverpb__lease_time_to_live_response__free_unpacked(m, NULL);
	return 0;
}

int etcd3pb_decode_authenticate(const uint8_t *msg, size_t len, char **token,
				struct store_error *err)
{
	Etcdserverpb__AuthenticateResponse *m;
	size_t i, n;
	int rc = 0;

	*token = NULL;
	PB_UNPACK(m, authenticate_response, msg, len, "authenticate", err);
	n = m->token ? strlen(m->token) : 0;
	if (n == 0 || n > ETCD3PB_TOKEN_MAX)
		rc = pb_fail(err, STORE_EBADREPLY, "authenticate: no usable "
			     "'token'");
	for (i = 0; rc == 0 && i < n; i++)
		if ((unsigned char)m->token[i] < 0x21 ||
		    (unsigned char)m->token[i] > 0x7e)
			rc = pb_fail(err, STORE_EBADREPLY, "authenticate: "
				     "the 'token' has a byte a header cannot "
				     "carry");
	if (rc == 0) {
		*token = strdup(m->token);
		if (!*token)
			rc = pb_fail(err, STORE_EINTERNAL, "out of memory");
	}
	if (m->token)
		memset(m->token, 0, n);
	etcdserverpb__authenticate_response__free_unpacked(m, NULL);
	return rc;
}

static int pb_member(const Etcdserverpb__Member *m, struct store_member *out,
		     size_t i, struct store_error *err)
{
	size_t j;

	if (m->id == 0)
		return pb_fail(err, STORE_EBADREPLY, "members[%zu]: no 'ID'",
			       i);
	out->id = m->id;
	out->name = strdup(m->name ? m->name : "");
	if (!out->name)
		return pb_fail(err, STORE_EINTERNAL, "out of memory");
	if (m->n_clienturls == 0)
		return 0;
	out->client_urls = calloc(m->n_clienturls, sizeof(char *));
	if (!out->client_urls)
		return pb_fail(err, STORE_EINTERNAL, "out of memory");
	for (j = 0; j < m->n_clienturls; j++) {
		out->client_urls[j] = strdup(m->clienturls[j]);
		if (!out->client_urls[j])
			return pb_fail(err, STORE_EINTERNAL, "out of memory");
		out->n_client_urls = j + 1;
	}
	return 0;
}

int etcd3pb_decode_members(const uint8_t *msg, size_t len,
			   struct store_member **members, size_t *n,
			   struct store_error *err)
{
	Etcdserverpb__MemberListResponse *m;
	struct store_member *out = NULL;
	size_t i;
	int rc = 0;

	*members = NULL;
	*n = 0;
	PB_UNPACK(m, member_list_response, msg, len, "member list", err);
	if (!m->header)
		rc = pb_fail(err, STORE_EBADREPLY, "member list: no 'header'");
	else if (m->n_members == 0)
		rc = pb_fail(err, STORE_EBADREPLY, "member list: no member");
	if (rc == 0) {
		out = calloc(m->n_members, sizeof(*out));
		if (!out)
			rc = pb_fail(err, STORE_EINTERNAL, "out of memory");
	}
	for (i = 0; rc == 0 && i < m->n_members; i++)
		rc = pb_member(m->members[i], &out[i], i, err);
	if (rc == 0) {
		*members = out;
		*n = m->n_members;
	} else if (out) {
		store_members_free(out, m->n_members);
	}
	etcdserverpb__member_list_response__free_unpacked(m, NULL);
	return rc;
}

int etcd3pb_decode_status(const uint8_t *msg, size_t len,
			  struct etcd3pb_status *out, struct store_error *err)
{
	Etcdserverpb__StatusResponse *m;
	size_t i, o = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	PB_UNPACK(m, status_response, msg, len, "status", err);
	rc = pb_header(m->header, &out->revision, "status", err);
	if (rc == 0 && (m->dbsize < 0 || m->dbsizeinuse < 0))
		rc = pb_fail(err, STORE_EBADREPLY, "status: bad 'dbSize' %lld "
			     "or 'dbSizeInUse' %lld", (long long)m->dbsize,
			     (long long)m->dbsizeinuse);
	if (rc == 0) {
		out->member_id = m->header->member_id;
		out->leader = m->leader;
		out->raft_index = m->raftindex;
		out->raft_term = m->raftterm;
		out->db_size = m->dbsize;
		out->db_size_in_use = m->dbsizeinuse;
		grpc_percent_decode(m->version ? m->version : "",
				    m->version ? strlen(m->version) : 0,
				    out->version, sizeof(out->version));
		for (i = 0; i < m->n_errors && o + 1 < sizeof(out->errors);
		     i++) {
			snprintf(out->errors + o, sizeof(out->errors) - o,
				 "%s%s", i ? "; " : "", m->errors[i]);
			o = strlen(out->errors);
		}
	}
	etcdserverpb__status_response__free_unpacked(m, NULL);
	return rc;
}

/* ---- the watch stream ---- */

void etcd3pb_watch_msg_release(struct etcd3pb_watch_msg *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++) {
		store_kv_release(&m->events[i].kv);
		store_kv_release(&m->events[i].prev_kv);
	}
	free(m->events);
	memset(m, 0, sizeof(*m));
}

static int pb_event(const Mvccpb__Event *e, struct etcd3pb_watch_event *out,
		    size_t i, struct store_error *err)
{
	char name[48];
	int rc;

	if (e->type != MVCCPB__EVENT__EVENT_TYPE__PUT &&
	    e->type != MVCCPB__EVENT__EVENT_TYPE__DELETE)
		return pb_fail(err, STORE_EBADREPLY, "events[%zu]: unknown "
			       "type %d", i, (int)e->type);
	out->type = e->type == MVCCPB__EVENT__EVENT_TYPE__PUT ?
		    STORE_EV_PUT : STORE_EV_DELETE;
	snprintf(name, sizeof(name), "events[%zu].kv", i);
	rc = pb_kv(e->kv, &out->kv, out->type == STORE_EV_PUT, name, err);
	if (rc < 0)
		return rc;
	out->revision = out->kv.mod_revision;
	if (e->prev_kv) {
		snprintf(name, sizeof(name), "events[%zu].prev_kv", i);
		rc = pb_kv(e->prev_kv, &out->prev_kv, true, name, err);
	}
	return rc;
}

/* "rpc error: code = Unauthenticated desc = ..." -> 16; -1 if none. */
static int pb_reason_code(const char *reason)
{
	static const char *const names[] = {
		"OK", "Canceled", "Unknown", "InvalidArgument",
		"DeadlineExceeded", "NotFound", "AlreadyExists",
		"PermissionDenied", "ResourceExhausted", "FailedPrecondition",
		"Aborted", "OutOfRange", "Unimplemented", "Internal",
		"Unavailable", "DataLoss", "Unauthenticated",
	};
	const char *p = reason ? strstr(reason, "code = ") : NULL;
	size_t i, n;

	if (!p)
		return -1;
	p += strlen("code = ");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		n = strlen(names[i]);
		if (!strncmp(p, names[i], n) && (p[n] == ' ' || !p[n]))
			return (int)i;
	}
	return -1;
}

static int pb_watch(const Etcdserverpb__WatchResponse *m,
		    struct etcd3pb_watch_msg *out, struct store_error *err)
{
	size_t i;
	int rc;

	out->revision = m->header ? m->header->revision : 0;
	out->watch_id = m->watch_id;
	out->fragment = m->fragment;
	if (m->canceled) {
		out->kind = ETCD3PB_WATCH_CANCELED;
		out->compact_revision = m->compact_revision;
		grpc_percent_decode(m->cancel_reason ? m->cancel_reason : "",
				    m->cancel_reason ?
				    strlen(m->cancel_reason) : 0,
				    out->msg, sizeof(out->msg));
		out->err = m->compact_revision > 0 ? STORE_ECOMPACTED :
			   etcd3pb_map_error(pb_reason_code(out->msg),
					     out->msg);
		return 0;
	}
	if (m->n_events) {
		out->kind = ETCD3PB_WATCH_EVENTS;
		out->events = calloc(m->n_events, sizeof(*out->events));
		if (!out->events)
			return pb_fail(err, STORE_EINTERNAL, "out of memory");
		for (i = 0; i < m->n_events; i++) {
			rc = pb_event(m->events[i], &out->events[i], i, err);
			out->n = i + 1;
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (m->created) {
		out->kind = ETCD3PB_WATCH_CREATED;
		return 0;
	}
	out->kind = ETCD3PB_WATCH_PROGRESS;
	if (out->revision <= 0)
		return pb_fail(err, STORE_EBADREPLY, "watch: a progress "
			       "notification without a revision");
	return 0;
}

int etcd3pb_decode_watch(const uint8_t *msg, size_t len,
			 struct etcd3pb_watch_msg *out,
			 struct store_error *err)
{
	Etcdserverpb__WatchResponse *m;
	int rc;

	memset(out, 0, sizeof(*out));
	PB_UNPACK(m, watch_response, msg, len, "watch", err);
	rc = pb_watch(m, out, err);
	etcdserverpb__watch_response__free_unpacked(m, NULL);
	if (rc < 0)
		etcd3pb_watch_msg_release(out);
	return rc;
}

/* ---- errors ---- */

static bool has(const char *s, const char *what)
{
	return s && strstr(s, what);
}

int etcd3pb_map_error(int code, const char *m)
{
	/* messages first: they are more precise than the codes */
	if (has(m, "required revision has been compacted"))
		return STORE_ECOMPACTED;
	if (has(m, "required revision is a future revision"))
		return STORE_EINVAL;
	if (has(m, "database space exceeded"))
		return STORE_ENOSPC;
	if (has(m, "request is too large") || has(m, "larger than max") ||
	    has(m, "message larger than"))
		return STORE_ETOOLARGE;
	/* refused before it was proposed, or dropped by raft before it
	 * was appended: nothing done (etcd3pb_error_not_applied) */
	if (etcd3pb_error_not_applied(code, m))
		return STORE_EUNREACHABLE;
	/* a leader lost or a member stopping mid-request: maybe applied */
	if (has(m, "leader changed") || has(m, "server stopped"))
		return STORE_EUNKNOWN;
	if (has(m, "user name is empty") || has(m, "authentication failed") ||
	    has(m, "invalid auth token") || has(m, "invalid auth"))
		return STORE_EUNAUTHENTICATED;
	if (has(m, "permission denied"))
		return STORE_EPERMISSION;
	/* etcd says this with code 14 when it lost quorum mid-request: the
	 * request may still be applied, so it is a timeout, not a refusal */
	if (has(m, "request timed out") || has(m, "deadline exceeded"))
		return STORE_ETIMEOUT;
	if (has(m, "key not found") || has(m, "lease not found") ||
	    has(m, "requested lease not found"))
		return STORE_ENOTFOUND;
	/* a grant of an id etcd holds (FailedPrecondition): nothing done */
	if (has(m, "lease already exists"))
		return STORE_EEXISTS;
	switch (code) {
	/*
	 * Cancelled (the server went away mid-request), Unavailable: the
	 * request may have been proposed already, so a write's outcome is
	 * unknown (the store settles it; a read says unreachable).
	 */
	case GRPC_CANCELLED:
	case GRPC_UNAVAILABLE:
		return STORE_EUNKNOWN;
	case GRPC_DEADLINE_EXCEEDED:
		return STORE_ETIMEOUT;
	case GRPC_NOT_FOUND:
		return STORE_ENOTFOUND;
	case GRPC_PERMISSION_DENIED:
		return STORE_EPERMISSION;
	case GRPC_RESOURCE_EXHAUSTED:
		return STORE_ETOOLARGE;
	case GRPC_OUT_OF_RANGE:
		return STORE_ECOMPACTED;
	case GRPC_UNIMPLEMENTED:
		return STORE_ENOTSUP;
	case GRPC_UNAUTHENTICATED:
		return STORE_EUNAUTHENTICATED;
	case GRPC_INVALID_ARGUMENT:
		return STORE_EINVAL;
	default:
		return STORE_EINTERNAL;
	}
}

bool etcd3pb_error_not_applied(int code, const char *m)
{
	return has(m, "etcdserver: no leader") ||
	       has(m, "etcdserver: too many requests") ||
	       has(m, "etcdserver: not capable") ||
	       has(m, "raft proposal dropped");
}

bool etcd3pb_error_transient(int code, const char *m)
{
	if (etcd3pb_error_not_applied(code, m))
		return true;
	return has(m, "etcdserver: leader changed") ||
	       has(m, "etcdserver: request timed out") ||
	       has(m, "etcdserver: server stopped") ||
	       code == GRPC_UNAVAILABLE;
}
