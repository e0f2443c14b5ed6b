/*
 * kv.c - copying and freeing the helper's values (see kv.h)
 *
 * What it cannot do: anything that needs the store or the network.
 */
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "kv.h"

char *store_memdup(const char *p, size_t len)
{
	char *d = malloc(len + 1);

	if (!d)
		return NULL;
	if (len)
		memcpy(d, p, len);
	d[len] = '\0';
	return d;
}

void store_kv_release(struct store_kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

int store_kv_copy(struct store_kv *dst, const struct store_kv *src)
{
	*dst = *src;
	dst->key = NULL;
	dst->value = NULL;
	if (src->key) {
		dst->key = store_memdup(src->key, src->key_len);
		if (!dst->key)
			goto err;
	}
	if (src->value) {
		dst->value = store_memdup(src->value, src->value_len);
		if (!dst->value)
			goto err;
	}
	return 0;
err:
	store_kv_release(dst);
	return STORE_EINTERNAL;
}

void store_kv_move(struct store_kv *dst, struct store_kv *src)
{
	if (dst) {
		*dst = *src;
		memset(src, 0, sizeof(*src));
	} else {
		store_kv_release(src);
	}
}

void store_kvs_free(struct store_kv *kvs, size_t n)
{
	size_t i;

	if (!kvs)
		return;
	for (i = 0; i < n; i++)
		store_kv_release(&kvs[i]);
	free(kvs);
}

void store_list_release(struct store_list *l)
{
	if (!l)
		return;
	store_kvs_free(l->kvs, l->n);
	memset(l, 0, sizeof(*l));
}

int store_list_push_own(struct store_list *l, struct store_kv *kv)
{
	struct store_kv *p;
	size_t cap;

	if (l->n == l->cap) {
		cap = l->cap ? l->cap * 2 : 16;
		if (cap > SIZE_MAX / sizeof(*p))
			return STORE_EINTERNAL;
		p = realloc(l->kvs, cap * sizeof(*p));
		if (!p)
			return STORE_EINTERNAL;
		l->kvs = p;
		l->cap = cap;
	}
	l->kvs[l->n++] = *kv;
	memset(kv, 0, sizeof(*kv));
	return 0;
}

void store_members_free(struct store_member *members, size_t n)
{
	size_t i, j;

	if (!members)
		return;
	for (i = 0; i < n; i++) {
		free(members[i].name);
		for (j = 0; j < members[i].n_client_urls; j++)
			free(members[i].client_urls[j]);
		free(members[i].client_urls);
	}
	free(members);
}
