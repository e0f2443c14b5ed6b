/*
 * util.h - what the C integration tests share: time, memory, shell
 * commands, a private multi-member etcd cluster, and the store tests'
 * helpers (keys shown and compared, stores, etcd servers of a test's own,
 * a watch's event log, CHECK_RC)
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

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store.h"

long long util_now_ms(void);
void util_sleep_ms(long ms);

/* malloc()ed results; they abort when out of memory. */
char *util_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
char *util_vfmt(const char *f, va_list ap)
	__attribute__((format(printf, 1, 0)));
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

/*
 * For a case whose subject is a bound: if the case has not called
 * util_watchdog_disarm() @ms after this, the test says "Bail out!" with
 * @what (a static string), sends SIGTERM to the @n processes of @pids
 * (the case's servers; at most UTIL_WATCHDOG_KILL) and exits 1, so that
 * a broken bound fails the test at once instead of running into meson's
 * timeout.  One watchdog at a time; disarming none does nothing.
 */
#define UTIL_WATCHDOG_KILL 4
void util_watchdog_arm(long ms, const char *what, const pid_t *pids,
		       size_t n);
void util_watchdog_disarm(void);

/*
 * A server of rubbish on 127.0.0.1 for the cases of a hostile peer:
 * tests/lib/grpc-garbage-server.py (@h2, HTTP/2) or garbage-server.py
 * (HTTP/1 and not HTTP at all), answering in @mode, with a message over
 * @size bytes where the mode makes one (0: 1 MiB).  It ends by itself
 * after 300 s; util_garbage_stop() ends it by pid at once.
 */
struct util_garbage {
	pid_t pid;
	int port;
	char url[64];
};

bool util_garbage_start(struct util_garbage *g, bool h2, const char *mode,
			size_t size);
/*
 * Any such helper: runs @argv (NULL-terminated; argv[0] found in PATH),
 * which must print the port it listens on, on 127.0.0.1, as its first
 * line; false with a diagnostic if it does not within 10 s.
 */
bool util_server_start(struct util_garbage *g, const char *const *argv);
/* Stops either by pid (SIGTERM) and reaps it. */
void util_garbage_stop(struct util_garbage *g);

/*
 * tests/lib/tcp_proxy.py on 127.0.0.1:@port (0: any free port) to the
 * port of @target (a URL or HOST:PORT on loopback), for the cases of a
 * connection lost: util_proxy_stop() kills it by pid, which cuts every
 * connection through it at once (it may then be started again on the
 * same port), and util_proxy_lose() makes it lose the answer of one
 * request.
 */
struct util_proxy {
	pid_t pid;
	int port;
	char url[64];
	int in, out;		/* its standard input and output */
	char buf[256];		/* what it said that was not read yet */
	size_t len;
	/* util_proxy_lose's thread */
	pthread_t thread;
	bool losing;
	const char *mode;
	const char *meanwhile;
	const char *end;	/* "cut" or "reset" */
	bool lost;
};

bool util_proxy_start(struct util_proxy *p, const char *target, int port);
void util_proxy_stop(struct util_proxy *p);

/*
 * Makes the proxy lose the answer of the next request sent through it:
 * @mode "lose" (the server gets it and answers; the answer never comes
 * back) or "swallow" (the server never gets it), and after a space what
 * the request starts with, if it matters ("lose PUT": the next HTTP/1
 * PUT; see tests/lib/tcp_proxy.py).  A thread waits for the
 * request, runs the shell command @meanwhile (NULL: none) while the
 * client still waits for its answer, and then cuts the connection, so
 * that the client sees it reset after its request went out.
 * util_proxy_lost() waits for that thread: true if the request came and
 * its answer was lost as asked (a diagnostic if not).
 */
bool util_proxy_lose(struct util_proxy *p, const char *mode,
		     const char *meanwhile);
/*
 * The same, but the client sees its connection reset (an RST) where
 * util_proxy_lose's ends with a FIN: on HTTP/2, libcurl sends a request
 * again by itself after a reset of a connection it reused, not after a
 * FIN.
 */
bool util_proxy_lose_reset(struct util_proxy *p, const char *mode,
			   const char *meanwhile);
bool util_proxy_lost(struct util_proxy *p);

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

/* ---- keys, stores, etcd servers, watch events ---- */

#define S(lit) lit, sizeof(lit) - 1

/*
 * Checks that @expr returns @want; on a mismatch says what came back and
 * fails the case.  Expects a struct store_error named err in scope.
 */
#define CHECK_RC(expr, want)						\
	do {								\
		int rc_ = (expr);					\
		int want_ = (want);					\
		if (rc_ != want_) {					\
			tap_diag("%s:%d: %s returned %d (%s), expected %d (%s)%s%s", \
				 __FILE__, __LINE__, #expr, rc_,	\
				 store_errname(rc_), want_,		\
				 store_errname(want_),			\
				 rc_ ? ": " : "", rc_ ? err.msg : "");	\
			return false;					\
		}							\
		if (want_ != STORE_OK && (err.code != want_ ||		\
					  err.msg[0] == '\0')) {	\
			tap_diag("%s:%d: %s: err.code %d, err.msg '%s'", \
				 __FILE__, __LINE__, #expr, err.code,	\
				 err.msg);				\
			return false;					\
		}							\
	} while (0)

/* The tests/ dir and a scratch dir of the test's own, set by its main(). */
extern const char *util_tests_dir;
extern const char *util_scratch;

/* As util_sh_out, and the length of what it printed in *@len_out. */
char *util_sh_out_len(size_t *len_out, const char *f, ...)
	__attribute__((format(printf, 2, 3)));

/* @p as a C string literal, in one of 4 static buffers, for diagnostics. */
const char *util_show(const char *p, size_t n);
bool util_mem_is(const char *p, size_t n, const char *want, size_t want_n);

/* True if @kv holds @key and @value, both NUL-terminated past their end. */
bool util_kv_is(const struct store_kv *kv, const char *key, size_t key_len,
		const char *value, size_t value_len);

/* store_new, with a diagnostic if it fails. */
struct store *util_store_open(const struct store_config *cfg);

/* A bad configuration is refused by store_new with EINVAL. */
bool util_einval(const struct store_config *cfg, const char *what);

/* A try_update that adds 1 to a decimal value (absent: 0). */
int util_incr_fn(void *arg, const struct store_kv *cur,
		 struct store_update *out);

/* Reads the first line of @path into @buf; false if there is none. */
bool util_read_line(const char *path, char *buf, size_t size);

/* An etcd of a test's own (TLS, auth, v2), in util_scratch. */
struct util_etcd {
	char dir[PATH_MAX];
	char endpoint[128];
	char ctl[PATH_MAX + 512];	/* etcdctl for it, up to the subcommand */
	bool running;
};

/*
 * Starts an etcd in util_scratch/@name: "start" with @args, or
 * "start-tls" with the certificates in @certs (NULL: none).
 */
bool util_etcd_start(struct util_etcd *e, const char *name, const char *certs,
		     const char *args);
void util_etcd_stop(struct util_etcd *e);

/* A watch's events, as util_on_event (a store_watch_fn) logs them. */
struct util_ev {
	enum store_event_type type;
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	char *prev_value;	/* NULL: no prev_kv */
	size_t prev_len;
	int64_t mod_revision;
	int64_t create_revision;
	int64_t version;
	int64_t revision;
	int err;
	int64_t compact_revision;
};

struct util_evlog {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct util_ev evs[256];
	size_t n;		/* events kept (not progress) */
	size_t dropped;		/* over the array */
	size_t progress;
	int64_t last_revision;	/* of the last kept event */
	bool out_of_order;
};

void util_evlog_init(struct util_evlog *l);
void util_evlog_release(struct util_evlog *l);
void util_on_event(void *arg, const struct store_event *ev);

/* Waits until @l holds @n events or @ms pass; returns how many it holds. */
size_t util_evlog_wait(struct util_evlog *l, size_t n, long ms);
bool util_ev_is(const struct util_ev *e, enum store_event_type type,
		const char *key, size_t key_len, const char *value,
		size_t value_len);

#endif /* ETCDFS_TESTS_UTIL_H */
