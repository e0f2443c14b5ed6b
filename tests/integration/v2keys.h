/*
 * v2keys.h - the v2 store tests' witness, over /v2/keys (see v2keys.c)
 *
 * Keys are full etcd keys (with the test's prefix); the values returned
 * are etcd's bytes, NUL-terminated past their end.
 */
#ifndef ETCDFS_TESTS_V2KEYS_H
#define ETCDFS_TESTS_V2KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

extern const char *v2keys_endpoint;	/* the etcd with-etcd started */
extern char v2keys_ctl[512];	/* etcdctl in its v2 mode, up to the
				 * subcommand */

/*
 * Reads the environment tests/lib/with-etcd sets (and util_tests_dir,
 * util_scratch) and checks that the etcd serves /v2/keys; false, with a
 * "Bail out!", if not.
 */
bool v2keys_setup(void);

struct v2keys_kv {
	char *value;
	size_t value_len;
	int64_t mod;		/* modifiedIndex */
	int64_t create;		/* createdIndex */
	int64_t ttl;		/* the seconds left; 0: none */
	bool dir;
};

/* What etcd holds at @key: 1 (into @out), 0 absent, -1 on failure. */
int v2keys_get(const char *key, size_t key_len, struct v2keys_kv *out);
void v2keys_kv_release(struct v2keys_kv *w);

/* True if etcd holds @key (a key, not a directory) with @value. */
bool v2keys_has(const char *key, size_t key_len, const char *value,
		size_t value_len);
/* True if etcd does not hold @key. */
bool v2keys_lacks(const char *key, size_t key_len);
/* The modifiedIndex of the text key @key; 0 if absent or on failure. */
int64_t v2keys_mod(const char *key);
/* Puts @value at the text key @key: its new modifiedIndex, 0 on failure. */
int64_t v2keys_put(const char *key, const char *value);
/* Sends @method @key?@query with no value; true if etcd said 2xx. */
bool v2keys_do(const char *method, const char *key, const char *query);
/* etcd's index now (X-Etcd-Index of a quorum GET); -1 on failure. */
int64_t v2keys_index(void);

/* A v2 store of @prefix on v2keys_endpoint, with a diagnostic if it fails. */
struct store *v2keys_store_open(const char *prefix);

#endif /* ETCDFS_TESTS_V2KEYS_H */
