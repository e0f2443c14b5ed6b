/*
 * opts.h - the command line and etcdctl's environment, turned into the
 * configuration of the store and of the filesystem
 *
 * Every -o option is one row of the table in opts.c: its name, the field
 * it fills, its kind (flag, string, file, duration, ...), the etcdctl
 * variable it falls back to and its --help text.  Adding an option is
 * adding a row (and, if new, the field it fills).
 *
 * Where each setting comes from, first found wins: the -o option, then
 * (for the endpoints) the ENDPOINTS argument, then etcdctl's variable
 * (ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ...), then the default of
 * helper/endpoint.h.  With -d each is logged with where it came from.
 *
 * What it cannot do: take a password on the command line (on purpose: it
 * would show in ps and in the shell's history).
 */
#ifndef ETCDFS_OPTS_H
#define ETCDFS_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fs.h"
#include "store.h"

#define OPTS_MAX_ROWS 64

struct opts {
	/* For store_new() and fs_new(); the strings point into this struct. */
	struct store_config store;
	struct fs_config fs;

	/* The mount's own settings, as given (NULL, 0: not given). */
	const char *endpoints_opt;	/* -o endpoints= */
	const char *prefix_opt;
	const char *api;
	const char *user_opt;
	const char *password_file;
	const char *refresh_opt;	/* refresh_endpoints=SEC */
	const char *revision_opt;	/* revision=N */
	const char *max_txn_ops_opt;	/* max_txn_ops=N */
	const char *codec_opt;		/* codec=PROG */
	const char *codec_prefix_opt;	/* codec_prefix=P */
	const char *k8s_opt;		/* k8s=json|yaml */
	bool refresh_on;		/* refresh_endpoints */
	const char *logfile;		/* absolute */
	bool has_fsname;		/* the user named the mount: keep it */
	bool has_subtype;

	/* Decided by opts_finish(); owned. */
	char *source;			/* the ENDPOINTS argument */
	char *endpoints;		/* URLs, comma list */
	char *prefix;			/* with its trailing '/' */
	char *user;
	char *password;
	char *codec;			/* the codec's absolute path */
	char *snapshot;			/* the snapshot file's absolute path */

	/* Owned: each row's string value, and where each row came from. */
	char *val[OPTS_MAX_ROWS];
	const char *from[OPTS_MAX_ROWS];	/* NULL: not given */
};

/* Defaults; uid, gid and umask are the caller's. */
void opts_init(struct opts *o);
void opts_release(struct opts *o);

/*
 * Takes the ENDPOINTS argument out of @args when two arguments that are
 * not options are given, so that libfuse's fuse_parse_cmdline() sees only
 * the mountpoint.  0, or -1 after a message.
 */
int opts_take_source(struct fuse_args *args, struct opts *o);

/*
 * Parses the -o options of etcdfs in @args (after fuse_parse_cmdline()),
 * leaves the ones meant for libfuse and the kernel in @args, and drops
 * the words meant for mount(8) and systemd (_netdev, nofail, x-*, ...).
 * 0, or -1 after a message that names the option.
 */
int opts_parse(struct fuse_args *args, struct opts *o);

/*
 * Fills what the options did not from the environment and the defaults,
 * checks what needs checking before a mount (files, the endpoints, the
 * password), and logs with -d where each setting came from.  0, or -1
 * after a message.
 */
int opts_finish(struct opts *o, const char *mountpoint);

/*
 * Adds the options every etcdfs mount gets: default_permissions,
 * subtype=etcdfs and fsname=etcdfs#FIRST-ENDPOINT unless given.
 */
int opts_add_mount_args(struct fuse_args *args, const struct opts *o);

/* Prints the usage line to @f. */
void opts_usage(FILE *f, const char *progname);

/* Prints etcdfs's part of --help: usage, options, environment. */
void opts_help(const char *progname);

#endif
