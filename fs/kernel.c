/*
 * kernel.c - what the daemon tells the kernel on its own: inode ids, and
 * the notifications (entry and inode invalidations, pages stored ahead)
 *
 * The one file of fs/ that calls fuse_lowlevel_notify_*.  Every
 * notification goes with fs->notify_lock read-held and none once
 * fs_notify_stop has run, since libfuse's unmount closes the device
 * whose number the next descriptor opened may take.  A node's id is its
 * address (the root's, FUSE_ROOT_ID), so an id is valid while the kernel
 * holds a lookup of the node (tree.c's nlookup).
 *
 * Lock order: notify_lock is taken after every other lock and held only
 * across one notification; none is sent with fs->lock held (fs_i.h).
 * What it cannot do: reply to a request (the FUSE operations do), or
 * make the kernel report a change to inotify (echo.c does).
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "fs_i.h"

void kernel_init(struct fs_kernel *k)
{
	pthread_rwlock_init(&k->notify_lock, NULL);
}

void kernel_release(struct fs_kernel *k)
{
	pthread_rwlock_destroy(&k->notify_lock);
}

uint64_t kernel_node_id(const struct tree *t, const struct node *n)
{
	return n == t->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

fuse_ino_t node_id(struct fs *fs, struct node *n)
{
	return kernel_node_id(&fs->tree, n);
}

struct node *node_of(struct fs *fs, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return fs->tree.root;
	return (struct node *)(uintptr_t)ino;
}

void fs_set_session(struct fs *fs, struct fuse_session *se)
{
	fs->kernel.se = se;
}

void fs_send_invals(struct fs *fs, struct inval_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		struct inval *iv = &l->v[i];

		if (iv->entry)
			fs_notify_inval_entry(fs, iv->id, iv->name,
					      iv->name_len);
		else
			fs_notify_inval_inode(fs, iv->id, 0, 0);
	}
	inval_release(l);
}

/* True, with notify_lock read-held, if a notification may go. */
static bool notify_begin(struct fs *fs)
{
	if (!fs->kernel.se)
		return false;
	pthread_rwlock_rdlock(&fs->kernel.notify_lock);
	if (atomic_load(&fs->kernel.notify_off)) {
		pthread_rwlock_unlock(&fs->kernel.notify_lock);
		return false;
	}
	return true;
}

int fs_notify_inval_inode(struct fs *fs, fuse_ino_t ino, off_t off,
			  off_t len)
{
	int ret;

	if (!notify_begin(fs))
		return -ENOTCONN;
	ret = fuse_lowlevel_notify_inval_inode(fs->kernel.se, ino, off, len);
	pthread_rwlock_unlock(&fs->kernel.notify_lock);
	return ret;
}

int fs_notify_inval_entry(struct fs *fs, fuse_ino_t parent,
			  const char *name, size_t len)
{
	int ret;

	if (!notify_begin(fs))
		return -ENOTCONN;
	ret = fuse_lowlevel_notify_inval_entry(fs->kernel.se, parent, name,
					       len);
	pthread_rwlock_unlock(&fs->kernel.notify_lock);
	return ret;
}

int fs_notify_store(struct fs *fs, fuse_ino_t ino, off_t off,
		    struct fuse_bufvec *bufv)
{
	int ret;

	if (!notify_begin(fs))
		return -ENOTCONN;
	ret = fuse_lowlevel_notify_store(fs->kernel.se, ino, off, bufv, 0);
	pthread_rwlock_unlock(&fs->kernel.notify_lock);
	return ret;
}

/*
 * The notifications end here, before libfuse's unmount closes the device:
 * one sent after would go to a closed descriptor, or to whatever file
 * took its number meanwhile (the watch's next connection).  Those in
 * flight are waited for, a second at most: an invalidation can wait in
 * the kernel for a directory's lock, held by a request the finished loop
 * will never answer, and it is inside its write() already, which holds
 * the device open.
 */
void fs_notify_stop(struct fs *fs)
{
	struct timespec until;

	atomic_store(&fs->kernel.notify_off, true);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 1;
	if (pthread_rwlock_clockwrlock(&fs->kernel.notify_lock, CLOCK_MONOTONIC,
				       &until) == 0)
		pthread_rwlock_unlock(&fs->kernel.notify_lock);
	else
		fuse_log(FUSE_LOG_DEBUG, "etcdfs: a notification to the "
			 "kernel is still waiting at unmount\n");
}
