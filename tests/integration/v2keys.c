/*
 * v2keys.c - the v2 store tests' witness of what etcd's v2 key space holds:
 * curl on /v2/keys (with its own URL encoding, so that any key can be
 * checked, and the X-Etcd-Index header, which is etcd's index) and, where
 * the keys are plain, etcdctl in its v2 mode (v2keys_ctl); and stores of a
 * prefix there
 *
 * What it cannot do: witness the v3 key space (tests/integration/ctl.c),
 * or an etcd other than the one tests/lib/with-etcd started.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cases.h"
#include "store.h"
#include "tap.h"
#include "util.h"
#include "v2keys.h"

const char *v2keys_endpoint;
char v2keys_ctl[512];

struct v2keys_reply {
	long status;
	int64_t index;		/* X-Etcd-Index, -1 if none */
	json_t *json;		/* the body, NULL if not JSON */
};

static void reply_release(struct v2keys_reply *r)
{
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/* Every byte but [A-Za-z0-9/] as %XX: the test's own URL encoding. */
static char *url_encode(const char *key, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = util_xmalloc(3 * len + 1);
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '/') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * @method on /v2/keys@key?@query with curl; @value (if not NULL) sent as
 * the form field "value", from a file so that any byte goes.  Fills @r
 * with the status, X-Etcd-Index and the parsed body.
 */
static bool request(const char *method, const char *key, size_t key_len,
		  const char *query, const char *value, size_t value_len,
		  struct v2keys_reply *r)
{
	char *enc = url_encode(key, key_len), *out, *p, *hdr_end, *data = NULL;
	size_t len = 0;
	FILE *f;

	memset(r, 0, sizeof(*r));
	r->index = -1;
	if (value) {
		data = util_fmt("%s/witness-value", util_scratch);
		f = fopen(data, "wb");
		if (!f || fwrite(value, 1, value_len, f) != value_len) {
			if (f)
				fclose(f);
			free(enc);
			free(data);
			return false;
		}
		fclose(f);
	}
	out = util_sh_out_len(
	    &len,
	    "curl -s -i --max-time 30 -X %s '%s/v2/keys%s%s%s'"
	    "%s%s",
	    method, v2keys_endpoint, enc, query ? "?" : "", query ? query : "",
	    data ? " --data-urlencode value@" : "", data ? data : "");
	free(enc);
	free(data);
	if (!out)
		return false;
	p = out;
	for (;;) {
		hdr_end = strstr(p, "\r\n\r\n");
		if (!hdr_end || sscanf(p, "HTTP/%*s %ld", &r->status) != 1) {
			tap_diag("witness: no HTTP reply: '%s'",
				 util_show(out, len));
			free(out);
			return false;
		}
		if (r->status != 100)
			break;
		p = hdr_end + 4;
	}
	*hdr_end = '\0';
	for (char *h = p; h && *h; h = strstr(h, "\r\n") ? strstr(h, "\r\n") +
	     2 : NULL) {
		if (!strncasecmp(h, "X-Etcd-Index:", 13))
			r->index = strtoll(h + 13, NULL, 10);
	}
	p = hdr_end + 4;
	r->json = json_loadb(p, len - (size_t)(p - out), JSON_ALLOW_NUL, NULL);
	free(out);
	return true;
}

void v2keys_kv_release(struct v2keys_kv *w)
{
	free(w->value);
	memset(w, 0, sizeof(*w));
}

/* What etcd holds at @key: 1 (filled), 0 absent, -1 on failure. */
int v2keys_get(const char *key, size_t key_len, struct v2keys_kv *out)
{
	struct v2keys_reply r;
	json_t *node, *v;

	memset(out, 0, sizeof(*out));
	if (!request("GET", key, key_len, "quorum=true", NULL, 0, &r))
		return -1;
	/* not found, or below a key (104, "not a directory") */
	if (r.status == 404 ||
	    json_integer_value(json_object_get(r.json, "errorCode")) == 104) {
		reply_release(&r);
		return 0;
	}
	node = json_object_get(r.json, "node");
	if (r.status != 200 || !node) {
		tap_diag("witness: GET '%s': status %ld",
			 util_show(key, key_len), r.status);
		reply_release(&r);
		return -1;
	}
	v = json_object_get(node, "value");
	out->value = util_xmemdup(json_is_string(v) ? json_string_value(v) : "",
			     json_is_string(v) ? json_string_length(v) : 0);
	out->value_len = json_is_string(v) ? json_string_length(v) : 0;
	out->mod = json_integer_value(json_object_get(node, "modifiedIndex"));
	out->create = json_integer_value(json_object_get(node, "createdIndex"));
	out->ttl = json_integer_value(json_object_get(node, "ttl"));
	out->dir = json_is_true(json_object_get(node, "dir"));
	reply_release(&r);
	return 1;
}

/* True if etcd holds @key (a key, not a directory) with @value. */
bool v2keys_has(const char *key, size_t key_len, const char *value,
		size_t value_len)
{
	struct v2keys_kv w;
	int r = v2keys_get(key, key_len, &w);
	bool ok;

	if (r != 1) {
		tap_diag("etcd does not hold '%s'", util_show(key, key_len));
		return false;
	}
	ok = !w.dir && util_mem_is(w.value, w.value_len, value, value_len);
	if (!ok)
		tap_diag("etcd holds '%s' = '%s', expected '%s'",
			 util_show(key, key_len),
			 util_show(w.value, w.value_len),
			 util_show(value, value_len));
	v2keys_kv_release(&w);
	return ok;
}

bool v2keys_lacks(const char *key, size_t key_len)
{
	struct v2keys_kv w;
	int r = v2keys_get(key, key_len, &w);

	v2keys_kv_release(&w);
	if (r != 0)
		tap_diag("etcd still holds '%s'", util_show(key, key_len));
	return r == 0;
}

/* The modifiedIndex of @key (text), 0 if absent or on failure. */
int64_t v2keys_mod(const char *key)
{
	struct v2keys_kv w;
	int64_t mod = 0;

	if (v2keys_get(key, strlen(key), &w) == 1)
		mod = w.mod;
	v2keys_kv_release(&w);
	return mod;
}

/* Puts @value at the text key @key; its new modifiedIndex, 0 on failure. */
int64_t v2keys_put(const char *key, const char *value)
{
	struct v2keys_reply r;
	int64_t mod = 0;

	if (!request("PUT", key, strlen(key), NULL, value, strlen(value), &r))
		return 0;
	if (r.status == 200 || r.status == 201)
		mod = json_integer_value(json_object_get(
			json_object_get(r.json, "node"), "modifiedIndex"));
	else
		tap_diag("witness: PUT '%s': status %ld", key, r.status);
	reply_release(&r);
	return mod;
}

/* Sends @method @key?@query with no value; true if etcd said 2xx. */
bool v2keys_do(const char *method, const char *key, const char *query)
{
	struct v2keys_reply r;
	bool ok;

	if (!request(method, key, strlen(key), query, NULL, 0, &r))
		return false;
	ok = r.status >= 200 && r.status < 300;
	if (!ok)
		tap_diag("witness: %s '%s?%s': status %ld", method, key,
			 query ? query : "", r.status);
	reply_release(&r);
	return ok;
}

/* etcd's index now, from the X-Etcd-Index of a quorum GET; -1 on failure. */
int64_t v2keys_index(void)
{
	struct v2keys_reply r;
	int64_t index = -1;

	if (request("GET", "/", 1, "quorum=true", NULL, 0, &r))
		index = r.index;
	reply_release(&r);
	return index;
}

/* ---- stores ---- */

struct store *v2keys_store_open(const char *prefix)
{
	struct store_config cfg = {
		.api = STORE_API_V2,
		.endpoints = v2keys_endpoint,
		.prefix = prefix,
	};

	return util_store_open(&cfg);
}

bool v2keys_setup(void)
{
	v2keys_endpoint = witness_v2.endpoint = getenv("ETCDFS_TEST_ENDPOINTS");
	util_tests_dir = getenv("TESTS_DIR");
	util_scratch = getenv("ETCDFS_TEST_DIR");
	if (!v2keys_endpoint || !*v2keys_endpoint || !util_tests_dir ||
	    !util_scratch) {
		printf("Bail out! run under tests/lib/with-etcd with TESTS_DIR "
		       "set and WITH_ETCD_ARGS=--enable-v2=true "
		       "(ETCDFS_TEST_ENDPOINTS, ETCDFS_TEST_DIR)\n");
		return false;
	}
	unsetenv("ETCDCTL_ENDPOINTS");
	unsetenv("ETCDCTL_USER");
	snprintf(v2keys_ctl, sizeof(v2keys_ctl),
		 "ETCDCTL_API=2 etcdctl --endpoints=%s --timeout=5s "
		 "--total-timeout=30s", v2keys_endpoint);
	if (v2keys_index() < 0) {
		printf("Bail out! the etcd at '%s' does not serve /v2/keys: "
		       "start it with --enable-v2=true\n", v2keys_endpoint);
		return false;
	}
	return true;
}

/* ---- the witness of the shared cases (cases.h) ---- */

static bool v2keys_del(const char *key)
{
	return v2keys_do("DELETE", key, NULL);
}

static bool v2keys_has_str(const char *key, const char *value)
{
	return v2keys_has(key, strlen(key), value, strlen(value));
}

static bool v2keys_lacks_str(const char *key)
{
	return v2keys_lacks(key, strlen(key));
}

/* The one member's ID, from etcdctl's v2 "member list" (hex, then ':'). */
static uint64_t v2keys_member_id(void)
{
	char *out = util_sh_out("%s member list", v2keys_ctl), *end;
	uint64_t id;

	if (!out)
		return 0;
	errno = 0;
	id = strtoull(out, &end, 16);
	if (errno || end == out || *end != ':')
		id = 0;
	free(out);
	return id;
}

struct witness witness_v2 = {
	.api = STORE_API_V2,
	.open = v2keys_store_open,
	.put = v2keys_put,
	.del = v2keys_del,
	.has = v2keys_has_str,
	.lacks = v2keys_lacks_str,
	.mod = v2keys_mod,
	.revision = v2keys_index,
	.member_id = v2keys_member_id,
	.exhausted_calls_min = 3,
	.exhausted_calls_max = 3,
	.ev_revision = true,
	.watch_history_early = true,
};
