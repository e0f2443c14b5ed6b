/*
 * tree.c - the tree of nodes: the mount's mirror of the keys under its
 * prefix, shaped as directories by fs/names.h
 *
 * Every function here runs with its owner's lock held (fs->lock) and never
 * blocks: it changes the tree and records what the kernel must forget in
 * an inval_list, which the owner sends once the lock is released.  It
 * knows no FUSE and no store (fs/tree.h).
 *
 * The shape follows the keys: a key's path is names_key_to_path(); each
 * component but the last is a directory, made when a key needs it and
 * pruned when its last key goes (unless mkdir made it).  A key that is also
 * the prefix of other keys ("a" with "a/b") is the file "%value" inside its
 * directory; when the other keys go, it moves back to its own name.
 *
 * Values: every key's value is in memory, unless a value budget is set
 * (-o value_budget): then the values of keys not in use are evicted, least
 * recently used first, once their bytes pass the budget; the owner
 * (fs/file.c) reads an evicted value again when the file is opened.  The
 * keys, sizes and revisions always stay.
 *
 * What it cannot do: keep a value on disk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "tree.h"

/* @n's LRU links: only on a tree with lru_links, and never the root's. */
static struct node_lru *lru_of(struct node *n)
{
	return (struct node_lru *)(n + 1);
}

/* Where tree_new_node put @n's name: past the node and its LRU links. */
static char *name_inline(const struct tree *t, struct node *n)
{
	return (char *)(n + 1) + (t->lru_links ? sizeof(struct node_lru) : 0);
}

/* Is @n's name an allocation of its own (the root's, or a rename's)? */
static bool name_owned(const struct tree *t, struct node *n)
{
	return n == t->root || n->name != name_inline(t, n);
}

static size_t hash_of(const struct node *dir, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)dir;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 1099511628211ull;
	}
	return (size_t)(h ^ (h >> 29));
}

static void hash_insert(struct tree *t, struct node *n)
{
	size_t b = hash_of(n->parent, n->name, n->name_len) & (t->nbuckets - 1);

	n->hnext = t->buckets[b];
	t->buckets[b] = n;
}

static void hash_remove(struct tree *t, struct node *n)
{
	size_t b = hash_of(n->parent, n->name, n->name_len) & (t->nbuckets - 1);
	struct node **p;

	for (p = &t->buckets[b]; *p; p = &(*p)->hnext) {
		if (*p == n) {
			*p = n->hnext;
			n->hnext = NULL;
			return;
		}
	}
}

/*
 * Doubles the table once it holds two nodes a bucket, so that it costs 4
 * to 8 bytes a node rather than 8 to 16; a lookup then looks at a quarter
 * of a node more on average.  Keeps the old table on ENOMEM.
 */
static void hash_grow(struct tree *t)
{
	size_t nb = t->nbuckets * 2, i;
	struct node **nbk, *n, *next;

	if (t->nnodes < 2 * t->nbuckets)
		return;
	nbk = calloc(nb, sizeof(*nbk));
	if (!nbk)
		return;
	for (i = 0; i < t->nbuckets; i++) {
		for (n = t->buckets[i]; n; n = next) {
			size_t b = hash_of(n->parent, n->name, n->name_len) &
				   (nb - 1);

			next = n->hnext;
			n->hnext = nbk[b];
			nbk[b] = n;
		}
	}
	free(t->buckets);
	t->buckets = nbk;
	t->nbuckets = nb;
}

struct node *tree_child(struct tree *t, struct node *dir, const char *name,
			size_t len)
{
	size_t b = hash_of(dir, name, len) & (t->nbuckets - 1);
	struct node *n;

	for (n = t->buckets[b]; n; n = n->hnext) {
		if (n->parent == dir && n->name_len == len &&
		    memcmp(n->name, name, len) == 0)
			return n;
	}
	return NULL;
}

static void limbo_unlink(struct tree *t, struct node *n)
{
	if (!n->in_limbo)
		return;
	if (n->prev)
		n->prev->next = n->next;
	else
		t->limbo = n->next;
	if (n->next)
		n->next->prev = n->prev;
	n->next = n->prev = NULL;
	n->in_limbo = false;
}

/*
 * The name of @n came into @dir (@in) or went out of it: @dir's mtime and
 * ctime change, as on a local disk, and so does its link count if @n is a
 * directory.  The kernel learns it from whoever made the change: its own
 * request (create, unlink, rename...), or an invalidation of @dir.
 */
static void dir_changed(struct tree *t, struct node *dir, const struct node *n,
			bool in)
{
	if (n->type == NODE_DIR) {
		if (in)
			dir->ndirs++;
		else
			dir->ndirs--;
	}
	t->now(&dir->mtime);
}

void tree_attach(struct tree *t, struct node *n, struct node *dir,
		 const char *name, size_t len)
{
	if (name != n->name) {
		char *copy = malloc(len + 1);

		/* Renames are rare; on ENOMEM keep the old name's memory. */
		if (copy) {
			memcpy(copy, name, len);
			copy[len] = '\0';
			if (name_owned(t, n))
				free(n->name);
			n->name = copy;
			n->name_len = len;
		}
	}
	limbo_unlink(t, n);
	n->parent = dir;
	n->removed = false;
	lru_link(t, n);
	n->prev = NULL;
	n->next = dir->child;
	if (dir->child)
		dir->child->prev = n;
	dir->child = n;
	dir->nchildren++;
	dir_changed(t, dir, n, true);
	hash_insert(t, n);
	t->nnodes++;
	hash_grow(t);
}

void tree_detach(struct tree *t, struct node *n)
{
	struct node *dir = n->parent;

	if (!dir)
		return;
	hash_remove(t, n);
	if (n->prev)
		n->prev->next = n->next;
	else
		dir->child = n->next;
	if (n->next)
		n->next->prev = n->prev;
	n->next = n->prev = NULL;
	dir->nchildren--;
	dir_changed(t, dir, n, false);
	n->parent = NULL;
	t->nnodes--;
}

static void rare_free(struct node_rare *r)
{
	if (r) {
		free(r->ghost_key);
		free(r->view);
	}
	free(r);
}

static void node_free(struct tree *t, struct node *n)
{
	lru_unlink(t, n);
	rare_free(n->rare);
	if (name_owned(t, n))
		free(n->name);
	free(n->key);
	free(n->value);
	free(n);
}

/* Frees @n if it is out of the tree and nobody refers to it. */
static void node_maybe_free(struct tree *t, struct node *n)
{
	if (n->removed && !n->parent && n->nlookup == 0 && n->refs == 0 &&
	    (n->type != NODE_DIR || !n->child) && n != t->root) {
		limbo_unlink(t, n);
		node_free(t, n);
	}
}

void node_drop(struct tree *t, struct node *n)
{
	tree_detach(t, n);
	n->removed = true;
	/* a removed file's value is never read again */
	lru_unlink(t, n);
	if (!n->in_limbo) {
		n->prev = NULL;
		n->next = t->limbo;
		if (t->limbo)
			t->limbo->prev = n;
		t->limbo = n;
		n->in_limbo = true;
	}
	node_maybe_free(t, n);
}

void limbo_free(struct tree *t)
{
	while (t->limbo) {
		struct node *n = t->limbo;

		limbo_unlink(t, n);
		node_free(t, n);
	}
}

void node_unref(struct tree *t, struct node *n)
{
	n->refs--;
	node_maybe_free(t, n);
}

void node_forget(struct tree *t, struct node *n, uint64_t nlookup)
{
	n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
	/* an inode the kernel let go of went with its pages */
	if (!n->nlookup && n->type == NODE_FILE)
		n->cache_rev = 0;
	node_maybe_free(t, n);
}

/* A node out of the tree; freed once the kernel and handles let go. */
static void node_remove(struct tree *t, struct node *n)
{
	node_drop(t, n);
}

struct node *tree_new_node(struct tree *t, struct node *dir, const char *name,
			   size_t len, enum node_type type)
{
	/* the name in the same allocation: one malloc less per key */
	size_t links = t->lru_links ? sizeof(struct node_lru) : 0;
	struct node *n = calloc(1, sizeof(*n) + links + len + 1);

	if (!n)
		return NULL;
	n->name = name_inline(t, n);
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->name_len = len;
	n->type = type;
	n->ino = ++t->next_ino;
	t->now(&n->mtime);
	tree_attach(t, n, dir, n->name, len);
	return n;
}

struct node_rare *node_rare(struct node *n)
{
	if (!n->rare)
		n->rare = calloc(1, sizeof(*n->rare));
	return n->rare;
}

/* What @n's value costs the budget: its bytes and its view's. */
static size_t value_cost(const struct node *n)
{
	return n->size + (n->rare && n->rare->view ? n->rare->view->len : 0);
}

/* The view goes with the value it was made of (lru_unlink'd first). */
static void view_drop(struct node *n)
{
	if (n->rare && n->rare->view) {
		free(n->rare->view);
		n->rare->view = NULL;
	}
}

void lru_unlink(struct tree *t, struct node *n)
{
	struct node_lru *l;

	if (!n->in_lru)
		return;
	l = lru_of(n);
	if (l->prev)
		lru_of(l->prev)->next = l->next;
	else
		t->lru_head = l->next;
	if (l->next)
		lru_of(l->next)->prev = l->prev;
	else
		t->lru_tail = l->prev;
	l->prev = l->next = NULL;
	n->in_lru = false;
	t->value_bytes -= value_cost(n);
}

void lru_link(struct tree *t, struct node *n)
{
	if (n->in_lru || !t->lru_links || !t->value_budget || !n->value ||
	    n->type != NODE_FILE || n->removed)
		return;
	lru_of(n)->prev = NULL;
	lru_of(n)->next = t->lru_head;
	if (t->lru_head)
		lru_of(t->lru_head)->prev = n;
	else
		t->lru_tail = n;
	t->lru_head = n;
	n->in_lru = true;
	t->value_bytes += value_cost(n);
}

void node_touch(struct tree *t, struct node *n)
{
	if (n->in_lru && t->lru_head != n) {
		lru_unlink(t, n);
		lru_link(t, n);
	}
}

/*
 * Evicts values, oldest first, until they fit the budget.  A value stays
 * while it cannot be read again as it is: a local or uncommitted file's,
 * or one a request or an open file is using (refs);
 * those are moved to the front, so each is passed over once per call.
 */
static void evict_values(struct tree *t, struct node *keep)
{
	size_t budget = t->value_budget, left;
	struct node *n;

	if (!budget || t->value_bytes <= budget)
		return;
	for (left = t->nnodes; left && t->value_bytes > budget; left--) {
		n = t->lru_tail;
		if (!n || n == keep)
			return;
		lru_unlink(t, n);
		if (n->local || n->pending || n->refs) {
			lru_link(t, n);
			continue;
		}
		free(n->value);
		n->value = NULL;
		n->value_cap = 0;
		view_drop(n);
	}
}

int node_set_value(struct tree *t, struct node *n, const char *value,
		   size_t len)
{
	char *v = malloc(len + 1);

	if (!v)
		return -ENOMEM;
	if (len)
		memcpy(v, value, len);
	v[len] = '\0';
	lru_unlink(t, n);
	free(n->value);
	view_drop(n);
	n->value = v;
	n->size = len;
	n->value_cap = len;
	lru_link(t, n);
	evict_values(t, n);
	return 0;
}

int node_set_view(struct tree *t, struct node *n, struct node_view *v)
{
	if (v && (!n->value || !node_rare(n))) {
		free(v);
		return -ENOMEM;
	}
	lru_unlink(t, n);
	view_drop(n);
	if (v)
		n->rare->view = v;
	lru_link(t, n);
	evict_values(t, n);
	return 0;
}

/* The kernel may hold (dir, name) only if it knows dir. */
/*
 * A name that came or went in @dir: the kernel forgets the name and the
 * directory's cached listing (its pages), which an entry invalidation
 * alone drops only when the kernel had looked the name up.
 */
static void inval_entry_of(struct tree *t, struct inval_list *inv,
			   struct node *dir, const char *name, size_t len)
{
	uint64_t id = t->id(t, dir);

	if (dir != t->root && !dir->nlookup)
		return;
	inval_add(inv, true, id, name, len);
	/* a burst in one directory: once is enough */
	if (inv->n < 2 || inv->v[inv->n - 2].entry ||
	    inv->v[inv->n - 2].id != id)
		inval_add(inv, false, id, NULL, 0);
}

/* dir's key (a prefix) followed by what @name decodes to. */
static int child_key(struct node *dir, const char *name, size_t len,
		     enum node_type type, char **key, size_t *key_len)
{
	char *part, *k;
	size_t part_len;
	int ret;

	if (type == NODE_DIR)
		ret = names_dir_prefix(name, len, &part, &part_len);
	else
		ret = names_path_to_key(name, len, &part, &part_len);
	if (ret)
		return ret;
	k = malloc(dir->key_len + part_len + 1);
	if (!k) {
		free(part);
		return -ENOMEM;
	}
	memcpy(k, dir->key, dir->key_len);
	memcpy(k + dir->key_len, part, part_len);
	k[dir->key_len + part_len] = '\0';
	free(part);
	*key = k;
	*key_len = dir->key_len + part_len;
	return 0;
}

/* A new directory (dir, name) with its prefix as key. */
static struct node *new_dir(struct tree *t, struct node *dir, const char *name,
			    size_t len)
{
	struct node *d = tree_new_node(t, dir, name, len, NODE_DIR);
	size_t key_len;

	if (!d)
		return NULL;
	if (child_key(dir, name, len, NODE_DIR, &d->key, &key_len)) {
		node_remove(t, d);
		return NULL;
	}
	d->key_len = key_len;
	return d;
}

/*
 * Makes the file @f at (dir, name) a directory of the same name holding f
 * as "%value", since keys now live below it.
 */
static struct node *file_to_dir(struct tree *t, struct node *f,
				struct inval_list *inv)
{
	struct node *dir = f->parent, *d;

	tree_detach(t, f);
	d = new_dir(t, dir, f->name, f->name_len);
	if (!d) {
		tree_attach(t, f, dir, f->name, f->name_len);
		return NULL;
	}
	inval_entry_of(t, inv, dir, f->name, f->name_len);
	tree_attach(t, f, d, NAMES_VALUE, strlen(NAMES_VALUE));
	return d;
}

/* Walks @path to its last component's directory, making what is missing. */
static struct node *walk_dirs(struct tree *t, const char *path, size_t len,
			      bool make, const char **last, size_t *last_len,
			      struct inval_list *inv)
{
	struct node *dir = t->root;
	const char *p = path, *end = path + len, *slash;

	while ((slash = memchr(p, '/', (size_t)(end - p)))) {
		size_t clen = (size_t)(slash - p);
		struct node *c = tree_child(t, dir, p, clen);

		if (!c) {
			if (!make)
				return NULL;
			c = new_dir(t, dir, p, clen);
			if (!c)
				return NULL;
			inval_entry_of(t, inv, dir, p, clen);
		} else if (c->type == NODE_FILE) {
			if (!make)
				return NULL;
			c = file_to_dir(t, c, inv);
			if (!c)
				return NULL;
		}
		dir = c;
		p = slash + 1;
	}
	*last = p;
	*last_len = (size_t)(end - p);
	return dir;
}

static void set_meta(struct tree *t, struct node *n,
		     const struct store_kv *kv)
{
	n->mod_revision = kv->mod_revision;
	n->create_revision = kv->create_revision;
	n->version = kv->version;
	n->lease = kv->lease;
	t->now(&n->mtime);
}

static int tree_put_node(struct tree *t, const struct store_kv *kv,
			 struct inval_list *inv, struct node **out)
{
	const char *last;
	size_t path_len, last_len;
	char *path = names_key_to_path(kv->key, kv->key_len, &path_len);
	struct node *dir, *n;
	int ret = -ENOMEM;

	if (!path)
		return -ENOMEM;
	dir = walk_dirs(t, path, path_len, true, &last, &last_len, inv);
	if (!dir)
		goto out;
	n = tree_child(t, dir, last, last_len);
	if (n && n->type == NODE_DIR) {
		dir = n;
		last = NAMES_VALUE;
		last_len = strlen(NAMES_VALUE);
		n = tree_child(t, dir, last, last_len);
	}
	if (!n) {
		n = tree_new_node(t, dir, last, last_len, NODE_FILE);
		if (!n)
			goto out;
		n->key = malloc(kv->key_len + 1);
		if (!n->key || node_set_value(t, n, kv->value, kv->value_len)) {
			node_remove(t, n);
			goto out;
		}
		memcpy(n->key, kv->key, kv->key_len);
		n->key[kv->key_len] = '\0';
		n->key_len = kv->key_len;
		set_meta(t, n, kv);
		inval_entry_of(t, inv, dir, last, last_len);
	} else if (n->local || n->pending ||
		   kv->mod_revision > n->mod_revision) {
		if (node_set_value(t, n, kv->value, kv->value_len))
			goto out;
		n->local = false;
		n->pending = false;
		set_meta(t, n, kv);
		if (n->nlookup)
			inval_add(inv, false, t->id(t, n), NULL, 0);
	}
	if (kv->mod_revision > t->revision)
		t->revision = kv->mod_revision;
	if (out)
		*out = n;
	ret = 0;
out:
	free(path);
	return ret;
}

int tree_put(struct tree *t, const struct store_kv *kv, struct inval_list *inv)
{
	return tree_put_node(t, kv, inv, NULL);
}

struct node *tree_find_key(struct tree *t, const char *key, size_t key_len)
{
	const char *last;
	size_t path_len, last_len;
	char *path = names_key_to_path(key, key_len, &path_len);
	struct node *dir, *n = NULL;

	if (!path)
		return NULL;
	dir = walk_dirs(t, path, path_len, false, &last, &last_len, NULL);
	if (dir)
		n = tree_child(t, dir, last, last_len);
	if (n && n->type == NODE_DIR)
		n = tree_child(t, n, NAMES_VALUE, strlen(NAMES_VALUE));
	free(path);
	return n && n->type == NODE_FILE ? n : NULL;
}

bool tree_dir_has_keys(struct node *dir)
{
	struct node *c;

	for (c = dir->child; c; c = c->next) {
		if (c->type == NODE_FILE && !c->local && !c->pending)
			return true;
		if (c->type == NODE_DIR && tree_dir_has_keys(c))
			return true;
	}
	return false;
}

/*
 * After a removal below @dir: removes directories that no longer hold
 * anything (but mkdir'd ones), and moves a lone "%value" back to its
 * directory's name.
 */
void tree_prune(struct tree *t, struct node *dir, struct inval_list *inv)
{
	while (dir && dir != t->root && !dir->local) {
		struct node *parent = dir->parent, *v;

		if (!parent)
			return;
		if (dir->nchildren == 0) {
			inval_entry_of(t, inv, parent, dir->name,
				       dir->name_len);
			node_remove(t, dir);
			dir = parent;
			continue;
		}
		v = dir->child;
		if (dir->nchildren == 1 && v->type == NODE_FILE &&
		    v->name_len == strlen(NAMES_VALUE) &&
		    memcmp(v->name, NAMES_VALUE, v->name_len) == 0) {
			inval_entry_of(t, inv, parent, dir->name,
				       dir->name_len);
			tree_detach(t, v);
			tree_detach(t, dir);
			tree_attach(t, v, parent, dir->name, dir->name_len);
			node_drop(t, dir);
		}
		return;
	}
}

/*
 * After the mount's own removal or move of a name in @dir: as on a local
 * disk, the directory stays, even empty, until rmdir.
 */
void tree_keep(struct tree *t, struct node *dir)
{
	if (dir && dir != t->root && dir->nchildren == 0)
		dir->local = true;
}

/*
 * Puts a copy of the file @n in its place, with the same st_ino, and
 * leaves @n to the files open on it: a change from elsewhere then goes to
 * the copy, and the kernel's pages and size of @n, which those open files
 * read, stay as they were.  NULL on ENOMEM (and @n stays).
 */
struct node *tree_replace(struct tree *t, struct node *n,
			  struct inval_list *inv)
{
	struct node *dir = n->parent, *r;
	char *key = malloc(n->key_len + 1);
	/* the name stays, and so does the directory's mtime */
	struct timespec dir_mtime = dir->mtime;

	if (!key)
		return NULL;
	memcpy(key, n->key, n->key_len);
	key[n->key_len] = '\0';
	tree_detach(t, n);
	r = tree_new_node(t, dir, n->name, n->name_len, NODE_FILE);
	if (r && !n->value) {
		r->size = n->size;	/* evicted: read again when opened */
	} else if (!r || node_set_value(t, r, n->value, n->size)) {
		if (r)
			node_remove(t, r);
		tree_attach(t, n, dir, n->name, n->name_len);
		dir->mtime = dir_mtime;
		free(key);
		return NULL;
	}
	dir->mtime = dir_mtime;
	r->key = key;
	r->key_len = n->key_len;
	r->ino = n->ino;
	r->mod_revision = n->mod_revision;
	r->create_revision = n->create_revision;
	r->version = n->version;
	r->lease = n->lease;
	r->mtime = n->mtime;
	node_drop(t, n);
	inval_entry_of(t, inv, dir, n->name, n->name_len);
	return r;
}

static void remove_file(struct tree *t, struct node *n, struct inval_list *inv)
{
	struct node *dir = n->parent;

	inval_entry_of(t, inv, dir, n->name, n->name_len);
	node_remove(t, n);
	tree_prune(t, dir, inv);
}

int tree_delete(struct tree *t, const char *key, size_t key_len, int64_t rev,
		struct inval_list *inv)
{
	struct node *n = tree_find_key(t, key, key_len);

	if (rev > t->revision)
		t->revision = rev;
	if (!n || n->local || n->pending)
		return 0;
	if (rev && n->mod_revision >= rev)
		return 0;
	remove_file(t, n, inv);
	return 0;
}

struct victims {
	struct node **v;
	size_t n;
	size_t cap;
};

static int collect_stale(struct node *dir, const char *prefix, size_t len,
			 uint64_t gen, int64_t rev, struct victims *vs)
{
	struct node *c;

	for (c = dir->child; c; c = c->next) {
		if (c->type == NODE_DIR) {
			if (collect_stale(c, prefix, len, gen, rev, vs))
				return -ENOMEM;
			continue;
		}
		if (c->local || c->pending || c->seen == (uint32_t)gen ||
		    c->mod_revision > rev)
			continue;
		/* "%value" of the listed directory lies outside its prefix */
		if (c->key_len < len || memcmp(c->key, prefix, len) != 0)
			continue;
		if (vs->n == vs->cap) {
			size_t cap = vs->cap ? vs->cap * 2 : 64;
			struct node **v = realloc(vs->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			vs->v = v;
			vs->cap = cap;
		}
		vs->v[vs->n++] = c;
	}
	return 0;
}

/*
 * Makes the subtree below @dir what the listing @l says it is at
 * l->revision: keys in it are put, keys not in it (and not written after
 * it) are removed.  Local and pending files are left alone.  A listing read
 * a page at a time: tree_reconcile_begin, a _page per page, then _end.
 */
int tree_reconcile(struct tree *t, struct node *dir, const struct store_list *l,
		   struct inval_list *inv)
{
	uint64_t gen = tree_reconcile_begin(t);
	int ret = tree_reconcile_page(t, gen, l, inv);

	return ret ? ret : tree_reconcile_end(t, dir, gen, l->revision, inv);
}

/* Forgets every generation that saw the files below @dir. */
static void seen_clear(struct node *dir)
{
	struct node *c;

	for (c = dir->child; c; c = c->next) {
		if (c->type == NODE_DIR)
			seen_clear(c);
		else
			c->seen = 0;
	}
}

uint64_t tree_reconcile_begin(struct tree *t)
{
	struct node *n;

	/*
	 * Nodes keep a generation's low 32 bits: when they wrap, a file last
	 * seen 2^32 generations ago would look seen by this one.  No node
	 * has been seen by 0 then, and no generation is 0.
	 */
	if ((uint32_t)++t->gen == 0) {
		seen_clear(t->root);
		for (n = t->limbo; n; n = n->next)
			if (n->type == NODE_FILE)
				n->seen = 0;
		++t->gen;
	}
	return t->gen;
}

int tree_reconcile_page(struct tree *t, uint64_t gen,
			const struct store_list *l, struct inval_list *inv)
{
	size_t i;
	int ret;

	for (i = 0; i < l->n; i++) {
		struct node *n = NULL;

		ret = tree_put_node(t, &l->kvs[i], inv, &n);
		if (ret)
			return ret;
		n->seen = (uint32_t)gen;
	}
	return 0;
}

int tree_reconcile_end(struct tree *t, struct node *dir, uint64_t gen,
		       int64_t rev, struct inval_list *inv)
{
	struct victims vs = { 0 };
	size_t i;
	int ret;

	if (rev > t->revision)
		t->revision = rev;
	/* puts add nodes and never remove a directory: dir is still here */
	ret = collect_stale(dir, dir->key, dir->key_len, gen, rev, &vs);
	if (!ret)
		for (i = 0; i < vs.n; i++)
			remove_file(t, vs.v[i], inv);
	free(vs.v);
	return ret;
}

/*
 * The files below the root that the reconcile generation @gen did not see
 * and that are not newer than @rev: what a listing at @rev no longer has.
 */
int tree_collect_stale(struct tree *t, uint64_t gen, int64_t rev,
		       struct node ***out, size_t *n)
{
	struct victims vs = { 0 };
	int ret = collect_stale(t->root, "", 0, gen, rev, &vs);

	if (ret) {
		free(vs.v);
		return ret;
	}
	*out = vs.v;
	*n = vs.n;
	return 0;
}

void fs_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

int tree_init(struct tree *t, size_t value_budget, tree_clock_fn *now,
	      tree_id_fn *id)
{
	memset(t, 0, sizeof(*t));
	t->value_budget = value_budget;
	t->lru_links = value_budget != 0;
	t->now = now;
	t->id = id;
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	t->root = calloc(1, sizeof(*t->root));
	if (!t->buckets || !t->root)
		goto err;
	t->root->type = NODE_DIR;
	t->root->ino = TREE_ROOT_INO;
	t->root->name = strdup("");
	t->root->key = strdup("");
	if (!t->root->name || !t->root->key)
		goto err;
	t->next_ino = TREE_ROOT_INO;
	now(&t->root->mtime);
	return 0;
err:
	if (t->root) {
		free(t->root->name);
		free(t->root->key);
	}
	free(t->root);
	free(t->buckets);
	memset(t, 0, sizeof(*t));
	return -ENOMEM;
}

static void free_subtree(struct tree *t, struct node *n)
{
	struct node *c, *next;

	for (c = n->type == NODE_DIR ? n->child : NULL; c; c = next) {
		next = c->next;
		free_subtree(t, c);
	}
	if (name_owned(t, n))
		free(n->name);
	free(n->key);
	free(n->value);
	rare_free(n->rare);
	free(n);
}

void tree_release(struct tree *t)
{
	if (t->root)
		free_subtree(t, t->root);
	limbo_free(t);
	free(t->buckets);
	memset(t, 0, sizeof(*t));
}
