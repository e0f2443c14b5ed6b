/*
 * node_times.c - the times and modes a node shows beyond its revision:
 * those utimensat set (kept in the mirror until the key's next revision,
 * or a write), and the mode of a file that lives in memory
 *
 * Part of the mirror's tree: no FUSE, no store, every function called
 * with the tree's owner's lock held (fs->lock).
 *
 * What it cannot do: store a time or a mode in etcd.
 */
#include <errno.h>
#include <sys/stat.h>

#include "tree.h"

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Are the times utimensat set still those @n shows? */
static bool times_kept(const struct node *n)
{
	return n->rare && n->rare->times_set &&
	       same_time(&n->rare->set_mtime, &n->mtime);
}

int node_set_times(struct node *n, unsigned what, const struct timespec *atime,
		   const struct timespec *mtime)
{
	struct timespec cur_atime = times_kept(n) ? n->rare->atime : n->mtime;
	struct timespec since = times_kept(n) ? n->rare->ctime : n->mtime;
	const struct timespec *a = what & ATTR_SET_ATIME ? atime : &cur_atime;
	const struct timespec *m = what & ATTR_SET_MTIME ? mtime : &n->mtime;

	if (same_time(a, m) && !n->rare) {
		/* atime and ctime are the mtime: nothing else to keep */
		n->mtime = *m;
		return 0;
	}
	if (!node_rare(n))
		return -ENOMEM;
	n->rare->atime = *a;
	n->rare->ctime = since;		/* when the mount saw the revision */
	n->mtime = *m;
	n->rare->set_mtime = n->mtime;
	n->rare->times_set = true;
	return 0;
}

void node_kept_attr(struct node *n, struct stat *st)
{
	if (times_kept(n) && same_time(&st->st_mtim, &n->mtime)) {
		st->st_atim = n->rare->atime;
		st->st_ctim = n->rare->ctime;
	}
	if (n->local && n->rare && n->rare->mode_set)
		st->st_mode = (st->st_mode & S_IFMT) | n->rare->mode;
}
