/*
 * echo_plan.c - what the echo replays of each change, planned when the
 * change is applied to the mirror, and how the echo's own requests are
 * answered while it replays it (echo.c runs the echo)
 *
 * A change from the watch is in the mirror at once; the echo replays it
 * later, on a mirror that may have moved on.  So the plan (the path, the
 * directories to make, the node of each component, referenced) is made
 * from the mirror just before the change is applied, and the echo's
 * lookups, mkdirs, creates, unlinks and rmdirs of the change's names are
 * answered from it: a name the change made is absent for the echo until
 * the echo makes it, a name it removed (or a later change removed) is
 * still there for the echo until it removes it.
 *
 * What it cannot do: give other processes that view (they see the
 * mirror: a directory a change made and a later one removed before the
 * echo made it cannot be watched by `inotifywait -r`, so what happens
 * inside it is not seen); answer more than the current change's names
 * from the past.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "echo.h"
#include "echo_i.h"
#include "fs_i.h"
#include "names.h"

/* Drops the references of @e's plan.  fs->lock held. */
void echo_chain_release(struct fs *fs, struct echo_ev *e)
{
	size_t i;

	for (i = 0; i < e->nchain; i++)
		node_unref(&fs->tree, e->chain[i]);
	free(e->chain);
	e->chain = NULL;
	e->nchain = 0;
}

/* Applies @e to the mirror.  fs->lock held. */
static void apply_direct(struct fs *fs, struct echo_ev *e,
			 struct inval_list *inv)
{
	if (e->del)
		tree_delete(&fs->tree, e->kv.key, e->kv.key_len, e->rev, inv);
	else
		tree_put(&fs->tree, &e->kv, inv);
}

/* Appends @name (@nlen bytes) to the relative path in @buf. */
static bool path_add(char *buf, size_t *len, const char *name, size_t nlen)
{
	if (*len + 1 + nlen + 1 > PATH_MAX)
		return false;
	if (*len)
		buf[(*len)++] = '/';
	memcpy(buf + *len, name, nlen);
	*len += nlen;
	buf[*len] = '\0';
	return true;
}

/*
 * Decides how to echo @e and fills the paths it needs, relative to the
 * mount's root: @path the file, @dirs the directories to make first
 * (CREATE), as offsets into @path where each ends, shallowest first.
 * fs->lock held.
 */
static enum echo_action plan(struct fs *fs, struct echo_ev *e, char *path,
			     size_t *ndirs, size_t *dirs, size_t maxdirs,
			     struct inval_list *inv)
{
	size_t plen, len = 0, i = 0;
	char *p = names_key_to_path(e->kv.key, e->kv.key_len, &plen);
	struct node *dir = fs->tree.root, *n;
	const char *c, *end, *slash;

	*ndirs = 0;
	if (!p)
		return ECHO_DIRECT;
	path[0] = '\0';
	n = tree_find_key(&fs->tree, e->kv.key, e->kv.key_len);
	if (n && (n->local || n->pending))
		goto direct;
	if (e->del) {
		if (!n || (e->rev && n->mod_revision >= e->rev))
			goto skip;
		/* "%value", or one about to become the lone "%value" */
		if (strcmp(n->name, NAMES_VALUE) == 0 ||
		    (n->parent->nchildren == 2 &&
		     tree_child(&fs->tree, n->parent, NAMES_VALUE,
				strlen(NAMES_VALUE))))
			goto direct;
	} else if (n && e->kv.mod_revision <= n->mod_revision) {
		goto skip;
	}
	c = p;
	end = p + plen;
	while ((slash = memchr(c, '/', (size_t)(end - c)))) {
		struct node *d = dir ? tree_child(&fs->tree, dir, c,
						  (size_t)(slash - c)) : NULL;

		if (d && d->type == NODE_FILE)
			goto direct;	/* a file becomes a directory */
		if (!path_add(path, &len, c, (size_t)(slash - c)))
			goto direct;
		if (!d && !e->del) {
			if (i == maxdirs)
				goto direct;
			dirs[i++] = len;
		}
		dir = d;
		c = slash + 1;
	}
	if (!path_add(path, &len, c, (size_t)(end - c)))
		goto direct;
	if (dir && !n) {
		struct node *d = tree_child(&fs->tree, dir, c,
					    (size_t)(end - c));

		if (d && d->type == NODE_DIR &&
		    !path_add(path, &len, NAMES_VALUE, strlen(NAMES_VALUE)))
			goto direct;
		if (d && d->type == NODE_DIR && !d->nchildren)
			goto direct;
	}
	/* a new value of a key that is also a prefix: its "%value" */
	if (n && !e->del && n->parent != dir &&
	    !path_add(path, &len, NAMES_VALUE, strlen(NAMES_VALUE)))
		goto direct;
	free(p);
	*ndirs = i;
	if (e->del)
		return ECHO_DELETE;
	/* open files keep what they read: the change goes to a new inode */
	if (n && n->nopen && !tree_replace(&fs->tree, n, inv))
		return ECHO_DIRECT;
	return n ? ECHO_MODIFY : ECHO_CREATE;
direct:
	free(p);
	return ECHO_DIRECT;
skip:
	free(p);
	return ECHO_SKIP;
}

/*
 * The @i-th component of @path (0: the shallowest) in *@c, *@len; false
 * if there are fewer.
 */
bool echo_component(const char *path, size_t i, const char **c, size_t *len)
{
	const char *p = path, *slash;

	*c = "";
	*len = 0;
	for (;;) {
		slash = strchr(p, '/');
		if (!i--) {
			*c = p;
			*len = slash ? (size_t)(slash - p) : strlen(p);
			return true;
		}
		if (!slash)
			return false;
		p = slash + 1;
	}
}

/*
 * Fills e->chain with the node of each component of e->path, from the
 * mirror as it is now, each referenced.  False if one is missing (or on
 * ENOMEM), with nothing held.  fs->lock held.
 */
static bool chain_fill(struct fs *fs, struct echo_ev *e)
{
	struct node *dir = fs->tree.root, *x;
	size_t n = 1, i, len;
	const char *c;

	for (c = e->path; *c; c++)
		n += *c == '/';
	e->chain = calloc(n, sizeof(*e->chain));
	if (!e->chain)
		return false;
	for (i = 0; i < n; i++) {
		echo_component(e->path, i, &c, &len);
		x = dir->type == NODE_DIR ? tree_child(&fs->tree, dir, c, len)
					  : NULL;
		if (!x) {
			echo_chain_release(fs, e);
			return false;
		}
		x->refs++;
		e->chain[e->nchain++] = x;
		dir = x;
	}
	return true;
}

/*
 * Applies @e to the mirror and plans its echo: true if there is one to
 * replay (e->action, e->path, e->chain filled).  fs->lock held.
 */
bool echo_apply(struct fs *fs, struct echo_ev *e, struct inval_list *inv)
{
	size_t dirs[ECHO_MAX_DIRS], ndirs = 0, i;
	char path[PATH_MAX];
	enum echo_action a;

	a = plan(fs, e, path, &ndirs, dirs, ECHO_MAX_DIRS, inv);
	if (a == ECHO_SKIP)
		return false;
	if (a != ECHO_DIRECT && !(e->path = strdup(path)))
		a = ECHO_DIRECT;
	/* a deletion's nodes are taken before it, the others' after */
	if (a == ECHO_DELETE && !chain_fill(fs, e))
		a = ECHO_DIRECT;
	apply_direct(fs, e, inv);
	if (a == ECHO_CREATE || a == ECHO_MODIFY) {
		if (!chain_fill(fs, e) || ndirs >= e->nchain)
			a = ECHO_DIRECT;
	}
	if (a == ECHO_DIRECT) {
		echo_chain_release(fs, e);
		return false;
	}
	e->action = a;
	/* CREATE: the new names, the deepest directories and the file */
	e->made = a == ECHO_CREATE ? e->nchain - 1 - ndirs : e->nchain;
	/* DELETE: the file, and the directories that went with it */
	for (i = e->nchain - 1; a == ECHO_DELETE && i > 0; i--)
		if (!e->chain[i - 1]->removed)
			break;
	e->gone = a == ECHO_DELETE ? i : e->nchain;
	return true;
}

/* The index in @e's chain of the name (@dir, @name), or -1. */
static ssize_t chain_index(struct fs *fs, struct echo_ev *e,
			   struct node *dir, const char *name)
{
	size_t i, len, nlen = strlen(name);
	const char *c;

	for (i = 0; i < e->nchain; i++) {
		if ((i ? e->chain[i - 1] : fs->tree.root) != dir)
			continue;
		echo_component(e->path, i, &c, &len);
		if (len == nlen && memcmp(c, name, len) == 0)
			return (ssize_t)i;
	}
	return -1;
}

int echo_lookup(struct fs *fs, struct echo_ev *e, struct node *dir,
		const char *name, struct node **np)
{
	ssize_t i = chain_index(fs, e, dir, name);

	if (i < 0)
		return 1;
	if (e->action == ECHO_CREATE && (size_t)i >= e->made)
		return -ENOENT;
	*np = e->chain[i];
	return 0;
}

struct node *echo_make(struct fs *fs, struct echo_ev *e, struct node *dir,
		       const char *name, enum node_type type)
{
	ssize_t i = chain_index(fs, e, dir, name);

	if (i < 0 || e->action != ECHO_CREATE || (size_t)i < e->made ||
	    e->chain[i]->type != type)
		return NULL;
	e->made = (size_t)i + 1;
	return e->chain[i];
}

bool echo_remove(struct fs *fs, struct echo_ev *e, struct node *dir,
		 const char *name, enum node_type type)
{
	ssize_t i = chain_index(fs, e, dir, name);

	return i >= 0 && e->action == ECHO_DELETE && (size_t)i >= e->gone &&
	       e->chain[i]->type == type;
}

bool echo_names(struct fs *fs, struct node *dir, const char *name)
{
	return fs->echo.cur && fs->echo.cur->chain &&
	       chain_index(fs, fs->echo.cur, dir, name) >= 0;
}

bool echo_holds(struct fs *fs, struct node *n)
{
	size_t i;

	for (i = 0; fs->echo.cur && i < fs->echo.cur->nchain; i++)
		if (fs->echo.cur->chain[i] == n)
			return true;
	return false;
}
