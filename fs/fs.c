/*
 * fs.c - the filesystem's lifecycle (fs_new, init, going live, destroy,
 * fs_free) and the table of its FUSE operations
 *
 * At mount the whole prefix is listed once and a watch keeps the mirror
 * current (live.c); each change invalidates exactly the kernel's entries
 * and inodes it touches (kernel.c).  With nowatch there is no watch: a
 * directory is listed again when it is opened and a file read again when
 * it is opened, so what the mount shows is as fresh as the last readdir
 * or open.
 *
 * The operations: names and directories in dir.c, files (open, read) in
 * file.c, writes and commits in commit.c, getattr and setattr in attr.c,
 * unlink and rename in move.c, extended attributes and pins in xattr.c,
 * statfs in statfs.c; the tree itself (no FUSE) in tree.c.
 *
 * What it cannot do: renaming a directory of more keys than one
 * transaction holds (EXDEV: mv copies instead; see dirmove.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "gate.h"
#include "ops.h"
#include "seen.h"
#include "quorum.h"
#include "names.h"

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	struct store_error err = { 0 };

	/*
	 * Without atomic O_TRUNC the kernel truncates with a setattr right
	 * after the open (see fs_truncate_path), whose reply, the committed
	 * size, it believes; with it, it would cut the size and the pages
	 * every reader shares.
	 */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	/* writes must reach us with the writer's pid, and one per write(2) */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* opens without a message (file.c), if the kernel can do them */
	if (fs->no_open && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT))
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
	else
		fs->no_open = false;
	/*
	 * Every listing carries its entries' attributes, so that reading
	 * each file of a directory sends no LOOKUP per file (the kernel's
	 * "auto" mode sends plain READDIR after the first batch, then a
	 * LOOKUP per name).
	 */
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (fs->cfg.delay_connect && !fs->mirror.loaded) {
		fs_connect_start(fs);	/* which goes live once loaded */
		return;
	}
	if (!fs->mirror.loaded && fs_load(fs, &err))
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot list the keys: %s\n",
			 err.msg);
	fs_go_live(fs);
}

static void fs_destroy(void *userdata)
{
	struct fs *fs = userdata;
	struct store_watch *w,
		*old[sizeof(fs->mirror.old) / sizeof(fs->mirror.old[0])];
	size_t i, nold;

	/* delay_connect's thread may be starting the watch: it goes first */
	fs_connect_stop(fs);
	/* taken under the lock: a relist may be replacing the watch */
	pthread_mutex_lock(&fs->lock);
	fs->mirror.stopping = true;
	w = fs->mirror.watch;
	fs->mirror.watch = NULL;
	nold = fs->mirror.nold;
	memcpy(old, fs->mirror.old, nold * sizeof(old[0]));
	fs->mirror.nold = 0;
	pthread_mutex_unlock(&fs->lock);
	/* a relist in w's thread sees stopping and returns: w's join ends */
	if (w)
		store_watch_stop(w);
	for (i = 0; i < nold; i++)
		store_watch_stop(old[i]);
	echo_stop(fs);
	fs_space_free(fs);
}

static const struct fuse_lowlevel_ops ops = {
	.init = fs_init,
	.destroy = fs_destroy,
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.mkdir = fs_mkdir,
	.rmdir = fs_rmdir,
	.unlink = fs_unlink,
	.rename = fs_rename,
	.link = fs_link,
	.symlink = fs_symlink,
	.mknod = fs_mknod,
	.create = fs_create,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.fsync = fs_fsync,
	.release = fs_release,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.statfs = fs_statfs,
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
};

const struct fuse_lowlevel_ops *fs_ops(void)
{
	return fs_gate_ops(&ops);	/* counted, traced, gated */
}

struct fs *fs_new(const struct fs_config *cfg)
{
	struct fs *fs = calloc(1, sizeof(*fs));
	pthread_condattr_t ca;

	if (!fs)
		return NULL;
	fs->cfg = *cfg;
	fs->store = cfg->store;
	fs->no_open = fs_no_open_mode(cfg);
	/* the mount checked the patterns: only ENOMEM is left */
	if (temp_names_parse(cfg->temp_names, &fs->temp)) {
		free(fs);
		return NULL;
	}
	kernel_init(&fs->kernel);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->echo.lock, NULL);
	pthread_mutex_init(&fs->replay_lock, NULL);
	pthread_cond_init(&fs->echo.cond, NULL);
	pthread_cond_init(&fs->mirror.inflight_cond, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->echo.follow.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (tree_init(&fs->tree, cfg->value_budget, fs_now, kernel_node_id)) {
		temp_names_free(fs->temp);
		free(fs);
		return NULL;
	}
	/* the kernel's reference to the root, which it never forgets */
	fs->tree.root->nlookup = 1;
	fs->mounted = fs->tree.root->mtime;
	if (fs_gate_new(fs) || quorum_new(fs)) {
		fs_gate_free(fs);
		tree_release(&fs->tree);
		temp_names_free(fs->temp);
		free(fs);
		return NULL;
	}
	return fs;
}

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	fs_destroy(fs);
	fs_handles_free(fs);
	dir_handles_free(fs);
	/* the session is gone: every node still in the tree goes with it */
	tree_release(&fs->tree);
	pins_free(fs);
	own_changes_free(fs);
	history_free(fs);
	seen_free(fs);
	temp_names_free(fs->temp);
	inval_release(&fs->mirror.pending_invals);
	fs_gate_free(fs);
	quorum_free(fs);
	pthread_cond_destroy(&fs->echo.cond);
	pthread_cond_destroy(&fs->mirror.inflight_cond);
	pthread_cond_destroy(&fs->echo.follow.cond);
	pthread_mutex_destroy(&fs->replay_lock);
	pthread_mutex_destroy(&fs->echo.lock);
	pthread_mutex_destroy(&fs->lock);
	kernel_release(&fs->kernel);
	free(fs);
}
