/*
 * test_store_kv.c - the store (helper/store.h) against a real etcd: single
 * keys, binary keys and prefixes, lists (paged at one revision while others
 * write), deletes, the cluster's revision and members
 *
 * Runs under tests/lib/with-etcd, which gives it a private etcd in
 * ETCDFS_TEST_ENDPOINTS and a scratch dir in ETCDFS_TEST_DIR.  Every case
 * works under a key prefix of its own and cross-checks what etcd holds with
 * etcdctl (tests/integration/ctl.c), never with the store under test.
 *
 * What it cannot test: the etcd2 backend (test_store_v2.c), clusters of
 * several members (test_members.c, test_leader.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"

/* ---- configuration ---- */

static bool test_config_einval(void)
{
	struct store_config base = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
	};
	struct store_config c;
	struct store *s;

	/* the base itself is fine */
	s = util_store_open(&base);
	CHECK(s);
	CHECK(strcmp(store_backend_name(s), "etcd3") == 0);
	store_free(s);

	c = base;
	c.api = (enum store_api)7;
	CHECK(util_einval(&c, "api 7"));
	c = base;
	c.endpoints = "";
	CHECK(util_einval(&c, "an empty endpoint list"));
	c = base;
	c.endpoints = "ftp://127.0.0.1:2379";
	CHECK(util_einval(&c, "an ftp endpoint"));
	c = base;
	c.endpoints = "http://";
	CHECK(util_einval(&c, "an endpoint without a host"));
	c = base;
	c.endpoints = "http://127.0.0.1:notaport";
	CHECK(util_einval(&c, "a port that is not a number"));
	c = base;
	c.cert = "client.pem";
	CHECK(util_einval(&c, "a certificate without its key"));
	c = base;
	c.key = "client-key.pem";
	CHECK(util_einval(&c, "a key without its certificate"));
	c = base;
	c.user = "alice";
	CHECK(util_einval(&c, "a user without a password"));
	c = base;
	c.connect_timeout_ms = -1;
	CHECK(util_einval(&c, "a negative connect timeout"));
	c = base;
	c.request_timeout_ms = -5;
	CHECK(util_einval(&c, "a negative request timeout"));
	c = base;
	c.max_update_retries = -1;
	CHECK(util_einval(&c, "negative update retries"));
	return true;
}

/* ---- single operations ---- */

static bool test_create_get(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct ctl_kv c;
	int64_t rev = 0, rev2 = 0;
	struct store *s = ctl_store_open("/t/create/");

	CHECK(s);
	CHECK(strcmp(store_endpoint(s), ctl_endpoint) == 0);
	CHECK_RC(store_create(s, S("a"), S("hello"), 0, &rev, &err), STORE_OK);
	CHECK(rev > 0);
	CHECK_RC(store_get(s, S("a"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	CHECK(kv.mod_revision == rev);
	CHECK(kv.create_revision == rev);
	CHECK(kv.version == 1);
	CHECK(kv.lease == 0);
	store_kv_release(&kv);
	CHECK(kv.key == NULL && kv.value == NULL);

	/* etcd holds what the store said, at the revision it said */
	CHECK(ctl_get("/t/create/a", &c) == 1);
	CHECK(util_mem_is(c.value, c.value_len, S("hello")));
	CHECK(c.mod_revision == rev && c.create_revision == rev);
	ctl_kv_release(&c);

	/* both read flavours */
	CHECK_RC(store_get(s, S("a"), STORE_READ_SERIAL, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	store_kv_release(&kv);
	CHECK_RC(store_get(s, S("a"), STORE_READ_QUORUM, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("a"), S("hello")));
	store_kv_release(&kv);

	/* an empty value is a value */
	CHECK_RC(store_create(s, S("empty"), "", 0, 0, &rev2, &err), STORE_OK);
	CHECK(rev2 == rev + 1);
	CHECK_RC(store_get(s, S("empty"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("empty"), "", 0));
	store_kv_release(&kv);
	CHECK(ctl_get("/t/create/empty", &c) == 1);
	CHECK(c.value_len == 0);
	ctl_kv_release(&c);

	/* create without asking for the revision */
	CHECK_RC(store_create(s, S("norev"), S("x"), 0, NULL, &err), STORE_OK);
	CHECK(ctl_has("/t/create/norev", "x"));
	store_free(s);
	return true;
}

static bool test_create_exists(void)
{
	struct store_error err = { 0 };
	struct store *s = ctl_store_open("/t/exists/");
	int64_t mod;

	CHECK(s);
	CHECK(ctl_put("/t/exists/k", "first"));
	mod = ctl_mod("/t/exists/k");
	CHECK(mod > 0);
	CHECK_RC(store_create(s, S("k"), S("second"), 0, NULL, &err),
		 STORE_EEXISTS);
	CHECK(strstr(err.key, "k") != NULL);
	CHECK(ctl_has("/t/exists/k", "first"));
	CHECK(ctl_mod("/t/exists/k") == mod);
	store_free(s);
	return true;
}

static bool test_get_notfound(void)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store *s = ctl_store_open("/t/nf/");

	CHECK(s);
	CHECK_RC(store_get(s, S("nothing-here"), 0, &kv, &err),
		 STORE_ENOTFOUND);
	CHECK(strstr(err.key, "nothing-here") != NULL);
	/* "/t/nf/a" exists, "a" under the prefix "/t/nf/a/" does not */
	CHECK(ctl_put("/t/nf/a", "v"));
	store_free(s);
	s = ctl_store_open("/t/nf/a/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, "", 0, 0, &kv, &err), STORE_ENOTFOUND);
	store_free(s);
	return true;
}

/* Keys and values with every byte, NUL and 0xff included. */
static bool test_binary_keys(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store_kv kv = { 0 };
	struct ctl_list cl;
	char all[257], val[512];
	static const struct {
		const char *k;
		size_t n;
	} keys[] = {
		{ "\0", 1 },
		{ "\0\0", 2 },
		{ "a\0b", 3 },
		{ "a\xff", 2 },
		{ "\xff", 1 },
		{ "\xff\xff", 2 },
		{ "\xff\xff\0", 3 },
		{ "\xff\xff\xff", 3 },
		{ "\xfe\xff", 2 },
		{ "\n\r\t \"'\\%", 9 },
	};
	size_t nkeys = sizeof(keys) / sizeof(keys[0]);
	struct store *s = ctl_store_open("/t/bytes/");
	size_t i, j;

	CHECK(s);
	all[0] = 'K';
	for (i = 0; i < 256; i++)
		all[i + 1] = (char)i;
	for (i = 0; i < sizeof(val); i++)
		val[i] = (char)(255 - i % 256);

	CHECK_RC(store_create(s, all, sizeof(all), val, sizeof(val), 0, NULL,
			      &err), STORE_OK);
	for (i = 0; i < nkeys; i++)
		CHECK_RC(store_create(s, keys[i].k, keys[i].n, keys[i].k,
				      keys[i].n, 0, NULL, &err), STORE_OK);

	CHECK_RC(store_get(s, all, sizeof(all), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, all, sizeof(all), val, sizeof(val)));
	store_kv_release(&kv);
	for (i = 0; i < nkeys; i++) {
		CHECK_RC(store_get(s, keys[i].k, keys[i].n, 0, &kv, &err),
			 STORE_OK);
		CHECK(util_kv_is(&kv, keys[i].k, keys[i].n, keys[i].k,
				 keys[i].n));
		store_kv_release(&kv);
	}
	/* a key that is a prefix of stored ones is not one of them */
	CHECK_RC(store_get(s, "a", 1, 0, &kv, &err), STORE_ENOTFOUND);

	/* etcd holds exactly these bytes, under the prefix */
	CHECK(ctl_range(ctl_cmd, "/t/bytes/ --prefix", &cl));
	CHECK(cl.n == nkeys + 1);
	for (i = 0; i < nkeys + 1; i++) {
		const char *k = i < nkeys ? keys[i].k : all;
		size_t n = i < nkeys ? keys[i].n : sizeof(all);
		bool found = false;

		for (j = 0; j < cl.n && !found; j++)
			found = cl.kvs[j].key_len == n + 9 &&
				memcmp(cl.kvs[j].key, "/t/bytes/", 9) == 0 &&
				memcmp(cl.kvs[j].key + 9, k, n) == 0;
		if (!found)
			tap_diag("etcd lacks '/t/bytes/%s'", util_show(k, n));
		CHECK(found);
	}
	ctl_list_release(&cl);

	/* the list is sorted bytewise and strips the prefix */
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == nkeys + 1);
	for (i = 1; i < l.n; i++) {
		size_t a = l.kvs[i - 1].key_len, b = l.kvs[i].key_len;
		int c = memcmp(l.kvs[i - 1].key, l.kvs[i].key, a < b ? a : b);

		CHECK(c < 0 || (c == 0 && a < b));
	}
	CHECK(l.revision > 0);
	store_list_release(&l);

	/* prefixes ending in 0xff: the range end must carry correctly */
	CHECK_RC(store_list(s, "\xff\xff", 2, 0, &l, &err), STORE_OK);
	CHECK(l.n == 3);
	CHECK(util_kv_is(&l.kvs[0], "\xff\xff", 2, "\xff\xff", 2));
	CHECK(util_kv_is(&l.kvs[1], "\xff\xff\0", 3, "\xff\xff\0", 3));
	CHECK(util_kv_is(&l.kvs[2], "\xff\xff\xff", 3, "\xff\xff\xff", 3));
	store_list_release(&l);
	CHECK_RC(store_list(s, "\xff", 1, 0, &l, &err), STORE_OK);
	CHECK(l.n == 4);
	store_list_release(&l);
	CHECK_RC(store_list(s, "\0", 1, 0, &l, &err), STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[0], "\0", 1, "\0", 1));
	CHECK(util_kv_is(&l.kvs[1], "\0\0", 2, "\0\0", 2));
	store_list_release(&l);
	store_free(s);
	return true;
}

/* A store with a prefix never sees, nor touches, keys outside it. */
static bool test_prefix_isolation(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store_kv kv = { 0 };
	struct store *root = ctl_store_open(NULL), *s = NULL, *f = NULL;
	static const char *outside[] = {
		"/t/iso/a", "/t/iso/ab", "/t/iso/a0", "/t/iso/b/x",
		"/t/iso/", "/t/iso/a.",
	};
	size_t i;

	CHECK(root);
	for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		CHECK(ctl_put(outside[i], "outside"));
	CHECK(ctl_put("/t/iso/a/x", "inside-x"));
	CHECK(ctl_put("/t/iso/a/y/z", "inside-z"));

	s = ctl_store_open("/t/iso/a/");
	CHECK(s);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[0], S("x"), S("inside-x")));
	CHECK(util_kv_is(&l.kvs[1], S("y/z"), S("inside-z")));
	store_list_release(&l);

	/* a directory listing with its '/' never matches a longer name */
	CHECK_RC(store_list(s, S("y/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 1);
	CHECK(util_kv_is(&l.kvs[0], S("y/z"), S("inside-z")));
	store_list_release(&l);
	CHECK_RC(store_list(s, S("x/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 0);
	CHECK(l.revision > 0);
	store_list_release(&l);

	/* writes land under the prefix; outside keys stay as they were */
	CHECK_RC(store_create(s, S("new"), S("n"), 0, NULL, &err), STORE_OK);
	CHECK(ctl_has("/t/iso/a/new", "n"));
	CHECK_RC(store_delete(s, S("x"), NULL, NULL, NULL, &err), STORE_OK);
	CHECK(ctl_lacks("/t/iso/a/x"));
	for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		CHECK(ctl_has(outside[i], "outside"));

	/* the root store sees everything, with full keys */
	CHECK_RC(store_get(root, S("/t/iso/a/new"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("/t/iso/a/new"), S("n")));
	store_kv_release(&kv);
	CHECK_RC(store_list(root, S("/t/iso/"), 0, &l, &err), STORE_OK);
	CHECK(l.n == 8);
	store_list_release(&l);

	/* a prefix that ends in 0xff */
	CHECK_RC(store_create(root, S("/t/pf\xff"), S("edge"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_create(root, S("/t/pf\xff\xff"), S("in1"), 0, NULL,
			      &err), STORE_OK);
	CHECK_RC(store_create(root, S("/t/pf\xff/x"), S("in2"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_create(root, S("/t/pg"), S("after"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_create(root, S("/t/pf\xfe"), S("before"), 0, NULL, &err),
		 STORE_OK);
	f = ctl_store_open("/t/pf\xff");
	CHECK(f);
	CHECK_RC(store_list(f, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 3);
	CHECK(util_kv_is(&l.kvs[0], "", 0, S("edge")));
	CHECK(util_kv_is(&l.kvs[1], S("/x"), S("in2")));
	CHECK(util_kv_is(&l.kvs[2], S("\xff"), S("in1")));
	store_list_release(&l);
	store_free(f);
	store_free(s);
	store_free(root);
	return true;
}

static bool test_list_keys_only(void)
{
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct store *s = ctl_store_open("/t/ko/");

	CHECK(s);
	CHECK(ctl_put("/t/ko/a", "value-a"));
	CHECK(ctl_put("/t/ko/b", "value-b"));
	CHECK_RC(store_list(s, "", 0, STORE_READ_KEYS_ONLY, &l, &err),
		 STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[0], S("a"), "", 0));
	CHECK(util_kv_is(&l.kvs[1], S("b"), "", 0));
	CHECK(l.kvs[0].mod_revision > 0);
	CHECK(l.kvs[1].mod_revision > l.kvs[0].mod_revision);
	store_list_release(&l);
	CHECK_RC(store_list(s, "", 0, STORE_READ_SERIAL, &l, &err), STORE_OK);
	CHECK(l.n == 2);
	CHECK(util_kv_is(&l.kvs[1], S("b"), S("value-b")));
	store_list_release(&l);
	store_free(s);
	return true;
}

/* ---- a paged list at one revision while someone writes ---- */

#define PAGE_KEYS 10000
/* etcd commits concurrent puts with one fsync: many writers fill faster */
#define FILL_THREADS 32

struct filler {
	struct store *s;
	int from, to;
	int failed;
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	struct store_error err;
	char key[32], val[32];

	for (int i = f->from; i < f->to; i++) {
		int kn = snprintf(key, sizeof(key), "k%05d", i);
		int vn = snprintf(val, sizeof(val), "v%d", i);

		memset(&err, 0, sizeof(err));
		if (store_create(f->s, key, (size_t)kn, val, (size_t)vn, 0,
				 NULL, &err) != STORE_OK) {
			fprintf(stderr, "fill: %s: %s\n", key, err.msg);
			f->failed++;
		}
	}
	return NULL;
}

struct writer {
	struct store *s;
	volatile bool stop;
	volatile int written;
	int failed;
};

/* Adds keys between and after the listed ones until told to stop. */
static void *write_more(void *arg)
{
	struct writer *w = arg;
	struct store_error err;
	char key[32];
	unsigned seed = 12345;

	while (!w->stop) {
		int kn;

		seed = seed * 1103515245u + 12345u;
		kn = snprintf(key, sizeof(key), "k%05u+%d",
			      (seed >> 8) % (PAGE_KEYS + 100), w->written);
		memset(&err, 0, sizeof(err));
		if (store_create(w->s, key, (size_t)kn, "late", 4, 0, NULL,
				 &err) != STORE_OK) {
			fprintf(stderr, "writer: %s: %s\n", key, err.msg);
			w->failed++;
			break;
		}
		__atomic_add_fetch(&w->written, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static bool test_list_paged_one_revision(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = "/t/page/",
		.page_size = 1000,
	};
	struct store_error err = { 0 };
	struct store_list l = { 0 };
	struct filler fl[FILL_THREADS];
	struct writer w = { 0 };
	pthread_t th[FILL_THREADS], wt;
	struct ctl_list cl;
	struct store *s = util_store_open(&cfg);
	int64_t end_rev;
	int before, during, late = 0;
	long ranges0, ranges1, pages;
	long long t0;
	char *args;
	size_t i;

	CHECK(s);
	t0 = util_now_ms();
	for (i = 0; i < FILL_THREADS; i++) {
		fl[i] = (struct filler){
			s, (int)i * PAGE_KEYS / FILL_THREADS,
			(int)(i + 1) * PAGE_KEYS / FILL_THREADS, 0
		};
		CHECK(pthread_create(&th[i], NULL, fill, &fl[i]) == 0);
	}
	for (i = 0; i < FILL_THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK(fl[i].failed == 0);
	}
	tap_diag("created %d keys with %d threads in %lld ms", PAGE_KEYS,
		 FILL_THREADS,
		 util_now_ms() - t0);

	/* a second client keeps writing while the list pages through */
	w.s = s;
	CHECK(pthread_create(&wt, NULL, write_more, &w) == 0);
	while (__atomic_load_n(&w.written, __ATOMIC_SEQ_CST) < 3 && !w.failed)
		util_sleep_ms(1);
	ranges0 = ctl_range_requests();
	before = __atomic_load_n(&w.written, __ATOMIC_SEQ_CST);
	t0 = util_now_ms();
	memset(&err, 0, sizeof(err));
	int rc = store_list(s, "", 0, 0, &l, &err);
	during = __atomic_load_n(&w.written, __ATOMIC_SEQ_CST) - before;
	ranges1 = ctl_range_requests();
	w.stop = true;
	pthread_join(wt, NULL);
	CHECK_RC(rc, STORE_OK);
	CHECK(w.failed == 0);
	tap_diag("listed %zu keys at revision %" PRId64 " in %lld ms and %ld "
		 "range requests while %d keys were added", l.n, l.revision,
		 util_now_ms() - t0, ranges1 - ranges0, during);
	CHECK(during > 0);
	CHECK(l.n >= PAGE_KEYS);
	/*
	 * in pages of 1000: a few requests, never one per key; sub-ranges
	 * of at most a page are fetched whole, neighbours merged up to a
	 * page, so two fetches in a row hold more than a page
	 */
	CHECK(ranges0 >= 0 && ranges1 >= 0);
	pages = (long)(l.n + 999) / 1000;
	CHECK(ranges1 - ranges0 >= pages);
	CHECK(ranges1 - ranges0 <= 2 * pages + 1);

	/* exactly what etcd held at that revision */
	args = util_fmt("/t/page/ --prefix --rev=%" PRId64, l.revision);
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
		CHECK(l.kvs[i].mod_revision <= l.revision);
	}
	ctl_list_release(&cl);

	/* and some keys were written after it, while the pages were read */
	end_rev = ctl_revision();
	CHECK(end_rev > l.revision);
	CHECK(ctl_range(ctl_cmd, "/t/page/ --prefix --keys-only", &cl));
	for (i = 0; i < cl.n; i++)
		if (cl.kvs[i].mod_revision > l.revision)
			late++;
	ctl_list_release(&cl);
	tap_diag("%d keys are newer than the list", late);
	CHECK(late > 0);
	store_list_release(&l);

	/* without writers, page boundaries lose and repeat nothing */
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_list(s, S("k0"), STORE_READ_KEYS_ONLY, &l, &err),
		 STORE_OK);
	for (i = 1; i < l.n; i++)
		CHECK(strcmp(l.kvs[i - 1].key, l.kvs[i].key) < 0);
	CHECK(ctl_range(ctl_cmd, "/t/page/k0 --prefix --keys-only --limit=1",
			&cl));
	tap_diag("%zu keys start with k0, etcd counts %" PRId64, l.n,
		 cl.count);
	CHECK(cl.count == (int64_t)l.n);
	CHECK(l.n > PAGE_KEYS - 100);
	ctl_list_release(&cl);
	store_list_release(&l);
	store_free(s);
	return true;
}

/* ---- delete ---- */

static bool test_delete(void)
{
	struct store_error err = { 0 };
	struct store_kv prev = { 0 };
	struct store *s = ctl_store_open("/t/del/");
	int64_t mod, rev = 0;

	CHECK(s);
	CHECK(ctl_put("/t/del/a", "va"));
	mod = ctl_mod("/t/del/a");
	CHECK_RC(store_delete(s, S("a"), NULL, &prev, &rev, &err), STORE_OK);
	CHECK(rev > mod);
	CHECK(util_kv_is(&prev, S("a"), S("va")));
	CHECK(prev.mod_revision == mod);
	store_kv_release(&prev);
	CHECK(ctl_lacks("/t/del/a"));
	CHECK(ctl_revision() == rev);

	CHECK_RC(store_delete(s, S("a"), NULL, NULL, NULL, &err),
		 STORE_ENOTFOUND);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("never"), NULL, &prev, NULL, &err),
		 STORE_ENOTFOUND);

	/* the right preconditions: deleted */
	CHECK(ctl_put("/t/del/b", "vb"));
	struct store_preconditions pre = { ctl_mod("/t/del/b"), 0 };
	pre.create_revision = pre.mod_revision;
	CHECK_RC(store_delete(s, S("b"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(ctl_lacks("/t/del/b"));
	store_free(s);
	return true;
}

/* A delete whose precondition is stale is refused; etcd keeps the key. */
static bool test_delete_stale_precondition(void)
{
	struct store_error err = { 0 };
	struct store_kv cur = { 0 };
	struct store_preconditions pre = { 0 };
	struct store *s = ctl_store_open("/t/delpre/");
	int64_t old, now, create;
	struct ctl_kv c;

	CHECK(s);
	CHECK(ctl_put("/t/delpre/k", "mine"));
	old = ctl_mod("/t/delpre/k");
	CHECK(ctl_put("/t/delpre/k", "theirs"));
	now = ctl_mod("/t/delpre/k");
	CHECK(now > old);

	pre.mod_revision = old;
	CHECK_RC(store_delete(s, S("k"), &pre, &cur, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(err.revision == now);
	CHECK(util_kv_is(&cur, S("k"), S("theirs")));
	CHECK(cur.mod_revision == now);
	store_kv_release(&cur);
	CHECK(ctl_has("/t/delpre/k", "theirs"));
	CHECK(ctl_mod("/t/delpre/k") == now);

	/* the same value, deleted and created again: a new create_revision */
	CHECK(ctl_get("/t/delpre/k", &c) == 1);
	create = c.create_revision;
	ctl_kv_release(&c);
	CHECK(create == old);
	CHECK(ctl_del("/t/delpre/k"));
	CHECK(ctl_put("/t/delpre/k", "theirs"));
	now = ctl_mod("/t/delpre/k");
	pre.mod_revision = 0;
	pre.create_revision = create;
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("k"), &pre, NULL, NULL, &err),
		 STORE_EPRECONDITION);
	CHECK(ctl_has("/t/delpre/k", "theirs"));
	CHECK(ctl_mod("/t/delpre/k") == now);

	/* "must not exist" makes no sense for a delete; it deletes nothing */
	pre.mod_revision = STORE_REV_ABSENT;
	pre.create_revision = 0;
	memset(&err, 0, sizeof(err));
	CHECK(store_delete(s, S("k"), &pre, NULL, NULL, &err) < 0);
	CHECK(err.msg[0] != '\0');
	CHECK(ctl_has("/t/delpre/k", "theirs"));

	/* with the current revision it goes */
	pre.mod_revision = now;
	pre.create_revision = now;
	CHECK_RC(store_delete(s, S("k"), &pre, NULL, NULL, &err), STORE_OK);
	CHECK(ctl_lacks("/t/delpre/k"));
	store_free(s);
	return true;
}

/* ---- cluster ---- */

static bool test_revision(void)
{
	struct store_error err = { 0 };
	struct store *s = ctl_store_open("/t/rev/");
	int64_t r0 = 0, r1 = 0;

	CHECK(s);
	CHECK_RC(store_revision(s, &r0, &err), STORE_OK);
	CHECK(r0 > 0);
	CHECK(r0 == ctl_revision());
	CHECK(ctl_put("/t/rev/x", "1"));
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 1);
	/* a write outside the prefix moves the revision all the same */
	CHECK(ctl_put("/t/outside-rev", "1"));
	CHECK_RC(store_revision(s, &r1, &err), STORE_OK);
	CHECK(r1 == r0 + 2);
	store_free(s);
	return true;
}

static bool test_members(void)
{
	struct store_error err = { 0 };
	struct store_member *m = NULL;
	struct store *s = ctl_store_open(NULL);
	size_t n = 0;
	char *out, *end;
	uint64_t id;

	CHECK(s);
	CHECK_RC(store_members(s, &m, &n, &err), STORE_OK);
	CHECK(n == 1);
	CHECK(m[0].name && strcmp(m[0].name, "test") == 0);
	CHECK(m[0].n_client_urls == 1);
	CHECK(strcmp(m[0].client_urls[0], ctl_endpoint) == 0);
	out = util_sh_out("%s member list -w simple", ctl_cmd);
	CHECK(out);
	errno = 0;
	id = strtoull(out, &end, 16);
	CHECK(errno == 0 && end != out && *end == ',');
	free(out);
	CHECK(m[0].id == id);
	store_members_free(m, n);
	store_free(s);
	return true;
}

int main(void)
{
	if (!ctl_setup())
		return 1;
	TAP_RUN(test_config_einval);
	TAP_RUN(test_create_get);
	TAP_RUN(test_create_exists);
	TAP_RUN(test_get_notfound);
	TAP_RUN(test_binary_keys);
	TAP_RUN(test_prefix_isolation);
	TAP_RUN(test_list_keys_only);
	TAP_RUN(test_list_paged_one_revision);
	TAP_RUN(test_delete);
	TAP_RUN(test_delete_stale_precondition);
	TAP_RUN(test_revision);
	TAP_RUN(test_members);
	return tap_done(0);
}
