/*
 * mirror.h - the mirror kept live (live.c): the listing, the watch, the
 * keys being written, the mount's own changes, the reads of a key's value
 */
#ifndef ETCDFS_MIRROR_H
#define ETCDFS_MIRROR_H

#include "fs_i.h"

/* live.c */
void fs_apply(struct fs *fs, bool del, const struct store_kv *kv,
	      int64_t rev);
/*
 * The mirror has applied every change the watch delivered up to @rev:
 * the one place where the watch moves the mirror's revision
 * (fs->tree.revision) and fs->mirror.applied_rev.  fs->lock held.
 */
void fs_mirror_applied(struct fs *fs, int64_t rev);
/*
 * The revision user.etcd.revision reports: the mirror's, once the kernel
 * was sent the invalidations of every change up to it.  fs->lock held.
 */
int64_t fs_revision_shown(struct fs *fs);
/* With fs->lock held: @in names @key as being written, until ..._end. */
void inflight_begin(struct fs *fs, struct inflight *in, const char *key,
		    size_t key_len);
void inflight_end(struct fs *fs, struct inflight *in);
bool inflight_has(struct fs *fs, const char *key, size_t key_len);
/*
 * The next inflight's seq (inflight_seq_now), and waiting until every
 * write begun before it has ended (inflight_wait_begun_before: fs->lock
 * held, dropped meanwhile; bounded as own_write_wait, false past it).
 */
uint64_t inflight_seq_now(struct fs *fs);
bool inflight_wait_begun_before(struct fs *fs, uint64_t seq);
/*
 * The mount's own changes, which it puts in the mirror itself: a change of
 * @key at @rev is noted (own_change_add) when the mirror has it, before
 * the key's inflight ends, and its watch event, whenever it comes, is
 * then taken (own_change_take: true once) and not applied again, so that
 * an event of a key the mount has since renamed or deleted brings back
 * nothing.  fs->lock held.  Bounded: past OWN_CHANGES_MAX, the oldest are
 * forgotten.
 */
void own_change_add(struct fs *fs, const char *key, size_t key_len,
		    int64_t rev);
bool own_change_take(struct fs *fs, const char *key, size_t key_len,
		     int64_t rev);
void own_changes_free(struct fs *fs);
/*
 * Waits until no commit, unlink or rename of @n's key by this mount is in
 * flight, so that changes of one key reach etcd in the order they were
 * made (a close's commit, sent at release, before the unlink that
 * followed it).  fs->lock held, dropped meanwhile: true if it was, and
 * the caller looks again at what it found (@n itself may be gone then,
 * unless the caller holds a reference).  Bounded (a minute).
 */
bool inflight_wait(struct fs *fs, struct node *n);
/*
 * Lists the keys below @dir's prefix and makes the subtree match them.
 * Takes and drops fs->lock itself; @dir must be referenced.
 */
int fs_refresh_dir(struct fs *fs, struct node *dir);
/*
 * Reads the key that (dir, name) names into the tree, or the keys below
 * the directory it names (-o nowatch's lookups).  fs->lock held, and
 * dropped for the request; @dir referenced meanwhile.  0 if it is there
 * now, -ENOENT if etcd has no such key, or another negative errno.
 */
int fs_lookup_key(struct fs *fs, struct node *dir, const char *name);
int fs_start_watch(struct fs *fs, int64_t from);
/*
 * Reads @n's key again: for -o nowatch, for -o quorum, or because the
 * value budget evicted its value (a linearizable probe of the revision
 * first, with quorum and the watch).  fs->lock held; dropped for the
 * requests and taken again.  0 or a negative errno.
 */
int fs_refresh_file(struct fs *fs, struct node *n);
/*
 * With fs->lock held: reads @n's value again if the value budget evicted
 * it; the lock is dropped meanwhile, so the caller looks again at what it
 * found.  0, or -ENOENT if the key went meanwhile, or another -errno.
 */
int fs_load_value(struct fs *fs, struct node *n);

int fs_name_key(struct fs *fs, struct node *dir, const char *name,
		enum node_type type, char **key, size_t *key_len);
/*
 * A name no file of the mount can have: fs/names.h cuts long segments
 * into parts, so every component is at most NAME_MAX bytes (ENAMETOOLONG).
 */
static inline bool fs_name_too_long(const char *name)
{
	return strnlen(name, NAME_MAX + 1) > NAME_MAX;
}

/* The name of a temp file (fs/temp.h): built in, or the site's. */
static inline bool fs_is_temp_name(struct fs *fs, const char *name)
{
	return temp_name(fs->temp, name);
}

/* inflight.c, for live.c: fs->lock held */
/* Forgets the own changes at or below @rev (INT64_MAX: all). */
void own_changes_drop(struct fs *fs, int64_t rev);
/* Did the mount change @key after @rev?  (A listing's stale key.) */
bool own_change_after(struct fs *fs, const char *key, size_t key_len,
		      int64_t rev);
/*
 * Waits until no write of @key by this mount is in flight (bounded),
 * dropping fs->lock meanwhile.
 */
void own_write_wait(struct fs *fs, const char *key, size_t key_len);

#endif /* ETCDFS_MIRROR_H */
