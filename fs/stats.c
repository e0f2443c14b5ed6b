/*
 * stats.c - user.etcd.stats on the mount's root: counters a person can
 * read, one "name value" a line
 *
 * The store's counters (helper/store_stats.c: requests by kind, errors
 * by kind, retries, conflicts, bytes), the watch's (live.c's
 * fs->mirror.watch_count: events delivered, how far the mirror lags behind
 * them, relists), the FUSE requests by
 * operation (gate.c), the values pushed into the kernel's page cache
 * (fuse_stored), -o quorum's barrier (quorum.c) and what the mirror
 * holds.  Every counter is an
 * atomic or read under fs->lock, so reading costs no request to etcd.
 *
 * What it cannot do: say how far the mirror lags behind etcd itself,
 * which would take a request: watch_lag is how many revisions the watch
 * delivered that the mirror has not applied yet (changes waiting for a
 * write of the mount's own to be answered, live.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "fs_i.h"
#include "ops.h"
#include "gate.h"
#include "quorum.h"

void fs_stats_stored(struct fs *fs)
{
	atomic_fetch_add_explicit(&fs->gate->stored, 1, memory_order_relaxed);
}

struct out {
	char *buf;
	size_t len, cap;
	bool nomem;
};

__attribute__((format(printf, 2, 3)))
static void line(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->nomem = true;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		char *nb = realloc(o->buf, o->cap * 2 + (size_t)n);

		if (!nb) {
			o->nomem = true;
			return;
		}
		o->buf = nb;
		o->cap = o->cap * 2 + (size_t)n;
	}
}

ssize_t fs_stats_text(struct fs *fs, char **big)
{
	struct fs_gate *g = fs->gate;
	struct quorum_counters qc;
	struct store_stats st;
	struct out o = { .cap = 4096 };
	int64_t lag;
	unsigned i;

	o.buf = malloc(o.cap);
	if (!o.buf)
		return -ENOMEM;
	o.buf[0] = '\0';
	store_stats(fs->store, &st);
	for (i = 0; i < STORE_REQ_COUNT; i++)
		line(&o, "etcd_requests_%s %" PRIu64 "\n", store_req_name(i),
		     st.requests[i]);
	for (i = 1; i < STORE_ERR_COUNT; i++) {
		char name[40];
		size_t j;

		/* "not found" -> not_found */
		snprintf(name, sizeof(name), "%s", store_errname(-(int)i));
		for (j = 0; name[j]; j++)
			if (name[j] == ' ')
				name[j] = '_';
		line(&o, "etcd_errors_%s %" PRIu64 "\n", name, st.errors[i]);
	}
	line(&o, "etcd_retries %" PRIu64 "\n", st.retries);
	line(&o, "etcd_conflicts %" PRIu64 "\n", st.conflicts);
	line(&o, "etcd_bytes_sent %" PRIu64 "\n", st.bytes_sent);
	line(&o, "etcd_bytes_received %" PRIu64 "\n", st.bytes_received);
	line(&o, "watch_events %" PRIu64 "\n",
	     (uint64_t)atomic_load(&fs->mirror.watch_count.events));
	/* fs->lock held by the caller */
	lag = (int64_t)atomic_load(&fs->mirror.watch_count.rev) -
	      fs->tree.revision;
	line(&o, "watch_lag %" PRId64 "\n", lag > 0 ? lag : 0);
	line(&o, "watch_relists %" PRIu64 "\n",
	     (uint64_t)atomic_load(&fs->mirror.watch_count.relists));
	line(&o, "echo_pending %zu\n", echo_pending(fs));
	line(&o, "echo_follower %d\n", echo_follower(fs) ? 1 : 0);
	line(&o, "echo_dirs_walked %" PRIu64 "\n", fs->echo.follow.walked_n);
	line(&o, "echo_dirs_unwalked %" PRIu64 "\n",
	     fs->echo.follow.unwalked_n);
	for (i = 0; i < GATE_NOPS; i++)
		line(&o, "fuse_%s %" PRIu64 "\n", fs_gate_op_name(i),
		     fs_gate_op_count(fs, i));
	/* values the mount pushed into the page cache (file.c), no READ */
	line(&o, "fuse_stored %" PRIu64 "\n",
	     (uint64_t)atomic_load(&g->stored));
	quorum_counters(fs, &qc);
	line(&o, "quorum_requests %" PRIu64 "\n", qc.requests);
	line(&o, "quorum_waits %" PRIu64 "\n", qc.waits);
	line(&o, "quorum_progress_requests %" PRIu64 "\n", qc.progress);
	line(&o, "quorum_failures %" PRIu64 "\n", qc.failures);
	line(&o, "mirror_names %zu\n", fs->tree.nnodes);
	line(&o, "mirror_value_bytes %zu\n", fs->tree.value_bytes);
	if (o.nomem) {
		free(o.buf);
		return -ENOMEM;
	}
	*big = o.buf;
	return (ssize_t)o.len;
}
