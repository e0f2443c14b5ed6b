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
 * fixtures do not reach.  Reading, comparing and listing the fixtures is
 * tests/fixture.c's job; this file says what each parser's result is.
 *
 * What it cannot do: talk to etcd; the backend over a real server is
 * tested by tests/integration/test_store_v2*.c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd2_codec.h"
#include "fixture.h"

#ifndef TEST_DATA
#error "TEST_DATA must name the fixture directory"
#endif

#define FIXTURES TEST_DATA "/v2"

#define S(lit) lit, sizeof(lit) - 1

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
	text_add(t, "result %s\n", fixture_err_name(rc));
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

static bool dump_reply(struct text *t, const struct fixture *fx)
{
	struct etcd2_reply r;
	struct store_error ce = { 0 };
	int rc;

	rc = etcd2_codec_reply(fx->status, fx->input, fx->len, &r, &ce);
	dump_reply_of(t, rc, ce.msg, &r);
	etcd2_reply_release(&r);
	return true;
}

static bool dump_list(struct text *t, const struct fixture *fx)
{
	struct store_list l = { 0 };
	char lo[256], hi[256], ko[8];
	struct store_error ce = { 0 };
	size_t lo_len = 0, hi_len = 0, ko_len = 0, i;
	int64_t max = -1;
	int rc;

	if (!fixture_arg(fx->args, "lo", lo, sizeof(lo), &lo_len) ||
	    !fixture_arg(fx->args, "hi", hi, sizeof(hi), &hi_len)) {
		tap_diag("%s: args need lo= and hi=", fx->name);
		return false;
	}
	if (!fixture_arg(fx->args, "keys_only", ko, sizeof(ko), &ko_len))
		ko_len = 0;
	rc = etcd2_codec_list(fx->input, fx->len, lo, lo_len, hi, hi_len,
			      ko_len == 1 && ko[0] == '1', &l, &max, &ce);
	text_add(t, "result %s max_index=%lld n=%zu dir=", fixture_err_name(rc),
		 (long long)max, l.n);
	i = etcd2_codec_range_dir(lo, lo_len, hi, hi_len);
	text_quote(t, lo, i);
	text_add(t, "\n");
	if (rc)
		text_add(t, "message %s\n", ce.msg);
	for (i = 0; i < l.n; i++)
		dump_owned_kv(t, "kv", &l.kvs[i]);
	store_list_release(&l);
	return true;
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
		text_add(t, "event %s\nmessage %s\n", fixture_err_name(rc),
			 ce.msg);
		return;
	}
	text_add(t, "event %s revision=%lld", ev_name(ev.type),
		 (long long)ev.revision);
	if (ev.type == STORE_EV_ERROR)
		text_add(t, " err=%s compact=%lld", fixture_err_name(ev.err),
			 (long long)ev.compact_revision);
	text_add(t, "\n");
	if (ev.kv.key)
		dump_kv(t, "  kv", &ev.kv);
	if (ev.prev_kv.key)
		dump_kv(t, "  prev_kv", &ev.prev_kv);
}

static bool dump_event(struct text *t, const struct fixture *fx)
{
	struct etcd2_reply r;
	char key[256], end[256];
	struct store_error ce = { 0 };
	size_t key_len = 0, end_len = 0;
	bool range;
	int rc;

	if (!fixture_arg(fx->args, "key", key, sizeof(key), &key_len)) {
		tap_diag("%s: args need key=", fx->name);
		return false;
	}
	range = fixture_arg(fx->args, "range_end", end, sizeof(end), &end_len);
	rc = etcd2_codec_reply(fx->status, fx->input, fx->len, &r, &ce);
	dump_reply_of(t, rc, ce.msg, &r);
	if (rc == 0)
		dump_event_of(t, &r, key, key_len, range ? end : NULL,
			      end_len);
	etcd2_reply_release(&r);
	return true;
}

static bool dump_members(struct text *t, const struct fixture *fx)
{
	struct store_member *m = NULL;
	size_t n = 0, i, j;
	struct store_error ce = { 0 };
	int rc;

	rc = etcd2_codec_members(fx->input, fx->len, &m, &n, &ce);
	text_add(t, "result %s n=%zu\n", fixture_err_name(rc), n);
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
	return true;
}

/*
 * Cuts a 2xx reply that is not malformed on purpose (no "-bad-" in its
 * name) short at every byte before its last '}': each cut must be refused
 * (EBADREPLY), by the parser of the case's kind.
 */
static bool every_cut_refused(const struct fixture *fx)
{
	const char *name = fx->name, *body = fx->input, *args = fx->args;
	size_t len = fx->len;
	const char *close = NULL;
	struct etcd2_reply r;
	char lo[256], hi[256];
	struct store_error ce = { 0 };
	size_t cut, i, lo_len = 0, hi_len = 0;
	int rc;

	if (fx->status < 200 || fx->status >= 300 || strstr(name, "-bad-"))
		return true;
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
	    (!fixture_arg(args, "lo", lo, sizeof(lo), &lo_len) ||
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
				 fixture_err_name(rc));
			return false;
		}
	}
	return true;
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

/* Which parser reads a case: its name's prefix. */
static const struct fixture_kind kinds[] = {
	{ "get-", true, dump_reply, every_cut_refused },
	{ "write-", true, dump_reply, every_cut_refused },
	{ "error-", true, dump_reply, every_cut_refused },
	{ "list-", true, dump_list, every_cut_refused },
	{ "event-", true, dump_event, every_cut_refused },
	{ "members-", true, dump_members, every_cut_refused },
};

static const struct fixture_suite suite = {
	FIXTURES, fixtures, FIXTURE_COUNT(fixtures), kinds,
	FIXTURE_COUNT(kinds),
};

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
				 cases[i].code, cases[i].status,
				 fixture_err_name(got),
				 fixture_err_name(cases[i].want));
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

/* A node's "ttl": the seconds left, 0 without one, never 0 with one. */
static bool node_ttl(void)
{
	struct etcd2_reply r;

	CHECK(parse("{\"action\":\"get\",\"node\":{\"key\":\"/k\","
		    "\"value\":\"v\",\"expiration\":\"2026-01-01T00:00:00Z\","
		    "\"ttl\":597,\"modifiedIndex\":8,\"createdIndex\":7}}",
		    &r));
	CHECK(r.node.ttl == 597 && r.node.kv.mod_revision == 8);
	etcd2_reply_release(&r);
	CHECK(parse("{\"action\":\"get\",\"node\":{\"key\":\"/k\","
		    "\"value\":\"v\",\"ttl\":0,\"modifiedIndex\":8,"
		    "\"createdIndex\":7}}", &r));
	CHECK(r.node.ttl == 1);
	etcd2_reply_release(&r);
	CHECK(parse("{\"action\":\"get\",\"node\":{\"key\":\"/k\","
		    "\"value\":\"v\",\"modifiedIndex\":8,"
		    "\"createdIndex\":7}}", &r));
	CHECK(r.node.ttl == 0);
	etcd2_reply_release(&r);
	return true;
}

int main(void)
{
	FIXTURE_RUN_ALL(&suite);
	TAP_RUN(key_ok_cases);
	TAP_RUN(utf8_cases);
	TAP_RUN(range_dir_cases);
	TAP_RUN(request_encoding);
	TAP_RUN(error_table);
	TAP_RUN(history_start_cases);
	TAP_RUN(list_appends);
	TAP_RUN(list_ranges);
	TAP_RUN(event_mapping);
	TAP_RUN(node_ttl);
	return tap_done(0);
}
