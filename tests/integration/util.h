/*
 * util.h - what the C integration tests share: time, memory, shell
 * commands, and a private multi-member etcd cluster
 *
 * Every helper aborts on out-of-memory (a test has nothing better to do)
 * and reports a failed command as a TAP diagnostic.  The cluster helpers
 * drive tests/lib/cluster.sh (found through TESTS_DIR) in a temporary dir
 * of the test's own, and util_cluster_stop() stops every member by pid.
 *
 * What it cannot do: start members with TLS, or more than UTIL_MAX_MEMBERS.
 */
#ifndef ETCDFS_TESTS_UTIL_H
#define ETCDFS_TESTS_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

long long util_now_ms(void);
void util_sleep_ms(long ms);

/* malloc()ed results; they abort when out of memory. */
char *util_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
char *util_vfmt(const char *f, va_list ap) __attribute__((format(printf, 1, 0)));
void *util_xmalloc(size_t n);
char *util_xmemdup(const void *p, size_t n);

/* Runs a shell command; its exit status, or -1 if it did not exit. */
int util_sh(const char *f, ...) __attribute__((format(printf, 1, 2)));

/*
 * Runs a shell command and returns what it printed (malloc()ed,
 * NUL-terminated), or NULL if it failed.
 */
char *util_sh_out(const char *f, ...) __attribute__((format(printf, 1, 2)));

/*
 * Runs a shell command; its first line of output, without the newline,
 * into @out (may be NULL).  Returns its exit status, or -1.
 */
int util_run(char *out, size_t size, const char *f, ...)
	__attribute__((format(printf, 3, 4)));

#define UTIL_MAX_MEMBERS 5

struct util_cluster {
	const char *tests_dir;		/* TESTS_DIR */
	char tmp_dir[256];		/* ours, removed at stop */
	char dir[300];			/* the cluster's, inside tmp_dir */
	int n;
	char eps[UTIL_MAX_MEMBERS][128];	/* member K+1's client URL */
	char all[UTIL_MAX_MEMBERS * 130];	/* all of them, comma list */
};

/*
 * Starts an @n-member cluster with the etcd arguments @args (may be
 * NULL); false with a diagnostic if it cannot.  @name names the temporary
 * dir.
 */
bool util_cluster_start(struct util_cluster *c, const char *name, int n,
			const char *args);

/* Runs "tests/lib/cluster.sh CMD DIR ARGS": its exit status. */
int util_cluster_cmd(struct util_cluster *c, const char *cmd, const char *f,
		     ...) __attribute__((format(printf, 3, 4)));

/* The leader's member number (1..n), or 0. */
int util_cluster_leader(struct util_cluster *c);

/* Stops every member and removes the temporary dir; safe to repeat. */
void util_cluster_stop(struct util_cluster *c);

#endif /* ETCDFS_TESTS_UTIL_H */
