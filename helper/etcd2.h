/*
 * etcd2.h - what the two halves of the etcd v2 backend share (etcd2.c:
 * keys, TTLs, members, status; etcd2_watch.c: watches).  Private to them.
 */
#ifndef ETCDFS_ETCD2_H
#define ETCDFS_ETCD2_H

#include "store_i.h"

/* The backend's watch and its stop (store_backend's watch, watch_stop). */
int etcd2_watch(struct store *s, struct store_watch *w,
		struct store_error *err);
void etcd2_watch_stop(struct store_watch *w);

#endif /* ETCDFS_ETCD2_H */
