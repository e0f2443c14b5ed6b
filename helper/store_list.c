/*
 * store_list.c - listing a prefix at one revision, a page at a time
 * (store_list_pages, store_list, store_list_stats of helper/store.h)
 *
 * etcd (3.4 to 3.6) walks every key of a range to count it, even when
 * the range has a limit, so paging with the prefix's own range end costs
 * O(n^2 / page).  Here no request walks more than its own range: the
 * first request reads the first page and the count of the whole prefix
 * (one walk), and fixes the revision every later request reads at; the
 * rest of the prefix is cut (helper/store_split.c) into sub-ranges with
 * tight ends, counted with limit-1 ranges in read-only txns of at most
 * STORE_SPANS_PER_REQUEST or the cluster's max_txn_ops
 * (store_backend.count), and each sub-range of at most a page is fetched
 * whole, neighbours merged up to a page; a bigger one is cut again.  A
 * sub-range cut STORE_LIST_DEPTH times, or one that cannot be cut, is
 * paged within its own tight end.  So a listing walks each key about once
 * per level of cutting.  A backend without counts (etcd2, which sends
 * the whole tree in one reply) pages as before.
 *
 * After the first page, a thread of the listing reads the rest while the
 * caller's page function takes in the page before (the mount builds its
 * tree meanwhile, etcd answers the next request): at most LIST_AHEAD
 * pages wait for the caller, and the thread reads one more meanwhile, so
 * a listing holds at most LIST_AHEAD + 2 pages of keys, plus the bounds
 * of the sub-ranges still to read.  The page function runs on the
 * caller's thread, one page at a time, in order, as before; if it fails,
 * the thread stops at its next page.  That thread cuts and counts, and
 * hands the sub-ranges to fetch, in order, to a second one (at most
 * LIST_JOBS of them wait, their bounds only), so that etcd counts the
 * next sub-ranges while it reads these.
 *
 * If etcd compacts the listing's revision before it is done, the listing
 * starts over at a newer one, STORE_LIST_RESTARTS times at most.
 *
 * What it cannot do: a consistent listing of more than one prefix.
 */
#include <stdlib.h>
#include <string.h>

#include "store_i.h"
#include "thread.h"
#include "store_split.h"

/* A list whose later page was compacted away is read again, this often. */
#define STORE_LIST_RESTARTS		3
/* Pages read ahead of the caller's page function, at most. */
#define LIST_AHEAD			1
/* Sub-ranges counted ahead of the fetches, at most. */
#define LIST_JOBS			64
/* A sub-range is cut again at most this often, then paged. */
#define STORE_LIST_DEPTH		24
/* Cuts of one sub-range: two txns of counts. */
#define STORE_LIST_CUTS			127

/* A sub-range [lo, hi) still to read, with its count. */
struct list_span {
	char *lo;		/* owned */
	size_t lo_len;
	char *hi;		/* owned; NULL: to the end */
	size_t hi_len;
	int64_t count;
	unsigned depth;
};

/* The pages between the listing's thread and the caller's. */
struct list_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a page in or out, done or stop */
	struct store_list page[LIST_AHEAD];	/* a ring */
	bool first[LIST_AHEAD];
	size_t head, n;
	bool done;		/* the thread is over: rc and err are set */
	bool stop;		/* the page function failed: read no more */
	int rc;
	struct store_error err;	/* the thread's */
};

/*
 * The sub-ranges to fetch, from the thread that cuts and counts to the
 * one that fetches: each whole (its count known, at most a page), or
 * paged within its tight end (count -1).
 */
struct list_jobs {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a job in or out, done or stop */
	struct list_span job[LIST_JOBS];	/* a ring */
	size_t head, n;
	bool done;		/* no more jobs: the cutting is over */
	bool stop;		/* the fetching is over: cut no more */
	int fetch_rc;		/* the fetching thread's */
	struct store_error fetch_err;
};

struct lister {
	struct store *s;
	struct list_queue *q;	/* NULL: pages go to the page function */
	struct list_jobs *jq;	/* NULL: sub-ranges fetched in place */
	unsigned flags;
	store_page_fn page;
	void *arg;
	const char *full;	/* the prefix, for messages */
	size_t full_len;
	int64_t rev;		/* 0 until the first reply */
	bool first;		/* the next page is the first */
	struct list_span *stack;	/* the last one is read next */
	size_t n, cap;
	struct list_span pend;	/* neighbours to fetch in one request */
};

static const char list_to_end[1] = { '\0' };

static void span_release(struct list_span *sp)
{
	free(sp->lo);
	free(sp->hi);
	memset(sp, 0, sizeof(*sp));
}

static void lister_reset(struct lister *L)
{
	while (L->n)
		span_release(&L->stack[--L->n]);
	span_release(&L->pend);
}

/* Counts a request that took since @t0 (thread_now_us). */
static void list_stat(struct store *s, uint64_t walked, uint64_t fetched,
		      int64_t t0)
{
	struct store_priv *p = store_priv(s);
	uint64_t us = (uint64_t)(thread_now_us() - t0);

	__atomic_add_fetch(fetched ? &p->list_fetch_us : &p->list_count_us,
			   us, __ATOMIC_RELAXED);
	__atomic_add_fetch(&p->list_requests, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&p->list_walked, walked, __ATOMIC_RELAXED);
	__atomic_add_fetch(&p->list_fetched, fetched, __ATOMIC_RELAXED);
}

void store_list_stats(struct store *s, struct store_list_stats *out)
{
	struct store_priv *p = store_priv(s);

	out->requests = __atomic_load_n(&p->list_requests, __ATOMIC_RELAXED);
	out->walked = __atomic_load_n(&p->list_walked, __ATOMIC_RELAXED);
	out->fetched = __atomic_load_n(&p->list_fetched, __ATOMIC_RELAXED);
	out->count_us = __atomic_load_n(&p->list_count_us, __ATOMIC_RELAXED);
	out->fetch_us = __atomic_load_n(&p->list_fetch_us, __ATOMIC_RELAXED);
}

/*
 * Strips the prefix from out->kvs[from..], dropping the keys outside it;
 * a conforming server never returns one, but the mount must never show one.
 */
static void store_strip_list(struct store *s, struct store_list *out,
			     size_t from)
{
	size_t i, j = from;

	for (i = from; i < out->n; i++) {
		if (!out->kvs[i].key || !store_strip(s, &out->kvs[i])) {
			store_kv_release(&out->kvs[i]);
			continue;
		}
		if (i != j)
			out->kvs[j] = out->kvs[i];
		j++;
	}
	out->n = j;
}

/*
 * Hands @l (released or taken over here) to the caller's page function,
 * or to the queue to it, waiting for room.
 */
static int list_deliver(struct lister *L, struct store_list *l,
			struct store_error *err)
{
	struct list_queue *q = L->q;
	bool first = L->first;
	size_t slot;
	int rc;

	l->revision = L->rev;
	store_strip_list(L->s, l, 0);
	L->first = false;
	if (!q) {
		rc = L->page(L->arg, l, first, err);
		store_list_release(l);
		return rc;
	}
	pthread_mutex_lock(&q->lock);
	while (q->n == LIST_AHEAD && !q->stop)
		pthread_cond_wait(&q->cond, &q->lock);
	if (q->stop) {
		pthread_mutex_unlock(&q->lock);
		store_list_release(l);
		/* the caller returns its page function's error, not this */
		return store_fail(err, STORE_EINTERNAL, L->full, L->full_len,
				  L->rev, "the listing was stopped");
	}
	slot = (q->head + q->n) % LIST_AHEAD;
	q->page[slot] = *l;
	q->first[slot] = first;
	q->n++;
	memset(l, 0, sizeof(*l));
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

static int list_bad(struct lister *L, struct store_error *err,
		    const char *what, long long a, long long b)
{
	return store_fail(err, STORE_EBADREPLY, L->full, L->full_len, L->rev,
			  "%s (%lld, %lld)", what, a, b);
}

/* Pushes [lo, hi) (copied; @hi NULL: to the end) with @count keys. */
static int list_push(struct lister *L, const char *lo, size_t lo_len,
		     const char *hi, size_t hi_len, int64_t count,
		     unsigned depth, struct store_error *err)
{
	struct list_span *sp;
	size_t cap;

	if (L->n == L->cap) {
		cap = L->cap ? 2 * L->cap : 64;
		sp = realloc(L->stack, cap * sizeof(*sp));
		if (!sp)
			return store_enomem(err, lo, lo_len);
		L->stack = sp;
		L->cap = cap;
	}
	sp = &L->stack[L->n];
	memset(sp, 0, sizeof(*sp));
	sp->lo = store_memdup(lo, lo_len);
	sp->hi = hi ? store_memdup(hi, hi_len) : NULL;
	if (!sp->lo || (hi && !sp->hi)) {
		span_release(sp);
		return store_enomem(err, lo, lo_len);
	}
	sp->lo_len = lo_len;
	sp->hi_len = hi ? hi_len : 0;
	sp->count = count;
	sp->depth = depth;
	L->n++;
	return 0;
}

/*
 * Pages through [lo, hi) (@hi NULL: to the end) with a limit, each page
 * starting right after the last key of the one before.  If @may_cut and
 * the backend counts, stops after the first page and leaves the rest on
 * the stack to be cut: that first request is the only one that walks the
 * whole range.
 */
static int list_paged(struct lister *L, const char *lo, size_t lo_len,
		      const char *hi, size_t hi_len, bool may_cut,
		      struct store_error *err)
{
	struct store *s = L->s;
	struct store_list l = { 0 };
	char *start = NULL;
	const struct store_kv *last;
	size_t start_len = 0, got;
	int64_t count, t0;
	bool more;
	int rc;

	for (;;) {
		more = false;
		count = -1;
		t0 = thread_now_us();
		rc = s->be_ops->range(s, start ? start : lo,
				      start ? start_len : lo_len,
				      hi ? hi : list_to_end, hi ? hi_len : 1,
				      L->rev, s->cfg.page_size, L->flags, &l,
				      &more, &count, err);
		if (rc < 0)
			break;
		got = l.n;
		list_stat(s, count >= 0 ? (uint64_t)count : got, got, t0);
		/* a later page's header holds the current revision, not the
		 * one it was read at */
		if (L->rev == 0)
			L->rev = l.revision;
		if (more && (!got || L->rev == 0 ||
			     (count >= 0 && count <= (int64_t)got))) {
			rc = list_bad(L, err, "the server promised more keys "
				      "than it sent or counted", (long long)got,
				      (long long)count);
			break;
		}
		if (more) {
			/* go on right after the last key: that key + "\0" */
			last = &l.kvs[l.n - 1];
			free(start);
			start = malloc(last->key_len + 1);
			if (!start) {
				rc = store_enomem(err, lo, lo_len);
				break;
			}
			memcpy(start, last->key, last->key_len);
			start[last->key_len] = '\0';
			start_len = last->key_len + 1;
		}
		rc = list_deliver(L, &l, err);
		if (rc < 0 || !more)
			break;
		if (may_cut && s->be_ops->count && count >= 0) {
			rc = list_push(L, start, start_len, hi, hi_len,
				       count - (int64_t)got, 0, err);
			break;
		}
	}
	store_list_release(&l);
	free(start);
	return rc;
}

/*
 * Hands @sp (taken over) to the fetching thread: whole if its count is
 * known, else paged.  Waits for room.
 */
static int list_job(struct lister *L, struct list_span *sp,
		    struct store_error *err)
{
	struct list_jobs *jq = L->jq;

	pthread_mutex_lock(&jq->lock);
	while (jq->n == LIST_JOBS && !jq->stop)
		pthread_cond_wait(&jq->cond, &jq->lock);
	if (jq->stop) {
		pthread_mutex_unlock(&jq->lock);
		span_release(sp);
		/* the fetching thread's error is the one returned */
		return store_fail(err, STORE_EINTERNAL, L->full, L->full_len,
				  L->rev, "the listing was stopped");
	}
	jq->job[(jq->head + jq->n) % LIST_JOBS] = *sp;
	jq->n++;
	memset(sp, 0, sizeof(*sp));
	pthread_cond_broadcast(&jq->cond);
	pthread_mutex_unlock(&jq->lock);
	return 0;
}

/* Pages through @sp (taken over) within its end, or hands it over. */
static int list_page_span(struct lister *L, struct list_span *sp,
			  struct store_error *err)
{
	int rc;

	if (L->jq) {
		sp->count = -1;
		return list_job(L, sp, err);
	}
	rc = list_paged(L, sp->lo, sp->lo_len, sp->hi, sp->hi_len, false,
			err);
	span_release(sp);
	return rc;
}

/* Fetches @p (released here), whose count is known, whole. */
static int list_fetch(struct lister *L, struct list_span *p,
		      struct store_error *err)
{
	struct store *s = L->s;
	struct store_list l = { 0 };
	int64_t count = -1, t0 = thread_now_us();
	bool more = false;
	int rc;

	/* a limit of the count: never reached at a fixed revision */
	rc = s->be_ops->range(s, p->lo, p->lo_len,
			      p->hi ? p->hi : list_to_end,
			      p->hi ? p->hi_len : 1, L->rev, (size_t)p->count,
			      L->flags, &l, &more, &count, err);
	if (rc == 0) {
		list_stat(s, (uint64_t)p->count, l.n, t0);
		if (more || (int64_t)l.n != p->count)
			rc = list_bad(L, err, "a range did not hold the keys "
				      "it was counted with", (long long)l.n,
				      (long long)p->count);
	}
	if (rc == 0)
		rc = list_deliver(L, &l, err);
	store_list_release(&l);
	span_release(p);
	return rc;
}

/* Fetches the pending neighbours, or hands them over. */
static int list_flush(struct lister *L, struct store_error *err)
{
	if (L->pend.count == 0)
		return 0;
	if (L->jq)
		return list_job(L, &L->pend, err);
	return list_fetch(L, &L->pend, err);
}

/* Adds @sp (taken over) to the pending neighbours, flushing them if full. */
static int list_pend(struct lister *L, struct list_span *sp,
		     struct store_error *err)
{
	struct list_span *p = &L->pend;
	int rc;

	if (sp->count == 0) {
		span_release(sp);
		return 0;
	}
	if (p->count > 0 &&
	    p->count + sp->count > (int64_t)L->s->cfg.page_size) {
		rc = list_flush(L, err);
		if (rc < 0) {
			span_release(sp);
			return rc;
		}
	}
	if (p->count == 0) {
		*p = *sp;
		memset(sp, 0, sizeof(*sp));
		return 0;
	}
	/* no key between p's last and sp's first: [p.lo, sp.hi) */
	free(p->hi);
	p->hi = sp->hi;
	p->hi_len = sp->hi_len;
	p->count += sp->count;
	sp->hi = NULL;
	span_release(sp);
	return 0;
}

/*
 * Counts @n spans, STORE_SPANS_PER_REQUEST at a time, or fewer if the
 * cluster takes fewer operations a txn (each span is one).
 */
static int list_count(struct lister *L, struct store_span *spans, size_t n,
		      struct store_error *err)
{
	struct store *s = L->s;
	size_t per = STORE_SPANS_PER_REQUEST;
	uint64_t walked;
	int64_t t0;
	size_t i, k, j;
	int rc;

	if (s->cfg.max_txn_ops && s->cfg.max_txn_ops < per)
		per = s->cfg.max_txn_ops;
	for (i = 0; i < n; i += k) {
		t0 = thread_now_us();
		k = n - i < per ? n - i : per;
		rc = s->be_ops->count(s, spans + i, k, L->rev, L->flags, err);
		if (rc < 0) {
			for (j = 0; j < i; j++)
				store_kv_release(&spans[j].first);
			return rc;
		}
		for (walked = 0, j = i; j < i + k; j++)
			walked += (uint64_t)spans[j].count;
		list_stat(s, walked, 0, t0);
	}
	return 0;
}

/*
 * Cuts @sp, counts the parts and pushes those that hold keys, from their
 * first key on; pages @sp if it cannot be cut.
 */
static int list_cut(struct lister *L, struct list_span *sp,
		    struct store_error *err)
{
	struct store_bound b[STORE_LIST_CUTS];
	struct store_span spans[STORE_LIST_CUTS + 1];
	int64_t sum = 0;
	size_t n = 0, i;
	int rc;

	if (store_split_points(sp->lo, sp->lo_len, sp->hi, sp->hi_len,
			       STORE_LIST_CUTS, b, &n) < 0)
		return store_enomem(err, sp->lo, sp->lo_len);
	if (n == 0)
		return list_page_span(L, sp, err);
	for (i = 0; i <= n; i++) {
		spans[i] = (struct store_span){
			.key = i ? b[i - 1].key : sp->lo,
			.key_len = i ? b[i - 1].len : sp->lo_len,
			.range_end = i < n ? b[i].key :
				(sp->hi ? sp->hi : list_to_end),
			.range_end_len = i < n ? b[i].len :
				(sp->hi ? sp->hi_len : 1),
		};
	}
	rc = list_count(L, spans, n + 1, err);
	if (rc < 0)
		goto out;
	/* hostile counts: each checked before it is added, so no overflow */
	for (i = 0; i <= n && rc == 0; i++) {
		if (spans[i].count < 0 || spans[i].count > sp->count - sum)
			rc = list_bad(L, err, "a part of a range counts more "
				      "keys than the range", (long long)
				      spans[i].count, (long long)sp->count);
		else
			sum += spans[i].count;
	}
	if (rc == 0 && sum != sp->count)
		rc = list_bad(L, err, "the counts of a range's parts do not "
			      "add up to its own", (long long)sum,
			      (long long)sp->count);
	/* rightmost first: the leftmost part is read next */
	for (i = n + 1; rc == 0 && i-- > 0;)
		if (spans[i].count > 0)
			rc = list_push(L, spans[i].first.key,
				       spans[i].first.key_len,
				       i < n ? b[i].key : sp->hi,
				       i < n ? b[i].len : sp->hi_len,
				       spans[i].count, sp->depth + 1, err);
	for (i = 0; i <= n; i++)
		store_kv_release(&spans[i].first);
out:
	store_bounds_release(b, n);
	return rc;
}

/* Reads what the first page left on the stack. */
static int list_rest(struct lister *L, struct store_error *err)
{
	struct list_span sp;
	int rc = 0;

	while (rc == 0 && L->n) {
		sp = L->stack[--L->n];
		if (sp.count <= (int64_t)L->s->cfg.page_size) {
			rc = list_pend(L, &sp, err);
			continue;
		}
		rc = list_flush(L, err);
		if (rc == 0 && sp.depth >= STORE_LIST_DEPTH)
			rc = list_page_span(L, &sp, err);
		else if (rc == 0)
			rc = list_cut(L, &sp, err);
		span_release(&sp);
	}
	if (rc == 0)
		rc = list_flush(L, err);
	return rc;
}

/*
 * The fetching thread: each sub-range the cutting hands over, in order,
 * to the page queue, until the cutting is over or either fails.
 */
static void *list_fetcher(void *arg)
{
	struct lister *L = arg;
	struct list_jobs *jq = L->jq;
	struct list_span sp;
	int rc = 0;

	for (;;) {
		pthread_mutex_lock(&jq->lock);
		while (jq->n == 0 && !jq->done)
			pthread_cond_wait(&jq->cond, &jq->lock);
		/* stop: the cutting failed, the listing with it */
		if (jq->n == 0 || jq->stop) {
			pthread_mutex_unlock(&jq->lock);
			break;
		}
		sp = jq->job[jq->head];
		memset(&jq->job[jq->head], 0, sizeof(jq->job[jq->head]));
		jq->head = (jq->head + 1) % LIST_JOBS;
		jq->n--;
		pthread_cond_broadcast(&jq->cond);
		pthread_mutex_unlock(&jq->lock);
		if (sp.count >= 0) {
			rc = list_fetch(L, &sp, &jq->fetch_err);
		} else {
			rc = list_paged(L, sp.lo, sp.lo_len, sp.hi, sp.hi_len,
					false, &jq->fetch_err);
			span_release(&sp);
		}
		if (rc < 0)
			break;
	}
	pthread_mutex_lock(&jq->lock);
	jq->fetch_rc = rc;
	jq->stop = true;
	pthread_cond_broadcast(&jq->cond);
	pthread_mutex_unlock(&jq->lock);
	return NULL;
}

/*
 * Cuts and counts what the first page left on the stack while a thread
 * of its own fetches the sub-ranges: etcd counts the next ones while it
 * reads these.  Without that thread, fetches them in place.
 */
static int list_rest_split(struct lister *L, struct store_error *err)
{
	struct list_jobs jq = { 0 };
	struct thread th;
	size_t i;
	int rc;

	if (pthread_mutex_init(&jq.lock, NULL) != 0)
		return list_rest(L, err);
	if (pthread_cond_init(&jq.cond, NULL) != 0) {
		pthread_mutex_destroy(&jq.lock);
		return list_rest(L, err);
	}
	L->jq = &jq;
	if (thread_start(&th, list_fetcher, L) != 0) {
		L->jq = NULL;
		rc = list_rest(L, err);
		goto out;
	}
	rc = list_rest(L, err);
	pthread_mutex_lock(&jq.lock);
	jq.done = true;
	/* a cut that failed: fetch no more */
	if (rc < 0)
		jq.stop = true;
	pthread_cond_broadcast(&jq.cond);
	pthread_mutex_unlock(&jq.lock);
	thread_stop(&th);
	L->jq = NULL;
	/* the fetches' error first: they are of the earlier keys, and the
	 * cutting stops when they do */
	if (jq.fetch_rc < 0) {
		rc = jq.fetch_rc;
		if (err)
			*err = jq.fetch_err;
	}
	for (i = 0; i < LIST_JOBS; i++)
		span_release(&jq.job[i]);
out:
	pthread_cond_destroy(&jq.cond);
	pthread_mutex_destroy(&jq.lock);
	return rc;
}

/* The listing's thread: the rest of the listing, into the queue. */
static void *list_reader(void *arg)
{
	struct lister *L = arg;
	struct list_queue *q = L->q;
	int rc = list_rest_split(L, &q->err);

	pthread_mutex_lock(&q->lock);
	q->rc = rc;
	q->done = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/*
 * The caller's side: each page of the queue to the page function, in
 * order, until the thread is done and the queue empty, or the function
 * fails (then the thread is told to stop).  The function's rc.
 */
static int list_consume(struct lister *L, struct store_error *err)
{
	struct list_queue *q = L->q;
	struct store_list l;
	bool first;
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (q->n == 0 && !q->done)
			pthread_cond_wait(&q->cond, &q->lock);
		if (q->n == 0)
			break;
		l = q->page[q->head];
		first = q->first[q->head];
		memset(&q->page[q->head], 0, sizeof(q->page[q->head]));
		q->head = (q->head + 1) % LIST_AHEAD;
		q->n--;
		pthread_cond_broadcast(&q->cond);
		pthread_mutex_unlock(&q->lock);
		rc = L->page(L->arg, &l, first, err);
		store_list_release(&l);
		/* only a negative return stops it: never hide the thread's */
		if (rc > 0)
			rc = 0;
		pthread_mutex_lock(&q->lock);
		if (rc < 0) {
			q->stop = true;
			pthread_cond_broadcast(&q->cond);
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

/*
 * Reads what the first page left on the stack in a thread of its own,
 * while the page function takes in the pages; without a thread (none
 * could be started), in this one.
 */
static int list_rest_ahead(struct lister *L, struct store_error *err)
{
	struct list_queue q = { 0 };
	struct thread th;
	size_t i;
	int rc;

	if (pthread_mutex_init(&q.lock, NULL) != 0)
		return list_rest(L, err);
	if (pthread_cond_init(&q.cond, NULL) != 0) {
		pthread_mutex_destroy(&q.lock);
		return list_rest(L, err);
	}
	L->q = &q;
	if (thread_start(&th, list_reader, L) != 0) {
		L->q = NULL;
		rc = list_rest(L, err);
		goto out;
	}
	rc = list_consume(L, err);
	thread_stop(&th);	/* joins: after its request, if in one */
	L->q = NULL;
	if (rc == 0 && q.rc < 0) {
		rc = q.rc;
		if (err)
			*err = q.err;
	}
	/* pages read after the page function failed */
	for (i = 0; i < LIST_AHEAD; i++)
		store_list_release(&q.page[i]);
out:
	pthread_cond_destroy(&q.cond);
	pthread_mutex_destroy(&q.lock);
	return rc;
}

int store_list_pages(struct store *s, const char *prefix, size_t prefix_len,
		     unsigned flags, store_page_fn page, void *arg,
		     int64_t *revision, struct store_error *err)
{
	struct lister L = {
		.s = s, .flags = flags, .page = page, .arg = arg,
	};
	char *full, *end;
	size_t full_len, end_len;
	int rc, restarts = 0;
	bool to_end;

	store_refresh_maybe(s);
	full = store_full_key(s, prefix, prefix_len, &full_len);
	if (!full)
		return store_enomem(err, prefix, prefix_len);
	end = store_range_end(full, full_len, &end_len);
	if (!end) {
		free(full);
		return store_enomem(err, prefix, prefix_len);
	}
	to_end = end_len == 1 && end[0] == '\0';
	if (full_len == 0) {
		/* Every key: etcd starts a range at "\0", never at "". */
		free(full);
		full = calloc(1, 2);
		if (!full) {
			free(end);
			return store_enomem(err, NULL, 0);
		}
		full_len = 1;
	}
	L.full = full;
	L.full_len = full_len;
	for (;;) {
		L.rev = s->cfg.revision;	/* 0: the first request's */
		L.first = true;
		/* in this thread: most listings have a single page */
		rc = list_paged(&L, full, full_len, to_end ? NULL : end,
				end_len, true, err);
		if (rc == 0 && L.n)
			rc = list_rest_ahead(&L, err);
		lister_reset(&L);
		/* a store pinned at a past revision cannot move on */
		if (rc != STORE_ECOMPACTED || L.rev == 0 || s->cfg.revision ||
		    restarts >= STORE_LIST_RESTARTS)
			break;
		/*
		 * Compacted before the last page: the first page's revision
		 * is gone; read the whole list again at a newer one rather
		 * than mix revisions.
		 */
		restarts++;
	}
	if (rc < 0)
		rc = store_read_rc(rc, err);
	else if (revision)
		*revision = L.rev;
	free(L.stack);
	free(end);
	free(full);
	return rc;
}

/* store_list's page: moves the page's keys to the end of the list */
static int store_list_append(void *arg, struct store_list *page, bool first,
			     struct store_error *err)
{
	struct store_list *out = arg;
	size_t i;

	if (first)
		store_list_release(out);	/* read again after a compaction */
	out->revision = page->revision;
	for (i = 0; i < page->n; i++)
		if (store_list_push_own(out, &page->kvs[i]) < 0)
			return store_enomem(err, page->kvs[i].key,
					    page->kvs[i].key_len);
	return 0;
}

int store_list(struct store *s, const char *prefix, size_t prefix_len,
	       unsigned flags, struct store_list *out, struct store_error *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = store_list_pages(s, prefix, prefix_len, flags, store_list_append,
			      out, NULL, err);
	if (rc < 0)
		store_list_release(out);
	return rc;
}
