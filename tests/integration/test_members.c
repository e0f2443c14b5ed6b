/*
 * test_members.c - store_members() and the endpoint refresh
 * (store_refresh_endpoints, store_config.refresh_endpoints_ms) against a
 * real three-member etcd 3.4 cluster, on both backends
 *
 * Starts the cluster itself with tests/lib/cluster.sh (found through
 * TESTS_DIR; --enable-v2=true, so one cluster serves v3 and v2), in a
 * temporary dir, and stops every member by pid at the end, pass or fail.
 * Cross-checks with etcdctl talking to members other than the one the
 * store was given.  Cases: the members listed are the cluster's; a refresh
 * puts their client URLs first and keeps the endpoints given, last, once;
 * a refresh that fails keeps the list; refreshes while other threads run
 * requests; and the last case stops member 1, which a store given only
 * member 1 survives with the refresh and does not without it (a clear
 * "unreachable", never "not found").
 *
 * What it cannot test: members that change their client URLs while the
 * store runs, and TLS clusters.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"

#define S(lit) lit, sizeof(lit) - 1
#define N_MEMBERS 3

static struct util_cluster cl;		/* cl.eps[K]: member K+1's URL */
static char dead_ep[64];		/* a port nothing listens on */

/* The value etcdctl (v3 or v2) reads for @key from members 2 and 3. */
static bool witness(enum store_api api, const char *key, char *out,
		    size_t size)
{
	if (api == STORE_API_V3)
		return util_run(out, size, "ETCDCTL_API=3 etcdctl --endpoints=%s,%s "
			   "get --print-value-only -- '%s'", cl.eps[1], cl.eps[2],
			   key) == 0;
	return util_run(out, size, "ETCDCTL_API=2 etcdctl --endpoints=%s,%s get "
		   "-- '%s'", cl.eps[1], cl.eps[2], key) == 0;
}

static struct store *make(enum store_api api, const char *endpoints,
			  long refresh_ms)
{
	struct store_config cfg = { 0 };
	struct store_error err = { 0 };
	struct store *s;

	cfg.api = api;
	cfg.endpoints = endpoints;
	cfg.prefix = api == STORE_API_V2 ? "/members-test/" : "members-test/";
	cfg.connect_timeout_ms = 1000;
	cfg.request_timeout_ms = 5000;
	cfg.refresh_endpoints_ms = refresh_ms;
	s = store_new(&cfg, &err);
	if (!s)
		tap_diag("store_new('%s'): %s", endpoints, err.msg);
	return s;
}

static const char *api_name(enum store_api api)
{
	return api == STORE_API_V2 ? "v2" : "v3";
}

/* The members are the cluster's, each with its one client URL. */
static bool members_listed(enum store_api api)
{
	struct store_member *m;
	struct store_error err = { 0 };
	struct store *s;
	size_t n, i, k;
	bool seen[N_MEMBERS] = { false };
	int rc;

	s = make(api, cl.eps[0], 0);
	CHECK(s);
	rc = store_members(s, &m, &n, &err);
	if (rc)
		tap_diag("store_members: %s", err.msg);
	CHECK(rc == 0);
	CHECK(n == N_MEMBERS);
	for (i = 0; i < n; i++) {
		CHECK(m[i].id != 0);
		CHECK(m[i].n_client_urls == 1);
		for (k = 0; k < N_MEMBERS; k++)
			if (strcmp(m[i].client_urls[0], cl.eps[k]) == 0)
				seen[k] = true;
		CHECK(m[i].name && strlen(m[i].name) == 2 &&
		      m[i].name[0] == 'm');
	}
	for (k = 0; k < N_MEMBERS; k++)
		CHECK(seen[k]);
	store_members_free(m, n);
	store_free(s);
	return true;
}

/*
 * A refresh: the members' URLs first, the endpoints given that are not
 * members last, each once; the store stays on the endpoint that answered.
 */
static bool refresh_list(enum store_api api)
{
	struct store_error err = { 0 };
	struct store *s;
	char list[512];
	int64_t rev;
	size_t n;

	/* given: a dead endpoint and member 1, as "m1/" with a '/' */
	snprintf(list, sizeof(list), "%s,%s/", dead_ep, cl.eps[0]);
	s = make(api, list, 0);
	CHECK(s);
	CHECK(store_revision(s, &rev, &err) == 0);
	CHECK(strcmp(store_endpoint(s), cl.eps[0]) == 0);
	CHECK(store_refresh_endpoints(s, &n, &err) == 0);
	CHECK(n == N_MEMBERS + 1);
	CHECK(strcmp(store_endpoint(s), cl.eps[0]) == 0);
	/* again: nothing grows */
	CHECK(store_refresh_endpoints(s, &n, &err) == 0);
	CHECK(n == N_MEMBERS + 1);
	store_free(s);

	/* given all three: no duplicate */
	snprintf(list, sizeof(list), "%s,%s,%s", cl.eps[2], cl.eps[1], cl.eps[0]);
	s = make(api, list, 0);
	CHECK(s);
	CHECK(store_refresh_endpoints(s, &n, &err) == 0);
	CHECK(n == N_MEMBERS);
	store_free(s);
	return true;
}

/* A refresh that cannot reach the cluster keeps the list it had. */
static bool refresh_fails_keeps(enum store_api api)
{
	struct store_error err = { 0 };
	struct store *s;
	size_t n = 99;
	int64_t rev;
	int rc;

	s = make(api, dead_ep, 0);
	CHECK(s);
	rc = store_refresh_endpoints(s, &n, &err);
	CHECK(rc == STORE_EUNREACHABLE);
	CHECK(err.code == rc && err.msg[0]);
	CHECK(n == 0);
	CHECK(strcmp(store_endpoint(s), dead_ep) == 0);
	CHECK(store_revision(s, &rev, &err) == STORE_EUNREACHABLE);
	store_free(s);

	/* with the refresh on, requests say the same, nothing else */
	s = make(api, dead_ep, 1);
	CHECK(s);
	CHECK(store_revision(s, &rev, &err) == STORE_EUNREACHABLE);
	CHECK(strcmp(store_endpoint(s), dead_ep) == 0);
	store_free(s);
	return true;
}

struct worker {
	struct store *s;
	int id;
	volatile bool *stop;
	int failures;
	int done;
	char msg[600];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct store_error err = { 0 };
	struct store_kv kv;
	char key[32], val[32];
	int64_t rev;
	int i;

	for (i = 0; !__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) || i < 20;
	     i++) {
		snprintf(key, sizeof(key), "w%d", w->id);
		snprintf(val, sizeof(val), "%d", i);
		if (i == 0) {
			if (store_create(w->s, key, strlen(key), val,
					 strlen(val), 0, &rev, &err) != 0)
				goto fail;
		} else if (store_get(w->s, key, strlen(key), 0, &kv,
				     &err) != 0) {
			goto fail;
		} else {
			bool same = kv.value_len == 1 && kv.value[0] == '0';

			store_kv_release(&kv);
			if (!same) {
				snprintf(err.msg, sizeof(err.msg),
					 "'%s' does not read as written", key);
				goto fail;
			}
		}
		w->done++;
		continue;
fail:
		w->failures++;
		snprintf(w->msg, sizeof(w->msg), "%s", err.msg);
	}
	return NULL;
}

/* Refreshes while four threads run requests: none fails, none crashes. */
static bool refresh_concurrent(enum store_api api)
{
	struct store_error err = { 0 };
	struct worker w[4];
	pthread_t th[4];
	volatile bool stop = false;
	struct store *s;
	char list[512];
	size_t n;
	int i, k;

	snprintf(list, sizeof(list), "%s,%s", cl.eps[0], dead_ep);
	s = make(api, list, 0);
	CHECK(s);
	/* each case starts clean: the keys of a previous run go */
	for (i = 0; i < 4; i++) {
		char key[32];

		snprintf(key, sizeof(key), "w%d", i);
		store_delete(s, key, strlen(key), NULL, NULL, NULL, &err);
	}
	for (i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].s = s;
		w[i].id = i;
		w[i].stop = &stop;
		CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
	}
	for (k = 0; k < 100; k++) {
		if (store_refresh_endpoints(s, &n, &err) != 0 ||
		    n != N_MEMBERS + 1) {
			tap_diag("refresh %d: %s", k, err.msg);
			break;
		}
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	store_free(s);
	CHECK(k == 100);
	for (i = 0; i < 4; i++) {
		if (w[i].failures)
			tap_diag("worker %d: %d failures: %s", i,
				 w[i].failures, w[i].msg);
		CHECK(w[i].failures == 0 && w[i].done >= 20);
	}
	return true;
}

/*
 * Member 1 stops.  A store given only member 1, with the refresh, goes on
 * with members 2 and 3; one without it says "unreachable".
 */
static bool survives_member_1(void)
{
	static const enum store_api apis[] = { STORE_API_V3, STORE_API_V2 };
	struct store *with[2], *without[2];
	struct store_error err = { 0 };
	struct store_kv kv;
	char got[64], key[64];
	int64_t rev;
	int a;

	for (a = 0; a < 2; a++) {
		with[a] = make(apis[a], cl.eps[0], 60 * 1000);
		without[a] = make(apis[a], cl.eps[0], 0);
		CHECK(with[a] && without[a]);
		/* the first request refreshes, at mount time */
		CHECK(store_revision(with[a], &rev, &err) == 0);
		CHECK(store_revision(without[a], &rev, &err) == 0);
	}
	CHECK(util_cluster_cmd(&cl, "stop-member", "1") == 0);
	for (a = 0; a < 2; a++) {
		snprintf(key, sizeof(key), "%s",
			 apis[a] == STORE_API_V2 ? "/members-test/after" :
			 "members-test/after");
		memset(&err, 0, sizeof(err));
		if (store_create(with[a], S("after"), S("stopped"), 0, &rev,
				 &err) != 0) {
			tap_diag("%s: create after the stop: %s",
				 api_name(apis[a]), err.msg);
			return false;
		}
		CHECK(witness(apis[a], key, got, sizeof(got)));
		CHECK(strcmp(got, "stopped") == 0);
		CHECK(store_get(with[a], S("after"), 0, &kv, &err) == 0);
		CHECK(kv.value_len == 7 && !memcmp(kv.value, "stopped", 7));
		store_kv_release(&kv);
		CHECK(strcmp(store_endpoint(with[a]), cl.eps[0]) != 0);

		memset(&err, 0, sizeof(err));
		CHECK(store_get(without[a], S("after"), 0, &kv, &err) ==
		      STORE_EUNREACHABLE);
		CHECK(strstr(err.msg, cl.eps[0]));
		CHECK(store_create(without[a], S("lost"), S("x"), 0, &rev,
				   &err) == STORE_EUNREACHABLE);
		store_free(with[a]);
		store_free(without[a]);
	}
	return true;
}

int main(void)
{
	static const enum store_api apis[] = { STORE_API_V3, STORE_API_V2 };
	char port[16];
	int a;

	if (!util_cluster_start(&cl, "members", N_MEMBERS,
				"--enable-v2=true")) {
		printf("Bail out! cannot start a %d-member cluster\n",
		       N_MEMBERS);
		return 1;
	}
	if (util_run(port, sizeof(port), "'%s/lib/etcd.sh' free-port",
		     cl.tests_dir) != 0) {
		printf("Bail out! no free port\n");
		util_cluster_stop(&cl);
		return 1;
	}
	snprintf(dead_ep, sizeof(dead_ep), "http://127.0.0.1:%s", port);

	tap_plan(4 * 2 + 1);
	for (a = 0; a < 2; a++) {
		tap_ok(members_listed(apis[a]), "%s: the members are the "
		       "cluster's", api_name(apis[a]));
		tap_ok(refresh_list(apis[a]), "%s: a refresh puts the members "
		       "first and keeps the endpoints given, once",
		       api_name(apis[a]));
		tap_ok(refresh_fails_keeps(apis[a]), "%s: a failed refresh "
		       "keeps the list", api_name(apis[a]));
		tap_ok(refresh_concurrent(apis[a]), "%s: refreshes while "
		       "other threads run requests", api_name(apis[a]));
	}
	tap_ok(survives_member_1(), "member 1 stops: with the refresh the "
	       "store goes on, without it it is unreachable");
	util_cluster_stop(&cl);
	return tap_failed ? 1 : 0;
}
