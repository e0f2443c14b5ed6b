/*
 * echo_thread.h - the echo (echo.c), as the FUSE operations and the
 * lifecycle see it: its start and stop, and its requests recognised
 */
#ifndef ETCDFS_ECHO_THREAD_H
#define ETCDFS_ECHO_THREAD_H

#include "fs_i.h"

/* echo.c */
int echo_start(struct fs *fs);
void echo_stop(struct fs *fs);
/*
 * A process closed the directory @dir (@req's RELEASEDIR): if it is not
 * the echo's and the echo made @dir lately, it follows the echo's new
 * directories (see struct echo_follow).  fs->lock held.
 */
void echo_dir_walked(struct fs *fs, fuse_req_t req, struct node *dir);
/* Was a follower seen lately (the echo waits for it)?  fs->lock held. */
bool echo_follower(struct fs *fs);
/* Other clients' changes in the mirror whose replay is not over. */
size_t echo_pending(struct fs *fs);
/* The change @req echoes, or NULL if it is not the echo's.  fs->lock held. */
struct echo_ev *echo_of(struct fs *fs, fuse_req_t req);
/*
 * The echo's requests while it replays @e, with fs->lock held, about the
 * name (@dir, @name).  echo_lookup: -ENOENT if the change made it and the
 * echo has not yet; 0 with *@np the node the change had there, in the
 * tree or removed since; 1 if the change has no such name.  echo_make:
 * the echo's mkdir or create of a name the change made: its node (the
 * mirror has it already), or NULL.  echo_remove: the echo's unlink or
 * rmdir of a name the change removed: true if it did.
 */
int echo_lookup(struct fs *fs, struct echo_ev *e, struct node *dir,
		const char *name, struct node **np);
struct node *echo_make(struct fs *fs, struct echo_ev *e, struct node *dir,
		       const char *name, enum node_type type);
bool echo_remove(struct fs *fs, struct echo_ev *e, struct node *dir,
		 const char *name, enum node_type type);
/*
 * Does the change the echo replays now have the name (@dir, @name)?
 * Then a lookup of it that is not the echo's is not to be cached: the
 * kernel's entry would hide the change's name from the echo.
 */
bool echo_names(struct fs *fs, struct node *dir, const char *name);
/* Is @n a node of the change the echo replays now?  fs->lock held. */
bool echo_holds(struct fs *fs, struct node *n);

#endif /* ETCDFS_ECHO_THREAD_H */
