/*
 * store.c - the backend-neutral half of helper/store.h: the API's entry
 * points, the configuration, the prefix, reads and watches
 *
 * Checks arguments and the configuration, prepends the store prefix to
 * every key on the way to a backend and strips it on the way back (a key
 * a backend returns outside the prefix is dropped).  Writes are in
 * store_update.c, listing in store_list.c, the member list and the
 * endpoint refresh in store_members.c.
 *
 * What it cannot do: talk to etcd (the backends in etcd3.c and etcd2.c
 * do that through transport.c); store_free does not wait for requests
 * other threads are still running on the store.
 *
 * Lock order: a store's watch_lock is taken alone; refresh_lock is held
 * only across a refresh, which takes the transport's locks; a write
 * stripe (store_update.c) is held across a write's requests, and a
 * refresh may run under it; a backend's locks are never held while
 * calling back into the store.
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
#include "endpoint.h"
#include "store_i.h"
#include "transport.h"

#define STORE_DEFAULT_PAGE_SIZE		1000
/* etcd's own limit, --max-request-bytes */
#define STORE_DEFAULT_MAX_VALUE_SIZE	((size_t)1572864)
#define STORE_DEFAULT_MAX_REPLY_SIZE	((size_t)256 << 20)
#define STORE_DEFAULT_UPDATE_RETRIES	16

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
char *store_full_key(struct store *s, const char *key, size_t key_len,
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
bool store_strip(struct store *s, struct store_kv *kv)
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

/*
 * Splits the comma list @list into p's endpoint array, with the rules of
 * endpoint.h; HOST:PORT is https:// when any TLS setting is given.
 */
static int store_parse_endpoints(struct store_priv *p, const char *list,
				 struct store_error *err)
{
	const struct store_config *c = &p->s.cfg;
	struct endpoint_list l;
	char why[256];
	int rc;

	rc = endpoint_list_parse(&l, list, c->cacert || c->cert || c->key ||
				 c->insecure_skip_tls_verify, why, sizeof(why));
	if (rc == -ENOMEM)
		return store_enomem(err, NULL, 0);
	if (rc < 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0, "%s", why);
	p->endpoints = l.urls;
	p->n_endpoints = l.n;
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
		&s->cfg.snapshot,
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
	if (s->cfg.snapshot && !s->cfg.snapshot[0])
		s->cfg.snapshot = NULL;
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
		s->cfg.connect_timeout_ms = ENDPOINT_DIAL_TIMEOUT_MS;
	if (!s->cfg.request_timeout_ms)
		s->cfg.request_timeout_ms = ENDPOINT_COMMAND_TIMEOUT_MS;
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
	for (i = 0; i < STORE_WRITE_STRIPES; i++)
		pthread_mutex_destroy(&p->write_locks[i]);
	pthread_mutex_destroy(&p->watch_lock);
	pthread_mutex_destroy(&p->refresh_lock);
	free(p);
}

/* The store's locks, or false (none left initialised). */
static bool store_locks_init(struct store_priv *p)
{
	size_t i;

	if (pthread_mutex_init(&p->watch_lock, NULL) != 0)
		return false;
	if (pthread_mutex_init(&p->refresh_lock, NULL) != 0)
		goto err_watch;
	for (i = 0; i < STORE_WRITE_STRIPES; i++)
		if (pthread_mutex_init(&p->write_locks[i], NULL) != 0)
			goto err_stripes;
	return true;

err_stripes:
	while (i-- > 0)
		pthread_mutex_destroy(&p->write_locks[i]);
	pthread_mutex_destroy(&p->refresh_lock);
err_watch:
	pthread_mutex_destroy(&p->watch_lock);
	return false;
}

/* The HTTP/1 transport of a backend that has none of its own (etcd2). */
static struct transport *store_http_new(struct store *s,
					const struct store_priv *p,
					struct store_error *err)
{
	struct transport_config tc = {
		.endpoints = (const char *const *)p->endpoints,
		.n_endpoints = p->n_endpoints,
		.cacert = s->cfg.cacert,
		.cert = s->cfg.cert,
		.key = s->cfg.key,
		.insecure_skip_tls_verify = s->cfg.insecure_skip_tls_verify,
		.auth = s->cfg.user ? TRANSPORT_AUTH_BASIC : TRANSPORT_AUTH_NONE,
		.user = s->cfg.user,
		.password = s->cfg.password,
		.connect_timeout_ms = s->cfg.connect_timeout_ms,
		.request_timeout_ms = s->cfg.request_timeout_ms,
		.max_reply_size = s->cfg.max_reply_size,
	};

	return transport_new(&tc, err);
}

struct store *store_new(const struct store_config *cfg, struct store_error *err)
{
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
	if (!store_locks_init(p)) {
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
				  ENDPOINT_DEFAULT, err) < 0)
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
	if (s->cfg.snapshot)
		s->be_ops = &store_snapshot_backend;
	if (s->cfg.revision < 0) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0, "bad revision %lld",
			   (long long)s->cfg.revision);
		goto err_free;
	}
	if (s->cfg.revision && !s->be_ops->past_reads) {
		store_fail(err, STORE_ENOTSUP, NULL, 0, 0, "the %s backend "
			   "cannot read at a past revision", s->be_ops->name);
		goto err_free;
	}

	/* a backend with endpoint hooks has a transport of its own (v3's
	 * gRPC); the others share s->tr */
	if (!s->be_ops->endpoint) {
		s->tr = store_http_new(s, p, err);
		if (!s->tr)
			goto err_free;
	}

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
	if (s->be_ops->endpoint)
		return s->be_ops->endpoint(s);
	return transport_endpoint(s->tr);
}

int store_revision(struct store *s, int64_t *rev, struct store_error *err)
{
	*rev = 0;
	store_refresh_maybe(s);
	return store_read_rc(s->be_ops->revision(s, rev, err), err);
}

int store_status(struct store *s, struct store_status *out,
		 struct store_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!s->be_ops->status)
		return store_fail(err, STORE_ENOTSUP, NULL, 0, 0,
				  "%s has no status call", s->be_ops->name);
	store_refresh_maybe(s);
	return store_read_rc(s->be_ops->status(s, out, err), err);
}

/* --- reads --- */

/*
 * Reads the full key @full into @cur (prefix stripped); *@exists false and
 * 0 if it is absent.
 */
/* The get of a store pinned at a revision: a range of one key at it. */
static int store_get_at(struct store *s, const char *full, size_t full_len,
			unsigned flags, struct store_kv *cur,
			struct store_error *err)
{
	struct store_list l = { 0 };
	bool more = false;
	int rc;

	rc = s->be_ops->range(s, full, full_len, NULL, 0, s->cfg.revision, 1,
			      flags, &l, &more, NULL, err);
	if (rc == 0 && l.n == 0)
		rc = store_fail(err, STORE_ENOTFOUND, full, full_len, 0,
				"key not found at revision %lld",
				(long long)s->cfg.revision);
	else if (rc == 0 && (l.n > 1 || l.kvs[0].key_len != full_len ||
			     memcmp(l.kvs[0].key, full, full_len) != 0))
		rc = store_fail(err, STORE_EBADREPLY, full, full_len, 0,
				"the server answered another key at "
				"revision %lld", (long long)s->cfg.revision);
	else if (rc == 0)
		store_kv_move(cur, &l.kvs[0]);
	store_list_release(&l);
	return rc;
}

int store_read(struct store *s, const char *full, size_t full_len,
		      unsigned flags, struct store_kv *cur, bool *exists,
		      struct store_error *err)
{
	int rc;

	memset(cur, 0, sizeof(*cur));
	*exists = false;
	if (s->cfg.revision)
		rc = store_get_at(s, full, full_len, flags, cur, err);
	else
		rc = s->be_ops->get(s, full, full_len, flags, cur, err);
	if (rc == STORE_ENOTFOUND)
		return 0;
	if (rc < 0)
		return store_read_rc(rc, err);
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
	if (e.type == STORE_EV_ERROR)
		e.err = store_read_rc(e.err, NULL);
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

	rc = store_read_rc(s->be_ops->watch(s, w, err), err);
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

int store_watch_progress(struct store_watch *w)
{
	if (!w || !w->s->be_ops->watch_progress)
		return STORE_ENOTSUP;
	return w->s->be_ops->watch_progress(w);
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
