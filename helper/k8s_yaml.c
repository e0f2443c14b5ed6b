/*
 * k8s_yaml.c - a jansson tree as sigs.k8s.io/yaml writes it, and YAML read
 * back into one, on libyaml
 *
 * sigs.k8s.io/yaml writes an object as JSON, reads that JSON back as YAML
 * into Go maps and writes those with its fork of go-yaml v2, a port of
 * libyaml's emitter.  So this file drives libyaml's own emitter (two
 * spaces, 80 columns, Unicode as is) with the choices go-yaml makes above
 * it: keys in go-yaml's order (letters before digits, runs of digits by
 * value), a string plain unless YAML would read it as something else (then
 * double-quoted), or with a newline (then literal), and floats as
 * strconv's 'g'.  Reading goes through libyaml's parser and YAML 1.1's
 * plain scalars (yes/no, 0x1f, 1_000, .inf) as go-yaml v2 resolves them.
 *
 * What it cannot do: anchors and aliases, tags other than !!str, and more
 * than one document are refused; a timestamp stays a string.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "k8s_i.h"

/* go-yaml v2's resolve(): what a plain scalar @s would read as. */
enum resolved {
	R_STR,
	R_NULL,
	R_BOOL,
	R_INT,
	R_FLOAT,
	R_TIMESTAMP,
};

/* clang-format off */
static const char *const yes[] = {
	"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE",
	"on", "On", "ON", NULL,
};
static const char *const no[] = {
	"n", "N", "no", "No", "NO", "false", "False", "FALSE",
	"off", "Off", "OFF", NULL,
};
static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const floats[] = {
	".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
	"+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", NULL,
};
/* clang-format on */

static bool in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return true;
	return false;
}

static bool all_digits(const char *s, const char *end, int base)
{
	if (s == end)
		return false;
	for (; s < end; s++) {
		int d = *s >= '0' && *s <= '9'	 ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : 99;

		if (d >= base)
			return false;
	}
	return true;
}

/* strconv.ParseInt(s, 0, 64) or ParseUint's syntax (range not checked). */
static bool go_int_syntax(const char *s, bool sign)
{
	const char *end = s + strlen(s);

	if (sign && (*s == '+' || *s == '-'))
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return all_digits(s + 2, end, 16);
	if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
		return all_digits(s + 2, end, 8);
	if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
		return all_digits(s + 2, end, 2);
	if (s[0] == '0' && s[1])
		return all_digits(s + 1, end, 8);
	return all_digits(s, end, 10);
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_float_syntax(const char *s)
{
	const char *p = s;
	bool lead = false;

	if (*p == '+' || *p == '-')
		p++;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	} else {
		while (*p >= '0' && *p <= '9') {
			p++;
			lead = true;
		}
		if (!lead)
			return false;
		if (*p == '.')
			for (p++; *p >= '0' && *p <= '9'; p++)
				;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

static int num(const char **p, int min, int max)
{
	int n = 0, v = 0;

	while (**p >= '0' && **p <= '9' && n < max) {
		v = v * 10 + (*(*p)++ - '0');
		n++;
	}
	return n < min ? -1 : v;
}

/* go-yaml v2's parseTimestamp(): its four layouts, dates checked. */
static bool timestamp_syntax(const char *s)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31};
	const char *p = s;
	int y, m, d, h, mi, se;
	char sep;

	y = num(&p, 4, 4);
	if (y < 0 || *p++ != '-' || (m = num(&p, 1, 2)) < 0 || *p++ != '-' ||
	    (d = num(&p, 1, 2)) < 0)
		return false;
	if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1] ||
	    (m == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))))
		return false;
	if (*p == '\0')
		return true;
	sep = *p++;
	if (sep != 'T' && sep != 't' && sep != ' ')
		return false;
	if ((h = num(&p, 1, 2)) < 0 || *p++ != ':' ||
	    (mi = num(&p, 1, 2)) < 0 || *p++ != ':' ||
	    (se = num(&p, 1, 2)) < 0 || h > 23 || mi > 59 || se > 59)
		return false;
	if (*p == '.') {
		p++;
		if (num(&p, 1, 9) < 0)
			return false;
		while (*p >= '0' && *p <= '9')
			return false;
	}
	if (sep == ' ')
		return *p == '\0';
	if (*p == 'Z')
		return p[1] == '\0';
	if (*p != '+' && *p != '-')
		return false;
	p++;
	if (num(&p, 2, 2) < 0 || *p++ != ':' || num(&p, 2, 2) < 0)
		return false;
	return *p == '\0';
}

static enum resolved resolve(const char *s)
{
	char c = s[0], plain[128];
	size_t i, n = 0;

	if (in_list(nulls, s))
		return R_NULL;
	if (strchr("yYnNtTfFoO~", c) && c) {
		if (in_list(yes, s) || in_list(no, s))
			return R_BOOL;
		return R_STR;
	}
	if (c == '.') {
		char *end;

		if (in_list(floats, s))
			return R_FLOAT;
		/* ParseFloat: a digit must follow somewhere, no inf/nan */
		if (strspn(s, ".0123456789eE+-") != strlen(s))
			return R_STR;
		strtod(s, &end);
		return *end == '\0' && end != s ? R_FLOAT : R_STR;
	}
	if (c != '+' && c != '-' && (c < '0' || c > '9'))
		return R_STR;
	if (in_list(floats, s))
		return R_FLOAT;
	if (timestamp_syntax(s))
		return R_TIMESTAMP;
	for (i = 0; s[i] && n < sizeof(plain) - 1; i++)
		if (s[i] != '_')
			plain[n++] = s[i];
	if (s[i])
		return R_STR;
	plain[n] = '\0';
	if (go_int_syntax(plain, true))
		return R_INT;
	if (yaml_float_syntax(plain))
		return R_FLOAT;
	if (!strncmp(plain, "-0b", 3) && all_digits(plain + 3, plain + n, 2))
		return R_INT;
	return R_STR;
}

/* isBase60Float: ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
static bool base60(const char *s)
{
	const char *p = s;
	int groups = 0;

	if (*p == '+' || *p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	while ((*p >= '0' && *p <= '9') || *p == '_')
		p++;
	while (*p == ':') {
		p++;
		if (*p >= '0' && *p <= '5' && p[1] >= '0' && p[1] <= '9')
			p += 2;
		else if (*p >= '0' && *p <= '9')
			p++;
		else
			return false;
		groups++;
	}
	if (!groups)
		return false;
	if (*p == '.')
		for (p++; (*p >= '0' && *p <= '9') || *p == '_'; p++)
			;
	return *p == '\0';
}

/* Writing. */

struct ywriter {
	yaml_emitter_t em;
	struct k8s_buf *b;
	bool failed;
};

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	struct k8s_buf *b = data;

	k8s_buf_add(b, buffer, size);
	return !b->err;
}

static void emit(struct ywriter *w, yaml_event_t *ev, int ok)
{
	if (w->failed)
		return;
	if (!ok || !yaml_emitter_emit(&w->em, ev))
		w->failed = true;
}

static void emit_scalar(struct ywriter *w, const char *s, size_t len,
			yaml_scalar_style_t style)
{
	yaml_event_t ev;

	emit(w, &ev,
	     yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
					  (int)len, 1, 1, style));
}

static void emit_string(struct ywriter *w, const char *s, size_t len)
{
	yaml_scalar_style_t style;

	if (memchr(s, '\n', len))
		style = YAML_LITERAL_SCALAR_STYLE;
	else if (memchr(s, '\0', len) || resolve(s) != R_STR || base60(s))
		style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	else
		style = YAML_PLAIN_SCALAR_STYLE;
	emit_scalar(w, s, len, style);
}

/*
 * strconv.FormatFloat(f, 'g', -1, 64) as go-yaml writes a float, or with
 * 32 bits (@f32) as sigs.k8s.io/yaml turns a float into a string.
 */
void k8s_yaml_float(double f, bool f32, char *out, size_t size)
{
	char s[40], *e, digits[24];
	int prec, exp, n = 0, i;
	size_t o = 0;

	if (isnan(f)) {
		snprintf(out, size, ".nan");
		return;
	}
	if (isinf(f)) {
		snprintf(out, size, f < 0 ? "-.inf" : ".inf");
		return;
	}
	if (f == 0) {
		snprintf(out, size, signbit(f) ? "-0" : "0");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(s, sizeof(s), "%.*e", prec - 1, f);
		if (f32 ? strtof(s, NULL) == (float)f : strtod(s, NULL) == f)
			break;
	}
	e = strchr(s, 'e');
	exp = (int)strtol(e + 1, NULL, 10);
	for (i = 0; s + i < e; i++)
		if (s[i] >= '0' && s[i] <= '9')
			digits[n++] = s[i];
	while (n > 1 && digits[n - 1] == '0')
		n--;
	if (f < 0)
		out[o++] = '-';
	if (exp < -4 || exp >= 6) {
		/* shortest 'g' decides as with a precision of 6 */
		out[o++] = digits[0];
		if (n > 1) {
			out[o++] = '.';
			for (i = 1; i < n; i++)
				out[o++] = digits[i];
		}
		snprintf(out + o, size - o, "e%c%02d", exp < 0 ? '-' : '+',
			 exp < 0 ? -exp : exp);
		return;
	}
	if (exp < 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (i = -1; i > exp; i--)
			out[o++] = '0';
		for (i = 0; i < n; i++)
			out[o++] = digits[i];
	} else {
		for (i = 0; i <= exp; i++)
			out[o++] = i < n ? digits[i] : '0';
		if (n > exp + 1) {
			out[o++] = '.';
			for (i = exp + 1; i < n; i++)
				out[o++] = digits[i];
		}
	}
	out[o] = '\0';
}

struct ykey {
	const char *key;
	size_t len;
	json_t *val;
};

/* The next rune of @s at *@i (bytes), Unicode code point or the byte. */
static uint32_t rune(const char *s, size_t len, size_t *i)
{
	const unsigned char *p = (const unsigned char *)s + *i;
	uint32_t c = p[0];
	size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4, k;

	if (*i + n > len)
		n = 1;
	if (n > 1) {
		c &= 0x3f >> (n - 1);
		for (k = 1; k < n; k++)
			c = c << 6 | (p[k] & 0x3f);
	}
	*i += n;
	return c;
}

static bool is_letter(uint32_t r)
{
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') ||
	       (r >= 0xc0 && r != 0xd7 && r != 0xf7);
}

static bool is_digit(uint32_t r)
{
	return r >= '0' && r <= '9';
}

/* go-yaml v2's keyList.Less on two string keys, rune by rune. */
static int key_cmp(const void *pa, const void *pb)
{
	const struct ykey *ka = pa, *kb = pb;
	uint32_t ar[256], br[256];
	size_t na = 0, nb = 0, i = 0, j;

	while (i < ka->len && na < 256)
		ar[na++] = rune(ka->key, ka->len, &i);
	i = 0;
	while (i < kb->len && nb < 256)
		br[nb++] = rune(kb->key, kb->len, &i);
	for (i = 0; i < na && i < nb; i++) {
		bool al, bl;
		int64_t an = 0, bn = 0;
		size_t ai, bi;

		if (ar[i] == br[i])
			continue;
		al = is_letter(ar[i]);
		bl = is_letter(br[i]);
		if (al && bl)
			return ar[i] < br[i] ? -1 : 1;
		if (al || bl)
			return bl ? -1 : 1;
		if (ar[i] == '0' || br[i] == '0') {
			for (j = i; j-- > 0 && is_digit(ar[j]);) {
				if (ar[j] != '0') {
					an = 1;
					bn = 1;
					break;
				}
			}
		}
		for (ai = i; ai < na && is_digit(ar[ai]); ai++)
			an = an * 10 + (int64_t)(ar[ai] - '0');
		for (bi = i; bi < nb && is_digit(br[bi]); bi++)
			bn = bn * 10 + (int64_t)(br[bi] - '0');
		if (an != bn)
			return an < bn ? -1 : 1;
		if (ai != bi)
			return ai < bi ? -1 : 1;
		return ar[i] < br[i] ? -1 : 1;
	}
	return na < nb ? -1 : na > nb;
}

static void write_value(struct ywriter *w, json_t *v)
{
	yaml_event_t ev;
	char num[64];

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		struct ykey *keys;
		const char *key;
		size_t klen, n = 0, i;
		json_t *val;

		keys = malloc((json_object_size(v) + 1) * sizeof(*keys));
		if (!keys) {
			w->failed = true;
			return;
		}
		json_object_keylen_foreach(v, key, klen, val) keys[n++] =
		    (struct ykey){key, klen, val};
		qsort(keys, n, sizeof(*keys), key_cmp);
		emit(w, &ev,
		     yaml_mapping_start_event_initialize(
			 &ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
		for (i = 0; i < n; i++) {
			emit_string(w, keys[i].key, keys[i].len);
			write_value(w, keys[i].val);
		}
		emit(w, &ev, yaml_mapping_end_event_initialize(&ev));
		free(keys);
		return;
	}
	case JSON_ARRAY: {
		size_t i;

		emit(w, &ev,
		     yaml_sequence_start_event_initialize(
			 &ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE));
		for (i = 0; i < json_array_size(v); i++)
			write_value(w, json_array_get(v, i));
		emit(w, &ev, yaml_sequence_end_event_initialize(&ev));
		return;
	}
	case JSON_STRING:
		emit_string(w, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		emit_scalar(w, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
		return;
	case JSON_REAL:
		k8s_yaml_float(json_real_value(v), false, num, sizeof(num));
		emit_scalar(w, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
		return;
	case JSON_TRUE:
		emit_scalar(w, "true", 4, YAML_PLAIN_SCALAR_STYLE);
		return;
	case JSON_FALSE:
		emit_scalar(w, "false", 5, YAML_PLAIN_SCALAR_STYLE);
		return;
	case JSON_NULL:
		emit_scalar(w, "null", 4, YAML_PLAIN_SCALAR_STYLE);
		return;
	}
}

int k8s_yaml_write(struct k8s_buf *b, json_t *v)
{
	struct ywriter w = {.b = b};
	yaml_event_t ev;

	if (!yaml_emitter_initialize(&w.em))
		return -ENOMEM;
	yaml_emitter_set_output(&w.em, write_handler, b);
	yaml_emitter_set_unicode(&w.em, 1);
	yaml_emitter_set_width(&w.em, 80);
	yaml_emitter_set_indent(&w.em, 2);
	emit(&w, &ev,
	     yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	emit(&w, &ev,
	     yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	write_value(&w, v);
	emit(&w, &ev, yaml_document_end_event_initialize(&ev, 1));
	emit(&w, &ev, yaml_stream_end_event_initialize(&ev));
	if (!w.failed && !yaml_emitter_flush(&w.em))
		w.failed = true;
	yaml_emitter_delete(&w.em);
	return w.failed || b->err ? -ENOMEM : 0;
}

/* Reading. */

struct yreader {
	yaml_parser_t p;
	struct k8s_error *err;
};

static json_t *read_fail(struct yreader *r, const yaml_event_t *ev,
			 const char *what)
{
	k8s_err(r->err, "line %zu: %s", ev->start_mark.line + 1, what);
	return NULL;
}

static json_t *plain_scalar(const char *s, size_t len)
{
	char *end, plain[128];
	size_t i, n = 0;

	if (strlen(s) != len)
		return json_stringn(s, len);
	switch (resolve(s)) {
	case R_NULL:
		return json_null();
	case R_BOOL:
		return json_boolean(in_list(yes, s));
	case R_INT: {
		long long v;
		int base = 10;
		bool neg = false;
		const char *p = plain;

		for (i = 0; s[i]; i++)
			if (s[i] != '_')
				plain[n++] = s[i];
		plain[n] = '\0';
		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
			base = 16, p += 2;
		else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
			base = 8, p += 2;
		else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
			base = 2, p += 2;
		else if (p[0] == '0' && p[1])
			base = 8, p++;
		errno = 0;
		v = strtoll(p, &end, base);
		if (errno || *end)
			return json_real(strtod(plain, NULL));
		return json_integer(neg ? -v : v);
	}
	case R_FLOAT:
		if (strstr(s, "nan") || strstr(s, "NaN") || strstr(s, "NAN") ||
		    strstr(s, "inf") || strstr(s, "Inf") || strstr(s, "INF"))
			return json_stringn(s, len); /* JSON holds none */
		for (i = 0; s[i]; i++)
			if (s[i] != '_' && n < sizeof(plain) - 1)
				plain[n++] = s[i];
		plain[n] = '\0';
		return json_real(strtod(plain, NULL));
	default:
		return json_stringn(s, len);
	}
}

static json_t *read_node(struct yreader *r, yaml_event_t *ev, int depth);

/*
 * A key as sigs.k8s.io/yaml makes it a JSON key: the string go-yaml read,
 * so a plain on is "true", 0x10 is "16" and ~ is "null".
 */
static json_t *key_string(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	char num[64];
	json_t *v;

	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
	    ev->data.scalar.tag)
		return json_stringn(s, len);
	v = plain_scalar(s, len);
	if (!v)
		return NULL;
	switch (json_typeof(v)) {
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		snprintf(num, sizeof(num), "%s",
			 json_is_true(v)    ? "true"
			 : json_is_false(v) ? "false"
					    : "null");
		break;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		break;
	case JSON_REAL:
		k8s_yaml_float(json_real_value(v), false, num, sizeof(num));
		break;
	default:
		return v;
	}
	json_decref(v);
	return json_string(num);
}

static json_t *read_collection(struct yreader *r, yaml_event_t *start,
			       int depth)
{
	bool map = start->type == YAML_MAPPING_START_EVENT;
	json_t *c = map ? json_object() : json_array();

	if (!c)
		return NULL;
	for (;;) {
		yaml_event_t ev;
		json_t *k = NULL, *v;

		if (!yaml_parser_parse(&r->p, &ev)) {
			k8s_err(r->err, "line %zu: %s",
				r->p.problem_mark.line + 1,
				r->p.problem ? r->p.problem : "bad YAML");
			goto bad;
		}
		if (ev.type == YAML_MAPPING_END_EVENT ||
		    ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return c;
		}
		if (map) {
			if (ev.type != YAML_SCALAR_EVENT) {
				read_fail(r, &ev, "a key must be a scalar");
				yaml_event_delete(&ev);
				goto bad;
			}
			k = key_string(&ev);
			if (!k) {
				read_fail(r, &ev, "a key is no UTF-8");
				yaml_event_delete(&ev);
				goto bad;
			}
			if (json_object_getn(c, json_string_value(k),
					     json_string_length(k))) {
				read_fail(r, &ev, "a key twice");
				yaml_event_delete(&ev);
				json_decref(k);
				goto bad;
			}
			yaml_event_delete(&ev);
			if (!yaml_parser_parse(&r->p, &ev)) {
				k8s_err(r->err, "line %zu: %s",
					r->p.problem_mark.line + 1,
					r->p.problem ? r->p.problem
						     : "bad YAML");
				json_decref(k);
				goto bad;
			}
		}
		v = read_node(r, &ev, depth + 1);
		yaml_event_delete(&ev);
		if (!v) {
			json_decref(k);
			goto bad;
		}
		if (map ? json_object_setn_new(c, json_string_value(k),
					       json_string_length(k), v)
			: json_array_append_new(c, v)) {
			json_decref(k);
			goto bad;
		}
		json_decref(k);
	}
bad:
	json_decref(c);
	return NULL;
}

/* The node that event @ev starts (@ev stays the caller's). */
static json_t *read_node(struct yreader *r, yaml_event_t *ev, int depth)
{
	const char *tag;
	json_t *s;

	if (depth > K8S_MAX_DEPTH)
		return read_fail(r, ev, "nested too deep");
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return read_fail(r, ev, "aliases are not supported");
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			return read_fail(r, ev, "anchors are not supported");
		tag = (const char *)ev->data.scalar.tag;
		if (tag && strcmp(tag, "tag:yaml.org,2002:str"))
			return read_fail(r, ev,
					 "tags other than !!str are "
					 "not supported");
		if (tag || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
			s = json_stringn((const char *)ev->data.scalar.value,
					 ev->data.scalar.length);
		else
			s = plain_scalar((const char *)ev->data.scalar.value,
					 ev->data.scalar.length);
		if (!s)
			return read_fail(r, ev, "a scalar is no UTF-8");
		return s;
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		if ((ev->type == YAML_MAPPING_START_EVENT
			 ? ev->data.mapping_start.anchor
			 : ev->data.sequence_start.anchor))
			return read_fail(r, ev, "anchors are not supported");
		if ((ev->type == YAML_MAPPING_START_EVENT
			 ? ev->data.mapping_start.tag
			 : ev->data.sequence_start.tag))
			return read_fail(r, ev, "tags are not supported");
		return read_collection(r, ev, depth);
	default:
		return read_fail(r, ev, "unexpected YAML");
	}
}

json_t *k8s_yaml_parse(const char *text, size_t len, struct k8s_error *err)
{
	struct yreader r = {.err = err};
	json_t *root = NULL;
	int stage = 0;

	if (!yaml_parser_initialize(&r.p)) {
		k8s_err(err, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
	for (;;) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&r.p, &ev)) {
			k8s_err(err, "line %zu: %s", r.p.problem_mark.line + 1,
				r.p.problem ? r.p.problem : "bad YAML");
			goto bad;
		}
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT) {
			if (stage++) {
				read_fail(&r, &ev, "more than one document");
				yaml_event_delete(&ev);
				goto bad;
			}
		} else if (ev.type != YAML_STREAM_START_EVENT &&
			   ev.type != YAML_DOCUMENT_END_EVENT) {
			root = read_node(&r, &ev, 0);
			if (!root) {
				yaml_event_delete(&ev);
				goto bad;
			}
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&r.p);
	if (!root)
		k8s_err(err, "an empty document");
	return root;
bad:
	json_decref(root);
	yaml_parser_delete(&r.p);
	return NULL;
}
