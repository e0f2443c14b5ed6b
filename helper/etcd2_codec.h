/*
 * etcd2_codec.h - what goes over the wire to and from etcd's v2 keys API
 *
 * Pure functions, no I/O: request paths and form bodies for /v2/keys, the
 * parsers of its JSON replies (a node, a recursive listing, an error, a
 * watch event, /v2/members), and the mapping of v2 error codes to enum
 * store_err.  helper/etcd2.c does the talking; tests/unit/test_codec_v2.c
 * runs these on replies captured from etcd 3.4.
 *
 * v2 keys are paths: they start with '/', have no empty segment, no "."
 * or ".." segment and no trailing '/', since etcd cleans every path it is
 * given; a key that is not clean would come back as another key, so the
 * codec refuses it (etcd2_codec_key_ok).  Keys and values are also UTF-8:
 * etcd writes its replies with Go's JSON encoder, which turns every byte of
 * invalid UTF-8 into U+FFFD, so other bytes would not come back either.
 * NUL is fine (\u0000).
 *
 * What it cannot do: v2 has no revision per key beyond the modified and
 * created index, no version, no lease and no range; the listing parser
 * flattens a recursive GET and filters it in memory.
 */
#ifndef ETCDFS_ETCD2_CODEC_H
#define ETCDFS_ETCD2_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The actions of v2 replies and events. */
enum etcd2_action {
	ETCD2_NONE,		/* an error reply */
	ETCD2_GET,
	ETCD2_SET,
	ETCD2_CREATE,
	ETCD2_UPDATE,
	ETCD2_CAS,		/* "compareAndSwap" */
	ETCD2_DELETE,
	ETCD2_CAD,		/* "compareAndDelete" */
	ETCD2_EXPIRE,
};

/* The v2 error codes this code acts on. */
#define ETCD2_EKEY_NOT_FOUND	100
#define ETCD2_ETEST_FAILED	101
#define ETCD2_ENOT_FILE		102
#define ETCD2_ENOT_DIR		104
#define ETCD2_ENODE_EXIST	105
#define ETCD2_EROOT_RONLY	107
#define ETCD2_EDIR_NOT_EMPTY	108
#define ETCD2_EUNAUTHORIZED	110
#define ETCD2_ERAFT_INTERNAL	300
#define ETCD2_ELEADER_ELECT	301
#define ETCD2_EWATCHER_CLEARED	400
#define ETCD2_EINDEX_CLEARED	401

/*
 * One node of a reply.  kv owns its key and value (both NUL-terminated
 * past their length); a directory or a deleted key has the value "".
 * kv.mod_revision is the modifiedIndex, kv.create_revision the
 * createdIndex; version and lease are 0 (v2 has neither).
 */
struct etcd2_node {
	bool present;		/* the reply had this node */
	bool dir;
	struct store_kv kv;
	int64_t ttl;		/* "ttl": the seconds left; 0: none */
};

/*
 * A parsed reply to a /v2/keys request: an action on a node, or an error
 * (action ETCD2_NONE, error_code set).
 */
struct etcd2_reply {
	enum etcd2_action action;
	struct etcd2_node node;
	struct etcd2_node prev;		/* "prevNode" */
	int error_code;			/* etcd's errorCode, 0 if none */
	int64_t index;			/* the error's "index": etcd's
					 * index when it failed (0: none) */
	char message[128];		/* the error's message */
	char cause[256];		/* and cause, maybe cut */
};

/* Frees what @r owns and zeroes it. */
void etcd2_reply_release(struct etcd2_reply *r);

/*
 * Parses the @len bytes of @body that came back with HTTP status @status.
 * A 2xx status must come with a node reply (action, node): 0, with @r
 * filled.  Any other status is an error: the negative enum store_err
 * etcd2_codec_errcode() gives, @r's error fields filled if the body was an
 * etcd error, and @err the cause, one line.  A reply that is neither (not
 * JSON, wrong types, a 2xx without a node) is EBADREPLY.  @r is released
 * by the caller in every case.
 */
int etcd2_codec_reply(long status, const char *body, size_t len,
		      struct etcd2_reply *r, struct store_error *err);

/*
 * The enum store_err for v2 error @code (0: the body was not an etcd
 * error) that came with HTTP status @status.  @cause, if not NULL, tells
 * a timeout from another raft error.  See the table in etcd2_codec.c.
 */
int etcd2_codec_errcode(int code, long status, const char *cause);

/*
 * Flattens the 2xx reply @body to a recursive GET into @out: every key
 * (directories are not keys) in [@lo, @hi), appended after what @out
 * holds, that part sorted bytewise.  @hi of one NUL byte means no upper
 * bound, as an etcd range_end.  With @keys_only the values are "".
 * *@max_index is the largest modifiedIndex of any node of the reply (0 if
 * none).  0, EBADREPLY (with @err) or EINTERNAL.
 */
int etcd2_codec_list(const char *body, size_t len, const char *lo,
		     size_t lo_len, const char *hi, size_t hi_len,
		     bool keys_only, struct store_list *out,
		     int64_t *max_index, struct store_error *err);

/*
 * Turns the parsed 2xx watch reply @r into @ev for a watch of @key (one
 * key if @range_end is NULL, else every key in [@key, @range_end)).  @ev
 * borrows from @r and @key.  Sets ev->type to:
 *   PUT or DELETE   a change of a watched key;
 *   PROGRESS        a change that is not one (a directory made, a key
 *                   outside the range): nothing changed up to
 *                   ev->revision;
 *   ERROR           ECOMPACTED: a directory over watched keys was removed
 *                   (v2 sends one event for the directory, none for its
 *                   keys), so the keys must be listed again.
 * Returns 0, or EBADREPLY (with @err) for an event without a key or index
 * or with an action that is not a change.
 */
int etcd2_codec_event(const struct etcd2_reply *r, const char *key,
		      size_t key_len, const char *range_end,
		      size_t range_end_len, struct store_event *ev,
		      struct store_error *err);

/*
 * The oldest index v2 still has, from the cause of an "event index
 * cleared" error ("the requested history has been cleared [132/4]"), or
 * @fallback if the cause does not say.
 */
int64_t etcd2_codec_history_start(const char *cause, int64_t fallback);

/* Parses the reply of GET /v2/members; 0, EBADREPLY or EINTERNAL. */
int etcd2_codec_members(const char *body, size_t len,
			struct store_member **members, size_t *n, struct store_error *err);

/*
 * True if @key is a key v2 keeps as given: a clean path of UTF-8 (see the
 * top of this file).  Else false, with *@why saying what is wrong.
 */
bool etcd2_codec_key_ok(const char *key, size_t len, const char **why);

/* True if the @len bytes at @p are valid UTF-8 (NUL included). */
bool etcd2_codec_utf8_ok(const char *p, size_t len);

/*
 * The directory to GET recursively for the keys in [@lo, @hi) (@hi as in
 * etcd2_codec_list): the longest clean path D such that every key in the
 * range is under D.  Returns its length, a prefix of @lo; 0 means the root.
 */
size_t etcd2_codec_range_dir(const char *lo, size_t lo_len, const char *hi,
			     size_t hi_len);

/*
 * "/v2/keys" + @key with every byte but [A-Za-z0-9-._~/] percent-encoded
 * + ("?" @query if @query is not NULL or empty).  An empty @key is the
 * root ("/v2/keys/").  malloc()ed; NULL on ENOMEM.
 */
char *etcd2_codec_path(const char *key, size_t key_len, const char *query);

/*
 * The form body "value=" + @value, percent-encoded as
 * application/x-www-form-urlencoded; its length in *@out_len.  malloc()ed
 * and NUL-terminated; NULL on ENOMEM.
 */
char *etcd2_codec_form_value(const char *value, size_t len, size_t *out_len);

#endif /* ETCDFS_ETCD2_CODEC_H */
