/*
 * etcd3.c - the etcd v3 backend of helper/store_i.h, over the JSON gateway
 *
 * Every operation is one POST of a JSON body to /v3/kv/range, /v3/kv/txn,
 * /v3/lease/grant or /v3/cluster/member/list through transport.c, built and
 * parsed by etcd3_codec.c.  Writes are transactions whose failure branch
 * reads the keys they compared, so a lost race answers with the state that
 * won it and costs no second request.  A watch is a thread per watch
 * holding a /v3/watch stream open; when the stream breaks it says so with a
 * transient STORE_EV_ERROR and resumes after the last revision it saw,
 * backing off from 100 ms to 2 s between attempts.
 *
 * What it cannot do: multi-key transactions other than the rename; keep a
 * lease alive (granted leases expire after their TTL); tell which endpoint
 * a watch is connected to.
 *
 * Locks: each watch's thread (helper/thread.c) has its own lock, which
 * guards only its stop flag and the condition its back-off waits on; it is
 * never held while calling the watch's callback or the transport.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd3_codec.h"
#include "store_i.h"
#include "thread.h"
#include "transport.h"

#define ETCD3_JSON		"application/json"
#define ETCD3_BACKOFF_MIN_MS	100
#define ETCD3_BACKOFF_MAX_MS	2000
/* A rename whose source changed between its read and its txn. */
#define ETCD3_MOVE_ATTEMPTS	16

/* ---- requests ---- */

/*
 * Puts @key into @err, whose message an inner layer wrote without it.
 * The copy: store_fail must not read the buffer it writes.
 */
static int etcd3_rekey(struct store_error *err, int code, const char *key,
		       size_t key_len, const char *what)
{
	char msg[sizeof(err->msg)];

	if (!err)
		return code;
	snprintf(msg, sizeof(msg), "%s", err->msg);
	return store_fail(err, code, key, key_len, err->revision, "%s%s%s",
			  what ? what : "", what ? ": " : "", msg);
}

/* Turns a codec error @e into @err, naming @key and the request @path. */
static int etcd3_codec_fail(struct store_error *err,
			    const struct store_error *e, const char *path,
			    const char *key, size_t key_len)
{
	return store_fail(err, e->code, key, key_len, e->revision, "%s: %s",
			  path, e->msg);
}

/*
 * POSTs @req_own (stolen) to @path.  Returns 0 with a 2xx reply in @reply
 * (released by the caller), or an error with @err filled and nothing to
 * release: a transport failure, or the server's error reply mapped.
 */
static int etcd3_post(struct store *s, const char *path, json_t *req_own,
		      const char *key, size_t key_len,
		      struct transport_reply *reply, struct store_error *err)
{
	struct store_error e = { 0 };
	size_t len = 0;
	char *body;
	int rc;

	memset(reply, 0, sizeof(*reply));
	body = etcd3_dump_own(req_own, &len);
	if (!body)
		return store_fail(err, STORE_EINTERNAL, key, key_len, 0,
				  "out of memory");
	rc = transport_request(s->tr, "POST", path, ETCD3_JSON, body, len,
			       reply, err);
	free(body);
	if (rc < 0) {
		transport_reply_release(reply);
		return etcd3_rekey(err, rc, key, key_len, NULL);
	}
	if (reply->status >= 200 && reply->status < 300)
		return 0;
	rc = etcd3_parse_error(reply->status, reply->body, reply->len, &e);
	transport_reply_release(reply);
	return store_fail(err, rc, key, key_len, e.revision, "%s", e.msg);
}

/* Serializable unless a flag or -o quorum asks for a linearizable read. */
static bool etcd3_serializable(const struct store *s, unsigned flags)
{
	if (flags & STORE_READ_SERIAL)
		return true;
	if (flags & STORE_READ_QUORUM)
		return false;
	return !s->cfg.quorum;
}

static bool etcd3_same_key(const struct store_kv *kv, const char *key,
			   size_t key_len)
{
	return kv->key_len == key_len && !memcmp(kv->key, key, key_len);
}

/* ---- the backend ---- */

static int etcd3_init(struct store *s, struct store_error *err)
{
	s->be = NULL;
	return 0;
}

static void etcd3_release(struct store *s)
{
}

/* One range reply for one key (or range), parsed. */
static int etcd3_range_call(struct store *s, const struct etcd3_range_req *r,
			    struct etcd3_result *res, struct store_error *err)
{
	struct transport_reply reply;
	struct store_error e = { 0 };
	int rc;

	memset(res, 0, sizeof(*res));
	rc = etcd3_post(s, "/v3/kv/range", etcd3_req_range(r), r->key,
			r->key_len, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3_parse_range(reply.body, reply.len, res, &e);
	transport_reply_release(&reply);
	if (rc < 0)
		return etcd3_codec_fail(err, &e, "/v3/kv/range", r->key,
					r->key_len);
	return 0;
}

static int etcd3_revision(struct store *s, int64_t *rev,
			  struct store_error *err)
{
	/*
	 * Linearizable, and as cheap as a request gets: count one key (the
	 * prefix itself; etcd has no empty key, so "\0" without a prefix).
	 */
	struct etcd3_range_req r = {
		.key = s->prefix_len ? s->prefix : "",
		.key_len = s->prefix_len ? s->prefix_len : 1,
		.count_only = true,
	};
	struct etcd3_result res;
	int rc;

	*rev = 0;
	rc = etcd3_range_call(s, &r, &res, err);
	if (rc < 0)
		return rc;
	*rev = res.revision;
	etcd3_result_release(&res);
	return 0;
}

static int etcd3_get(struct store *s, const char *key, size_t key_len,
		     unsigned flags, struct store_kv *out,
		     struct store_error *err)
{
	struct etcd3_range_req r = {
		.key = key,
		.key_len = key_len,
		.serializable = etcd3_serializable(s, flags),
		.keys_only = (flags & STORE_READ_KEYS_ONLY) != 0,
	};
	struct etcd3_result res;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = etcd3_range_call(s, &r, &res, err);
	if (rc < 0)
		return rc;
	if (res.n == 0)
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found");
	else if (res.n > 1 || !etcd3_same_key(&res.kvs[0], key, key_len))
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"/v3/kv/range: the server answered another "
				"key");
	else
		store_kv_move(out, &res.kvs[0]);
	etcd3_result_release(&res);
	return rc;
}

static int etcd3_range(struct store *s, const char *key, size_t key_len,
		       const char *range_end, size_t range_end_len,
		       int64_t rev, size_t limit, unsigned flags,
		       struct store_list *out, bool *more,
		       struct store_error *err)
{
	struct etcd3_range_req r = {
		.key = key,
		.key_len = key_len,
		.range_end = range_end,
		.range_end_len = range_end_len,
		.limit = limit <= INT64_MAX ? (int64_t)limit : 0,
		.revision = rev,
		.serializable = etcd3_serializable(s, flags),
		.keys_only = (flags & STORE_READ_KEYS_ONLY) != 0,
	};
	struct etcd3_result res;
	size_t i;
	int rc;

	*more = false;
	rc = etcd3_range_call(s, &r, &res, err);
	if (rc < 0)
		return rc;
	for (i = 0; i < res.n; i++) {
		rc = store_list_push_own(out, &res.kvs[i]);
		if (rc < 0) {
			rc = store_fail(err, rc, key, key_len, 0,
					"out of memory");
			break;
		}
	}
	/* a page read at @rev has the current revision in its header */
	if (rc == 0) {
		out->revision = rev > 0 ? rev : res.revision;
		*more = res.more;
	}
	etcd3_result_release(&res);
	return rc;
}

/*
 * Sends the txn @req_own about @key and parses its reply into @txn, which
 * must have @n_ok responses if it succeeded and @n_ko if not, of the
 * kinds @ok and @ko (one kind for all, as the backend's txns are built).
 */
static int etcd3_txn_call(struct store *s, json_t *req_own, const char *key,
			  size_t key_len, size_t n_ok, size_t n_ko,
			  struct etcd3_txn *txn, struct store_error *err)
{
	struct transport_reply reply;
	struct store_error e = { 0 };
	size_t want;
	int rc;

	memset(txn, 0, sizeof(*txn));
	rc = etcd3_post(s, "/v3/kv/txn", req_own, key, key_len, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3_parse_txn(reply.body, reply.len, txn, &e);
	transport_reply_release(&reply);
	if (rc < 0)
		return etcd3_codec_fail(err, &e, "/v3/kv/txn", key, key_len);
	want = txn->succeeded ? n_ok : n_ko;
	if (txn->n != want) {
		etcd3_txn_release(txn);
		return store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				  "/v3/kv/txn: %zu responses, not %zu",
				  txn->n, want);
	}
	return 0;
}

/* True if @txn's responses are of the kinds @a (then @b, if n > 1). */
static bool etcd3_txn_kinds(const struct etcd3_txn *txn, enum etcd3_op a,
			    enum etcd3_op b)
{
	return txn->n >= 1 && txn->res[0].op == a &&
	       (txn->n < 2 || txn->res[1].op == b);
}

static int etcd3_cas(struct store *s, const char *key, size_t key_len,
		     int64_t expect, const char *value, size_t value_len,
		     int64_t lease, int64_t *rev, struct store_kv *cur,
		     struct store_error *err)
{
	struct etcd3_txn txn;
	struct etcd3_result *r;
	int64_t now = 0;
	int rc;

	if (cur)
		memset(cur, 0, sizeof(*cur));
	if (value_len > store_max_value_size(s))
		return store_fail_too_large(err, key, key_len, value_len,
					    store_max_value_size(s));
	/* an absent key has no lease to keep, and etcd fails such a put */
	if (lease == -1 && expect == 0)
		lease = 0;
	rc = etcd3_txn_call(s, etcd3_req_cas(key, key_len, expect, value,
					     value_len, lease),
			    key, key_len, 1, 1, &txn, err);
	if (rc < 0)
		return rc;
	if (txn.succeeded) {
		if (!etcd3_txn_kinds(&txn, ETCD3_OP_PUT, ETCD3_OP_PUT)) {
			rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
					"/v3/kv/txn: a put answered as "
					"something else");
		} else if (rev) {
			*rev = txn.revision;
		}
		goto out;
	}
	r = &txn.res[0];
	if (expect < 0 || r->op != ETCD3_OP_RANGE || r->n > 1 ||
	    (r->n && !etcd3_same_key(&r->kvs[0], key, key_len))) {
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"/v3/kv/txn: a failed put came back without "
				"the key's state");
		goto out;
	}
	if (r->n) {
		now = r->kvs[0].mod_revision;
		store_kv_move(cur, &r->kvs[0]);
	}
	if (expect == 0)
		rc = store_fail(err, STORE_EPRECONDITION, key, key_len, now,
				"the key exists, at revision %lld",
				(long long)now);
	else if (!now)
		rc = store_fail(err, STORE_EPRECONDITION, key, key_len, 0,
				"the key was deleted since revision %lld",
				(long long)expect);
	else
		rc = store_fail(err, STORE_EPRECONDITION, key, key_len, now,
				"the key is at revision %lld, not %lld",
				(long long)now, (long long)expect);
out:
	etcd3_txn_release(&txn);
	return rc;
}

static int etcd3_del(struct store *s, const char *key, size_t key_len,
		     int64_t expect_mod, int64_t expect_create,
		     struct store_kv *prev, int64_t *rev,
		     struct store_error *err)
{
	struct etcd3_txn txn;
	struct etcd3_result *r;
	int rc;

	if (prev)
		memset(prev, 0, sizeof(*prev));
	rc = etcd3_txn_call(s, etcd3_req_delete(key, key_len, expect_mod,
						expect_create),
			    key, key_len, 1, 1, &txn, err);
	if (rc < 0)
		return rc;
	r = &txn.res[0];
	if (r->op != (txn.succeeded ? ETCD3_OP_DELETE : ETCD3_OP_RANGE) ||
	    r->n > 1 || (r->n && !etcd3_same_key(&r->kvs[0], key, key_len))) {
		rc = store_fail(err, STORE_EBADREPLY, key, key_len, 0,
				"/v3/kv/txn: a delete came back with "
				"another key or response");
		goto out;
	}
	if (txn.succeeded) {
		if (r->count == 0) {
			rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
					"key not found");
			goto out;
		}
		if (r->n)
			store_kv_move(prev, &r->kvs[0]);
		if (rev)
			*rev = txn.revision;
		goto out;
	}
	if (!r->n) {
		rc = store_fail(err, STORE_ENOTFOUND, key, key_len, 0,
				"key not found");
		goto out;
	}
	rc = store_fail(err, STORE_EPRECONDITION, key, key_len,
			r->kvs[0].mod_revision,
			"the key is at revision %lld, created at %lld",
			(long long)r->kvs[0].mod_revision,
			(long long)r->kvs[0].create_revision);
	store_kv_move(prev, &r->kvs[0]);
out:
	etcd3_txn_release(&txn);
	return rc;
}

/* Whether @cur (NULL: absent) passes compares on @mod and @create. */
static bool etcd3_holds(const struct store_kv *cur, int64_t mod,
			int64_t create)
{
	if (mod >= 0 && (cur ? cur->mod_revision : 0) != mod)
		return false;
	if (create > 0 && (!cur || cur->create_revision != create))
		return false;
	return true;
}

/* The compares of @pre: mod -1 unchecked, 0 absent; create 0 unchecked. */
static void etcd3_compares(const struct store_preconditions *pre,
			   int64_t *mod, int64_t *create)
{
	*mod = -1;
	*create = 0;
	if (!pre)
		return;
	if (pre->mod_revision == STORE_REV_ABSENT)
		*mod = 0;
	else if (pre->mod_revision > 0)
		*mod = pre->mod_revision;
	if (pre->create_revision > 0)
		*create = pre->create_revision;
}

static int etcd3_move(struct store *s, const char *from, size_t from_len,
		      const struct store_preconditions *pre_from,
		      const char *to, size_t to_len,
		      const struct store_preconditions *pre_to,
		      const char *value, size_t value_len, int64_t *rev,
		      struct store_error *err)
{
	struct store_kv src = { 0 };
	struct etcd3_txn txn = { 0 };
	const struct store_kv *fcur, *tcur;
	int64_t from_mod, from_create, to_mod, to_create;
	bool implicit;
	int rc = 0, attempt;

	if (from_len == to_len && !memcmp(from, to, from_len))
		return store_fail(err, STORE_EINVAL, from, from_len, 0,
				  "rename of a key onto itself");
	for (attempt = 0; attempt < ETCD3_MOVE_ATTEMPTS; attempt++) {
		etcd3_compares(pre_from, &from_mod, &from_create);
		etcd3_compares(pre_to, &to_mod, &to_create);
		implicit = false;
		if (!value) {
			/*
			 * A txn cannot copy a value: read it, and have the
			 * txn check it is still the one read.
			 */
			rc = etcd3_get(s, from, from_len, STORE_READ_QUORUM,
				       &src, err);
			if (rc < 0)
				return rc;
			if (!etcd3_holds(&src, from_mod, from_create)) {
				rc = store_fail(err, STORE_EPRECONDITION, from,
						from_len, src.mod_revision,
						"the source is at revision "
						"%lld", (long long)
						src.mod_revision);
				store_kv_release(&src);
				return rc;
			}
			if (src.value_len > store_max_value_size(s)) {
				rc = store_fail_too_large(err, to, to_len,
							  src.value_len,
							  store_max_value_size(s));
				store_kv_release(&src);
				return rc;
			}
			if (from_mod < 0) {
				from_mod = src.mod_revision;
				implicit = true;
			}
		} else if (value_len > store_max_value_size(s)) {
			return store_fail_too_large(err, to, to_len, value_len,
						    store_max_value_size(s));
		}
		rc = etcd3_txn_call(s, etcd3_req_move(from, from_len, from_mod,
						      from_create, to, to_len,
						      to_mod, to_create,
						      value ? value : src.value,
						      value ? value_len :
						      src.value_len),
				    from, from_len, 2, 2, &txn, err);
		store_kv_release(&src);
		if (rc < 0)
			return rc;
		if (txn.succeeded) {
			if (!etcd3_txn_kinds(&txn, ETCD3_OP_PUT,
					     ETCD3_OP_DELETE))
				rc = store_fail(err, STORE_EBADREPLY, from,
						from_len, 0, "/v3/kv/txn: a "
						"rename answered as something "
						"else");
			else if (rev)
				*rev = txn.revision;
			goto out;
		}
		if (!etcd3_txn_kinds(&txn, ETCD3_OP_RANGE, ETCD3_OP_RANGE) ||
		    txn.res[0].n > 1 || txn.res[1].n > 1) {
			rc = store_fail(err, STORE_EBADREPLY, from, from_len, 0,
					"/v3/kv/txn: a failed rename came back "
					"without the keys' state");
			goto out;
		}
		fcur = txn.res[0].n ? &txn.res[0].kvs[0] : NULL;
		tcur = txn.res[1].n ? &txn.res[1].kvs[0] : NULL;
		if (!etcd3_holds(tcur, to_mod, to_create)) {
			rc = store_fail(err, STORE_EPRECONDITION, to, to_len,
					tcur ? tcur->mod_revision : 0,
					"the target %s", tcur ?
					"exists or changed" : "is gone");
			goto out;
		}
		if (etcd3_holds(fcur, from_mod, from_create)) {
			rc = store_fail(err, STORE_EBADREPLY, from, from_len, 0,
					"/v3/kv/txn: a rename failed with its "
					"compares holding");
			goto out;
		}
		if (!fcur) {
			rc = store_fail(err, STORE_ENOTFOUND, from, from_len, 0,
					"key not found");
			goto out;
		}
		if (!implicit ||
		    !etcd3_holds(fcur, -1, from_create)) {
			rc = store_fail(err, STORE_EPRECONDITION, from,
					from_len, fcur ? fcur->mod_revision : 0,
					"the source %s", fcur ? "changed" :
					"is gone");
			goto out;
		}
		/* only the value read went stale: read it again */
		etcd3_txn_release(&txn);
	}
	return store_fail(err, STORE_ECONFLICT, from, from_len, 0,
			  "the source kept changing during the rename");
out:
	etcd3_txn_release(&txn);
	return rc;
}

static int etcd3_lease_grant(struct store *s, int64_t ttl, int64_t *id,
			     struct store_error *err)
{
	struct transport_reply reply;
	struct store_error e = { 0 };
	int64_t granted;
	int rc;

	*id = 0;
	rc = etcd3_post(s, "/v3/lease/grant", etcd3_req_lease_grant(ttl), NULL,
			0, &reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3_parse_lease_grant(reply.body, reply.len, id, &granted, &e);
	transport_reply_release(&reply);
	if (rc < 0)
		return etcd3_codec_fail(err, &e, "/v3/lease/grant", NULL, 0);
	return 0;
}

static int etcd3_members(struct store *s, struct store_member **members,
			 size_t *n, struct store_error *err)
{
	struct transport_reply reply;
	struct store_error e = { 0 };
	int rc;

	*members = NULL;
	*n = 0;
	rc = etcd3_post(s, "/v3/cluster/member/list", json_object(), NULL, 0,
			&reply, err);
	if (rc < 0)
		return rc;
	rc = etcd3_parse_members(reply.body, reply.len, members, n, &e);
	transport_reply_release(&reply);
	if (rc < 0)
		return etcd3_codec_fail(err, &e, "/v3/cluster/member/list",
					NULL, 0);
	return 0;
}

/* ---- watches ---- */

struct etcd3_watch {
	struct store_watch *w;
	struct thread t;
	/* the rest belongs to the watch thread */
	struct etcd3_framer fr;
	int64_t last_rev;		/* seen: where a new stream resumes */
	int64_t last_event_rev;		/* of the last event delivered */
	bool created;			/* this stream said created */
	bool ended;			/* compacted: no more events */
	int stream_err;			/* what broke the stream, or 0 */
};

static bool etcd3_watch_stopping(struct etcd3_watch *ew)
{
	return thread_stopping(&ew->t);
}

static void etcd3_watch_error(struct etcd3_watch *ew, int code,
			      int64_t compact_rev)
{
	struct store_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = STORE_EV_ERROR;
	ev.err = code;
	ev.revision = ew->last_rev;
	ev.compact_revision = compact_rev;
	ew->w->fn(ew->w->arg, &ev);
}

/*
 * Delivers the events of @m, skipping those a resumed stream repeats.
 * Only events count here, not progress notifications: etcd 3.4 before
 * 3.4.24 may send a progress revision ahead of events still queued, and
 * those must not be taken for repeats.
 */
static int etcd3_watch_events(struct etcd3_watch *ew,
			      const struct etcd3_watch_msg *m)
{
	int64_t seen = ew->last_event_rev;
	struct store_event ev;
	size_t i;

	for (i = 0; i < m->n; i++) {
		const struct etcd3_watch_event *e = &m->events[i];

		if (e->revision <= seen)
			continue;
		if (e->revision < ew->last_event_rev)
			return STORE_EBADREPLY;	/* out of order */
		memset(&ev, 0, sizeof(ev));
		ev.type = e->type;
		ev.kv = e->kv;
		ev.prev_kv = e->prev_kv;
		ev.revision = e->revision;
		ew->last_event_rev = e->revision;
		if (e->revision > ew->last_rev)
			ew->last_rev = e->revision;
		ew->w->fn(ew->w->arg, &ev);
	}
	return 0;
}

/* One line of the stream; non-zero ends the stream. */
static int etcd3_watch_line(void *arg, const char *line, size_t len)
{
	struct etcd3_watch *ew = arg;
	struct etcd3_watch_msg m;
	struct store_event ev;
	int rc;

	if (etcd3_watch_stopping(ew))
		return 1;
	rc = etcd3_parse_watch(line, len, &m, NULL);
	if (rc < 0) {
		ew->stream_err = rc;
		return 1;
	}
	switch (m.kind) {
	case ETCD3_WATCH_CREATED:
		ew->created = true;
		break;
	case ETCD3_WATCH_EVENTS:
		rc = etcd3_watch_events(ew, &m);
		if (rc < 0) {
			ew->stream_err = rc;
			rc = 1;
		}
		break;
	case ETCD3_WATCH_PROGRESS:
		/* sent to a watch that is caught up: nothing is pending;
		 * one behind what was seen already would say time ran back */
		if (m.revision < ew->last_rev)
			break;
		ew->last_rev = m.revision;
		memset(&ev, 0, sizeof(ev));
		ev.type = STORE_EV_PROGRESS;
		ev.revision = m.revision;
		ew->w->fn(ew->w->arg, &ev);
		break;
	case ETCD3_WATCH_CANCELED:
		if (m.err == STORE_ECOMPACTED) {
			ew->ended = true;
			etcd3_watch_error(ew, STORE_ECOMPACTED,
					  m.compact_revision);
		} else {
			ew->stream_err = m.err;
		}
		rc = 1;
		break;
	case ETCD3_WATCH_ERROR:
		ew->stream_err = m.err;
		rc = 1;
		break;
	}
	etcd3_watch_msg_release(&m);
	return rc;
}

static int etcd3_watch_data(void *arg, const char *data, size_t len)
{
	struct etcd3_watch *ew = arg;
	int rc;

	rc = etcd3_framer_feed(&ew->fr, data, len, etcd3_watch_line, ew);
	if (rc < 0 && !ew->stream_err)
		ew->stream_err = rc;	/* a line over the size cap */
	return rc;
}

/* What ended a stream that returned @rc with HTTP @status. */
static int etcd3_watch_cause(struct etcd3_watch *ew, int rc, long status)
{
	const char *rest;
	size_t n;

	if (ew->stream_err || ew->ended)
		return ew->stream_err;
	/* a last line without "\n": an error frame or an error reply */
	rest = etcd3_framer_rest(&ew->fr, &n);
	if (n && status >= 300)
		return etcd3_parse_error(status, rest, n, NULL);
	if (n) {
		struct etcd3_watch_msg m;

		if (etcd3_parse_watch(rest, n, &m, NULL) == 0) {
			etcd3_watch_msg_release(&m);
			etcd3_watch_line(ew, rest, n);
			if (ew->stream_err || ew->ended)
				return ew->stream_err;
		}
		/* else cut off mid-line: the connection broke */
	} else if (status >= 300) {
		return etcd3_parse_error(status, NULL, 0, NULL);
	}
	return rc < 0 ? rc : STORE_EUNREACHABLE;
}

static void *etcd3_watch_main(void *arg)
{
	struct etcd3_watch *ew = arg;
	struct store_watch *w = ew->w;
	struct store *s = w->s;
	struct thread_backoff backoff;

	thread_backoff_init(&backoff, ETCD3_BACKOFF_MIN_MS,
			    ETCD3_BACKOFF_MAX_MS);

	while (!etcd3_watch_stopping(ew)) {
		struct store_error e = { 0 };
		long status = 0;
		size_t len = 0;
		char *body;
		int rc;

		body = etcd3_dump_own(etcd3_req_watch(w->key, w->key_len,
						      w->range_end,
						      w->range_end_len,
						      ew->last_rev + 1),
				      &len);
		etcd3_framer_reset(&ew->fr);
		ew->created = false;
		ew->stream_err = 0;
		if (body) {
			rc = transport_stream(s->tr, "POST", "/v3/watch",
					      ETCD3_JSON, body, len,
					      etcd3_watch_data, ew, &ew->t.stop,
					      &status, &e);
			free(body);
			if (etcd3_watch_stopping(ew))
				break;
			rc = etcd3_watch_cause(ew, rc, status);
		} else {
			rc = STORE_EINTERNAL;
		}
		if (ew->ended)
			break;
		if (rc == STORE_ECOMPACTED) {
			/* said by an error frame: the compact revision is
			 * not known, but the watch is over all the same */
			etcd3_watch_error(ew, STORE_ECOMPACTED, 0);
			break;
		}
		etcd3_watch_error(ew, rc, 0);
		if (ew->created)
			thread_backoff_reset(&backoff);
		thread_backoff_wait(&ew->t, &backoff);
	}
	return NULL;
}

static void etcd3_watch_free(struct etcd3_watch *ew)
{
	etcd3_framer_release(&ew->fr);
	free(ew);
}

static int etcd3_watch(struct store *s, struct store_watch *w,
		       struct store_error *err)
{
	struct etcd3_watch *ew;
	int64_t start = w->start_rev;
	int rc;

	if (start <= 0) {
		/*
		 * "From now" is the revision after the current one, fixed
		 * here: events written after store_watch returns are then
		 * seen even if the stream is not set up yet.
		 */
		rc = etcd3_revision(s, &start, err);
		if (rc < 0)
			return rc;
		start++;
	}
	ew = calloc(1, sizeof(*ew));
	if (!ew)
		return store_fail(err, STORE_EINTERNAL, w->key, w->key_len, 0,
				  "out of memory");
	ew->w = w;
	ew->last_rev = start - 1;
	ew->last_event_rev = start - 1;
	etcd3_framer_init(&ew->fr, s->cfg.max_reply_size);
	rc = thread_start(&ew->t, etcd3_watch_main, ew);
	if (rc) {
		etcd3_watch_free(ew);
		return store_fail(err, STORE_EINTERNAL, w->key, w->key_len, 0,
				  "cannot start the watch thread: %s",
				  strerror(rc));
	}
	w->be = ew;
	return 0;
}

static void etcd3_watch_stop(struct store_watch *w)
{
	struct etcd3_watch *ew = w->be;

	if (!ew)
		return;
	thread_stop(&ew->t);
	etcd3_watch_free(ew);
	w->be = NULL;
}

const struct store_backend store_etcd3_backend = {
	.name = "etcd3",
	.init = etcd3_init,
	.release = etcd3_release,
	.revision = etcd3_revision,
	.get = etcd3_get,
	.range = etcd3_range,
	.cas = etcd3_cas,
	.del = etcd3_del,
	.move = etcd3_move,
	.lease_grant = etcd3_lease_grant,
	.watch = etcd3_watch,
	.watch_stop = etcd3_watch_stop,
	.members = etcd3_members,
};
