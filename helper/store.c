/*
 * store.c - the backend-neutral half of helper/store.h
 *
 * Checks arguments and the configuration, prepends the store prefix to
 * every key on the way to a backend and strips it on the way back (a key
 * a backend returns outside the prefix is dropped), pages lists at one
 * revision, checks preconditions, and runs the guaranteed-update loop of
 * the Kubernetes etcd helper: read (or take the caller's suggestion), let
 * the caller compute the new value, compare-and-swap on mod_revision, and on
 * a lost race start again from the state the failed transaction returned.
 *
 * With refresh_endpoints_ms, the endpoint list follows the cluster's
 * members.  There is no thread for it (the daemon forks after the store is
 * made, and a thread would not survive the fork): the calls that talk to
 * etcd, and the watch when it lost its connection, first check whether a
 * refresh is due (the interval passed, or every endpoint failed since the
 * last one); one thread refreshes, the others go on with the list there
 * is.  An idle mount with a connected watch does not refresh: nothing
 * uses the list then.
 *
 * What it cannot do: talk to etcd (the backends in etcd3.c, and later
 * etcd2.c, do that through transport.c); store_free does not wait for
 * requests other threads are still running on the store.
 *
 * Lock order: a store's watch_lock is taken alone; refresh_lock is held
 * only across a refresh, which takes the transport's locks; a backend's
 * locks are never held while calling back into this file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* the strerror_r that returns a string */
#endif
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "store_i.h"
#include "transport.h"

#define STORE_DEFAULT_PAGE_SIZE		1000
/* etcd's own limit, --max-request-bytes */
#define STORE_DEFAULT_MAX_VALUE_SIZE	((size_t)1572864)
#define STORE_DEFAULT_MAX_REPLY_SIZE	((size_t)256 << 20)
#define STORE_DEFAULT_UPDATE_RETRIES	16
#define STORE_DEFAULT_CONNECT_MS	2000L
#define STORE_DEFAULT_REQUEST_MS	5000L
/* A list whose later page was compacted away is read again, this often. */
#define STORE_LIST_RESTARTS		3
/*
 * After every endpoint failed, the members are asked again at most this
 * often: with a cluster that is down, each try costs a connect timeout
 * per endpoint, which a request should not pay every time.
 */
#define STORE_REFRESH_RETRY_MS		1000

#ifndef ETCDFS_DEFAULT_ENDPOINT
#define ETCDFS_DEFAULT_ENDPOINT "http://127.0.0.1:2379"
#endif

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * What store.c keeps beside the struct store of store_i.h: the watches, so
 * that store_free can stop those its caller left running.
 */
struct store_priv {
	struct store s;
	pthread_mutex_t watch_lock;
	struct store_watch_node *watches;	/* protected by watch_lock */
	char **endpoints;			/* owned, parsed from cfg */
	size_t n_endpoints;
	size_t strings_len;		/* of s.strings, wiped on free */
	bool be_ready;			/* be_ops->init succeeded */

	/* The endpoint refresh; see the top of this file. */
	pthread_mutex_t refresh_lock;	/* held by the thread refreshing */
	int64_t refresh_next_ms;	/* atomic; 0: at the first call */
	int64_t refresh_last_ms;	/* protected by refresh_lock */
	uint64_t refresh_seen;		/* atomic; the transport's unreachable
					 * count after the last refresh */
};

/*
 * A watch as store.c allocates it: the backend calls w.fn, which is
 * store_watch_event(), which strips the prefix and calls the caller's fn.
 */
struct store_watch_node {
	struct store_watch w;
	store_watch_fn fn;		/* the caller's */
	void *arg;
	/* protected by the store's watch_lock */
	struct store_watch_node *prev, *next;
	bool started;			/* be->watch succeeded */
};

static struct store_priv *store_priv(struct store *s)
{
	return container_of(s, struct store_priv, s);
}

char *store_range_end(const char *prefix, size_t prefix_len, size_t *len)
{
	char *end;
	size_t n = prefix_len;

	while (n > 0 && (unsigned char)prefix[n - 1] == 0xff)
		n--;
	if (n == 0) {
		end = calloc(1, 2);
		if (!end)
			return NULL;
		*len = 1;
		return end;
	}
	end = malloc(n + 1);
	if (!end)
		return NULL;
	memcpy(end, prefix, n);
	end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
	end[n] = '\0';
	*len = n;
	return end;
}

/* The store prefix followed by @key, malloc()ed and NUL-terminated. */
static char *store_full_key(struct store *s, const char *key, size_t key_len,
			    size_t *len)
{
	char *full;

	if (key_len > SIZE_MAX - s->prefix_len - 1)
		return NULL;
	full = malloc(s->prefix_len + key_len + 1);
	if (!full)
		return NULL;
	memcpy(full, s->prefix, s->prefix_len);
	if (key_len)
		memcpy(full + s->prefix_len, key, key_len);
	full[s->prefix_len + key_len] = '\0';
	*len = s->prefix_len + key_len;
	return full;
}

/*
 * Strips the prefix from @kv's key in place; false (and @kv untouched) if
 * the key does not start with it.  A kv without a key passes.
 */
static bool store_strip(struct store *s, struct store_kv *kv)
{
	if (!kv->key)
		return kv->key_len == 0;
	if (kv->key_len < s->prefix_len ||
	    memcmp(kv->key, s->prefix, s->prefix_len) != 0)
		return false;
	memmove(kv->key, kv->key + s->prefix_len,
		kv->key_len - s->prefix_len);
	kv->key_len -= s->prefix_len;
	kv->key[kv->key_len] = '\0';
	return true;
}

/* --- configuration --- */

static bool store_is_space(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * An endpoint is an http:// or https:// URL with a host, maybe a port
 * (1-65535) and a path, of printable bytes, and nothing a request path
 * would be appended after badly (a query, a fragment) or that would hide
 * credentials in it (user@).
 */
static bool store_endpoint_ok(const char *ep)
{
	const char *host, *end, *port, *p;
	long n;

	if (strncmp(ep, "http://", 7) == 0)
		host = ep + 7;
	else if (strncmp(ep, "https://", 8) == 0)
		host = ep + 8;
	else
		return false;
	for (p = ep; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f ||
		    *p == '?' || *p == '#' || *p == ',' || *p == '@')
			return false;
	end = strchr(host, '/');
	if (!end)
		end = host + strlen(host);
	if (*host == '[') {
		/* [v6 address] */
		p = memchr(host, ']', (size_t)(end - host));
		if (!p || p == host + 1)
			return false;
		port = p + 1 < end ? p + 1 : NULL;
		if (port && *port != ':')
			return false;
	} else {
		port = memchr(host, ':', (size_t)(end - host));
		if (port == host || host == end)
			return false;
	}
	if (!port)
		return true;
	/* ":digits", nothing else, 1 to 65535 */
	port++;
	if (port == end || end - port > 5)
		return false;
	for (n = 0, p = port; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		n = n * 10 + (*p - '0');
	}
	return n >= 1 && n <= 65535;
}

/*
 * Splits the comma list @list into s's endpoint array: spaces around each
 * are dropped, as is a trailing '/'; each must be an http:// or https://
 * URL with a host.
 */
static int store_parse_endpoints(struct store_priv *p, const char *list,
				 struct store_error *err)
{
	const char *a = list, *b, *e;
	size_t n = 1, i = 0, len;
	char *ep;

	for (b = list; *b; b++)
		if (*b == ',')
			n++;
	p->endpoints = calloc(n, sizeof(*p->endpoints));
	if (!p->endpoints)
		return store_enomem(err, NULL, 0);
	for (;;) {
		e = strchr(a, ',');
		if (!e)
			e = a + strlen(a);
		b = e;
		while (a < b && store_is_space(*a))
			a++;
		while (b > a && store_is_space(b[-1]))
			b--;
		len = (size_t)(b - a);
		while (len > 0 && a[len - 1] == '/')
			len--;
		ep = store_memdup(a, len);
		if (!ep)
			return store_enomem(err, NULL, 0);
		p->endpoints[i++] = ep;
		p->n_endpoints = i;
		if (!store_endpoint_ok(ep))
			return store_fail(err, STORE_EINVAL, NULL, 0, 0,
					  "bad endpoint '%.*s'",
					  (int)(b - a), a);
		if (!*e)
			break;
		a = e + 1;
	}
	return 0;
}

/* strerror(@e), lower case as every message here. */
static const char *store_errno_str(int e, char *buf, size_t size)
{
	char tmp[128];

	/* GNU strerror_r: returns a string, maybe not the one passed. */
	snprintf(buf, size, "%s", strerror_r(e, tmp, sizeof(tmp)));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

/* EINVAL naming @path unless it is a file this process can read. */
static int store_check_file(const char *what, const char *path,
			    struct store_error *err)
{
	char ebuf[128];
	FILE *f;
	int e;

	f = fopen(path, "r");
	if (!f) {
		e = errno;
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "cannot read %s '%s': %s", what, path,
				  store_errno_str(e, ebuf, sizeof(ebuf)));
	}
	/* A directory opens; reading it is what fails. */
	if (fgetc(f) == EOF && ferror(f)) {
		e = errno;
		fclose(f);
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "cannot read %s '%s': %s", what, path,
				  store_errno_str(e, ebuf, sizeof(ebuf)));
	}
	fclose(f);
	return 0;
}

/*
 * Copies cfg's strings into one block owned by the store, so that the
 * caller's may go away.  An empty file name or user counts as none.
 */
static int store_copy_config(struct store *s, const struct store_config *cfg)
{
	const char **fields[] = {
		&s->cfg.endpoints, &s->cfg.prefix, &s->cfg.cacert,
		&s->cfg.cert, &s->cfg.key, &s->cfg.user, &s->cfg.password,
	};
	size_t i, n, total = 1;
	char *q;

	s->cfg = *cfg;
	if (s->cfg.cacert && !s->cfg.cacert[0])
		s->cfg.cacert = NULL;
	if (s->cfg.cert && !s->cfg.cert[0])
		s->cfg.cert = NULL;
	if (s->cfg.key && !s->cfg.key[0])
		s->cfg.key = NULL;
	if (s->cfg.user && !s->cfg.user[0])
		s->cfg.user = NULL;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (*fields[i])
			total += strlen(*fields[i]) + 1;
	s->strings = malloc(total);
	if (!s->strings)
		return STORE_EINTERNAL;
	q = s->strings;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (!*fields[i])
			continue;
		n = strlen(*fields[i]) + 1;
		memcpy(q, *fields[i], n);
		*fields[i] = q;
		q += n;
	}
	*q = '\0';
	store_priv(s)->strings_len = total;

	if (!s->cfg.page_size)
		s->cfg.page_size = STORE_DEFAULT_PAGE_SIZE;
	if (!s->cfg.max_value_size)
		s->cfg.max_value_size = STORE_DEFAULT_MAX_VALUE_SIZE;
	if (!s->cfg.max_reply_size)
		s->cfg.max_reply_size = STORE_DEFAULT_MAX_REPLY_SIZE;
	if (!s->cfg.max_update_retries)
		s->cfg.max_update_retries = STORE_DEFAULT_UPDATE_RETRIES;
	if (!s->cfg.connect_timeout_ms)
		s->cfg.connect_timeout_ms = STORE_DEFAULT_CONNECT_MS;
	if (!s->cfg.request_timeout_ms)
		s->cfg.request_timeout_ms = STORE_DEFAULT_REQUEST_MS;
	return 0;
}

static void store_priv_free(struct store_priv *p)
{
	size_t i;

	if (p->be_ready && p->s.be_ops->release)
		p->s.be_ops->release(&p->s);
	transport_free(p->s.tr);
	for (i = 0; i < p->n_endpoints; i++)
		free(p->endpoints[i]);
	free(p->endpoints);
	free(p->s.prefix);
	if (p->s.strings) {
		/* It holds the password. */
		memset(p->s.strings, 0, p->strings_len);
		free(p->s.strings);
	}
	pthread_mutex_destroy(&p->watch_lock);
	pthread_mutex_destroy(&p->refresh_lock);
	free(p);
}

struct store *store_new(const struct store_config *cfg, struct store_error *err)
{
	struct transport_config tc = { 0 };
	struct store_priv *p;
	struct store *s;
	int rc;

	if (!cfg) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0, "no configuration");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		store_enomem(err, NULL, 0);
		return NULL;
	}
	if (pthread_mutex_init(&p->watch_lock, NULL) != 0) {
		free(p);
		store_enomem(err, NULL, 0);
		return NULL;
	}
	if (pthread_mutex_init(&p->refresh_lock, NULL) != 0) {
		pthread_mutex_destroy(&p->watch_lock);
		free(p);
		store_enomem(err, NULL, 0);
		return NULL;
	}
	s = &p->s;
	if (store_copy_config(s, cfg) < 0) {
		store_enomem(err, NULL, 0);
		goto err_free;
	}
	s->prefix = strdup(s->cfg.prefix ? s->cfg.prefix : "");
	if (!s->prefix) {
		store_enomem(err, NULL, 0);
		goto err_free;
	}
	s->prefix_len = strlen(s->prefix);

	if (store_parse_endpoints(p, s->cfg.endpoints ? s->cfg.endpoints :
				  ETCDFS_DEFAULT_ENDPOINT, err) < 0)
		goto err_free;
	if (s->cfg.api != STORE_API_V3 && s->cfg.api != STORE_API_V2) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0, "bad api 'v%d'",
			   (int)s->cfg.api);
		goto err_free;
	}
	if (s->cfg.connect_timeout_ms < 0 || s->cfg.request_timeout_ms < 0) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "bad timeout: %ld ms to connect, %ld ms a request",
			   s->cfg.connect_timeout_ms,
			   s->cfg.request_timeout_ms);
		goto err_free;
	}
	if (s->cfg.refresh_endpoints_ms < 0) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "bad endpoint refresh interval: %ld ms",
			   s->cfg.refresh_endpoints_ms);
		goto err_free;
	}
	if (s->cfg.max_update_retries < 0) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "bad number of update retries %d",
			   s->cfg.max_update_retries);
		goto err_free;
	}
	if (s->cfg.user && !s->cfg.password) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "user '%s' given without a password", s->cfg.user);
		goto err_free;
	}
	if (s->cfg.cert && !s->cfg.key) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "client certificate '%s' given without its key",
			   s->cfg.cert);
		goto err_free;
	}
	if (s->cfg.key && !s->cfg.cert) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "client key '%s' given without its certificate",
			   s->cfg.key);
		goto err_free;
	}
	if (s->cfg.cacert &&
	    store_check_file("CA certificate", s->cfg.cacert, err) < 0)
		goto err_free;
	if (s->cfg.cert &&
	    store_check_file("client certificate", s->cfg.cert, err) < 0)
		goto err_free;
	if (s->cfg.key && store_check_file("client key", s->cfg.key, err) < 0)
		goto err_free;

	s->be_ops = s->cfg.api == STORE_API_V2 ? &store_etcd2_backend :
		&store_etcd3_backend;

	tc.endpoints = (const char *const *)p->endpoints;
	tc.n_endpoints = p->n_endpoints;
	tc.cacert = s->cfg.cacert;
	tc.cert = s->cfg.cert;
	tc.key = s->cfg.key;
	tc.auth = !s->cfg.user ? TRANSPORT_AUTH_NONE :
		s->cfg.api == STORE_API_V2 ? TRANSPORT_AUTH_BASIC :
		TRANSPORT_AUTH_ETCD3;
	tc.user = s->cfg.user;
	tc.password = s->cfg.password;
	tc.connect_timeout_ms = s->cfg.connect_timeout_ms;
	tc.request_timeout_ms = s->cfg.request_timeout_ms;
	tc.max_reply_size = s->cfg.max_reply_size;
	s->tr = transport_new(&tc, err);
	if (!s->tr)
		goto err_free;

	rc = s->be_ops->init(s, err);
	if (rc < 0)
		goto err_free;
	p->be_ready = true;
	return s;

err_free:
	store_priv_free(p);
	return NULL;
}

/* Stops and frees the watch of @node, which is off the list already. */
static void store_watch_node_free(struct store_watch_node *node)
{
	struct store *s = node->w.s;

	if (node->started && s->be_ops->watch_stop)
		s->be_ops->watch_stop(&node->w);
	free(node->w.key);
	free(node->w.range_end);
	free(node);
}

void store_free(struct store *s)
{
	struct store_priv *p;
	struct store_watch_node *node, *next;

	if (!s)
		return;
	p = store_priv(s);
	pthread_mutex_lock(&p->watch_lock);
	node = p->watches;
	p->watches = NULL;
	pthread_mutex_unlock(&p->watch_lock);
	for (; node; node = next) {
		next = node->next;
		store_watch_node_free(node);
	}
	store_priv_free(p);
}

const char *store_backend_name(const struct store *s)
{
	return s->be_ops->name;
}

size_t store_max_value_size(const struct store *s)
{
	return s->cfg.max_value_size;
}

const char *store_endpoint(struct store *s)
{
	return transport_endpoint(s->tr);
}

/* --- endpoints from the members --- */

static int64_t store_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool store_list_has(char *const *list, size_t n, const char *ep)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(list[i], ep) == 0)
			return true;
	return false;
}

int store_refresh_endpoints(struct store *s, size_t *n_out,
			    struct store_error *err)
{
	struct store_priv *p = store_priv(s);
	struct store_member *m = NULL;
	size_t nm = 0, i, k, cap = 0, n = 0, len;
	char **list = NULL, *ep;
	int rc;

	if (n_out)
		*n_out = 0;
	rc = store_members(s, &m, &nm, err);
	if (rc < 0)
		return rc;
	for (i = 0; i < nm; i++)
		cap += m[i].n_client_urls;
	cap += p->n_endpoints;
	list = calloc(cap ? cap : 1, sizeof(*list));
	if (!list) {
		rc = store_enomem(err, NULL, 0);
		goto out;
	}
	/*
	 * A member added but not started has no client URL yet; one that
	 * advertises something that is no URL is skipped rather than
	 * trusted: the list is what every later request goes to.
	 */
	for (i = 0; i < nm; i++) {
		for (k = 0; k < m[i].n_client_urls; k++) {
			len = strlen(m[i].client_urls[k]);
			while (len > 0 && m[i].client_urls[k][len - 1] == '/')
				len--;
			ep = store_memdup(m[i].client_urls[k], len);
			if (!ep) {
				rc = store_enomem(err, NULL, 0);
				goto out;
			}
			if (!store_endpoint_ok(ep) ||
			    store_list_has(list, n, ep)) {
				free(ep);
				continue;
			}
			list[n++] = ep;
		}
	}
	if (n == 0) {
		rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				"no member of the cluster has a usable client "
				"URL; keeping the endpoints there are");
		goto out;
	}
	/*
	 * The endpoints given stay, last: a name or a proxy that leads to
	 * whatever members there will be is the way back when all of these
	 * are gone.
	 */
	for (i = 0; i < p->n_endpoints; i++) {
		if (store_list_has(list, n, p->endpoints[i]))
			continue;
		list[n] = strdup(p->endpoints[i]);
		if (!list[n]) {
			rc = store_enomem(err, NULL, 0);
			goto out;
		}
		n++;
	}
	rc = transport_set_endpoints(s->tr, (const char *const *)list, n,
				     err);
	if (rc == 0 && n_out)
		*n_out = n;
out:
	if (list)
		for (i = 0; i < n; i++)
			free(list[i]);
	free(list);
	store_members_free(m, nm);
	return rc;
}

/*
 * Refreshes the endpoints if a refresh is due (see the top of this file).
 * Its outcome is not the caller's: on failure the list stays as it was,
 * and the caller's own request says what it meets.
 */
static void store_refresh_maybe(struct store *s)
{
	struct store_priv *p = store_priv(s);
	uint64_t fails;
	int64_t now;
	bool failed;

	if (s->cfg.refresh_endpoints_ms <= 0)
		return;
	now = store_now_ms();
	fails = transport_unreachable_count(s->tr);
	failed = fails != __atomic_load_n(&p->refresh_seen, __ATOMIC_ACQUIRE);
	if (!failed && now < __atomic_load_n(&p->refresh_next_ms,
					     __ATOMIC_ACQUIRE))
		return;
	/* Another thread refreshes: use the list there is meanwhile. */
	if (pthread_mutex_trylock(&p->refresh_lock) != 0)
		return;
	failed = fails != p->refresh_seen;
	if ((failed && p->refresh_last_ms &&
	     now - p->refresh_last_ms < STORE_REFRESH_RETRY_MS) ||
	    (!failed && now < p->refresh_next_ms)) {
		pthread_mutex_unlock(&p->refresh_lock);
		return;
	}
	store_refresh_endpoints(s, NULL, NULL);
	/* The refresh's own failures are no reason for another one. */
	__atomic_store_n(&p->refresh_seen, transport_unreachable_count(s->tr),
			 __ATOMIC_RELEASE);
	p->refresh_last_ms = store_now_ms();
	__atomic_store_n(&p->refresh_next_ms,
			 p->refresh_last_ms + s->cfg.refresh_endpoints_ms,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->refresh_lock);
}

int store_revision(struct store *s, int64_t *rev, struct store_error *err)
{
	*rev = 0;
	store_refresh_maybe(s);
	return s->be_ops->revision(s, rev, err);
}

/* --- reads --- */

/*
 * Reads the full key @full into @cur (prefix stripped); *@exists false and
 * 0 if it is absent.
 */
static int store_read(struct store *s, const char *full, size_t full_len,
		      unsigned flags, struct store_kv *cur, bool *exists,
		      struct store_error *err)
{
	int rc;

	memset(cur, 0, sizeof(*cur));
	*exists = false;
	rc = s->be_ops->get(s, full, full_len, flags, cur, err);
	if (rc == STORE_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	if (!cur->key) {
		/* The backend did not say which key: it is the one asked. */
		cur->key = store_memdup(full, full_len);
		if (!cur->key)
			return store_enomem(err, full, full_len);
		cur->key_len = full_len;
	}
	if (cur->key_len != full_len ||
	    memcmp(cur->key, full, full_len) != 0 || !store_strip(s, cur)) {
		store_kv_release(cur);
		return store_fail(err, STORE_EBADREPLY, full, full_len, 0,
				  "the server answered another key");
	}
	*exists = true;
	return 0;
}

int store_get(struct store *s, const char *key, size_t key_len, unsigned flags,
	      struct store_kv *out, struct store_error *err)
{
	char *full;
	size_t full_len;
	bool exists;
	int rc;

	store_refresh_maybe(s);
	memset(out, 0, sizeof(*out));
	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	if (full_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto out;
	}
	rc = store_read(s, full, full_len, flags, out, &exists, err);
	if (rc == 0 && !exists)
		rc = store_fail(err, STORE_ENOTFOUND, full, full_len, 0,
				"key not found");
out:
	free(full);
	return rc;
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

int store_list_pages(struct store *s, const char *prefix, size_t prefix_len,
		     unsigned flags, store_page_fn page, void *arg,
		     int64_t *revision, struct store_error *err)
{
	struct store_list l = { 0 };
	char *full, *end, *start = NULL;
	size_t full_len, end_len, start_len = 0, got;
	const struct store_kv *last;
	int64_t rev;
	int rc = 0, restarts = 0;
	bool more, first;

	store_refresh_maybe(s);
	full = store_full_key(s, prefix, prefix_len, &full_len);
	if (!full)
		return store_enomem(err, prefix, prefix_len);
	end = store_range_end(full, full_len, &end_len);
	if (!end) {
		free(full);
		return store_enomem(err, prefix, prefix_len);
	}
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

again:
	rev = 0;
	for (first = true;; first = false) {
		more = false;
		rc = s->be_ops->range(s, start ? start : full,
				      start ? start_len : full_len, end,
				      end_len, rev, s->cfg.page_size, flags,
				      &l, &more, err);
		if (rc == STORE_ECOMPACTED && rev != 0 &&
		    restarts < STORE_LIST_RESTARTS) {
			/*
			 * Compacted between two pages: the first page's
			 * revision is gone; read the whole list again at a
			 * newer one rather than mix revisions.
			 */
			restarts++;
			store_list_release(&l);
			free(start);
			start = NULL;
			goto again;
		}
		if (rc < 0)
			goto out;
		/* A later page's header holds the current revision, not
		 * the one it was read at. */
		if (rev == 0)
			rev = l.revision;
		else
			l.revision = rev;
		got = l.n;
		if (more && got) {
			/* Go on right after the last key: that key + "\0". */
			last = &l.kvs[l.n - 1];
			free(start);
			start = malloc(last->key_len + 2);
			if (!start) {
				rc = store_enomem(err, full, full_len);
				goto out;
			}
			memcpy(start, last->key, last->key_len);
			start[last->key_len] = '\0';
			start[last->key_len + 1] = '\0';
			start_len = last->key_len + 1;
		}
		if (more && !got) {
			rc = store_fail(err, STORE_EBADREPLY, full, full_len, 0,
					"the server promised more keys and "
					"sent none");
			goto out;
		}
		if (more && rev == 0) {
			rc = store_fail(err, STORE_EBADREPLY, full, full_len, 0,
					"no revision in a list reply");
			goto out;
		}
		store_strip_list(s, &l, 0);
		rc = page(arg, &l, first, err);
		store_list_release(&l);
		if (rc < 0)
			goto out;
		if (!more)
			break;
	}
	if (revision)
		*revision = rev;
out:
	store_list_release(&l);
	free(start);
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

/* --- writes --- */

int store_create(struct store *s, const char *key, size_t key_len,
		 const char *value, size_t value_len, int64_t lease,
		 int64_t *rev, struct store_error *err)
{
	struct store_kv cur = { 0 };
	char *full;
	size_t full_len;
	int64_t newrev = 0;
	int rc;

	store_refresh_maybe(s);
	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	if (full_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto out;
	}
	if (value_len > s->cfg.max_value_size) {
		rc = store_fail_too_large(err, full, full_len, value_len,
					  s->cfg.max_value_size);
		goto out;
	}
	if (lease < 0) {
		rc = store_fail(err, STORE_EINVAL, full, full_len, 0,
				"bad lease %lld", (long long)lease);
		goto out;
	}
	rc = s->be_ops->cas(s, full, full_len, 0, value ? value : "",
			    value_len, lease, &newrev, &cur, err);
	if (rc == STORE_EPRECONDITION)
		rc = store_fail(err, STORE_EEXISTS, full, full_len,
				cur.mod_revision, "key exists");
	else if (rc == 0 && rev)
		*rev = newrev;
	store_kv_release(&cur);
out:
	free(full);
	return rc;
}

/* EINVAL unless @pre is made of revisions, STORE_REV_ABSENT or 0. */
static bool store_pre_ok(const struct store_preconditions *pre)
{
	return !pre || ((pre->mod_revision >= 0 ||
			 pre->mod_revision == STORE_REV_ABSENT) &&
			pre->create_revision >= 0);
}

int store_delete(struct store *s, const char *key, size_t key_len,
		 const struct store_preconditions *pre, struct store_kv *prev,
		 int64_t *rev, struct store_error *err)
{
	struct store_kv tmp = { 0 };
	int64_t expect_mod = -1, expect_create = 0, newrev = 0;
	char *full;
	size_t full_len;
	int rc;

	store_refresh_maybe(s);
	if (prev)
		memset(prev, 0, sizeof(*prev));
	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	if (full_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto out;
	}
	if (!store_pre_ok(pre) ||
	    (pre && pre->mod_revision == STORE_REV_ABSENT)) {
		rc = store_fail(err, STORE_EINVAL, full, full_len, 0,
				"bad precondition for a delete");
		goto out;
	}
	if (pre && pre->mod_revision > 0)
		expect_mod = pre->mod_revision;
	if (pre)
		expect_create = pre->create_revision;
	rc = s->be_ops->del(s, full, full_len, expect_mod, expect_create,
			    &tmp, &newrev, err);
	if (rc == 0 || rc == STORE_EPRECONDITION) {
		if (tmp.key && !store_strip(s, &tmp))
			store_kv_release(&tmp);
		if (rc == STORE_EPRECONDITION && err)
			err->revision = tmp.mod_revision;
		if (prev) {
			*prev = tmp;
			memset(&tmp, 0, sizeof(tmp));
		}
	}
	if (rc == 0 && rev)
		*rev = newrev;
	store_kv_release(&tmp);
out:
	free(full);
	return rc;
}

/* True if @pre holds for @cur (NULL: the key is absent). */
static bool store_pre_holds(const struct store_preconditions *pre,
			    const struct store_kv *cur)
{
	if (!pre)
		return true;
	if (pre->mod_revision == STORE_REV_ABSENT)
		return !cur;
	if (pre->mod_revision > 0 &&
	    (!cur || cur->mod_revision != pre->mod_revision))
		return false;
	if (pre->create_revision > 0 &&
	    (!cur || cur->create_revision != pre->create_revision))
		return false;
	return true;
}

int store_guaranteed_update(struct store *s, const char *key, size_t key_len,
			    bool ignore_not_found,
			    const struct store_preconditions *pre,
			    const struct store_kv *suggestion,
			    store_try_update_fn try_update, void *arg,
			    struct store_kv *out, struct store_error *err)
{
	struct store_kv cur = { 0 }, next = { 0 };
	struct store_update upd;
	char *full, *value;
	size_t full_len;
	int64_t lease, newrev;
	bool exists, current;
	int rc, attempts = 0;

	store_refresh_maybe(s);
	if (out)
		memset(out, 0, sizeof(*out));
	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	if (full_len == 0 || !try_update || !store_pre_ok(pre)) {
		rc = store_fail(err, STORE_EINVAL, full, full_len, 0,
				full_len ? "bad precondition or update function"
				: "empty key");
		goto out;
	}

	if (suggestion && suggestion->mod_revision > 0) {
		/* Checked by the transaction's compare like any state. */
		if (store_kv_copy(&cur, suggestion) < 0) {
			rc = store_enomem(err, full, full_len);
			goto out;
		}
		free(cur.key);
		cur.key = store_memdup(key, key_len);
		if (!cur.key) {
			rc = store_enomem(err, full, full_len);
			goto out;
		}
		cur.key_len = key_len;
		exists = true;
		current = false;
	} else if (suggestion) {
		exists = false;
		current = false;
	} else {
		rc = store_read(s, full, full_len, 0, &cur, &exists, err);
		if (rc < 0)
			goto out;
		current = true;
	}

	for (;;) {
		if ((!exists && !ignore_not_found) ||
		    !store_pre_holds(pre, exists ? &cur : NULL)) {
			if (!current) {
				/*
				 * The caller's suggestion may be stale: only
				 * the current state can fail the update.
				 */
				store_kv_release(&cur);
				rc = store_read(s, full, full_len, 0, &cur,
						&exists, err);
				if (rc < 0)
					goto out;
				current = true;
				continue;
			}
			if (!exists && !ignore_not_found)
				rc = store_fail(err, STORE_ENOTFOUND, full,
						full_len, 0, "key not found");
			else if (exists)
				rc = store_fail(err, STORE_EPRECONDITION, full,
						full_len, cur.mod_revision,
						"precondition failed: the key "
						"is at revision %lld",
						(long long)cur.mod_revision);
			else
				rc = store_fail(err, STORE_EPRECONDITION, full,
						full_len, 0,
						"precondition failed: the key "
						"does not exist");
			goto out;
		}
		if (attempts >= s->cfg.max_update_retries) {
			rc = store_fail(err, STORE_ECONFLICT, full, full_len,
					exists ? cur.mod_revision : 0,
					"gave up after %d conflicting updates",
					attempts);
			goto out;
		}
		attempts++;

		upd.value = NULL;
		upd.value_len = 0;
		upd.lease = -1;
		rc = try_update(arg, exists ? &cur : NULL, &upd);
		if (rc != 0) {
			free(upd.value);
			if (rc > 0)
				rc = STORE_EINTERNAL;
			rc = store_fail(err, rc, full, full_len,
					exists ? cur.mod_revision : 0,
					"update stopped: %s",
					store_strerror(rc));
			goto out;
		}
		lease = upd.lease == -1 ? (exists ? cur.lease : 0) : upd.lease;
		if ((upd.value_len && !upd.value) || lease < 0) {
			free(upd.value);
			rc = store_fail(err, STORE_EINVAL, full, full_len, 0,
					"bad update: no value or bad lease");
			goto out;
		}
		if (upd.value_len > s->cfg.max_value_size) {
			free(upd.value);
			rc = store_fail_too_large(err, full, full_len,
						  upd.value_len,
						  s->cfg.max_value_size);
			goto out;
		}
		if (exists && upd.value_len == cur.value_len &&
		    (upd.value_len == 0 ||
		     memcmp(upd.value, cur.value, upd.value_len) == 0) &&
		    lease == cur.lease) {
			free(upd.value);
			if (!current) {
				/* Nothing to write to a state that may be
				 * stale: read the real one and try again. */
				store_kv_release(&cur);
				rc = store_read(s, full, full_len, 0, &cur,
						&exists, err);
				if (rc < 0)
					goto out;
				current = true;
				attempts--;
				continue;
			}
			if (out) {
				*out = cur;
				memset(&cur, 0, sizeof(cur));
			}
			rc = 0;
			goto out;
		}

		newrev = 0;
		memset(&next, 0, sizeof(next));
		rc = s->be_ops->cas(s, full, full_len,
				    exists ? cur.mod_revision : 0,
				    upd.value ? upd.value : "", upd.value_len,
				    lease, &newrev, &next, err);
		if (rc == STORE_EPRECONDITION) {
			/* Lost a race: go again from the winner's state. */
			free(upd.value);
			store_kv_release(&cur);
			current = true;
			exists = next.key != NULL && next.mod_revision > 0;
			if (!exists) {
				store_kv_release(&next);
				continue;
			}
			if (next.key_len != full_len ||
			    memcmp(next.key, full, full_len) != 0 ||
			    !store_strip(s, &next)) {
				store_kv_release(&next);
				rc = store_fail(err, STORE_EBADREPLY, full,
						full_len, 0,
						"the server answered another "
						"key");
				goto out;
			}
			cur = next;
			memset(&next, 0, sizeof(next));
			continue;
		}
		store_kv_release(&next);
		if (rc < 0) {
			free(upd.value);
			goto out;
		}
		if (!out) {
			free(upd.value);
			goto out;
		}
		/* The caller's buffer may lack the NUL a store_kv has. */
		value = realloc(upd.value, upd.value_len + 1);
		if (!value) {
			free(upd.value);
			/* Written, but it cannot be told: say so. */
			rc = store_enomem(err, full, full_len);
			goto out;
		}
		value[upd.value_len] = '\0';
		out->key = store_memdup(key, key_len);
		if (!out->key) {
			free(value);
			rc = store_enomem(err, full, full_len);
			goto out;
		}
		out->key_len = key_len;
		out->value = value;
		out->value_len = upd.value_len;
		out->create_revision = exists ? cur.create_revision : newrev;
		out->mod_revision = newrev;
		out->version = !exists ? 1 : cur.version ? cur.version + 1 : 0;
		out->lease = lease;
		goto out;
	}
out:
	store_kv_release(&cur);
	free(full);
	return rc;
}

int store_move(struct store *s, const char *from, size_t from_len,
	       const struct store_preconditions *pre_from,
	       const char *to, size_t to_len,
	       const struct store_preconditions *pre_to,
	       const char *value, size_t value_len, int64_t *rev,
	       struct store_error *err)
{
	char *ffull, *tfull = NULL;
	size_t ffull_len, tfull_len;
	int64_t newrev = 0;
	int rc;

	store_refresh_maybe(s);
	if (!s->be_ops->move)
		return store_fail(err, STORE_ENOTSUP, from, from_len, 0,
				  "the %s backend cannot rename atomically",
				  s->be_ops->name);
	ffull = store_full_key(s, from, from_len, &ffull_len);
	if (!ffull)
		return store_enomem(err, from, from_len);
	tfull = store_full_key(s, to, to_len, &tfull_len);
	if (!tfull) {
		rc = store_enomem(err, to, to_len);
		goto out;
	}
	if (ffull_len == 0 || tfull_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto out;
	}
	if (!store_pre_ok(pre_from) || !store_pre_ok(pre_to) ||
	    (pre_from && pre_from->mod_revision == STORE_REV_ABSENT)) {
		rc = store_fail(err, STORE_EINVAL, ffull, ffull_len, 0,
				"bad precondition for a rename");
		goto out;
	}
	if (value && value_len > s->cfg.max_value_size) {
		rc = store_fail_too_large(err, tfull, tfull_len, value_len,
					  s->cfg.max_value_size);
		goto out;
	}
	rc = s->be_ops->move(s, ffull, ffull_len, pre_from, tfull, tfull_len,
			     pre_to, value, value_len, &newrev, err);
	if (rc == 0 && rev)
		*rev = newrev;
out:
	free(tfull);
	free(ffull);
	return rc;
}

int store_lease_grant(struct store *s, int64_t ttl, int64_t *id,
		      struct store_error *err)
{
	*id = 0;
	if (ttl <= 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "bad lease ttl %lld", (long long)ttl);
	store_refresh_maybe(s);
	return s->be_ops->lease_grant(s, ttl, id, err);
}

/* --- watches --- */

/* Shows @kv (borrowed) without the prefix; false if it is outside. */
static bool store_view(struct store *s, struct store_kv *kv)
{
	if (!kv->key || kv->key_len < s->prefix_len ||
	    memcmp(kv->key, s->prefix, s->prefix_len) != 0)
		return false;
	kv->key += s->prefix_len;
	kv->key_len -= s->prefix_len;
	return true;
}

/* Runs on the backend's watch thread: the prefix comes off here. */
static void store_watch_event(void *arg, const struct store_event *ev)
{
	struct store_watch_node *node = arg;
	struct store *s = node->w.s;
	struct store_event e = *ev;

	/*
	 * The watch lost its endpoint: refresh the list it reconnects over,
	 * so that an idle mount follows the members too.
	 */
	if (e.type == STORE_EV_ERROR && (e.err == STORE_EUNREACHABLE ||
					 e.err == STORE_ETIMEOUT))
		store_refresh_maybe(s);
	if (e.type == STORE_EV_PUT || e.type == STORE_EV_DELETE) {
		if (!store_view(s, &e.kv))
			return;
		if (e.prev_kv.key && !store_view(s, &e.prev_kv))
			memset(&e.prev_kv, 0, sizeof(e.prev_kv));
	}
	node->fn(node->arg, &e);
}

int store_watch(struct store *s, const char *key, size_t key_len, bool prefix,
		int64_t start_rev, store_watch_fn fn, void *arg,
		struct store_watch **out, struct store_error *err)
{
	struct store_priv *p = store_priv(s);
	struct store_watch_node *node;
	struct store_watch *w;
	int rc;

	store_refresh_maybe(s);
	*out = NULL;
	if (!fn || start_rev < 0)
		return store_fail(err, STORE_EINVAL, key, key_len, 0,
				  "bad watch arguments");
	if (!s->be_ops->watch)
		return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
				  "the %s backend cannot watch",
				  s->be_ops->name);
	node = calloc(1, sizeof(*node));
	if (!node)
		return store_enomem(err, key, key_len);
	w = &node->w;
	w->s = s;
	w->key = store_full_key(s, key, key_len, &w->key_len);
	if (!w->key) {
		rc = store_enomem(err, key, key_len);
		goto err_free;
	}
	if (prefix) {
		w->range_end = store_range_end(w->key, w->key_len,
					       &w->range_end_len);
		if (!w->range_end) {
			rc = store_enomem(err, key, key_len);
			goto err_free;
		}
		if (w->key_len == 0) {
			/* Every key: from "\0" to "\0". */
			free(w->key);
			w->key = calloc(1, 2);
			if (!w->key) {
				rc = store_enomem(err, key, key_len);
				goto err_free;
			}
			w->key_len = 1;
		}
	} else if (w->key_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto err_free;
	}
	w->start_rev = start_rev;
	w->fn = store_watch_event;
	w->arg = node;
	node->fn = fn;
	node->arg = arg;

	rc = s->be_ops->watch(s, w, err);
	if (rc < 0)
		goto err_free;
	node->started = true;

	pthread_mutex_lock(&p->watch_lock);
	node->next = p->watches;
	if (node->next)
		node->next->prev = node;
	p->watches = node;
	pthread_mutex_unlock(&p->watch_lock);
	*out = w;
	return 0;

err_free:
	store_watch_node_free(node);
	return rc;
}

void store_watch_stop(struct store_watch *w)
{
	struct store_watch_node *node;
	struct store_priv *p;

	if (!w)
		return;
	node = container_of(w, struct store_watch_node, w);
	p = store_priv(w->s);
	pthread_mutex_lock(&p->watch_lock);
	if (node->prev)
		node->prev->next = node->next;
	else
		p->watches = node->next;
	if (node->next)
		node->next->prev = node->prev;
	pthread_mutex_unlock(&p->watch_lock);
	store_watch_node_free(node);
}

/* --- cluster --- */

int store_members(struct store *s, struct store_member **members, size_t *n,
		  struct store_error *err)
{
	*members = NULL;
	*n = 0;
	if (!s->be_ops->members)
		return store_fail(err, STORE_ENOTSUP, NULL, 0, 0,
				  "the %s backend cannot list members",
				  s->be_ops->name);
	return s->be_ops->members(s, members, n, err);
}

/* --- directories --- */

static int store_dir_op(struct store *s, bool make, const char *key,
			size_t key_len, int64_t *rev, struct store_error *err)
{
	int (*op)(struct store *, const char *, size_t, int64_t *,
		  struct store_error *) =
		make ? s->be_ops->mkdir : s->be_ops->rmdir;
	int64_t newrev = 0;
	char *full;
	size_t full_len;
	int rc;

	if (rev)
		*rev = 0;
	if (!op)
		return store_fail(err, STORE_ENOTSUP, key, key_len, 0,
				  "the %s backend has no directories",
				  s->be_ops->name);
	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	if (full_len == 0)
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
	else
		rc = op(s, full, full_len, &newrev, err);
	if (rc == 0 && rev)
		*rev = newrev;
	free(full);
	return rc;
}

int store_mkdir(struct store *s, const char *key, size_t key_len,
		int64_t *rev, struct store_error *err)
{
	store_refresh_maybe(s);
	return store_dir_op(s, true, key, key_len, rev, err);
}

int store_rmdir(struct store *s, const char *key, size_t key_len,
		int64_t *rev, struct store_error *err)
{
	store_refresh_maybe(s);
	return store_dir_op(s, false, key, key_len, rev, err);
}
