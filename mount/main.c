/*
 * main.c - the etcdfs daemon's life: check, connect, mount, serve, unmount
 *
 * Reads the command line (opts.c, setup.c), checks that the mountpoint is
 * a directory and that the cluster answers, loads the keys, mounts the
 * filesystem of fs/ over a store of helper/ and serves it until it is
 * unmounted (fusermount3 -u, umount) or the daemon gets SIGTERM, SIGINT
 * or SIGHUP, which unmount it.  Every check that can fail is done before
 * forking into the background, so that a mistake is reported on the
 * terminal with a non-zero exit status rather than in a log nobody reads;
 * mount(8) and systemd see that status too.
 *
 * It is what mount(8) runs for the type fuse.etcdfs, through Debian's
 * mount.fuse3, as "etcdfs ENDPOINTS MOUNTPOINT -o OPTIONS"; with
 * mount.fuse3's drop_privileges the mountpoint is /dev/fd/N, a mount made
 * already.  Under systemd (NOTIFY_SOCKET) it says READY=1 once mounted.
 *
 * With -o delay_connect it mounts without asking etcd, and the
 * filesystem waits for it (fs/connect.c).
 *
 * What it cannot do: mount without a reachable cluster, unless told to
 * (delay_connect); replay other
 * clients' changes as inotify events on a mount it cannot write through
 * (ro, where the kernel refuses the echo's syscalls, or /dev/fd/N, whose
 * path it does not know): there the changes are shown without events.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "log.h"
#include "notify.h"
#include "opts.h"

/*
 * Idle FUSE worker threads beyond this many exit.  Each thread keeps a
 * connection to etcd of its own, so a burst should not leave hundreds.
 */
#define MAX_IDLE_THREADS 10

static void version(void)
{
	printf("etcdfs version %s\n", ETCDFS_VERSION);
	printf("FUSE library version %s\n", fuse_pkgversion());
	/* it runs fusermount3 --version, which writes to our stdout */
	fflush(stdout);
	fuse_lowlevel_version();
	printf("%s\n", curl_version());
	printf("jansson version %s\n", jansson_version_str());
}

static void help(const char *progname)
{
	opts_help(progname);
	printf("FUSE options:\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* -d: every request to etcd, as the store reports it. */
static void trace_request(const char *method, const char *key, int rc,
			  long us)
{
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: etcd %s key '%s' -> %s in %ld us\n",
		 method, key, rc ? store_errname(rc) : "ok", us);
}

/* mount.fuse3's drop_privileges: the mount is made, here is its fd. */
static bool is_fd_mountpoint(const char *m)
{
	const char *p = m + strlen("/dev/fd/");

	if (strncmp(m, "/dev/fd/", strlen("/dev/fd/")) != 0 || !*p)
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* fuse_parse_cmdline() made it absolute with realpath(). */
static int check_mountpoint(const char *m)
{
	struct stat st;

	if (is_fd_mountpoint(m))
		return 0;
	if (stat(m, &st) == -1) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: bad mountpoint '%s': %s\n", m,
			 strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fuse_log(FUSE_LOG_ERR,
			 "etcdfs: bad mountpoint '%s': not a directory\n", m);
		return -1;
	}
	return 0;
}

/* Says why the cluster could not be used, with the store's cause. */
static void report_store_error(const char *endpoints, const char *user,
			       int rc, const struct store_error *err)
{
	const char *cause = err->msg[0] ? err->msg : store_strerror(rc);

	switch (rc) {
	case STORE_EUNREACHABLE:
		/* the transport names each endpoint and what it answered */
		if (strncmp(cause, "cannot reach ", 13) == 0) {
			fuse_log(FUSE_LOG_ERR, "etcdfs: %s\n", cause);
			break;
		}
		/* fall through */
	case STORE_ETIMEOUT:
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot reach '%s': %s\n",
			 endpoints, cause);
		break;
	case STORE_EUNAUTHENTICATED:
		if (user)
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: cannot log in to '%s' as '%s': %s\n",
				 endpoints, user, cause);
		else
			fuse_log(FUSE_LOG_ERR,
				 "etcdfs: cannot log in to '%s' (no user= "
				 "given): %s\n", endpoints, cause);
		break;
	case STORE_EPERMISSION:
		fuse_log(FUSE_LOG_ERR,
			 "etcdfs: user '%s' may not read '%s': %s\n",
			 user ? user : "", endpoints, cause);
		break;
	default:
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot use '%s': %s\n",
			 endpoints, cause);
		break;
	}
}

static void warn_insecure(const struct opts *o)
{
	if (o->store.insecure_skip_tls_verify)
		fuse_log(FUSE_LOG_WARNING, "etcdfs: warning: "
			 "insecure_skip_tls_verify: the server's certificate "
			 "is not checked; anyone on the way to '%s' can read "
			 "and change what this mount sends and receives\n",
			 o->endpoints);
}

/* -o revision=N: refused unless etcd still holds N.  0, or -1. */
static int check_revision(const struct opts *o, struct store *store)
{
	struct store_error serr = { 0 };
	int64_t now, oldest;
	int rc;

	rc = store_check_revision(store, o->store.revision, &now, &oldest,
				  &serr);
	if (rc == STORE_ECOMPACTED || rc == STORE_EINVAL) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot mount revision %lld: "
			 "%s\n", (long long)o->store.revision, serr.msg);
		return -1;
	}
	if (rc != 0) {
		report_store_error(o->endpoints, o->user, rc, &serr);
		return -1;
	}
	return 0;
}

/*
 * Makes the store and the filesystem and loads the keys, on the
 * terminal: the cluster must answer now, unless delay_connect leaves
 * that to the filesystem.  0, or -1 after a message.
 */
static int connect_cluster(struct opts *o, struct store **store,
			   struct fs **fs)
{
	struct store_error serr;
	int64_t rev;
	int rc;

	memset(&serr, 0, sizeof(serr));
	*store = store_new(&o->store, &serr);
	if (!*store) {
		report_store_error(o->endpoints, o->user,
				   serr.code ? serr.code : STORE_EINVAL, &serr);
		return -1;
	}
	if (o->store.revision && o->fs.delay_connect) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: 'revision=' and "
			 "'delay_connect' do not go together: a past revision "
			 "is checked at mount\n");
		return -1;
	}
	o->fs.store = *store;
	o->fs.request_timeout_ms = o->store.request_timeout_ms;
	o->fs.status = notify_status;
	*fs = fs_new(&o->fs);
	if (!*fs) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: out of memory\n");
		return -1;
	}
	/* the filesystem waits for etcd itself (fs/connect.c) */
	if (o->fs.delay_connect)
		return 0;
	notify("STATUS=connecting to %s", o->endpoints);
	memset(&serr, 0, sizeof(serr));
	rc = store_revision(*store, &rev, &serr);
	if (rc != 0) {
		report_store_error(o->endpoints, o->user, rc, &serr);
		return -1;
	}
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: %s at '%s' answers, revision %lld\n",
		 store_backend_name(*store), store_endpoint(*store),
		 (long long)rev);
	if (o->store.revision && check_revision(o, *store) != 0)
		return -1;
	notify("STATUS=loading the keys under '%s'", o->prefix);
	memset(&serr, 0, sizeof(serr));
	rc = fs_load(*fs, &serr);
	if (rc != 0) {
		report_store_error(o->endpoints, o->user, rc, &serr);
		return -1;
	}
	return 0;
}

/*
 * Mounts, daemonizes unless told not to, serves until unmounted or
 * signalled, unmounts.  The exit status: 0 for a clean end.
 */
static int serve(struct fuse_args *args, const struct fuse_cmdline_opts *fo,
		 const struct opts *o, struct fs *fs)
{
	struct fuse_session *se;
	int ret = 1;
	int rc;

	se = fuse_session_new(args, fs_ops(), sizeof(*fs_ops()), fs);
	if (!se)
		return 1;
	fs_set_session(fs, se);
	if (fuse_set_signal_handlers(se) != 0)
		goto err_out1;
	if (fuse_session_mount(se, fo->mountpoint) != 0)
		goto err_out2;
	if (fuse_daemonize(fo->foreground) != 0)
		goto err_out3;
	log_started(!fo->foreground);
	/* a terminal is told nothing when all is well; a log is */
	if (!log_to_stderr()) {
		warn_insecure(o);	/* again, where the log goes now */
		fuse_log(FUSE_LOG_INFO, "etcdfs: serving %s at %s\n",
			 o->endpoints, fo->mountpoint);
	}
	/*
	 * With delay_connect, ready means mounted: systemd's start job
	 * must not wait for etcd (it would time out and fail the unit,
	 * which delay_connect is there to avoid); fs/connect.c tells how
	 * it goes in STATUS= lines.  Without it the keys are loaded now.
	 */
	if (o->fs.delay_connect)
		notify("READY=1\nSTATUS=mounted at %s, waiting for etcd at "
		       "%s\nMAINPID=%ld", fo->mountpoint, o->endpoints,
		       (long)getpid());
	else
		notify("READY=1\nSTATUS=serving %s at %s\nMAINPID=%ld",
		       o->endpoints, fo->mountpoint, (long)getpid());

	if (fo->singlethread) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config config = {
			.clone_fd = fo->clone_fd,
			.max_idle_threads = MAX_IDLE_THREADS,
		};

		if (fo->max_idle_threads != UINT_MAX)	/* -o max_idle_threads */
			config.max_idle_threads = fo->max_idle_threads;

		rc = fuse_session_loop_mt(se, &config);
	}
	notify("STOPPING=1\nSTATUS=unmounting %s", fo->mountpoint);
	/*
	 * The loop returns 0 when the filesystem was unmounted, and the
	 * number of the signal that ended it (SIGTERM, SIGINT, SIGHUP):
	 * both are a clean end.  A negative errno is not.
	 */
	if (rc < 0) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: serving '%s' failed: %s\n",
			 fo->mountpoint, strerror(-rc));
	} else {
		fuse_log(log_to_stderr() ? FUSE_LOG_DEBUG : FUSE_LOG_INFO,
			 "etcdfs: unmounting %s (%s)\n", fo->mountpoint,
			 rc > 0 ? strsignal(rc) : "unmounted");
		ret = 0;
	}

err_out3:
	fs_notify_stop(fs);	/* before the device is closed */
	fuse_session_unmount(se);
err_out2:
	fuse_remove_signal_handlers(se);
err_out1:
	fuse_session_destroy(se);	/* calls the filesystem's destroy */
	return ret;
}

/*
 * The command line, in order: the ENDPOINTS argument out, libfuse's
 * generic options, ours, then the environment.  1 to go on, 0 when done
 * (--help, --version), -1 after a message.
 */
static int parse(struct fuse_args *args, struct fuse_cmdline_opts *fo,
		 struct opts *o, const char *progname)
{
	const char *mnt;

	if (opts_take_source(args, o) != 0 ||
	    fuse_parse_cmdline(args, fo) != 0)
		return -1;
	if (fo->show_help) {
		help(progname);
		return 0;
	}
	if (fo->show_version) {
		version();
		return 0;
	}
	log_init(fo->debug);
	if (opts_parse(args, o) != 0)
		return -1;
	o->fs.debug = fo->debug;
	if (fo->debug)
		o->store.trace = trace_request;
	if (!fo->mountpoint) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: no mountpoint given\n");
		opts_usage(stderr, progname);
		fprintf(stderr, "       %s --help\n", progname);
		return -1;
	}
	if (check_mountpoint(fo->mountpoint) != 0)
		return -1;
	/*
	 * The echo replays other clients' changes on the mountpoint, as
	 * syscalls that write; on a read-only mount the kernel refuses
	 * them, and through /dev/fd/N the path is not known: none then.
	 */
	mnt = o->fs.ro || is_fd_mountpoint(fo->mountpoint) ? NULL :
		fo->mountpoint;
	if (opts_finish(o, mnt) != 0)
		return -1;
	if (o->logfile && log_open_file(o->logfile) != 0)
		return -1;
	if (opts_add_mount_args(args, o) != 0)
		return -1;
	return 1;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	const char *progname = argc > 0 ? argv[0] : "etcdfs";
	struct fuse_cmdline_opts fo;
	struct opts o;
	struct store *store = NULL;
	struct fs *fs = NULL;
	int ret = 1;
	int rc;

	/* this binary run again by the daemon, as its echo (fs/echo.c) */
	if (argc > 1 && strcmp(argv[1], FS_ECHO_ARG) == 0)
		return fs_echo_main(argc, argv);

	memset(&fo, 0, sizeof(fo));
	opts_init(&o);
	log_init(false);
	notify_init();
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: cannot initialise libcurl\n");
		return 1;
	}

	rc = parse(&args, &fo, &o, progname);
	if (rc <= 0) {
		ret = rc == 0 ? 0 : 1;
		goto out;
	}
	warn_insecure(&o);
	if (connect_cluster(&o, &store, &fs) != 0)
		goto out;
	ret = serve(&args, &fo, &o, fs);
out:
	fs_free(fs);
	store_free(store);
	opts_release(&o);
	free(fo.mountpoint);
	fuse_opt_free_args(&args);
	curl_global_cleanup();
	log_release();
	return ret;
}
