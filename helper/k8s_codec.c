/*
 * k8s_codec.c - the k8s codec's public side: the envelope, the kinds
 *
 * A stored object is "k8s\0" then runtime.Unknown {typeMeta = 1
 * {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3, contentType =
 * 4}.  This file reads and writes that envelope, finds the kind's message
 * in the generated tables and hands the rest to k8s_pb.c (protobuf),
 * k8s_json.c and k8s_yaml.c (text).  Built without the tables
 * (-Dk8s_api unset) it answers -ENOTSUP to everything.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"

static const char magic[4] = {'k', '8', 's', '\0'};

bool k8s_is_object(const void *val, size_t len)
{
	return len >= sizeof(magic) && !memcmp(val, magic, sizeof(magic));
}

#if !ETCDFS_K8S_SCHEMA

bool k8s_built_in(void)
{
	return false;
}

const char *k8s_schema_version(void)
{
	return "";
}

static int not_built_in(struct k8s_error *err)
{
	if (err)
		snprintf(err->message, sizeof(err->message),
			 "the k8s codec is not built in (meson -Dk8s_api)");
	return -ENOTSUP;
}

int k8s_decode(const void *val, size_t len, enum k8s_format fmt, char **out,
	       size_t *out_len, struct k8s_error *err)
{
	return not_built_in(err);
}

int k8s_encode(const char *text, size_t len, enum k8s_format fmt,
	       const void *orig, size_t orig_len, void **out, size_t *out_len,
	       struct k8s_error *err)
{
	return not_built_in(err);
}

#else /* ETCDFS_K8S_SCHEMA */

#include "k8s_i.h"
#include "k8s_schema.h"

bool k8s_built_in(void)
{
	return true;
}

const char *k8s_schema_version(void)
{
	return k8s_schema_release;
}

static int cmp_kind(const char *av, size_t avlen, const char *kind, size_t klen,
		    const struct k8s_kind *k)
{
	size_t l = strlen(k->api_version);
	int c = memcmp(av, k->api_version, avlen < l ? avlen : l);

	if (c || avlen != l)
		return c ? c : (avlen < l ? -1 : 1);
	l = strlen(k->kind);
	c = memcmp(kind, k->kind, klen < l ? klen : l);
	if (c || klen != l)
		return c ? c : (klen < l ? -1 : 1);
	return 0;
}

/* The message of apiVersion @av and kind @kind, or -1. */
static int find_kind(const char *av, size_t avlen, const char *kind,
		     size_t klen)
{
	size_t lo = 0, hi = k8s_nkinds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_kind(av, avlen, kind, klen, &k8s_kinds[mid]);

		if (c == 0)
			return k8s_kinds[mid].msg;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

struct envelope {
	const char *av, *kind;
	size_t avlen, klen;
	const uint8_t *raw;
	size_t rawlen;
	size_t encoding_len;	/* contentEncoding's: the raw bytes' */
};

/*
 * Calls @cb on each length-delimited field of the message @p..@end;
 * others are skipped.  -1 when the wire format is broken.
 */
static int rd_message(const uint8_t *p, const uint8_t *end,
		      int (*cb)(void *, uint64_t, const uint8_t *, size_t),
		      void *arg)
{
	while (p < end) {
		struct k8s_wire w = {0};
		uint64_t num;

		if (k8s_pb_field(&p, end, &num, &w) < 0)
			return -1;
		if (w.wt == 2 && cb(arg, num, w.p, w.len) < 0)
			return -1;
	}
	return 0;
}

static int typemeta_cb(void *arg, uint64_t num, const uint8_t *p, size_t n)
{
	struct envelope *e = arg;

	if (num == 1) {
		e->av = (const char *)p;
		e->avlen = n;
	} else if (num == 2) {
		e->kind = (const char *)p;
		e->klen = n;
	}
	return 0;
}

static int unknown_cb(void *arg, uint64_t num, const uint8_t *p, size_t n)
{
	struct envelope *e = arg;

	if (num == 1)
		return rd_message(p, p + n, typemeta_cb, e);
	if (num == 2) {
		e->raw = p;
		e->rawlen = n;
	}
	if (num == 3)
		e->encoding_len = n;
	return 0;
}

static int envelope_read(const void *val, size_t len, struct envelope *e,
			 struct k8s_error *err)
{
	const uint8_t *p = val;

	memset(e, 0, sizeof(*e));
	e->av = e->kind = "";
	if (!k8s_is_object(val, len)) {
		k8s_err(err, "not a protobuf object (no 'k8s\\0')");
		return -EBADMSG;
	}
	if (rd_message(p + 4, p + len, unknown_cb, e) < 0) {
		k8s_err(err, "a broken runtime.Unknown envelope");
		return -EBADMSG;
	}
	if (e->encoding_len) {
		/* the API server writes none: raw is the object's protobuf */
		k8s_err(err, "a content encoding in the envelope");
		return -EBADMSG;
	}
	if (memchr(e->av, '\0', e->avlen) || memchr(e->kind, '\0', e->klen)) {
		k8s_err(err, "a NUL in the envelope's apiVersion or kind");
		return -EBADMSG;
	}
	return 0;
}

int k8s_decode(const void *val, size_t len, enum k8s_format fmt, char **out,
	       size_t *out_len, struct k8s_error *err)
{
	struct k8s_buf b = {0};
	struct envelope e;
	char *av = NULL, *kind = NULL;
	size_t unknown;
	json_t *obj = NULL;
	int mi, ret;

	if (err)
		err->message[0] = '\0';
	ret = envelope_read(val, len, &e, err);
	if (ret < 0)
		return ret;
	mi = find_kind(e.av, e.avlen, e.kind, e.klen);
	if (mi < 0) {
		k8s_err(err, "kind '%.*s' of '%.*s' is not built in",
			(int)e.klen, e.kind, (int)e.avlen, e.av);
		return -ENOENT;
	}
	av = strndup(e.av, e.avlen);
	kind = strndup(e.kind, e.klen);
	if (!av || !kind) {
		ret = -ENOMEM;
		goto out;
	}
	obj = k8s_pb_decode(mi, e.raw, e.rawlen, av, kind, &unknown, err);
	if (!obj) {
		ret = err && err->message[0] ? -EBADMSG : -ENOMEM;
		goto out;
	}
	if (fmt == K8S_FORMAT_YAML) {
		ret = k8s_yaml_write(&b, obj);
	} else {
		k8s_json_write(&b, obj);
		k8s_buf_addc(&b, '\n');
		ret = 0;
	}
	if (!ret && b.err)
		ret = -ENOMEM;
	if (ret == 0) {
		*out = b.p;
		*out_len = b.len;
		b.p = NULL;
	}
out:
	if (ret == -ENOMEM)
		k8s_err(err, "out of memory");
	free(b.p);
	json_decref(obj);
	free(av);
	free(kind);
	return ret;
}

/* The text's apiVersion and kind: strings both. */
static int text_kind(json_t *obj, const char **av, const char **kind,
		     struct k8s_error *err)
{
	json_t *a, *k;

	if (!json_is_object(obj)) {
		k8s_err(err, "the text is no object");
		return -EINVAL;
	}
	a = json_object_get(obj, "apiVersion");
	k = json_object_get(obj, "kind");
	if (!json_is_string(a) || !json_is_string(k)) {
		k8s_err(err, "%s: a string is needed",
			json_is_string(a) ? "kind" : "apiVersion");
		return -EINVAL;
	}
	*av = json_string_value(a);
	*kind = json_string_value(k);
	return 0;
}

int k8s_encode(const char *text, size_t len, enum k8s_format fmt,
	       const void *orig, size_t orig_len, void **out, size_t *out_len,
	       struct k8s_error *err)
{
	struct k8s_buf raw = {0}, b = {0}, tm = {0};
	const char *av, *kind;
	json_error_t jerr;
	json_t *obj;
	int mi, ret;

	if (err)
		err->message[0] = '\0';
	if (fmt == K8S_FORMAT_YAML) {
		obj = k8s_yaml_parse(text, len, err);
		if (!obj)
			return err && err->message[0] ? -EINVAL : -ENOMEM;
	} else {
		obj = json_loadb(
		    text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
		if (!obj) {
			k8s_err(err, "line %d: %s", jerr.line, jerr.text);
			return -EINVAL;
		}
	}
	ret = text_kind(obj, &av, &kind, err);
	if (ret < 0)
		goto out;
	mi = find_kind(av, strlen(av), kind, strlen(kind));
	if (mi < 0) {
		k8s_err(err, "kind: '%s' of '%s' is not built in", kind, av);
		ret = -EINVAL;
		goto out;
	}
	if (orig) {
		struct envelope e;
		size_t unknown = 0;
		json_t *o;

		ret = envelope_read(orig, orig_len, &e, err);
		if (ret < 0) {
			ret = -EINVAL;
			goto out;
		}
		if (e.avlen != strlen(av) || memcmp(e.av, av, e.avlen) ||
		    e.klen != strlen(kind) || memcmp(e.kind, kind, e.klen)) {
			k8s_err(err,
				"kind: '%s' of '%s' replaces '%.*s' of "
				"'%.*s'",
				kind, av, (int)e.klen, e.kind, (int)e.avlen,
				e.av);
			ret = -EINVAL;
			goto out;
		}
		o = k8s_pb_decode(mi, e.raw, e.rawlen, "", "", &unknown, err);
		json_decref(o);
		if (unknown) {
			k8s_err(err,
				"the stored object has %zu field%s this "
				"build does not know: not replaced",
				unknown, unknown == 1 ? "" : "s");
			ret = -EPROTONOSUPPORT;
			goto out;
		}
		if (err)
			err->message[0] = '\0';
	}
	ret = k8s_pb_encode(mi, obj, fmt == K8S_FORMAT_YAML, &raw, err);
	if (ret < 0)
		goto out;
	k8s_buf_add(&b, magic, sizeof(magic));
	k8s_pb_put_len(&tm, 1, av, strlen(av));
	k8s_pb_put_len(&tm, 2, kind, strlen(kind));
	k8s_pb_put_len(&b, 1, tm.p, tm.len);
	k8s_pb_put_len(&b, 2, raw.p, raw.len);
	k8s_pb_put_len(&b, 3, "", 0);
	k8s_pb_put_len(&b, 4, "", 0);
	if (b.err || raw.err || tm.err) {
		k8s_err(err, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	*out = b.p;
	*out_len = b.len;
	b.p = NULL;
	ret = 0;
out:
	free(raw.p);
	free(tm.p);
	free(b.p);
	json_decref(obj);
	return ret;
}

#endif /* ETCDFS_K8S_SCHEMA */
