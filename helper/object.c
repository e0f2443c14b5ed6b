/*
 * object.c - the TypeMeta of a Kubernetes value (see object.h)
 *
 * The protobuf envelope is read by hand, field by field, with every length
 * checked against what is left: a value is whatever another client put,
 * and a truncated or hostile one must give -EBADMSG, never a read past its
 * end.  Unknown fields of either message are skipped, as protobuf says, so
 * that a newer envelope still reads; groups (wire types 3 and 4, never
 * used by Kubernetes) are refused.  Of a field given twice the last wins,
 * and an embedded message given twice is merged, as protobuf parsers do.
 *
 * What it cannot do: tell a JSON object that is not a Kubernetes object
 * from one that is (any JSON object with the two strings has them).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "object.h"

/* Kubernetes' runtime.Unknown and its TypeMeta: the fields read. */
#define UNKNOWN_TYPE_META	1
#define TYPE_META_API_VERSION	1
#define TYPE_META_KIND		2

enum wire {
	WIRE_VARINT = 0,
	WIRE_I64 = 1,
	WIRE_LEN = 2,
	WIRE_I32 = 5,
};

struct pb {
	const unsigned char *p;
	const unsigned char *end;
};

/* A varint of at most 10 bytes; -EBADMSG if cut or longer. */
static int pb_varint(struct pb *b, uint64_t *v)
{
	unsigned shift;

	*v = 0;
	for (shift = 0; shift < 64; shift += 7) {
		unsigned char c;

		if (b->p == b->end)
			return -EBADMSG;
		c = *b->p++;
		/* the tenth byte holds one bit of the 64 */
		if (shift == 63 && c > 1)
			return -EBADMSG;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -EBADMSG;
}

/*
 * The next field's number, wire type and, for WIRE_LEN, its bytes in @sub;
 * other wire types are skipped.  1 if there is a field, 0 at the end,
 * -EBADMSG if malformed.
 */
static int pb_field(struct pb *b, uint64_t *num, struct pb *sub)
{
	uint64_t tag, v;
	int err;

	if (b->p == b->end)
		return 0;
	err = pb_varint(b, &tag);
	if (err)
		return err;
	*num = tag >> 3;
	if (*num == 0)
		return -EBADMSG;
	sub->p = sub->end = NULL;
	switch (tag & 7) {
	case WIRE_VARINT:
		return pb_varint(b, &v) ? -EBADMSG : 1;
	case WIRE_I64:
	case WIRE_I32: {
		size_t n = (tag & 7) == WIRE_I64 ? 8 : 4;

		if ((size_t)(b->end - b->p) < n)
			return -EBADMSG;
		b->p += n;
		return 1;
	}
	case WIRE_LEN:
		if (pb_varint(b, &v) || v > (uint64_t)(b->end - b->p))
			return -EBADMSG;
		sub->p = b->p;
		sub->end = b->p + v;
		b->p += v;
		return 1;
	default:
		return -EBADMSG;
	}
}

/* Replaces *@s with a NUL-terminated copy of @sub's bytes. */
static int set_string(char **s, size_t *len, const struct pb *sub)
{
	size_t n = (size_t)(sub->end - sub->p);
	char *c = malloc(n + 1);

	if (!c)
		return -ENOMEM;
	if (n)
		memcpy(c, sub->p, n);
	c[n] = '\0';
	free(*s);
	*s = c;
	*len = n;
	return 0;
}

static int type_meta(struct pb *b, struct object_meta *m)
{
	struct pb sub;
	uint64_t num;
	int rc;

	while ((rc = pb_field(b, &num, &sub)) == 1) {
		if (!sub.p) {
			/* a string field with another wire type: malformed */
			if (num == TYPE_META_API_VERSION ||
			    num == TYPE_META_KIND)
				return -EBADMSG;
			continue;
		}
		if (num == TYPE_META_API_VERSION)
			rc = set_string(&m->api_version, &m->api_version_len,
					&sub);
		else if (num == TYPE_META_KIND)
			rc = set_string(&m->kind, &m->kind_len, &sub);
		else
			rc = 0;
		if (rc)
			return rc;
	}
	return rc;
}

static int from_protobuf(const char *val, size_t len, struct object_meta *m)
{
	struct pb b = {
		(const unsigned char *)val + OBJECT_K8S_MAGIC_LEN,
		(const unsigned char *)val + len,
	};
	struct pb sub;
	uint64_t num;
	int rc;

	while ((rc = pb_field(&b, &num, &sub)) == 1) {
		if (num != UNKNOWN_TYPE_META)
			continue;
		if (!sub.p)
			return -EBADMSG;
		rc = type_meta(&sub, m);
		if (rc)
			return rc;
	}
	return rc;
}

static int json_string_of(json_t *obj, const char *name, char **s,
			  size_t *len)
{
	json_t *v = json_object_get(obj, name);
	struct pb sub;

	if (!json_is_string(v))
		return 0;
	sub.p = (const unsigned char *)json_string_value(v);
	sub.end = sub.p + json_string_length(v);
	return set_string(s, len, &sub);
}

static int from_json(const char *val, size_t len, struct object_meta *m)
{
	json_error_t jerr;
	json_t *obj;
	int rc;

	obj = json_loadb(val, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(obj)) {
		json_decref(obj);
		/* text that only opens with '{' is not an object */
		return json_error_code(&jerr) == json_error_out_of_memory ?
			       -ENOMEM : -ENODATA;
	}
	rc = json_string_of(obj, "apiVersion", &m->api_version,
			    &m->api_version_len);
	if (!rc)
		rc = json_string_of(obj, "kind", &m->kind, &m->kind_len);
	json_decref(obj);
	return rc;
}

static bool has_magic(const char *val, size_t len)
{
	return len >= OBJECT_K8S_MAGIC_LEN &&
	       memcmp(val, OBJECT_K8S_MAGIC, OBJECT_K8S_MAGIC_LEN) == 0;
}

/* The offset of the first byte that is not JSON white space. */
static size_t skip_space(const char *val, size_t len)
{
	size_t i = 0;

	while (i < len && (val[i] == ' ' || val[i] == '\t' ||
			   val[i] == '\n' || val[i] == '\r'))
		i++;
	return i;
}

bool object_maybe(const char *val, size_t len)
{
	size_t i;

	if (has_magic(val, len))
		return true;
	i = skip_space(val, len);
	return i < len && val[i] == '{';
}

int object_meta(const char *val, size_t len, struct object_meta *m)
{
	int rc;

	memset(m, 0, sizeof(*m));
	if (has_magic(val, len))
		rc = from_protobuf(val, len, m);
	else if (object_maybe(val, len))
		rc = from_json(val, len, m);
	else
		rc = -ENODATA;
	if (rc)
		object_meta_release(m);
	return rc;
}

void object_meta_release(struct object_meta *m)
{
	free(m->api_version);
	free(m->kind);
	memset(m, 0, sizeof(*m));
}
