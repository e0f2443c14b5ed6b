/*
 * etcd2_codec.c - requests to and replies from etcd's v2 keys API (see
 * etcd2_codec.h)
 *
 * Every parser takes whatever bytes came back and either fills its result
 * or says EBADREPLY with a message: a reply that is not JSON, is cut off,
 * has a field of the wrong type, a negative or oversized index, or a node
 * without its key is refused, never half-used.  jansson bounds the nesting
 * depth of what it parses, which bounds the recursion of the listing walk.
 *
 * What it cannot do: check that a reply is about the key that was asked
 * for (the backend and store.c do), or parse etcd's v2 stats, auth or
 * a node's "expiration" (its "ttl", the seconds left, is read).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "etcd2_codec.h"
#include "store_i.h"

#define E2C_JSON_FLAGS	(JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES)
/* How much of a bad reply a message quotes. */
#define E2C_QUOTE	48

/* A malformed reply: the one fail helper, store_fail, for a bad reply. */
#define e2c_bad(err, ...) \
	store_fail(err, STORE_EBADREPLY, NULL, 0, 0, __VA_ARGS__)

/* Writes the start of @body into @buf, printable, for a message. */
static const char *e2c_quote(const char *body, size_t len, char *buf,
			     size_t size)
{
	size_t i, o = 0;
	unsigned char c;

	/* a body's last newline is not worth a '?' */
	while (len > 0 && (body[len - 1] == '\n' || body[len - 1] == '\r'))
		len--;
	for (i = 0; i < len && o + 4 < size; i++) {
		c = (unsigned char)body[i];
		buf[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (i < len && o + 4 <= size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static int e2c_not_json(const char *body, size_t len, const json_error_t *je,
			struct store_error *err)
{
	char q[E2C_QUOTE + 4];

	return e2c_bad(err, "malformed reply: not JSON (%s at byte %zu): "
		       "'%s'", je->text, (size_t)je->position,
		       e2c_quote(body, len, q, sizeof(q)));
}

void etcd2_reply_release(struct etcd2_reply *r)
{
	if (!r)
		return;
	store_kv_release(&r->node.kv);
	store_kv_release(&r->prev.kv);
	memset(r, 0, sizeof(*r));
}

static const struct {
	const char *name;
	enum etcd2_action action;
} e2c_actions[] = {
	{ "get", ETCD2_GET },
	{ "set", ETCD2_SET },
	{ "create", ETCD2_CREATE },
	{ "update", ETCD2_UPDATE },
	{ "compareAndSwap", ETCD2_CAS },
	{ "delete", ETCD2_DELETE },
	{ "compareAndDelete", ETCD2_CAD },
	{ "expire", ETCD2_EXPIRE },
};

/*
 * An index member of @o: absent is 0 and *@had false; else a JSON integer
 * from 1 on (etcd's indexes start at 1).  -1 if it is of another kind.
 */
static int64_t e2c_index(json_t *o, const char *name, bool *had)
{
	json_t *v = json_object_get(o, name);

	*had = v != NULL;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) <= 0)
		return -1;
	return (int64_t)json_integer_value(v);
}

/*
 * The checks every node passes: an object; "key" a string (only the root,
 * a directory, may lack it); "dir" a boolean; "value" a string; both
 * indexes positive integers, present whenever the key is; "nodes" an
 * array.  Fills the borrowed pointers.
 */
struct e2c_raw {
	json_t *key, *value, *nodes;
	bool dir;
	int64_t mod, create;
};

static int e2c_check_node(json_t *o, struct e2c_raw *n, struct store_error *err)
{
	json_t *dir;
	bool had_mod, had_create;

	memset(n, 0, sizeof(*n));
	if (!json_is_object(o))
		return e2c_bad(err, "malformed reply: a node is not an "
			       "object");
	n->key = json_object_get(o, "key");
	if (n->key && !json_is_string(n->key))
		return e2c_bad(err, "malformed reply: a node's key is "
			       "not a string");
	dir = json_object_get(o, "dir");
	if (dir && !json_is_boolean(dir))
		return e2c_bad(err, "malformed reply: a node's \"dir\" "
			       "is not a boolean");
	n->dir = json_is_true(dir);
	n->value = json_object_get(o, "value");
	if (n->value && !json_is_string(n->value))
		return e2c_bad(err, "malformed reply: a node's value is "
			       "not a string");
	n->nodes = json_object_get(o, "nodes");
	if (n->nodes && !json_is_array(n->nodes))
		return e2c_bad(err, "malformed reply: a node's \"nodes\" "
			       "is not an array");
	n->mod = e2c_index(o, "modifiedIndex", &had_mod);
	n->create = e2c_index(o, "createdIndex", &had_create);
	if (n->mod < 0 || n->create < 0)
		return e2c_bad(err, "malformed reply: a node's index is "
			       "not a positive integer");
	if (!n->key && !n->dir)
		return e2c_bad(err, "malformed reply: a node without a "
			       "key");
	if (n->key && (!had_mod || !had_create))
		return e2c_bad(err, "malformed reply: node '%s' without "
			       "its index", json_string_value(n->key));
	return 0;
}

/* Fills @n from the node object @o; the root gets the key "/". */
static int e2c_node(json_t *o, struct etcd2_node *n, struct store_error *err)
{
	struct e2c_raw raw;
	json_t *ttl;
	int rc;

	rc = e2c_check_node(o, &raw, err);
	if (rc < 0)
		return rc;
	n->present = true;
	n->dir = raw.dir;
	if (raw.key)
		n->kv.key = store_memdup(json_string_value(raw.key),
				       json_string_length(raw.key));
	else
		n->kv.key = store_memdup("/", 1);
	if (!n->kv.key)
		return STORE_EINTERNAL;
	n->kv.key_len = raw.key ? json_string_length(raw.key) : 1;
	if (raw.value && !raw.dir) {
		n->kv.value = store_memdup(json_string_value(raw.value),
					 json_string_length(raw.value));
		n->kv.value_len = json_string_length(raw.value);
	} else {
		n->kv.value = store_memdup("", 0);
	}
	if (!n->kv.value)
		return STORE_EINTERNAL;
	n->kv.mod_revision = raw.mod;
	n->kv.create_revision = raw.create;
	/* a key about to expire may say 0 or less: it has a TTL still */
	ttl = json_object_get(o, "ttl");
	if (json_is_integer(ttl))
		n->ttl = json_integer_value(ttl) > 0 ?
			 (int64_t)json_integer_value(ttl) : 1;
	return 0;
}

/* Copies the string member @name of @o (if a string) into @buf. */
static void e2c_copy_string(json_t *o, const char *name, char *buf,
			    size_t size)
{
	json_t *v = json_object_get(o, name);

	if (json_is_string(v))
		snprintf(buf, size, "%s", json_string_value(v));
}

/*
 * Fills @r's error fields from the error reply @root (status not 2xx) and
 * returns the store error, with @err saying etcd's words.
 */
static int e2c_error(long status, json_t *root, const char *body,
		     size_t len, struct etcd2_reply *r, struct store_error *err)
{
	json_t *code, *index;
	char q[E2C_QUOTE + 4];
	int rc;

	code = json_object_get(root, "errorCode");
	if (json_is_integer(code) && json_integer_value(code) > 0 &&
	    json_integer_value(code) < 100000) {
		r->error_code = (int)json_integer_value(code);
		index = json_object_get(root, "index");
		if (json_is_integer(index) && json_integer_value(index) > 0)
			r->index = (int64_t)json_integer_value(index);
		e2c_copy_string(root, "message", r->message,
				sizeof(r->message));
		e2c_copy_string(root, "cause", r->cause, sizeof(r->cause));
		/* etcd's message, lower case as every message here */
		if (r->message[0] >= 'A' && r->message[0] <= 'Z')
			r->message[0] = (char)(r->message[0] - 'A' + 'a');
		rc = etcd2_codec_errcode(r->error_code, status, r->cause);
		if (r->cause[0])
			return store_fail(err, rc, NULL, 0, 0,
					  "%s: %s (etcd error %d)",
					  r->message[0] ? r->message : "error",
					  r->cause, r->error_code);
		return store_fail(err, rc, NULL, 0, 0, "%s (etcd error %d)",
				  r->message[0] ? r->message : "error",
				  r->error_code);
	}
	rc = etcd2_codec_errcode(0, status, NULL);
	if (json_is_string(json_object_get(root, "message")))
		return store_fail(err, rc, NULL, 0, 0, "%s (http %ld)",
				  json_string_value(json_object_get(root,
								    "message")),
				  status);
	if (rc == STORE_ENOTSUP)
		return store_fail(err, rc, NULL, 0, 0,
				  "the server has no v2 keys API (http %ld: "
				  "'%s'); etcd 3.4 serves it only when started "
				  "with --enable-v2=true", status,
				  e2c_quote(body ? body : "", len, q,
					    sizeof(q)));
	return store_fail(err, rc, NULL, 0, 0, "http %ld: '%s'", status,
			  e2c_quote(body ? body : "", len, q, sizeof(q)));
}

int etcd2_codec_errcode(int code, long status, const char *cause)
{
	switch (code) {
	case ETCD2_EKEY_NOT_FOUND:
		return STORE_ENOTFOUND;
	case ETCD2_ETEST_FAILED:
	case ETCD2_ENODE_EXIST:
		/* store.c turns it into EEXISTS for a create */
		return STORE_EPRECONDITION;
	case ETCD2_ENOT_FILE:
	case ETCD2_ENOT_DIR:
	case 106:	/* key is preserved */
	case ETCD2_EROOT_RONLY:
		return STORE_EINVAL;
	case ETCD2_EDIR_NOT_EMPTY:
		/* only a directory removal meets it; rmdir(2) may say
		 * EEXIST for ENOTEMPTY, and the store has no ENOTEMPTY */
		return STORE_EEXISTS;
	case ETCD2_EUNAUTHORIZED:
		return STORE_EUNAUTHENTICATED;
	/*
	 * Raft errors come after the request reached the server, maybe
	 * after it was proposed: a write's outcome is unknown (the store
	 * finds out; a read that meets it is unreachable).
	 */
	case ETCD2_ERAFT_INTERNAL:
		return cause && strstr(cause, "timed out") ? STORE_ETIMEOUT :
			STORE_EUNKNOWN;
	case ETCD2_ELEADER_ELECT:
		return STORE_EUNKNOWN;
	case ETCD2_EWATCHER_CLEARED:
		return STORE_EUNREACHABLE;
	case ETCD2_EINDEX_CLEARED:
		return STORE_ECOMPACTED;
	case 0:
		break;
	default:
		/* 2xx: etcd refused the form of the request */
		if (code >= 200 && code < 300)
			return STORE_EINVAL;
		return STORE_EBADREPLY;
	}
	switch (status) {
	case 401:
		return STORE_EUNAUTHENTICATED;
	case 403:
		return STORE_EPERMISSION;
	case 404:
		/* not an etcd error: nothing serves /v2/keys there */
		return STORE_ENOTSUP;
	case 408:
	case 504:
		return STORE_ETIMEOUT;
	case 413:
	case 414:
	case 431:
		return STORE_ETOOLARGE;
	case 429:
		return STORE_EUNREACHABLE;
	default:
		/* a proxy's 5xx: the request may have reached etcd */
		if (status >= 500 && status < 600)
			return STORE_EUNKNOWN;
		return STORE_EBADREPLY;
	}
}

int etcd2_codec_reply(long status, const char *body, size_t len,
		      struct etcd2_reply *r, struct store_error *err)
{
	json_t *root, *action, *node, *prev;
	json_error_t je;
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	root = json_loadb(body ? body : "", len, E2C_JSON_FLAGS, &je);
	if (status < 200 || status >= 300) {
		rc = e2c_error(status, json_is_object(root) ? root : NULL,
			       body, len, r, err);
		json_decref(root);
		return rc;
	}
	if (!root)
		return e2c_not_json(body ? body : "", len, &je, err);
	if (!json_is_object(root)) {
		rc = e2c_bad(err, "malformed reply: not an object");
		goto out;
	}
	action = json_object_get(root, "action");
	if (!json_is_string(action)) {
		rc = e2c_bad(err, "malformed reply: no action");
		goto out;
	}
	for (i = 0; i < sizeof(e2c_actions) / sizeof(e2c_actions[0]); i++)
		if (strcmp(json_string_value(action), e2c_actions[i].name) == 0)
			r->action = e2c_actions[i].action;
	if (r->action == ETCD2_NONE ||
	    strlen(json_string_value(action)) != json_string_length(action)) {
		char q[E2C_QUOTE + 4];

		rc = e2c_bad(err, "malformed reply: unknown action "
			     "'%s'", e2c_quote(json_string_value(action),
					       json_string_length(action), q,
					       sizeof(q)));
		goto out;
	}
	node = json_object_get(root, "node");
	if (!node) {
		rc = e2c_bad(err, "malformed reply: no node");
		goto out;
	}
	rc = e2c_node(node, &r->node, err);
	if (rc < 0)
		goto out;
	prev = json_object_get(root, "prevNode");
	if (prev)
		rc = e2c_node(prev, &r->prev, err);
out:
	json_decref(root);
	if (rc == STORE_EINTERNAL)
		store_enomem(err, NULL, 0);
	if (rc < 0)
		etcd2_reply_release(r);	/* nothing half-read */
	return rc;
}

/* --- ranges of keys --- */

/* memcmp order of two byte strings; a prefix sorts first. */
static int e2c_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* @a compared with @d followed by the byte @c. */
static int e2c_cmp_ext(const char *a, size_t alen, const char *d,
		       size_t dlen, unsigned char c)
{
	int r;

	r = memcmp(a, d, alen < dlen ? alen : dlen);
	if (r)
		return r;
	if (alen <= dlen)
		return -1;	/* a prefix of @d + @c, and shorter */
	if ((unsigned char)a[dlen] != c)
		return (unsigned char)a[dlen] < c ? -1 : 1;
	return alen > dlen + 1 ? 1 : 0;
}

static bool e2c_unbounded(const char *hi, size_t hi_len)
{
	return hi_len == 1 && hi[0] == '\0';
}

/* True if @k is in [@lo, @hi) (@hi as in etcd2_codec_list). */
static bool e2c_in_range(const char *k, size_t klen, const char *lo,
			 size_t lo_len, const char *hi, size_t hi_len)
{
	if (hi_len == 0)
		return e2c_cmp(k, klen, lo, lo_len) == 0;
	if (e2c_cmp(k, klen, lo, lo_len) < 0)
		return false;
	return e2c_unbounded(hi, hi_len) || e2c_cmp(k, klen, hi, hi_len) < 0;
}

/*
 * True if a key under the directory @d (starting with @d + "/", so in
 * [@d + "/", @d + "0")) can be in [@lo, @hi).
 */
static bool e2c_dir_meets(const char *d, size_t dlen, const char *lo,
			  size_t lo_len, const char *hi, size_t hi_len)
{
	if (hi_len == 0)
		return e2c_cmp_ext(lo, lo_len, d, dlen, '/') > 0 &&
		       e2c_cmp_ext(lo, lo_len, d, dlen, '0') < 0;
	/* lo < d + "0" and d + "/" < hi */
	if (e2c_cmp_ext(lo, lo_len, d, dlen, '0') >= 0)
		return false;
	return e2c_unbounded(hi, hi_len) ||
	       e2c_cmp_ext(hi, hi_len, d, dlen, '/') > 0;
}

struct e2c_walk {
	const char *lo, *hi;
	size_t lo_len, hi_len;
	bool keys_only;
	struct store_list *out;
	int64_t max_index;
	struct store_error *err;
};

static int e2c_walk(struct e2c_walk *w, json_t *o, bool top)
{
	struct store_kv kv = { 0 };
	struct e2c_raw n;
	const char *k;
	size_t i, klen;
	int rc;

	rc = e2c_check_node(o, &n, w->err);
	if (rc < 0)
		return rc;
	if (!n.key && !top)
		return e2c_bad(w->err, "malformed reply: a node "
			       "without a key below the top");
	if (n.mod > w->max_index)
		w->max_index = n.mod;
	if (n.dir) {
		for (i = 0; n.nodes && i < json_array_size(n.nodes); i++) {
			rc = e2c_walk(w, json_array_get(n.nodes, i), false);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (n.nodes)
		return e2c_bad(w->err, "malformed reply: key '%s' "
			       "has nodes but is no directory",
			       json_string_value(n.key));
	k = json_string_value(n.key);
	klen = json_string_length(n.key);
	if (!e2c_in_range(k, klen, w->lo, w->lo_len, w->hi, w->hi_len))
		return 0;
	kv.key = store_memdup(k, klen);
	kv.key_len = klen;
	if (n.value && !w->keys_only) {
		kv.value = store_memdup(json_string_value(n.value),
				      json_string_length(n.value));
		kv.value_len = json_string_length(n.value);
	} else {
		kv.value = store_memdup("", 0);
	}
	kv.mod_revision = n.mod;
	kv.create_revision = n.create;
	if (!kv.key || !kv.value || store_list_push_own(w->out, &kv) < 0) {
		store_kv_release(&kv);
		return STORE_EINTERNAL;
	}
	return 0;
}

static int e2c_kv_cmp(const void *a, const void *b)
{
	const struct store_kv *x = a, *y = b;

	return e2c_cmp(x->key, x->key_len, y->key, y->key_len);
}

int etcd2_codec_list(const char *body, size_t len, const char *lo,
		     size_t lo_len, const char *hi, size_t hi_len,
		     bool keys_only, struct store_list *out,
		     int64_t *max_index, struct store_error *err)
{
	struct e2c_walk w = {
		.lo = lo, .lo_len = lo_len, .hi = hi, .hi_len = hi_len,
		.keys_only = keys_only, .out = out, .err = err,
	};
	json_t *root, *action, *node;
	json_error_t je;
	size_t before = out->n, i;
	int rc;

	*max_index = 0;
	root = json_loadb(body ? body : "", len, E2C_JSON_FLAGS, &je);
	if (!root)
		return e2c_not_json(body ? body : "", len, &je, err);
	action = json_object_get(root, "action");
	node = json_object_get(root, "node");
	if (!json_is_object(root) || !json_is_string(action) ||
	    strcmp(json_string_value(action), "get") != 0 || !node) {
		rc = e2c_bad(err, "malformed reply: not the answer "
			     "to a get");
		goto out;
	}
	rc = e2c_walk(&w, node, true);
	if (rc < 0) {
		/* all or nothing */
		for (i = before; i < out->n; i++)
			store_kv_release(&out->kvs[i]);
		out->n = before;
		if (rc == STORE_EINTERNAL)
			store_enomem(err, NULL, 0);
		goto out;
	}
	if (out->n - before > 1)
		qsort(out->kvs + before, out->n - before, sizeof(*out->kvs),
		      e2c_kv_cmp);
	*max_index = w.max_index;
out:
	json_decref(root);
	return rc;
}

size_t etcd2_codec_range_dir(const char *lo, size_t lo_len, const char *hi,
			     size_t hi_len)
{
	size_t l = 0, d;

	if (hi_len == 0) {
		l = lo_len;
	} else if (e2c_unbounded(hi, hi_len)) {
		return 0;
	} else {
		while (l < lo_len && l < hi_len && lo[l] == hi[l])
			l++;
		/*
		 * [P, P with its last byte + 1): every key starts with P,
		 * one byte more than the two have in common.
		 */
		if (l < lo_len && hi_len == l + 1 &&
		    (unsigned char)hi[l] == (unsigned char)lo[l] + 1)
			l++;
	}
	if (l == 0 || lo[0] != '/')
		return 0;
	/* the directory: up to the last '/' of the common part */
	for (d = l; d > 0 && lo[d - 1] != '/'; d--)
		;
	d = d ? d - 1 : 0;
	while (d > 0 && !etcd2_codec_key_ok(lo, d, NULL)) {
		while (d > 0 && lo[d - 1] != '/')
			d--;
		d = d ? d - 1 : 0;
	}
	return d;
}

/* --- events --- */

int etcd2_codec_event(const struct etcd2_reply *r, const char *key,
		      size_t key_len, const char *range_end,
		      size_t range_end_len, struct store_event *ev,
		      struct store_error *err)
{
	const struct store_kv *n = &r->node.kv;
	bool del, in;

	memset(ev, 0, sizeof(*ev));
	if (!r->node.present || !n->key || n->mod_revision <= 0)
		return e2c_bad(err, "malformed watch event: no node "
			       "or no index");
	switch (r->action) {
	case ETCD2_SET:
	case ETCD2_CREATE:
	case ETCD2_UPDATE:
	case ETCD2_CAS:
		del = false;
		break;
	case ETCD2_DELETE:
	case ETCD2_CAD:
	case ETCD2_EXPIRE:
		del = true;
		break;
	default:
		return e2c_bad(err, "malformed watch event: it is "
			       "no change");
	}
	if (!range_end)
		range_end_len = 0;
	ev->revision = n->mod_revision;
	ev->type = STORE_EV_PROGRESS;
	if (r->node.dir) {
		if (!del)
			return 0;	/* a directory made: no key changed */
		if (range_end_len == 0) {
			/* one key: gone if it was under the directory */
			if (e2c_cmp(key, key_len, n->key, n->key_len) == 0 ||
			    e2c_dir_meets(n->key, n->key_len, key, key_len,
					  NULL, 0)) {
				ev->type = STORE_EV_DELETE;
				ev->kv.key = (char *)key;
				ev->kv.key_len = key_len;
				ev->kv.mod_revision = n->mod_revision;
			}
			return 0;
		}
		if (e2c_dir_meets(n->key, n->key_len, key, key_len, range_end,
				  range_end_len)) {
			ev->type = STORE_EV_ERROR;
			ev->err = STORE_ECOMPACTED;
			ev->compact_revision = n->mod_revision;
		}
		return 0;
	}
	in = e2c_in_range(n->key, n->key_len, key, key_len, range_end,
			  range_end_len);
	if (!in)
		return 0;
	ev->type = del ? STORE_EV_DELETE : STORE_EV_PUT;
	ev->kv = *n;
	if (r->prev.present && !r->prev.dir)
		ev->prev_kv = r->prev.kv;
	return 0;
}

int64_t etcd2_codec_history_start(const char *cause, int64_t fallback)
{
	const char *p = cause ? strrchr(cause, '[') : NULL;
	char *end;
	long long v;

	if (!p)
		return fallback;
	errno = 0;
	v = strtoll(p + 1, &end, 10);
	if (errno || end == p + 1 || *end != '/' || v <= 0)
		return fallback;
	return (int64_t)v;
}

/* --- members --- */

static int e2c_member(json_t *o, struct store_member *m,
		      struct store_error *err)
{
	json_t *id, *name, *urls, *u;
	const char *s;
	char *end;
	size_t i, n;

	if (!json_is_object(o))
		return e2c_bad(err, "malformed members reply: a member "
			       "is not an object");
	id = json_object_get(o, "id");
	name = json_object_get(o, "name");
	urls = json_object_get(o, "clientURLs");
	if (!json_is_string(id) || (name && !json_is_string(name)) ||
	    (urls && !json_is_null(urls) && !json_is_array(urls)))
		return e2c_bad(err, "malformed members reply: a member's "
			       "id, name or client URLs of the wrong type");
	s = json_string_value(id);
	n = json_string_length(id);
	if (n == 0 || n > 16 || strspn(s, "0123456789abcdefABCDEF") != n)
		return e2c_bad(err, "malformed members reply: bad member "
			       "id '%.32s'", s);
	errno = 0;
	m->id = (uint64_t)strtoull(s, &end, 16);
	if (errno || *end)
		return e2c_bad(err, "malformed members reply: bad member "
			       "id '%.32s'", s);
	if (name && strlen(json_string_value(name)) !=
	    json_string_length(name))
		return e2c_bad(err, "malformed members reply: a NUL in "
			       "a member's name");
	m->name = strdup(name ? json_string_value(name) : "");
	if (!m->name)
		return STORE_EINTERNAL;
	n = json_is_array(urls) ? json_array_size(urls) : 0;
	if (n) {
		m->client_urls = calloc(n, sizeof(*m->client_urls));
		if (!m->client_urls)
			return STORE_EINTERNAL;
	}
	for (i = 0; i < n; i++) {
		u = json_array_get(urls, i);
		if (!json_is_string(u) ||
		    strlen(json_string_value(u)) != json_string_length(u))
			return e2c_bad(err, "malformed members reply: a "
				       "client URL is not a string");
		m->client_urls[i] = strdup(json_string_value(u));
		if (!m->client_urls[i])
			return STORE_EINTERNAL;
		m->n_client_urls = i + 1;
	}
	return 0;
}

int etcd2_codec_members(const char *body, size_t len,
			struct store_member **members, size_t *n, struct store_error *err)
{
	struct store_member *m = NULL;
	json_t *root, *arr;
	json_error_t je;
	size_t i, count = 0;
	int rc = 0;

	*members = NULL;
	*n = 0;
	root = json_loadb(body ? body : "", len, E2C_JSON_FLAGS, &je);
	if (!root)
		return e2c_not_json(body ? body : "", len, &je, err);
	arr = json_object_get(root, "members");
	if (!json_is_object(root) || !json_is_array(arr) ||
	    json_array_size(arr) == 0) {
		rc = e2c_bad(err, "malformed members reply: no "
			     "members");
		goto out;
	}
	count = json_array_size(arr);
	m = calloc(count, sizeof(*m));
	if (!m) {
		rc = STORE_EINTERNAL;
		goto out;
	}
	for (i = 0; i < count; i++) {
		rc = e2c_member(json_array_get(arr, i), &m[i], err);
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		if (rc == STORE_EINTERNAL)
			store_enomem(err, NULL, 0);
		/* calloc()ed: the members not reached free as empty */
		store_members_free(m, count);
		m = NULL;
		goto out;
	}
	*members = m;
	*n = count;
out:
	json_decref(root);
	return rc;
}

/* --- keys and requests --- */

bool etcd2_codec_utf8_ok(const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, need, k;
	uint32_t cp, min;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if (s[i] >= 0xc2 && s[i] <= 0xdf) {
			need = 1;
			cp = s[i] & 0x1f;
			min = 0x80;
		} else if (s[i] >= 0xe0 && s[i] <= 0xef) {
			need = 2;
			cp = s[i] & 0x0f;
			min = 0x800;
		} else if (s[i] >= 0xf0 && s[i] <= 0xf4) {
			need = 3;
			cp = s[i] & 0x07;
			min = 0x10000;
		} else {
			return false;
		}
		if (len - i - 1 < need)
			return false;
		for (k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
}

bool etcd2_codec_key_ok(const char *key, size_t len, const char **why)
{
	const char *dummy, *seg, *end = key + len, *slash;
	size_t n;

	if (!why)
		why = &dummy;
	if (len == 0 || key[0] != '/') {
		*why = "an etcd v2 key is a path that starts with '/'";
		return false;
	}
	if (len == 1) {
		*why = "the root directory is not a key";
		return false;
	}
	for (seg = key + 1; seg <= end; seg = slash + 1) {
		slash = memchr(seg, '/', (size_t)(end - seg));
		if (!slash)
			slash = end;
		n = (size_t)(slash - seg);
		if (n == 0) {
			*why = "etcd v2 drops an empty path segment "
			       "('//' or a trailing '/')";
			return false;
		}
		if ((n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.')) {
			*why = "etcd v2 resolves a '.' or '..' path segment";
			return false;
		}
		if (slash == end)
			break;
	}
	if (!etcd2_codec_utf8_ok(key, len)) {
		*why = "etcd v2 keys must be UTF-8";
		return false;
	}
	return true;
}

static bool e2c_unreserved(unsigned char c, bool slash)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~' || (slash && c == '/');
}

/* Percent-encodes @len bytes of @p into @out (room for 3 * @len). */
static size_t e2c_encode(char *out, const char *p, size_t len, bool slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, o = 0;
	unsigned char c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)p[i];
		if (e2c_unreserved(c, slash)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	return o;
}

char *etcd2_codec_path(const char *key, size_t key_len, const char *query)
{
	static const char base[] = "/v2/keys";
	size_t qlen = query ? strlen(query) : 0, o, total;
	char *out;

	if (key_len > (SIZE_MAX - sizeof(base) - qlen - 4) / 3)
		return NULL;
	total = sizeof(base) + 3 * key_len + 1 + qlen + 2;
	out = malloc(total);
	if (!out)
		return NULL;
	memcpy(out, base, sizeof(base) - 1);
	o = sizeof(base) - 1;
	if (key_len == 0)
		out[o++] = '/';
	o += e2c_encode(out + o, key, key_len, true);
	if (qlen) {
		out[o++] = '?';
		memcpy(out + o, query, qlen);
		o += qlen;
	}
	out[o] = '\0';
	return out;
}

char *etcd2_codec_form_value(const char *value, size_t len, size_t *out_len)
{
	static const char name[] = "value=";
	size_t o;
	char *out;

	if (len > (SIZE_MAX - sizeof(name)) / 3)
		return NULL;
	out = malloc(sizeof(name) + 3 * len);
	if (!out)
		return NULL;
	memcpy(out, name, sizeof(name) - 1);
	o = sizeof(name) - 1;
	o += e2c_encode(out + o, value, len, false);
	out[o] = '\0';
	*out_len = o;
	return out;
}
