/*
 * transport.c - HTTP to an etcd cluster, on libcurl (see transport.h):
 * handles, endpoints, and the two entry points; one transfer and its
 * failover are in transport_xfer.c
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
 * lost (EUNKNOWN, "outcome unknown"); one that died earlier is seen
 * dead by curl before reuse and fails over.
 *
 * Errors: no endpoint answered (nothing was sent): EUNREACHABLE, also for
 * every TLS failure (an untrusted server, a refused client certificate);
 * a connection lost after sending: EUNKNOWN (a stream's: EUNREACHABLE, a
 * watch resumes); a request past request_timeout_ms: ETIMEOUT; an
 * answer that is not HTTP, or over max_reply_size: EBADREPLY.
 *
 * Auth: HTTP basic auth (TRANSPORT_AUTH_BASIC, etcd v2's); etcd v3's
 * tokens are the gRPC transport's (grpc_transport.h), since v3 speaks
 * gRPC.
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
 * Locks: t->lock only, never held across a transfer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "transport_i.h"

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
	t->insecure_skip_tls_verify = cfg->insecure_skip_tls_verify;
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
	if (pthread_key_create(&t->key, tr_handle_destroy) != 0)
		goto err_lock;
	return t;

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

	pthread_mutex_destroy(&t->lock);
	tr_free_endpoints(t->endpoints, t->n_endpoints);
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

int transport_request(struct transport *t, const char *method,
		      const char *path, const char *content_type,
		      const char *body, size_t len,
		      struct transport_reply *reply, struct store_error *err)
{
	struct tr_handle *h;
	struct tr_xfer x = { 0 };
	int rc;

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
	rc = tr_perform(&x, h->curl, h, h->errbuf, err);
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
	int rc = 0;

	*status = 0;
	/*
	 * The thread's handle lends its endpoint copy (for messages); the
	 * stream itself gets a handle of its own, the one the thread's last
	 * stream left if it ended well.
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
	if (!tr_stopped(stop)) {
		rc = tr_perform(&x, x.curl, h, h->errbuf, err);
		if (rc == 0)
			*status = x.status;
		/* The error reply, in one piece, for the caller. */
		if (rc == 0 && !x.stopped && !x.fn_ended &&
		    (x.status < 200 || x.status >= 300) && reply.len > 0) {
			reply.status = x.status;
			fn(arg, reply.body, reply.len);
		}
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
