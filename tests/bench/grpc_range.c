/*
 * tests/bench/grpc_range.c - one range of a prefix, two ways, and
 * concurrent commits, timed
 *
 *   etcdfs-grpc-range ENDPOINT PREFIX REPS
 *
 * Ranges every key under PREFIX REPS times: through the gRPC transport
 * alone (helper/grpc_transport.c: KV/Range, decoded by helper/etcd3_pb.c
 * into store types) and through store_list (the v3 backend, in one page);
 * prints the median time of each, the keys and bytes got, the rate of 16
 * writers creating keys (one txn each) through the store, and the
 * transport's calls from 16 threads at once.  tests/bench/grpc-range.sh
 * runs it beside `etcdctl get --prefix` and etcd's JSON gateway.  It
 * cannot load keys: the script does.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd3_pb.h"
#include "grpc_transport.h"
#include "store.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static const char *g_prefix;
static struct grpc_transport *g_t;
static double g_t0, g_call_ms;

/* One Range of the prefix; the keys and value bytes it got. */
static int grpc_range(struct grpc_transport *t, size_t *keys, size_t *bytes)
{
	char end[256];
	size_t n = strlen(g_prefix), len, i;
	struct etcd3pb_range_req r = { 0 };
	struct etcd3pb_result res;
	struct grpc_reply reply;
	struct store_error err = { 0 };
	uint8_t *req;
	bool sent;
	int rc;

	g_t0 = now_ms();
	memcpy(end, g_prefix, n);
	end[n - 1]++;
	r.key = g_prefix;
	r.key_len = n;
	r.range_end = end;
	r.range_end_len = n;
	req = etcd3pb_req_range(&r, &len);
	rc = grpc_call(t, "/etcdserverpb.KV/Range", req, len,
		       GRPC_CALL_IDEMPOTENT | GRPC_CALL_BULK, &reply, &sent,
		       &err);
	free(req);
	if (rc < 0 || reply.code) {
		fprintf(stderr, "grpc range: %s%s\n", err.msg, reply.message);
		grpc_reply_release(&reply);
		return -1;
	}
	g_call_ms = now_ms() - g_t0;
	rc = etcd3pb_decode_range(reply.msg, reply.len, &res, &err);
	grpc_reply_release(&reply);
	if (rc < 0) {
		fprintf(stderr, "decode: %s\n", err.msg);
		return -1;
	}
	*keys = res.n;
	*bytes = 0;
	for (i = 0; i < res.n; i++)
		*bytes += res.kvs[i].value_len;
	etcd3pb_result_release(&res);
	return 0;
}

/* 16 writers, each creating its own keys: one txn per commit */
#define W_THREADS	16
#define W_COMMITS	200

struct writer {
	struct store *s;
	const char *tag;
	int id;
	int failed;
};

static void *commit_loop(void *arg)
{
	struct writer *w = arg;
	struct store_error err = { 0 };
	char key[128];
	int i, n;

	for (i = 0; i < W_COMMITS; i++) {
		n = snprintf(key, sizeof(key), "%scommit/%s/%02d/%04d",
			     g_prefix, w->tag, w->id, i);
		if (store_create(w->s, key, (size_t)n, "v", 1, 0, NULL,
				 &err) < 0) {
			fprintf(stderr, "commit: %s\n", err.msg);
			w->failed++;
		}
	}
	return NULL;
}

/* Commits per second of W_THREADS writers through @s. */
static double commit_rate(struct store *s, const char *tag)
{
	struct writer w[W_THREADS];
	pthread_t th[W_THREADS];
	double t0 = now_ms();
	int i, failed = 0;

	for (i = 0; i < W_THREADS; i++) {
		w[i] = (struct writer){ .s = s, .tag = tag, .id = i };
		pthread_create(&th[i], NULL, commit_loop, &w[i]);
	}
	for (i = 0; i < W_THREADS; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
	}
	if (failed)
		fprintf(stderr, "%s: %d commits failed\n", tag, failed);
	return W_THREADS * W_COMMITS / ((now_ms() - t0) / 1e3);
}

static void *many(void *arg)
{
	struct etcd3pb_range_req r = { .key = "bench-none", .key_len = 10 };
	struct grpc_reply reply;
	uint8_t *req;
	size_t len;
	bool sent;
	int i;

	for (i = 0; i < 500; i++) {
		req = etcd3pb_req_range(&r, &len);
		if (grpc_call(g_t, "/etcdserverpb.KV/Range", req, len,
			      GRPC_CALL_IDEMPOTENT, &reply, &sent, NULL) < 0 ||
		    reply.code)
			fprintf(stderr, "small range failed\n");
		grpc_reply_release(&reply);
		free(req);
	}
	return arg;
}

int main(int argc, char **argv)
{
	struct grpc_transport_config gc = { 0 };
	struct store_config sc = { 0 };
	struct store_error err = { 0 };
	struct store_list l;
	struct store *s;
	pthread_t th[16];
	double tg[64], tc[64], ts[64], t0;
	size_t keys = 0, bytes = 0;
	int reps, i;

	if (argc != 4 || !argv[2][0] || (reps = atoi(argv[3])) < 1 ||
	    reps > 64) {
		fprintf(stderr, "usage: etcdfs-grpc-range ENDPOINT PREFIX "
			"REPS(1-64)\n");
		return 2;
	}
	g_prefix = argv[2];
	gc.endpoints = (const char *const *)&argv[1];
	gc.n_endpoints = 1;
	gc.request_timeout_ms = 30000;
	g_t = grpc_transport_new(&gc, &err);
	if (!g_t) {
		fprintf(stderr, "grpc transport: %s\n", err.msg);
		return 1;
	}
	sc.api = STORE_API_V3;
	sc.endpoints = argv[1];
	sc.page_size = 1000000;
	sc.request_timeout_ms = 30000;
	s = store_new(&sc, &err);
	if (!s) {
		fprintf(stderr, "store: %s\n", err.msg);
		return 1;
	}
	for (i = 0; i < reps; i++) {
		t0 = now_ms();
		if (store_list(s, g_prefix, strlen(g_prefix), 0, &l, &err)) {
			fprintf(stderr, "grpc list: %s\n", err.msg);
			return 1;
		}
		ts[i] = now_ms() - t0;
		store_list_release(&l);
		t0 = now_ms();
		if (grpc_range(g_t, &keys, &bytes) < 0)
			return 1;
		tg[i] = now_ms() - t0;
		tc[i] = g_call_ms;
	}
	printf("grpc transport range: %.1f ms (median of %d), %zu keys, "
	       "%zu value bytes\n", median(tg, reps), reps, keys, bytes);
	printf("  of which the call (no decoding): %.1f ms\n",
	       median(tc, reps));
	printf("store_list: %.1f ms (median of %d)\n", median(ts, reps),
	       reps);
	printf("%d writers x %d commits through the store: %.0f/s\n",
	       W_THREADS, W_COMMITS, commit_rate(s, "grpc"));
	t0 = now_ms();
	for (i = 0; i < 16; i++)
		pthread_create(&th[i], NULL, many, NULL);
	for (i = 0; i < 16; i++)
		pthread_join(th[i], NULL);
	printf("grpc transport, 16 threads x 500 small ranges: %.0f calls/s\n",
	       16 * 500 / ((now_ms() - t0) / 1e3));
	store_free(s);
	grpc_transport_free(g_t);
	return 0;
}
