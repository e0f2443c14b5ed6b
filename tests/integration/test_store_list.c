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
 * pages around it, 100,000 flat keys, and a listing while another client
 * adds keys.  Keys are loaded with txns of 128 puts (tests/loader.c).
 */
#include <inttypes.h>
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

static bool ks_load(struct keyset *ks)
{
	char why[512];
	long long t0 = util_now_ms();

	if (loader_put(load_t, ks->kvs, ks->n, why, sizeof(why)) < 0) {
		tap_diag("load: %s", why);
		return false;
	}
	tap_diag("loaded %zu keys in %lld ms", ks->n, util_now_ms() - t0);
	qsort(ks->kvs, ks->n, sizeof(*ks->kvs), kv_order);
	return true;
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
 * Lists @prefix with pages of @page keys; every key of @ks (all under
 * @prefix) must come, once, in order; etcd must have walked at most
 * @walk_per_key times as many keys, in at most @max_requests requests.
 */
static bool list_costs(const struct keyset *ks, const char *prefix,
		       size_t page, double walk_per_key, uint64_t max_requests)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = prefix,
		.page_size = page,
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
	CHECK(!c.bad);
	CHECK(c.next == ks->n);
	CHECK(rev == c.revision && rev > 0);
	CHECK(b.fetched - a.fetched == ks->n);
	CHECK(per_key <= walk_per_key);
	CHECK(b.requests - a.requests <= max_requests);
	return true;
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
	/* paged to the prefix's end: 50.5 walks per key */
	CHECK(list_costs(&ks, "/t/big/", 1000, 8, 400));
	ks_release(&ks);
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

int main(void)
{
	char why[512];

	if (!ctl_setup())
		return 1;
	load_t = loader_transport(ctl_endpoint, why, sizeof(why));
	if (!load_t) {
		printf("Bail out! %s\n", why);
		return 1;
	}
	TAP_RUN(test_list_skewed);
	TAP_RUN(test_list_exact_pages);
	TAP_RUN(test_list_100k);
	TAP_RUN(test_list_during_puts);
	TAP_RUN(test_list_compacted);
	grpc_transport_free(load_t);
	return tap_done(0);
}
