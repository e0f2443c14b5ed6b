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

#include <fuse_lowlevel.h>	/* FUSE_USE_VERSION: meson.build */

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
	const char *temp_names;	/* more of them: patterns (fs/temp.h), or
				 * NULL; checked by temp_names_parse() */
	bool chmod_ok;		/* accept chmod/chown that change something */
	bool nowatch;		/* no watch: list on opendir, read on open */
	bool quorum;		/* each open reads the key linearizably */
	size_t value_budget;	/* bytes of values held in memory; 0: all */
	size_t quota;		/* statfs's size; 0: etcd's default, 2 GiB */
	long request_timeout_ms;	/* the store's: statfs waits no more */
	/*
	 * Mount before etcd answers: until the keys are loaded, every
	 * operation that needs them fails with ENOTCONN (fs/connect.c).
	 */
	bool delay_connect;
	bool debug;		/* -d: log every operation (fs/gate.c) */
	/* What the mount is doing, for systemd's STATUS=; may be NULL. */
	void (*status)(const char *msg);
	int64_t revision;	/* 0: live; else the store reads at it (the
				 * mount is ro and nowatch then) */
	unsigned max_txn_ops;	/* the cluster's --max-txn-ops; 0: etcd's
				 * default, FS_MAX_TXN_OPS */
	const char *codec;	/* -o codec=: an absolute path, or NULL */
	const char *codec_prefix;	/* the keys it applies to, relative
					 * to the mount's prefix; NULL: all */
	bool k8s;		/* -o k8s: Kubernetes' objects as text, by
				 * helper/k8s_codec.h, not by a program */
	bool k8s_yaml;		/* -o k8s=yaml: as YAML, not JSON */
};

#define FS_MAX_TXN_OPS 128

struct fs;

/* NULL when out of memory.  Does not contact the cluster. */
struct fs *fs_new(const struct fs_config *cfg);
void fs_free(struct fs *fs);

struct store_error;

/*
 * Lists every key under the prefix into the mount's mirror.  Call it before
 * daemonizing, so that a cluster that cannot be listed is reported on the
 * terminal; if it was not called, the filesystem's init does it.
 */
int fs_load(struct fs *fs, struct store_error *err);

/* The session to send cache invalidations to. */
void fs_set_session(struct fs *fs, struct fuse_session *se);
/*
 * After the session's loop, before fuse_session_unmount: no notification
 * is sent to the kernel any more (the mirror's threads go on until the
 * filesystem's destroy), and none is in flight, but for one that has
 * waited in the kernel for a second.
 */
void fs_notify_stop(struct fs *fs);

/*
 * The operations; the userdata to pass with them is the struct fs.  Each
 * is counted and, with cfg.debug, logged (fs/gate.c).
 */
const struct fuse_lowlevel_ops *fs_ops(void);

/*
 * The echo's process (fs/echo.c): the daemon runs its own binary again as
 * `/proc/self/exe FS_ECHO_ARG MOUNTPOINT PID`, and main() must hand such
 * a command line to fs_echo_main() before anything else, which returns
 * the exit status.
 */
#define FS_ECHO_ARG "--echo-process"
int fs_echo_main(int argc, char **argv);

#endif /* ETCDFS_FS_H */
