/*
 * errors.c - names of the store errors and the one function that fills a
 * struct store_error (see errors.h)
 *
 * What it cannot do: know the key or the request; callers pass them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"

/* Error names and descriptions, indexed by -code. */
static const char *const store_names[STORE_ERR_COUNT] = {
	[0] = "ok",
	[-STORE_ENOTFOUND] = "not found",
	[-STORE_EEXISTS] = "exists",
	[-STORE_ECONFLICT] = "conflict",
	[-STORE_EPRECONDITION] = "precondition failed",
	[-STORE_ECOMPACTED] = "compacted",
	[-STORE_EUNREACHABLE] = "unreachable",
	[-STORE_ETIMEOUT] = "timeout",
	[-STORE_EUNAUTHENTICATED] = "unauthenticated",
	[-STORE_EPERMISSION] = "permission denied",
	[-STORE_ETOOLARGE] = "too large",
	[-STORE_EBADREPLY] = "bad reply",
	[-STORE_EINTERNAL] = "internal error",
	[-STORE_EINVAL] = "invalid argument",
	[-STORE_ENOTSUP] = "not supported",
	[-STORE_EUNKNOWN] = "outcome unknown",
	[-STORE_ENOSPC] = "no space",
};

static const char *const store_descriptions[STORE_ERR_COUNT] = {
	[0] = "success",
	[-STORE_ENOTFOUND] = "key not found",
	[-STORE_EEXISTS] = "key exists",
	[-STORE_ECONFLICT] = "too many conflicting updates",
	[-STORE_EPRECONDITION] = "the key changed: precondition failed",
	[-STORE_ECOMPACTED] = "the revision is compacted",
	[-STORE_EUNREACHABLE] = "cannot reach the cluster",
	[-STORE_ETIMEOUT] = "request timed out",
	[-STORE_EUNAUTHENTICATED] = "authentication failed",
	[-STORE_EPERMISSION] = "permission denied",
	[-STORE_ETOOLARGE] = "request too large",
	[-STORE_EBADREPLY] = "bad reply from the server",
	[-STORE_EINTERNAL] = "internal error",
	[-STORE_EINVAL] = "invalid argument",
	[-STORE_ENOTSUP] = "not supported",
	[-STORE_EUNKNOWN] = ("the answer was lost: the write may have been "
			     "applied"),
	[-STORE_ENOSPC] = "the cluster is out of space",
};

const char *store_strerror(int err)
{
	if (err > 0 || err <= -STORE_ERR_COUNT)
		return "unknown error";
	return store_descriptions[-err];
}

const char *store_errname(int err)
{
	if (err > 0 || err <= -STORE_ERR_COUNT)
		return "unknown";
	return store_names[-err];
}

/*
 * Writes @key into @buf (of @size >= 4) printable: bytes outside
 * 0x20..0x7e and the backslash as \xNN and \\, so that two different keys
 * never print alike; a key that does not fit is cut and ends in "...".
 */
void store_escape_key(char *buf, size_t size, const char *key,
		      size_t key_len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0, need, total = 0, room = size - 1;
	unsigned char c;

	buf[0] = '\0';
	if (!key)
		return;
	for (i = 0; i < key_len; i++) {
		c = (unsigned char)key[i];
		total += (c == '\\') ? 2 : (c < 0x20 || c > 0x7e) ? 4 : 1;
	}
	/* Cut: keep room for "...", and never half an escape. */
	if (total > room)
		room -= 3;
	for (i = 0; i < key_len; i++) {
		c = (unsigned char)key[i];
		need = (c == '\\') ? 2 : (c < 0x20 || c > 0x7e) ? 4 : 1;
		if (o + need > room)
			break;
		if (c == '\\') {
			buf[o++] = '\\';
			buf[o++] = '\\';
		} else if (need == 4) {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		} else {
			buf[o++] = (char)c;
		}
	}
	if (i < key_len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

int store_fail(struct store_error *err, int code, const char *key,
	       size_t key_len, int64_t rev, const char *fmt, ...)
{
	char msg[sizeof(err->msg)], k[sizeof(err->key)];
	va_list ap;
	char *p;

	if (!err)
		return code;
	/* The arguments may point into @err (a message kept and extended). */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	store_escape_key(k, sizeof(k), key, key_len);
	err->code = code;
	err->revision = rev;
	memcpy(err->key, k, sizeof(k));
	memcpy(err->msg, msg, sizeof(msg));
	/* One line: a server's message may hold anything. */
	for (p = err->msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return code;
}

int store_enomem(struct store_error *err, const char *key, size_t key_len)
{
	return store_fail(err, STORE_EINTERNAL, key, key_len, 0,
			  "out of memory");
}

int store_fail_too_large(struct store_error *err, const char *key,
			 size_t key_len, size_t len, size_t max)
{
	return store_fail(err, STORE_ETOOLARGE, key, key_len, 0,
			  "value of %zu bytes is larger than %zu bytes", len,
			  max);
}

int store_read_rc(int rc, struct store_error *err)
{
	if (rc != STORE_EUNKNOWN)
		return rc;
	if (err)
		err->code = STORE_EUNREACHABLE;
	return STORE_EUNREACHABLE;
}
