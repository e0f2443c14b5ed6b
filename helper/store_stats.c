/*
 * store_stats.c - what the store counts of its requests, and -d's trace
 * of each (see store_stats() in store.h)
 *
 * The backends call store_note() once per request they send (each
 * member tried is one), with what it sent and received; the store's
 * logic calls store_note_retry() and store_note_conflict().  Counters are
 * atomics, updated without a lock; a reader sees each one exact, not
 * all of them at one instant.
 *
 * What it cannot do: count the bytes of HTTP framing, TLS or gRPC frame
 * headers: only the messages.
 */
#include <string.h>
#include <time.h>

#include "store_i.h"
#include "thread.h"

static const char *const req_names[STORE_REQ_COUNT] = {
	[STORE_REQ_READ] = "read",
	[STORE_REQ_WRITE] = "write",
	[STORE_REQ_LEASE] = "lease",
	[STORE_REQ_MEMBERS] = "members",
	[STORE_REQ_STATUS] = "status",
	[STORE_REQ_WATCH] = "watch",
};

const char *store_req_name(int kind)
{
	return kind >= 0 && kind < STORE_REQ_COUNT ? req_names[kind] : "?";
}

static void add(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

void store_note(struct store *s, enum store_req kind, const char *method,
		const char *key, size_t key_len, int rc, int64_t start_us,
		size_t sent, size_t received)
{
	struct store_priv *p = store_priv(s);
	char k[256];

	add(&p->n_requests[kind], 1);
	if (rc < 0 && rc > -STORE_ERR_COUNT)
		add(&p->n_errors[-rc], 1);
	add(&p->n_sent, sent);
	add(&p->n_received, received);
	if (!s->cfg.trace)
		return;
	store_escape_key(k, sizeof(k), key, key ? key_len : 0);
	s->cfg.trace(method, k, rc, (long)(thread_now_us() - start_us));
}

void store_note_received(struct store *s, size_t n)
{
	add(&store_priv(s)->n_received, n);
}

void store_note_retry(struct store *s)
{
	add(&store_priv(s)->n_retries, 1);
}

void store_note_conflict(struct store *s)
{
	add(&store_priv(s)->n_conflicts, 1);
}

static uint64_t get(uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void store_stats(struct store *s, struct store_stats *out)
{
	struct store_priv *p = store_priv(s);
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < STORE_REQ_COUNT; i++)
		out->requests[i] = get(&p->n_requests[i]);
	for (i = 0; i < STORE_ERR_COUNT; i++)
		out->errors[i] = get(&p->n_errors[i]);
	out->retries = get(&p->n_retries);
	out->conflicts = get(&p->n_conflicts);
	out->bytes_sent = get(&p->n_sent);
	out->bytes_received = get(&p->n_received);
}
