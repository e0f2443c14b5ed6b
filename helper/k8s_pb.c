/*
 * k8s_pb.c - the protobuf wire format, for the k8s codec's walkers
 *
 * Varints, keys and length-delimited fields read within bounds and
 * written to a buffer, base64's alphabet and the order of map keys: what
 * the decoder (k8s_pb_dec.c), the encoder (k8s_pb_enc.c) and the envelope
 * (k8s_codec.c) share.
 *
 * What it cannot do: groups (wire types 3 and 4) are refused, as no
 * Kubernetes type has one.
 */
#include <string.h>

#include "k8s_i.h"

const char k8s_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int k8s_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	int shift;

	for (shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (*p >= end)
			return -1;
		b = *(*p)++;
		if (shift == 63 && b > 1)
			return -1;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/*
 * Reads the next key and value at *p; 0, or -1 when the wire format is
 * broken (a group, a length past the end, field number 0).
 */
int k8s_pb_field(const uint8_t **p, const uint8_t *end, uint64_t *num,
		 struct k8s_wire *w)
{
	uint64_t key;

	if (k8s_pb_varint(p, end, &key) < 0)
		return -1;
	*num = key >> 3;
	w->wt = key & 7;
	if (*num == 0 || *num > 0x1fffffff)
		return -1;
	switch (w->wt) {
	case 0:
		return k8s_pb_varint(p, end, &w->v);
	case 1:
		if (end - *p < 8)
			return -1;
		*p += 8;
		return 0;
	case 2:
		if (k8s_pb_varint(p, end, &w->v) < 0 ||
		    w->v > (uint64_t)(end - *p))
			return -1;
		w->p = *p;
		w->len = w->v;
		*p += w->len;
		return 0;
	case 5:
		if (end - *p < 4)
			return -1;
		*p += 4;
		return 0;
	default:
		return -1;
	}
}

void k8s_pb_put_varint(struct k8s_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		k8s_buf_addc(b, (char)(v | 0x80));
		v >>= 7;
	}
	k8s_buf_addc(b, (char)v);
}

void k8s_pb_put_key(struct k8s_buf *b, uint32_t num, int wt)
{
	k8s_pb_put_varint(b, (uint64_t)num << 3 | (unsigned int)wt);
}

void k8s_pb_put_len(struct k8s_buf *b, uint32_t num, const void *p, size_t n)
{
	k8s_pb_put_key(b, num, 2);
	k8s_pb_put_varint(b, n);
	k8s_buf_add(b, p, n);
}

int k8s_map_key_cmp(const void *a, const void *b)
{
	const struct k8s_map_key *x = a, *y = b;
	int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}
