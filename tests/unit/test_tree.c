/*
 * test_tree.c - unit tests of fs/tree.c, the mirror's tree, linked without
 * libfuse and without the store
 *
 * Keys put and deleted as the watch and the listings give them: the
 * directories a key needs, a key that is also a prefix ("%value") in both
 * orders, pruning, reconciling with a listing, nodes kept in limbo while
 * referenced, the value budget's LRU, the invalidation records each
 * change leaves and tree_find_key.  The clock is a counter, so that a
 * directory's time tells whether it changed; node ids are as fs/ makes
 * them (the address, the root 1).  It does not test out-of-memory paths.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "tap.h"
#include "tree.h"

#define ROOT_ID 1

static time_t ticks;

static void test_clock(struct timespec *ts)
{
	ts->tv_sec = ++ticks;
	ts->tv_nsec = 0;
}

static uint64_t test_id(const struct tree *t, const struct node *n)
{
	return n == t->root ? ROOT_ID : (uint64_t)(uintptr_t)n;
}

/* The records of the changes a case does not look at. */
static struct inval_list junk;

static bool init(struct tree *t, size_t budget)
{
	return tree_init(t, budget, test_clock, test_id) == 0;
}

static void done(struct tree *t)
{
	tree_release(t);
	inval_release(&junk);
}

/* A kv of @key at @rev with @value; borrowed strings (the tree copies). */
static struct store_kv kv_of(const char *key, const char *value, int64_t rev)
{
	struct store_kv kv = {
		.key = (char *)key,
		.key_len = strlen(key),
		.value = (char *)value,
		.value_len = strlen(value),
		.create_revision = rev,
		.mod_revision = rev,
		.version = 1,
	};

	return kv;
}

static int put(struct tree *t, const char *key, const char *value,
	       int64_t rev, struct inval_list *inv)
{
	struct store_kv kv = kv_of(key, value, rev);

	return tree_put(t, &kv, inv ? inv : &junk);
}

static struct node *child(struct tree *t, struct node *dir, const char *name)
{
	return dir ? tree_child(t, dir, name, strlen(name)) : NULL;
}

static bool is_file(const struct node *n, const char *key, const char *value)
{
	return n && n->type == NODE_FILE && n->key_len == strlen(key) &&
	       memcmp(n->key, key, n->key_len) == 0 &&
	       (!value || (n->value && n->size == strlen(value) &&
			   memcmp(n->value, value, n->size) == 0));
}

static bool is_dir(const struct node *n, const char *prefix)
{
	return n && n->type == NODE_DIR && n->key_len == strlen(prefix) &&
	       memcmp(n->key, prefix, n->key_len) == 0;
}

/* Is record @i of @l the entry (@id, @name), or with @name NULL the inode? */
static bool is_inval(const struct inval_list *l, size_t i, uint64_t id,
		     const char *name)
{
	const struct inval *iv;

	if (i >= l->n)
		return false;
	iv = &l->v[i];
	if (iv->id != id || iv->entry != (name != NULL))
		return false;
	return !name || (iv->name_len == strlen(name) &&
			 memcmp(iv->name, name, iv->name_len) == 0 &&
			 iv->name[iv->name_len] == '\0');
}

static bool test_put_makes_dirs(void)
{
	struct tree t;
	struct node *a, *b, *c;

	CHECK(init(&t, 0));
	CHECK(put(&t, "a/b/c", "v1", 5, NULL) == 0);
	a = child(&t, t.root, "a");
	b = child(&t, a, "b");
	c = child(&t, b, "c");
	CHECK(is_dir(a, "a/") && is_dir(b, "a/b/"));
	CHECK(is_file(c, "a/b/c", "v1"));
	CHECK(c->mod_revision == 5 && c->create_revision == 5);
	CHECK(a->parent == t.root && b->parent == a && c->parent == b);
	/* st_nlink counts subdirectories: the root's a, a's b */
	CHECK(t.root->ndirs == 1 && a->ndirs == 1 && b->ndirs == 0);
	CHECK(t.root->nchildren == 1 && b->nchildren == 1);
	CHECK(t.nnodes == 3 && t.revision == 5);
	/* each node its own st_ino, above the root's */
	CHECK(a->ino > TREE_ROOT_INO && a->ino != b->ino && b->ino != c->ino);
	/* a second key shares the directories */
	CHECK(put(&t, "a/b/d", "v2", 6, NULL) == 0);
	CHECK(child(&t, t.root, "a") == a && child(&t, a, "b") == b);
	CHECK(is_file(child(&t, b, "d"), "a/b/d", "v2"));
	CHECK(t.nnodes == 4 && t.revision == 6);
	/* an older revision of a key changes nothing; a newer one does */
	CHECK(put(&t, "a/b/c", "old", 4, NULL) == 0);
	CHECK(is_file(c, "a/b/c", "v1") && c->mod_revision == 5);
	CHECK(put(&t, "a/b/c", "v3", 7, NULL) == 0);
	CHECK(child(&t, b, "c") == c && is_file(c, "a/b/c", "v3"));
	CHECK(c->mod_revision == 7);
	/* names are encoded as fs/names.h says */
	CHECK(put(&t, "x//y", "z", 8, NULL) == 0);
	CHECK(is_file(child(&t, child(&t, child(&t, t.root, "x"), "%"), "y"),
		      "x//y", "z"));
	done(&t);
	return true;
}

/* "a" first, then "a/b": a becomes a directory holding %value and b. */
static bool test_value_then_prefix(void)
{
	struct tree t;
	struct inval_list inv = { 0 };
	struct node *f, *a;

	CHECK(init(&t, 0));
	CHECK(put(&t, "a", "top", 2, NULL) == 0);
	f = child(&t, t.root, "a");
	CHECK(is_file(f, "a", "top"));
	CHECK(put(&t, "a/b", "below", 3, &inv) == 0);
	a = child(&t, t.root, "a");
	CHECK(is_dir(a, "a/"));
	/* the same node, so that open files of "a" follow it */
	CHECK(child(&t, a, NAMES_VALUE) == f && is_file(f, "a", "top"));
	CHECK(is_file(child(&t, a, "b"), "a/b", "below"));
	CHECK(tree_find_key(&t, "a", 1) == f);
	CHECK(t.root->ndirs == 1 && a->nchildren == 2);
	/* the kernel forgets the file "a" of the root */
	CHECK(is_inval(&inv, 0, ROOT_ID, "a"));
	inval_release(&inv);
	/* b goes: %value moves back to the name "a" */
	CHECK(tree_delete(&t, "a/b", 3, 4, &inv) == 0);
	CHECK(child(&t, t.root, "a") == f && f->parent == t.root);
	CHECK(is_file(f, "a", "top") && t.root->ndirs == 0);
	CHECK(t.nnodes == 1);
	inval_release(&inv);
	done(&t);
	return true;
}

/* "a/b" first, then "a": "a" is %value in the directory a at once. */
static bool test_prefix_then_value(void)
{
	struct tree t;
	struct node *a, *v;

	CHECK(init(&t, 0));
	CHECK(put(&t, "a/b", "below", 2, NULL) == 0);
	CHECK(put(&t, "a", "top", 3, NULL) == 0);
	a = child(&t, t.root, "a");
	v = child(&t, a, NAMES_VALUE);
	CHECK(is_dir(a, "a/") && is_file(v, "a", "top"));
	CHECK(tree_find_key(&t, "a", 1) == v);
	CHECK(is_file(tree_find_key(&t, "a/b", 3), "a/b", "below"));
	/* a new value of "a" goes to %value, not to a second file */
	CHECK(put(&t, "a", "top2", 4, NULL) == 0);
	CHECK(child(&t, a, NAMES_VALUE) == v && is_file(v, "a", "top2"));
	CHECK(a->nchildren == 2);
	/* %value goes: the directory stays for b */
	CHECK(tree_delete(&t, "a", 1, 5, &junk) == 0);
	CHECK(child(&t, t.root, "a") == a && !child(&t, a, NAMES_VALUE));
	CHECK(a->nchildren == 1);
	done(&t);
	return true;
}

static bool test_delete_prunes(void)
{
	struct tree t;
	struct node *d, *x;

	CHECK(init(&t, 0));
	CHECK(put(&t, "x/y/z", "v", 2, NULL) == 0);
	CHECK(put(&t, "x/w", "v", 3, NULL) == 0);
	x = child(&t, t.root, "x");
	/* y held z alone: it goes, x stays for w */
	CHECK(tree_delete(&t, "x/y/z", 5, 4, &junk) == 0);
	CHECK(!tree_find_key(&t, "x/y/z", 5) && !child(&t, x, "y"));
	CHECK(child(&t, t.root, "x") == x && x->ndirs == 0);
	CHECK(tree_delete(&t, "x/w", 3, 5, &junk) == 0);
	CHECK(!child(&t, t.root, "x") && t.nnodes == 0);
	CHECK(t.root->nchildren == 0 && t.root->ndirs == 0);
	CHECK(t.revision == 5);
	/* a delete older than the key's revision is not applied */
	CHECK(put(&t, "k", "v", 7, NULL) == 0);
	CHECK(tree_delete(&t, "k", 1, 6, &junk) == 0);
	CHECK(is_file(tree_find_key(&t, "k", 1), "k", "v"));
	/* a mkdir'd directory stays when its last key goes */
	d = tree_new_node(&t, t.root, "d", 1, NODE_DIR);
	CHECK(d);
	d->key = strdup("d/");
	CHECK(d->key);
	d->key_len = 2;
	d->local = true;
	CHECK(put(&t, "d/e/f", "v", 8, NULL) == 0);
	CHECK(child(&t, d, "e"));
	CHECK(tree_delete(&t, "d/e/f", 5, 9, &junk) == 0);
	CHECK(!child(&t, d, "e"));
	CHECK(child(&t, t.root, "d") == d && d->nchildren == 0);
	/* a local file is not etcd's to delete */
	CHECK(put(&t, "d/g", "v", 10, NULL) == 0);
	tree_find_key(&t, "d/g", 3)->local = true;
	CHECK(tree_delete(&t, "d/g", 3, 11, &junk) == 0);
	CHECK(tree_find_key(&t, "d/g", 3));
	done(&t);
	return true;
}

/* The mount's own removal keeps the directory (tree_keep), else pruned. */
static bool test_keep_and_prune(void)
{
	struct tree t;
	struct node *n, *p, *q;

	CHECK(init(&t, 0));
	CHECK(put(&t, "p/a", "v", 2, NULL) == 0);
	CHECK(put(&t, "q/a", "v", 3, NULL) == 0);
	p = child(&t, t.root, "p");
	q = child(&t, t.root, "q");
	n = tree_find_key(&t, "p/a", 3);
	node_drop(&t, n);
	tree_keep(&t, p);
	tree_prune(&t, p, &junk);
	CHECK(child(&t, t.root, "p") == p && p->local);
	n = tree_find_key(&t, "q/a", 3);
	node_drop(&t, n);
	tree_prune(&t, q, &junk);
	CHECK(!child(&t, t.root, "q"));
	/* tree_keep leaves a directory that still holds names as it is */
	CHECK(put(&t, "r/a", "v", 4, NULL) == 0);
	CHECK(put(&t, "r/b", "v", 5, NULL) == 0);
	node_drop(&t, tree_find_key(&t, "r/a", 3));
	tree_keep(&t, child(&t, t.root, "r"));
	CHECK(!child(&t, t.root, "r")->local);
	done(&t);
	return true;
}

static bool push(struct store_list *l, const char *key, const char *value,
		 int64_t rev)
{
	struct store_kv kv = kv_of(key, value, rev);

	if (l->n == l->cap)
		return false;
	l->kvs[l->n++] = kv;
	return true;
}

/*
 * A listing at revision 10 makes the tree what it says: keys it has are
 * seen (and updated), keys it lacks go, but keys written after it and
 * local files stay.
 */
static bool test_reconcile(void)
{
	struct tree t;
	struct store_kv kvs[4];
	struct store_list p1 = { .kvs = kvs, .cap = 2, .revision = 10 };
	struct store_list p2 = { .kvs = kvs + 2, .cap = 2, .revision = 10 };
	struct node **stale = NULL;
	size_t nstale = 0;
	uint64_t gen;

	CHECK(init(&t, 0));
	CHECK(put(&t, "a", "1", 2, NULL) == 0);
	CHECK(put(&t, "d/b", "1", 3, NULL) == 0);
	CHECK(put(&t, "d/c", "1", 4, NULL) == 0);
	CHECK(put(&t, "e/gone", "1", 5, NULL) == 0);
	CHECK(put(&t, "late", "1", 11, NULL) == 0);
	CHECK(put(&t, "mine", "1", 6, NULL) == 0);
	tree_find_key(&t, "mine", 4)->local = true;
	CHECK(push(&p1, "a", "1", 2) && push(&p1, "d/c", "2", 9));
	CHECK(push(&p2, "f/new", "1", 8));
	/* the same generation, page by page; a stale list in between */
	gen = tree_reconcile_begin(&t);
	CHECK(tree_reconcile_page(&t, gen, &p1, &junk) == 0);
	CHECK(tree_reconcile_page(&t, gen, &p2, &junk) == 0);
	CHECK(tree_collect_stale(&t, gen, 10, &stale, &nstale) == 0);
	CHECK(nstale == 2);
	CHECK((stale[0] == tree_find_key(&t, "d/b", 3) &&
	       stale[1] == tree_find_key(&t, "e/gone", 6)) ||
	      (stale[1] == tree_find_key(&t, "d/b", 3) &&
	       stale[0] == tree_find_key(&t, "e/gone", 6)));
	free(stale);
	CHECK(tree_reconcile_end(&t, t.root, gen, 10, &junk) == 0);
	CHECK(is_file(tree_find_key(&t, "a", 1), "a", "1"));
	CHECK(is_file(tree_find_key(&t, "d/c", 3), "d/c", "2"));
	CHECK(is_file(tree_find_key(&t, "f/new", 5), "f/new", "1"));
	CHECK(!tree_find_key(&t, "d/b", 3));
	CHECK(!tree_find_key(&t, "e/gone", 6) && !child(&t, t.root, "e"));
	CHECK(tree_find_key(&t, "late", 4) && tree_find_key(&t, "mine", 4));
	CHECK(t.revision == 11);
	/* a later generation forgets what the earlier one saw */
	p1.n = 0;
	CHECK(push(&p1, "a", "1", 2));
	CHECK(tree_reconcile(&t, child(&t, t.root, "d"), &p1, &junk) == 0);
	/* d/c was below the listed directory and not in the listing */
	CHECK(!tree_find_key(&t, "d/c", 3) && !child(&t, t.root, "d"));
	CHECK(tree_find_key(&t, "f/new", 5));
	done(&t);
	return true;
}

/* A node the kernel or a request still holds waits in limbo. */
static bool test_limbo(void)
{
	struct tree t;
	struct node *n, *m;

	CHECK(init(&t, 0));
	CHECK(put(&t, "k", "v", 2, NULL) == 0);
	CHECK(put(&t, "j", "v", 3, NULL) == 0);
	n = tree_find_key(&t, "k", 1);
	m = tree_find_key(&t, "j", 1);
	n->nlookup = 2;
	m->refs = 1;
	CHECK(tree_delete(&t, "k", 1, 4, &junk) == 0);
	CHECK(tree_delete(&t, "j", 1, 5, &junk) == 0);
	CHECK(!tree_find_key(&t, "k", 1) && !child(&t, t.root, "k"));
	/* the list first: what is not on it may be freed already */
	CHECK(t.limbo == m && m->next == n && !n->next);
	CHECK(n->removed && n->in_limbo && !n->parent);
	CHECK(m->removed && m->in_limbo);
	node_forget(&t, n, 1);
	CHECK(t.limbo == m && m->next == n);
	CHECK(n->in_limbo && n->nlookup == 1);
	node_forget(&t, n, 1);		/* freed: out of limbo */
	CHECK(t.limbo == m && !m->next && !m->prev);
	node_unref(&t, m);
	CHECK(!t.limbo);
	/* a node nobody holds is freed at once */
	CHECK(put(&t, "i", "v", 6, NULL) == 0);
	CHECK(tree_delete(&t, "i", 1, 7, &junk) == 0);
	CHECK(!t.limbo && t.nnodes == 0);
	/* a held node that comes back (a rename) leaves limbo */
	CHECK(put(&t, "h", "v", 8, NULL) == 0);
	n = tree_find_key(&t, "h", 1);
	n->nlookup = 1;
	node_drop(&t, n);
	CHECK(t.limbo == n);
	tree_attach(&t, n, t.root, "h2", 2);
	CHECK(!t.limbo && !n->removed && child(&t, t.root, "h2") == n);
	/* what is left in limbo goes with the tree (checked by the sanitizers) */
	node_drop(&t, n);
	done(&t);
	return true;
}

/* Under a budget of 10 bytes, values of 4 bytes: two fit, not three. */
static bool test_lru(void)
{
	struct tree t;
	struct node *a, *b, *c, *d, *big;

	CHECK(init(&t, 10));
	CHECK(put(&t, "a", "aaaa", 2, NULL) == 0);
	CHECK(put(&t, "b", "bbbb", 3, NULL) == 0);
	a = tree_find_key(&t, "a", 1);
	b = tree_find_key(&t, "b", 1);
	CHECK(a->value && b->value && t.value_bytes == 8);
	CHECK(t.lru_head == b && t.lru_tail == a);
	CHECK(put(&t, "c", "cccc", 4, NULL) == 0);
	c = tree_find_key(&t, "c", 1);
	/* the least recently used goes; its size and revision stay */
	CHECK(!a->value && a->size == 4 && a->mod_revision == 2);
	CHECK(b->value && c->value && t.value_bytes == 8);
	/* b used: c is now the oldest */
	node_touch(&t, b);
	CHECK(t.lru_head == b && t.lru_tail == c);
	CHECK(put(&t, "d", "dddd", 5, NULL) == 0);
	d = tree_find_key(&t, "d", 1);
	CHECK(!c->value && b->value && d->value);
	/* a value in use is passed over: b goes, though d is older */
	node_touch(&t, b);
	CHECK(t.lru_tail == d);
	d->refs = 1;
	CHECK(node_set_value(&t, a, "AAAA", 4) == 0);
	CHECK(a->value && d->value && !b->value && t.value_bytes == 8);
	d->refs = 0;
	/* a value larger than the budget stays: never the one just set */
	CHECK(put(&t, "big", "0123456789abc", 6, NULL) == 0);
	big = tree_find_key(&t, "big", 3);
	CHECK(is_file(big, "big", "0123456789abc"));
	CHECK(!a->value && !d->value && t.value_bytes == 13);
	/* a removed file's value counts no more */
	CHECK(tree_delete(&t, "big", 3, 7, &junk) == 0);
	CHECK(t.value_bytes == 0 && !t.lru_head && !t.lru_tail);
	/*
	 * The links sit between the node and its name: linking and
	 * unlinking values leaves the names whole, and a rename's name (an
	 * allocation of its own) is freed with the node, the others not.
	 */
	CHECK(!strcmp(b->name, "b") && !strcmp(c->name, "c") &&
	      !strcmp(d->name, "d") && !strcmp(a->name, "a"));
	CHECK(node_set_value(&t, c, "CCCC", 4) == 0);
	CHECK(node_set_value(&t, a, "AAAA", 4) == 0);
	CHECK(t.lru_head == a && t.lru_tail == c && t.value_bytes == 8);
	CHECK(!strcmp(a->name, "a") && !strcmp(c->name, "c"));
	tree_detach(&t, c);
	tree_attach(&t, c, t.root, "c-renamed", 9);
	CHECK(child(&t, t.root, "c-renamed") == c && !child(&t, t.root, "c"));
	CHECK(!strcmp(c->name, "c-renamed") && c->name_len == 9);
	node_touch(&t, c);
	CHECK(t.lru_head == c && t.lru_tail == a && c->value);
	CHECK(tree_delete(&t, "a", 1, 8, &junk) == 0);
	CHECK(t.lru_head == c && t.lru_tail == c && t.value_bytes == 4);
	done(&t);
	/* without a budget every value stays, and no list is kept */
	CHECK(init(&t, 0));
	CHECK(put(&t, "a", "aaaa", 2, NULL) == 0);
	CHECK(put(&t, "b", "bbbb", 3, NULL) == 0);
	CHECK(!t.lru_head && t.value_bytes == 0);
	CHECK(tree_find_key(&t, "a", 1)->value);
	done(&t);
	return true;
}

static struct node_view *view_of(const char *text, int64_t rev)
{
	size_t len = strlen(text);
	struct node_view *v = malloc(sizeof(*v) + len + 1);

	if (v) {
		v->rev = rev;
		v->raw = false;
		v->len = len;
		memcpy(v->data, text, len + 1);
	}
	return v;
}

/*
 * A value's decoded view (-o codec=) counts against the budget with it,
 * and goes when the value changes or is evicted.
 */
static bool test_views(void)
{
	struct tree t;
	struct node *a, *b;

	CHECK(init(&t, 20));
	CHECK(put(&t, "a", "aaaa", 2, NULL) == 0);
	CHECK(put(&t, "b", "bbbb", 3, NULL) == 0);
	a = tree_find_key(&t, "a", 1);
	b = tree_find_key(&t, "b", 1);
	CHECK(!node_view(a));
	CHECK(node_set_view(&t, a, view_of("A: aaaa", 2)) == 0);
	CHECK(node_view(a) && node_view(a)->len == 7);
	CHECK(t.value_bytes == 4 + 7 + 4);
	/* a view past the budget evicts the oldest other value, b's */
	CHECK(node_set_view(&t, a, view_of("A: aaaa and more", 2)) == 0);
	CHECK(!b->value && a->value && t.value_bytes == 4 + 16);
	/* a new value drops the view */
	CHECK(node_set_value(&t, a, "xy", 2) == 0);
	CHECK(!node_view(a) && !a->rare->view && t.value_bytes == 2);
	/* a view of another revision is no view of this one */
	CHECK(node_set_view(&t, a, view_of("X: xy", 1)) == 0);
	CHECK(!node_view(a));
	/* evicted with its value */
	CHECK(node_set_view(&t, a, view_of("X: xy", 2)) == 0);
	CHECK(put(&t, "c", "0123456789abcdef", 4, NULL) == 0);
	CHECK(!a->value && !a->rare->view && t.value_bytes == 16);
	/* no view of a value not in memory */
	CHECK(node_set_view(&t, a, view_of("X: xy", 2)) == -ENOMEM);
	done(&t);
	return true;
}

static bool test_invals(void)
{
	struct tree t;
	struct inval_list inv = { 0 };
	struct node *n, *a;
	uint64_t aid;
	time_t before;

	CHECK(init(&t, 0));
	/* a new name in the root: its entry and the root's listing */
	before = t.root->mtime.tv_sec;
	CHECK(put(&t, "k", "v", 2, &inv) == 0);
	CHECK(inv.n == 2 && is_inval(&inv, 0, ROOT_ID, "k") &&
	      is_inval(&inv, 1, ROOT_ID, NULL));
	CHECK(t.root->mtime.tv_sec > before);
	/* a burst in one directory: the listing once */
	CHECK(put(&t, "j", "v", 3, &inv) == 0);
	CHECK(inv.n == 3 && is_inval(&inv, 2, ROOT_ID, "j"));
	inval_release(&inv);
	CHECK(inv.n == 0 && !inv.v);
	/* a new value: the inode, only if the kernel knows it */
	n = tree_find_key(&t, "k", 1);
	before = t.root->mtime.tv_sec;
	CHECK(put(&t, "k", "v2", 4, &inv) == 0);
	CHECK(inv.n == 0);
	n->nlookup = 1;
	CHECK(put(&t, "k", "v3", 5, &inv) == 0);
	CHECK(inv.n == 1 && is_inval(&inv, 0, (uintptr_t)n, NULL));
	/* a new value changes no directory */
	CHECK(t.root->mtime.tv_sec == before);
	inval_release(&inv);
	/* a name in a directory the kernel never looked up: nothing */
	CHECK(put(&t, "a/b", "v", 6, &inv) == 0);
	CHECK(inv.n == 2 && is_inval(&inv, 0, ROOT_ID, "a"));
	inval_release(&inv);
	a = child(&t, t.root, "a");
	aid = (uintptr_t)a;
	CHECK(put(&t, "a/c", "v", 7, &inv) == 0);
	CHECK(inv.n == 0);
	a->nlookup = 1;
	CHECK(put(&t, "a/d", "v", 8, &inv) == 0);
	CHECK(inv.n == 2 && is_inval(&inv, 0, aid, "d") &&
	      is_inval(&inv, 1, aid, NULL));
	inval_release(&inv);
	/* a deletion: the name in its directory */
	CHECK(tree_delete(&t, "a/d", 3, 9, &inv) == 0);
	CHECK(inv.n == 2 && is_inval(&inv, 0, aid, "d") &&
	      is_inval(&inv, 1, aid, NULL));
	inval_release(&inv);
	/* the last keys of a go: then a in the root */
	CHECK(tree_delete(&t, "a/b", 3, 10, &inv) == 0);
	CHECK(tree_delete(&t, "a/c", 3, 11, &inv) == 0);
	CHECK(!child(&t, t.root, "a"));
	CHECK(inv.n == 5 && is_inval(&inv, 0, aid, "b") &&
	      is_inval(&inv, 1, aid, NULL) && is_inval(&inv, 2, aid, "c") &&
	      is_inval(&inv, 3, ROOT_ID, "a") &&
	      is_inval(&inv, 4, ROOT_ID, NULL));
	inval_release(&inv);
	/* the kernel still knows a: in limbo until it forgets it */
	CHECK(t.limbo == a && a->removed);
	node_forget(&t, a, 1);
	CHECK(!t.limbo);
	/* a file open elsewhere is replaced: same st_ino, a new node */
	n = tree_find_key(&t, "k", 1);
	{
		struct node *r = tree_replace(&t, n, &inv);

		CHECK(r && r != n && r->ino == n->ino);
		CHECK(is_file(r, "k", "v3") && tree_find_key(&t, "k", 1) == r);
		CHECK(n->removed && t.limbo == n);
		CHECK(inv.n == 2 && is_inval(&inv, 0, ROOT_ID, "k"));
	}
	inval_release(&inv);
	node_forget(&t, n, 1);
	CHECK(!t.limbo);
	done(&t);
	return true;
}

/*
 * A directory's child and counts share their bytes with a file's
 * cache_rev, value_cap and seen: what the tree does with one kind never
 * reads the other's.
 */
static bool test_node_kinds(void)
{
	struct tree t;
	struct node *d, *f, *g;
	struct store_kv kvs[1];
	struct store_list l = { .kvs = kvs, .cap = 1, .revision = 10 };

	CHECK(init(&t, 0));
	CHECK(put(&t, "d/f", "v", 2, NULL) == 0);
	CHECK(put(&t, "d/g", "v", 3, NULL) == 0);
	CHECK(put(&t, "d/e/h", "v", 4, NULL) == 0);
	d = child(&t, t.root, "d");
	f = child(&t, d, "f");
	g = child(&t, d, "g");
	/* the kernel holds pages of no known revision of both (file.c) */
	f->cache_rev = -1;
	g->cache_rev = -1;
	g->value_cap = 1000;
	CHECK(d->nchildren == 3 && d->ndirs == 1 && d->child);
	/* a reconcile marks files only: d's children stay as they were */
	CHECK(push(&l, "d/g", "v", 3));
	CHECK(tree_reconcile(&t, d, &l, &junk) == 0);
	CHECK(!child(&t, d, "f") && !child(&t, d, "e"));
	CHECK(child(&t, d, "g") == g && d->nchildren == 1 && d->ndirs == 0);
	CHECK(d->child == g && !g->next && g->cache_rev == -1);
	/*
	 * an inode the kernel let go of took its pages: the next one of
	 * the file never had any (file.c fills them on the first open)
	 */
	g->nlookup = 2;
	node_forget(&t, g, 1);
	CHECK(g->cache_rev == -1);
	node_forget(&t, g, 1);
	CHECK(child(&t, d, "g") == g && g->cache_rev == 0);
	/* a removed file the kernel held is freed once it lets go */
	CHECK(put(&t, "d/f", "v", 11, NULL) == 0);
	f = child(&t, d, "f");
	f->cache_rev = -1;
	f->nlookup = 1;
	CHECK(tree_delete(&t, "d/f", 3, 12, &junk) == 0);
	CHECK(t.limbo == f && f->removed);
	node_forget(&t, f, 1);
	CHECK(!t.limbo);
	/* the tree goes with a file whose cache_rev is set (the sanitizers) */
	done(&t);
	return true;
}

/*
 * A file keeps the low 32 bits of the generation that saw it: when they
 * wrap, a file last seen 2^32 generations ago is not taken as seen.
 */
static bool test_seen_wrap(void)
{
	struct tree t;
	struct store_kv kvs[2];
	struct store_list l = { .kvs = kvs, .cap = 2, .revision = 10 };
	struct node *a, *b;
	uint64_t gen;

	CHECK(init(&t, 0));
	CHECK(push(&l, "a", "1", 2) && push(&l, "b", "1", 3));
	gen = tree_reconcile_begin(&t);
	CHECK(gen == 1);
	CHECK(tree_reconcile_page(&t, gen, &l, &junk) == 0);
	CHECK(tree_reconcile_end(&t, t.root, gen, 10, &junk) == 0);
	a = tree_find_key(&t, "a", 1);
	b = tree_find_key(&t, "b", 1);
	CHECK(a && b && a->seen == 1 && b->seen == 1);
	/* a held file in limbo is cleared too: it may be renamed back */
	b->nlookup = 1;
	node_drop(&t, b);
	CHECK(t.limbo == b && b->seen == 1);
	/* 2^32 - 1 generations later: the next one wraps, then is 1 again */
	t.gen = UINT32_MAX;
	gen = tree_reconcile_begin(&t);
	CHECK(gen == (uint64_t)UINT32_MAX + 2 && (uint32_t)gen == 1);
	CHECK(a->seen == 0 && b->seen == 0);
	/* a listing without "a": it goes, though it was seen by 1 */
	l.n = 0;
	CHECK(push(&l, "c", "1", 4));
	CHECK(tree_reconcile_page(&t, gen, &l, &junk) == 0);
	CHECK(tree_reconcile_end(&t, t.root, gen, 10, &junk) == 0);
	CHECK(!tree_find_key(&t, "a", 1) && tree_find_key(&t, "c", 1));
	CHECK(tree_find_key(&t, "c", 1)->seen == 1);
	node_forget(&t, b, 1);
	CHECK(!t.limbo);
	done(&t);
	return true;
}

/*
 * The (parent, name) table grows as nodes come, to between one and two
 * nodes a bucket, and every node is found again after each growth.
 */
static bool test_hash_grows(void)
{
	struct tree t;
	char dir[8], key[32];
	size_t before;
	int i;

	CHECK(init(&t, 0));
	before = t.nbuckets;
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "d%02d/k%04d", i % 50, i);
		CHECK(put(&t, key, "v", 2 + i, NULL) == 0);
	}
	CHECK(t.nnodes == 5050 && t.nbuckets > before);
	CHECK(t.nnodes >= t.nbuckets && t.nnodes < 2 * t.nbuckets);
	for (i = 0; i < 5000; i++) {
		struct node *d, *n;

		snprintf(dir, sizeof(dir), "d%02d", i % 50);
		snprintf(key, sizeof(key), "%s/k%04d", dir, i);
		n = tree_find_key(&t, key, strlen(key));
		d = child(&t, t.root, dir);
		CHECK(is_file(n, key, "v") && n->mod_revision == 2 + i);
		CHECK(n->parent == d && child(&t, d, key + 4) == n);
	}
	done(&t);
	return true;
}

static bool test_find_key(void)
{
	struct tree t;

	CHECK(init(&t, 0));
	CHECK(put(&t, "a/b", "1", 2, NULL) == 0);
	CHECK(put(&t, "a", "2", 3, NULL) == 0);
	CHECK(put(&t, "c", "3", 4, NULL) == 0);
	CHECK(is_file(tree_find_key(&t, "a/b", 3), "a/b", "1"));
	CHECK(is_file(tree_find_key(&t, "a", 1), "a", "2"));
	CHECK(is_file(tree_find_key(&t, "c", 1), "c", "3"));
	/* a directory is no key; nor a key below a file, nor a missing one */
	CHECK(put(&t, "x/y", "4", 5, NULL) == 0);
	CHECK(!tree_find_key(&t, "x", 1));
	CHECK(!tree_find_key(&t, "c/d", 3));
	CHECK(!tree_find_key(&t, "a/z", 3) && !tree_find_key(&t, "zz", 2));
	CHECK(!tree_find_key(&t, "x/y/z", 5));
	/* a key whose path holds escapes */
	CHECK(put(&t, "50%/./", "5", 6, NULL) == 0);
	CHECK(is_file(tree_find_key(&t, "50%/./", 6), "50%/./", "5"));
	CHECK(is_dir(child(&t, t.root, "50%25"), "50%/"));
	done(&t);
	return true;
}

/* inval_drop_entries keeps the inodes' records, in their order */
static bool test_drop_entries(void)
{
	struct inval_list inv = { 0 };

	inval_drop_entries(&inv);
	CHECK(inv.n == 0);
	CHECK(inval_add(&inv, true, 1, "a", 1) == 0);
	CHECK(inval_add(&inv, false, 1, NULL, 0) == 0);
	CHECK(inval_add(&inv, true, 2, "bb", 2) == 0);
	CHECK(inval_add(&inv, true, 2, "c", 1) == 0);
	CHECK(inval_add(&inv, false, 3, NULL, 0) == 0);
	inval_drop_entries(&inv);
	CHECK(inv.n == 2);
	CHECK(!inv.v[0].entry && inv.v[0].id == 1 && !inv.v[0].name);
	CHECK(!inv.v[1].entry && inv.v[1].id == 3 && !inv.v[1].name);
	/* an entry more goes, and a second pass changes nothing */
	CHECK(inval_add(&inv, true, 4, "d", 1) == 0);
	inval_drop_entries(&inv);
	inval_drop_entries(&inv);
	CHECK(inv.n == 2);
	inval_release(&inv);
	CHECK(inv.n == 0 && !inv.v);
	return true;
}

int main(void)
{
	TAP_RUN(test_put_makes_dirs);
	TAP_RUN(test_value_then_prefix);
	TAP_RUN(test_prefix_then_value);
	TAP_RUN(test_delete_prunes);
	TAP_RUN(test_keep_and_prune);
	TAP_RUN(test_reconcile);
	TAP_RUN(test_limbo);
	TAP_RUN(test_lru);
	TAP_RUN(test_views);
	TAP_RUN(test_invals);
	TAP_RUN(test_drop_entries);
	TAP_RUN(test_node_kinds);
	TAP_RUN(test_seen_wrap);
	TAP_RUN(test_hash_grows);
	TAP_RUN(test_find_key);
	return tap_done(0);
}
