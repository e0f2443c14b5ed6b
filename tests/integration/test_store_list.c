/*
 * test_store_list.c - integration tests of the v3 store's listings
 * against a real etcd: what they return (every key once, in order, at one
 * revision, in pages of at most page_size keys) and what they cost
 *
 * etcd visits every key of a range to count it, limit or not; the count
 * it reports for a range is the number of keys it visited.  The store
 * adds up those counts (store_list_stats), so a test can tell a listing
 * whose requests each walked the rest of the prefix (O(n^2 / page)) from
 * one that walks each key a few times.  Key sets: skewed (one key beside
 * a huge subtree, 0xff and NUL bytes, random names), exactly a page and
 * pages around it, 100,000 flat keys, a listing while another client
 * adds keys, and one on a cluster that takes fewer operations a txn.
 * Keys are loaded with txns of 128 puts (tests/loader.c).
 *
 * A million flat keys ("million", a test of its own): there the store's
 * counts are checked against counts that do not come from it, what etcd
 * answered on the wire (tests/lib/grpc-count-proxy.py, between the store
 * and etcd) and etcd's own metrics.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "loader.h"
#include "store.h"
#include "tap.h"
#include "util.h"

static struct grpc_transport *load_t;

/* A key set: full keys, each its own value. */
struct keyset {
	struct loader_kv *kvs;
	size_t n, cap;
};

static void ks_add(struct keyset *ks, const char *key, size_t len)
{
	char *k;

	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? 2 * ks->cap : 1024;
		ks->kvs = realloc(ks->kvs, ks->cap * sizeof(*ks->kvs));
		if (!ks->kvs)
			abort();
	}
	k = util_xmemdup(key, len);
	ks->kvs[ks->n++] = (struct loader_kv){ k, len, k, len };
}

__attribute__((format(printf, 2, 3)))
static void ks_addf(struct keyset *ks, const char *f, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	ks_add(ks, buf, (size_t)n);
}

static void ks_release(struct keyset *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		free((char *)ks->kvs[i].key);
	free(ks->kvs);
	memset(ks, 0, sizeof(*ks));
}

static int kcmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al < bl ? -1 : al > bl);
}

static int kv_order(const void *x, const void *y)
{
	const struct loader_kv *a = x, *b = y;

	return kcmp(a->key, a->key_len, b->key, b->key_len);
}

/* Loaders at once on the shared connection: etcd commits their txns
 * together, which a million keys need (about 4 times faster than one). */
#define LOAD_THREADS 4

struct load_part {
	const struct loader_kv *kvs;
	size_t n;
	size_t batch;
	int rc;
	char why[512];
};

static void *load_part(void *arg)
{
	struct load_part *p = arg;

	p->rc = loader_put_batch(load_t, p->kvs, p->n, p->batch, p->why,
				 sizeof(p->why));
	return NULL;
}

/* Loads @ks in txns of @batch puts, at most the cluster's max_txn_ops. */
static bool ks_load_batch(struct keyset *ks, size_t batch)
{
	struct load_part parts[LOAD_THREADS];
	pthread_t th[LOAD_THREADS];
	bool started[LOAD_THREADS] = { false };
	long long t0 = util_now_ms();
	size_t per = (ks->n + LOAD_THREADS - 1) / LOAD_THREADS, i, from;
	bool ok = true;

	for (i = 0; i < LOAD_THREADS; i++) {
		from = i * per < ks->n ? i * per : ks->n;
		parts[i] = (struct load_part){
			.kvs = ks->kvs + from,
			.n = ks->n - from < per ? ks->n - from : per,
			.batch = batch,
		};
		started[i] = pthread_create(&th[i], NULL, load_part,
					    &parts[i]) == 0;
		if (!started[i])
			load_part(&parts[i]);
	}
	for (i = 0; i < LOAD_THREADS; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		if (parts[i].rc < 0) {
			tap_diag("load: %s", parts[i].why);
			ok = false;
		}
	}
	if (!ok)
		return false;
	tap_diag("loaded %zu keys in %lld ms", ks->n, util_now_ms() - t0);
	qsort(ks->kvs, ks->n, sizeof(*ks->kvs), kv_order);
	return true;
}

static bool ks_load(struct keyset *ks)
{
	return ks_load_batch(ks, LOADER_BATCH);
}

/* What a listing's pages must be: ks's keys under @prefix, in order. */
struct check {
	const struct keyset *ks;
	size_t prefix_len;
	size_t next;		/* the key the next page starts with */
	size_t page_size;
	size_t pages;
	int64_t revision;
	bool bad;
};

static int on_page(void *arg, struct store_list *page, bool first,
		   struct store_error *err)
{
	struct check *c = arg;
	size_t i;

	(void)err;
	if (first && c->next) {
		tap_diag("a listing started over after %zu keys", c->next);
		c->bad = true;
	}
	if (page->n > c->page_size) {
		tap_diag("a page of %zu keys", page->n);
		c->bad = true;
	}
	if (c->pages++ == 0)
		c->revision = page->revision;
	if (page->revision != c->revision) {
		tap_diag("a page at %" PRId64 " after one at %" PRId64,
			 page->revision, c->revision);
		c->bad = true;
	}
	for (i = 0; i < page->n && !c->bad; i++, c->next++) {
		const struct store_kv *kv = &page->kvs[i];
		const struct loader_kv *w;

		if (c->next >= c->ks->n) {
			tap_diag("more keys than loaded: %s",
				 util_show(kv->key, kv->key_len));
			c->bad = true;
			break;
		}
		w = &c->ks->kvs[c->next];
		if (!util_mem_is(kv->key, kv->key_len, w->key + c->prefix_len,
				 w->key_len - c->prefix_len) ||
		    !util_mem_is(kv->value, kv->value_len, w->value,
				 w->value_len)) {
			tap_diag("key %zu is %s, expected %s", c->next,
				 util_show(kv->key, kv->key_len),
				 util_show(w->key + c->prefix_len,
					   w->key_len - c->prefix_len));
			c->bad = true;
		}
	}
	return 0;
}

/*
 * Lists @prefix on @endpoint with pages of @page keys; every key of @ks
 * (all under @prefix) must come, once, in order; etcd must have walked at
 * most @walk_per_key times as many keys, in at most @max_requests
 * requests, by the store's counts (store_list_stats; what they grew by in
 * *@cost, if not NULL).
 */
static bool list_costs_at(const struct keyset *ks, const char *prefix,
			  const char *endpoint, size_t page,
			  double walk_per_key, uint64_t max_requests,
			  struct store_list_stats *cost)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = endpoint,
		.prefix = prefix,
		.page_size = page,
		/* the first request counts the whole prefix: a million keys
		 * took etcd 3.4 up to 4 s on 2 loaded cores */
		.request_timeout_ms = 60000,
	};
	struct store_error err = { 0 };
	struct check c = { .ks = ks, .prefix_len = strlen(prefix),
			   .page_size = page };
	struct store_list_stats a, b;
	struct store *s = util_store_open(&cfg);
	long long t0;
	double per_key;
	int64_t rev = 0;

	CHECK(s);
	store_list_stats(s, &a);
	t0 = util_now_ms();
	CHECK_RC(store_list_pages(s, "", 0, 0, on_page, &c, &rev, &err),
		 STORE_OK);
	store_list_stats(s, &b);
	store_free(s);
	per_key = (double)(b.walked - a.walked) / (double)(ks->n ? ks->n : 1);
	tap_diag("%s: %zu keys in %zu pages of up to %zu, %lld ms: %" PRIu64
		 " requests, %" PRIu64 " keys walked (%.2f per key), %" PRIu64
		 " fetched", prefix, ks->n, c.pages, page,
		 util_now_ms() - t0, b.requests - a.requests,
		 b.walked - a.walked, per_key, b.fetched - a.fetched);
	if (cost)
		*cost = (struct store_list_stats){
			.requests = b.requests - a.requests,
			.walked = b.walked - a.walked,
			.fetched = b.fetched - a.fetched,
		};
	CHECK(!c.bad);
	CHECK(c.next == ks->n);
	CHECK(rev == c.revision && rev > 0);
	CHECK(b.fetched - a.fetched == ks->n);
	CHECK(per_key <= walk_per_key);
	CHECK(b.requests - a.requests <= max_requests);
	return true;
}

static bool list_costs(const struct keyset *ks, const char *prefix,
		       size_t page, double walk_per_key, uint64_t max_requests)
{
	return list_costs_at(ks, prefix, ctl_endpoint, page, walk_per_key,
			     max_requests, NULL);
}

/* ---- key sets ---- */

/* One key beside a huge subtree, 0xff and NUL bytes, random names. */
static bool test_list_skewed(void)
{
	struct keyset ks = { 0 };
	unsigned seed = 7;
	int i;

	ks_addf(&ks, "/t/skew/a");
	for (i = 0; i < 30000; i++)
		ks_addf(&ks, "/t/skew/b/deep/sub/prefix/x%06d", i);
	for (i = 0; i < 2000; i++)
		ks_addf(&ks, "/t/skew/c%05d", i * 7);
	for (i = 0; i < 500; i++)
		ks_addf(&ks, "/t/skew/d\xff\xff%04d", i);
	for (i = 0; i < 500; i++) {
		char k[32] = "/t/skew/e";
		int n = 9;

		k[n++] = '\0';
		k[n++] = '\0';
		n += snprintf(k + n, sizeof(k) - (size_t)n, "%04d", i);
		ks_add(&ks, k, (size_t)n);
	}
	for (i = 0; i < 8000; i++) {
		seed = seed * 1103515245u + 12345u;
		ks_addf(&ks, "/t/skew/r/%08x%d", seed, i);
	}
	ks_addf(&ks, "/t/skew/\xff");
	ks_addf(&ks, "/t/skew/\xff\xff");
	for (i = 0; i < 1500; i++)
		ks_addf(&ks, "/t/skew/\xff\xff\xff%04d", i);
	CHECK(ks_load(&ks));
	/* paged to the prefix's end: 43 walks per key */
	CHECK(list_costs(&ks, "/t/skew/", 500, 12, 3 * ks.n / 500 + 40));
	ks_release(&ks);
	return true;
}

/* Sub-ranges of exactly a page, and listings of a page, +1 and -1. */
static bool test_list_exact_pages(void)
{
	struct keyset ks = { 0 };
	int i, j;

	for (j = 0; j < 6; j++)
		for (i = 0; i < 100; i++)
			ks_addf(&ks, "/t/exact/%c/%03d", 'a' + j, i);
	ks_addf(&ks, "/t/exact/b0");
	CHECK(ks_load(&ks));
	CHECK(list_costs(&ks, "/t/exact/", 100, 12, 20));
	CHECK(list_costs(&ks, "/t/exact/", 601, 1, 1));
	CHECK(list_costs(&ks, "/t/exact/", 600, 12, 8));
	ks_release(&ks);

	for (i = 0; i < 100; i++)
		ks_addf(&ks, "/t/exact/a/%03d", i);
	CHECK(list_costs(&ks, "/t/exact/a/", 100, 1, 1));
	CHECK(list_costs(&ks, "/t/exact/a/", 99, 12, 8));
	ks_release(&ks);
	return true;
}

/* 100,000 flat keys in the mount's pages of 1,000. */
static bool test_list_100k(void)
{
	struct keyset ks = { 0 };
	int i;

	for (i = 0; i < 100000; i++)
		ks_addf(&ks, "/t/big/k%06d", i);
	CHECK(ks_load(&ks));
	/* paged to the prefix's end: 50.5 walks per key; with cuts spread
	 * evenly over all 256 byte values, 6.03 in 157 requests */
	CHECK(list_costs(&ks, "/t/big/", 1000, 6, 140));
	ks_release(&ks);
	return true;
}

/* ---- a million keys, as etcd saw them listed ---- */

/* What etcd's metrics say it served, read as its client port serves them. */
struct etcd_reads {
	double calls;	/* Range and Txn calls of its KV service */
	double ranges;	/* ranges, alone or in txns (etcd_mvcc_range_total) */
};

static double metric_value(const char *line)
{
	const char *sp = strrchr(line, ' ');

	return sp ? strtod(sp + 1, NULL) : -1;
}

/* The same names and labels in etcd 3.4 and 3.5. */
static bool etcd_reads(struct etcd_reads *r)
{
	char *text = util_sh_out("curl -sf --max-time 10 %s/metrics",
				 ctl_endpoint);
	char *line, *save = NULL;
	bool calls = false, ranges = false;

	memset(r, 0, sizeof(*r));
	if (!text)
		return false;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "grpc_server_handled_total{", 26) == 0 &&
		    strstr(line, "grpc_service=\"etcdserverpb.KV\"") &&
		    (strstr(line, "grpc_method=\"Range\"") ||
		     strstr(line, "grpc_method=\"Txn\""))) {
			r->calls += metric_value(line);
			calls = true;
		} else if (strncmp(line, "etcd_mvcc_range_total ", 22) == 0) {
			r->ranges = metric_value(line);
			ranges = true;
		}
	}
	free(text);
	if (!calls || !ranges)
		tap_diag("etcd's metrics lack %s",
			 calls ? "etcd_mvcc_range_total" :
				 "grpc_server_handled_total");
	return calls && ranges;
}

/*
 * What etcd answered to a listing, from the log of
 * tests/lib/grpc-count-proxy.py, which its requests went through.
 */
struct wire {
	uint64_t calls;		/* Range and Txn calls */
	uint64_t ranges;	/* a Range's one, a txn's each */
	uint64_t walked;	/* the sum of etcd's counts of them */
	uint64_t fetched;	/* keys of the Range replies */
	uint64_t wide;		/* Range replies that counted keys they did
				 * not hold: etcd walked past their end */
	uint64_t wide_count;	/* the count of the first of those */
};

static bool wire_read(const char *path, size_t page, struct wire *w)
{
	unsigned long long a, b, c;
	char line[512];
	bool ok = true;
	FILE *f;

	memset(w, 0, sizeof(*w));
	f = fopen(path, "r");
	if (!f) {
		tap_diag("%s: %s", path, strerror(errno));
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "range %llu %llu %llu", &a, &b, &c) == 3) {
			w->calls++;
			w->ranges++;
			w->walked += a;
			w->fetched += b;
			if (a > b && w->wide++ == 0)
				w->wide_count = a;
			if (b > page) {
				tap_diag("a reply of %llu keys", b);
				ok = false;
			}
		} else if (sscanf(line, "txn %llu %llu %llu", &a, &b, &c) ==
			   3) {
			w->calls++;
			w->ranges += a;
			w->walked += b;
			/* the listing's txns count with a limit of 1 */
			if (c > a) {
				tap_diag("a txn of %llu ranges held %llu keys",
					 a, c);
				ok = false;
			}
		} else {
			tap_diag("proxy: %s", line);
			ok = false;
		}
	}
	fclose(f);
	return ok;
}

/*
 * A million keys in the mount's pages of 1,000, counted three ways that
 * must agree: the store's own counts, what etcd answered on the wire (the
 * proxy) and etcd's metrics.  Paged to the prefix's end, etcd would walk
 * about 500 keys per key listed (the rest of the range, for each of 1,000
 * pages), and 999 of the replies would count keys they do not hold; with
 * cuts spread evenly over all 256 byte values, 7.65 in 1,562 requests.
 */
static bool test_list_million(void)
{
	const size_t n = 1000000, page = 1000;
	struct store_list_stats cost = { 0 };
	struct etcd_reads e0, e1;
	struct keyset ks = { 0 };
	struct util_garbage px;
	struct wire w;
	char script[PATH_MAX], log[PATH_MAX];
	const char *argv[6];
	const char *port = strrchr(ctl_endpoint, ':');
	bool ok, listed = false;
	size_t i;

	CHECK(port);
	for (i = 0; i < n; i++)
		ks_addf(&ks, "/t/mil/k%07zu", i);
	/* its etcd takes txns of 1,024 operations (tests/meson.build):
	 * half the time of 128 */
	CHECK(ks_load_batch(&ks, 1024));
	snprintf(script, sizeof(script), "%s/lib/grpc-count-proxy.py",
		 util_tests_dir);
	snprintf(log, sizeof(log), "%s/million.wire", util_scratch);
	argv[0] = script;
	argv[1] = port + 1;
	argv[2] = log;
	argv[3] = "--lifetime";
	argv[4] = "600";
	argv[5] = NULL;
	ok = util_server_start(&px, argv);
	if (ok) {
		/* nothing else calls etcd meanwhile */
		ok = etcd_reads(&e0);
		listed = ok && list_costs_at(&ks, "/t/mil/", px.url, page, 7,
					     1400, &cost);
		ok = ok && etcd_reads(&e1);
		util_garbage_stop(&px);
	}
	ks_release(&ks);
	CHECK(ok);
	/* what it cost, also when the store's own counts were too high */
	CHECK(wire_read(log, page, &w));
	tap_diag("on the wire: %" PRIu64 " calls, %" PRIu64 " ranges, %"
		 PRIu64 " keys walked, %" PRIu64 " fetched, %" PRIu64
		 " replies walked past their keys (the first: %" PRIu64
		 "); etcd's metrics: %.0f calls, %.0f ranges", w.calls,
		 w.ranges, w.walked, w.fetched, w.wide, w.wide_count,
		 e1.calls - e0.calls, e1.ranges - e0.ranges);
	CHECK(listed);
	/* every request, as the store counted it and as etcd served it */
	CHECK(w.calls == cost.requests);
	CHECK(e1.calls - e0.calls == (double)w.calls);
	CHECK(e1.ranges - e0.ranges == (double)w.ranges);
	CHECK(w.walked == cost.walked);
	CHECK(w.fetched == n);
	CHECK(w.walked <= 7 * n);
	/* the first request counts the prefix; no other walks past its keys */
	CHECK(w.wide == 1);
	CHECK(w.wide_count == n);
	return true;
}

/* ---- pages read ahead of the page function ---- */

struct ahead {
	struct store *s;
	size_t page;		/* page_size */
	size_t total;		/* keys of the listing */
	size_t delivered;	/* keys handed to the page function */
	size_t pages;
	size_t overlapped;	/* pages during which the next one came */
	size_t stop_at;		/* the page whose function fails */
	size_t after_stop;	/* pages handed over after that */
	uint64_t fetched0;	/* the store's fetched keys before */
	uint64_t most_ahead;	/* keys fetched past the page function */
	bool bad;
};

static uint64_t ahead_fetched(struct ahead *a)
{
	struct store_list_stats st;

	store_list_stats(a->s, &st);
	return st.fetched - a->fetched0;
}

/*
 * From the second page on (the first is read before the listing's thread
 * starts), the next page must come while this one is being taken in, and
 * no more than the two the listing holds ahead of it: waits for the
 * first, then gives the thread time to overrun the second.
 */
static int ahead_page(void *arg, struct store_list *page, bool first,
		      struct store_error *err)
{
	struct ahead *a = arg;
	long long until = util_now_ms() + 10000;
	uint64_t f;

	if (a->stop_at && a->pages >= a->stop_at) {
		a->after_stop++;
		return 0;
	}
	if (first != (a->pages == 0) || page->n > a->page) {
		tap_diag("page %zu: first %d, %zu keys", a->pages, first,
			 page->n);
		a->bad = true;
	}
	a->pages++;
	a->delivered += page->n;
	if (a->pages > 1 && a->delivered < a->total) {
		while (ahead_fetched(a) <= a->delivered &&
		       util_now_ms() < until)
			util_sleep_ms(1);
		if (ahead_fetched(a) > a->delivered)
			a->overlapped++;
		util_sleep_ms(20);
	}
	f = ahead_fetched(a);
	if (f > a->delivered && f - a->delivered > a->most_ahead)
		a->most_ahead = f - a->delivered;
	if (a->pages == a->stop_at)
		return store_fail(err, STORE_EPERMISSION, NULL, 0, 0,
				  "stopped by the page function");
	return 0;
}

static bool test_list_ahead(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = "/t/ahead/",
		.page_size = 500,
	};
	struct store_error err = { 0 };
	struct keyset ks = { 0 };
	struct ahead a = { .page = 500, .total = 20000 };
	struct store_list_stats st;
	struct store *s;
	int64_t rev = 0;
	size_t i;

	for (i = 0; i < a.total; i++)
		ks_addf(&ks, "/t/ahead/k%05zu", i);
	CHECK(ks_load(&ks));
	ks_release(&ks);
	s = util_store_open(&cfg);
	CHECK(s);
	a.s = s;
	store_list_stats(s, &st);
	a.fetched0 = st.fetched;
	CHECK_RC(store_list_pages(s, "", 0, 0, ahead_page, &a, &rev, &err),
		 STORE_OK);
	tap_diag("%zu pages, %zu with the next one read meanwhile, at most %"
		 PRIu64 " keys read ahead", a.pages, a.overlapped,
		 a.most_ahead);
	CHECK(!a.bad);
	CHECK(a.delivered == a.total);
	/* every page but the first and the last */
	CHECK(a.overlapped == a.pages - 2);
	CHECK(a.most_ahead <= 2 * a.page);

	/* a page function that fails stops the listing, and its thread */
	a = (struct ahead){ .s = s, .page = 500, .total = 20000,
			    .stop_at = 10 };
	store_list_stats(s, &st);
	a.fetched0 = st.fetched;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_list_pages(s, "", 0, 0, ahead_page, &a, &rev, &err),
		 STORE_EPERMISSION);
	CHECK(strstr(err.msg, "stopped by the page function"));
	CHECK(a.pages == 10 && a.after_stop == 0);
	CHECK(ahead_fetched(&a) <= a.delivered + 2 * a.page);
	store_free(s);
	return true;
}

/* ---- sub-ranges counted ahead of the fetches ---- */

struct counted {
	struct store *s;
	size_t pages;
	uint64_t walked0, fetched0;	/* the store's counts before */
	uint64_t first;		/* keys the first request walked past its
				 * page: it counts the whole prefix */
	uint64_t want;		/* 0, or the keys the counting walks in all */
	uint64_t got;		/* what it had walked at the second page */
};

/* The keys walked by the requests that only counted, so far. */
static uint64_t counted_walk(struct counted *c)
{
	struct store_list_stats st;

	store_list_stats(c->s, &st);
	/* a fetch walks the keys it fetches, the first request more */
	return (st.walked - c->walked0) - (st.fetched - c->fetched0) -
	       c->first;
}

/*
 * At the second page (the first the listing's threads hand over), with
 * @want set: waits up to 10 s for the counting to be over, which it can
 * only be if it went on while the fetches waited for this function.
 */
static int counted_page(void *arg, struct store_list *page, bool first,
			struct store_error *err)
{
	struct counted *c = arg;
	long long until = util_now_ms() + 10000;

	(void)page;
	(void)first;
	(void)err;
	if (++c->pages != 2 || !c->want)
		return 0;
	while (counted_walk(c) < c->want && util_now_ms() < until)
		util_sleep_ms(1);
	c->got = counted_walk(c);
	return 0;
}

static bool test_list_counts_ahead(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = "/t/cut/",
		.page_size = 500,
	};
	struct store_error err = { 0 };
	struct keyset ks = { 0 };
	struct store_list_stats st;
	struct counted c = { 0 };
	struct store *s;
	int64_t rev = 0;
	uint64_t want;
	size_t i;
	int k;

	/* 10 directories of 1,000 keys, each cut again: about 30 pages, so
	 * that every sub-range to fetch fits in the queue (LIST_JOBS, 64)
	 * while the second page is held */
	for (k = 0; k < 10; k++)
		for (i = 0; i < 1000; i++)
			ks_addf(&ks, "/t/cut/g%02d/k%04zu", k, i);
	CHECK(ks_load(&ks));
	s = util_store_open(&cfg);
	CHECK(s);
	c.s = s;
	c.first = ks.n - cfg.page_size;
	ks_release(&ks);
	/* what the counting walks in all, at this revision */
	store_list_stats(s, &st);
	c.walked0 = st.walked;
	c.fetched0 = st.fetched;
	CHECK_RC(store_list_pages(s, "", 0, 0, counted_page, &c, &rev, &err),
		 STORE_OK);
	want = counted_walk(&c);
	CHECK(want > 0);

	/* again, the keys unchanged: all of it while the second page is
	 * held */
	store_list_stats(s, &st);
	c = (struct counted){ .s = s, .walked0 = st.walked,
			      .fetched0 = st.fetched, .first = c.first,
			      .want = want };
	CHECK_RC(store_list_pages(s, "", 0, 0, counted_page, &c, &rev, &err),
		 STORE_OK);
	tap_diag("%zu pages; the counting walks %" PRIu64 " keys, %" PRIu64
		 " of them while the second page was held", c.pages, want,
		 c.got);
	CHECK(c.got == want);
	CHECK(counted_walk(&c) == want);
	store_free(s);
	return true;
}

/* ---- a listing while another client adds keys ---- */

struct adder {
	struct store *s;
	volatile bool stop;
	int written;		/* atomic */
	int failed;
};

/* Adds keys between and after the listed ones until told to stop. */
static void *add_keys(void *arg)
{
	struct adder *w = arg;
	struct store_error err;
	unsigned seed = 12345;
	char key[32];
	int kn;

	while (!w->stop) {
		seed = seed * 1103515245u + 12345u;
		kn = snprintf(key, sizeof(key), "k%05u+%d",
			      (seed >> 8) % 20100,
			      __atomic_load_n(&w->written, __ATOMIC_SEQ_CST));
		memset(&err, 0, sizeof(err));
		if (store_create(w->s, key, (size_t)kn, "late", 4, 0, NULL,
				 &err) != STORE_OK) {
			fprintf(stderr, "adder: %s: %s\n", key, err.msg);
			w->failed++;
			break;
		}
		__atomic_add_fetch(&w->written, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static bool test_list_during_puts(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = "/t/conc/",
		.page_size = 500,
	};
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store_list_stats a, b;
	struct keyset ks = { 0 };
	struct adder w = { 0 };
	struct ctl_list cl;
	pthread_t th;
	struct store *s = util_store_open(&cfg);
	int before, during, rc;
	char *args;
	size_t i;

	CHECK(s);
	for (i = 0; i < 20000; i++)
		ks_addf(&ks, "/t/conc/k%05zu", i);
	CHECK(ks_load(&ks));
	ks_release(&ks);
	w.s = s;
	CHECK(pthread_create(&th, NULL, add_keys, &w) == 0);
	while (__atomic_load_n(&w.written, __ATOMIC_SEQ_CST) < 3 && !w.failed)
		util_sleep_ms(1);
	before = __atomic_load_n(&w.written, __ATOMIC_SEQ_CST);
	store_list_stats(s, &a);
	rc = store_list(s, "", 0, 0, &l, &err);
	store_list_stats(s, &b);
	during = __atomic_load_n(&w.written, __ATOMIC_SEQ_CST) - before;
	w.stop = true;
	pthread_join(th, NULL);
	CHECK_RC(rc, STORE_OK);
	CHECK(w.failed == 0);
	tap_diag("listed %zu keys at %" PRId64 " while %d were added: %" PRIu64
		 " requests, %" PRIu64 " keys walked", l.n, l.revision, during,
		 b.requests - a.requests, b.walked - a.walked);
	CHECK(during > 0);
	CHECK(l.n >= 20000);
	CHECK(b.walked - a.walked <= 12 * l.n);

	/* exactly what etcd held at that revision */
	args = util_fmt("/t/conc/ --prefix --rev=%" PRId64, l.revision);
	CHECK(ctl_range(ctl_cmd, args, &cl));
	free(args);
	if (cl.n != l.n)
		tap_diag("etcd held %zu keys at %" PRId64 ", the list has %zu",
			 cl.n, l.revision, l.n);
	CHECK(cl.n == l.n);
	for (i = 0; i < l.n; i++) {
		struct ctl_kv *c = &cl.kvs[i];

		CHECK(c->key_len == l.kvs[i].key_len + 8);
		CHECK(memcmp(c->key + 8, l.kvs[i].key, l.kvs[i].key_len) == 0);
		CHECK(util_mem_is(c->value, c->value_len, l.kvs[i].value,
				  l.kvs[i].value_len));
		CHECK(c->mod_revision == l.kvs[i].mod_revision);
	}
	ctl_list_release(&cl);
	/* and some keys were written after it, while it was read */
	CHECK(ctl_revision() > l.revision);
	store_list_release(&l);
	store_free(s);
	return true;
}

/* ---- compacted while listed ---- */

struct compactor {
	int firsts;		/* pages that started a listing */
	int compact_times;	/* compact after that many first pages */
	size_t keys;
	int64_t revision;
	bool failed;
};

/* Counts the keys; after a first page, writes a key and compacts. */
static int compact_on_first(void *arg, struct store_list *page, bool first,
			    struct store_error *err)
{
	struct compactor *c = arg;
	char *cmd;
	int64_t rev;

	(void)err;
	if (first) {
		c->keys = 0;
		c->revision = page->revision;
	}
	c->keys += page->n;
	if (!first || c->firsts++ >= c->compact_times)
		return 0;
	rev = ctl_revision();
	cmd = util_fmt("%s put /t/cmp/zz%d v >/dev/null && %s compact %"
		       PRId64 " >/dev/null", ctl_cmd, c->firsts, ctl_cmd,
		       rev + 1);
	if (util_sh("%s", cmd) != 0)
		c->failed = true;
	free(cmd);
	return 0;
}

static bool test_list_compacted(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = "/t/cmp/",
		.page_size = 500,
	};
	struct store_error err = { 0 };
	struct keyset ks = { 0 };
	struct compactor c = { .compact_times = 1 };
	struct store *s = util_store_open(&cfg);
	int64_t rev = 0;
	int i;

	CHECK(s);
	for (i = 0; i < 3000; i++)
		ks_addf(&ks, "/t/cmp/k%04d", i);
	CHECK(ks_load(&ks));
	ks_release(&ks);
	/* compacted once after the first page: read again, newer */
	CHECK_RC(store_list_pages(s, "", 0, 0, compact_on_first, &c, &rev,
				  &err), STORE_OK);
	CHECK(!c.failed);
	tap_diag("%d first pages, %zu keys at %" PRId64, c.firsts, c.keys,
		 rev);
	CHECK(c.firsts == 2);
	CHECK(c.keys == 3001);
	CHECK(rev == c.revision);
	/* compacted at every start: gives up after 3 restarts */
	c = (struct compactor){ .compact_times = 100 };
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_list_pages(s, "", 0, 0, compact_on_first, &c, &rev,
				  &err), STORE_ECOMPACTED);
	CHECK(!c.failed);
	CHECK(c.firsts == 4);
	store_free(s);
	return true;
}

/*
 * A cluster started with --max-txn-ops=32 and a store told so: the counts
 * of a cut (up to 128 sub-ranges) go 32 a txn, and the listing is whole.
 */
static bool test_list_max_txn_ops(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.prefix = "/t/ops/",
		.page_size = 10,
		.max_txn_ops = 32,
	};
	struct store_error err = { 0 };
	struct keyset ks = { 0 };
	struct check c = { .ks = &ks, .prefix_len = strlen(cfg.prefix),
			   .page_size = cfg.page_size };
	struct store_list_stats a, b;
	struct grpc_transport *t;
	struct util_etcd e;
	struct store *s;
	char why[512];
	int64_t rev = 0;
	size_t i, k;
	bool ok;

	CHECK(util_etcd_start(&e, "etcd-txn-ops", NULL, "--max-txn-ops=32"));
	t = loader_transport(e.endpoint, why, sizeof(why));
	ok = t != NULL;
	for (i = 0; i < 3000; i++)
		ks_addf(&ks, "/t/ops/k%04zu", i);
	/* the loader's txns of 128 puts are too many for this cluster */
	for (i = 0; ok && i < ks.n; i += k) {
		k = ks.n - i < 32 ? ks.n - i : 32;
		ok = loader_put(t, ks.kvs + i, k, why, sizeof(why)) == 0;
	}
	if (t)
		grpc_transport_free(t);
	if (!ok) {
		tap_diag("load: %s", why);
		util_etcd_stop(&e);
		return false;
	}
	qsort(ks.kvs, ks.n, sizeof(*ks.kvs), kv_order);
	cfg.endpoints = e.endpoint;
	s = util_store_open(&cfg);
	ok = s != NULL;
	if (ok) {
		store_list_stats(s, &a);
		ok = store_list_pages(s, "", 0, 0, on_page, &c, &rev,
				      &err) == STORE_OK;
		store_list_stats(s, &b);
		if (!ok)
			tap_diag("listing: %s", err.msg);
		tap_diag("%zu keys in %zu pages, %" PRIu64 " requests",
			 c.next, c.pages, b.requests - a.requests);
		store_free(s);
	}
	util_etcd_stop(&e);
	CHECK(ok);
	CHECK(!c.bad);
	CHECK(c.next == ks.n);
	CHECK(rev == c.revision && rev > 0);
	ks_release(&ks);
	return true;
}

/*
 * No argument: every case but the million keys; "million": that one
 * alone, which tests/meson.build runs as a test of its own (loading the
 * keys is most of its time).
 */
int main(int argc, char **argv)
{
	bool million = argc == 2 && strcmp(argv[1], "million") == 0;
	char why[512];

	if (argc > 2 || (argc == 2 && !million)) {
		printf("Bail out! usage: %s [million]\n", argv[0]);
		return 1;
	}
	if (!ctl_setup())
		return 1;
	load_t = loader_transport(ctl_endpoint, why, sizeof(why));
	if (!load_t) {
		printf("Bail out! %s\n", why);
		return 1;
	}
	if (million) {
		TAP_RUN(test_list_million);
	} else {
		TAP_RUN(test_list_skewed);
		TAP_RUN(test_list_exact_pages);
		TAP_RUN(test_list_100k);
		TAP_RUN(test_list_ahead);
		TAP_RUN(test_list_counts_ahead);
		TAP_RUN(test_list_during_puts);
		TAP_RUN(test_list_compacted);
		TAP_RUN(test_list_max_txn_ops);
	}
	grpc_transport_free(load_t);
	return tap_done(0);
}
