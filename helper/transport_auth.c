/*
 * transport_auth.c - the etcd v3 token of the transport: had from
 * /v3/auth/authenticate, shared by every thread, renewed once when etcd
 * says it is invalid or expired (see transport.c)
 *
 * What it cannot do: refresh a token before it expires (it is renewed on
 * the rejection), or authenticate with a client certificate's name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "transport_i.h"

/*
 * True if @r is etcd's answer to a missing, bad or expired token:
 * {"code":16,...}, or the "user name is empty" of a cluster whose auth was
 * turned on after this transport found it off.
 */
bool tr_token_rejected(const struct transport_reply *r)
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
bool tr_stream_rejected(const char *line, size_t len)
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
int tr_token(struct transport *t, struct tr_handle *h, bool renew,
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

void tr_token_free(char *token)
{
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
	}
}
