/*
 * etcd3_pb_req.c - etcd v3 gRPC requests from the store's arguments
 * (etcd3_pb.h)
 *
 * Requests are built as protobuf-c structs on the stack and packed once
 * into a buffer that leaves room for the 5-byte gRPC prefix in front, so
 * the frame goes out without another copy.  The replies are etcd3_pb.c's.
 *
 * What it cannot do: see etcd3_pb.h.
 */
#include <stdlib.h>
#include <string.h>

#include "etcd3_pb.h"
#include "grpc_frame.h"
#include "rpc.pb-c.h"

typedef Etcdserverpb__RequestOp pb_op;

static ProtobufCBinaryData pb_bytes(const char *p, size_t len)
{
	ProtobufCBinaryData b = { .len = len, .data = (uint8_t *)p };

	return b;
}

/* Packs @m behind room for the gRPC prefix; NULL on ENOMEM. */
static uint8_t *pb_frame(const ProtobufCMessage *m, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf;

	if (n > UINT32_MAX)
		return NULL;
	buf = malloc(n + GRPC_PREFIX_LEN);
	if (!buf)
		return NULL;
	grpc_frame_prefix(buf, (uint32_t)n);
	protobuf_c_message_pack(m, buf + GRPC_PREFIX_LEN);
	*len = n + GRPC_PREFIX_LEN;
	return buf;
}

/* ---- requests ---- */

static void pb_range_fill(Etcdserverpb__RangeRequest *rr,
			  const struct etcd3pb_range_req *r)
{
	rr->key = pb_bytes(r->key, r->key_len);
	if (r->range_end)
		rr->range_end = pb_bytes(r->range_end, r->range_end_len);
	rr->limit = r->limit;
	rr->revision = r->revision;
	rr->serializable = r->serializable;
	rr->keys_only = r->keys_only;
	rr->count_only = r->count_only;
}

uint8_t *etcd3pb_req_range(const struct etcd3pb_range_req *r, size_t *len)
{
	Etcdserverpb__RangeRequest rr = ETCDSERVERPB__RANGE_REQUEST__INIT;

	pb_range_fill(&rr, r);
	return pb_frame(&rr.base, len);
}

uint8_t *etcd3pb_req_txn_ranges(const struct etcd3pb_range_req *r, size_t n,
				size_t *len)
{
	Etcdserverpb__TxnRequest t = ETCDSERVERPB__TXN_REQUEST__INIT;
	Etcdserverpb__RangeRequest init = ETCDSERVERPB__RANGE_REQUEST__INIT;
	pb_op op_init = ETCDSERVERPB__REQUEST_OP__INIT;
	Etcdserverpb__RangeRequest *rr = calloc(n ? n : 1, sizeof(*rr));
	pb_op *ops = calloc(n ? n : 1, sizeof(*ops));
	pb_op **opp = calloc(n ? n : 1, sizeof(*opp));
	uint8_t *buf = NULL;
	size_t i;

	if (rr && ops && opp) {
		for (i = 0; i < n; i++) {
			rr[i] = init;
			pb_range_fill(&rr[i], &r[i]);
			ops[i] = op_init;
			ops[i].request_case =
				ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE;
			ops[i].request_range = &rr[i];
			opp[i] = &ops[i];
		}
		/* no compares: the success branch runs */
		t.success = opp;
		t.n_success = n;
		buf = pb_frame(&t.base, len);
	}
	free(opp);
	free(ops);
	free(rr);
	return buf;
}

/* A compare of @target (MOD or CREATE) on @key for equality with @rev. */
static void pb_compare(Etcdserverpb__Compare *c, const char *key,
		       size_t key_len, Etcdserverpb__Compare__CompareTarget t,
		       int64_t rev)
{
	Etcdserverpb__Compare init = ETCDSERVERPB__COMPARE__INIT;

	*c = init;
	c->result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
	c->target = t;
	c->key = pb_bytes(key, key_len);
	if (t == ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD) {
		c->target_union_case =
			ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
		c->mod_revision = rev;
	} else {
		c->target_union_case =
			ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION;
		c->create_revision = rev;
	}
}

/* Room for the ops of the backend's txns: at most 4 compares, 2 ops. */
struct pb_txn_build {
	Etcdserverpb__TxnRequest txn;
	Etcdserverpb__Compare cmp[4];
	Etcdserverpb__Compare *cmpp[4];
	pb_op ops[4];
	pb_op *okp[2], *kop[2];
	Etcdserverpb__RangeRequest range[2];
	Etcdserverpb__PutRequest put;
	Etcdserverpb__DeleteRangeRequest del;
	int n_ops;
};

static void pb_txn_init(struct pb_txn_build *b)
{
	Etcdserverpb__TxnRequest t = ETCDSERVERPB__TXN_REQUEST__INIT;
	Etcdserverpb__RangeRequest r = ETCDSERVERPB__RANGE_REQUEST__INIT;
	Etcdserverpb__PutRequest p = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__DeleteRangeRequest d =
		ETCDSERVERPB__DELETE_RANGE_REQUEST__INIT;
	pb_op o = ETCDSERVERPB__REQUEST_OP__INIT;
	int i;

	memset(b, 0, sizeof(*b));
	b->txn = t;
	b->range[0] = r;
	b->range[1] = r;
	b->put = p;
	b->del = d;
	for (i = 0; i < 4; i++) {
		b->ops[i] = o;
		b->cmpp[i] = &b->cmp[i];
	}
	b->txn.compare = b->cmpp;
	b->txn.success = b->okp;
	b->txn.failure = b->kop;
}

static void pb_txn_cmp(struct pb_txn_build *b, const char *key, size_t len,
		       Etcdserverpb__Compare__CompareTarget t, int64_t rev)
{
	pb_compare(&b->cmp[b->txn.n_compare++], key, len, t, rev);
}

/* Adds an op to the success (@ok) or failure branch and returns it. */
static pb_op *pb_txn_op(struct pb_txn_build *b, bool ok)
{
	pb_op *o = &b->ops[b->n_ops++];

	if (ok)
		b->okp[b->txn.n_success++] = o;
	else
		b->kop[b->txn.n_failure++] = o;
	return o;
}

static void pb_txn_range(struct pb_txn_build *b, int i, const char *key,
			 size_t len)
{
	pb_op *o = pb_txn_op(b, false);

	b->range[i].key = pb_bytes(key, len);
	o->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE;
	o->request_range = &b->range[i];
}

static void pb_txn_put(struct pb_txn_build *b, const char *key, size_t len,
		       const char *value, size_t value_len, int64_t lease)
{
	pb_op *o = pb_txn_op(b, true);

	b->put.key = pb_bytes(key, len);
	b->put.value = pb_bytes(value ? value : "", value_len);
	if (lease == -1)
		b->put.ignore_lease = true;
	else if (lease > 0)
		b->put.lease = lease;
	o->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
	o->request_put = &b->put;
}

static void pb_txn_del(struct pb_txn_build *b, const char *key, size_t len,
		       bool prev_kv)
{
	pb_op *o = pb_txn_op(b, true);

	b->del.key = pb_bytes(key, len);
	b->del.prev_kv = prev_kv;
	o->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_DELETE_RANGE;
	o->request_delete_range = &b->del;
}

uint8_t *etcd3pb_req_cas(const char *key, size_t key_len, int64_t expect,
			 const char *value, size_t value_len, int64_t lease,
			 size_t *len)
{
	struct pb_txn_build b;

	pb_txn_init(&b);
	if (expect >= 0)
		pb_txn_cmp(&b, key, key_len,
			   ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD, expect);
	pb_txn_put(&b, key, key_len, value, value_len, lease);
	pb_txn_range(&b, 0, key, key_len);
	return pb_frame(&b.txn.base, len);
}

uint8_t *etcd3pb_req_delete(const char *key, size_t key_len,
			    int64_t expect_mod, int64_t expect_create,
			    size_t *len)
{
	struct pb_txn_build b;

	pb_txn_init(&b);
	if (expect_mod >= 0)
		pb_txn_cmp(&b, key, key_len,
			   ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD,
			   expect_mod);
	if (expect_create > 0)
		pb_txn_cmp(&b, key, key_len,
			   ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE,
			   expect_create);
	pb_txn_del(&b, key, key_len, true);
	pb_txn_range(&b, 0, key, key_len);
	return pb_frame(&b.txn.base, len);
}

uint8_t *etcd3pb_req_move(const char *from, size_t from_len, int64_t from_mod,
			  int64_t from_create, const char *to, size_t to_len,
			  int64_t to_mod, int64_t to_create, const char *value,
			  size_t value_len, size_t *len)
{
	const Etcdserverpb__Compare__CompareTarget mod =
		ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD;
	const Etcdserverpb__Compare__CompareTarget create =
		ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE;
	struct pb_txn_build b;

	pb_txn_init(&b);
	if (from_mod >= 0)
		pb_txn_cmp(&b, from, from_len, mod, from_mod);
	if (from_create > 0)
		pb_txn_cmp(&b, from, from_len, create, from_create);
	if (to_mod >= 0)
		pb_txn_cmp(&b, to, to_len, mod, to_mod);
	if (to_create > 0)
		pb_txn_cmp(&b, to, to_len, create, to_create);
	pb_txn_put(&b, to, to_len, value, value_len, 0);
	pb_txn_del(&b, from, from_len, false);
	pb_txn_range(&b, 0, from, from_len);
	pb_txn_range(&b, 1, to, to_len);
	return pb_frame(&b.txn.base, len);
}

/* The two range compares of a move, into @c[0] and @c[1]. */
static void pb_move_ranges(Etcdserverpb__Compare *c,
			   const struct etcd3pb_move_ranges *r)
{
	pb_compare(&c[0], r->from, r->from_len,
		   ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD, r->revision + 1);
	c[0].result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__LESS;
	c[0].range_end = pb_bytes(r->from_end, r->from_end_len);
	/* an empty range compares as one absent key: mod_revision 0 */
	pb_compare(&c[1], r->to, r->to_len,
		   ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD, 0);
	c[1].range_end = pb_bytes(r->to_end, r->to_end_len);
}

/* Whether @key is in r->to's range (a prefix's: key >= to, < to_end). */
static bool pb_in_to_range(const struct etcd3pb_move_ranges *r,
			   const char *key, size_t len)
{
	return r && len >= r->to_len && memcmp(key, r->to, r->to_len) == 0;
}

uint8_t *etcd3pb_req_move_keys(const struct store_move_key *k, size_t n,
			       const struct etcd3pb_move_ranges *r,
			       size_t *len)
{
	Etcdserverpb__TxnRequest t = ETCDSERVERPB__TXN_REQUEST__INIT;
	Etcdserverpb__PutRequest pi = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__DeleteRangeRequest di =
		ETCDSERVERPB__DELETE_RANGE_REQUEST__INIT;
	pb_op oi = ETCDSERVERPB__REQUEST_OP__INIT;
	Etcdserverpb__Compare *cmp = calloc(2 * n + 2, sizeof(*cmp));
	Etcdserverpb__Compare **cmpp = calloc(2 * n + 2, sizeof(*cmpp));
	Etcdserverpb__PutRequest *put = calloc(n + 1, sizeof(*put));
	Etcdserverpb__DeleteRangeRequest *del = calloc(n + 1, sizeof(*del));
	pb_op *ops = calloc(2 * n + 1, sizeof(*ops));
	pb_op **opp = calloc(2 * n + 1, sizeof(*opp));
	uint8_t *out = NULL;
	size_t i, nc = 0;

	if (!cmp || !cmpp || !put || !del || !ops || !opp)
		goto out;
	if (r) {
		pb_move_ranges(cmp, r);
		nc = 2;
	}
	for (i = 0; i < n; i++) {
		/* the source as the caller knows it, the target absent */
		pb_compare(&cmp[nc++], k[i].from, k[i].from_len,
			   ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD,
			   k[i].mod_revision);
		if (!pb_in_to_range(r, k[i].to, k[i].to_len))
			pb_compare(&cmp[nc++], k[i].to, k[i].to_len,
				   ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD,
				   0);
		put[i] = pi;
		put[i].key = pb_bytes(k[i].to, k[i].to_len);
		put[i].value = pb_bytes(k[i].value ? k[i].value : "",
					k[i].value_len);
		put[i].lease = k[i].lease > 0 ? k[i].lease : 0;
		del[i] = di;
		del[i].key = pb_bytes(k[i].from, k[i].from_len);
		ops[2 * i] = oi;
		ops[2 * i].request_case =
			ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
		ops[2 * i].request_put = &put[i];
		ops[2 * i + 1] = oi;
		ops[2 * i + 1].request_case =
			ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_DELETE_RANGE;
		ops[2 * i + 1].request_delete_range = &del[i];
		opp[2 * i] = &ops[2 * i];
		opp[2 * i + 1] = &ops[2 * i + 1];
	}
	for (i = 0; i < nc; i++)
		cmpp[i] = &cmp[i];
	t.compare = cmpp;
	t.n_compare = nc;
	t.success = opp;
	t.n_success = 2 * n;
	out = pb_frame(&t.base, len);
out:
	free(cmp);
	free(cmpp);
	free(put);
	free(del);
	free(ops);
	free(opp);
	return out;
}

uint8_t *etcd3pb_req_lease_grant(int64_t ttl, int64_t id, size_t *len)
{
	Etcdserverpb__LeaseGrantRequest r =
		ETCDSERVERPB__LEASE_GRANT_REQUEST__INIT;

	r.ttl = ttl;
	r.id = id;
	return pb_frame(&r.base, len);
}

uint8_t *etcd3pb_req_lease_revoke(int64_t id, size_t *len)
{
	Etcdserverpb__LeaseRevokeRequest r =
		ETCDSERVERPB__LEASE_REVOKE_REQUEST__INIT;

	r.id = id;
	return pb_frame(&r.base, len);
}

uint8_t *etcd3pb_req_lease_keepalive(int64_t id, size_t *len)
{
	Etcdserverpb__LeaseKeepAliveRequest r =
		ETCDSERVERPB__LEASE_KEEP_ALIVE_REQUEST__INIT;

	r.id = id;
	return pb_frame(&r.base, len);
}

uint8_t *etcd3pb_req_lease_ttl(int64_t id, size_t *len)
{
	Etcdserverpb__LeaseTimeToLiveRequest r =
		ETCDSERVERPB__LEASE_TIME_TO_LIVE_REQUEST__INIT;

	r.id = id;
	return pb_frame(&r.base, len);
}

uint8_t *etcd3pb_req_watch_create(const char *key, size_t key_len,
				  const char *range_end, size_t range_end_len,
				  int64_t start_rev, size_t *len)
{
	Etcdserverpb__WatchRequest w = ETCDSERVERPB__WATCH_REQUEST__INIT;
	Etcdserverpb__WatchCreateRequest c =
		ETCDSERVERPB__WATCH_CREATE_REQUEST__INIT;

	c.key = pb_bytes(key, key_len);
	if (range_end)
		c.range_end = pb_bytes(range_end, range_end_len);
	if (start_rev > 0)
		c.start_revision = start_rev;
	c.prev_kv = true;
	c.progress_notify = true;
	w.request_union_case =
		ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_CREATE_REQUEST;
	w.create_request = &c;
	return pb_frame(&w.base, len);
}

uint8_t *etcd3pb_req_watch_cancel(int64_t watch_id, size_t *len)
{
	Etcdserverpb__WatchRequest w = ETCDSERVERPB__WATCH_REQUEST__INIT;
	Etcdserverpb__WatchCancelRequest c =
		ETCDSERVERPB__WATCH_CANCEL_REQUEST__INIT;

	c.watch_id = watch_id;
	w.request_union_case =
		ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_CANCEL_REQUEST;
	w.cancel_request = &c;
	return pb_frame(&w.base, len);
}

uint8_t *etcd3pb_req_watch_progress(size_t *len)
{
	Etcdserverpb__WatchRequest w = ETCDSERVERPB__WATCH_REQUEST__INIT;
	Etcdserverpb__WatchProgressRequest p =
		ETCDSERVERPB__WATCH_PROGRESS_REQUEST__INIT;

	w.request_union_case =
		ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_PROGRESS_REQUEST;
	w.progress_request = &p;
	return pb_frame(&w.base, len);
}

uint8_t *etcd3pb_req_members(size_t *len)
{
	Etcdserverpb__MemberListRequest r =
		ETCDSERVERPB__MEMBER_LIST_REQUEST__INIT;

	r.linearizable = true;
	return pb_frame(&r.base, len);
}

uint8_t *etcd3pb_req_status(size_t *len)
{
	Etcdserverpb__StatusRequest r = ETCDSERVERPB__STATUS_REQUEST__INIT;

	return pb_frame(&r.base, len);
}

uint8_t *etcd3pb_req_authenticate(const char *user, const char *password,
				  size_t *len)
{
	Etcdserverpb__AuthenticateRequest r =
		ETCDSERVERPB__AUTHENTICATE_REQUEST__INIT;
	uint8_t *buf;

	r.name = (char *)user;
	r.password = (char *)password;
	buf = pb_frame(&r.base, len);
	return buf;
}
