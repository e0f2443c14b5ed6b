/*
 * fuzz_grpc_pb.c - libFuzzer target for the reply decoders of
 * helper/etcd3_pb.c
 *
 * The input is a reply body: framed by helper/grpc_frame.c, each message
 * goes to every decoder (range, put, delete, txn, lease grant and TTL,
 * authenticate, members, status, watch); the input as it is, unframed,
 * does too.  Beyond "no crash, no leak, no sanitizer report" it checks
 * what the decoders promise: every error has its code and a message,
 * keys are never empty, keys and values are NUL-terminated past their
 * length, revisions are positive, a range never has more keys than its
 * count, and a token is printable.
 *
 * Seeds: the captured replies of tests/data/grpc (capture.sh).
 */
#include "fuzz.h"
#include "etcd3_pb.h"
#include "grpc_frame.h"

static void check_kv(const struct store_kv *kv)
{
	check(kv->key && kv->key_len > 0 && kv->key[kv->key_len] == '\0');
	check(kv->value && kv->value[kv->value_len] == '\0');
	check(kv->mod_revision > 0);
}

static void check_err(int rc, const struct store_error *err)
{
	check(rc == STORE_EBADREPLY || rc == STORE_EINTERNAL);
	check(err->code == rc && err->msg[0]);
}

static void check_result(const struct etcd3pb_result *r)
{
	size_t i;

	check(r->revision > 0);
	if (r->op == ETCD3PB_RANGE)
		check((uint64_t)r->count >= r->n);
	for (i = 0; i < r->n; i++)
		check_kv(&r->kvs[i]);
}

static void decode_all(const uint8_t *m, size_t len)
{
	struct store_error err = { 0 };
	struct etcd3pb_result r;
	struct etcd3pb_txn t;
	struct etcd3pb_watch_msg w;
	struct etcd3pb_status st;
	struct store_member *mem;
	int64_t a, b;
	char *tok;
	size_t n, i;
	int rc;

	rc = etcd3pb_decode_range(m, len, &r, &err);
	if (rc == 0) {
		check_result(&r);
		etcd3pb_result_release(&r);
	} else {
		check_err(rc, &err);
	}
	rc = etcd3pb_decode_put(m, len, &r, &err);
	if (rc == 0) {
		check_result(&r);
		etcd3pb_result_release(&r);
	}
	rc = etcd3pb_decode_delete(m, len, &r, &err);
	if (rc == 0) {
		check_result(&r);
		etcd3pb_result_release(&r);
	}
	rc = etcd3pb_decode_txn(m, len, &t, &err);
	if (rc == 0) {
		check(t.revision > 0);
		for (i = 0; i < t.n; i++)
			check_result(&t.res[i]);
		etcd3pb_txn_release(&t);
	} else {
		check_err(rc, &err);
	}
	rc = etcd3pb_decode_watch(m, len, &w, &err);
	if (rc == 0) {
		check(w.kind != ETCD3PB_WATCH_PROGRESS || w.revision > 0);
		for (i = 0; i < w.n; i++) {
			check_kv(&w.events[i].kv);
			check(w.events[i].revision == w.events[i].kv.mod_revision);
		}
		etcd3pb_watch_msg_release(&w);
	}
	rc = etcd3pb_decode_members(m, len, &mem, &n, &err);
	if (rc == 0) {
		check(n > 0);
		for (i = 0; i < n; i++)
			check(mem[i].id != 0 && mem[i].name);
		store_members_free(mem, n);
	}
	rc = etcd3pb_decode_authenticate(m, len, &tok, &err);
	if (rc == 0) {
		for (i = 0; tok[i]; i++)
			check(tok[i] > 0x20 && tok[i] < 0x7f);
		check(i > 0);
		free(tok);
	}
	if (etcd3pb_decode_status(m, len, &st, &err) == 0)
		check(st.revision > 0 && st.db_size >= 0);
	if (etcd3pb_decode_lease_grant(m, len, &a, &b, &err) == 0)
		check(a > 0 && b > 0);
	etcd3pb_decode_lease_ttl(m, len, &a, &b, &err);
}

static int on_msg(void *arg, const uint8_t *msg, size_t len)
{
	decode_all(msg, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct grpc_reader r;

	grpc_reader_init(&r, 1 << 20);
	grpc_reader_feed(&r, data, size, on_msg, NULL);
	grpc_reader_release(&r);
	decode_all(data, size);
	return 0;
}
