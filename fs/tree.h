/*
 * tree.h - the mirror: the keys under the mount prefix as a tree of
 * directories and files (fs/names.h gives the shape), the values held in
 * memory under a budget, and what the kernel must forget after each change
 *
 * The tree knows no FUSE and no store: it is given keys (struct store_kv,
 * struct store_list) and answers with nodes and invalidation records
 * (struct inval_list), which its owner sends.  Its clock and the ids the
 * kernel knows nodes by are its owner's, given at tree_init().  It has no
 * lock of its own: every function here is called with the owner's lock
 * held (fs->lock), and none blocks.
 *
 * What it cannot do: keep a value on disk, or read one again (an evicted
 * value is its owner's to read).
 */
#ifndef ETCDFS_TREE_H
#define ETCDFS_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "inval.h"
#include "kv.h"

/* The st_ino of the root; other nodes count up from it. */
#define TREE_ROOT_INO 1

struct handle;
struct tree;

enum node_type {
	NODE_DIR,
	NODE_FILE,
};

/*
 * A file or directory of the mount.  A file is one key (or a local file:
 * an editor's temp file, or a new file not committed yet); a directory is
 * the set of keys below its prefix, or a local directory made by mkdir.
 * st_ino is ino, given once by the tree and kept for the node's lifetime;
 * the id the kernel knows it by is its owner's (tree->id).
 *
 * Every field is protected by the tree owner's lock (fs->lock), the flags
 * too (bits of one byte: a write of one rewrites the others); a few are
 * only kept here for fs/ (open files, the kernel's references) and the
 * tree reads them only to know whether a node may be freed or evicted.
 */
/*
 * A value as -o codec= shows it (fs/codec.c): what `PROG decode` wrote for
 * the value of revision @rev, or, with @raw, that it refused it (the raw
 * value is shown).  Kept with the value: counted against the value budget,
 * dropped when the value changes or is evicted.
 */
struct node_view {
	int64_t rev;
	bool raw;
	size_t len;
	char data[];		/* NUL-terminated past len */
};

/* What few nodes need at once: kept apart, so that the others are smaller. */
struct node_rare {
	/*
	 * A key renamed away to a temp name (an editor's backup) is not
	 * deleted at once: its temp file remembers it here, and the key is
	 * deleted only if the temp file is removed while no new file took
	 * the key's place.
	 */
	char *ghost_key;
	size_t ghost_key_len;
	int64_t ghost_rev;

	pid_t refused_pid;	/* the last unlink refused, for the */
	struct timespec refused_at;	/* retry on ESTALE (see fs_unlink) */
	pid_t ttl_refused_pid;	/* the same for a TTL set (fs/ttl.c): its */
	struct timespec ttl_refused_at;	/* own, or one refuses the other */
	/* the lease fs/ttl.c granted for this key alone: revoked when it
	   gives the key another or none */
	int64_t granted_lease;

	/*
	 * Times set by utimensat (touch, cp -a, tar, rsync -t), in memory
	 * only (attr.c): the mtime is the node's own; atime and ctime are
	 * these while the node's mtime is still set_mtime, so that a new
	 * revision (or a write) resets them all.
	 */
	bool times_set;
	struct timespec set_mtime;
	struct timespec atime;
	struct timespec ctime;
	/* the mode chmod gave a local file (temp files, mkdir'd dirs) */
	bool mode_set;
	mode_t mode;
	struct node_view *view;	/* owned; NULL: none (node_set_view) */
	bool codec_logged;	/* a refused decode of the key was logged */
};

struct node {
	/* what a (parent, name) lookup reads, side by side */
	struct node *parent;		/* NULL for the root and removed nodes */
	struct node *hnext;		/* hash chain of (parent, name) */
	char *name;			/* encoded component, NUL-terminated */
	unsigned name_len;	/* one component (fs/names.c keeps it to
				 * NAME_MAX) */
	/*
	 * Keys are bounded by etcd's request size (1.5 MiB by default), far
	 * below 4 GiB; 4 bytes, beside name_len.
	 */
	unsigned key_len;
	char *key;			/* a file's key; a directory's prefix */
	struct node *next;		/* sibling list */
	struct node *prev;

	uint64_t ino;
	uint64_t nlookup;	/* the kernel's references */
	struct handle *handles;	/* open for writing, newest first */

	/*
	 * What only directories or only files use, in the same bytes: a
	 * mirror holds millions of nodes.  Read a member only on a node of
	 * its type (a file's cache_rev is a directory's child).
	 */
	union {
		struct {	/* NODE_DIR */
			struct node *child;	/* first child */
			unsigned ndirs;	/* subdirectories among the
					 * children (st_nlink is 2 + ndirs) */
			unsigned nchildren;
		};
		struct {	/* NODE_FILE */
			/*
			 * the revision of the kernel's pages of the inode: 0
			 * it never had any, CACHE_UNKNOWN some of no known
			 * revision (file.c)
			 */
			int64_t cache_rev;
			/*
			 * local files grow in place (commit.c): a hint of
			 * the value's capacity, which is never more than it
			 * (past 4 GiB the growth only reallocates more often)
			 */
			uint32_t value_cap;
			/*
			 * the reconcile generation that last saw the key,
			 * its low 32 bits (tree_reconcile_begin clears them
			 * all when they wrap)
			 */
			uint32_t seen;
		};
	};

	/*
	 * Files: the value as etcd has it (or the local content).  NULL in
	 * a key's file means the value budget evicted it: size and the
	 * revisions are still right, and the value is read again from etcd
	 * when a file is opened (file.c).  Under a budget, the node's links
	 * in the list of values in memory follow it (struct node_lru).
	 */
	char *value;
	size_t size;
	int64_t mod_revision;
	int64_t create_revision;
	int64_t version;
	int64_t lease;
	struct timespec mtime;	/* when this revision was first seen; a
				 * directory's: when a name last came or
				 * went in it */
	struct node_rare *rare;	/* NULL but for a few files at a time */

	unsigned refs;		/* open handles and requests in flight */
	unsigned nopen;		/* open handles (but the echo's) */
	unsigned trunc_waiting;	/* O_TRUNC opens closed unwritten, not yet
				 * committed (file.c) */
	/* the flags as bits: 4 bytes with cached_readers */
	enum node_type type : 8;
	bool local : 1;		/* a mkdir'd dir, or a file that lives only
				 * in memory (temp files) */
	bool pending : 1;	/* a new file not committed to etcd yet */
	bool removed : 1;	/* out of the tree; freed when unreferenced */
	bool in_limbo : 1;	/* removed, on fs->limbo (next, prev) */
	bool in_lru : 1;	/* its value counts against the value budget */
	unsigned short cached_readers;	/* open files reading the kernel's
					 * pages (file.c) */
	/*
	 * In the same allocation (tree_new_node): a tree's LRU links if it
	 * has a value budget, then the name, unless renamed since made.
	 */
};

/*
 * A node of a tree with a value budget is followed by these (tree.c): the
 * links of its value in the list of values in memory, newest first.  A
 * mount without a budget (the default) keeps no list, and its nodes are
 * 16 bytes smaller.
 */
struct node_lru {
	struct node *prev;
	struct node *next;
};

/* The owner's clock: directory and file times. */
typedef void tree_clock_fn(struct timespec *ts);
/* The mount's clock (CLOCK_REALTIME), a tree_clock_fn: files' times. */
void fs_now(struct timespec *ts);
/* The id the kernel knows @n by, in invalidation records. */
typedef uint64_t tree_id_fn(const struct tree *t, const struct node *n);

struct tree {
	struct node *root;
	struct node *limbo;	/* removed nodes still referenced */
	struct node **buckets;	/* (parent, name) -> node */
	size_t nbuckets;
	size_t nnodes;		/* in the tree, but the root */
	uint64_t next_ino;
	uint64_t gen;		/* the last reconcile generation */
	int64_t revision;	/* the highest revision applied */

	/* the values of keys held in memory, newest first, under budget */
	struct node *lru_head;
	struct node *lru_tail;
	size_t value_bytes;
	size_t value_budget;	/* 0: every value is held */
	bool lru_links;		/* nodes carry struct node_lru: a budget at
				 * tree_init (set later, nothing is evicted) */

	tree_clock_fn *now;
	tree_id_fn *id;
};

/*
 * An empty tree (the root alone, made at @now's time) holding at most
 * @value_budget bytes of values (0: no bound).  0 or -ENOMEM.
 */
int tree_init(struct tree *t, size_t value_budget, tree_clock_fn *now,
	      tree_id_fn *id);
/* Frees every node, in the tree and in limbo. */
void tree_release(struct tree *t);

struct node *tree_child(struct tree *t, struct node *dir, const char *name,
			size_t len);
struct node *tree_new_node(struct tree *t, struct node *dir, const char *name,
			   size_t len, enum node_type type);
void tree_detach(struct tree *t, struct node *n);
void tree_attach(struct tree *t, struct node *n, struct node *dir,
		 const char *name, size_t len);
/*
 * A node stays while the kernel (nlookup) or the owner (refs) refers to
 * it: node_unref and node_forget drop those, and free a removed node
 * nothing refers to any more.
 */
void node_unref(struct tree *t, struct node *n);
void node_forget(struct tree *t, struct node *n, uint64_t nlookup);
/* Takes @n out of the tree; freed once nothing refers to it. */
void node_drop(struct tree *t, struct node *n);
void limbo_free(struct tree *t);
/*
 * Sets a file's value; then, under a value budget, evicts the values least
 * recently used (never @n's, nor a local, pending or referenced file's).
 * lru_unlink/lru_link bracket any other change of a file's value or size;
 * node_touch marks a value as just used.  0 or -ENOMEM.
 */
int node_set_value(struct tree *t, struct node *n, const char *value,
		   size_t len);
void lru_unlink(struct tree *t, struct node *n);
void lru_link(struct tree *t, struct node *n);
void node_touch(struct tree *t, struct node *n);
/*
 * Keeps @v (owned; NULL drops the view) as the view of @n's value, which
 * must be in memory, then evicts as node_set_value does.  0, or -ENOMEM
 * (@v is freed then).
 */
int node_set_view(struct tree *t, struct node *n, struct node_view *v);
/* @n's view of its value now, or NULL. */
static inline const struct node_view *node_view(const struct node *n)
{
	const struct node_view *v = n->rare ? n->rare->view : NULL;

	return v && n->value && v->rev == n->mod_revision ? v : NULL;
}
/* @n's rare part, made if needed; NULL when out of memory. */
struct node_rare *node_rare(struct node *n);
/* The key a temp file took over from an editor's rename, or NULL. */
static inline const char *node_ghost(const struct node *n)
{
	return n->rare ? n->rare->ghost_key : NULL;
}

/*
 * Puts @kv (a key relative to the mount prefix) in the tree, making the
 * directories its path needs; a key newer than the node's (or a local or
 * pending node) takes the new value.  0 or -ENOMEM.
 */
int tree_put(struct tree *t, const struct store_kv *kv,
	     struct inval_list *inv);
/*
 * Removes @key's file unless it is local, pending, or at @rev or newer
 * (@rev 0: any); prunes the directories left empty.  Always 0.
 */
int tree_delete(struct tree *t, const char *key, size_t key_len,
		int64_t rev, struct inval_list *inv);
/* The file of @key (a "%value" too), or NULL. */
struct node *tree_find_key(struct tree *t, const char *key, size_t key_len);
void tree_prune(struct tree *t, struct node *dir, struct inval_list *inv);
void tree_keep(struct tree *t, struct node *dir);
struct node *tree_replace(struct tree *t, struct node *n,
			  struct inval_list *inv);
int tree_reconcile(struct tree *t, struct node *dir,
		   const struct store_list *l, struct inval_list *inv);
uint64_t tree_reconcile_begin(struct tree *t);
int tree_reconcile_page(struct tree *t, uint64_t gen,
			const struct store_list *l, struct inval_list *inv);
int tree_reconcile_end(struct tree *t, struct node *dir, uint64_t gen,
		       int64_t rev, struct inval_list *inv);
bool tree_dir_has_keys(struct node *dir);
int tree_collect_stale(struct tree *t, uint64_t gen, int64_t rev,
		       struct node ***out, size_t *n);

/* node_times.c */
#define ATTR_SET_ATIME 1
#define ATTR_SET_MTIME 2
/*
 * Sets @n's times as utimensat does (@what: ATTR_SET_*), in memory until
 * the next revision; fs->lock held.  0 or -ENOMEM.
 */
int node_set_times(struct node *n, unsigned what, const struct timespec *atime,
		   const struct timespec *mtime);
/* What node_fill_attr shows of the times and modes set in memory. */
void node_kept_attr(struct node *n, struct stat *st);

#endif /* ETCDFS_TREE_H */
