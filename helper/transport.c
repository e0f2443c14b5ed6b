/*
 * transport.c - HTTP to an etcd cluster, on libcurl (see transport.h)
 *
 * Each thread that calls transport_request() gets a curl easy handle of its
 * own, found through a pthread key and kept until the thread exits or the
 * transport is freed, so its connection stays open and is reused.  Streams
 * (the v3 watch) run on a handle made for the call and cleaned up after it.
 *
 * Failover: requests go to the shared current endpoint.  An attempt that
 * sent nothing (refused, unresolvable, connect timed out, TLS handshake
 * failed, the server refused the client certificate) moves on to the next
 * endpoint; the first that answers becomes current for every thread.  Once
 * a byte of the request may have reached a server, nothing is retried
 * elsewhere: a put may have been applied.  So a kept-alive connection
 * whose server died an instant before the request went out is reported as
 * lost (EUNREACHABLE, "outcome unknown"); one that died earlier is seen
 * dead by curl before reuse and fails over.
 *
 * Errors: no endpoint answered, or a connection lost after sending:
 * EUNREACHABLE, also for every TLS failure (an untrusted server, a refused
 * client certificate); a request past request_timeout_ms: ETIMEOUT; an
 * answer that is not HTTP, or over max_reply_size: EBADREPLY; a token
 * that cannot be had: EUNAUTHENTICATED.
 *
 * Auth: with TRANSPORT_AUTH_ETCD3 one token, shared by all threads, is had
 * from /v3/auth/authenticate before the first request and renewed once per
 * request when etcd answers code 16 ("invalid auth token"); a watch stream
 * is answered 200 and then cancelled for a bad token, so its first line is
 * held back and looked at.  A cluster with auth off answers authenticate
 * with code 9, and then no token is sent, as etcdctl does.
 *
 * What it cannot do: HTTP/2, proxies (the environment's are ignored),
 * redirects; it does not replay a request that was sent and lost (the
 * caller decides), and it does not refresh the endpoint list by itself:
 * store.c does, with transport_set_endpoints(), which swaps the list under
 * t->lock while other threads' requests run; a request that started on
 * the old list goes on over the new one from the same position, and only
 * a failover of the same list generation moves the shared current
 * endpoint.
 *
 * Lock order: t->auth_lock, then t->lock.  Neither is held across a
 * transfer except auth_lock while a token is being had, so that one thread
 * authenticates and the others wait for its token.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "errors.h"
#include "transport.h"

#define TR_DEFAULT_CONNECT_TIMEOUT_MS	2000L
#define TR_DEFAULT_REQUEST_TIMEOUT_MS	5000L
#define TR_DEFAULT_MAX_REPLY		((size_t)256 << 20)
/* An error reply of a stream is kept (for the caller and for code 16). */
#define TR_STREAM_ERROR_CAP		((size_t)64 << 10)
/* A token longer than this, or with control bytes, is not a token. */
#define TR_TOKEN_MAX			4096

struct transport;

/* One thread's curl handle; lives until the thread exits or transport_free. */
struct tr_handle {
	struct transport *t;
	CURL *curl;
	CURL *stream;			/* the last stream's, kept with its
					 * connection for the next (a v2
					 * watch is one request an event) */
	struct tr_handle *prev, *next;	/* protected by t->lock */
	char *endpoint;			/* this thread's copy, see
					 * transport_endpoint() */
	size_t endpoint_cap;
	char errbuf[CURL_ERROR_SIZE];
};

struct transport {
	pthread_mutex_t lock;
	char **endpoints;		/* protected by lock */
	size_t n_endpoints;		/* protected by lock */
	size_t current;			/* protected by lock */
	uint64_t endpoints_gen;		/* protected by lock; bumped by
					 * transport_set_endpoints */
	struct tr_handle *handles;	/* protected by lock */
	/* atomic: requests that found no endpoint answering */
	uint64_t unreachable;

	pthread_key_t key;		/* -> struct tr_handle */

	pthread_mutex_t auth_lock;
	/* protected by auth_lock; NULL: none had yet; "": auth is off */
	char *token;
	uint64_t token_gen;		/* protected by auth_lock */

	/* Read-only after transport_new. */
	enum transport_auth auth;
	char *user;
	char *password;
	char *cacert;
	char *cert;
	char *keyfile;
	long connect_timeout_ms;
	long request_timeout_ms;
	size_t max_reply_size;
};

/* What one transfer is about, and what came of it. */
struct tr_xfer {
	struct transport *t;
	const char *method;
	const char *path;
	const char *content_type;
	const char *body;
	size_t len;
	const char *token;		/* NULL: no Authorization header */
	char *url;			/* owned, the last one tried */

	/* Request mode: the reply, capped at t->max_reply_size. */
	struct transport_reply *reply;
	size_t cap;
	bool too_large;

	/* Stream mode (fn != NULL). */
	transport_data_fn fn;
	void *arg;
	const volatile bool *stop;
	long status;			/* known once the first byte came */
	bool fn_ended;			/* fn returned non-zero */
	bool stopped;			/* *stop was seen */
	bool peek;			/* holding the first line back */
	bool rejected;			/* it said the token is bad */
	CURL *curl;
};

static pthread_once_t tr_global_once = PTHREAD_ONCE_INIT;
static CURLcode tr_global_rc;

/*
 * curl_global_init() is not thread-safe on every libcurl; main() may have
 * called it already (the call is counted), else the first transport does,
 * before any thread uses a handle.
 */
static void tr_global_init(void)
{
	tr_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void transport_reply_release(struct transport_reply *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->status = 0;
}

static char *tr_strdup_or_null(const char *s, bool *ok)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*ok = false;
	return d;
}

static void tr_free_endpoints(char **eps, size_t n)
{
	size_t i;

	if (!eps)
		return;
	for (i = 0; i < n; i++)
		free(eps[i]);
	free(eps);
}

static char **tr_copy_endpoints(const char *const *eps, size_t n)
{
	char **copy;
	size_t i;

	copy = calloc(n, sizeof(*copy));
	if (!copy)
		return NULL;
	for (i = 0; i < n; i++) {
		copy[i] = strdup(eps[i]);
		if (!copy[i]) {
			tr_free_endpoints(copy, i);
			return NULL;
		}
	}
	return copy;
}

static void tr_handle_free(struct tr_handle *h)
{
	if (h->curl)
		curl_easy_cleanup(h->curl);
	if (h->stream)
		curl_easy_cleanup(h->stream);
	free(h->endpoint);
	free(h);
}

/* The pthread key's destructor: the thread is exiting. */
static void tr_handle_destroy(void *p)
{
	struct tr_handle *h = p;
	struct transport *t = h->t;

	pthread_mutex_lock(&t->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		t->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&t->lock);
	tr_handle_free(h);
}

/* The calling thread's handle, made on first use; NULL on ENOMEM. */
static struct tr_handle *tr_handle_get(struct transport *t)
{
	struct tr_handle *h;

	h = pthread_getspecific(t->key);
	if (h)
		return h;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->t = t;
	h->curl = curl_easy_init();
	if (!h->curl) {
		free(h);
		return NULL;
	}
	if (pthread_setspecific(t->key, h) != 0) {
		tr_handle_free(h);
		return NULL;
	}
	pthread_mutex_lock(&t->lock);
	h->next = t->handles;
	if (h->next)
		h->next->prev = h;
	t->handles = h;
	pthread_mutex_unlock(&t->lock);
	return h;
}

struct transport *transport_new(const struct transport_config *cfg,
				struct store_error *err)
{
	struct transport *t;
	bool ok = true;
	size_t i;

	pthread_once(&tr_global_once, tr_global_init);
	if (tr_global_rc != CURLE_OK) {
		store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
			   "cannot initialise libcurl: %s",
			   curl_easy_strerror(tr_global_rc));
		return NULL;
	}
	if (!cfg->endpoints || cfg->n_endpoints == 0) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0, "no endpoint");
		return NULL;
	}
	for (i = 0; i < cfg->n_endpoints; i++) {
		if (!cfg->endpoints[i] || !cfg->endpoints[i][0]) {
			store_fail(err, STORE_EINVAL, NULL, 0, 0,
				   "bad endpoint ''");
			return NULL;
		}
	}
	if (cfg->auth != TRANSPORT_AUTH_NONE && !cfg->user) {
		store_fail(err, STORE_EINVAL, NULL, 0, 0,
			   "authentication needs a user name");
		return NULL;
	}

	t = calloc(1, sizeof(*t));
	if (!t)
		goto err_nomem;
	t->endpoints = tr_copy_endpoints(cfg->endpoints, cfg->n_endpoints);
	if (!t->endpoints)
		goto err_free;
	t->n_endpoints = cfg->n_endpoints;
	t->auth = cfg->auth;
	t->user = tr_strdup_or_null(cfg->user, &ok);
	t->password = tr_strdup_or_null(cfg->password ? cfg->password : "",
					&ok);
	t->cacert = tr_strdup_or_null(cfg->cacert, &ok);
	t->cert = tr_strdup_or_null(cfg->cert, &ok);
	t->keyfile = tr_strdup_or_null(cfg->key, &ok);
	if (!ok)
		goto err_free;
	t->connect_timeout_ms = cfg->connect_timeout_ms > 0 ?
		cfg->connect_timeout_ms : TR_DEFAULT_CONNECT_TIMEOUT_MS;
	t->request_timeout_ms = cfg->request_timeout_ms > 0 ?
		cfg->request_timeout_ms : TR_DEFAULT_REQUEST_TIMEOUT_MS;
	t->max_reply_size = cfg->max_reply_size > 0 ?
		cfg->max_reply_size : TR_DEFAULT_MAX_REPLY;

	if (pthread_mutex_init(&t->lock, NULL) != 0)
		goto err_free;
	if (pthread_mutex_init(&t->auth_lock, NULL) != 0)
		goto err_lock;
	if (pthread_key_create(&t->key, tr_handle_destroy) != 0)
		goto err_auth_lock;
	return t;

err_auth_lock:
	pthread_mutex_destroy(&t->auth_lock);
err_lock:
	pthread_mutex_destroy(&t->lock);
err_free:
	tr_free_endpoints(t->endpoints, t->n_endpoints);
	free(t->user);
	free(t->password);
	free(t->cacert);
	free(t->cert);
	free(t->keyfile);
	free(t);
err_nomem:
	store_fail(err, STORE_EINTERNAL, NULL, 0, 0, "out of memory");
	return NULL;
}

/*
 * No request or stream may run during the call.  Threads that used @t and
 * are still alive have their handles cleaned up here; the key is deleted
 * first so that no destructor runs for them later.
 */
void transport_free(struct transport *t)
{
	struct tr_handle *h, *next;

	if (!t)
		return;
	pthread_key_delete(t->key);
	pthread_mutex_lock(&t->lock);
	for (h = t->handles; h; h = next) {
		next = h->next;
		tr_handle_free(h);
	}
	t->handles = NULL;
	pthread_mutex_unlock(&t->lock);

	pthread_mutex_destroy(&t->auth_lock);
	pthread_mutex_destroy(&t->lock);
	tr_free_endpoints(t->endpoints, t->n_endpoints);
	if (t->token) {
		/* A token is a credential: do not leave it in freed memory. */
		memset(t->token, 0, strlen(t->token));
		free(t->token);
	}
	free(t->user);
	if (t->password) {
		memset(t->password, 0, strlen(t->password));
		free(t->password);
	}
	free(t->cacert);
	free(t->cert);
	free(t->keyfile);
	free(t);
}

/* Copies @s into h->endpoint; false on ENOMEM. */
static bool tr_handle_set_endpoint(struct tr_handle *h, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (n > h->endpoint_cap) {
		p = realloc(h->endpoint, n);
		if (!p)
			return false;
		h->endpoint = p;
		h->endpoint_cap = n;
	}
	memcpy(h->endpoint, s, n);
	return true;
}

/*
 * The current endpoint, copied for the calling thread so that the pointer
 * stays valid while transport_set_endpoints() frees the list it came from.
 */
const char *transport_endpoint(struct transport *t)
{
	struct tr_handle *h = tr_handle_get(t);
	bool ok;

	if (!h)
		return "";
	pthread_mutex_lock(&t->lock);
	ok = tr_handle_set_endpoint(h, t->endpoints[t->current]);
	pthread_mutex_unlock(&t->lock);
	return ok ? h->endpoint : "";
}

uint64_t transport_unreachable_count(struct transport *t)
{
	return __atomic_load_n(&t->unreachable, __ATOMIC_RELAXED);
}

int transport_set_endpoints(struct transport *t, const char *const *endpoints,
			    size_t n, struct store_error *err)
{
	char **copy, **old;
	size_t i, old_n, current = 0;

	if (!endpoints || n == 0)
		return store_fail(err, STORE_EINVAL, NULL, 0, 0,
				  "no endpoint");
	for (i = 0; i < n; i++)
		if (!endpoints[i] || !endpoints[i][0])
			return store_fail(err, STORE_EINVAL, NULL, 0, 0,
					  "bad endpoint ''");
	copy = tr_copy_endpoints(endpoints, n);
	if (!copy)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");

	pthread_mutex_lock(&t->lock);
	/* Stay on the endpoint in use if the new list has it. */
	for (i = 0; i < n; i++) {
		if (strcmp(copy[i], t->endpoints[t->current]) == 0) {
			current = i;
			break;
		}
	}
	old = t->endpoints;
	old_n = t->n_endpoints;
	t->endpoints = copy;
	t->n_endpoints = n;
	t->current = current;
	t->endpoints_gen++;
	pthread_mutex_unlock(&t->lock);

	tr_free_endpoints(old, old_n);
	return 0;
}

static size_t tr_write_reply(char *data, size_t size, size_t nmemb,
			     void *userdata)
{
	struct tr_xfer *x = userdata;
	struct transport_reply *r = x->reply;
	size_t n = size * nmemb;
	size_t need, cap;
	char *p;

	if (n > x->t->max_reply_size - r->len) {
		x->too_large = true;
		return 0;	/* aborts the transfer: CURLE_WRITE_ERROR */
	}
	need = r->len + n + 1;
	if (need > x->cap) {
		cap = x->cap ? x->cap : 4096;
		while (cap < need)
			cap *= 2;
		/* The cap plus its NUL is the most ever needed. */
		if (cap > x->t->max_reply_size + 1)
			cap = x->t->max_reply_size + 1;
		p = realloc(r->body, cap);
		if (!p)
			return 0;
		r->body = p;
		x->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return n;
}

static bool tr_stream_rejected(const char *line, size_t len);

/* The stream's owner sets *stop from another thread. */
static bool tr_stopped(const volatile bool *stop)
{
	return __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

static size_t tr_write_stream(char *data, size_t size, size_t nmemb,
			      void *userdata)
{
	struct tr_xfer *x = userdata;
	struct transport_reply *r = x->reply;
	size_t n = size * nmemb;
	long status = 0;

	if (tr_stopped(x->stop)) {
		x->stopped = true;
		return 0;
	}
	if (x->status == 0) {
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
		x->status = status;
	}
	/*
	 * An error reply is not a stream: keep it whole, so that code 16 can
	 * be seen and the caller gets it in one piece.
	 */
	if (x->status < 200 || x->status >= 300) {
		if (n > TR_STREAM_ERROR_CAP - r->len) {
			x->too_large = true;
			return 0;
		}
		return tr_write_reply(data, size, nmemb, userdata);
	}
	if (x->peek) {
		/*
		 * A watch with a bad token is answered 200, then a first line
		 * that cancels it: hold that line back until it is known.
		 */
		if (n > TR_STREAM_ERROR_CAP - r->len) {
			x->peek = false;
		} else {
			if (tr_write_reply(data, size, nmemb, userdata) != n)
				return 0;
			if (!memchr(r->body, '\n', r->len))
				return n;
			x->peek = false;
			if (tr_stream_rejected(r->body, r->len)) {
				x->rejected = true;
				return 0;
			}
			n = 0;	/* data is in r->body now */
		}
		if (r->len && x->fn(x->arg, r->body, r->len) != 0) {
			x->fn_ended = true;
			return 0;
		}
		transport_reply_release(r);
		x->cap = 0;
		if (n == 0)
			return size * nmemb;
	}
	if (x->fn(x->arg, data, n) != 0) {
		x->fn_ended = true;
		return 0;
	}
	return n;
}

static int tr_xferinfo(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct tr_xfer *x = userdata;

	if (tr_stopped(x->stop)) {
		x->stopped = true;
		return 1;	/* CURLE_ABORTED_BY_CALLBACK */
	}
	return 0;
}

/* Sets up @curl for one attempt of @x at @endpoint; false on ENOMEM. */
static bool tr_setup(struct tr_xfer *x, CURL *curl, const char *endpoint,
		     char *errbuf, struct curl_slist **headers)
{
	struct transport *t = x->t;
	struct curl_slist *hl = NULL, *tmp;
	size_t ulen;
	char *hdr;
	bool stream = x->fn != NULL;

	free(x->url);
	ulen = strlen(endpoint) + strlen(x->path) + 1;
	x->url = malloc(ulen);
	if (!x->url)
		return false;
	snprintf(x->url, ulen, "%s%s", endpoint, x->path);

	/*
	 * A reset drops every option but keeps the connection cache, so an
	 * option set for one request never leaks into the next.
	 */
	curl_easy_reset(curl);
	curl_easy_setopt(curl, CURLOPT_URL, x->url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	/* An http_proxy in the environment must not reroute the cluster. */
	curl_easy_setopt(curl, CURLOPT_PROXY, "");
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	errbuf[0] = '\0';
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
			 t->connect_timeout_ms);
	curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
	if (stream) {
		/* A watch may be silent for minutes: keep-alive finds a
		 * dead peer within about 5 + 9 * 2 seconds. */
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 5L);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 2L);
		curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, tr_xferinfo);
		curl_easy_setopt(curl, CURLOPT_XFERINFODATA, x);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, tr_write_stream);
	} else {
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 30L);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 10L);
		curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
				 t->request_timeout_ms);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, tr_write_reply);
	}
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, x);

	if (t->cacert)
		curl_easy_setopt(curl, CURLOPT_CAINFO, t->cacert);
	if (t->cert)
		curl_easy_setopt(curl, CURLOPT_SSLCERT, t->cert);
	if (t->keyfile)
		curl_easy_setopt(curl, CURLOPT_SSLKEY, t->keyfile);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);

	if (t->auth == TRANSPORT_AUTH_BASIC) {
		curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(curl, CURLOPT_USERNAME, t->user);
		curl_easy_setopt(curl, CURLOPT_PASSWORD, t->password);
	}

	if (x->body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, x->body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)x->len);
		if (strcmp(x->method, "POST") != 0)
			curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST,
					 x->method);
	} else if (strcmp(x->method, "GET") == 0) {
		curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(x->method, "POST") == 0) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)0);
	} else {
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, x->method);
	}

	/* "Expect: 100-continue" would cost a round trip on large puts. */
	hl = curl_slist_append(hl, "Expect:");
	if (!hl)
		return false;
	if (x->content_type && x->body) {
		ulen = strlen("Content-Type: ") + strlen(x->content_type) + 1;
		hdr = malloc(ulen);
		if (!hdr)
			goto err_headers;
		snprintf(hdr, ulen, "Content-Type: %s", x->content_type);
		tmp = curl_slist_append(hl, hdr);
		free(hdr);
		if (!tmp)
			goto err_headers;
		hl = tmp;
	}
	if (x->token && x->token[0]) {
		ulen = strlen("Authorization: ") + strlen(x->token) + 1;
		hdr = malloc(ulen);
		if (!hdr)
			goto err_headers;
		snprintf(hdr, ulen, "Authorization: %s", x->token);
		tmp = curl_slist_append(hl, hdr);
		memset(hdr, 0, ulen);
		free(hdr);
		if (!tmp)
			goto err_headers;
		hl = tmp;
	}
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hl);
	*headers = hl;
	return true;

err_headers:
	curl_slist_free_all(hl);
	return false;
}

/*
 * True if the server ended the TLS handshake because of the client's
 * certificate; with TLS 1.3 this shows only at the first read, after the
 * request went out, but the server never read it.
 */
static bool tr_cert_refused(CURLcode rc, const char *errbuf)
{
	return (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
		rc == CURLE_SSL_CONNECT_ERROR) &&
		strstr(errbuf, "alert") && strstr(errbuf, "certificate");
}

/*
 * True if the attempt failed before any byte of the request can have
 * reached a server, so that it is safe to try it elsewhere.
 */
static bool tr_not_sent(CURL *curl, CURLcode rc, const char *errbuf)
{
	long sent = 0;

	if (tr_cert_refused(rc, errbuf))
		return true;

	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_USE_SSL_FAILED:
		return true;
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		/*
		 * A connect that timed out, or a kept-alive connection the
		 * server had closed: nothing of the request went out.
		 */
		if (curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &sent) !=
		    CURLE_OK)
			return false;
		return sent == 0;
	default:
		return false;
	}
}

/* curl's description of @rc, lower case, with the detail if it adds one. */
static void tr_describe(CURLcode rc, const char *errbuf, const char *url,
			char *buf, size_t size)
{
	const char *s = curl_easy_strerror(rc);
	size_t n;

	if (rc == CURLE_PEER_FAILED_VERIFICATION)
		snprintf(buf, size, "server certificate not trusted (%s)",
			 errbuf[0] ? errbuf : s);
	else if (tr_cert_refused(rc, errbuf))
		snprintf(buf, size, "the server refused the client "
			 "certificate (%s)", errbuf);
	else if (errbuf[0] && rc != CURLE_COULDNT_CONNECT &&
		 rc != CURLE_COULDNT_RESOLVE_HOST && !strstr(errbuf, s))
		snprintf(buf, size, "%s (%s)", s, errbuf);
	else
		snprintf(buf, size, "%s", s);
	/* "Couldn't" is a word to lower, "SSL" is not. */
	if (isupper((unsigned char)buf[0]) && islower((unsigned char)buf[1]))
		buf[0] = (char)tolower((unsigned char)buf[0]);
	n = strlen(buf);
	/* curl's detail sometimes ends in a newline. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (rc == CURLE_GOT_NOTHING && strncmp(url, "http://", 7) == 0)
		snprintf(buf + n, size - n, "; is it an https endpoint?");
}

/* Appends to @buf, cutting what does not fit. */
__attribute__((format(printf, 3, 4)))
static void tr_append(char *buf, size_t size, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

/*
 * Runs @x on @curl against the current endpoint, then the others in turn
 * while nothing could be sent.  The endpoint that answered is left in
 * h_endpoint (the calling thread's copy, see tr_handle_set_endpoint()).
 */
static int tr_perform(struct tr_xfer *x, CURL *curl, struct tr_handle *h,
		      char *errbuf, struct store_error *err)
{
	struct transport *t = x->t;
	struct curl_slist *headers = NULL;
	char names[512] = "", details[512] = "", first[256] = "";
	char what[256];
	bool same = true;
	uint64_t gen;
	size_t n, start, i, idx = 0;
	CURLcode rc = CURLE_OK;
	long status = 0;

	pthread_mutex_lock(&t->lock);
	gen = t->endpoints_gen;
	n = t->n_endpoints;
	start = t->current;
	pthread_mutex_unlock(&t->lock);

	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&t->lock);
		idx = (start + i) % t->n_endpoints;
		if (!tr_handle_set_endpoint(h, t->endpoints[idx])) {
			pthread_mutex_unlock(&t->lock);
			return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
					  "out of memory");
		}
		pthread_mutex_unlock(&t->lock);

		headers = NULL;
		if (!tr_setup(x, curl, h->endpoint, errbuf, &headers))
			return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
					  "out of memory");
		if (x->reply)
			transport_reply_release(x->reply);
		x->cap = 0;
		x->too_large = false;
		x->status = 0;
		rc = curl_easy_perform(curl);
		curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(headers);
		if (!tr_not_sent(curl, rc, errbuf))
			break;

		tr_describe(rc, errbuf, x->url, what, sizeof(what));
		if (i == 0)
			snprintf(first, sizeof(first), "%s", what);
		else if (strcmp(first, what) != 0)
			same = false;
		tr_append(names, sizeof(names), "%s'%s'", i ? ", " : "",
			  h->endpoint);
		tr_append(details, sizeof(details), "%s'%s': %s",
			  i ? "; " : "", h->endpoint, what);
	}
	if (i == n) {
		__atomic_add_fetch(&t->unreachable, 1, __ATOMIC_RELAXED);
		if (same)
			return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
					  "cannot reach %s: %s", names, first);
		return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
				  "cannot reach %s", details);
	}
	if (i > 0) {
		pthread_mutex_lock(&t->lock);
		if (t->endpoints_gen == gen)
			t->current = idx;
		pthread_mutex_unlock(&t->lock);
	}

	if (x->too_large)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "reply from '%s' is larger than %zu bytes",
				  x->url, x->fn ? TR_STREAM_ERROR_CAP :
				  t->max_reply_size);
	if (x->fn && (x->stopped || x->fn_ended || x->rejected))
		return 0;
	switch (rc) {
	case CURLE_OK:
		break;
	case CURLE_OPERATION_TIMEDOUT:
		return store_fail(err, STORE_ETIMEOUT, NULL, 0, 0,
				  "request to '%s' timed out after %ld ms",
				  x->url, t->request_timeout_ms);
	case CURLE_OUT_OF_MEMORY:
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");
	case CURLE_WRITE_ERROR:
		/* Only an allocation in tr_write_reply() fails this way. */
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory reading '%s'", x->url);
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_UNSUPPORTED_PROTOCOL:	/* an answer that is not HTTP */
	case CURLE_BAD_CONTENT_ENCODING:
		tr_describe(rc, errbuf, x->url, what, sizeof(what));
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "bad reply from '%s': %s", x->url, what);
	default:
		/*
		 * Sent, then lost: the server may or may not have applied
		 * the request, and the caller is told so.
		 */
		tr_describe(rc, errbuf, x->url, what, sizeof(what));
		if (x->fn)
			return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
					  "stream from '%s' lost: %s", x->url,
					  what);
		return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
				  "connection to '%s' lost, outcome unknown: "
				  "%s", x->url, what);
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (status < 100)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "no HTTP status from '%s'", x->url);
	x->status = status;
	if (x->reply) {
		x->reply->status = status;
		if (!x->reply->body) {
			x->reply->body = calloc(1, 1);
			if (!x->reply->body)
				return store_fail(err, STORE_EINTERNAL, NULL,
						  0, 0, "out of memory");
		}
	}
	return 0;
}

/*
 * True if @r is etcd's answer to a missing, bad or expired token:
 * {"code":16,...}, or the "user name is empty" of a cluster whose auth was
 * turned on after this transport found it off.
 */
static bool tr_token_rejected(const struct transport_reply *r)
{
	json_t *root, *code, *msg;
	bool yes = false;

	if (r->status < 400 || !r->body || r->len == 0)
		return false;
	root = json_loadb(r->body, r->len, 0, NULL);
	if (!root)
		return false;
	code = json_object_get(root, "code");
	if (!code) {
		/* A stream's error: {"error":{"grpc_code":16,...}} */
		json_t *e = json_object_get(root, "error");

		code = json_object_get(e, "grpc_code");
	}
	if (json_is_integer(code) && json_integer_value(code) == 16)
		yes = true;
	msg = json_object_get(root, "message");
	if (json_is_integer(code) && json_integer_value(code) == 3 &&
	    json_is_string(msg) &&
	    strcmp(json_string_value(msg),
		   "etcdserver: user name is empty") == 0)
		yes = true;
	json_decref(root);
	return yes;
}

/*
 * The message of an etcd error body {"error":..,"message":..,"code":N} into
 * @buf (the HTTP status if it has none) and its code (-1 if none).
 */
static void tr_error_message(const struct transport_reply *r, char *buf,
			     size_t size, int64_t *code_out)
{
	json_t *root, *msg, *code;

	*code_out = -1;
	snprintf(buf, size, "HTTP status %ld", r->status);
	root = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
	if (!root)
		return;
	msg = json_object_get(root, "message");
	if (!json_is_string(msg))
		msg = json_object_get(root, "error");
	if (json_is_string(msg))
		snprintf(buf, size, "%s", json_string_value(msg));
	code = json_object_get(root, "code");
	if (json_is_integer(code))
		*code_out = json_integer_value(code);
	json_decref(root);
}

/*
 * True if the first line of a stream, @line, is a watch cancelled for its
 * token: {"result":{"created":true,"canceled":true,"cancel_reason":"rpc
 * error: code = Unauthenticated desc = etcdserver: invalid auth token"}}.
 */
static bool tr_stream_rejected(const char *line, size_t len)
{
	const char *nl = memchr(line, '\n', len);
	json_t *root, *res, *reason, *e;
	bool yes = false;

	root = json_loadb(line, nl ? (size_t)(nl - line) : len, 0, NULL);
	if (!root)
		return false;
	res = json_object_get(root, "result");
	reason = json_object_get(res, "cancel_reason");
	if (json_is_true(json_object_get(res, "canceled")) &&
	    json_is_string(reason) &&
	    (strstr(json_string_value(reason), "code = Unauthenticated") ||
	     strstr(json_string_value(reason), "invalid auth token")))
		yes = true;
	/* A gateway error in the stream: {"error":{"grpc_code":16,...}} */
	e = json_object_get(root, "error");
	if (json_is_integer(json_object_get(e, "grpc_code")) &&
	    json_integer_value(json_object_get(e, "grpc_code")) == 16)
		yes = true;
	json_decref(root);
	return yes;
}

/* True if @s can be sent as a header value. */
static bool tr_token_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > TR_TOKEN_MAX)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/*
 * Gets a token from /v3/auth/authenticate into t->token.  Called with
 * t->auth_lock held.  A cluster with auth off answers code 9 ("authentication
 * is not enabled"): then no header is sent, as etcdctl does.
 */
static int tr_authenticate(struct transport *t, struct tr_handle *h,
			   struct store_error *err)
{
	struct transport_reply reply = { 0 };
	struct tr_xfer x = { 0 };
	json_t *req, *root, *tok;
	char *body, *token = NULL;
	char msg[400];
	int64_t code;
	int rc;

	req = json_pack("{s:s, s:s}", "name", t->user, "password",
			t->password);
	if (!req)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "cannot encode the authentication of '%s'",
				  t->user);
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!body)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "out of memory");

	x.t = t;
	x.method = "POST";
	x.path = "/v3/auth/authenticate";
	x.content_type = "application/json";
	x.body = body;
	x.len = strlen(body);
	x.reply = &reply;
	rc = tr_perform(&x, h->curl, h, h->errbuf, err);
	memset(body, 0, x.len);
	free(body);
	free(x.url);
	if (rc < 0)
		goto out;

	if (reply.status != 200) {
		tr_error_message(&reply, msg, sizeof(msg), &code);
		if (code == 9 && strstr(msg, "authentication is not enabled")) {
			token = strdup("");
			goto set;
		}
		rc = store_fail(err, reply.status >= 500 && code != 16 &&
				code != 3 && code != 7 ?
				STORE_EUNREACHABLE : STORE_EUNAUTHENTICATED,
				NULL, 0, 0, "authentication of '%s' failed: %s",
				t->user, msg);
		goto out;
	}
	root = json_loadb(reply.body, reply.len, 0, NULL);
	tok = json_object_get(root, "token");
	if (!json_is_string(tok) ||
	    !tr_token_ok(json_string_value(tok), json_string_length(tok))) {
		json_decref(root);
		rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				"no usable token in the authentication reply "
				"from '%s'", h->endpoint);
		goto out;
	}
	token = strdup(json_string_value(tok));
	json_decref(root);
set:
	if (!token) {
		rc = store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				"out of memory");
		goto out;
	}
	if (t->token) {
		memset(t->token, 0, strlen(t->token));
		free(t->token);
	}
	t->token = token;
	t->token_gen++;
	rc = 0;
out:
	transport_reply_release(&reply);
	return rc;
}

/*
 * Copies the token to use into *@token (NULL: none) and its generation into
 * *@gen; authenticates first if there is none yet, or if @stale_gen is the
 * current generation (the server rejected that token).
 */
static int tr_token(struct transport *t, struct tr_handle *h, bool renew,
		    uint64_t stale_gen, char **token, uint64_t *gen,
		    struct store_error *err)
{
	int rc = 0;

	*token = NULL;
	if (t->auth != TRANSPORT_AUTH_ETCD3)
		return 0;
	pthread_mutex_lock(&t->auth_lock);
	if (!t->token || (renew && t->token_gen == stale_gen))
		rc = tr_authenticate(t, h, err);
	if (rc == 0) {
		*token = strdup(t->token);
		*gen = t->token_gen;
		if (!*token)
			rc = store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
					"out of memory");
	}
	pthread_mutex_unlock(&t->auth_lock);
	return rc;
}

static void tr_token_free(char *token)
{
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
	}
}

int transport_request(struct transport *t, const char *method,
		      const char *path, const char *content_type,
		      const char *body, size_t len,
		      struct transport_reply *reply, struct store_error *err)
{
	struct tr_handle *h;
	struct tr_xfer x = { 0 };
	char *token = NULL;
	uint64_t gen = 0;
	int rc, attempt;

	memset(reply, 0, sizeof(*reply));
	h = tr_handle_get(t);
	if (!h)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "cannot make a curl handle");

	x.t = t;
	x.method = method;
	x.path = path;
	x.content_type = content_type;
	x.body = body;
	x.len = body ? len : 0;
	x.reply = reply;
	for (attempt = 0; attempt < 2; attempt++) {
		rc = tr_token(t, h, attempt > 0, gen, &token, &gen, err);
		if (rc < 0)
			break;
		x.token = token;
		rc = tr_perform(&x, h->curl, h, h->errbuf, err);
		tr_token_free(token);
		token = NULL;
		if (rc < 0 || t->auth != TRANSPORT_AUTH_ETCD3 ||
		    !tr_token_rejected(reply))
			break;
	}
	free(x.url);
	if (rc < 0)
		transport_reply_release(reply);
	return rc;
}

int transport_stream(struct transport *t, const char *method,
		     const char *path, const char *content_type,
		     const char *body, size_t len, transport_data_fn fn,
		     void *arg, const volatile bool *stop, long *status,
		     struct store_error *err)
{
	struct transport_reply reply = { 0 };
	struct tr_handle *h;
	struct tr_xfer x = { 0 };
	char *token = NULL;
	uint64_t gen = 0;
	int rc = 0, attempt;

	*status = 0;
	/*
	 * The thread's handle lends its endpoint copy (for messages) and
	 * token renewal; the stream itself gets a handle of its own, the
	 * one the thread's last stream left if it ended well.
	 */
	h = tr_handle_get(t);
	if (!h)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "cannot make a curl handle");
	x.curl = h->stream ? h->stream : curl_easy_init();
	h->stream = NULL;
	if (!x.curl)
		return store_fail(err, STORE_EINTERNAL, NULL, 0, 0,
				  "cannot make a curl handle");
	x.t = t;
	x.method = method;
	x.path = path;
	x.content_type = content_type;
	x.body = body;
	x.len = body ? len : 0;
	x.reply = &reply;
	x.fn = fn;
	x.arg = arg;
	x.stop = stop;
	for (attempt = 0; attempt < 2; attempt++) {
		if (tr_stopped(stop))
			break;
		rc = tr_token(t, h, attempt > 0, gen, &token, &gen, err);
		if (rc < 0)
			break;
		x.token = token;
		x.stopped = false;
		x.fn_ended = false;
		x.rejected = false;
		x.peek = t->auth == TRANSPORT_AUTH_ETCD3 && attempt == 0;
		rc = tr_perform(&x, x.curl, h, h->errbuf, err);
		tr_token_free(token);
		token = NULL;
		if (rc < 0)
			break;
		*status = x.status;
		if (x.rejected)
			continue;
		if (x.stopped || x.fn_ended)
			break;
		if (x.status >= 200 && x.status < 300) {
			/* It ended before its first line did. */
			if (x.peek && reply.len > 0)
				fn(arg, reply.body, reply.len);
			break;
		}
		reply.status = x.status;
		if (t->auth == TRANSPORT_AUTH_ETCD3 && attempt == 0 &&
		    tr_token_rejected(&reply))
			continue;
		/* The error reply, in one piece, for the caller. */
		if (reply.len > 0)
			fn(arg, reply.body, reply.len);
		break;
	}
	transport_reply_release(&reply);
	free(x.url);
	/* a stream cut short may leave its connection in any state */
	if (rc == 0 && !x.stopped && !x.fn_ended && x.status >= 200 &&
	    x.status < 300)
		h->stream = x.curl;
	else
		curl_easy_cleanup(x.curl);
	return rc;
}
