/*
 * errno_map.c - the one translation of the store's errors to errno, and
 * the log lines that go with them
 *
 * fs_errno is the table of the README's "Errors": every function of fs/
 * that gets an enum store_err from helper/ answers with it.  etcd's
 * NOSPACE alarm is logged here, once, with what an operator does about
 * it; statfs.c says when etcd has room again (fs_space_room), and the
 * next refusal is logged then.
 *
 * A leaf of fs/: it calls nothing of fs/, and everything may call it.
 * What it cannot do: tell which operation failed (fs_log_store_error's
 * caller says that in @what).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "errno_map.h"

/* The NOSPACE alarm was logged, and etcd has not said it has room since. */
static atomic_bool nospace_said;

int fs_errno(int err)
{
	switch (err) {
	case STORE_OK:
		return 0;
	case STORE_ENOTFOUND:
		return -ENOENT;
	case STORE_EEXISTS:
		return -EEXIST;
	case STORE_ECONFLICT:
	case STORE_EPRECONDITION:
		return -ESTALE;
	case STORE_EUNREACHABLE:
		return -ENOTCONN;
	case STORE_ETIMEOUT:
	case STORE_EUNKNOWN:	/* a write that may have been applied */
		return -ETIMEDOUT;
	case STORE_EUNAUTHENTICATED:
	case STORE_EPERMISSION:
		return -EACCES;
	case STORE_ETOOLARGE:
		return -EFBIG;
	case STORE_EINVAL:
		return -EINVAL;
	case STORE_ENOTSUP:
		return -ENOTSUP;
	case STORE_ENOSPC:
		fs_space_full();	/* logged once: why, and what to do */
		return -ENOSPC;
	case STORE_EINTERNAL:
		return -ENOMEM;
	case STORE_ECOMPACTED:
	case STORE_EBADREPLY:
	default:
		return -EIO;
	}
}

void fs_space_full(void)
{
	if (atomic_exchange(&nospace_said, true))
		return;
	fuse_log(FUSE_LOG_ERR, "etcdfs: etcd is out of space (alarm NOSPACE: "
		 "its database reached its --quota-backend-bytes): every "
		 "write fails with ENOSPC until an operator frees space: "
		 "'etcdctl compact REVISION', 'etcdctl defrag', then "
		 "'etcdctl alarm disarm'\n");
}

void fs_space_room(void)
{
	atomic_store(&nospace_said, false);
}

void fs_log_store_error(const char *what, const struct store_error *err)
{
	fuse_log(FUSE_LOG_ERR, "etcdfs: %s '%s': %s\n", what, err->key,
		 err->msg[0] ? err->msg : store_strerror(err->code));
}
