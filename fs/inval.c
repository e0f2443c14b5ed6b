/*
 * inval.c - lists of invalidation records (fs/inval.h)
 *
 * What it cannot do: send them; kernel.c does, with no lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "inval.h"

int inval_add(struct inval_list *l, bool entry, uint64_t id,
	      const char *name, size_t len)
{
	struct inval *iv;

	if (!l)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct inval *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	iv = &l->v[l->n];
	iv->entry = entry;
	iv->id = id;
	iv->name = NULL;
	iv->name_len = 0;
	if (entry) {
		iv->name = malloc(len + 1);
		if (!iv->name)
			return -ENOMEM;
		memcpy(iv->name, name, len);
		iv->name[len] = '\0';
		iv->name_len = len;
	}
	l->n++;
	return 0;
}

void inval_drop_entries(struct inval_list *l)
{
	size_t i, k = 0;

	for (i = 0; i < l->n; i++) {
		if (l->v[i].entry)
			free(l->v[i].name);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
}

void inval_release(struct inval_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}
