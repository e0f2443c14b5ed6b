/*
 * seen.c - the mirror's ring of the last SEEN_RING changes the watch
 * delivered: a hash of the key, the revision, and when it came
 *
 * Filled by the watch's callback (live.c), read by user.etcd.history
 * (history.c), both with fs->lock held, which guards fs->seen.  Made at
 * the first change: a mount nobody changes pays nothing.
 *
 * What it cannot do: tell two keys of the same hash apart (FNV-1a, 64
 * bits), or remember more than SEEN_RING changes.
 */
#include <errno.h>
#include <stdlib.h>

#include "fs_i.h"
#include "seen.h"

struct seen_ring {
	struct seen_change ring[SEEN_RING];
	size_t next;
	size_t n;
};

/* FNV-1a: the ring keeps no keys, only this. */
static uint64_t key_hash(const char *key, size_t len)
{
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 1099511628211ULL;
	}
	return h;
}

void seen_note(struct fs *fs, const char *key, size_t key_len, int64_t rev)
{
	struct seen_ring *s = fs->seen;
	struct seen_change *e;

	if (!s)
		s = fs->seen = calloc(1, sizeof(*s));
	if (!s)
		return;
	e = &s->ring[s->next];
	e->hash = key_hash(key, key_len);
	e->rev = rev;
	fs_now(&e->at);
	s->next = (s->next + 1) % SEEN_RING;
	if (s->n < SEEN_RING)
		s->n++;
}

int seen_of_key(struct fs *fs, const char *key, size_t key_len,
		struct seen_change **out, size_t *n)
{
	const struct seen_ring *s = fs->seen;
	uint64_t hash = key_hash(key, key_len);
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	for (i = 0; s && i < s->n; i++)
		k += s->ring[i].hash == hash;
	if (!k)
		return 0;
	*out = malloc(k * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < s->n; i++)
		if (s->ring[i].hash == hash)
			(*out)[(*n)++] = s->ring[i];
	return 0;
}

void seen_free(struct fs *fs)
{
	free(fs->seen);
	fs->seen = NULL;
}
