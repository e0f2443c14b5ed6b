/*
 * fuzz_grpc_frame.c - libFuzzer target for the gRPC framing of
 * helper/grpc_frame.c
 *
 * The input is a reply body: it is framed whole and again in chunks whose
 * sizes its first bytes pick, with a cap its second byte picks, and both
 * must give the same messages and the same error; every message is within
 * the cap.  The input is also read as header lines (grpc-status,
 * grpc-message, content-type) and percent-decoded, which must give one
 * NUL-terminated printable line within its buffer.
 *
 * Seeds: the captured replies of tests/data/grpc (capture.sh).  What it
 * cannot do: reach libcurl or the transport's thread.
 */
#include "fuzz.h"
#include "grpc_frame.h"

struct seen {
	uint64_t hash;
	size_t n, max;
};

static int on_msg(void *arg, const uint8_t *msg, size_t len)
{
	struct seen *s = arg;
	size_t i;

	check(len <= s->max);
	s->n++;
	s->hash = s->hash * 1099511628211u + len;
	for (i = 0; i < len; i++)
		s->hash = (s->hash ^ msg[i]) * 1099511628211u;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole = { 0 }, cut = { 0 };
	struct grpc_reader r;
	struct grpc_status st;
	size_t max, off, step, n;
	char out[64];
	int rc1, rc2;

	if (size < 2)
		return 0;
	max = (size_t)data[1] * 16;
	whole.max = cut.max = max;
	grpc_reader_init(&r, max);
	rc1 = grpc_reader_feed(&r, data, size, on_msg, &whole);
	grpc_reader_release(&r);

	grpc_reader_init(&r, max);
	rc2 = 0;
	for (off = 0; off < size && rc2 == 0; off += n) {
		step = (size_t)data[off % 2] % 7 + 1;
		n = size - off < step ? size - off : step;
		rc2 = grpc_reader_feed(&r, data + off, n, on_msg, &cut);
	}
	grpc_reader_release(&r);
	check(rc1 == rc2);
	check(whole.n == cut.n && whole.hash == cut.hash);

	memset(&st, 0, sizeof(st));
	grpc_status_header(&st, (const char *)data, size);
	check(strlen(st.message) < sizeof(st.message));
	check(!st.have_status || (st.code >= 0 && st.code <= 999));
	grpc_percent_decode((const char *)data, size, out, sizeof(out));
	check(strlen(out) < sizeof(out));
	for (n = 0; out[n]; n++)
		check((unsigned char)out[n] >= 0x20 && out[n] != 0x7f);
	return 0;
}
