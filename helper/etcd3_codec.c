/*
 * etcd3_codec.c - requests to and replies from the etcd v3 JSON gateway
 *
 * Builds the JSON bodies the etcd3 backend sends, parses the replies
 * (defensively: every field is checked for presence, type and range before
 * use), maps error bodies to enum store_err and frames the watch stream.
 * See etcd3_codec.h for the contracts.
 *
 * It depends on jansson and on the types of store.h only, not on the rest
 * of the helper, so the unit test and the fuzzer link it alone.
 *
 * What it cannot do: I/O of any kind; parse responses of requests the
 * backend never sends (nested txns, watch fragments).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd3_codec.h"

/*
 * Replies are decoded with duplicate keys rejected: etcd never sends them
 * and a reply that does is ambiguous.
 */
#define ETCD3_JSON_FLAGS JSON_REJECT_DUPLICATES

/* ---- errors ---- */

#define bad(err, ...) \
	store_fail(err, STORE_EBADREPLY, NULL, 0, 0, "malformed reply: " __VA_ARGS__)
#define nomem(err) store_enomem(err, NULL, 0)

/*
 * Copies up to @max bytes of @s into @dst as printable ASCII (other bytes
 * as \xNN), cut with "..." if longer, for messages quoting the server.
 */
static void printable(char *dst, size_t size, const char *s, size_t len,
		      size_t max)
{
	size_t o = 0, i;

	if (!size)
		return;
	for (i = 0; i < len && i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f) {
			if (o + 2 > size)
				break;
			dst[o++] = (char)c;
		} else {
			if (o + 5 > size)
				break;
			snprintf(dst + o, size - o, "\\x%02x", c);
			o += 4;
		}
	}
	if (i < len && o + 4 <= size) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = '\0';
}

/* ---- base64 ---- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *etcd3_b64_encode(const char *data, size_t len, size_t *out_len)
{
	const unsigned char *in = (const unsigned char *)data;
	size_t n, i, o = 0;
	char *out;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	n = (len + 2) / 3 * 4;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	for (i = 0; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
			     in[i + 2];

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = b64_alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

/* The value of base64 character @c, or -1. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int etcd3_b64_decode(const char *in, size_t len, char **out, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t pad = 0, n, i, o = 0;
	char *buf;

	if (len % 4)
		return STORE_EBADREPLY;
	if (len >= 1 && s[len - 1] == '=')
		pad++;
	if (len >= 2 && s[len - 2] == '=')
		pad++;
	n = len / 4 * 3 - pad;
	/* check everything before allocating: a bad reply costs nothing */
	for (i = 0; i < len - pad; i++)
		if (b64_value(s[i]) < 0)
			return STORE_EBADREPLY;
	/* the bits the padding leaves over must be zero */
	if (pad == 1 && (b64_value(s[len - 2]) & 3))
		return STORE_EBADREPLY;
	if (pad == 2 && (b64_value(s[len - 3]) & 15))
		return STORE_EBADREPLY;
	buf = malloc(n + 1);
	if (!buf)
		return STORE_EINTERNAL;
	for (i = 0; i < len; i += 4) {
		uint32_t v = 0;
		int k;

		for (k = 0; k < 4; k++) {
			int d = s[i + k] == '=' ? 0 : b64_value(s[i + k]);

			v = v << 6 | (uint32_t)d;
		}
		if (o < n)
			buf[o++] = (char)(v >> 16);
		if (o < n)
			buf[o++] = (char)(v >> 8 & 0xff);
		if (o < n)
			buf[o++] = (char)(v & 0xff);
	}
	buf[n] = '\0';
	*out = buf;
	*out_len = n;
	return 0;
}

/* ---- requests ---- */

/* Sets @name of @obj to the base64 of @data; false when out of memory. */
static bool set_b64(json_t *obj, const char *name, const char *data,
		    size_t len)
{
	size_t n;
	char *s = etcd3_b64_encode(data, len, &n);
	json_t *v;

	if (!s)
		return false;
	v = json_stringn_nocheck(s, n);
	free(s);
	return v && json_object_set_new(obj, name, v) == 0;
}

/* 64-bit numbers go as strings, as proto3 JSON writes them. */
static bool set_int64(json_t *obj, const char *name, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return json_object_set_new(obj, name, json_string(buf)) == 0;
}

static bool set_true(json_t *obj, const char *name)
{
	return json_object_set_new(obj, name, json_true()) == 0;
}

/* Appends {@name: @inner} to @array, stealing @inner. */
static bool append_op(json_t *array, const char *name, json_t *inner)
{
	json_t *op;

	if (!inner)
		return false;
	op = json_object();
	if (!op || json_object_set_new(op, name, inner)) {
		json_decref(op);
		return false;
	}
	return json_array_append_new(array, op) == 0;
}

json_t *etcd3_req_range(const struct etcd3_range_req *r)
{
	json_t *req = json_object();

	if (!req || !set_b64(req, "key", r->key, r->key_len))
		goto fail;
	if (r->range_end &&
	    !set_b64(req, "range_end", r->range_end, r->range_end_len))
		goto fail;
	if (r->limit > 0 && !set_int64(req, "limit", r->limit))
		goto fail;
	if (r->revision > 0 && !set_int64(req, "revision", r->revision))
		goto fail;
	if (r->serializable && !set_true(req, "serializable"))
		goto fail;
	if (r->keys_only && !set_true(req, "keys_only"))
		goto fail;
	if (r->count_only && !set_true(req, "count_only"))
		goto fail;
	return req;
fail:
	json_decref(req);
	return NULL;
}

json_t *etcd3_req_put(const char *key, size_t key_len, const char *value,
		      size_t value_len, int64_t lease)
{
	json_t *req = json_object();

	if (!req || !set_b64(req, "key", key, key_len) ||
	    !set_b64(req, "value", value, value_len))
		goto fail;
	if (lease == -1 && !set_true(req, "ignore_lease"))
		goto fail;
	if (lease > 0 && !set_int64(req, "lease", lease))
		goto fail;
	return req;
fail:
	json_decref(req);
	return NULL;
}

static json_t *range_op(const char *key, size_t key_len)
{
	json_t *r = json_object();

	if (!r || !set_b64(r, "key", key, key_len)) {
		json_decref(r);
		return NULL;
	}
	return r;
}

/* Appends a compare of @target ("MOD", "CREATE") of @key with @rev. */
static bool add_compare(json_t *compares, const char *key, size_t key_len,
			const char *target, int64_t rev)
{
	json_t *c = json_object();

	if (!c || !set_b64(c, "key", key, key_len) ||
	    json_object_set_new(c, "target", json_string(target)) ||
	    json_object_set_new(c, "result", json_string("EQUAL")) ||
	    !set_int64(c, strcmp(target, "MOD") ? "create_revision" :
		       "mod_revision", rev)) {
		json_decref(c);
		return false;
	}
	return json_array_append_new(compares, c) == 0;
}

/* A txn object with empty compare, success and failure arrays. */
static json_t *txn_new(json_t **compare, json_t **success, json_t **failure)
{
	json_t *t = json_object();

	*compare = json_array();
	*success = json_array();
	*failure = json_array();
	if (!t || !*compare || !*success || !*failure) {
		json_decref(*compare);
		json_decref(*success);
		json_decref(*failure);
		json_decref(t);
		return NULL;
	}
	/* the arrays stay valid: t holds the only reference */
	if (json_object_set_new(t, "compare", *compare) |
	    json_object_set_new(t, "success", *success) |
	    json_object_set_new(t, "failure", *failure)) {
		json_decref(t);
		return NULL;
	}
	return t;
}

json_t *etcd3_req_cas(const char *key, size_t key_len, int64_t expect,
		      const char *value, size_t value_len, int64_t lease)
{
	json_t *cmp, *ok, *ko;
	json_t *t = txn_new(&cmp, &ok, &ko);

	if (!t)
		return NULL;
	if (expect >= 0 && !add_compare(cmp, key, key_len, "MOD", expect))
		goto fail;
	if (!append_op(ok, "request_put",
		       etcd3_req_put(key, key_len, value, value_len, lease)))
		goto fail;
	if (!append_op(ko, "request_range", range_op(key, key_len)))
		goto fail;
	return t;
fail:
	json_decref(t);
	return NULL;
}

json_t *etcd3_req_delete(const char *key, size_t key_len, int64_t expect_mod,
			 int64_t expect_create)
{
	json_t *cmp, *ok, *ko, *del;
	json_t *t = txn_new(&cmp, &ok, &ko);

	if (!t)
		return NULL;
	if (expect_mod >= 0 &&
	    !add_compare(cmp, key, key_len, "MOD", expect_mod))
		goto fail;
	if (expect_create > 0 &&
	    !add_compare(cmp, key, key_len, "CREATE", expect_create))
		goto fail;
	del = range_op(key, key_len);
	if (del && !set_true(del, "prev_kv")) {
		json_decref(del);
		goto fail;
	}
	if (!append_op(ok, "request_delete_range", del))
		goto fail;
	if (!append_op(ko, "request_range", range_op(key, key_len)))
		goto fail;
	return t;
fail:
	json_decref(t);
	return NULL;
}

json_t *etcd3_req_move(const char *from, size_t from_len, int64_t from_mod,
		       int64_t from_create, const char *to, size_t to_len,
		       int64_t to_mod, int64_t to_create, const char *value,
		       size_t value_len)
{
	json_t *cmp, *ok, *ko;
	json_t *t = txn_new(&cmp, &ok, &ko);

	if (!t)
		return NULL;
	if (from_mod >= 0 && !add_compare(cmp, from, from_len, "MOD", from_mod))
		goto fail;
	if (from_create > 0 &&
	    !add_compare(cmp, from, from_len, "CREATE", from_create))
		goto fail;
	if (to_mod >= 0 && !add_compare(cmp, to, to_len, "MOD", to_mod))
		goto fail;
	if (to_create > 0 && !add_compare(cmp, to, to_len, "CREATE", to_create))
		goto fail;
	if (!append_op(ok, "request_put",
		       etcd3_req_put(to, to_len, value, value_len, 0)))
		goto fail;
	if (!append_op(ok, "request_delete_range", range_op(from, from_len)))
		goto fail;
	if (!append_op(ko, "request_range", range_op(from, from_len)))
		goto fail;
	if (!append_op(ko, "request_range", range_op(to, to_len)))
		goto fail;
	return t;
fail:
	json_decref(t);
	return NULL;
}

json_t *etcd3_req_lease_grant(int64_t ttl)
{
	json_t *req = json_object();

	if (!req || !set_int64(req, "TTL", ttl)) {
		json_decref(req);
		return NULL;
	}
	return req;
}

json_t *etcd3_req_watch(const char *key, size_t key_len,
			const char *range_end, size_t range_end_len,
			int64_t start_rev)
{
	json_t *req = json_object();
	json_t *c = json_object();

	if (!req || !c || json_object_set(req, "create_request", c))
		goto fail;
	if (!set_b64(c, "key", key, key_len))
		goto fail;
	if (range_end && !set_b64(c, "range_end", range_end, range_end_len))
		goto fail;
	if (start_rev > 0 && !set_int64(c, "start_revision", start_rev))
		goto fail;
	if (!set_true(c, "prev_kv") || !set_true(c, "progress_notify"))
		goto fail;
	json_decref(c);
	return req;
fail:
	json_decref(c);
	json_decref(req);
	return NULL;
}

char *etcd3_dump_own(json_t *req, size_t *len)
{
	char *s;

	if (!req)
		return NULL;
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (s && len)
		*len = strlen(s);
	return s;
}

/* ---- reply fields ---- */

/* Decodes @body, which must hold one JSON object. */
static int load_object(const char *body, size_t len, json_t **root,
		       struct store_error *err)
{
	json_error_t jerr;
	json_t *j;

	if (!body || !len)
		return bad(err, "empty body");
	j = json_loadb(body, len, ETCD3_JSON_FLAGS, &jerr);
	if (!j) {
		char snip[64];

		printable(snip, sizeof(snip), body, len, 40);
		return bad(err, "not JSON (%s at byte %d): '%s'", jerr.text,
			   jerr.position, snip);
	}
	if (!json_is_object(j)) {
		json_decref(j);
		return bad(err, "not a JSON object");
	}
	*root = j;
	return 0;
}

/*
 * Parses the decimal @s of @len bytes strictly: an optional '-', digits
 * only, no blanks, no '+', in range.
 */
static bool parse_dec(const char *s, size_t len, bool is_unsigned,
		      int64_t *sv, uint64_t *uv)
{
	char buf[32];
	char *end;
	size_t i = 0;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (buf[0] == '-' && !is_unsigned)
		i = 1;
	if (i == len)
		return false;
	for (; i < len; i++)
		if (buf[i] < '0' || buf[i] > '9')
			return false;
	errno = 0;
	if (is_unsigned)
		*uv = strtoull(buf, &end, 10);
	else
		*sv = strtoll(buf, &end, 10);
	return errno == 0 && end == buf + len;
}

/*
 * Reads the 64-bit integer @name of @obj (a string or a JSON integer) into
 * *@out, at least @min.  A missing field reads as 0, or is an error when
 * @required.  @where names @obj in messages ("" for the root).
 */
static int get_int64(json_t *obj, const char *where, const char *name,
		     bool required, int64_t min, int64_t *out,
		     struct store_error *err)
{
	json_t *v = json_object_get(obj, name);
	int64_t x = 0;

	*out = 0;
	if (!v) {
		if (required)
			return bad(err, "'%s%s' is missing", where, name);
		return 0;
	}
	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (!json_is_string(v) ||
		   !parse_dec(json_string_value(v), json_string_length(v),
			      false, &x, NULL)) {
		return bad(err, "'%s%s' is not a 64-bit integer", where, name);
	}
	if (x < min)
		return bad(err, "'%s%s' is out of range", where, name);
	*out = x;
	return 0;
}

static int get_uint64(json_t *obj, const char *where, const char *name,
		      uint64_t *out, struct store_error *err)
{
	json_t *v = json_object_get(obj, name);

	*out = 0;
	if (!v)
		return bad(err, "'%s%s' is missing", where, name);
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) ||
	    !parse_dec(json_string_value(v), json_string_length(v), true,
		       NULL, out))
		return bad(err, "'%s%s' is not an unsigned 64-bit integer",
			   where, name);
	return 0;
}

/* A missing boolean is false (proto3 omits it). */
static int get_bool(json_t *obj, const char *where, const char *name,
		    bool *out, struct store_error *err)
{
	json_t *v = json_object_get(obj, name);

	*out = false;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return bad(err, "'%s%s' is not a boolean", where, name);
	*out = json_is_true(v);
	return 0;
}

/* A missing string is NULL; a present one must be a string. */
static int get_string(json_t *obj, const char *where, const char *name,
		      const char **out, size_t *len, struct store_error *err)
{
	json_t *v = json_object_get(obj, name);

	*out = NULL;
	*len = 0;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return bad(err, "'%s%s' is not a string", where, name);
	*out = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

/* A missing object is NULL; a present one must be an object. */
static int get_object(json_t *obj, const char *where, const char *name,
		      bool required, json_t **out, struct store_error *err)
{
	json_t *v = json_object_get(obj, name);

	*out = NULL;
	if (!v) {
		if (required)
			return bad(err, "'%s%s' is missing", where, name);
		return 0;
	}
	if (!json_is_object(v))
		return bad(err, "'%s%s' is not an object", where, name);
	*out = v;
	return 0;
}

/* A missing array is NULL; a present one must be an array. */
static int get_array(json_t *obj, const char *where, const char *name,
		     json_t **out, struct store_error *err)
{
	json_t *v = json_object_get(obj, name);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return bad(err, "'%s%s' is not an array", where, name);
	*out = v;
	return 0;
}

/*
 * Decodes the base64 field @name into a malloc()ed buffer, NUL-terminated;
 * a missing field is the empty value (allocated all the same).
 */
static int get_b64(json_t *obj, const char *where, const char *name,
		   bool required, char **out, size_t *len,
		   struct store_error *err)
{
	const char *s;
	size_t n;
	int rc;

	rc = get_string(obj, where, name, &s, &n, err);
	if (rc)
		return rc;
	if (!s && required)
		return bad(err, "'%s%s' is missing", where, name);
	if (!s) {
		*out = calloc(1, 1);
		*len = 0;
		return *out ? 0 : nomem(err);
	}
	rc = etcd3_b64_decode(s, n, out, len);
	if (rc == STORE_EBADREPLY)
		return bad(err, "'%s%s' is not valid base64", where, name);
	if (rc)
		return nomem(err);
	return 0;
}

/* Parses a mvccpb.KeyValue; @where names it with a trailing '.'. */
static int parse_kv(json_t *o, const char *where, struct store_kv *kv,
		    struct store_error *err)
{
	int rc;

	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(o))
		return bad(err, "'%.*s' is not an object",
			   (int)strlen(where) - 1, where);
	rc = get_b64(o, where, "key", true, &kv->key, &kv->key_len, err);
	if (!rc && !kv->key_len)
		rc = bad(err, "'%skey' is empty", where);
	if (!rc)
		rc = get_b64(o, where, "value", false, &kv->value,
			     &kv->value_len, err);
	if (!rc)
		rc = get_int64(o, where, "create_revision", false, 0,
			       &kv->create_revision, err);
	if (!rc)
		rc = get_int64(o, where, "mod_revision", false, 0,
			       &kv->mod_revision, err);
	if (!rc)
		rc = get_int64(o, where, "version", false, 0, &kv->version,
			       err);
	if (!rc)
		rc = get_int64(o, where, "lease", false, 0, &kv->lease, err);
	if (rc)
		store_kv_release(kv);
	return rc;
}

/* Parses the array @name of KeyValues (missing: none). */
static int parse_kvs(json_t *obj, const char *where, const char *name,
		     struct store_kv **out, size_t *n, struct store_error *err)
{
	json_t *a;
	size_t i, count;
	struct store_kv *kvs;
	int rc;

	*out = NULL;
	*n = 0;
	rc = get_array(obj, where, name, &a, err);
	if (rc || !a)
		return rc;
	count = json_array_size(a);
	if (!count)
		return 0;
	kvs = calloc(count, sizeof(*kvs));
	if (!kvs)
		return nomem(err);
	for (i = 0; i < count; i++) {
		char w[96];

		snprintf(w, sizeof(w), "%s%s[%zu].", where, name, i);
		rc = parse_kv(json_array_get(a, i), w, &kvs[i], err);
		if (rc) {
			store_kvs_free(kvs, i);
			return rc;
		}
	}
	*out = kvs;
	*n = count;
	return 0;
}

/* Reads header.revision; a reply without a header object is malformed. */
static int parse_header(json_t *obj, const char *where, bool header_required,
			bool rev_required, int64_t *rev,
			struct store_error *err)
{
	json_t *h;
	char w[96];
	int rc;

	*rev = 0;
	rc = get_object(obj, where, "header", header_required, &h, err);
	if (rc || !h)
		return rc;
	snprintf(w, sizeof(w), "%sheader.", where);
	return get_int64(h, w, "revision", rev_required, rev_required ? 1 : 0,
			 rev, err);
}

void etcd3_result_release(struct etcd3_result *r)
{
	store_kvs_free(r->kvs, r->n);
	memset(r, 0, sizeof(*r));
}

void etcd3_txn_release(struct etcd3_txn *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		etcd3_result_release(&t->res[i]);
	free(t->res);
	memset(t, 0, sizeof(*t));
}

/*
 * Fills @out from a RangeResponse, PutResponse or DeleteRangeResponse
 * object @o of kind @op.
 */
static int parse_result(json_t *o, const char *where, enum etcd3_op op,
			bool rev_required, struct etcd3_result *out,
			struct store_error *err)
{
	json_t *prev;
	int rc;

	memset(out, 0, sizeof(*out));
	out->op = op;
	rc = parse_header(o, where, rev_required, rev_required, &out->revision,
			  err);
	if (rc)
		return rc;
	switch (op) {
	case ETCD3_OP_RANGE:
		rc = get_int64(o, where, "count", false, 0, &out->count, err);
		if (!rc)
			rc = get_bool(o, where, "more", &out->more, err);
		if (!rc)
			rc = parse_kvs(o, where, "kvs", &out->kvs, &out->n,
				       err);
		break;
	case ETCD3_OP_PUT:
		rc = get_object(o, where, "prev_kv", false, &prev, err);
		if (!rc && prev) {
			char w[96];

			out->kvs = calloc(1, sizeof(*out->kvs));
			if (!out->kvs)
				return nomem(err);
			snprintf(w, sizeof(w), "%sprev_kv.", where);
			rc = parse_kv(prev, w, out->kvs, err);
			if (rc) {
				free(out->kvs);
				out->kvs = NULL;
			} else {
				out->n = 1;
			}
		}
		break;
	case ETCD3_OP_DELETE:
		rc = get_int64(o, where, "deleted", false, 0, &out->count,
			       err);
		if (!rc)
			rc = parse_kvs(o, where, "prev_kvs", &out->kvs,
				       &out->n, err);
		break;
	}
	if (rc)
		etcd3_result_release(out);
	return rc;
}

int etcd3_parse_range(const char *body, size_t len, struct etcd3_result *out,
		      struct store_error *err)
{
	json_t *root;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = load_object(body, len, &root, err);
	if (rc)
		return rc;
	rc = parse_result(root, "", ETCD3_OP_RANGE, true, out, err);
	/* a count below the keys sent is a lie that paging would trip on */
	if (!rc && out->count < (int64_t)out->n) {
		etcd3_result_release(out);
		rc = bad(err, "'count' is below the number of 'kvs'");
	}
	json_decref(root);
	return rc;
}

int etcd3_parse_put(const char *body, size_t len, struct etcd3_result *out,
		    struct store_error *err)
{
	json_t *root;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = load_object(body, len, &root, err);
	if (rc)
		return rc;
	rc = parse_result(root, "", ETCD3_OP_PUT, true, out, err);
	json_decref(root);
	return rc;
}

static const struct {
	const char *name;
	enum etcd3_op op;
} txn_ops[] = {
	{ "response_range", ETCD3_OP_RANGE },
	{ "response_put", ETCD3_OP_PUT },
	{ "response_delete_range", ETCD3_OP_DELETE },
};

int etcd3_parse_txn(const char *body, size_t len, struct etcd3_txn *out,
		    struct store_error *err)
{
	json_t *root, *a;
	size_t i, count;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = load_object(body, len, &root, err);
	if (rc)
		return rc;
	rc = parse_header(root, "", true, true, &out->revision, err);
	if (!rc)
		rc = get_bool(root, "", "succeeded", &out->succeeded, err);
	if (!rc)
		rc = get_array(root, "", "responses", &a, err);
	if (rc || !a)
		goto out;
	count = json_array_size(a);
	if (count) {
		out->res = calloc(count, sizeof(*out->res));
		if (!out->res) {
			rc = nomem(err);
			goto out;
		}
	}
	for (i = 0; i < count; i++) {
		json_t *r = json_array_get(a, i), *inner = NULL;
		char w[64];
		size_t k, found = 0;

		if (!json_is_object(r)) {
			rc = bad(err, "'responses[%zu]' is not an object", i);
			goto out;
		}
		for (k = 0; k < sizeof(txn_ops) / sizeof(txn_ops[0]); k++) {
			json_t *v = json_object_get(r, txn_ops[k].name);

			if (!v)
				continue;
			found++;
			inner = v;
			snprintf(w, sizeof(w), "responses[%zu].%s.", i,
				 txn_ops[k].name);
			out->res[i].op = txn_ops[k].op;
		}
		if (found != 1 || json_object_size(r) != 1) {
			rc = bad(err, "'responses[%zu]' is not one range, "
				 "put or delete_range response", i);
			goto out;
		}
		if (!json_is_object(inner)) {
			rc = bad(err, "'%.*s' is not an object",
				 (int)strlen(w) - 1, w);
			goto out;
		}
		rc = parse_result(inner, w, out->res[i].op, false,
				  &out->res[i], err);
		if (rc)
			goto out;
		out->n = i + 1;
	}
out:
	if (rc)
		etcd3_txn_release(out);
	json_decref(root);
	return rc;
}

int etcd3_parse_lease_grant(const char *body, size_t len, int64_t *id,
			    int64_t *ttl, struct store_error *err)
{
	json_t *root;
	const char *e;
	size_t elen;
	int64_t rev;
	int rc;

	*id = 0;
	*ttl = 0;
	rc = load_object(body, len, &root, err);
	if (rc)
		return rc;
	rc = parse_header(root, "", true, true, &rev, err);
	if (!rc)
		rc = get_string(root, "", "error", &e, &elen, err);
	if (!rc && e && elen) {
		char m[256];

		printable(m, sizeof(m), e, elen, 200);
		rc = store_fail(err, STORE_EINTERNAL, NULL, 0, 0, "lease grant failed: %s",
				m);
	}
	if (!rc)
		rc = get_int64(root, "", "ID", true, 1, id, err);
	if (!rc)
		rc = get_int64(root, "", "TTL", false, 0, ttl, err);
	if (rc) {
		*id = 0;
		*ttl = 0;
	}
	json_decref(root);
	return rc;
}

/* A copy of a JSON string, NUL-free (a member name or URL is text). */
static int dup_text(const char *s, size_t len, const char *what,
		    char **out, struct store_error *err)
{
	if (memchr(s, '\0', len))
		return bad(err, "'%s' holds a NUL byte", what);
	*out = strndup(s, len);
	return *out ? 0 : nomem(err);
}

static int parse_member(json_t *o, size_t i, struct store_member *m,
			struct store_error *err)
{
	char w[64];
	const char *name;
	size_t len, k, count;
	json_t *urls;
	int rc;

	snprintf(w, sizeof(w), "members[%zu].", i);
	if (!json_is_object(o))
		return bad(err, "'members[%zu]' is not an object", i);
	rc = get_uint64(o, w, "ID", &m->id, err);
	if (!rc)
		rc = get_string(o, w, "name", &name, &len, err);
	if (rc)
		return rc;
	/* a member added but not started yet has no name and no URLs */
	snprintf(w, sizeof(w), "members[%zu].name", i);
	rc = dup_text(name ? name : "", len, w, &m->name, err);
	if (!rc) {
		snprintf(w, sizeof(w), "members[%zu].", i);
		rc = get_array(o, w, "clientURLs", &urls, err);
	}
	if (rc || !urls)
		return rc;
	count = json_array_size(urls);
	if (!count)
		return 0;
	m->client_urls = calloc(count, sizeof(char *));
	if (!m->client_urls)
		return nomem(err);
	for (k = 0; k < count; k++) {
		json_t *u = json_array_get(urls, k);

		snprintf(w, sizeof(w), "members[%zu].clientURLs[%zu]", i, k);
		if (!json_is_string(u) || !json_string_length(u))
			return bad(err, "'%s' is not a URL", w);
		rc = dup_text(json_string_value(u), json_string_length(u), w,
			      &m->client_urls[k], err);
		if (rc)
			return rc;
		m->n_client_urls = k + 1;
	}
	return 0;
}

int etcd3_parse_members(const char *body, size_t len,
			struct store_member **members, size_t *n,
			struct store_error *err)
{
	json_t *root, *a;
	struct store_member *m = NULL;
	size_t i, count = 0;
	int64_t rev;
	int rc;

	*members = NULL;
	*n = 0;
	rc = load_object(body, len, &root, err);
	if (rc)
		return rc;
	/* the member list's header carries no revision */
	rc = parse_header(root, "", true, false, &rev, err);
	if (!rc)
		rc = get_array(root, "", "members", &a, err);
	if (!rc && (!a || !json_array_size(a)))
		rc = bad(err, "'members' is missing or empty");
	if (rc)
		goto out;
	count = json_array_size(a);
	m = calloc(count, sizeof(*m));
	if (!m) {
		rc = nomem(err);
		goto out;
	}
	for (i = 0; i < count; i++) {
		rc = parse_member(json_array_get(a, i), i, &m[i], err);
		if (rc)
			goto out;
	}
	*members = m;
	*n = count;
out:
	if (rc)
		store_members_free(m, count);
	json_decref(root);
	return rc;
}

/* ---- errors from the server ---- */

static bool has(const char *s, const char *needle)
{
	return s && strstr(s, needle);
}

int etcd3_map_error(int code, const char *m)
{
	/* messages first: they are more precise than the codes */
	if (has(m, "required revision has been compacted"))
		return STORE_ECOMPACTED;
	if (has(m, "required revision is a future revision"))
		return STORE_EINVAL;
	if (has(m, "request is too large") || has(m, "larger than max"))
		return STORE_ETOOLARGE;
	/* refused before it was proposed, or dropped by raft before it
	 * was appended (a leader being elected or moved): nothing done */
	if (has(m, "too many requests") || has(m, "raft proposal dropped"))
		return STORE_EUNREACHABLE;
	if (has(m, "user name is empty") || has(m, "authentication failed") ||
	    has(m, "invalid auth token"))
		return STORE_EUNAUTHENTICATED;
	if (has(m, "permission denied"))
		return STORE_EPERMISSION;
	/* etcd says this with code 14 when it lost quorum mid-request: the
	 * request may still be applied, so it is a timeout, not a refusal */
	if (has(m, "request timed out") || has(m, "deadline exceeded"))
		return STORE_ETIMEOUT;
	if (has(m, "key not found") || has(m, "lease not found"))
		return STORE_ENOTFOUND;
	switch (code) {
	/*
	 * Canceled (the server went away mid-request), Unavailable ("leader
	 * changed", "no leader", "server stopped"): the request may have
	 * been proposed already, so a write's outcome is unknown (the store
	 * finds out; a read that meets it is unreachable).
	 */
	case 1:
	case 14:
		return STORE_EUNKNOWN;
	case 4:		/* DeadlineExceeded */
		return STORE_ETIMEOUT;
	case 5:		/* NotFound */
		return STORE_ENOTFOUND;
	case 7:		/* PermissionDenied */
		return STORE_EPERMISSION;
	case 8:		/* ResourceExhausted */
		return STORE_ETOOLARGE;
	case 11:	/* OutOfRange */
		return STORE_ECOMPACTED;
	case 12:	/* Unimplemented */
		return STORE_ENOTSUP;
	case 16:	/* Unauthenticated */
		return STORE_EUNAUTHENTICATED;
	default:
		return STORE_EINTERNAL;
	}
}

/* gRPC status names, as in a watch's cancel_reason "rpc error: code = X" */
static const char *const grpc_names[] = {
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded",
	"NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
	"FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
	"Internal", "Unavailable", "DataLoss", "Unauthenticated",
};

static int grpc_code_of(const char *reason)
{
	const char *p = reason ? strstr(reason, "code = ") : NULL;
	size_t i;

	if (!p)
		return -1;
	p += strlen("code = ");
	for (i = 0; i < sizeof(grpc_names) / sizeof(grpc_names[0]); i++) {
		size_t n = strlen(grpc_names[i]);

		if (!strncmp(p, grpc_names[i], n) &&
		    (p[n] == ' ' || p[n] == '\0'))
			return (int)i;
	}
	return -1;
}

/* What the HTTP status alone says, or 0. */
static int status_error(long status)
{
	switch (status) {
	case 401:
		return STORE_EUNAUTHENTICATED;
	case 403:
		return STORE_EPERMISSION;
	case 413:
		return STORE_ETOOLARGE;
	case 502:	/* the gateway lost etcd: maybe mid-request */
	case 503:
		return STORE_EUNKNOWN;
	case 504:
		return STORE_ETIMEOUT;
	default:
		return 0;
	}
}

/*
 * Reads {"error": "...", "message": "...", "code": N} (unary) or
 * {"grpc_code": N, "message": "..."} (inside a stream's "error") into
 * @code and @msg; false if @o holds neither a message nor a code.
 */
static bool read_error_object(json_t *o, int *code, char *msg, size_t size)
{
	json_t *c = json_object_get(o, "code");
	json_t *m = json_object_get(o, "message");

	if (!c)
		c = json_object_get(o, "grpc_code");
	if (!json_is_string(m) || !json_string_length(m))
		m = json_object_get(o, "error");
	*code = -1;
	msg[0] = '\0';
	if (json_is_integer(c) && json_integer_value(c) >= 0 &&
	    json_integer_value(c) < 1000)
		*code = (int)json_integer_value(c);
	if (json_is_string(m))
		printable(msg, size, json_string_value(m),
			  json_string_length(m), size / 2);
	return *code >= 0 || msg[0];
}

int etcd3_parse_error(long status, const char *body, size_t len,
		     struct store_error *err)
{
	json_error_t jerr;
	json_t *root = NULL, *obj;
	char msg[300];
	int code = -1, rc;

	if (body && len)
		root = json_loadb(body, len, ETCD3_JSON_FLAGS, &jerr);
	obj = root;
	/* a stream broken by the server: {"error":{"grpc_code",...}} */
	if (json_is_object(root) &&
	    json_is_object(json_object_get(root, "error")))
		obj = json_object_get(root, "error");
	if (!json_is_object(obj) ||
	    !read_error_object(obj, &code, msg, sizeof(msg))) {
		char snip[64];

		json_decref(root);
		printable(snip, sizeof(snip), body ? body : "", len, 40);
		rc = status_error(status);
		if (rc)
			return store_fail(err, rc, NULL, 0, 0,
					  "http %ld: '%s'", status, snip);
		return store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				  "malformed error reply (http %ld): '%s'",
				  status, snip);
	}
	json_decref(root);
	rc = etcd3_map_error(code, msg);
	if (rc == STORE_EINTERNAL && code < 0 && status_error(status))
		rc = status_error(status);
	store_fail(err, rc, NULL, 0, 0, "%s (http %ld, code %d)",
		   msg[0] ? msg : "no message", status, code);
	return rc;
}

/* ---- the watch stream ---- */

#define FRAMER_MIN_CAP 4096

void etcd3_framer_init(struct etcd3_framer *f, size_t max)
{
	memset(f, 0, sizeof(*f));
	f->max = max;
}

void etcd3_framer_release(struct etcd3_framer *f)
{
	free(f->buf);
	memset(f, 0, sizeof(*f));
}

void etcd3_framer_reset(struct etcd3_framer *f)
{
	f->len = 0;
	f->broken = false;
}

/* Appends @n bytes to the partial line, within max. */
static int framer_append(struct etcd3_framer *f, const char *data, size_t n)
{
	if (n > f->max - f->len) {
		f->broken = true;
		return STORE_EBADREPLY;
	}
	if (f->len + n > f->cap) {
		size_t cap = f->cap ? f->cap : FRAMER_MIN_CAP;
		char *b;

		while (cap < f->len + n)
			cap = cap > f->max / 2 ? f->max : cap * 2;
		b = realloc(f->buf, cap);
		if (!b)
			return STORE_EINTERNAL;
		f->buf = b;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, data, n);
	f->len += n;
	return 0;
}

int etcd3_framer_feed(struct etcd3_framer *f, const char *data, size_t len,
		      etcd3_line_fn fn, void *arg)
{
	while (len) {
		const char *nl, *line;
		size_t piece, n;
		int rc;

		if (f->broken)
			return STORE_EBADREPLY;
		nl = memchr(data, '\n', len);
		if (!nl)
			return framer_append(f, data, len);
		piece = (size_t)(nl - data);
		if (f->len) {
			rc = framer_append(f, data, piece);
			if (rc)
				return rc;
			line = f->buf;
			n = f->len;
		} else {
			if (piece > f->max) {
				f->broken = true;
				return STORE_EBADREPLY;
			}
			line = data;
			n = piece;
		}
		if (n && line[n - 1] == '\r')
			n--;
		rc = n ? fn(arg, line, n) : 0;
		f->len = 0;
		if (rc)
			return rc;
		data = nl + 1;
		len -= piece + 1;
	}
	return f->broken ? STORE_EBADREPLY : 0;
}

const char *etcd3_framer_rest(const struct etcd3_framer *f, size_t *len)
{
	*len = f->broken ? 0 : f->len;
	return f->buf;
}

void etcd3_watch_msg_release(struct etcd3_watch_msg *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		store_kv_release(&m->events[i].kv);
		store_kv_release(&m->events[i].prev_kv);
	}
	free(m->events);
	memset(m, 0, sizeof(*m));
}

static int parse_event(json_t *o, size_t i, struct etcd3_watch_event *ev,
		       struct store_error *err)
{
	char w[64];
	json_t *t, *kv, *prev;
	int rc;

	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(o))
		return bad(err, "'result.events[%zu]' is not an object", i);
	/* PUT is the enum's zero: proto3 leaves it out */
	ev->type = STORE_EV_PUT;
	t = json_object_get(o, "type");
	if (t) {
		if (json_is_string(t) &&
		    !strcmp(json_string_value(t), "DELETE"))
			ev->type = STORE_EV_DELETE;
		else if (json_is_integer(t) && json_integer_value(t) == 1)
			ev->type = STORE_EV_DELETE;
		else if (!(json_is_string(t) &&
			   !strcmp(json_string_value(t), "PUT")) &&
			 !(json_is_integer(t) && json_integer_value(t) == 0))
			return bad(err, "'result.events[%zu].type' is not PUT "
				   "or DELETE", i);
	}
	snprintf(w, sizeof(w), "result.events[%zu].", i);
	rc = get_object(o, w, "kv", true, &kv, err);
	if (!rc)
		rc = get_object(o, w, "prev_kv", false, &prev, err);
	if (rc)
		return rc;
	snprintf(w, sizeof(w), "result.events[%zu].kv.", i);
	rc = parse_kv(kv, w, &ev->kv, err);
	if (rc)
		return rc;
	if (ev->kv.mod_revision <= 0) {
		store_kv_release(&ev->kv);
		return bad(err, "'result.events[%zu].kv.mod_revision' is "
			   "missing", i);
	}
	ev->revision = ev->kv.mod_revision;
	if (prev) {
		snprintf(w, sizeof(w), "result.events[%zu].prev_kv.", i);
		rc = parse_kv(prev, w, &ev->prev_kv, err);
		if (rc) {
			store_kv_release(&ev->kv);
			return rc;
		}
	}
	return 0;
}

static int parse_watch_result(json_t *r, struct etcd3_watch_msg *out,
			      struct store_error *err)
{
	bool created, canceled;
	const char *reason;
	size_t rlen, i, count = 0;
	json_t *events;
	int rc;

	rc = parse_header(r, "result.", true, false, &out->revision, err);
	if (!rc)
		rc = get_int64(r, "result.", "watch_id", false, -1,
			       &out->watch_id, err);
	if (!rc)
		rc = get_bool(r, "result.", "created", &created, err);
	if (!rc)
		rc = get_bool(r, "result.", "canceled", &canceled, err);
	if (!rc)
		rc = get_int64(r, "result.", "compact_revision", false, 0,
			       &out->compact_revision, err);
	if (!rc)
		rc = get_string(r, "result.", "cancel_reason", &reason, &rlen,
				err);
	if (!rc)
		rc = get_array(r, "result.", "events", &events, err);
	if (rc)
		return rc;
	if (canceled) {
		out->kind = ETCD3_WATCH_CANCELED;
		if (reason)
			printable(out->msg, sizeof(out->msg), reason, rlen,
				  200);
		if (out->compact_revision > 0)
			out->err = STORE_ECOMPACTED;
		else
			out->err = etcd3_map_error(grpc_code_of(out->msg),
						   out->msg);
		return 0;
	}
	count = events ? json_array_size(events) : 0;
	if (created) {
		out->kind = ETCD3_WATCH_CREATED;
		if (count)
			return bad(err, "'result' is created and has events");
		return 0;
	}
	if (!count) {
		out->kind = ETCD3_WATCH_PROGRESS;
		if (out->revision <= 0)
			return bad(err, "'result.header.revision' is missing");
		return 0;
	}
	out->kind = ETCD3_WATCH_EVENTS;
	out->events = calloc(count, sizeof(*out->events));
	if (!out->events)
		return nomem(err);
	for (i = 0; i < count; i++) {
		rc = parse_event(json_array_get(events, i), i, &out->events[i],
				 err);
		if (rc)
			return rc;
		out->n = i + 1;
	}
	return 0;
}

int etcd3_parse_watch(const char *line, size_t len, struct etcd3_watch_msg *out,
		      struct store_error *err)
{
	json_t *root, *r, *e;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = load_object(line, len, &root, err);
	if (rc)
		return rc;
	r = json_object_get(root, "result");
	e = json_object_get(root, "error");
	if (r) {
		if (!json_is_object(r))
			rc = bad(err, "'result' is not an object");
		else
			rc = parse_watch_result(r, out, err);
	} else if (json_is_object(e) || json_is_string(e)) {
		int code;

		/* {"error":{...}}: the stream broke; else a unary error */
		if (!read_error_object(json_is_object(e) ? e : root, &code,
				       out->msg, sizeof(out->msg))) {
			rc = bad(err, "'error' holds no message nor code");
		} else {
			out->kind = ETCD3_WATCH_ERROR;
			out->err = etcd3_map_error(code, out->msg);
		}
	} else {
		rc = bad(err, "neither 'result' nor 'error' in a watch reply");
	}
	if (rc)
		etcd3_watch_msg_release(out);
	json_decref(root);
	return rc;
}
