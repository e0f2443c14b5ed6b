/*
 * cases.h - the store cases that both backends must pass alike, written
 * once and run against each (test_store_kv.c, test_store_update.c and
 * test_store_watch.c for v3; test_store_v2.c and test_store_v2_watch.c
 * for v2)
 *
 * A case sees its backend only through a struct witness: how to open a
 * store on it, and how to read and write etcd with a client that is not
 * the code under test (etcdctl for v3, tests/integration/ctl.c; curl on
 * /v2/keys for v2, tests/integration/v2keys.c).  Where the backends
 * differ in what a case may expect, the witness says so in a field of its
 * own, so the difference stays explicit; cases that differ in more than
 * that stay in their backend's file.
 *
 * What it cannot do: run a case whose steps differ by backend.
 */
#ifndef ETCDFS_TESTS_CASES_H
#define ETCDFS_TESTS_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct witness {
	enum store_api api;
	/* the etcd with-etcd started, set by ctl_setup / v2keys_setup */
	const char *endpoint;
	struct store *(*open)(const char *prefix);
	/* writes @key = @value; the revision (v2: index) it made, 0 if not */
	int64_t (*put)(const char *key, const char *value);
	bool (*del)(const char *key);
	bool (*has)(const char *key, const char *value);
	bool (*lacks)(const char *key);
	int64_t (*mod)(const char *key);	/* 0: absent, -1: error */
	int64_t (*revision)(void);	/* v2: the X-Etcd-Index */
	uint64_t (*member_id)(void);	/* the one member's, 0 on error */

	/* what differs */
	/*
	 * try_update calls when every attempt conflicts, with
	 * max_update_retries 3: v2 stops at 3; v3 at 3, or 4 when the
	 * last conflict is found by the re-read rather than the commit
	 */
	int exhausted_calls_min, exhausted_calls_max;
	/* a watch's events carry version and create_revision (v3) */
	bool ev_versions;
	/* a watch's events carry the revision they were read at (v2) */
	bool ev_revision;
	/* the watch from r0 + 1 may start after the first two puts (v2: its
	 * history is there at once) */
	bool watch_history_early;
};

extern struct witness witness_v3;	/* ctl.c */
extern struct witness witness_v2;	/* v2keys.c */

/*
 * A try_update for the cases: records what it was called with, makes
 * another client's write under it (on call @change_on, or every call
 * with -1) through the witness, and returns the value with "+u" added.
 */
struct cases_upd {
	const struct witness *w;
	int calls;
	int change_on;
	const char *full_key;	/* for the witness */
	int fail_with;		/* returned from try_update when not 0 */
	bool same;		/* return the current value unchanged */
	int64_t lease;		/* to return */
	int max_calls;		/* the case's own bound (0: none) */
	char seen[8][64];	/* the values try_update was called with */
	bool seen_absent[8];
};

int cases_upd_fn(void *arg, const struct store_kv *cur,
		 struct store_update *out);

/* One case: true if it passed. */
struct cases_case {
	const char *name;
	bool (*fn)(void);
};

/*
 * Each makes @w the witness of its cases and returns them, the last one's
 * name NULL; CASES_RUN runs them as TAP cases of the calling program
 * (tap.h's count is the program's own).
 */
/* delete, revision, members */
const struct cases_case *cases_kv(const struct witness *w);
/* update_conflict_retried, update_conflict_exhausted, concurrent_updates */
const struct cases_case *cases_update(const struct witness *w);
/* watch_order */
const struct cases_case *cases_watch(const struct witness *w);

#define CASES_RUN(table)						\
	do {								\
		for (const struct cases_case *c_ = (table); c_->name;	\
		     c_++)						\
			tap_ok(c_->fn(), "%s", c_->name);		\
	} while (0)

#endif /* ETCDFS_TESTS_CASES_H */
