/*
 * test_store_mux.c - many calls at once on the v3 store's one HTTP/2
 * connection, against a real etcd
 *
 * Runs under tests/lib/with-etcd.  Writers create keys while listers read
 * a prefix of several megabytes over and over, all through one store, so
 * that small replies and big ones share the connection; every call must
 * succeed, and etcd (asked with etcdctl) must hold exactly the keys the
 * writers said they created.  libcurl 7.88 lost the grpc-status of small
 * calls beside a big reply (see the lanes in
 * helper/grpc_transport_i.h): the writers failed with "no grpc-status".
 *
 * What it cannot test: several endpoints, TLS.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store.h"
#include "tap.h"

#define FILL_KEYS	4000	/* of 1 KiB: lists of about 4 MB */
#define WRITERS		16
#define LISTERS		2
#define RUN_MS		8000

static const char *endpoint;
static char value[1024];

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct worker {
	struct store *s;
	int id;
	long long until;
	int done;		/* calls that succeeded */
	int failed;
	char first_err[600];
};

static void worker_fail(struct worker *w, const char *what,
			const struct store_error *err)
{
	if (!w->failed++)
		snprintf(w->first_err, sizeof(w->first_err), "%s: %s (%s)",
			 what, err->msg, store_errname(err->code));
}

static void *fill(void *arg)
{
	struct worker *w = arg;
	struct store_error err = { 0 };
	char key[32];
	int i, n;

	for (i = w->id; i < FILL_KEYS; i += WRITERS) {
		n = snprintf(key, sizeof(key), "fill/%05d", i);
		if (store_create(w->s, key, (size_t)n, value, sizeof(value), 0,
				 NULL, &err) < 0)
			worker_fail(w, key, &err);
	}
	return NULL;
}

static void *write_keys(void *arg)
{
	struct worker *w = arg;
	struct store_error err = { 0 };
	char key[32];
	int n;

	while (now_ms() < w->until) {
		n = snprintf(key, sizeof(key), "w/%02d/%06d", w->id, w->done);
		if (store_create(w->s, key, (size_t)n, "v", 1, 0, NULL,
				 &err) < 0) {
			worker_fail(w, key, &err);
			break;
		}
		w->done++;
	}
	return NULL;
}

static void *list_keys(void *arg)
{
	struct worker *w = arg;
	struct store_error err = { 0 };
	struct store_list l;

	while (now_ms() < w->until) {
		if (store_list(w->s, "fill/", 5, 0, &l, &err) < 0) {
			worker_fail(w, "list", &err);
			break;
		}
		if (l.n != FILL_KEYS) {
			err.code = STORE_EBADREPLY;
			snprintf(err.msg, sizeof(err.msg), "%zu keys", l.n);
			worker_fail(w, "list", &err);
		}
		store_list_release(&l);
		w->done++;
	}
	return NULL;
}

/* The keys etcd holds under @prefix, by etcdctl; -1 on failure. */
static long ctl_count(const char *prefix)
{
	char cmd[512], out[256];
	long n = -1;
	FILE *f;

	/* etcdctl 3.4 has no --count-only; -w fields says "Count" */
	snprintf(cmd, sizeof(cmd), "etcdctl --endpoints=%s get --prefix "
		 "--keys-only -w fields %s | sed -n 's/^\"Count\" : //p'",
		 endpoint, prefix);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(out, sizeof(out), f))
		n = strtol(out, NULL, 10);
	if (pclose(f) != 0)
		return -1;
	return n;
}

/* Runs fn_a on w[0..n_a) and fn_b on w[n_a..n_a + n_b), all at once. */
static bool run(struct worker *w, int n_a, void *(*fn_a)(void *), int n_b,
		void *(*fn_b)(void *))
{
	pthread_t th[WRITERS + LISTERS];
	int i, started = 0;
	bool ok = true;

	for (i = 0; i < n_a + n_b; i++) {
		if (pthread_create(&th[i], NULL, i < n_a ? fn_a : fn_b,
				   &w[i]) != 0) {
			ok = false;
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return ok;
}

/* Says what failed; true if nothing did. */
static bool none_failed(const struct worker *w, int n, const char *what)
{
	bool ok = true;
	int i;

	for (i = 0; i < n; i++) {
		if (!w[i].failed)
			continue;
		tap_diag("%s %d: %d failed, first %s", what, i, w[i].failed,
			 w[i].first_err);
		ok = false;
	}
	return ok;
}

static bool test_small_calls_beside_big_replies(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
		.prefix = "/t/mux/",
		.page_size = FILL_KEYS,
	};
	struct store_error err = { 0 };
	struct worker w[WRITERS + LISTERS];
	long long until;
	long written = 0, lists = 0, held;
	struct store *s;
	bool ok;
	int i;

	memset(value, 'x', sizeof(value));
	s = store_new(&cfg, &err);
	CHECK(s);
	for (i = 0; i < WRITERS; i++)
		w[i] = (struct worker){ .s = s, .id = i };
	CHECK(run(w, WRITERS, fill, 0, NULL));
	CHECK(none_failed(w, WRITERS, "filler"));

	until = now_ms() + RUN_MS;
	for (i = 0; i < WRITERS + LISTERS; i++)
		w[i] = (struct worker){ .s = s, .id = i, .until = until };
	CHECK(run(w, WRITERS, write_keys, LISTERS, list_keys));
	store_free(s);
	ok = none_failed(w, WRITERS, "writer");
	ok = none_failed(w + WRITERS, LISTERS, "lister") && ok;
	for (i = 0; i < WRITERS; i++)
		written += w[i].done;
	for (i = WRITERS; i < WRITERS + LISTERS; i++)
		lists += w[i].done;
	held = ctl_count("/t/mux/w/");
	tap_diag("%ld keys created and %ld lists of %d keys in %d ms; etcd "
		 "holds %ld", written, lists, FILL_KEYS, RUN_MS, held);
	CHECK(ok);
	CHECK(lists >= 2);
	CHECK(held == written);
	return true;
}

int main(void)
{
	endpoint = getenv("ETCDFS_TEST_ENDPOINTS");
	if (!endpoint || !*endpoint) {
		printf("Bail out! run under tests/lib/with-etcd\n");
		return 1;
	}
	setenv("ETCDCTL_API", "3", 1);
	/* etcdctl refuses --endpoints beside ETCDCTL_ENDPOINTS */
	unsetenv("ETCDCTL_ENDPOINTS");
	TAP_RUN(test_small_calls_beside_big_replies);
	return tap_done(0);
}
