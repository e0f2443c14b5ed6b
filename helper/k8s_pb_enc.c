/*
 * k8s_pb_enc.c - a jansson tree to a Kubernetes object's protobuf, by schema
 *
 * Walks a tree (text as jansson or k8s_yaml.c read it) along the tables
 * of k8s_schema.h and writes what gogo-protobuf's generated Marshal
 * writes for the Go object encoding/json would have filled: fields in
 * number order, non-pointer fields always (zero values too), pointers,
 * slices and maps only when set, map entries sorted by key, the special
 * types as their Unmarshal and Marshal make them.  A key the schema does
 * not know, a value of the wrong type, or a special type's bad text is
 * refused with the field's path.
 *
 * What it cannot do: keep embedded JSON (RawExtension, FieldsV1) as it was
 * written; it is written compact, as encoding/json writes its values.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_i.h"
#include "k8s_schema.h"

struct enc {
	bool yaml;
	struct k8s_error *err;
	char path[512];
	size_t plen;
};

/* Adds ".@s" to the path, or "[@i]" when @s is NULL. */
static void path_push(struct enc *e, const char *s, size_t i)
{
	int n;

	if (s)
		n = snprintf(e->path + e->plen, sizeof(e->path) - e->plen,
			     e->plen ? ".%s" : "%s", s);
	else
		n = snprintf(e->path + e->plen, sizeof(e->path) - e->plen,
			     "[%zu]", i);
	if (n > 0 && (size_t)n < sizeof(e->path) - e->plen)
		e->plen += (size_t)n;
}

__attribute__((format(printf, 2, 3))) static int enc_fail(struct enc *e,
							  const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	k8s_err(e->err, "%s: %s", e->plen ? e->path : "(object)", msg);
	return -EINVAL;
}

static int b64val(char c)
{
	const char *p = c ? strchr(k8s_b64, c) : NULL;

	return p ? (int)(p - k8s_b64) : -1;
}

/* Go's base64.StdEncoding.DecodeString: padding needed, CR and LF skipped. */
static int base64_decode(const char *s, size_t len, struct k8s_buf *out)
{
	int q[4], n = 0, pad = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (s[i] == '\r' || s[i] == '\n')
			continue;
		if (s[i] == '=') {
			if (n < 2)
				return -1;
			q[n++] = 0;
			pad++;
		} else {
			if (pad)
				return -1;
			q[n] = b64val(s[i]);
			if (q[n++] < 0)
				return -1;
		}
		if (n == 4) {
			uint32_t v = (uint32_t)q[0] << 18 | q[1] << 12 |
				     q[2] << 6 | q[3];
			char o[3] = {(char)(v >> 16), (char)(v >> 8), (char)v};

			k8s_buf_add(out, o, (size_t)(3 - pad));
			n = 0;
			if (pad)
				break;
		}
	}
	for (i++; pad && i < len; i++)
		if (s[i] != '\r' && s[i] != '\n')
			return -1;
	return n ? -1 : 0;
}

static int enc_message(struct enc *e, int mi, json_t *obj, bool inline_,
		       struct k8s_buf *out, int depth);

/* A scalar the text gives as a string, or, from YAML, as a plain scalar. */
static int want_string(struct enc *e, json_t *v, struct k8s_buf *s)
{
	char num[64];

	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		k8s_buf_add(s, json_string_value(v), json_string_length(v));
		return 0;
	}
	if (e->yaml && json_is_boolean(v)) {
		k8s_buf_adds(s, json_is_true(v) ? "true" : "false");
		return 0;
	}
	if (e->yaml && json_is_integer(v)) {
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		k8s_buf_adds(s, num);
		return 0;
	}
	if (e->yaml && json_is_real(v)) {
		/* sigs.k8s.io/yaml: FormatFloat(f, 'g', -1, 32) */
		k8s_yaml_float(json_real_value(v), true, num, sizeof(num));
		k8s_buf_adds(s, num);
		return 0;
	}
	return enc_fail(e, "a string is needed");
}

static int enc_special(struct enc *e, int type, json_t *v, struct k8s_buf *m)
{
	struct k8s_buf s = {0};
	int64_t sec, ns;
	int32_t nsec;
	int ret = 0;

	switch (type) {
	case K8S_T_TIME:
	case K8S_T_MICROTIME:
		if (!v || json_is_null(v))
			return 0;
		if (!json_is_string(v) ||
		    k8s_time_parse(json_string_value(v), json_string_length(v),
				   &sec, &nsec) < 0)
			return enc_fail(e, "an RFC 3339 time is needed");
		if (type == K8S_T_TIME)
			nsec = 0;
		nsec -= nsec % 1000;
		if (sec == GO_ZERO_TIME && nsec == 0)
			return 0;
		k8s_pb_put_key(m, 1, 0);
		k8s_pb_put_varint(m, (uint64_t)sec);
		k8s_pb_put_key(m, 2, 0);
		k8s_pb_put_varint(m, (uint64_t)(int64_t)nsec);
		return 0;
	case K8S_T_DURATION:
		ns = 0;
		if (v && !json_is_null(v) &&
		    (!json_is_string(v) ||
		     k8s_duration_parse(json_string_value(v),
					json_string_length(v), &ns) < 0))
			return enc_fail(e, "a duration is needed (\"1m30s\")");
		k8s_pb_put_key(m, 1, 0);
		k8s_pb_put_varint(m, (uint64_t)ns);
		return 0;
	case K8S_T_QUANTITY: {
		struct k8s_buf q = {0};

		/* Go parses a number's text as it parses a string's */
		if (v && json_is_integer(v)) {
			char num[32];

			snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(v));
			k8s_buf_adds(&s, num);
		} else if (v && json_is_real(v)) {
			char num[64];

			snprintf(num, sizeof(num), "%.17g", json_real_value(v));
			k8s_buf_adds(&s, num);
		} else if (v && !json_is_null(v)) {
			ret = want_string(e, v, &s);
		}
		if (!ret && !s.err && s.len == 0)
			k8s_buf_adds(&s, "0");
		if (!ret && !s.err && k8s_quantity(s.p, s.len, &q) < 0)
			ret = enc_fail(e, "a quantity is needed (\"500m\", "
					  "\"1Gi\")");
		if (!ret)
			k8s_pb_put_len(m, 1, q.p, q.len);
		if (q.err)
			s.err = true;
		free(q.p);
		break;
	}
	case K8S_T_INTSTR:
		if (v && json_is_string(v)) {
			k8s_pb_put_key(m, 1, 0);
			k8s_pb_put_varint(m, 1);
			k8s_pb_put_key(m, 2, 0);
			k8s_pb_put_varint(m, 0);
			k8s_pb_put_len(m, 3, json_string_value(v),
				       json_string_length(v));
			return 0;
		}
		if (v && !json_is_null(v) &&
		    (!json_is_integer(v) ||
		     json_integer_value(v) != (int32_t)json_integer_value(v)))
			return enc_fail(e, "a 32-bit integer or a string is "
					   "needed");
		k8s_pb_put_key(m, 1, 0);
		k8s_pb_put_varint(m, 0);
		k8s_pb_put_key(m, 2, 0);
		k8s_pb_put_varint(
		    m, (uint64_t)(int64_t)(v ? json_integer_value(v) : 0));
		k8s_pb_put_len(m, 3, "", 0);
		return 0;
	case K8S_T_RAWEXT:
	case K8S_T_FIELDSV1:
		if (!v || json_is_null(v))
			return 0;
		k8s_json_write_compact(&s, v);
		k8s_pb_put_len(m, 1, s.p, s.len);
		break;
	}
	if (s.err)
		ret = enc_fail(e, "out of memory");
	free(s.p);
	return ret;
}

/* One occurrence of field @f (number @num) holding @v. */
static int enc_elem(struct enc *e, const struct k8s_field *f, uint32_t num,
		    json_t *v, struct k8s_buf *out, int depth)
{
	struct k8s_buf m = {0};
	json_int_t i;
	int ret = 0;
	size_t k;

	switch (f->type) {
	case K8S_T_STRING:
		ret = want_string(e, v, &m);
		if (!ret)
			k8s_pb_put_len(out, num, m.p, m.len);
		break;
	case K8S_T_BOOL:
		if (v && !json_is_null(v) && !json_is_boolean(v))
			return enc_fail(e, "true or false is needed");
		k8s_pb_put_key(out, num, 0);
		k8s_pb_put_varint(out, v && json_is_true(v));
		return 0;
	case K8S_T_INT32:
	case K8S_T_INT64:
		if (v && !json_is_null(v) && !json_is_integer(v))
			return enc_fail(e, "an integer is needed");
		i = v && json_is_integer(v) ? json_integer_value(v) : 0;
		if (f->type == K8S_T_INT32 && i != (int32_t)i)
			return enc_fail(e, "a 32-bit integer is needed");
		k8s_pb_put_key(out, num, 0);
		k8s_pb_put_varint(out, (uint64_t)i);
		return 0;
	case K8S_T_BYTES:
		if (!v || json_is_null(v))
			return 0;
		if (!json_is_string(v) ||
		    base64_decode(json_string_value(v), json_string_length(v),
				  &m) < 0) {
			free(m.p);
			return enc_fail(e, "base64 is needed");
		}
		k8s_pb_put_len(out, num, m.p, m.len);
		break;
	case K8S_T_MESSAGE:
		if (v && !json_is_null(v) && !json_is_object(v))
			return enc_fail(e, "an object is needed");
		ret = enc_message(e, f->msg, json_is_null(v) ? NULL : v, false,
				  &m, depth + 1);
		if (!ret)
			k8s_pb_put_len(out, num, m.p, m.len);
		break;
	case K8S_T_STRLIST:
		if (v && !json_is_null(v) && !json_is_array(v))
			return enc_fail(e, "an array is needed");
		for (k = 0; !ret && v && k < json_array_size(v); k++) {
			struct k8s_buf s = {0};
			size_t plen = e->plen;

			path_push(e, NULL, k);
			ret = want_string(e, json_array_get(v, k), &s);
			e->plen = plen;
			e->path[plen] = '\0';
			if (!ret)
				k8s_pb_put_len(&m, 1, s.p, s.len);
			free(s.p);
		}
		if (!ret)
			k8s_pb_put_len(out, num, m.p, m.len);
		break;
	default:
		ret = enc_special(e, f->type, v, &m);
		if (!ret)
			k8s_pb_put_len(out, num, m.p, m.len);
		break;
	}
	if (!ret && m.err)
		ret = enc_fail(e, "out of memory");
	free(m.p);
	return ret;
}

static int enc_map(struct enc *e, const struct k8s_field *f, json_t *v,
		   struct k8s_buf *out, int depth)
{
	struct k8s_map_key *keys;
	const char *key;
	size_t klen, n = 0, i;
	json_t *val;
	int ret = 0;

	if (!json_is_object(v))
		return enc_fail(e, "an object is needed");
	keys = malloc((json_object_size(v) + 1) * sizeof(*keys));
	if (!keys)
		return enc_fail(e, "out of memory");
	json_object_keylen_foreach(v, key, klen, val) keys[n++] =
	    (struct k8s_map_key){key, klen, val};
	qsort(keys, n, sizeof(*keys), k8s_map_key_cmp);
	for (i = 0; !ret && i < n; i++) {
		struct k8s_buf m = {0};
		size_t plen = e->plen;

		path_push(e, keys[i].key, 0);
		k8s_pb_put_len(&m, 1, keys[i].key, keys[i].len);
		ret = enc_elem(e, f, 2, keys[i].val, &m, depth);
		e->plen = plen;
		e->path[plen] = '\0';
		if (!ret && m.err)
			ret = enc_fail(e, "out of memory");
		if (!ret)
			k8s_pb_put_len(out, f->number, m.p, m.len);
		free(m.p);
	}
	free(keys);
	return ret;
}

static int enc_field(struct enc *e, const struct k8s_field *f, json_t *v,
		     struct k8s_buf *out, int depth)
{
	bool none = !v || json_is_null(v);
	size_t i;
	int ret = 0;

	if (f->flags & K8S_F_MAP)
		return none ? 0 : enc_map(e, f, v, out, depth);
	if (f->flags & K8S_F_REPEATED) {
		if (none)
			return 0;
		if (!json_is_array(v))
			return enc_fail(e, "an array is needed");
		for (i = 0; !ret && i < json_array_size(v); i++) {
			size_t plen = e->plen;

			path_push(e, NULL, i);
			ret = enc_elem(e, f, f->number, json_array_get(v, i),
				       out, depth);
			if (!ret && f->type == K8S_T_BYTES &&
			    json_is_null(json_array_get(v, i)))
				k8s_pb_put_len(out, f->number, "", 0);
			e->plen = plen;
			e->path[plen] = '\0';
		}
		return ret;
	}
	if ((f->flags & K8S_F_POINTER) && none)
		return 0;
	return enc_elem(e, f, f->number, v, out, depth);
}

/* Whether @key names a field of message @mi or of a struct it inlines. */
static bool has_key(int mi, const char *key)
{
	const struct k8s_message *m = &k8s_messages[mi];
	uint16_t i;

	for (i = 0; i < m->nfields; i++) {
		const struct k8s_field *f = &k8s_fields[m->first + i];

		if (f->flags & K8S_F_INLINE) {
			if (has_key(f->msg, key))
				return true;
		} else if (!strcmp(f->json, key)) {
			return true;
		}
	}
	return false;
}

/*
 * Appends message @mi's fields from @obj (NULL: its zero value) to @out.
 * @inline_: @obj is the parent's, whose keys the parent checks.
 */
static int enc_message(struct enc *e, int mi, json_t *obj, bool inline_,
		       struct k8s_buf *out, int depth)
{
	const struct k8s_message *m = &k8s_messages[mi];
	const char *key;
	json_t *v;
	uint16_t i;

	if (depth > K8S_MAX_DEPTH)
		return enc_fail(e, "nested too deep");
	if (obj && !inline_) {
		json_object_foreach(obj, key, v)
		{
			if (!has_key(mi, key)) {
				path_push(e, key, 0);
				return enc_fail(e, "unknown field");
			}
		}
	}
	for (i = 0; i < m->nwire; i++) {
		const struct k8s_field *f =
		    &k8s_fields[m->first + k8s_wire_order[m->wire + i]];
		size_t plen = e->plen;
		int ret;

		if (f->flags & K8S_F_INLINE) {
			struct k8s_buf sub = {0};

			ret =
			    enc_message(e, f->msg, obj, true, &sub, depth + 1);
			if (!ret)
				k8s_pb_put_len(out, f->number, sub.p, sub.len);
			free(sub.p);
			if (ret)
				return ret;
			continue;
		}
		path_push(e, f->json, 0);
		ret =
		    enc_field(e, f, obj ? json_object_get(obj, f->json) : NULL,
			      out, depth);
		e->plen = plen;
		e->path[plen] = '\0';
		if (ret)
			return ret;
	}
	return 0;
}

int k8s_pb_encode(int msg, json_t *obj, bool from_yaml, struct k8s_buf *out,
		  struct k8s_error *err)
{
	struct enc e = {.yaml = from_yaml, .err = err};
	int ret;

	ret = enc_message(&e, msg, obj, false, out, 0);
	if (!ret && out->err)
		ret = enc_fail(&e, "out of memory");
	return ret;
}
