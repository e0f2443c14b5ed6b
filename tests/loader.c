/*
 * loader.c - many keys into etcd fast (loader.h)
 *
 * The txns are built with the protobuf-c types of helper/proto, as the
 * helper builds its own; each must succeed, with one response per put.
 *
 * What it cannot do: see loader.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd3_pb.h"
#include "grpc_frame.h"
#include "loader.h"
#include "rpc.pb-c.h"

static uint8_t *loader_txn(const struct loader_kv *kvs, size_t n,
			   size_t *len)
{
	Etcdserverpb__TxnRequest t = ETCDSERVERPB__TXN_REQUEST__INIT;
	Etcdserverpb__PutRequest put_init = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__RequestOp op_init = ETCDSERVERPB__REQUEST_OP__INIT;
	Etcdserverpb__PutRequest *puts = calloc(n, sizeof(*puts));
	Etcdserverpb__RequestOp *ops = calloc(n, sizeof(*ops));
	Etcdserverpb__RequestOp **opp = calloc(n, sizeof(*opp));
	uint8_t *buf = NULL;
	size_t i, m;

	if (!puts || !ops || !opp)
		goto out;
	for (i = 0; i < n; i++) {
		puts[i] = put_init;
		puts[i].key.data = (uint8_t *)kvs[i].key;
		puts[i].key.len = kvs[i].key_len;
		puts[i].value.data = (uint8_t *)kvs[i].value;
		puts[i].value.len = kvs[i].value_len;
		ops[i] = op_init;
		ops[i].request_case =
			ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
		ops[i].request_put = &puts[i];
		opp[i] = &ops[i];
	}
	t.success = opp;
	t.n_success = n;
	m = protobuf_c_message_get_packed_size(&t.base);
	buf = malloc(m + GRPC_PREFIX_LEN);
	if (!buf)
		goto out;
	grpc_frame_prefix(buf, (uint32_t)m);
	protobuf_c_message_pack(&t.base, buf + GRPC_PREFIX_LEN);
	*len = m + GRPC_PREFIX_LEN;
out:
	free(opp);
	free(ops);
	free(puts);
	return buf;
}

int loader_put(struct grpc_transport *t, const struct loader_kv *kvs,
	       size_t n, char *why, size_t size)
{
	return loader_put_batch(t, kvs, n, LOADER_BATCH, why, size);
}

int loader_put_batch(struct grpc_transport *t, const struct loader_kv *kvs,
		     size_t n, size_t batch, char *why, size_t size)
{
	struct store_error err = { 0 };
	struct grpc_reply reply;
	struct etcd3pb_txn txn;
	size_t i, k, len = 0;
	uint8_t *req;
	bool sent;
	int rc;

	if (batch == 0) {
		snprintf(why, size, "a batch of 0 puts");
		return -1;
	}
	for (i = 0; i < n; i += k) {
		k = n - i < batch ? n - i : batch;
		req = loader_txn(kvs + i, k, &len);
		if (!req) {
			snprintf(why, size, "out of memory");
			return -1;
		}
		rc = grpc_call(t, "/etcdserverpb.KV/Txn", req, len, 0, &reply,
			       &sent, &err);
		free(req);
		if (rc < 0 || reply.code != 0) {
			snprintf(why, size, "txn: %s%s", rc < 0 ? err.msg : "",
				 rc < 0 ? "" : reply.message);
			if (rc == 0)
				grpc_reply_release(&reply);
			return -1;
		}
		rc = etcd3pb_decode_txn(reply.msg, reply.len, &txn, &err);
		grpc_reply_release(&reply);
		if (rc < 0) {
			snprintf(why, size, "txn reply: %s", err.msg);
			return -1;
		}
		rc = txn.succeeded && txn.n == k ? 0 : -1;
		etcd3pb_txn_release(&txn);
		if (rc < 0) {
			snprintf(why, size, "txn: not applied");
			return -1;
		}
	}
	return 0;
}

struct grpc_transport *loader_transport(const char *endpoint, char *why,
					size_t size)
{
	const char *eps[] = { endpoint };
	struct grpc_transport_config c = {
		.endpoints = eps,
		.n_endpoints = 1,
		.request_timeout_ms = 60000,
	};
	struct store_error err = { 0 };
	struct grpc_transport *t = grpc_transport_new(&c, &err);

	if (!t)
		snprintf(why, size, "%s", err.msg);
	return t;
}
