/*
 * fuzz_codec.c - libFuzzer target for the reply parsers of
 * helper/etcd3_codec.c
 *
 * Every input goes to every reply parser (range, put, txn, lease grant,
 * members, error body, watch line), to the base64 decoder, and to the watch
 * framer in chunks whose sizes the input's first byte picks.  Beyond "no
 * crash, no leak, no sanitizer report" it checks what the parsers promise:
 * base64 that decodes re-encodes to the same text, every key and value
 * parsed is NUL-terminated past its length, every error has its code and a
 * message, and framing does not depend on where chunks end.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined with
 * helper/etcd3_codec.c and jansson (tests/fuzz/meson.build does it).
 * What it cannot do: reach the backend's I/O paths.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd3_codec.h"
#include "fuzz.h"

static void check_kv(const struct store_kv *kv, bool key_required)
{
	if (key_required)
		check(kv->key && kv->key_len > 0);
	if (kv->key)
		check(kv->key[kv->key_len] == '\0');
	if (kv->key)
		check(kv->value && kv->value[kv->value_len] == '\0');
	check(kv->create_revision >= 0 && kv->mod_revision >= 0 &&
	      kv->version >= 0 && kv->lease >= 0);
}

/* An error from a parser: the code it returned, and a message. */
static void check_err(int rc, const struct store_error *e)
{
	check(rc < 0 && rc > -STORE_ERR_COUNT);
	check(e->code == rc);
	check(e->msg[0] != '\0');
	check(memchr(e->msg, '\0', sizeof(e->msg)) != NULL);
}

static void check_result(const struct etcd3_result *r)
{
	size_t i;

	check(r->n == 0 || r->kvs);
	for (i = 0; i < r->n; i++)
		check_kv(&r->kvs[i], true);
}

static void fuzz_b64(const char *s, size_t len)
{
	char *out, *again;
	size_t n, m;

	if (etcd3_b64_decode(s, len, &out, &n) == 0) {
		/* strict: one text per byte string */
		check(out[n] == '\0');
		again = etcd3_b64_encode(out, n, &m);
		check(again && m == len && !memcmp(again, s, len));
		free(again);
		free(out);
	}
	/* and every byte string comes back */
	again = etcd3_b64_encode(s, len, &m);
	check(again);
	check(etcd3_b64_decode(again, m, &out, &n) == 0);
	check(n == len && !memcmp(out, s, len));
	free(out);
	free(again);
}

static void fuzz_replies(const char *s, size_t len)
{
	struct store_error e;
	struct etcd3_result r;
	struct etcd3_txn t;
	struct store_member *m;
	int64_t id, ttl;
	size_t n, i, k;
	int rc;

	rc = etcd3_parse_range(s, len, &r, &e);
	if (rc) {
		check_err(rc, &e);
	} else {
		check(r.revision > 0 && r.count >= (int64_t)r.n);
		check_result(&r);
		etcd3_result_release(&r);
	}

	rc = etcd3_parse_put(s, len, &r, &e);
	if (rc) {
		check_err(rc, &e);
	} else {
		check(r.n <= 1);
		check_result(&r);
		etcd3_result_release(&r);
	}

	rc = etcd3_parse_txn(s, len, &t, &e);
	if (rc) {
		check_err(rc, &e);
	} else {
		check(t.revision > 0);
		for (i = 0; i < t.n; i++)
			check_result(&t.res[i]);
		etcd3_txn_release(&t);
	}

	rc = etcd3_parse_lease_grant(s, len, &id, &ttl, &e);
	if (rc)
		check_err(rc, &e);
	else
		check(id > 0 && ttl >= 0);

	rc = etcd3_parse_members(s, len, &m, &n, &e);
	if (rc) {
		check_err(rc, &e);
		check(!m && !n);
	} else {
		check(n > 0);
		for (i = 0; i < n; i++) {
			check(m[i].name);
			for (k = 0; k < m[i].n_client_urls; k++)
				check(m[i].client_urls[k][0] != '\0');
		}
		store_members_free(m, n);
	}

	rc = etcd3_parse_error(len ? (long)(unsigned char)s[0] + 300 : 500,
			       s, len, &e);
	check_err(rc, &e);
}

static void check_watch_msg(const struct etcd3_watch_msg *m)
{
	size_t i;

	check(m->n == 0 || m->kind == ETCD3_WATCH_EVENTS);
	if (m->kind == ETCD3_WATCH_EVENTS)
		check(m->n > 0);
	if (m->kind == ETCD3_WATCH_PROGRESS)
		check(m->revision > 0);
	if (m->kind == ETCD3_WATCH_CANCELED || m->kind == ETCD3_WATCH_ERROR)
		check(m->err < 0 && m->err > -STORE_ERR_COUNT);
	for (i = 0; i < m->n; i++) {
		check(m->events[i].type == STORE_EV_PUT ||
		      m->events[i].type == STORE_EV_DELETE);
		check(m->events[i].revision > 0);
		check_kv(&m->events[i].kv, true);
		check_kv(&m->events[i].prev_kv, false);
	}
}

/* What the framed lines were, as a checksum of (length, bytes) per line. */
struct digest {
	uint64_t h;
	size_t lines;
};

static int on_line(void *arg, const char *line, size_t len)
{
	struct digest *d = arg;
	struct etcd3_watch_msg m;
	struct store_error e;
	size_t i;
	int rc;

	check(len > 0 && line[len - 1] != '\n');
	d->lines++;
	d->h = d->h * 1099511628211u + len;
	for (i = 0; i < len; i++)
		d->h = (d->h ^ (unsigned char)line[i]) * 1099511628211u;
	rc = etcd3_parse_watch(line, len, &m, &e);
	if (rc) {
		check_err(rc, &e);
		return 0;
	}
	check_watch_msg(&m);
	etcd3_watch_msg_release(&m);
	return 0;
}

static void frame(const char *s, size_t len, size_t chunk, size_t max,
		  struct digest *d, int *rc, size_t *rest_len)
{
	struct etcd3_framer f;
	size_t off;

	memset(d, 0, sizeof(*d));
	*rc = 0;
	etcd3_framer_init(&f, max);
	for (off = 0; off < len && !*rc; off += chunk)
		*rc = etcd3_framer_feed(&f, s + off,
					len - off < chunk ? len - off : chunk,
					on_line, d);
	etcd3_framer_rest(&f, rest_len);
	check(*rest_len <= max);
	etcd3_framer_release(&f);
}

static void fuzz_watch(const char *s, size_t len, unsigned seed)
{
	struct digest whole, parts;
	size_t rest_whole, rest_parts;
	size_t chunk = 1 + seed % 17, max = 64 + (size_t)seed * 8;
	int rc_whole, rc_parts;

	frame(s, len, len ? len : 1, max, &whole, &rc_whole, &rest_whole);
	frame(s, len, chunk, max, &parts, &rc_parts, &rest_parts);
	/* the cap and the lines do not depend on where chunks end */
	check(rc_whole == rc_parts);
	if (!rc_whole) {
		check(whole.lines == parts.lines && whole.h == parts.h);
		check(rest_whole == rest_parts);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	unsigned seed = size ? data[0] : 0;

	fuzz_b64(s, size);
	fuzz_replies(s, size);
	fuzz_watch(s, size, seed);
	return 0;
}
