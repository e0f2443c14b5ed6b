/*
 * echo_i.h - what echo.c and echo_plan.c share: the plan of a change's
 * echo
 *
 * Every function here is called with fs->lock held.
 */
#ifndef ETCDFS_ECHO_I_H
#define ETCDFS_ECHO_I_H

#include <stdbool.h>
#include <stddef.h>

#include "fs_i.h"

enum echo_action {
	ECHO_SKIP,
	ECHO_DIRECT,		/* apply without a syscall */
	ECHO_CREATE,
	ECHO_MODIFY,
	ECHO_DELETE,
};

/* Drops the references of @e's plan. */
void echo_chain_release(struct fs *fs, struct echo_ev *e);
/*
 * The @i-th component of @path (0: the shallowest) in *@c, *@len; false
 * if there are fewer.
 */
bool echo_component(const char *path, size_t i, const char **c, size_t *len);
/*
 * Applies @e to the mirror and plans its echo: true if there is one to
 * replay (e->action, e->path, e->chain filled).
 */
bool echo_apply(struct fs *fs, struct echo_ev *e, struct inval_list *inv);

#endif /* ETCDFS_ECHO_I_H */
