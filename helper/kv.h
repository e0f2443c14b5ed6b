/*
 * kv.h - the helper's values: one key (struct store_kv), a list of keys,
 * a cluster member, and how to copy and free them
 *
 * Below everything else in helper/ but errors.h: the store, the
 * transport's users and the codecs all make and free these the one way.
 * Ownership: a struct store_kv owns its key and value; a list owns its
 * kvs; functions ending in _own steal what they are given.
 *
 * What it cannot do: compare keys by anything but their bytes.
 */
#ifndef ETCDFS_KV_H
#define ETCDFS_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One key.  key and value are owned by the struct and are NUL-terminated
 * past their length, so text values can be used as C strings.  A revision
 * of 0 means "not known" (a DELETE event carries only mod_revision).
 */
struct store_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

/* Frees what @kv owns and zeroes it; @kv may be NULL or zeroed already. */
void store_kv_release(struct store_kv *kv);

/* Deep copy; returns 0 or STORE_EINTERNAL. */
int store_kv_copy(struct store_kv *dst, const struct store_kv *src);

/* Moves @src into @dst (NULL: @src is freed); @src is zeroed. */
void store_kv_move(struct store_kv *dst, struct store_kv *src);

struct store_list {
	struct store_kv *kvs;	/* sorted by key, bytewise */
	size_t n;
	size_t cap;
	int64_t revision;	/* the one revision all pages were read at */
};

void store_list_release(struct store_list *l);

/* Appends @kv to @l, stealing its buffers (@kv is zeroed); 0 or EINTERNAL. */
int store_list_push_own(struct store_list *l, struct store_kv *kv);

/* Frees @n kvs and the array. */
void store_kvs_free(struct store_kv *kvs, size_t n);

struct store_member {
	uint64_t id;
	char *name;
	char **client_urls;
	size_t n_client_urls;
};

void store_members_free(struct store_member *members, size_t n);

/* A malloc()ed copy of @len bytes at @p, NUL-terminated past them. */
char *store_memdup(const char *p, size_t len);

#endif /* ETCDFS_KV_H */
