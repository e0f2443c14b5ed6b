/*
 * ctl.c - etcdctl, the v3 store tests' independent witness of what the
 * etcd under tests/lib/with-etcd holds: a key (base64-decoded, with its
 * revisions and lease), a range, the revision, the number of range
 * requests served, and writes of its own; and stores of a prefix there
 *
 * What it cannot do: witness etcd's v2 key space (v2keys.c reads it
 * over HTTP), or keys that a shell cannot quote (etcdctl takes them as
 * arguments: the tests give it text keys).
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "store.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"

const char *ctl_endpoint;
char ctl_cmd[512];

bool ctl_setup(void)
{
	ctl_endpoint = witness_v3.endpoint = getenv("ETCDFS_TEST_ENDPOINTS");
	util_tests_dir = getenv("TESTS_DIR");
	util_scratch = getenv("ETCDFS_TEST_DIR");
	if (!ctl_endpoint || !*ctl_endpoint || !util_tests_dir ||
	    !util_scratch) {
		printf("Bail out! run under tests/lib/with-etcd with TESTS_DIR "
		       "set (ETCDFS_TEST_ENDPOINTS, ETCDFS_TEST_DIR)\n");
		return false;
	}
	setenv("ETCDCTL_API", "3", 1);
	/* etcdctl must not pick up an endpoint or credentials from outside */
	unsetenv("ETCDCTL_ENDPOINTS");
	unsetenv("ETCDCTL_USER");
	unsetenv("ETCDCTL_CACERT");
	unsetenv("ETCDCTL_CERT");
	unsetenv("ETCDCTL_KEY");
	snprintf(ctl_cmd, sizeof(ctl_cmd),
		 "etcdctl --endpoints=%s --dial-timeout=5s "
		 "--command-timeout=30s", ctl_endpoint);
	return true;
}

/* ---- small utilities ---- */

static int b64val(unsigned char c)
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

/* Decodes standard base64; NULL if malformed. */
static char *b64dec(const char *in, size_t *out_len)
{
	size_t n = strlen(in), o = 0;
	char *out = util_xmalloc(n / 4 * 3 + 3);
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		int v;

		if (in[i] == '=')
			break;
		v = b64val((unsigned char)in[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

/* ---- etcdctl, the independent witness ---- */

void ctl_list_release(struct ctl_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->kvs[i].key);
		free(l->kvs[i].value);
	}
	free(l->kvs);
	memset(l, 0, sizeof(*l));
}

/* An integer member of @o that etcdctl writes as a number (0 if absent). */
static int64_t jint(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

/*
 * etcdctl prints the header's cluster and member ids as unsigned 64-bit
 * numbers, which jansson refuses above INT64_MAX: blank them out.
 */
static void blank_ids(char *text)
{
	static const char *const names[] = { "\"cluster_id\":",
					     "\"member_id\":" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = text;

		while ((p = strstr(p, names[i])) != NULL) {
			p += strlen(names[i]);
			if (*p >= '0' && *p <= '9')
				*p++ = '0';
			while (*p >= '0' && *p <= '9')
				*p++ = ' ';
		}
	}
}

/*
 * Runs "@ctl get @args -w json" and parses the answer into @out.  @ctl is
 * the etcdctl command line up to the subcommand.
 */
bool ctl_range(const char *ctl, const char *args, struct ctl_list *out)
{
	json_error_t jerr;
	json_t *root, *kvs;
	char *text;
	size_t i;

	memset(out, 0, sizeof(*out));
	text = util_sh_out("%s get %s -w json", ctl, args);
	if (!text)
		return false;
	blank_ids(text);
	root = json_loads(text, 0, &jerr);
	if (!root) {
		tap_diag("etcdctl answered bad json: %s", jerr.text);
		free(text);
		return false;
	}
	free(text);
	out->revision = jint(json_object_get(root, "header"), "revision");
	out->count = jint(root, "count");
	kvs = json_object_get(root, "kvs");
	out->n = json_array_size(kvs);
	out->kvs = calloc(out->n ? out->n : 1, sizeof(*out->kvs));
	if (!out->kvs)
		abort();
	for (i = 0; i < out->n; i++) {
		json_t *kv = json_array_get(kvs, i);
		struct ctl_kv *c = &out->kvs[i];
		const char *k = json_string_value(json_object_get(kv, "key"));
		const char *v = json_string_value(json_object_get(kv, "value"));

		c->key = b64dec(k ? k : "", &c->key_len);
		c->value = b64dec(v ? v : "", &c->value_len);
		if (!c->key || !c->value) {
			tap_diag("etcdctl answered bad base64");
			json_decref(root);
			ctl_list_release(out);
			return false;
		}
		c->create_revision = jint(kv, "create_revision");
		c->mod_revision = jint(kv, "mod_revision");
		c->version = jint(kv, "version");
		c->lease = jint(kv, "lease");
	}
	json_decref(root);
	return true;
}

/*
 * Reads the text key @key from the main etcd: 1 found (into @out, released
 * by the caller), 0 absent, -1 on error.
 */
int ctl_get(const char *key, struct ctl_kv *out)
{
	struct ctl_list l;
	char *args = util_fmt("'%s'", key);
	bool ok = ctl_range(ctl_cmd, args, &l);

	free(args);
	if (!ok)
		return -1;
	if (l.n == 0) {
		ctl_list_release(&l);
		return 0;
	}
	*out = l.kvs[0];
	l.kvs[0].key = NULL;
	l.kvs[0].value = NULL;
	ctl_list_release(&l);
	return 1;
}

void ctl_kv_release(struct ctl_kv *c)
{
	free(c->key);
	free(c->value);
	memset(c, 0, sizeof(*c));
}

/* True if the main etcd holds the text key @key with the text @value. */
bool ctl_has(const char *key, const char *value)
{
	struct ctl_kv c;
	int r = ctl_get(key, &c);
	bool ok;

	if (r != 1) {
		tap_diag("etcd does not hold '%s'", key);
		return false;
	}
	ok = util_mem_is(c.value, c.value_len, value, strlen(value));
	if (!ok)
		tap_diag("etcd holds '%s' = '%s', expected '%s'", key,
			 util_show(c.value, c.value_len), value);
	ctl_kv_release(&c);
	return ok;
}

/* True if the main etcd does not hold the text key @key. */
bool ctl_lacks(const char *key)
{
	struct ctl_kv c;
	int r = ctl_get(key, &c);

	if (r == 1) {
		tap_diag("etcd still holds '%s'", key);
		ctl_kv_release(&c);
	}
	return r == 0;
}

/* The mod_revision of @key in the main etcd; 0 if absent, -1 on error. */
int64_t ctl_mod(const char *key)
{
	struct ctl_kv c;
	int r = ctl_get(key, &c);
	int64_t m;

	if (r != 1)
		return r;
	m = c.mod_revision;
	ctl_kv_release(&c);
	return m;
}

bool ctl_put(const char *key, const char *value)
{
	return util_sh("%s put '%s' '%s' >/dev/null", ctl_cmd, key, value) == 0;
}

bool ctl_del(const char *key)
{
	return util_sh("%s del '%s' >/dev/null", ctl_cmd, key) == 0;
}

/* The main etcd's current revision, by etcdctl; -1 on error. */
int64_t ctl_revision(void)
{
	struct ctl_list l;
	int64_t r;

	if (!ctl_range(ctl_cmd, "'/no/such/key'", &l))
		return -1;
	r = l.revision;
	ctl_list_release(&l);
	return r;
}

/*
 * How many range requests the main etcd has served so far, from its
 * Prometheus metrics (the JSON gateway goes through the same gRPC
 * handlers); -1 on error.
 */
long ctl_range_requests(void)
{
	char *out = util_sh_out("curl -s --max-time 10 %s/metrics | grep "
			   "'^grpc_server_handled_total{grpc_code=\"OK\","
			   "grpc_method=\"Range\",grpc_service="
			   "\"etcdserverpb.KV\"'", ctl_endpoint);
	char *p, *end;
	double v;

	if (!out)
		return -1;
	p = strrchr(out, ' ');
	if (!p) {
		free(out);
		return -1;
	}
	v = strtod(p + 1, &end);
	if (end == p + 1) {
		free(out);
		return -1;
	}
	free(out);
	return (long)v;
}

char *ctl_lease_list(void)
{
	char *out = util_sh_out("%s lease list", ctl_cmd);
	long n;

	if (out && sscanf(out, "found %ld leases", &n) != 1) {
		tap_diag("etcdctl lease list said '%s'", out);
		free(out);
		out = NULL;
	}
	return out;
}

long ctl_leases_new(const char *before, const char *now, int64_t *id)
{
	const char *p, *nl;
	char line[32];
	long n = 0;
	size_t len;

	*id = 0;
	/* after "found N leases", one id a line, in 16 hex digits */
	for (p = strchr(now, '\n'); p && *++p; p = nl) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (len == 0 || len >= sizeof(line))
			return -1;
		memcpy(line, p, len);
		line[len] = '\0';
		if (strstr(before, line))
			continue;
		n++;
		*id = (int64_t)strtoull(line, NULL, 16);
	}
	return n;
}

/* ---- stores ---- */

struct store *ctl_store_open(const char *prefix)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = prefix,
	};

	return util_store_open(&cfg);
}

/* ---- the witness of the shared cases (cases.h) ---- */

static int64_t ctl_put_rev(const char *key, const char *value)
{
	int64_t mod;

	if (!ctl_put(key, value))
		return 0;
	mod = ctl_mod(key);
	return mod > 0 ? mod : 0;
}

/* The one member's ID, from "member list -w simple" (hex, then ','). */
static uint64_t ctl_member_id(void)
{
	char *out = util_sh_out("%s member list -w simple", ctl_cmd), *end;
	uint64_t id;

	if (!out)
		return 0;
	errno = 0;
	id = strtoull(out, &end, 16);
	if (errno || end == out || *end != ',')
		id = 0;
	free(out);
	return id;
}

struct witness witness_v3 = {
	.api = STORE_API_V3,
	.open = ctl_store_open,
	.put = ctl_put_rev,
	.del = ctl_del,
	.has = ctl_has,
	.lacks = ctl_lacks,
	.mod = ctl_mod,
	.revision = ctl_revision,
	.member_id = ctl_member_id,
	.exhausted_calls_min = 3,
	.exhausted_calls_max = 4,
	.ev_versions = true,
};
