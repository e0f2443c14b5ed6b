/*
 * grpc_frame.h - gRPC's message framing over HTTP/2, as pure functions
 *
 * A gRPC message on the wire is a 5-byte prefix (one flag byte: 1 if the
 * message is compressed; then its length, 4 bytes big-endian) followed by
 * the message.  A call's status comes in the trailers (or, for a call that
 * fails at once, in the headers): grpc-status, a decimal code, and
 * grpc-message, percent-encoded.  The deadline goes out as grpc-timeout.
 *
 * Nothing here does I/O or knows protobuf; every input is treated as
 * hostile.  What it cannot do: decompress (etcdfs never asks for
 * compression, and a compressed message is an error), or parse
 * grpc-status-details-bin.
 */
#ifndef ETCDFS_GRPC_FRAME_H
#define ETCDFS_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_PREFIX_LEN 5

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

/* Writes the prefix of an uncompressed message of @len bytes into @out. */
void grpc_frame_prefix(uint8_t out[GRPC_PREFIX_LEN], uint32_t len);

/*
 * A malloc()ed buffer holding @len bytes of @msg framed (prefix, then the
 * message), its size in *@out_len; NULL when out of memory or when @len
 * does not fit the 4-byte length.
 */
uint8_t *grpc_frame_encode(const uint8_t *msg, size_t len, size_t *out_len);

enum grpc_reader_err {
	GRPC_READER_OK = 0,
	GRPC_READER_TOO_LARGE = -1,	/* a length over the cap */
	GRPC_READER_COMPRESSED = -2,	/* flag 1: nothing was negotiated */
	GRPC_READER_BAD_FLAG = -3,	/* a flag byte other than 0 or 1 */
	GRPC_READER_NOMEM = -4,
	GRPC_READER_STOPPED = -5,	/* the callback asked to stop */
};

/*
 * Cuts a byte stream (a reply body, in the pieces HTTP/2 delivers) into
 * messages.  A message is held until it is whole, and no more than @max
 * bytes are ever allocated for one: a prefix announcing more is an error
 * before anything is allocated.  Once an error is seen the reader stays
 * broken.
 */
struct grpc_reader {
	uint8_t prefix[GRPC_PREFIX_LEN];
	size_t prefix_len;	/* bytes of the prefix seen */
	uint8_t *msg;		/* the message being filled */
	size_t msg_len;		/* its announced length */
	size_t msg_have;	/* bytes of it seen */
	size_t max;
	size_t count;		/* whole messages delivered */
	int err;		/* enum grpc_reader_err, sticky */
	uint32_t bad_len;	/* GRPC_READER_TOO_LARGE: the length seen */
};

void grpc_reader_init(struct grpc_reader *r, size_t max);
void grpc_reader_release(struct grpc_reader *r);

/*
 * Called once per whole message, in order; @msg is borrowed for the call.
 * Returns 0 to go on, non-zero to stop (the rest is dropped and the reader
 * reports GRPC_READER_STOPPED).
 */
typedef int (*grpc_msg_fn)(void *arg, const uint8_t *msg, size_t len);

/* Feeds @len bytes; returns 0 or a negative enum grpc_reader_err. */
int grpc_reader_feed(struct grpc_reader *r, const uint8_t *data, size_t len,
		     grpc_msg_fn fn, void *arg);

/* True if the stream ended between two messages (nothing half read). */
bool grpc_reader_idle(const struct grpc_reader *r);

/* A static lower-case description of a reader error. */
const char *grpc_reader_strerror(int err);

/* The trailers (or headers) of a call that say how it ended. */
struct grpc_status {
	bool have_status;	/* a well-formed grpc-status was seen */
	bool bad_status;	/* a grpc-status that is not a code */
	int code;		/* enum grpc_code */
	char message[512];	/* grpc-message decoded, cut to fit */
	bool is_grpc;		/* content-type application/grpc seen */
};

/*
 * Looks at one header line as libcurl hands it ("name: value\r\n", any
 * case for the name; a status line or a blank line is ignored) and fills
 * @st with grpc-status, grpc-message and content-type.
 */
void grpc_status_header(struct grpc_status *st, const char *line, size_t len);

/*
 * Percent-decodes @len bytes of @in (gRPC's grpc-message encoding) into
 * @out (size @size, always NUL-terminated, cut at a character boundary if
 * need be); a '%' not followed by two hex digits stands for itself, and
 * control bytes and NULs that come out are replaced by '?', so that the
 * message is one printable line.
 */
void grpc_percent_decode(const char *in, size_t len, char *out, size_t size);

/*
 * Formats @ms as a grpc-timeout value ("1500m", at most 8 digits and a
 * unit, coarser units for long timeouts) into @out; @ms <= 0 gives "1m".
 */
void grpc_timeout_format(long ms, char *out, size_t size);

/* The code's name as gRPC spells it ("UNAVAILABLE"), or "code N". */
const char *grpc_code_name(int code);

#endif /* ETCDFS_GRPC_FRAME_H */
