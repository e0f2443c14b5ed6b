/*
 * grpc_frame.c - gRPC's message framing, status and timeout (grpc_frame.h)
 *
 * The reader keeps the prefix of the message being read in a 5-byte
 * buffer and allocates the message only once its length is known and
 * under the cap; a message that comes whole inside one piece of input is
 * handed to the callback without a copy.  What it cannot do: compressed
 * messages (etcdfs sends no grpc-accept-encoding, so a server has no
 * business compressing).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grpc_frame.h"

void grpc_frame_prefix(uint8_t out[GRPC_PREFIX_LEN], uint32_t len)
{
	out[0] = 0;
	out[1] = (uint8_t)(len >> 24);
	out[2] = (uint8_t)(len >> 16);
	out[3] = (uint8_t)(len >> 8);
	out[4] = (uint8_t)len;
}

uint8_t *grpc_frame_encode(const uint8_t *msg, size_t len, size_t *out_len)
{
	uint8_t *buf;

	if (len > UINT32_MAX || len > SIZE_MAX - GRPC_PREFIX_LEN)
		return NULL;
	buf = malloc(len + GRPC_PREFIX_LEN);
	if (!buf)
		return NULL;
	grpc_frame_prefix(buf, (uint32_t)len);
	if (len)
		memcpy(buf + GRPC_PREFIX_LEN, msg, len);
	*out_len = len + GRPC_PREFIX_LEN;
	return buf;
}

void grpc_reader_init(struct grpc_reader *r, size_t max)
{
	memset(r, 0, sizeof(*r));
	r->max = max;
}

void grpc_reader_release(struct grpc_reader *r)
{
	free(r->msg);
	r->msg = NULL;
	r->msg_have = 0;
	r->msg_len = 0;
	r->prefix_len = 0;
}

bool grpc_reader_idle(const struct grpc_reader *r)
{
	return r->err == 0 && r->prefix_len == 0;
}

const char *grpc_reader_strerror(int err)
{
	switch (err) {
	case GRPC_READER_OK:
		return "no error";
	case GRPC_READER_TOO_LARGE:
		return "a message larger than the limit";
	case GRPC_READER_COMPRESSED:
		return "a compressed message, which was not asked for";
	case GRPC_READER_BAD_FLAG:
		return "a bad message flag";
	case GRPC_READER_NOMEM:
		return "out of memory";
	case GRPC_READER_STOPPED:
		return "stopped";
	}
	return "unknown error";
}

static int grpc_reader_fail(struct grpc_reader *r, int err)
{
	r->err = err;
	grpc_reader_release(r);
	return err;
}

/* The prefix is whole: check it, and get ready for the message. */
static int grpc_reader_start(struct grpc_reader *r)
{
	uint32_t len = (uint32_t)r->prefix[1] << 24 |
		       (uint32_t)r->prefix[2] << 16 |
		       (uint32_t)r->prefix[3] << 8 | r->prefix[4];

	if (r->prefix[0] == 1)
		return grpc_reader_fail(r, GRPC_READER_COMPRESSED);
	if (r->prefix[0] != 0)
		return grpc_reader_fail(r, GRPC_READER_BAD_FLAG);
	if (len > r->max) {
		r->bad_len = len;
		return grpc_reader_fail(r, GRPC_READER_TOO_LARGE);
	}
	r->msg_len = len;
	r->msg_have = 0;
	return 0;
}

/* A whole message: hand it over and start on the next prefix. */
static int grpc_reader_deliver(struct grpc_reader *r, const uint8_t *msg,
			       grpc_msg_fn fn, void *arg)
{
	size_t len = r->msg_len;
	int stop;

	r->count++;
	stop = fn(arg, msg, len);
	free(r->msg);
	r->msg = NULL;
	r->msg_have = 0;
	r->msg_len = 0;
	r->prefix_len = 0;
	if (stop)
		return grpc_reader_fail(r, GRPC_READER_STOPPED);
	return 0;
}

int grpc_reader_feed(struct grpc_reader *r, const uint8_t *data, size_t len,
		     grpc_msg_fn fn, void *arg)
{
	static const uint8_t empty[1];
	size_t n;
	int rc;

	if (r->err)
		return r->err;
	while (len > 0 || (r->prefix_len == GRPC_PREFIX_LEN &&
			   r->msg_have == r->msg_len)) {
		if (r->prefix_len < GRPC_PREFIX_LEN) {
			n = GRPC_PREFIX_LEN - r->prefix_len;
			if (n > len)
				n = len;
			memcpy(r->prefix + r->prefix_len, data, n);
			r->prefix_len += n;
			data += n;
			len -= n;
			if (r->prefix_len < GRPC_PREFIX_LEN)
				return 0;
			rc = grpc_reader_start(r);
			if (rc < 0)
				return rc;
		}
		if (r->msg_have == 0 && len >= r->msg_len) {
			/* whole in this piece: no copy */
			n = r->msg_len;
			rc = grpc_reader_deliver(r, n ? data : empty, fn, arg);
			data += n;
			len -= n;
			if (rc < 0)
				return rc;
			continue;
		}
		if (!r->msg) {
			r->msg = malloc(r->msg_len);
			if (!r->msg)
				return grpc_reader_fail(r, GRPC_READER_NOMEM);
		}
		n = r->msg_len - r->msg_have;
		if (n > len)
			n = len;
		memcpy(r->msg + r->msg_have, data, n);
		r->msg_have += n;
		data += n;
		len -= n;
		if (r->msg_have < r->msg_len)
			return 0;
		rc = grpc_reader_deliver(r, r->msg, fn, arg);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int grpc_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void grpc_percent_decode(const char *in, size_t len, char *out, size_t size)
{
	size_t i, o = 0;
	int hi, lo;
	unsigned char c;

	if (size == 0)
		return;
	for (i = 0; i < len && o + 1 < size; i++) {
		c = (unsigned char)in[i];
		if (c == '%' && i + 2 < len) {
			hi = grpc_hex((unsigned char)in[i + 1]);
			lo = grpc_hex((unsigned char)in[i + 2]);
			if (hi >= 0 && lo >= 0) {
				c = (unsigned char)(hi << 4 | lo);
				i += 2;
			}
		}
		if (c < 0x20 || c == 0x7f)
			c = '?';
		out[o++] = (char)c;
	}
	/* never end inside a UTF-8 sequence that was cut */
	if (i < len && o > 0 && ((unsigned char)out[o - 1] & 0x80)) {
		while (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0x80)
			o--;
		if (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0xc0)
			o--;
	}
	out[o] = '\0';
}

/* True if @line starts with the header name @name and a colon. */
static bool grpc_header_is(const char *line, size_t len, const char *name,
			   const char **value, size_t *vlen)
{
	size_t n = strlen(name);
	const char *v, *end;

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return false;
	v = line + n + 1;
	end = line + len;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' ||
			   end[-1] == ' ' || end[-1] == '\t'))
		end--;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	*value = v;
	*vlen = (size_t)(end - v);
	return true;
}

void grpc_status_header(struct grpc_status *st, const char *line, size_t len)
{
	const char *v;
	size_t vlen, i;
	long code = 0;

	if (grpc_header_is(line, len, "grpc-status", &v, &vlen)) {
		if (vlen == 0 || vlen > 3) {
			st->bad_status = true;
			return;
		}
		for (i = 0; i < vlen; i++) {
			if (!isdigit((unsigned char)v[i])) {
				st->bad_status = true;
				return;
			}
			code = code * 10 + (v[i] - '0');
		}
		st->code = (int)code;
		st->have_status = true;
	} else if (grpc_header_is(line, len, "grpc-message", &v, &vlen)) {
		grpc_percent_decode(v, vlen, st->message, sizeof(st->message));
	} else if (grpc_header_is(line, len, "content-type", &v, &vlen)) {
		st->is_grpc = vlen >= 16 &&
			strncasecmp(v, "application/grpc", 16) == 0 &&
			(vlen == 16 || v[16] == '+' || v[16] == ';');
	}
}

void grpc_timeout_format(long ms, char *out, size_t size)
{
	/* at most 8 digits: past 99,999,999 ms, seconds, then hours */
	if (ms <= 0)
		ms = 1;
	if (ms <= 99999999L)
		snprintf(out, size, "%ldm", ms);
	else if (ms / 1000 <= 99999999L)
		snprintf(out, size, "%ldS", (ms + 999) / 1000);
	else
		snprintf(out, size, "%ldH", ms / 3600000L + 1);
}

const char *grpc_code_name(int code)
{
	static const char *const names[] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
		"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED",
	};

	if (code >= 0 && code < (int)(sizeof(names) / sizeof(names[0])))
		return names[code];
	return "unknown code";
}
