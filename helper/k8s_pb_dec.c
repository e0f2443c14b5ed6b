/*
 * k8s_pb_dec.c - a Kubernetes object's protobuf to a jansson tree, by schema
 *
 * Walks the wire format along the tables of k8s_schema.h and builds the
 * tree encoding/json would write for the Go object the protobuf code would
 * have filled: fields in Go's order, omitempty applied, embedded structs
 * flattened, null for a nil pointer, slice or map, maps sorted, the
 * special types (times, durations, quantities, IntOrString, embedded JSON)
 * as their MarshalJSON writes them.  Fields the schema does not know are
 * skipped, and counted.
 *
 * What it cannot do: guess.  Every read is bounded by the value's end; a
 * value that breaks the wire format or the schema is refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_i.h"
#include "k8s_schema.h"

struct dec {
	size_t *unknown;
	struct k8s_error *err;
	const char *api_version;
	const char *kind;
};

static bool is_varint_type(int type)
{
	return type == K8S_T_BOOL || type == K8S_T_INT32 || type == K8S_T_INT64;
}

/* The wire type a field's occurrence must have. */
static bool wire_ok(const struct k8s_field *f, int wt)
{
	if (f->flags & K8S_F_MAP)
		return wt == 2;
	if (is_varint_type(f->type))
		return wt == 0 || (wt == 2 && (f->flags & K8S_F_REPEATED));
	return wt == 2;
}

static const struct k8s_field *find_number(const struct k8s_message *m,
					   uint64_t num, uint32_t *idx)
{
	uint16_t i;

	for (i = 0; i < m->nwire; i++) {
		uint16_t j = k8s_wire_order[m->wire + i];
		const struct k8s_field *f = &k8s_fields[m->first + j];

		if (f->number == num) {
			*idx = j;
			return f;
		}
	}
	return NULL;
}

/*
 * The known fields of message @mi in @p (@len bytes) as a new array of
 * *@n; unknown ones are skipped and counted.  NULL with *@n 0 for none.
 */
static int scan(struct dec *d, int mi, const uint8_t *p, size_t len,
		struct k8s_wire **out, size_t *n)
{
	const struct k8s_message *m = &k8s_messages[mi];
	const uint8_t *q = p, *end = p + len;
	struct k8s_wire w, *ws = NULL;
	size_t cap = 0;

	*n = 0;
	while (q < end) {
		const struct k8s_field *f;
		uint64_t num;
		uint32_t idx;

		memset(&w, 0, sizeof(w));
		if (k8s_pb_field(&q, end, &num, &w) < 0) {
			k8s_err(d->err, "'%s': broken wire format", m->name);
			goto bad;
		}
		f = find_number(m, num, &idx);
		if (!f) {
			(*d->unknown)++;
			continue;
		}
		if (!wire_ok(f, w.wt)) {
			k8s_err(d->err, "'%s.%s': wire type %d", m->name,
				f->json, w.wt);
			goto bad;
		}
		w.field = idx;
		if (*n == cap) {
			struct k8s_wire *nw;

			cap = cap ? cap * 2 : 16;
			nw = realloc(ws, cap * sizeof(*ws));
			if (!nw) {
				k8s_err(d->err, "out of memory");
				goto bad;
			}
			ws = nw;
		}
		ws[(*n)++] = w;
	}
	*out = ws;
	return 0;
bad:
	free(ws);
	return -1;
}

/* Go's string(bytes) through encoding/json: invalid UTF-8 as U+FFFD. */
static json_t *dec_string(const uint8_t *p, size_t len)
{
	struct k8s_buf b = {0};
	json_t *s;
	size_t i = 0;

	while (i < len) {
		uint8_t c = p[i];
		size_t n = 0;
		uint32_t cp = 0, min = 0;

		if (c < 0x80) {
			k8s_buf_addc(&b, (char)c);
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 2, cp = c & 0x1f, min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 3, cp = c & 0x0f, min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 4, cp = c & 0x07, min = 0x10000;
		}
		if (n && i + n <= len) {
			size_t k;

			for (k = 1; k < n; k++) {
				if ((p[i + k] & 0xc0) != 0x80)
					break;
				cp = cp << 6 | (p[i + k] & 0x3f);
			}
			if (k == n && cp >= min && cp <= 0x10ffff &&
			    (cp < 0xd800 || cp > 0xdfff)) {
				k8s_buf_add(&b, p + i, n);
				i += n;
				continue;
			}
		}
		k8s_buf_add(&b, "\xef\xbf\xbd", 3);
		i++;
	}
	if (b.err) {
		free(b.p);
		return NULL;
	}
	s = json_stringn(b.p ? b.p : "", b.len);
	free(b.p);
	return s;
}

static json_t *dec_base64(const uint8_t *p, size_t len)
{
	struct k8s_buf b = {0};
	json_t *s;
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | p[i + 1] << 8 | p[i + 2];
		char q[4] = {k8s_b64[v >> 18], k8s_b64[(v >> 12) & 63],
			     k8s_b64[(v >> 6) & 63], k8s_b64[v & 63]};

		k8s_buf_add(&b, q, 4);
	}
	if (len - i == 1) {
		char q[4] = {k8s_b64[p[i] >> 2], k8s_b64[(p[i] & 3) << 4], '=',
			     '='};

		k8s_buf_add(&b, q, 4);
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 8 | p[i + 1];
		char q[4] = {k8s_b64[v >> 10], k8s_b64[(v >> 4) & 63],
			     k8s_b64[(v << 2) & 63], '='};

		k8s_buf_add(&b, q, 4);
	}
	if (b.err) {
		free(b.p);
		return NULL;
	}
	s = json_stringn(b.p ? b.p : "", b.len);
	free(b.p);
	return s;
}

/*
 * Reads fields 1..3 of a small message into @v (varints) or @s and @slen
 * (the fields of @lenmask, length-delimited); others are unknown.
 */
static int dec_small(struct dec *d, const char *what, const uint8_t *p,
		     size_t len, unsigned int lenmask, uint64_t v[4],
		     const uint8_t *s[4], size_t slen[4])
{
	const uint8_t *end = p + len;

	while (p < end) {
		struct k8s_wire w = {0};
		uint64_t num;

		if (k8s_pb_field(&p, end, &num, &w) < 0) {
			k8s_err(d->err, "'%s': broken wire format", what);
			return -1;
		}
		if (num > 3) {
			(*d->unknown)++;
			continue;
		}
		if (w.wt != ((lenmask >> num) & 1 ? 2 : 0)) {
			k8s_err(d->err, "'%s': wire type %d", what, w.wt);
			return -1;
		}
		if (w.wt == 2) {
			s[num] = w.p;
			slen[num] = w.len;
		} else {
			v[num] = w.v;
		}
	}
	return 0;
}

static json_t *dec_time(struct dec *d, int type, const uint8_t *p, size_t len)
{
	uint64_t v[4] = {0};
	int64_t sec, nsec;
	struct k8s_buf b = {0};
	json_t *s;

	if (len == 0)
		return json_null();
	if (dec_small(d, "metav1.Time", p, len, 0, v, NULL, NULL) < 0)
		return NULL;
	sec = (int64_t)v[1];
	nsec = type == K8S_T_MICROTIME ? (int32_t)v[2] : 0;
	nsec -= nsec % 1000;
	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	if (sec == GO_ZERO_TIME && nsec == 0)
		return json_null();
	if (sec > (INT64_C(1) << 50) || sec < -(INT64_C(1) << 50)) {
		k8s_err(d->err, "a time of %" PRId64 " seconds", sec);
		return NULL;
	}
	k8s_time_format(&b, sec, (int32_t)nsec, type == K8S_T_MICROTIME);
	s = b.err ? NULL : json_stringn(b.p, b.len);
	free(b.p);
	return s;
}

static json_t *dec_message(struct dec *d, int mi, const uint8_t *p, size_t len,
			   int depth, json_t *into);

static json_t *dec_embedded_json(struct dec *d, const uint8_t *p, size_t len)
{
	uint64_t v[4] = {0};
	const uint8_t *s[4] = {0};
	size_t slen[4] = {0};
	const uint8_t *end = p + len;
	json_error_t jerr;
	json_t *j;
	bool have = false;

	while (p < end) {
		struct k8s_wire w = {0};
		uint64_t num;

		if (k8s_pb_field(&p, end, &num, &w) < 0) {
			k8s_err(d->err, "embedded JSON: broken wire format");
			return NULL;
		}
		if (num != 1) {
			(*d->unknown)++;
			continue;
		}
		if (w.wt != 2) {
			k8s_err(d->err, "embedded JSON: wire type %d", w.wt);
			return NULL;
		}
		s[1] = w.p;
		slen[1] = w.len;
		have = true;
	}
	(void)v;
	if (!have)
		return json_null();
	j = json_loadb((const char *)s[1], slen[1],
		       JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!j)
		k8s_err(d->err, "embedded JSON: %s", jerr.text);
	return j;
}

/* A special type's value @p (@len bytes), NULL for its zero value. */
static json_t *dec_special(struct dec *d, int type, const uint8_t *p,
			   size_t len)
{
	uint64_t v[4] = {0};
	const uint8_t *s[4] = {0};
	size_t slen[4] = {0};
	struct k8s_buf b = {0};
	json_t *r;

	switch (type) {
	case K8S_T_TIME:
	case K8S_T_MICROTIME:
		return dec_time(d, type, p, len);
	case K8S_T_DURATION:
		if (dec_small(d, "metav1.Duration", p, len, 0, v, NULL, NULL) <
		    0)
			return NULL;
		k8s_duration_format(&b, (int64_t)v[1]);
		r = b.err ? NULL : json_stringn(b.p, b.len);
		free(b.p);
		return r;
	case K8S_T_QUANTITY:
		if (dec_small(d, "resource.Quantity", p, len, 1 << 1, v, s,
			      slen) < 0)
			return NULL;
		if (!s[1])
			return json_string("0");
		if (k8s_quantity((const char *)s[1], slen[1], &b) < 0) {
			k8s_err(d->err, "resource.Quantity '%.*s' is not valid",
				slen[1] > 64 ? 64 : (int)slen[1], s[1]);
			free(b.p);
			return NULL;
		}
		r = b.err ? NULL : dec_string((const uint8_t *)b.p, b.len);
		free(b.p);
		return r;
	case K8S_T_INTSTR:
		if (dec_small(d, "intstr.IntOrString", p, len, 1 << 3, v, s,
			      slen) < 0)
			return NULL;
		if (v[1] == 0)
			return json_integer((int32_t)v[2]);
		if (v[1] == 1)
			return s[3] ? dec_string(s[3], slen[3])
				    : json_string("");
		k8s_err(d->err, "intstr.IntOrString of type %" PRIu64, v[1]);
		return NULL;
	case K8S_T_RAWEXT:
	case K8S_T_FIELDSV1:
		return dec_embedded_json(d, p, len);
	}
	k8s_err(d->err, "type %d is no special type", type);
	return NULL;
}

/* A named []string with a message of its own: repeated string items = 1. */
static json_t *dec_strlist(struct dec *d, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	json_t *a = json_array();

	while (a && p < end) {
		struct k8s_wire w = {0};
		uint64_t num;

		if (k8s_pb_field(&p, end, &num, &w) < 0) {
			k8s_err(d->err, "string list: broken wire format");
			goto bad;
		}
		if (num != 1) {
			(*d->unknown)++;
			continue;
		}
		if (w.wt != 2) {
			k8s_err(d->err, "string list: wire type %d", w.wt);
			goto bad;
		}
		if (json_array_append_new(a, dec_string(w.p, w.len)) < 0)
			goto bad;
	}
	return a;
bad:
	json_decref(a);
	return NULL;
}

/* One element of field @f: @w is its occurrence, NULL for none. */
static json_t *dec_elem(struct dec *d, const struct k8s_field *f,
			const struct k8s_wire *w, int depth)
{
	static const uint8_t none[1];
	/* an absent field reads as an empty one: never arithmetic on NULL */
	const uint8_t *p = w && w->p ? w->p : none;
	size_t len = w ? w->len : 0;

	switch (f->type) {
	case K8S_T_STRING:
		return dec_string(p, len);
	case K8S_T_BOOL:
		return json_boolean(w && w->v);
	case K8S_T_INT32:
		return json_integer(w ? (int32_t)w->v : 0);
	case K8S_T_INT64:
		return json_integer(w ? (int64_t)w->v : 0);
	case K8S_T_BYTES:
		return w ? dec_base64(p, len) : json_null();
	case K8S_T_MESSAGE:
		return dec_message(d, f->msg, p, len, depth + 1, NULL);
	case K8S_T_STRLIST:
		return dec_strlist(d, p, len);
	default:
		return dec_special(d, f->type, p, len);
	}
}

/* Appends the packed varints of @w to @a as field @f's type. */
static int dec_packed(struct dec *d, const struct k8s_field *f,
		      const struct k8s_wire *w, json_t *a)
{
	const uint8_t *p = w->p, *end = w->p + w->len;

	while (p < end) {
		struct k8s_wire e = {0};

		if (k8s_pb_varint(&p, end, &e.v) < 0) {
			k8s_err(d->err, "'%s': broken packed field", f->json);
			return -1;
		}
		if (json_array_append_new(a, dec_elem(d, f, &e, 0)) < 0)
			return -1;
	}
	return 0;
}

/* A map's entries (messages {key = 1, value = 2}) as an object, sorted. */
static json_t *dec_map(struct dec *d, const struct k8s_field *f,
		       const struct k8s_wire *ws, size_t n, uint32_t idx,
		       int depth)
{
	json_t *m = json_object(), *sorted = NULL;
	struct k8s_map_key *keys = NULL;
	const char *key;
	size_t klen;
	json_t *val;
	size_t i, nk = 0;

	if (!m)
		return NULL;
	for (i = 0; i < n; i++) {
		const uint8_t *p, *end;
		struct k8s_wire kw = {0}, vw = {0}, w;
		bool have_v = false;
		json_t *k, *v;

		if (ws[i].field != idx)
			continue;
		p = ws[i].p;
		end = p + ws[i].len;
		while (p < end) {
			uint64_t num;

			memset(&w, 0, sizeof(w));
			if (k8s_pb_field(&p, end, &num, &w) < 0) {
				k8s_err(d->err, "'%s': broken map entry",
					f->json);
				goto bad;
			}
			if (num == 1 && w.wt == 2) {
				kw = w;
			} else if (num == 2 &&
				   wire_ok(&(struct k8s_field){.type = f->type},
					   w.wt)) {
				vw = w;
				have_v = true;
			} else if (num == 1 || num == 2) {
				k8s_err(d->err,
					"'%s': map entry's wire type %d",
					f->json, w.wt);
				goto bad;
			} else {
				(*d->unknown)++;
			}
		}
		if (kw.len && memchr(kw.p, '\0', kw.len)) {
			/* no text can name it: JSON's and YAML's readers refuse */
			k8s_err(d->err, "'%s': a map key with a NUL byte",
				f->json);
			goto bad;
		}
		k = dec_string(kw.p, kw.len);
		if (f->type == K8S_T_BYTES && !have_v)
			v = json_string("");
		else
			v = dec_elem(d, f, have_v ? &vw : NULL, depth);
		if (!k || !v ||
		    json_object_setn_new(m, json_string_value(k),
					 json_string_length(k), v) < 0) {
			json_decref(k);
			goto bad;
		}
		json_decref(k);
	}
	keys = malloc((json_object_size(m) + 1) * sizeof(*keys));
	sorted = json_object();
	if (!keys || !sorted)
		goto bad;
	json_object_keylen_foreach(m, key, klen, val) keys[nk++] =
	    (struct k8s_map_key){key, klen, val};
	qsort(keys, nk, sizeof(*keys), k8s_map_key_cmp);
	for (i = 0; i < nk; i++)
		if (json_object_setn(sorted, keys[i].key, keys[i].len,
				     keys[i].val) < 0)
			goto bad;
	free(keys);
	json_decref(m);
	return sorted;
bad:
	free(keys);
	json_decref(sorted);
	json_decref(m);
	return NULL;
}

static bool is_empty(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
	case JSON_FALSE:
		return true;
	case JSON_STRING:
		return json_string_length(v) == 0;
	case JSON_INTEGER:
		return json_integer_value(v) == 0;
	case JSON_ARRAY:
		return json_array_size(v) == 0;
	case JSON_OBJECT:
		return json_object_size(v) == 0;
	default:
		return false;
	}
}

/* Whether Go's omitempty can drop a field of @f's shape (not a struct). */
static bool omittable(const struct k8s_field *f)
{
	if (!(f->flags & K8S_F_OMITEMPTY))
		return false;
	if (f->flags & (K8S_F_POINTER | K8S_F_REPEATED | K8S_F_MAP))
		return true;
	return f->type <= K8S_T_BYTES;
}

static json_t *dec_field(struct dec *d, const struct k8s_field *f,
			 const struct k8s_wire *ws, size_t n, uint32_t idx,
			 int depth)
{
	const struct k8s_wire *last = NULL;
	json_t *a;
	size_t i;

	if (f->flags & K8S_F_MAP) {
		for (i = 0; i < n && ws[i].field != idx; i++)
			;
		return i == n ? json_null() : dec_map(d, f, ws, n, idx, depth);
	}
	if (f->flags & K8S_F_REPEATED) {
		a = json_array();
		for (i = 0; a && i < n; i++) {
			if (ws[i].field != idx)
				continue;
			if (ws[i].wt == 2 && is_varint_type(f->type)) {
				if (dec_packed(d, f, &ws[i], a) < 0)
					goto bad;
			} else if (json_array_append_new(
				       a, dec_elem(d, f, &ws[i], depth)) < 0) {
				goto bad;
			}
		}
		if (a && json_array_size(a) == 0) {
			json_decref(a);
			return json_null();
		}
		return a;
	bad:
		json_decref(a);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (ws[i].field == idx)
			last = &ws[i];
	if (!last && (f->flags & K8S_F_POINTER))
		return json_null();
	return dec_elem(d, f, last, depth);
}

static bool present(const struct k8s_wire *ws, size_t n, uint32_t idx)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ws[i].field == idx)
			return true;
	return false;
}

static const char typemeta[] = "k8s.io/apimachinery/pkg/apis/meta/v1.TypeMeta";

/*
 * Message @mi from @p (@len bytes; NULL for its zero value) as an object,
 * its fields added to @into when not NULL (an inline struct).
 */
static json_t *dec_message(struct dec *d, int mi, const uint8_t *p, size_t len,
			   int depth, json_t *into)
{
	const struct k8s_message *m = &k8s_messages[mi];
	json_t *obj = into ? into : json_object();
	struct k8s_wire *ws = NULL;
	size_t n = 0;
	uint32_t i;

	if (!obj)
		return NULL;
	if (depth > K8S_MAX_DEPTH) {
		k8s_err(d->err, "'%s': nested too deep", m->name);
		goto bad;
	}
	if (len && scan(d, mi, p, len, &ws, &n) < 0)
		goto bad;
	for (i = 0; i < m->nfields; i++) {
		const struct k8s_field *f = &k8s_fields[m->first + i];
		json_t *v;

		if ((f->flags & K8S_F_INLINE) && f->number == 0 && depth == 0 &&
		    !strcmp(k8s_messages[f->msg].name, typemeta)) {
			/* the kind's TypeMeta: the envelope's */
			if (d->kind[0] &&
			    json_object_set_new(obj, "kind",
						json_string(d->kind)) < 0)
				goto bad;
			if (d->api_version[0] &&
			    json_object_set_new(obj, "apiVersion",
						json_string(d->api_version)) <
				0)
				goto bad;
			continue;
		}
		if (f->flags & K8S_F_INLINE) {
			const struct k8s_wire *last = NULL;
			size_t k;

			for (k = 0; k < n; k++)
				if (ws[k].field == i)
					last = &ws[k];
			if (!dec_message(d, f->msg, last ? last->p : NULL,
					 last ? last->len : 0, depth + 1, obj))
				goto bad;
			continue;
		}
		v = dec_field(d, f, ws, f->number ? n : 0, i, depth);
		if (!v)
			goto bad;
		if (omittable(f) && ((f->flags & K8S_F_POINTER)
					 ? !present(ws, f->number ? n : 0, i)
					 : is_empty(v))) {
			json_decref(v);
			continue;
		}
		if (json_object_set_new(obj, f->json, v) < 0)
			goto bad;
	}
	free(ws);
	return obj;
bad:
	free(ws);
	if (!into)
		json_decref(obj);
	return NULL;
}

json_t *k8s_pb_decode(int msg, const uint8_t *raw, size_t len,
		      const char *api_version, const char *kind,
		      size_t *unknown, struct k8s_error *err)
{
	struct dec d = {
	    .unknown = unknown,
	    .err = err,
	    .api_version = api_version,
	    .kind = kind,
	};

	*unknown = 0;
	return dec_message(&d, msg, raw, len, 0, NULL);
}
