/*
 * handle.c - the open files' lifecycle: a handle made at open (a copy of
 * the value for a key's file, or the node itself for a local one),
 * listed in fs->open, and freed at release or at fs_free
 *
 * A writer is listed in its node's handles, where stat finds its size
 * (commit.c's handle_show) and unlink and rename find it; a reader that
 * reads the kernel's pages is counted in node->cached_readers.  fs->lock
 * guards the lists and the node's counts; a handle's own lock its copy.
 * It never replies: file.c's open, create and release answer the kernel.
 *
 * What it cannot do: commit (commit.c does, at flush, fsync or release).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

struct handle *handle_new(struct fs *fs, struct node *n,
			  struct fuse_file_info *fi, pid_t pid, bool echo)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->local = n->local;
	if (!echo && !h->local) {
		bool trunc = fi->flags & O_TRUNC;
		size_t len = trunc ? 0 : n->size;

		/* fs_open reads an evicted value again before this */
		if ((len && !n->value) || !(h->buf = malloc(len + 1))) {
			free(h);
			return NULL;
		}
		if (len)
			memcpy(h->buf, n->value, len);
		h->buf[len] = '\0';
		h->len = len;
		h->cap = len + 1;
		/* a shell's redirection closes once before it writes */
		h->truncated = trunc && (n->size > 0 || n->pending);
	} else if (!echo && (fi->flags & O_TRUNC)) {
		node_local_resize(fs, n, 0);
	}
	pthread_mutex_init(&h->lock, NULL);
	h->node = n;
	h->append = fi->flags & O_APPEND;
	h->pid = pid;
	h->base = n->mod_revision;
	h->echo = echo;
	if (!echo)
		n->nopen++;
	if (!echo && (fi->flags & O_ACCMODE) != O_RDONLY) {
		h->writer = true;
		h->nnext = n->handles;
		n->handles = h;
		/*
		 * The kernel fills the readers' pages from the writer's copy
		 * when it maps the file privately: they are not the
		 * revision's any more (see fs_open).
		 */
		n->cache_rev = CACHE_UNKNOWN;
	}
	/* a local file's content goes through the kernel's pages */
	if (!echo && h->local)
		n->cache_rev = CACHE_UNKNOWN;
	n->refs++;
	h->onext = fs->open;
	h->oprev = &fs->open;
	if (fs->open)
		fs->open->oprev = &h->onext;
	fs->open = h;
	return h;
}

/*
 * As handle_new, for a reader of @n whose key has moved on to the node
 * @src (n was replaced while the open waited): it reads @src's value.
 */
struct handle *handle_new_from(struct fs *fs, struct node *n,
			       struct node *src, struct fuse_file_info *fi,
			       pid_t pid)
{
	struct handle *h = handle_new(fs, src, fi, pid, false);

	if (h && src != n) {
		src->nopen--;
		src->refs--;
		n->nopen++;
		n->refs++;
		h->node = n;
	}
	return h;
}

/* Out of fs->open: fs->lock held, or the session over. */
static void handle_unlist(struct handle *h)
{
	*h->oprev = h->onext;
	if (h->onext)
		h->onext->oprev = h->oprev;
}

/* Freed, once out of fs->open; no lock needed. */
static void handle_destroy(struct handle *h)
{
	pthread_mutex_destroy(&h->lock);
	free(h->buf);
	free(h);
}

void handle_free(struct fs *fs, struct handle *h)
{
	struct inval_list inv = { 0 };
	struct node *n = h->node;

	pthread_mutex_lock(&fs->lock);
	if (!h->echo)
		n->nopen--;
	if (h->trunc_waiting) {
		n->trunc_waiting--;
		pthread_cond_broadcast(&fs->mirror.inflight_cond);
	}
	/* what it held and did not commit: stat forgets its size */
	if (h->writer && handle_unshow(n, h) && n->nlookup)
		inval_add(&inv, false, node_id(fs, n), NULL, 0);
	/* the last reader of the pages: a writer's size shows from now on */
	if (h->cached && !--n->cached_readers && node_writer_changed(n) &&
	    n->nlookup)
		inval_add(&inv, false, node_id(fs, n), NULL, 0);
	if (h->writer) {
		struct handle **p;

		for (p = &n->handles; *p; p = &(*p)->nnext) {
			if (*p == h) {
				*p = h->nnext;
				break;
			}
		}
	}
	/*
	 * A new file whose creation could not be saved does not exist: the
	 * kernel, which has its name from the create, forgets it too.
	 */
	if (n->pending && n->refs == 1 && !n->removed && n->parent) {
		struct node *dir = n->parent;

		inval_add(&inv, true, node_id(fs, dir), n->name, n->name_len);
		inval_add(&inv, false, node_id(fs, dir), NULL, 0);
		node_drop(&fs->tree, n);
		tree_keep(&fs->tree, dir);
	}
	node_unref(&fs->tree, n);
	handle_unlist(h);
	pthread_mutex_unlock(&fs->lock);
	handle_destroy(h);
	fs_send_invals(fs, &inv);
}

/*
 * The handles whose RELEASE never came: the session is over, and the tree
 * goes next (its nodes are not unreferenced one by one).
 */
void fs_handles_free(struct fs *fs)
{
	struct handle *h;

	while ((h = fs->open)) {
		handle_unlist(h);
		handle_destroy(h);
	}
}
