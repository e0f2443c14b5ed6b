/*
 * etcd3_grpc.h - what the two halves of the etcd v3 gRPC backend share
 * (etcd3_grpc.c: key-value calls, leases, members; etcd3_grpc_watch.c:
 * watches).  Private to them.
 */
#ifndef ETCDFS_ETCD3_GRPC_H
#define ETCDFS_ETCD3_GRPC_H

#include "grpc_transport.h"
#include "store_i.h"

struct etcd3g {
	struct grpc_transport *t;
};

static inline struct grpc_transport *etcd3g_transport(struct store *s)
{
	return ((struct etcd3g *)s->be)->t;
}

int etcd3g_watch(struct store *s, struct store_watch *w,
		 struct store_error *err);
void etcd3g_watch_stop(struct store_watch *w);
int etcd3g_watch_progress(struct store_watch *w);

#endif /* ETCDFS_ETCD3_GRPC_H */
