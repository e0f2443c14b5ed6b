/*
 * fs.h - the FUSE low-level filesystem of etcdfs, over helper/store.h
 *
 * mount/ fills a struct fs_config, creates the filesystem with fs_new()
 * and hands fs_ops() and the struct fs to fuse_session_new().  The
 * filesystem talks to etcd only through the store it is given, which it
 * does not own.
 */
#ifndef ETCDFS_FS_H
#define ETCDFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

struct store;

struct fs_config {
	struct store *store;	/* borrowed; outlives the filesystem */
	const char *mountpoint;	/* absolute */
	bool ro;		/* refuse every change with EROFS */
	uid_t uid;		/* owner of every file */
	gid_t gid;
	mode_t umask;		/* applied to 0777 (dirs) and 0666 (files) */
	double entry_timeout;	/* seconds the kernel may cache a name */
	double attr_timeout;	/* seconds the kernel may cache attributes */
	bool temp_in_memory;	/* editors' temp/swap/backup files stay local */
	bool chmod_ok;		/* accept chmod/chown that change something */
};

struct fs;

/* NULL when out of memory. */
struct fs *fs_new(const struct fs_config *cfg);
void fs_free(struct fs *fs);

/* The operations; the userdata to pass with them is the struct fs. */
const struct fuse_lowlevel_ops *fs_ops(void);

/* Maps an enum store_err to the errno the filesystem answers. */
int fs_errno(int store_err);

#endif /* ETCDFS_FS_H */
