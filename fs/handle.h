/*
 * handle.h - open files and what they commit: the handles' lifecycle
 * (file.c), pins (pins.c), commits (commit.c, which never replies), the
 * codecs' views (codec.c) and directory moves (dirmove.c); above the
 * mirror and the echo, below the gates and the FUSE operations
 */
#ifndef ETCDFS_HANDLE_H
#define ETCDFS_HANDLE_H

#include "fs_i.h"

/* file.c: the open files' lifecycle */
/*
 * Can files be opened without a message (fs->no_open)?  The kernel then
 * sends no OPEN, FLUSH nor RELEASE, for the whole connection: a warm
 * open+read+close costs what it does on tmpfs.  Only where no open file
 * needs the daemon: a read-only mount, whose files are read through the
 * kernel's pages of an inode that keeps one revision (live.c's fs_apply
 * gives a changed file a new inode while the kernel knows the old one),
 * with every value held (no budget evicts one an open file still
 * reads; at a past revision=, nothing changes and an evicted value is
 * read again as it was), and no -o codec= (its views are made at open)
 * nor -o quorum (its barrier is at open).
 */
bool fs_no_open_mode(const struct fs_config *cfg);
/* handle.c: fs->lock held by none of these but as said */
/*
 * A handle of @n for @pid's open with @fi's flags (the echo's, @echo:
 * writes are no-ops), listed in fs->open and, for a writer, in
 * n->handles.  fs->lock held; NULL on ENOMEM.
 */
struct handle *handle_new(struct fs *fs, struct node *n,
			  struct fuse_file_info *fi, pid_t pid, bool echo);
/*
 * As handle_new, for a reader of @n whose key has moved on to the node
 * @src (n was replaced while the open waited): it reads @src's value.
 */
struct handle *handle_new_from(struct fs *fs, struct node *n,
			       struct node *src, struct fuse_file_info *fi,
			       pid_t pid);
/* Unlists @h and frees it (a release); fs->lock not held. */
void handle_free(struct fs *fs, struct handle *h);
/* The handles whose RELEASE never came; at fs_free. */
void fs_handles_free(struct fs *fs);

/* pins.c: user.etcd.pin's revisions; fs->lock held */
/* Pins @rev for @key on behalf of @setter's parent.  0 or -errno. */
int pin_set(struct fs *fs, const char *key, size_t key_len, pid_t setter,
	    int64_t rev);
/*
 * The pin that applies to @pid's write of @key, in *@rev: pin_take uses
 * it up, pin_peek leaves it.  False if there is none.
 */
bool pin_take(struct fs *fs, const char *key, size_t key_len, pid_t pid,
	      int64_t *rev);
bool pin_peek(struct fs *fs, const char *key, size_t key_len, pid_t pid,
	      int64_t *rev);
/* Drops the pin of @key that @remover's parent set (setfattr -x). */
bool pin_remove(struct fs *fs, const char *key, size_t key_len,
		pid_t remover);
void pins_free(struct fs *fs);

/* commit.c: never replies */
/*
 * write(2) to @h: into its copy (a key) or its node's value (a local
 * file), at @off or, with O_APPEND, at the end.  0 or -errno (EFBIG past
 * the cluster's limit, which changes nothing).
 */
int handle_write(struct fs *fs, struct handle *h, const char *buf,
		 size_t size, off_t off);
/* Resizes a local node's content; fs->lock held. */
int node_local_resize(struct fs *fs, struct node *n, size_t size);
enum commit_kind {
	COMMIT_FLUSH,		/* a close */
	COMMIT_FSYNC,
	COMMIT_RELEASE,		/* the last close, which nobody hears */
};
/* handle_commit()'s answer when it sent a commit, and it succeeded */
#define HANDLE_COMMITTED 1
/*
 * Commits @h's copy if it needs it: when written, when its file is new,
 * when its last commit failed, or (fsync, release) when it was only
 * truncated.  Returns HANDLE_COMMITTED if it committed, 0 if there was
 * nothing to, or -errno.  @h->lock held.
 */
int handle_commit(struct fs *fs, struct handle *h, enum commit_kind kind);
/* After a commit of inode @ino: the kernel drops its pages and size. */
void handle_committed(struct fs *fs, fuse_ino_t ino);
/*
 * With fs->lock held: puts the size and mtime of @n's newest changed
 * writer into @st, if it has one; true if so.  A stat of a file open for
 * writing sees what its writer holds, as on a local disk, unless files
 * opened before the change read the kernel's pages of it (cached
 * readers): the kernel's size is theirs too, and would cut what they
 * read, so stat shows what etcd has until they close.
 */
bool node_writer_attr(struct node *n, struct stat *st);
/*
 * Has @n a writer whose copy differs from etcd's?  Then a new reader must
 * not read the kernel's pages of it.  fs->lock held.
 */
bool node_writer_changed(struct node *n);
/*
 * With fs->lock held, when @h stops showing its size (commit, close):
 * true if the kernel's attributes of the file are then wrong.
 */
bool handle_unshow(struct node *n, struct handle *h);
/*
 * For unlink and rename, with fs->lock held.  A writer closed unwritten
 * after a truncation (or a new file's creation) is committed at its
 * release, which the kernel sends later: node_closed_truncation tells if
 * @n has one.  An unlink drops every writer's commit (node_drop_writers):
 * their file is gone, as on a local disk.  A rename commits the
 * truncation with the move and tells the writers (node_writers_moved):
 * those based on @from_rev, the revision the key had, are based on @rev,
 * the moved key's, from now on.
 */
bool node_closed_truncation(struct node *n);
void node_drop_writers(struct fs *fs, struct node *n);
void node_writers_moved(struct fs *fs, struct node *n, int64_t from_rev,
			int64_t rev);
/*
 * A writer follows its file's renames between a key and a temp name: the
 * copy of a key's writer goes into the file now in memory, and a temp
 * file's writer takes the key's value as its copy.  @h->lock and fs->lock
 * held; 0 or a negative errno.
 */
int handle_follow(struct fs *fs, struct handle *h);
int fs_truncate_open(struct fs *fs, struct fuse_file_info *fi, off_t size);
int fs_truncate_path(struct fs *fs, struct node *n, off_t size, pid_t pid);
/*
 * Writes @data to @key with one compare-and-swap on @base (0: the key must
 * be absent), and puts it in the mirror (@n's node, or the tree's node of
 * the key if @n was replaced; with @own, a new inode when other files are
 * open on it).  *@rev: the new revision.  @begun: an inflight the caller
 * began for @key under the same lock as its decision to commit (ended
 * here), or NULL.  0 or a negative errno (ESTALE: changed meanwhile;
 * EINVAL: -o codec='s encode refused @data, see codec.c).
 */
int fs_commit_value(struct fs *fs, struct node *n, const char *key,
		    size_t key_len, int64_t base, const char *data,
		    size_t len, pid_t pid, bool own, int64_t *rev,
		    struct inflight *begun);

/*
 * dirmove.c: renames the directory @dir of keys to (@ndir, @newname),
 * replacing the empty directory @old (or NULL), in one transaction;
 * -EXDEV if it cannot.  fs->lock held, dropped meanwhile.  0 or -errno.
 */
int fs_dirmove(struct fs *fs, struct node *dir, struct node *ndir,
	       const char *newname, struct node *old);
/*
 * Waits while @dir is being renamed by fs_dirmove (it, or a directory
 * above it), so that a file made in it takes the new prefix.  -ENOENT if
 * @dir went meanwhile.  fs->lock held, dropped meanwhile.
 */
int dirmove_wait(struct fs *fs, struct node *dir);

/*
 * codec.c: -o codec= and -o k8s.  codec_key: does the codec apply to
 * @key?  codec_view_open: @h's copy becomes the view of its revision (an
 * open, before its reply; no lock held).  codec_encode: what to store for
 * @text read at revision @base (*@out owned), or -EINVAL (logged; -o k8s:
 * also -EPROTONOSUPPORT, the stored object has fields this build does not
 * know).  codec_fill_attr: the view's size, once known (fs->lock held).
 */
bool codec_key(struct fs *fs, const char *key, size_t key_len);
int codec_view_open(struct fs *fs, struct handle *h, fuse_ino_t ino);
int codec_encode(struct fs *fs, const char *key, size_t key_len,
		 int64_t base, const char *text, size_t len, char **out,
		 size_t *out_len);
void codec_fill_attr(const struct node *n, struct stat *st);

#endif /* ETCDFS_HANDLE_H */
