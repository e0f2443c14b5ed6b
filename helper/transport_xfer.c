/*
 * transport_xfer.c - one transfer of the transport: its curl options, its
 * reply (capped) or stream, and the failover over the endpoints while
 * nothing of the request was sent (see transport.c and transport.h)
 *
 * A request that is not a GET is sent once per attempt: libcurl would
 * send it again by itself, on a fresh connection, when a kept-alive one
 * dies with no byte of the answer come (see tr_prereq).
 *
 * What it cannot do: tell "sent" from "not sent" below what libcurl
 * counts (CURLINFO_REQUEST_SIZE): a request that was handed to the
 * kernel counts as sent, even if no byte of it left the machine.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport_i.h"
#include "transport_xfer.h"

void transport_reply_release(struct transport_reply *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->status = 0;
}

/* Copies @s into h->endpoint; false on ENOMEM. */
bool tr_handle_set_endpoint(struct tr_handle *h, const char *s)
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


/* The stream's owner sets *stop from another thread. */
bool tr_stopped(const volatile bool *stop)
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
	/* An error reply is not a stream: the caller gets it in one piece. */
	if (x->status < 200 || x->status >= 300) {
		if (n > TR_STREAM_ERROR_CAP - r->len) {
			x->too_large = true;
			return 0;
		}
		return tr_write_reply(data, size, nmemb, userdata);
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

/*
 * Called by libcurl right before it sends the request, on a new or a
 * kept-alive connection.  A second call in one attempt is libcurl sending
 * it again by itself: it does so when a kept-alive connection dies before
 * any byte of the answer came, which is also what a write whose answer
 * was lost looks like (etcd may have applied it).  A GET may go again; a
 * write may not: the copy's answer (a compare refused because the first
 * copy was applied) would be taken for the write's own.  The attempt is
 * aborted instead, and reported lost (EUNKNOWN): the store settles it.
 */
static int tr_prereq(void *userdata, char *conn_primary_ip, char *conn_local_ip,
		     int conn_primary_port, int conn_local_port)
{
	struct tr_xfer *x = userdata;

	if (x->sends++ && strcmp(x->method, "GET") != 0) {
		x->resent = true;
		return CURL_PREREQFUNC_ABORT;
	}
	return CURL_PREREQFUNC_OK;
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
	x->sends = 0;
	x->resent = false;
	curl_easy_setopt(curl, CURLOPT_PREREQFUNCTION, tr_prereq);
	curl_easy_setopt(curl, CURLOPT_PREREQDATA, x);

	if (t->cacert)
		curl_easy_setopt(curl, CURLOPT_CAINFO, t->cacert);
	if (t->cert)
		curl_easy_setopt(curl, CURLOPT_SSLCERT, t->cert);
	if (t->keyfile)
		curl_easy_setopt(curl, CURLOPT_SSLKEY, t->keyfile);
	/* etcdctl's --insecure-skip-tls-verify: neither the chain nor the name */
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER,
			 t->insecure_skip_tls_verify ? 0L : 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST,
			 t->insecure_skip_tls_verify ? 0L : 2L);

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
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hl);
	*headers = hl;
	return true;

err_headers:
	curl_slist_free_all(hl);
	return false;
}

bool transport_cert_refused(int rc, const char *errbuf)
{
	return (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
		rc == CURLE_SSL_CONNECT_ERROR) && strstr(errbuf, "alert") &&
	       (strstr(errbuf, "certificate") || strstr(errbuf, "unknown ca"));
}

/*
 * True if the attempt failed before any byte of the request can have
 * reached a server, so that it is safe to try it elsewhere.
 *
 * The CURLcode alone cannot say so: when a kept-alive connection dies
 * after the request went out and before any byte of the answer came
 * (an etcd member SIGKILLed mid-request), libcurl sends the request again
 * on a fresh connection to the same URL by itself (a GET; a write is
 * stopped before its copy goes, tr_prereq); if that connect is refused,
 * curl_easy_perform() says COULDNT_CONNECT although the first copy was
 * sent and may have been applied.  CURLINFO_REQUEST_SIZE counts
 * the bytes of every request sent during the transfer, so it is checked
 * first, whatever the code.
 */
static bool tr_not_sent(CURL *curl, CURLcode rc, const char *errbuf)
{
	long sent = 0;

	if (transport_cert_refused(rc, errbuf))
		return true;
	if (curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &sent) !=
	    CURLE_OK)
		return false;
	if (sent > 0)
		return false;

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
	/*
	 * A connect that timed out, or a kept-alive connection the server
	 * had closed: nothing of the request went out.
	 */
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return true;
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
	else if (transport_cert_refused(rc, errbuf))
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
 * What came of @x's transfer on @curl, which ended with @rc at an
 * endpoint that took the request: 0, or the error, in @err.
 */
static int tr_outcome(struct tr_xfer *x, CURL *curl, CURLcode rc,
		      char *errbuf, struct store_error *err)
{
	struct transport *t = x->t;
	char what[256];
	long status = 0;

	if (x->too_large)
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "reply from '%s' is larger than %zu bytes",
				  x->url, x->fn ? TR_STREAM_ERROR_CAP :
				  t->max_reply_size);
	if (x->fn && (x->stopped || x->fn_ended))
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
		 * the request, and the caller is told so (the store reads
		 * the key again to find out).
		 */
		tr_describe(rc, errbuf, x->url, what, sizeof(what));
		if (x->resent)
			snprintf(what, sizeof(what), "the connection closed "
				 "with no answer");
		if (x->fn)
			return store_fail(err, STORE_EUNREACHABLE, NULL, 0, 0,
					  "stream from '%s' lost: %s", x->url,
					  what);
		return store_fail(err, STORE_EUNKNOWN, NULL, 0, 0,
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
 * Runs @x on @curl against the current endpoint, then the others in turn
 * while nothing could be sent.  The endpoint that answered is left in
 * h_endpoint (the calling thread's copy, see tr_handle_set_endpoint()).
 */
int tr_perform(struct tr_xfer *x, CURL *curl, struct tr_handle *h,
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

	return tr_outcome(x, curl, rc, errbuf, err);
}
