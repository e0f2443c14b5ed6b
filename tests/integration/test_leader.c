/*
 * test_leader.c - writes across a leader's SIGKILL, on both backends
 *
 * Starts a three-member etcd cluster (tests/lib/cluster.sh, through
 * TESTS_DIR) and a store given all three members.  Eight threads increment
 * one counter with store_guaranteed_update (a read, then a compare-and-swap
 * on the revision read, as a pinned commit of the mount does) and four
 * threads create, delete with a precondition and rename (v3) keys of their
 * own, each call's result kept in a ledger, while the leader is SIGKILLed
 * twice: once when it is the member the store talks to (its connections
 * reset after requests went out), once when the store talks to a follower
 * (which answers etcd's own errors for what it forwarded).  Each killed
 * member is started again, so the cluster keeps quorum.
 *
 * Then what etcd holds is checked against what the calls said: a call
 * that returned 0 was applied, a call that failed was not, except those
 * that failed with "outcome unknown" (STORE_EUNKNOWN, ETIMEDOUT at the
 * mount), which may have been either: the counter is the number of
 * increments that succeeded, plus at most the unknown ones.
 *
 * What it cannot do: choose which requests are in flight at the instant
 * of a kill.  With twelve threads writing, some always are; the counts of
 * what each kill cost are printed as TAP comments.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "tap.h"
#include "util.h"

#define N_MEMBERS	3
#define N_COUNTERS	8
#define N_LEDGERS	4
#define LEDGER_MAX	4096
/* no thread runs longer than this, whatever happens to the cluster */
#define RUN_LIMIT_MS	120000
/*
 * The increments that must succeed before the writers stop: after the
 * kills they run on until there are this many (a count, not a rate: a
 * loaded machine takes longer, bounded by RUN_LIMIT_MS).
 */
#define MIN_INCREMENTS	100

/* increments that succeeded so far, all counter threads */
static int increments_ok;

static struct util_cluster cl;

static bool maybe_applied(int rc)
{
	return rc == STORE_EUNKNOWN;
}

struct tally {
	int ok, conflicts, unknown, failed;
	int by_code[STORE_ERR_COUNT];
	char msg[4][600];	/* the first causes of other failures */
	int n_msg;
};

static void tally_add(struct tally *t, int rc, const struct store_error *e)
{
	int i;

	if (rc == 0) {
		t->ok++;
		return;
	}
	if (rc == STORE_EPRECONDITION || rc == STORE_ECONFLICT) {
		t->conflicts++;
		return;
	}
	if (maybe_applied(rc))
		t->unknown++;
	else
		t->failed++;
	if (rc < 0 && rc > -STORE_ERR_COUNT)
		t->by_code[-rc]++;
	for (i = 0; i < t->n_msg; i++)
		if (!strcmp(t->msg[i], e->msg))
			return;
	if (t->n_msg < 4)
		snprintf(t->msg[t->n_msg++], sizeof(t->msg[0]), "%s: %s",
			 store_errname(rc), e->msg);
}

static void tally_sum(struct tally *sum, const struct tally *t)
{
	int i;

	sum->ok += t->ok;
	sum->conflicts += t->conflicts;
	sum->unknown += t->unknown;
	sum->failed += t->failed;
	for (i = 0; i < STORE_ERR_COUNT; i++)
		sum->by_code[i] += t->by_code[i];
	for (i = 0; i < t->n_msg && sum->n_msg < 4; i++)
		snprintf(sum->msg[sum->n_msg++], sizeof(sum->msg[0]), "%s",
			 t->msg[i]);
}

static void tally_print(const char *what, const struct tally *t)
{
	int i;

	tap_diag("%s: %d ok, %d conflicts, %d unknown, %d failed", what, t->ok,
		 t->conflicts, t->unknown, t->failed);
	for (i = 1; i < STORE_ERR_COUNT; i++)
		if (t->by_code[i])
			tap_diag("  %d x %s", t->by_code[i],
				 store_errname(-i));
	for (i = 0; i < t->n_msg; i++)
		tap_diag("  e.g. %s", t->msg[i]);
}

struct worker {
	struct store *s;
	int id;
	volatile bool *stop;
	long long deadline;
	struct tally t;
	/* ledger workers */
	int n;
	struct entry {
		char kind;	/* 'c'reate, 'd'elete, 'm'ove */
		int i;
		int rc;
	} ledger[LEDGER_MAX];
};

static bool stopping(struct worker *w)
{
	return __atomic_load_n(w->stop, __ATOMIC_ACQUIRE) ||
	       util_now_ms() > w->deadline;
}

static int increment(void *arg, const struct store_kv *cur,
		     struct store_update *out)
{
	long long n = 0;
	char *end;

	if (cur && cur->value_len) {
		n = strtoll(cur->value, &end, 10);
		if (*end)
			return STORE_EBADREPLY;
	}
	out->value = util_fmt("%lld", n + 1);
	out->value_len = strlen(out->value);
	return 0;
}

/* The pinned loop of docs/semantics.md, in C: read, then a commit based on it. */
static void *counter_main(void *arg)
{
	struct worker *w = arg;

	while (!stopping(w)) {
		struct store_error err = { 0 };
		struct store_preconditions pre = { 0 };
		struct store_kv kv;
		int rc;

		rc = store_get(w->s, "counter", 7, STORE_READ_QUORUM, &kv,
			       &err);
		if (rc) {
			util_sleep_ms(10);
			continue;
		}
		pre.mod_revision = kv.mod_revision;
		rc = store_guaranteed_update(w->s, "counter", 7, false, &pre,
					     &kv, increment, NULL, NULL, &err);
		store_kv_release(&kv);
		tally_add(&w->t, rc, &err);
		if (rc == 0)
			__atomic_add_fetch(&increments_ok, 1,
					   __ATOMIC_RELEASE);
	}
	return NULL;
}

static int key_of(char *buf, size_t size, char kind, int id, int i)
{
	return snprintf(buf, size, "%c-%d-%d", kind, id, i);
}

/* Creates @key until it is there; its revision, or 0 if it cannot. */
static int64_t make_key(struct worker *w, const char *key)
{
	struct store_error err = { 0 };
	int64_t rev = 0;
	int rc;

	while (!stopping(w)) {
		rc = store_create(w->s, key, strlen(key), "v", 1, 0, &rev,
				  &err);
		if (rc == 0)
			return rev;
		if (rc != STORE_EUNREACHABLE)
			return 0;	/* unknown: not a clean start */
		util_sleep_ms(10);
	}
	return 0;
}

/* Creates, deletes with a precondition, renames: one call of each kind
 * on keys of its own, its result in the ledger. */
static void *ledger_main(void *arg)
{
	struct worker *w = arg;
	bool v3 = strcmp(store_backend_name(w->s), "etcd3") == 0;
	int i;

	for (i = 0; !stopping(w) && w->n < LEDGER_MAX; i++) {
		struct store_error err = { 0 };
		struct store_preconditions pre = { 0 }, to = { 0 };
		struct entry *e = &w->ledger[w->n];
		char key[64], dst[64];
		int64_t rev;

		e->i = i;
		e->kind = "cdm"[i % (v3 ? 3 : 2)];
		key_of(key, sizeof(key), e->kind, w->id, i);
		if (e->kind == 'c') {
			e->rc = store_create(w->s, key, strlen(key), "v", 1, 0,
					     &rev, &err);
		} else {
			pre.mod_revision = make_key(w, key);
			if (!pre.mod_revision)
				continue;
			if (e->kind == 'd') {
				e->rc = store_delete(w->s, key, strlen(key),
						     &pre, NULL, &rev, &err);
			} else {
				key_of(dst, sizeof(dst), 'n', w->id, i);
				to.mod_revision = STORE_REV_ABSENT;
				e->rc = store_move(w->s, key, strlen(key), &pre,
						   dst, strlen(dst), &to, NULL,
						   0, &rev, &err);
			}
		}
		tally_add(&w->t, e->rc, &err);
		w->n++;
	}
	return NULL;
}

static bool has_key(const struct store_list *l, const char *key)
{
	size_t i, n = strlen(key);

	for (i = 0; i < l->n; i++)
		if (l->kvs[i].key_len == n && !memcmp(l->kvs[i].key, key, n))
			return true;
	return false;
}

/* Every call of the ledger said what etcd did. */
static bool ledger_holds(const struct worker *w, const struct store_list *l)
{
	char key[64], dst[64];
	bool src, moved, ok = true;
	int k;

	for (k = 0; k < w->n; k++) {
		const struct entry *e = &w->ledger[k];
		bool applied;

		key_of(key, sizeof(key), e->kind, w->id, e->i);
		key_of(dst, sizeof(dst), 'n', w->id, e->i);
		src = has_key(l, key);
		moved = has_key(l, dst);
		if (e->kind == 'c') {
			applied = src;
		} else if (e->kind == 'd') {
			applied = !src;
		} else {
			if (src == moved) {
				tap_diag("rename of '%s': source %s, target %s",
					 key, src ? "there" : "gone",
					 moved ? "there" : "absent");
				ok = false;
				continue;
			}
			applied = moved;
		}
		if (maybe_applied(e->rc) || applied == (e->rc == 0))
			continue;
		tap_diag("'%s': the %s returned %d (%s) but etcd %s it", key,
			 e->kind == 'c' ? "create" : e->kind == 'd' ?
			 "delete" : "rename", e->rc, store_errname(e->rc),
			 applied ? "applied" : "did not apply");
		ok = false;
	}
	return ok;
}

static struct store *make(enum store_api api)
{
	struct store_config cfg = { 0 };
	struct store_error err = { 0 };
	struct store *s;

	cfg.api = api;
	cfg.endpoints = cl.all;
	cfg.prefix = api == STORE_API_V2 ? "/leader-test/" : "leader-test/";
	cfg.connect_timeout_ms = 1000;
	cfg.request_timeout_ms = 5000;
	s = store_new(&cfg, &err);
	if (!s)
		tap_diag("store_new('%s'): %s", cl.all, err.msg);
	return s;
}

/* The member (1..n) whose URL @ep is, or 0. */
static int member_of(const char *ep)
{
	int k;

	for (k = 0; k < cl.n; k++)
		if (!strcmp(cl.eps[k], ep))
			return k + 1;
	return 0;
}

/*
 * The store's requests so far that a kill can cost: those sent again
 * (to another member, or a write whose answer was lost) and those that
 * failed for want of an answer (nothing sent, timed out, answer lost,
 * unparsable).  A refused compare, an absent or present key are the
 * writers' own contention, which goes on without kills.
 */
static uint64_t disturbed(struct store *s)
{
	static const int errs[] = { STORE_EUNREACHABLE, STORE_ETIMEOUT,
				    STORE_EUNKNOWN, STORE_EBADREPLY };
	struct store_stats st;
	uint64_t n = 0;
	size_t i;

	store_stats(s, &st);
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		n += st.errors[-errs[i]];
	return n + st.retries;
}

/*
 * Kills the leader @k, lets the writers run on, starts it again; *@cost:
 * how many of @s's requests the kill cost their answer, counted from the
 * kill to the restart, after the leader's transfer settled.
 */
static bool kill_leader(struct store *s, int k, uint64_t *cost)
{
	uint64_t before, after;

	CHECK(util_cluster_cmd(&cl, "make-leader", "%d %d", cl.n, k) == 0);
	util_sleep_ms(1000);
	before = disturbed(s);
	CHECK(util_cluster_cmd(&cl, "kill-member", "%d", k) == 0);
	util_sleep_ms(4000);
	after = disturbed(s);
	tap_diag("the kill of member %d cost %llu requests their answer", k,
		 (unsigned long long)(after - before));
	CHECK(util_cluster_cmd(&cl, "restart-member", "%d", k) == 0);
	util_sleep_ms(1000);
	*cost = after - before;
	return true;
}

/*
 * A kill must cost some requests their answer, else it tested nothing
 * (the writers were not talking to the cluster, or the kill missed).  A
 * follower may hold what it forwarded until the new leader is elected,
 * and answer it then, untouched: such a kill is done again, three times
 * at most.  @follower: the leader killed is not the member the store
 * talks to (else it is that member).
 */
static bool kill_until_felt(struct store *s, bool follower)
{
	uint64_t cost = 0;
	int tries, k;

	for (tries = 0; tries < 3 && cost == 0; tries++) {
		k = member_of(store_endpoint(s));
		if (follower)
			k = k % cl.n + 1;
		CHECK(kill_leader(s, k, &cost));
	}
	CHECK(cost > 0);
	return true;
}

static bool across_kills(enum store_api api)
{
	static struct worker w[N_COUNTERS + N_LEDGERS];
	pthread_t th[N_COUNTERS + N_LEDGERS];
	struct tally counters = { 0 }, ledgers = { 0 };
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	volatile bool stop = false;
	struct store_kv kv;
	struct store *s;
	long long value;
	int i, rc;
	bool ok = true;

	s = make(api);
	CHECK(s);
	__atomic_store_n(&increments_ok, 0, __ATOMIC_RELEASE);
	rc = store_create(s, "counter", 7, "0", 1, 0, NULL, &err);
	if (rc)
		tap_diag("create the counter: %s", err.msg);
	CHECK(rc == 0);
	for (i = 0; i < N_COUNTERS + N_LEDGERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].s = s;
		w[i].id = i;
		w[i].stop = &stop;
		w[i].deadline = util_now_ms() + RUN_LIMIT_MS;
		CHECK(pthread_create(&th[i], NULL, i < N_COUNTERS ?
				     counter_main : ledger_main, &w[i]) == 0);
	}
	/* the store talks to member 1 first: make it the leader, kill it */
	ok = kill_until_felt(s, false);
	/* now it talks to another member: kill a leader that is not it */
	if (ok)
		ok = kill_until_felt(s, true);
	while (__atomic_load_n(&increments_ok, __ATOMIC_ACQUIRE) <
		       MIN_INCREMENTS &&
	       util_now_ms() < w[0].deadline)
		util_sleep_ms(50);
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	for (i = 0; i < N_COUNTERS + N_LEDGERS; i++)
		pthread_join(th[i], NULL);
	CHECK(ok);

	for (i = 0; i < N_COUNTERS; i++)
		tally_sum(&counters, &w[i].t);
	for (; i < N_COUNTERS + N_LEDGERS; i++)
		tally_sum(&ledgers, &w[i].t);
	tally_print("increments", &counters);
	tally_print("creates, deletes, renames", &ledgers);

	CHECK(store_get(s, "counter", 7, STORE_READ_QUORUM, &kv, &err) == 0);
	value = strtoll(kv.value, NULL, 10);
	store_kv_release(&kv);
	tap_diag("the counter is %lld after %d increments that succeeded",
		 value, counters.ok);
	CHECK(counters.ok >= MIN_INCREMENTS);
	CHECK(value >= counters.ok);
	CHECK(value <= counters.ok + counters.unknown);

	CHECK(store_list(s, "", 0, STORE_READ_QUORUM, &l, &err) == 0);
	for (i = N_COUNTERS; i < N_COUNTERS + N_LEDGERS; i++)
		if (!ledger_holds(&w[i], &l))
			ok = false;
	store_list_release(&l);
	store_free(s);
	return ok;
}

int main(void)
{
	tap_plan(2);
	if (!util_cluster_start(&cl, "leader", N_MEMBERS,
				"--enable-v2=true")) {
		printf("Bail out! no cluster\n");
		return 1;
	}
	tap_ok(across_kills(STORE_API_V3), "v3: every write across two "
	       "leader kills says what etcd did");
	tap_ok(across_kills(STORE_API_V2), "v2: every write across two "
	       "leader kills says what etcd did");
	util_cluster_stop(&cl);
	return tap_failed ? 1 : 0;
}
