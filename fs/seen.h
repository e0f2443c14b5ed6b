/*
 * seen.h - when this mount saw each of the last changes the watch
 * delivered (seen.c): part of the mirror, read by user.etcd.history
 */
#ifndef ETCDFS_SEEN_H
#define ETCDFS_SEEN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Changes whose time the mount remembers. */
#define SEEN_RING	16384

struct fs;

struct seen_change {
	uint64_t hash;		/* of the key: the ring keeps no keys */
	int64_t rev;
	struct timespec at;
};

/* The watch delivered @key's change at @rev now.  fs->lock held. */
void seen_note(struct fs *fs, const char *key, size_t key_len, int64_t rev);
/*
 * What the ring knows of @key: *@out (free() it), *@n entries (none:
 * NULL, 0).  fs->lock held; 0 or -ENOMEM.
 */
int seen_of_key(struct fs *fs, const char *key, size_t key_len,
		struct seen_change **out, size_t *n);
void seen_free(struct fs *fs);

#endif /* ETCDFS_SEEN_H */
