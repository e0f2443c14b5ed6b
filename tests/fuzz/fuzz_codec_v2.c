/*
 * fuzz_codec_v2.c - libFuzzer target for the reply parsers of
 * helper/etcd2_codec.c
 *
 * Every input is a reply body.  It goes to the node reply parser, once as
 * a 2xx answer and once as an error with a status the input picks; to the
 * listing parser over a few ranges; to the members parser; and a parsed
 * node reply goes on to the watch event mapping, for the node's own key
 * and for ranges around it.  The input is also taken as a key and a value
 * for the request encoders and the key checks.  Beyond "no crash, no
 * leak, no sanitizer report" it checks what the codec promises: a result
 * is all or nothing, every key and value is NUL-terminated past its
 * length, indexes are positive, a listing is sorted and inside its range,
 * an event for a key is about that key, every error has a known code and
 * a one-line message, and encoded paths and forms decode back to the
 * bytes they came from.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined with
 * helper/etcd2_codec.c and jansson (tests/fuzz/meson.build does it).
 * What it cannot do: reach the backend's I/O paths (helper/etcd2.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd2_codec.h"
#include "fuzz.h"
#include "store_i.h"

#define S(s) s, sizeof(s) - 1

/* Error statuses a v2 server or what stands in front of it answers. */
static const long statuses[] = {
	400, 401, 403, 404, 405, 408, 412, 413, 429, 500, 502, 503, 504, 302,
	100, 0, -1, 600,
};

static bool in_range(const char *k, size_t klen, const char *lo,
		     size_t lo_len, const char *hi, size_t hi_len)
{
	if (hi_len == 0)
		return fuzz_cmp_bytes(k, klen, lo, lo_len) == 0;
	if (fuzz_cmp_bytes(k, klen, lo, lo_len) < 0)
		return false;
	if (hi_len == 1 && hi[0] == '\0')
		return true;
	return fuzz_cmp_bytes(k, klen, hi, hi_len) < 0;
}

static void check_kv(const struct store_kv *kv)
{
	check(kv->key && kv->key[kv->key_len] == '\0');
	check(kv->value && kv->value[kv->value_len] == '\0');
	check(kv->mod_revision >= 0 && kv->create_revision >= 0);
	check(kv->version == 0 && kv->lease == 0);
}

static void check_node(const struct etcd2_node *n)
{
	check_kv(&n->kv);
	if (n->dir)
		check(n->kv.value_len == 0);
	/* only the root, a directory, may lack its indexes */
	if (!(n->dir && n->kv.key_len == 1 && n->kv.key[0] == '/'))
		check(n->kv.mod_revision > 0 && n->kv.create_revision > 0);
}

static void check_event(const struct etcd2_reply *r,
			const struct store_event *ev, const char *key,
			size_t key_len, const char *end, size_t end_len)
{
	check(ev->revision == r->node.kv.mod_revision && ev->revision > 0);
	switch (ev->type) {
	case STORE_EV_PUT:
		check(!r->node.dir);
		/* fall through */
	case STORE_EV_DELETE:
		check(ev->kv.key);
		check(ev->kv.mod_revision == ev->revision);
		check(in_range(ev->kv.key, ev->kv.key_len, key, key_len, end,
			       end ? end_len : 0));
		if (ev->type == STORE_EV_PUT)
			check(ev->kv.value &&
			      ev->kv.value[ev->kv.value_len] == '\0');
		if (ev->prev_kv.key)
			check(ev->prev_kv.key[ev->prev_kv.key_len] == '\0');
		break;
	case STORE_EV_PROGRESS:
		check(!ev->kv.key);
		break;
	case STORE_EV_ERROR:
		check(r->node.dir && end);
		check(ev->err == STORE_ECOMPACTED);
		check(ev->compact_revision == ev->revision);
		break;
	default:
		check(0);
	}
}

static void fuzz_event(const struct etcd2_reply *r, const char *key,
		       size_t key_len, const char *end, size_t end_len)
{
	struct store_event ev;
	struct store_error ce = { 0 };
	int rc;

	ce.msg[0] = '\0';
	rc = etcd2_codec_event(r, key, key_len, end, end_len, &ev, &ce);
	if (rc) {
		check(rc == STORE_EBADREPLY);
		fuzz_check_msg(ce.msg, sizeof(ce.msg));
		return;
	}
	check_event(r, &ev, key, key_len, end, end_len);
}

static void fuzz_events(const struct etcd2_reply *r)
{
	const struct store_kv *n = &r->node.kv;
	struct store_event ev;
	size_t end_len;
	char *end;
	struct store_error ce = { 0 };
	bool change = r->action != ETCD2_GET && r->action != ETCD2_NONE;

	/* the node's own key: a change of it, whatever its bytes */
	if (etcd2_codec_event(r, n->key, n->key_len, NULL, 0, &ev, &ce) == 0) {
		check(change);
		check_event(r, &ev, n->key, n->key_len, NULL, 0);
		if (!r->node.dir)
			check(ev.type == (r->action == ETCD2_DELETE ||
					  r->action == ETCD2_CAD ||
					  r->action == ETCD2_EXPIRE ?
					  STORE_EV_DELETE : STORE_EV_PUT));
		else if (ev.type != STORE_EV_PROGRESS)
			check(ev.type == STORE_EV_DELETE);
	} else {
		check(!change || n->mod_revision <= 0);
	}
	/* everything */
	fuzz_event(r, S("/"), "", 1);
	fuzz_event(r, S(""), "", 1);
	/* the keys under the node, as a watch of a directory asks */
	end = store_range_end(n->key, n->key_len, &end_len);
	check(end);
	fuzz_event(r, n->key, n->key_len, end, end_len);
	free(end);
	/* a key below the node, and a fixed range */
	fuzz_event(r, S("/a/b"), NULL, 0);
	fuzz_event(r, S("/a/"), S("/a0"));
}

static void fuzz_reply(const char *s, size_t len, long status)
{
	struct etcd2_reply r;
	struct store_error ce = { 0 };
	int rc;

	memset(ce.msg, 'x', sizeof(ce.msg));
	rc = etcd2_codec_reply(status, s, len, &r, &ce);
	if (rc) {
		check(rc < 0 && rc > -STORE_ERR_COUNT);
		fuzz_check_msg(ce.msg, sizeof(ce.msg));
		if (status >= 200 && status < 300) {
			/* nothing half-read */
			check(!r.node.present && !r.node.kv.key);
			check(!r.prev.present && !r.prev.kv.key);
		}
		check(r.error_code >= 0 && r.index >= 0);
		check(memchr(r.message, '\0', sizeof(r.message)));
		check(memchr(r.cause, '\0', sizeof(r.cause)));
		if (r.error_code)
			check(rc == etcd2_codec_errcode(r.error_code, status,
							r.cause));
		check(etcd2_codec_history_start(r.cause, 7) > 0);
		etcd2_reply_release(&r);
		return;
	}
	check(status >= 200 && status < 300);
	check(r.action != ETCD2_NONE && r.error_code == 0);
	check(r.node.present);
	check_node(&r.node);
	if (r.prev.present)
		check_node(&r.prev);
	fuzz_events(&r);
	etcd2_reply_release(&r);
}

static void fuzz_list(const char *s, size_t len, const char *lo,
		      size_t lo_len, const char *hi, size_t hi_len,
		      bool keys_only)
{
	struct store_list l = { 0 };
	struct store_kv first = { 0 };
	int64_t max_index = -1;
	struct store_error ce = { 0 };
	size_t i;
	int rc;

	/* one kv already there: the parser appends after it */
	first.key = strdup("\xff");
	first.key_len = 1;
	first.value = strdup("");
	check(first.key && first.value);
	check(store_list_push_own(&l, &first) == 0);

	rc = etcd2_codec_list(s, len, lo, lo_len, hi, hi_len, keys_only, &l,
			      &max_index, &ce);
	check(l.n >= 1 && l.kvs[0].key_len == 1 &&
	      (unsigned char)l.kvs[0].key[0] == 0xff);
	if (rc) {
		check(rc == STORE_EBADREPLY || rc == STORE_EINTERNAL);
		fuzz_check_msg(ce.msg, sizeof(ce.msg));
		/* all or nothing */
		check(l.n == 1);
	} else {
		check(max_index >= 0);
		for (i = 1; i < l.n; i++) {
			check_kv(&l.kvs[i]);
			check(l.kvs[i].mod_revision > 0 &&
			      l.kvs[i].mod_revision <= max_index);
			check(in_range(l.kvs[i].key, l.kvs[i].key_len, lo,
				       lo_len, hi, hi_len));
			if (keys_only)
				check(l.kvs[i].value_len == 0);
			if (i > 1)
				check(fuzz_cmp_bytes(l.kvs[i - 1].key,
						     l.kvs[i - 1].key_len,
						     l.kvs[i].key,
						     l.kvs[i].key_len) <= 0);
		}
	}
	store_list_release(&l);
}

static void fuzz_members(const char *s, size_t len)
{
	struct store_member *m;
	struct store_error ce = { 0 };
	size_t n, i, k;
	int rc;

	rc = etcd2_codec_members(s, len, &m, &n, &ce);
	if (rc) {
		check(rc == STORE_EBADREPLY || rc == STORE_EINTERNAL);
		fuzz_check_msg(ce.msg, sizeof(ce.msg));
		check(!m && !n);
		return;
	}
	check(m && n > 0);
	for (i = 0; i < n; i++) {
		check(m[i].name);
		check(m[i].n_client_urls == 0 || m[i].client_urls);
		for (k = 0; k < m[i].n_client_urls; k++)
			check(m[i].client_urls[k]);
	}
	store_members_free(m, n);
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes @p and checks that it gives back the @len bytes @want. */
static void check_decodes(const char *p, size_t plen, const char *want,
			  size_t len, bool slash)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < plen; o++) {
		check(o < len);
		if (p[i] == '%') {
			check(i + 2 < plen);
			hi = unhex(p[i + 1]);
			lo = unhex(p[i + 2]);
			check(hi >= 0 && lo >= 0);
			check((unsigned char)want[o] == (hi << 4 | lo));
			i += 3;
		} else {
			check(p[i] != '?' && p[i] != '&' && p[i] != '=' &&
			      p[i] != '+' && p[i] != '#' && p[i] != ' ');
			if (!slash)
				check(p[i] != '/');
			check(p[i] == want[o]);
			i++;
		}
	}
	check(o == len);
}

static void fuzz_requests(const char *s, size_t len)
{
	const char *why = NULL;
	size_t n, d, hi_len;
	char *p, *hi;

	p = etcd2_codec_path(s, len, NULL);
	check(p);
	check(strncmp(p, "/v2/keys", 8) == 0);
	if (len == 0)
		check(strcmp(p, "/v2/keys/") == 0);
	else
		check_decodes(p + 8, strlen(p + 8), s, len, true);
	free(p);
	p = etcd2_codec_path(s, len, "recursive=true");
	check(p && strlen(p) > 15 &&
	      strcmp(p + strlen(p) - 15, "?recursive=true") == 0);
	free(p);

	p = etcd2_codec_form_value(s, len, &n);
	check(p && n == strlen(p) && strncmp(p, "value=", 6) == 0);
	check_decodes(p + 6, n - 6, s, len, false);
	free(p);

	/* a clean key is a UTF-8 path */
	if (etcd2_codec_key_ok(s, len, &why)) {
		check(len > 1 && s[0] == '/' && s[len - 1] != '/');
		check(etcd2_codec_utf8_ok(s, len));
		check(!memmem(s, len, "//", 2));
	} else {
		check(why && why[0]);
	}

	/* the directory to list for a range is a clean prefix of it */
	d = etcd2_codec_range_dir(s, len, NULL, 0);
	check(d <= len);
	if (d)
		check(etcd2_codec_key_ok(s, d, NULL) &&
		      (d == len || s[d] == '/'));
	hi = store_range_end(s, len, &hi_len);
	check(hi);
	d = etcd2_codec_range_dir(s, len, hi, hi_len);
	check(d <= len);
	if (d)
		check(etcd2_codec_key_ok(s, d, NULL) && d < len &&
		      s[d] == '/');
	free(hi);
	check(etcd2_codec_range_dir(s, len, "", 1) == 0);
}

/* The cause of a 401, as etcd words it, is parsed for its first index. */
static void fuzz_history(const char *s, size_t len)
{
	char *c = malloc(len + 1);
	int64_t v;

	check(c);
	memcpy(c, s, len);
	c[len] = '\0';
	v = etcd2_codec_history_start(c, -5);
	check(v == -5 || v > 0);
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	unsigned pick = size ? data[size - 1] : 0;

	fuzz_reply(s, size, 200);
	fuzz_reply(s, size, 201);
	fuzz_reply(s, size,
		   statuses[pick % (sizeof(statuses) / sizeof(*statuses))]);

	fuzz_list(s, size, S("/"), "", 1, pick & 1);
	fuzz_list(s, size, "", 0, "", 1, false);
	fuzz_list(s, size, S("/a/"), S("/a0"), pick & 2);
	fuzz_list(s, size, S("/a/b"), NULL, 0, false);

	fuzz_members(s, size);
	fuzz_requests(s, size);
	fuzz_history(s, size);
	return 0;
}
