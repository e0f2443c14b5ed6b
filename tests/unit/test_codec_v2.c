/*
 * test_codec_v2.c - unit tests of helper/etcd2_codec.c
 *
 * Every parser run on fixtures: tests/data/v2/<case>/input is a reply body
 * (captured from etcd 3.4 with --enable-v2=true by tests/data/v2/capture.sh,
 * or, for the *-bad-* cases, written by hand from a real one to be
 * malformed), status its HTTP status, args what the test asks of it (the
 * range of a listing, the key or range of a watch), and expected what the
 * parser must make of it, written out as text by the dump functions below.
 * The case's name says which parser reads it: get-, write- and error- the
 * reply parser, list- the listing, event- the reply parser then the watch
 * event mapping, members- the members parser.  Every 2xx fixture is also
 * cut at every byte and must then be refused, never half-read.  Then the
 * pure helpers: keys v2 can hold, UTF-8, the directory of a range, request
 * encoding, the error table, and the event mapping in the cases the
 * fixtures do not reach.
 *
 * What it cannot do: talk to etcd; the backend over a real server is
 * tested by tests/integration/test_store_v2*.c.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etcd2_codec.h"
#include "tap.h"

#ifndef TEST_DATA
#error "TEST_DATA must name the fixture directory"
#endif

#define FIXTURES TEST_DATA "/v2"

#define S(lit) lit, sizeof(lit) - 1

/* ---- a growable text buffer ---- */

struct text {
	char *p;
	size_t len;
	size_t cap;
};

__attribute__((format(printf, 2, 3)))
static void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		if (!t->p)
			abort();
	}
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* Adds @len bytes of @s, quoted, with other than printable ASCII as \xNN. */
static void text_quote(struct text *t, const char *s, size_t len)
{
	size_t i;

	text_add(t, "\"");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			text_add(t, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			text_add(t, "%c", c);
		else
			text_add(t, "\\x%02x", c);
	}
	text_add(t, "\"");
}

static void text_free(struct text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

/* ---- fixtures ---- */

/* Reads FIXTURES/@dir/@file; NULL if it cannot be read. */
static char *read_fixture(const char *dir, const char *file, size_t *len)
{
	char path[512];
	char *buf = NULL;
	size_t cap = 0, n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", FIXTURES, dir, file);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (n + 4096 + 1 > cap) {
			cap = (n + 4096 + 1) * 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/*
 * One argument of a case's args file: the line "@name=VALUE", VALUE with
 * \xNN and \\ escapes decoded into @buf.  False if there is no such line.
 */
static bool fixture_arg(const char *args, const char *name, char *buf,
			size_t size, size_t *len)
{
	size_t nlen = strlen(name), o = 0;
	const char *p = args;

	while (p && *p) {
		if (!strncmp(p, name, nlen) && p[nlen] == '=') {
			p += nlen + 1;
			while (*p && *p != '\n' && o < size) {
				unsigned int c;

				if (p[0] == '\\' && p[1] == 'x' &&
				    sscanf(p + 2, "%2x", &c) == 1) {
					buf[o++] = (char)c;
					p += 4;
				} else if (p[0] == '\\' && p[1] == '\\') {
					buf[o++] = '\\';
					p += 2;
				} else {
					buf[o++] = *p++;
				}
			}
			*len = o;
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static const char *err_name(int code)
{
	static const char *const names[] = {
		"OK", "ENOTFOUND", "EEXISTS", "ECONFLICT", "EPRECONDITION",
		"ECOMPACTED", "EUNREACHABLE", "ETIMEOUT", "EUNAUTHENTICATED",
		"EPERMISSION", "ETOOLARGE", "EBADREPLY", "EINTERNAL", "EINVAL",
		"ENOTSUP", "EUNKNOWN",
	};

	if (code > 0 || -code >= (int)(sizeof(names) / sizeof(names[0])))
		return "?";
	return names[-code];
}

static const char *action_name(enum etcd2_action a)
{
	switch (a) {
	case ETCD2_NONE:
		return "none";
	case ETCD2_GET:
		return "get";
	case ETCD2_SET:
		return "set";
	case ETCD2_CREATE:
		return "create";
	case ETCD2_UPDATE:
		return "update";
	case ETCD2_CAS:
		return "compareAndSwap";
	case ETCD2_DELETE:
		return "delete";
	case ETCD2_CAD:
		return "compareAndDelete";
	case ETCD2_EXPIRE:
		return "expire";
	}
	return "?";
}

/* ---- dumps: what a parser made of a reply, as text ---- */

static void dump_kv(struct text *t, const char *tag, const struct store_kv *kv)
{
	text_add(t, "%s key=", tag);
	text_quote(t, kv->key, kv->key_len);
	text_add(t, " value=");
	text_quote(t, kv->value ? kv->value : "", kv->value_len);
	text_add(t, " create=%lld mod=%lld version=%lld lease=%lld\n",
		 (long long)kv->create_revision, (long long)kv->mod_revision,
		 (long long)kv->version, (long long)kv->lease);
}

/* As dump_kv, and the promise of a kv the codec owns: both terminated. */
static void dump_owned_kv(struct text *t, const char *tag,
			  const struct store_kv *kv)
{
	dump_kv(t, tag, kv);
	if (!kv->key || kv->key[kv->key_len] != '\0' || !kv->value ||
	    kv->value[kv->value_len] != '\0')
		text_add(t, "BUG: key or value not allocated and terminated\n");
}

static void dump_node(struct text *t, const char *tag,
		      const struct etcd2_node *n)
{
	if (!n->present)
		return;
	dump_owned_kv(t, n->dir ? (strcmp(tag, "node") ? "prev dir" :
					"node dir") : tag, &n->kv);
}

static void dump_reply_of(struct text *t, int rc, const char *msg,
			  const struct etcd2_reply *r)
{
	text_add(t, "result %s\n", err_name(rc));
	if (rc)
		text_add(t, "message %s\n", msg);
	if (r->error_code) {
		text_add(t, "etcd error=%d index=%lld message=", r->error_code,
			 (long long)r->index);
		text_quote(t, r->message, strlen(r->message));
		text_add(t, " cause=");
		text_quote(t, r->cause, strlen(r->cause));
		text_add(t, "\n");
		if (r->error_code == ETCD2_EINDEX_CLEARED)
			text_add(t, "history start=%lld\n", (long long)
				 etcd2_codec_history_start(r->cause, r->index));
	}
	if (r->action != ETCD2_NONE)
		text_add(t, "action %s\n", action_name(r->action));
	dump_node(t, "node", &r->node);
	dump_node(t, "prev", &r->prev);
	if (rc && (r->action != ETCD2_NONE || r->node.present))
		text_add(t, "BUG: an error with a node\n");
}

static void dump_reply(struct text *t, long status, const char *body,
		       size_t len)
{
	struct etcd2_reply r;
	struct store_error ce = { 0 };
	int rc;

	rc = etcd2_codec_reply(status, body, len, &r, &ce);
	dump_reply_of(t, rc, ce.msg, &r);
	etcd2_reply_release(&r);
}

static void dump_list(struct text *t, const char *body, size_t len,
		      const char *args)
{
	struct store_list l = { 0 };
	char lo[256], hi[256], ko[8];
	struct store_error ce = { 0 };
	size_t lo_len = 0, hi_len = 0, ko_len = 0, i;
	int64_t max = -1;
	int rc;

	if (!args || !fixture_arg(args, "lo", lo, sizeof(lo), &lo_len) ||
	    !fixture_arg(args, "hi", hi, sizeof(hi), &hi_len)) {
		text_add(t, "BAD FIXTURE: args need lo= and hi=\n");
		return;
	}
	if (!fixture_arg(args, "keys_only", ko, sizeof(ko), &ko_len))
		ko_len = 0;
	rc = etcd2_codec_list(body, len, lo, lo_len, hi, hi_len,
			      ko_len == 1 && ko[0] == '1', &l, &max, &ce);
	text_add(t, "result %s max_index=%lld n=%zu dir=", err_name(rc),
		 (long long)max, l.n);
	i = etcd2_codec_range_dir(lo, lo_len, hi, hi_len);
	text_quote(t, lo, i);
	text_add(t, "\n");
	if (rc)
		text_add(t, "message %s\n", ce.msg);
	for (i = 0; i < l.n; i++)
		dump_owned_kv(t, "kv", &l.kvs[i]);
	store_list_release(&l);
}

static const char *ev_name(enum store_event_type type)
{
	switch (type) {
	case STORE_EV_PUT:
		return "put";
	case STORE_EV_DELETE:
		return "delete";
	case STORE_EV_PROGRESS:
		return "progress";
	case STORE_EV_ERROR:
		return "error";
	}
	return "?";
}

static void dump_event_of(struct text *t, const struct etcd2_reply *r,
			  const char *key, size_t key_len,
			  const char *range_end, size_t range_end_len)
{
	struct store_event ev;
	struct store_error ce = { 0 };
	int rc;

	rc = etcd2_codec_event(r, key, key_len, range_end, range_end_len, &ev,
			       &ce);
	if (rc) {
		text_add(t, "event %s\nmessage %s\n", err_name(rc), ce.msg);
		return;
	}
	text_add(t, "event %s revision=%lld", ev_name(ev.type),
		 (long long)ev.revision);
	if (ev.type == STORE_EV_ERROR)
		text_add(t, " err=%s compact=%lld", err_name(ev.err),
			 (long long)ev.compact_revision);
	text_add(t, "\n");
	if (ev.kv.key)
		dump_kv(t, "  kv", &ev.kv);
	if (ev.prev_kv.key)
		dump_kv(t, "  prev_kv", &ev.prev_kv);
}

static void dump_event(struct text *t, long status, const char *body,
		       size_t len, const char *args)
{
	struct etcd2_reply r;
	char key[256], end[256];
	struct store_error ce = { 0 };
	size_t key_len = 0, end_len = 0;
	bool range;
	int rc;

	if (!args || !fixture_arg(args, "key", key, sizeof(key), &key_len)) {
		text_add(t, "BAD FIXTURE: args need key=\n");
		return;
	}
	range = fixture_arg(args, "range_end", end, sizeof(end), &end_len);
	rc = etcd2_codec_reply(status, body, len, &r, &ce);
	dump_reply_of(t, rc, ce.msg, &r);
	if (rc == 0)
		dump_event_of(t, &r, key, key_len, range ? end : NULL,
			      end_len);
	etcd2_reply_release(&r);
}

static void dump_members(struct text *t, long status, const char *body,
			 size_t len)
{
	struct store_member *m = NULL;
	size_t n = 0, i, j;
	struct store_error ce = { 0 };
	int rc;

	rc = etcd2_codec_members(body, len, &m, &n, &ce);
	text_add(t, "result %s n=%zu\n", err_name(rc), n);
	if (rc)
		text_add(t, "message %s\n", ce.msg);
	for (i = 0; i < n; i++) {
		text_add(t, "member id=%016llx name=",
			 (unsigned long long)m[i].id);
		text_quote(t, m[i].name, strlen(m[i].name));
		for (j = 0; j < m[i].n_client_urls; j++)
			text_add(t, " url=%s", m[i].client_urls[j]);
		text_add(t, "\n");
	}
	store_members_free(m, n);
	if (rc && (m || n))
		text_add(t, "BUG: members on error\n");
}

/* Says where @got and @want first differ, as TAP comments. */
static void show_diff(const char *name, const char *got, size_t got_len,
		      const char *want, size_t want_len)
{
	const char *p;

	tap_diag("%s: the parser's output differs from 'expected'", name);
	for (p = got; p < got + got_len;) {
		const char *nl = memchr(p, '\n', (size_t)(got + got_len - p));
		int n = nl ? (int)(nl - p) : (int)(got + got_len - p);

		tap_diag("got:  %.*s", n, p);
		p += n + 1;
	}
	for (p = want; p < want + want_len;) {
		const char *nl = memchr(p, '\n', (size_t)(want + want_len - p));
		int n = nl ? (int)(nl - p) : (int)(want + want_len - p);

		tap_diag("want: %.*s", n, p);
		p += n + 1;
	}
}

/*
 * Cuts the 2xx reply @body short at every byte before its last '}': each
 * cut must be refused (EBADREPLY), by the parser of @name's kind.
 */
static bool every_cut_refused(const char *name, const char *body, size_t len,
			      const char *args)
{
	const char *close = NULL;
	struct etcd2_reply r;
	char lo[256], hi[256];
	struct store_error ce = { 0 };
	size_t cut, i, lo_len = 0, hi_len = 0;
	int rc;

	for (i = len; i > 0; i--) {
		if (body[i - 1] == '}') {
			close = body + i - 1;
			break;
		}
	}
	if (!close) {
		tap_diag("%s: a 2xx reply that is no object", name);
		return false;
	}
	if (!strncmp(name, "list-", 5) &&
	    (!args || !fixture_arg(args, "lo", lo, sizeof(lo), &lo_len) ||
	     !fixture_arg(args, "hi", hi, sizeof(hi), &hi_len)))
		return false;
	for (cut = 0; cut <= (size_t)(close - body); cut++) {
		/* a copy, so that reading past the cut is caught by ASan */
		char *part = malloc(cut ? cut : 1);

		if (!part)
			abort();
		memcpy(part, body, cut);
		if (!strncmp(name, "list-", 5)) {
			struct store_list l = { 0 };
			int64_t max;

			rc = etcd2_codec_list(part, cut, lo, lo_len, hi, hi_len,
					      false, &l, &max, &ce);
			if (l.n)
				rc = 1;
			store_list_release(&l);
		} else if (!strncmp(name, "members-", 8)) {
			struct store_member *m;
			size_t n;

			rc = etcd2_codec_members(part, cut, &m, &n, &ce);
			store_members_free(m, n);
		} else {
			rc = etcd2_codec_reply(200, part, cut, &r, &ce);
			etcd2_reply_release(&r);
		}
		free(part);
		if (rc != STORE_EBADREPLY || !ce.msg[0]) {
			tap_diag("%s: cut at %zu of %zu: %s", name, cut, len,
				 err_name(rc));
			return false;
		}
	}
	return true;
}

static bool run_fixture(const char *name)
{
	struct text got = { 0 };
	char *input, *expected, *status_s, *args;
	size_t len, exp_len, st_len, args_len;
	long status = 0;
	bool ok = false;

	input = read_fixture(name, "input", &len);
	expected = read_fixture(name, "expected", &exp_len);
	status_s = read_fixture(name, "status", &st_len);
	args = read_fixture(name, "args", &args_len);
	if (!input || !expected || !status_s) {
		tap_diag("%s: no input, expected or status", name);
		goto out;
	}
	{
		char *end;

		status = strtol(status_s, &end, 10);
		if (end == status_s || (*end && *end != '\n')) {
			tap_diag("%s: bad status file", name);
			goto out;
		}
	}

	if (!strncmp(name, "get-", 4) || !strncmp(name, "write-", 6) ||
	    !strncmp(name, "error-", 6)) {
		dump_reply(&got, status, input, len);
	} else if (!strncmp(name, "list-", 5)) {
		dump_list(&got, input, len, args);
	} else if (!strncmp(name, "event-", 6)) {
		dump_event(&got, status, input, len, args);
	} else if (!strncmp(name, "members-", 8)) {
		dump_members(&got, status, input, len);
	} else {
		tap_diag("%s: no parser for this name", name);
		goto out;
	}
	if (!got.p)
		text_add(&got, "%s", "");
	if (got.len != exp_len || memcmp(got.p, expected, exp_len)) {
		show_diff(name, got.p, got.len, expected, exp_len);
		goto out;
	}
	if (status >= 200 && status < 300 && !strstr(name, "-bad-") &&
	    !every_cut_refused(name, input, len, args))
		goto out;
	ok = true;
out:
	text_free(&got);
	free(input);
	free(expected);
	free(status_s);
	free(args);
	return ok;
}

static const char *const fixtures[] = {
	/* replies of etcd 3.4.23 with --enable-v2=true, captured with curl */
	"write-set-new", "write-set-replace", "write-create", "write-cas",
	"write-update", "write-mkdir", "write-cad", "write-delete",
	"write-rmdir",
	"get-file", "get-file-quorum", "get-dir", "get-nul-key",
	"get-unicode", "get-ttl",
	"list-root", "list-dir", "list-dir-part", "list-file",
	"list-empty-dir",
	"error-100-not-found", "error-100-cas-absent", "error-101-compare",
	"error-101-delete", "error-102-not-file", "error-104-not-dir",
	"error-105-exists", "error-107-root", "error-108-not-empty",
	"error-110-unauthorized", "error-203-index-nan",
	"error-401-cleared", "error-v2-off",
	"event-set", "event-set-replace", "event-create", "event-cas",
	"event-update", "event-mkdir", "event-cad", "event-delete",
	"event-expire", "event-rmdir-recursive", "event-rmdir-for-child",
	"members-one",
	/* answers of no etcd but of what may stand in front of one */
	"error-500-html", "error-502-empty", "error-413-text",
	"error-403-message", "error-code-string",
	/* malformed: real replies broken on purpose */
	"get-bad-not-json", "get-bad-empty", "get-bad-array",
	"get-bad-no-action", "get-bad-action-number",
	"get-bad-action-unknown", "get-bad-action-nul", "get-bad-no-node",
	"get-bad-node-string", "get-bad-key-number", "get-bad-value-number",
	"get-bad-index-string", "get-bad-index-negative",
	"get-bad-index-zero", "get-bad-index-float", "get-bad-index-huge",
	"get-bad-no-index", "get-bad-no-key", "get-bad-dir-string",
	"get-bad-nodes-object", "get-bad-duplicate", "get-bad-prev-string",
	"get-bad-trailing",
	"list-bad-child-no-key", "list-bad-child-value-number",
	"list-bad-file-with-nodes", "list-bad-action", "list-bad-truncated",
	"list-bad-deep",
	"event-bad-get",
	"members-bad-none", "members-bad-id-junk", "members-bad-id-long",
	"members-bad-id-number", "members-bad-name-nul",
	"members-bad-urls-object", "members-bad-url-number",
};

#define N_FIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

/* Every directory under FIXTURES is a fixture listed above: none rots. */
static bool every_fixture_listed(void)
{
	DIR *d = opendir(FIXTURES);
	struct dirent *de;
	struct stat st;
	char path[512];
	size_t i, seen = 0;
	bool ok = true;

	CHECK(d);
	while ((de = readdir(d))) {
		bool found = false;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", FIXTURES, de->d_name);
		if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;	/* capture.sh */
		for (i = 0; i < N_FIXTURES; i++)
			if (!strcmp(fixtures[i], de->d_name))
				found = true;
		if (!found) {
			tap_diag("fixture '%s' is not run", de->d_name);
			ok = false;
		}
		seen++;
	}
	closedir(d);
	CHECK(ok);
	CHECK(seen == N_FIXTURES);
	return true;
}

/* ---- keys, UTF-8, ranges ---- */

static bool key_ok_cases(void)
{
	static const struct {
		const char *key;
		size_t len;
		bool ok;
	} cases[] = {
		{ S("/a"), true },
		{ S("/a/b/c"), true },
		{ S("/a b/%25/?#&="), true },
		{ S("/n\0ul"), true },
		{ S("/\xc3\xa9t\xc3\xa9"), true },
		{ S("/..."), true },
		{ S("/.a/a./..b"), true },
		{ S("/_hidden"), true },
		{ S(""), false },
		{ S("/"), false },
		{ S("a"), false },
		{ S("a/b"), false },
		{ S("//a"), false },
		{ S("/a//b"), false },
		{ S("/a/"), false },
		{ S("/a/."), false },
		{ S("/./a"), false },
		{ S("/a/../b"), false },
		{ S("/.."), false },
		{ S("/bin\xff"), false },
		{ S("/\xc3"), false },
		{ S("/\xc0\xaf"), false },		/* overlong '/' */
		{ S("/\xed\xa0\x80"), false },		/* a surrogate */
		{ S("/\xf4\x90\x80\x80"), false },	/* past U+10FFFF */
	};
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		if (etcd2_codec_key_ok(cases[i].key, cases[i].len, &why) !=
		    cases[i].ok) {
			tap_diag("key case %zu: expected %s", i,
				 cases[i].ok ? "ok" : "refused");
			return false;
		}
		CHECK(cases[i].ok || (why && why[0]));
	}
	CHECK(!etcd2_codec_key_ok(S("/a//b"), NULL));
	return true;
}

static bool utf8_cases(void)
{
	CHECK(etcd2_codec_utf8_ok(S("")));
	CHECK(etcd2_codec_utf8_ok(S("plain\n\0text")));
	CHECK(etcd2_codec_utf8_ok(S("\xc2\x80\xdf\xbf")));
	CHECK(etcd2_codec_utf8_ok(S("\xe0\xa0\x80\xef\xbf\xbf")));
	CHECK(etcd2_codec_utf8_ok(S("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf")));
	CHECK(!etcd2_codec_utf8_ok(S("\x80")));
	CHECK(!etcd2_codec_utf8_ok(S("\xc1\xbf")));
	CHECK(!etcd2_codec_utf8_ok(S("\xe0\x9f\xbf")));
	CHECK(!etcd2_codec_utf8_ok(S("\xf0\x8f\xbf\xbf")));
	CHECK(!etcd2_codec_utf8_ok(S("\xf5\x80\x80\x80")));
	CHECK(!etcd2_codec_utf8_ok(S("ok\xe2\x82")));
	CHECK(!etcd2_codec_utf8_ok(S("\xe2\x28\xa1")));
	CHECK(!etcd2_codec_utf8_ok(S("\xff")));
	return true;
}

static bool range_dir_is(const char *lo, size_t lo_len, const char *hi,
			 size_t hi_len, const char *want)
{
	size_t got = etcd2_codec_range_dir(lo, lo_len, hi, hi_len);

	if (got != strlen(want) || memcmp(lo, want, got)) {
		tap_diag("range dir of '%.*s': '%.*s', expected '%s'",
			 (int)lo_len, lo, (int)got, lo, want);
		return false;
	}
	return true;
}

static bool range_dir_cases(void)
{
	/* prefixes as store_range_end makes their ends */
	CHECK(range_dir_is(S("/a/b/"), S("/a/b0"), "/a/b"));
	CHECK(range_dir_is(S("/a/bc"), S("/a/bd"), "/a"));
	CHECK(range_dir_is(S("/a/"), S("/a0"), "/a"));
	CHECK(range_dir_is(S("/"), S("0"), ""));
	CHECK(range_dir_is(S("/a"), S("/b"), ""));
	CHECK(range_dir_is(S("/a/b/\xff"), S("/a/b0"), "/a/b"));
	/* every key, and from a key on */
	CHECK(range_dir_is(S("\0"), S("\0"), ""));
	CHECK(range_dir_is(S("/a/b/"), S("\0"), ""));
	/* a range, not a prefix */
	CHECK(range_dir_is(S("/a/b/c"), S("/a/b/x"), "/a/b"));
	CHECK(range_dir_is(S("/a/b/c"), S("/a/c"), "/a"));
	/* one key: its directory */
	CHECK(range_dir_is(S("/a/b/c"), "", 0, "/a/b"));
	/* what no v2 key can be under: the nearest clean directory */
	CHECK(range_dir_is(S("/a//b/"), S("/a//b0"), "/a"));
	CHECK(range_dir_is(S("/a/./b/"), S("/a/./b0"), "/a"));
	CHECK(range_dir_is(S("a/b/"), S("a/b0"), ""));
	CHECK(range_dir_is(S("/\xff/x/"), S("/\xff/x0"), ""));
	return true;
}

/* ---- requests ---- */

static bool str_is(char *got, const char *want)
{
	bool ok = got && !strcmp(got, want);

	if (!ok)
		tap_diag("got '%s', expected '%s'", got ? got : "(null)", want);
	free(got);
	return ok;
}

static bool request_encoding(void)
{
	size_t len = 0;
	char *form;

	CHECK(str_is(etcd2_codec_path(S("/a/b"), NULL), "/v2/keys/a/b"));
	CHECK(str_is(etcd2_codec_path("", 0, "recursive=true"),
		     "/v2/keys/?recursive=true"));
	CHECK(str_is(etcd2_codec_path(S("/x"), ""), "/v2/keys/x"));
	CHECK(str_is(etcd2_codec_path(S("/sp ace?#%+&=/n\0\xc3\xa9"),
				      "prevIndex=5&quorum=true"),
		     "/v2/keys/sp%20ace%3F%23%25%2B%26%3D/n%00%C3%A9"
		     "?prevIndex=5&quorum=true"));
	CHECK(str_is(etcd2_codec_path(S("/A-Z.a_z~09"), NULL),
		     "/v2/keys/A-Z.a_z~09"));

	form = etcd2_codec_form_value(S("v%&=+ x/\n\0"), &len);
	CHECK(form && len == strlen(form));
	CHECK(str_is(form, "value=v%25%26%3D%2B%20x%2F%0A%00"));
	form = etcd2_codec_form_value("", 0, &len);
	CHECK(form && len == 6);
	CHECK(str_is(form, "value="));
	return true;
}

/* ---- errors ---- */

static bool error_table(void)
{
	static const struct {
		int code;
		long status;
		const char *cause;
		int want;
	} cases[] = {
		{ 100, 404, NULL, STORE_ENOTFOUND },
		{ 101, 412, NULL, STORE_EPRECONDITION },
		{ 102, 403, NULL, STORE_EINVAL },
		{ 104, 400, NULL, STORE_EINVAL },
		{ 105, 412, NULL, STORE_EPRECONDITION },
		{ 107, 400, NULL, STORE_EINVAL },
		{ 108, 403, NULL, STORE_EEXISTS },
		{ 110, 401, NULL, STORE_EUNAUTHENTICATED },
		{ 203, 400, NULL, STORE_EINVAL },
		{ 209, 400, NULL, STORE_EINVAL },
		{ 300, 500, "etcdserver: request timed out", STORE_ETIMEOUT },
		/* raft errors: the request reached etcd, maybe raft */
		{ 300, 500, "etcdserver: no leader", STORE_EUNKNOWN },
		{ 301, 500, NULL, STORE_EUNKNOWN },
		{ 400, 400, NULL, STORE_EUNREACHABLE },
		{ 401, 400, NULL, STORE_ECOMPACTED },
		{ 999, 400, NULL, STORE_EBADREPLY },
		/* not etcd errors: the status alone */
		{ 0, 401, NULL, STORE_EUNAUTHENTICATED },
		{ 0, 403, NULL, STORE_EPERMISSION },
		{ 0, 404, NULL, STORE_ENOTSUP },
		{ 0, 408, NULL, STORE_ETIMEOUT },
		{ 0, 413, NULL, STORE_ETOOLARGE },
		{ 0, 414, NULL, STORE_ETOOLARGE },
		{ 0, 431, NULL, STORE_ETOOLARGE },
		{ 0, 429, NULL, STORE_EUNREACHABLE },
		{ 0, 500, NULL, STORE_EUNKNOWN },
		{ 0, 503, NULL, STORE_EUNKNOWN },
		{ 0, 504, NULL, STORE_ETIMEOUT },
		{ 0, 301, NULL, STORE_EBADREPLY },
		{ 0, 400, NULL, STORE_EBADREPLY },
		{ 0, 0, NULL, STORE_EBADREPLY },
	};
	size_t i;
	int got;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = etcd2_codec_errcode(cases[i].code, cases[i].status,
					  cases[i].cause);
		if (got != cases[i].want) {
			tap_diag("code %d status %ld: %s, expected %s",
				 cases[i].code, cases[i].status, err_name(got),
				 err_name(cases[i].want));
			return false;
		}
	}
	return true;
}

static bool history_start_cases(void)
{
	CHECK(etcd2_codec_history_start("the requested history has been "
					"cleared [132/4]", 9) == 132);
	CHECK(etcd2_codec_history_start("[1 != 8] [14/1]", 9) == 14);
	CHECK(etcd2_codec_history_start("no brackets", 9) == 9);
	CHECK(etcd2_codec_history_start("[x/1]", 9) == 9);
	CHECK(etcd2_codec_history_start("[14]", 9) == 9);
	CHECK(etcd2_codec_history_start("[-3/1]", 9) == 9);
	CHECK(etcd2_codec_history_start("[99999999999999999999999/1]", 9) ==
	      9);
	CHECK(etcd2_codec_history_start(NULL, 7) == 7);
	return true;
}

/* ---- listings beyond the fixtures ---- */

static const char list_body[] =
	"{\"action\":\"get\",\"node\":{\"key\":\"/d\",\"dir\":true,\"nodes\":["
	"{\"key\":\"/d/b\",\"value\":\"2\",\"modifiedIndex\":7,"
	"\"createdIndex\":7},"
	"{\"key\":\"/d/a\",\"dir\":true,\"nodes\":[{\"key\":\"/d/a/z\","
	"\"value\":\"3\",\"modifiedIndex\":5,\"createdIndex\":5}],"
	"\"modifiedIndex\":9,\"createdIndex\":4},"
	"{\"key\":\"/d/a-\",\"value\":\"1\",\"modifiedIndex\":6,"
	"\"createdIndex\":6}],\"modifiedIndex\":3,\"createdIndex\":3}}";

/* Appends after what the list holds, sorts only what it appended. */
static bool list_appends(void)
{
	struct store_list l = { 0 };
	struct store_kv kv = { 0 };
	struct store_error ce = { 0 };
	int64_t max;

	l.kvs = calloc(1, sizeof(*l.kvs));
	CHECK(l.kvs);
	l.cap = 1;
	kv.key = strdup("zzz");
	kv.key_len = 3;
	kv.value = strdup("");
	CHECK(kv.key && kv.value);
	l.kvs[l.n++] = kv;
	CHECK(etcd2_codec_list(list_body, strlen(list_body), S("/d/"), S("/d0"),
			       false, &l, &max, &ce) == 0);
	CHECK(max == 9);
	CHECK(l.n == 4);
	CHECK(!strcmp(l.kvs[0].key, "zzz"));
	/* bytewise: "/d/a-" < "/d/a/z" ('-' < '/'), as v3 would order */
	CHECK(!strcmp(l.kvs[1].key, "/d/a-") && !strcmp(l.kvs[1].value, "1"));
	CHECK(!strcmp(l.kvs[2].key, "/d/a/z") && l.kvs[2].mod_revision == 5);
	CHECK(!strcmp(l.kvs[3].key, "/d/b") && l.kvs[3].create_revision == 7);

	/* a failure leaves what was there, and only that */
	CHECK(etcd2_codec_list(list_body, strlen(list_body) - 3, S("/d/"),
			       S("/d0"), false, &l, &max, &ce) ==
	      STORE_EBADREPLY);
	CHECK(l.n == 4 && max == 0);
	store_list_release(&l);
	return true;
}

static bool list_ranges(void)
{
	struct store_list l = { 0 };
	struct store_error ce = { 0 };
	int64_t max;

	/* [/d/a-, /d/b): the key and the subdirectory's key */
	CHECK(etcd2_codec_list(list_body, strlen(list_body), S("/d/a-"),
			       S("/d/b"), false, &l, &max, &ce) == 0);
	CHECK(l.n == 2 && !strcmp(l.kvs[0].key, "/d/a-") &&
	      !strcmp(l.kvs[1].key, "/d/a/z"));
	store_list_release(&l);
	/* one key: an empty end */
	CHECK(etcd2_codec_list(list_body, strlen(list_body), S("/d/b"), "", 0,
			       true, &l, &max, &ce) == 0);
	CHECK(l.n == 1 && !strcmp(l.kvs[0].key, "/d/b") &&
	      l.kvs[0].value_len == 0 && l.kvs[0].value[0] == '\0');
	store_list_release(&l);
	/* no end */
	CHECK(etcd2_codec_list(list_body, strlen(list_body), S("/d/a0"),
			       S("\0"), false, &l, &max, &ce) == 0);
	CHECK(l.n == 1 && !strcmp(l.kvs[0].key, "/d/b"));
	store_list_release(&l);
	/* nothing in range */
	CHECK(etcd2_codec_list(list_body, strlen(list_body), S("/e/"),
			       S("/e0"), false, &l, &max, &ce) == 0);
	CHECK(l.n == 0 && max == 9);
	store_list_release(&l);
	return true;
}

/* ---- watch events beyond the fixtures ---- */

static bool parse(const char *body, struct etcd2_reply *r)
{
	struct store_error ce = { 0 };

	if (etcd2_codec_reply(200, body, strlen(body), r, &ce)) {
		tap_diag("cannot parse '%s': %s", body, ce.msg);
		return false;
	}
	return true;
}

static bool event_is(const struct etcd2_reply *r, const char *key,
		     size_t key_len, const char *end, size_t end_len,
		     const char *want)
{
	struct text t = { 0 };
	bool ok;

	dump_event_of(&t, r, key, key_len, end, end_len);
	ok = t.p && !strcmp(t.p, want);
	if (!ok)
		tap_diag("event for '%.*s': got '%s', expected '%s'",
			 (int)key_len, key, t.p ? t.p : "", want);
	text_free(&t);
	return ok;
}

static bool event_mapping(void)
{
	struct etcd2_reply r;

	/* a directory removed */
	CHECK(parse("{\"action\":\"delete\",\"node\":{\"key\":\"/d\","
		    "\"dir\":true,\"modifiedIndex\":30,\"createdIndex\":3},"
		    "\"prevNode\":{\"key\":\"/d\",\"dir\":true,"
		    "\"modifiedIndex\":3,\"createdIndex\":3}}", &r));
	/* over the watched prefix, under it, or around it: list again */
	CHECK(event_is(&r, S("/d/"), S("/d0"),
		       "event error revision=30 err=ECOMPACTED compact=30\n"));
	CHECK(event_is(&r, S("/d/x/"), S("/d/x0"),
		       "event error revision=30 err=ECOMPACTED compact=30\n"));
	CHECK(event_is(&r, S("\0"), S("\0"),
		       "event error revision=30 err=ECOMPACTED compact=30\n"));
	CHECK(event_is(&r, S("/"), S("0"),
		       "event error revision=30 err=ECOMPACTED compact=30\n"));
	/* beside it: "/d" is not "/dx", nor "/d-" */
	CHECK(event_is(&r, S("/dx/"), S("/dx0"),
		       "event progress revision=30\n"));
	CHECK(event_is(&r, S("/d-/"), S("/d-0"),
		       "event progress revision=30\n"));
	CHECK(event_is(&r, S("/c/"), S("/c0"), "event progress revision=30\n"));
	/* one key under it is deleted, one beside it is not */
	CHECK(event_is(&r, S("/d/x/y"), NULL, 0,
		       "event delete revision=30\n"
		       "  kv key=\"/d/x/y\" value=\"\" create=0 mod=30 "
		       "version=0 lease=0\n"));
	CHECK(event_is(&r, S("/d"), NULL, 0,
		       "event delete revision=30\n"
		       "  kv key=\"/d\" value=\"\" create=0 mod=30 version=0 "
		       "lease=0\n"));
	CHECK(event_is(&r, S("/dx/y"), NULL, 0,
		       "event progress revision=30\n"));
	etcd2_reply_release(&r);

	/* a key beside the range of the directory polled */
	CHECK(parse("{\"action\":\"set\",\"node\":{\"key\":\"/d/ab\","
		    "\"value\":\"v\",\"modifiedIndex\":31,"
		    "\"createdIndex\":31}}", &r));
	CHECK(event_is(&r, S("/d/b"), S("/d/c"),
		       "event progress revision=31\n"));
	CHECK(event_is(&r, S("/d/a"), S("/d/b"),
		       "event put revision=31\n"
		       "  kv key=\"/d/ab\" value=\"v\" create=31 mod=31 "
		       "version=0 lease=0\n"));
	CHECK(event_is(&r, S("/d/ab"), NULL, 0,
		       "event put revision=31\n"
		       "  kv key=\"/d/ab\" value=\"v\" create=31 mod=31 "
		       "version=0 lease=0\n"));
	CHECK(event_is(&r, S("/d/a"), NULL, 0,
		       "event progress revision=31\n"));
	etcd2_reply_release(&r);

	/* a directory's TTL refreshed is no change of a key */
	CHECK(parse("{\"action\":\"update\",\"node\":{\"key\":\"/d\","
		    "\"dir\":true,\"modifiedIndex\":32,\"createdIndex\":3}}",
		    &r));
	CHECK(event_is(&r, S("/d/"), S("/d0"), "event progress revision=32\n"));
	etcd2_reply_release(&r);
	return true;
}

int main(void)
{
	size_t i;

	for (i = 0; i < N_FIXTURES; i++)
		tap_ok(run_fixture(fixtures[i]), "fixture %s", fixtures[i]);
	TAP_RUN(every_fixture_listed);
	TAP_RUN(key_ok_cases);
	TAP_RUN(utf8_cases);
	TAP_RUN(range_dir_cases);
	TAP_RUN(request_encoding);
	TAP_RUN(error_table);
	TAP_RUN(history_start_cases);
	TAP_RUN(list_appends);
	TAP_RUN(list_ranges);
	TAP_RUN(event_mapping);
	return tap_done(0);
}
