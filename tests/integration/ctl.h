/*
 * ctl.h - etcdctl, the v3 store tests' witness (see ctl.c)
 *
 * Every key given to these helpers is text a shell can take in single
 * quotes; the values they return are etcd's bytes, NUL-terminated past
 * their end.
 */
#ifndef ETCDFS_TESTS_CTL_H
#define ETCDFS_TESTS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

extern const char *ctl_endpoint;	/* the etcd with-etcd started */
extern char ctl_cmd[512];	/* etcdctl against it, up to the subcommand */

/*
 * Reads the environment tests/lib/with-etcd sets (and util_tests_dir,
 * util_scratch) and keeps etcdctl from picking up endpoints or
 * credentials from outside; false, with a "Bail out!", if it is not there.
 */
bool ctl_setup(void);

struct ctl_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

struct ctl_list {
	struct ctl_kv *kvs;
	size_t n;
	int64_t count;		/* "count": all the keys, even past --limit */
	int64_t revision;
};

/*
 * Runs "@ctl get @args -w json" and parses the answer into @out (released
 * with ctl_list_release).  @ctl is an etcdctl command line up to the
 * subcommand: ctl_cmd, or one for an etcd of a test's own.
 */
bool ctl_range(const char *ctl, const char *args, struct ctl_list *out);
void ctl_list_release(struct ctl_list *l);

/* The text key @key: 1 found (into @out), 0 absent, -1 on error. */
int ctl_get(const char *key, struct ctl_kv *out);
void ctl_kv_release(struct ctl_kv *c);

/* True if etcd holds @key with the text @value; else says what it holds. */
bool ctl_has(const char *key, const char *value);
/* True if etcd does not hold @key. */
bool ctl_lacks(const char *key);
/* @key's mod_revision; 0 if absent, -1 on error. */
int64_t ctl_mod(const char *key);
bool ctl_put(const char *key, const char *value);
bool ctl_del(const char *key);
/* etcd's current revision; -1 on error. */
int64_t ctl_revision(void);
/* How many range requests etcd has served so far; -1 on error. */
long ctl_range_requests(void);
/*
 * The leases etcd holds, as etcdctl lists them (malloc()ed), or NULL on
 * error; and how many of those in @now are not in @before (two such
 * lists), the last of them in *@id, or -1 if @now is not such a list.
 * Leases that ran out between the two are not counted.
 */
char *ctl_lease_list(void);
long ctl_leases_new(const char *before, const char *now, int64_t *id);

/* A v3 store of @prefix on ctl_endpoint, with a diagnostic if it fails. */
struct store *ctl_store_open(const char *prefix);

#endif /* ETCDFS_TESTS_CTL_H */
