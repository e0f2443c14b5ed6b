/*
 * errors.h - the helper's errors: enum store_err, struct store_error and
 * the one function that fills it
 *
 * Every function of helper/ returns 0 or a negative enum store_err; when
 * a struct store_error is passed it is filled on error only (jansson's
 * json_error_t, git's struct strbuf *err), with the key (printable), the
 * revision that matters and a one-line cause.  This module is at the
 * bottom of helper/: it includes nothing of the helper, so the transport
 * and the codecs use it without the store above them.
 *
 * What it cannot do: translate to errno (fs/ does, in one switch).
 */
#ifndef ETCDFS_ERRORS_H
#define ETCDFS_ERRORS_H

#include <stddef.h>
#include <stdint.h>

enum store_err {
	STORE_OK = 0,
	STORE_ENOTFOUND = -1,		/* the key does not exist */
	STORE_EEXISTS = -2,		/* create of a key (grant of a lease
					 * id) that exists */
	STORE_ECONFLICT = -3,		/* guaranteed_update ran out of retries */
	STORE_EPRECONDITION = -4,	/* a caller's precondition does not hold */
	STORE_ECOMPACTED = -5,		/* the revision asked for is compacted */
	STORE_EUNREACHABLE = -6,	/* nothing was sent: no endpoint could
					 * be connected to, or etcd refused
					 * the request before doing anything */
	STORE_ETIMEOUT = -7,		/* a request ran past its timeout */
	STORE_EUNAUTHENTICATED = -8,	/* no, wrong or expired credentials */
	STORE_EPERMISSION = -9,		/* authenticated, but not allowed */
	STORE_ETOOLARGE = -10,		/* the request is over the server's limit */
	STORE_EBADREPLY = -11,		/* the server answered something unparsable */
	STORE_EINTERNAL = -12,		/* out of memory, or a bug */
	STORE_EINVAL = -13,		/* a bad argument or configuration */
	STORE_ENOTSUP = -14,		/* the backend cannot do this */
	/*
	 * A write went out and its answer was lost (connection reset, a
	 * timeout after sending, etcd's leader lost mid-request), and
	 * reading the key again could not tell whether it was applied: it
	 * may have been.  Only writes return it.
	 */
	STORE_EUNKNOWN = -15,
	STORE_ENOSPC = -16,		/* the cluster is out of space (its quota) */
};

#define STORE_ERR_COUNT 17

/* Returns a static, lower-case description of @err ("key not found"). */
const char *store_strerror(int err);

/* Returns the short name of @err ("not found", "exists", ...). */
const char *store_errname(int err);

/*
 * Writes @key into @buf (of @size >= 4) printable, as store_error's key:
 * \xNN and \\ escapes; cut with "..." if it does not fit.
 */
void store_escape_key(char *buf, size_t size, const char *key,
		      size_t key_len);

struct store_error {
	int code;		/* the enum store_err returned */
	int64_t revision;	/* the current mod_revision on a failed
				 * precondition, the compact revision on
				 * ECOMPACTED, else 0 */
	char key[256];		/* the key, printable, escaped, maybe cut */
	char msg[512];		/* the cause, one line, lower case */
};

/*
 * Fills @err (if not NULL) with @code, @key (escaped: bytes outside
 * 0x20..0x7e as \xNN; NULL: none), @rev and the message @fmt, made one
 * line, and returns @code.  @fmt's arguments may point into @err: the
 * message is made before @err is written.
 */
int store_fail(struct store_error *err, int code, const char *key,
	       size_t key_len, int64_t rev, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* store_fail(err, STORE_EINTERNAL, key, key_len, 0, "out of memory") */
int store_enomem(struct store_error *err, const char *key, size_t key_len);

/*
 * The message for a value of @len bytes over the limit @max, in one
 * place: fills @err with ETOOLARGE for @key and returns it.
 */
int store_fail_too_large(struct store_error *err, const char *key,
			 size_t key_len, size_t len, size_t max);

/* True if @code says a write went out and its answer never came back. */
static inline int store_err_unknown_outcome(int code)
{
	return code == STORE_EUNKNOWN || code == STORE_ETIMEOUT;
}

/*
 * What a read reports of a request whose answer was lost: for a read
 * that is no more than "unreachable" (@err keeps its message).
 */
int store_read_rc(int rc, struct store_error *err);

#endif /* ETCDFS_ERRORS_H */
