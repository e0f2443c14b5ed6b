/*
 * loader.h - many keys into etcd fast, for tests and benchmarks: puts in
 * txns of up to LOADER_BATCH, one gRPC call each
 *
 * What it cannot do: check what etcd held before (it overwrites), or
 * settle a txn whose answer was lost (it fails).
 */
#ifndef ETCDFS_TESTS_LOADER_H
#define ETCDFS_TESTS_LOADER_H

#include <stdbool.h>
#include <stddef.h>

#include "grpc_transport.h"

/* etcd's default --max-txn-ops */
#define LOADER_BATCH 128

struct loader_kv {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
};

/*
 * Puts the @n keys of @kvs (any number) in txns of at most LOADER_BATCH
 * puts over @t; 0, or -1 with @why (of @size bytes) saying what failed.
 */
int loader_put(struct grpc_transport *t, const struct loader_kv *kvs,
	       size_t n, char *why, size_t size);

/* The same in txns of at most @batch puts (the cluster's --max-txn-ops). */
int loader_put_batch(struct grpc_transport *t, const struct loader_kv *kvs,
		     size_t n, size_t batch, char *why, size_t size);

/* A transport to @endpoint with generous timeouts; NULL with @why. */
struct grpc_transport *loader_transport(const char *endpoint, char *why,
					size_t size);

#endif /* ETCDFS_TESTS_LOADER_H */
