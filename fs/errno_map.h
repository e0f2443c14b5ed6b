/*
 * errno_map.h - the store's errors as errno (errno_map.c), below every
 * module of fs/ that talks to the store
 */
#ifndef ETCDFS_ERRNO_MAP_H
#define ETCDFS_ERRNO_MAP_H

#include <fuse_log.h>

#include "store.h"

/*
 * Maps an enum store_err to the errno the filesystem answers, negated as
 * every function of fs/ returns it (0 for STORE_OK); the FUSE handlers
 * reply with its opposite.  STORE_ENOSPC logs etcd's NOSPACE alarm, once.
 */
int fs_errno(int store_err);

/* Logs "etcdfs: @what 'KEY': CAUSE" at FUSE_LOG_ERR. */
void fs_log_store_error(const char *what, const struct store_error *err);

/*
 * etcd's NOSPACE alarm: fs_space_full logs it with what an operator does
 * about it, once until fs_space_room says etcd has room again.
 */
void fs_space_full(void);
void fs_space_room(void);

#endif /* ETCDFS_ERRNO_MAP_H */
