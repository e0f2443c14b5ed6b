/*
 * kernel.h - inode ids and the notifications to the kernel (kernel.c),
 * below the mirror and every FUSE operation
 */
#ifndef ETCDFS_KERNEL_H
#define ETCDFS_KERNEL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs.h"
#include "tree.h"

#include <pthread.h>
#include <stdatomic.h>

struct fs;

struct fs_kernel {
	struct fuse_session *se;	/* set once, before the session's
					 * loop (fs_set_session) */
	/*
	 * Every notification to the kernel (fs_notify_*) is sent with
	 * notify_lock read-held, and none once notify_off is set: the
	 * watch's and the echo's threads outlive the session's loop, and
	 * libfuse's unmount closes the device, whose number the next
	 * descriptor opened may take (fs_notify_stop).
	 */
	pthread_rwlock_t notify_lock;
	atomic_bool notify_off;
};

void kernel_init(struct fs_kernel *k);
void kernel_release(struct fs_kernel *k);
/* Is there a session to notify (a mount, not fs_load's tests)? */
static inline bool kernel_has_session(const struct fs_kernel *k)
{
	return k->se != NULL;
}

/*
 * The kernel's id of @n in @t: its address, the root's FUSE_ROOT_ID
 * (the tree's id function, tree_init's @id).
 */
uint64_t kernel_node_id(const struct tree *t, const struct node *n);
/* The kernel's id of @n, and the node of the id @ino. */
fuse_ino_t node_id(struct fs *fs, struct node *n);
struct node *node_of(struct fs *fs, fuse_ino_t ino);

/* The directory @ino in *@dirp: 0, or -ENOTDIR.  fs->lock held. */
static inline int dir_of(struct fs *fs, fuse_ino_t ino, struct node **dirp)
{
	struct node *dir = node_of(fs, ino);

	if (dir->type != NODE_DIR)
		return -ENOTDIR;
	*dirp = dir;
	return 0;
}

/* Sends each invalidation of @l, then empties it; fs->lock not held. */
void fs_send_invals(struct fs *fs, struct inval_list *l);
/*
 * libfuse's notifications, sent only while the session's device is open
 * (fs_notify_stop): -ENOTCONN after, as if the kernel were gone.
 */
int fs_notify_inval_inode(struct fs *fs, fuse_ino_t ino, off_t off,
			  off_t len);
int fs_notify_inval_entry(struct fs *fs, fuse_ino_t parent,
			  const char *name, size_t len);
int fs_notify_store(struct fs *fs, fuse_ino_t ino, off_t off,
		    struct fuse_bufvec *bufv);

#endif /* ETCDFS_KERNEL_H */
