/*
 * ops.h - the FUSE operations, the only functions that reply, and what
 * the ops table and the lifecycle (fs.c) call of them: statfs's thread,
 * user.etcd.stats, the history's probes
 *
 * fs_i.h does not include it: a file below the operations that called one
 * would not compile
 */
#ifndef ETCDFS_OPS_H
#define ETCDFS_OPS_H

#include "fs_i.h"

/* file.c: open, read, write, flush, fsync, release; each replies */
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi);
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi);
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi);

/* attr.c */
/* @n's attributes as stat shows them; fs->lock held. */
void node_fill_attr(struct fs *fs, struct node *n, struct stat *st);
/* Fills @e for @n and counts the kernel's new reference; fs->lock held. */
void fs_fill_entry(struct fs *fs, struct node *n, struct fuse_entry_param *e);
/*
 * Replies the entry of @n, which counts as the kernel's lookup of it, for
 * a node the caller referenced (n->refs++) under fs->lock and unlocked
 * since, so that a watch event cannot free it meanwhile.  That reference
 * is dropped once the entry's lookup holds the node.  fs->lock not held.
 */
void fs_reply_entry_unref(struct fs *fs, fuse_req_t req, struct node *n);
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi);

/* dir.c: the operations on names and directories; each replies */
void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets);
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);
void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode);
void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname);
void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name);
/* The open directories whose RELEASEDIR never came; at fs_free. */
void dir_handles_free(struct fs *fs);

/* move.c */
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned int flags);

/* stats.c: user.etcd.stats */
ssize_t fs_stats_text(struct fs *fs, char **big);	/* fs->lock held */
/* A value pushed into the kernel's page cache (file.c). */
void fs_stats_stored(struct fs *fs);

/* statfs.c */
void fs_statfs(fuse_req_t req, fuse_ino_t ino);
/* Stops the thread that asks etcd for its space; at destroy. */
void fs_space_free(struct fs *fs);

/* xattr.c */
void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags);
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* ttl.c: user.etcd.ttl (fs_ttl_xattr: the name is it); each replies */
bool fs_ttl_xattr(const char *name);
void fs_ttl_get(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_ttl_set(fuse_req_t req, fuse_ino_t ino, const char *value,
		size_t size);
void fs_ttl_remove(fuse_req_t req, fuse_ino_t ino);

/* history.c: user.etcd.history */
bool fs_history_xattr(const char *name);
void fs_history_get(fuse_req_t req, fuse_ino_t ino, size_t size);
void history_free(struct fs *fs);

#endif /* ETCDFS_OPS_H */
