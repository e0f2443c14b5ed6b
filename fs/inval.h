/*
 * inval.h - invalidation records: what the kernel must forget after a
 * change of the mirror (inval.c)
 *
 * The tree fills a list under its owner's lock; the owner sends it
 * (kernel.c's fs_send_invals) once the lock is released.  A list has no
 * lock of its own: it is its filler's until it is sent.
 */
#ifndef ETCDFS_INVAL_H
#define ETCDFS_INVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * An entry (the name @name in the directory @id) or an inode (@id), ids
 * as the tree's id function gives them.
 */
struct inval {
	bool entry;
	uint64_t id;
	char *name;		/* owned; NULL for an inode */
	size_t name_len;
};

struct inval_list {
	struct inval *v;
	size_t n;
	size_t cap;
};

/* Appends a record to @l (NULL: none kept).  0 or -ENOMEM. */
int inval_add(struct inval_list *l, bool entry, uint64_t id,
	      const char *name, size_t len);
void inval_release(struct inval_list *l);
/* Removes @l's entry invalidations, keeping its inodes' in their order. */
void inval_drop_entries(struct inval_list *l);

#endif /* ETCDFS_INVAL_H */
