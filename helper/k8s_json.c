/*
 * k8s_json.c - a jansson tree as Go's encoding/json writes it
 *
 * The k8s codec's JSON side: json.MarshalIndent(v, "", "  ") and
 * json.Marshal(v), byte for byte, for trees whose objects are in the
 * order Go writes them (k8s_pb.c builds them so): Go's string escapes
 * (<, >, & and U+2028/U+2029 as \u escapes, \b \f \n \r \t short) and its
 * float64 format (shortest digits; exponent below 1e-6 and from 1e21).
 *
 * What it cannot do: NaN and infinities, which Go refuses and jansson
 * never holds.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_i.h"

static void put_string(struct k8s_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, start = 0;

	k8s_buf_addc(b, '"');
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[7];

		if (c == 0xe2 && i + 2 < len &&
		    (unsigned char)s[i + 1] == 0x80 &&
		    ((unsigned char)s[i + 2] == 0xa8 ||
		     (unsigned char)s[i + 2] == 0xa9)) {
			k8s_buf_add(b, s + start, i - start);
			k8s_buf_adds(b, (unsigned char)s[i + 2] == 0xa8
					    ? "\\u2028"
					    : "\\u2029");
			i += 2;
			start = i + 1;
			continue;
		}
		if (c >= 0x20 && c != '"' && c != '\\' && c != '<' &&
		    c != '>' && c != '&')
			continue;
		switch (c) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		default:
			u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0';
			u[4] = hex[c >> 4], u[5] = hex[c & 15], u[6] = '\0';
			esc = u;
		}
		k8s_buf_add(b, s + start, i - start);
		k8s_buf_adds(b, esc);
		start = i + 1;
	}
	k8s_buf_add(b, s + start, len - start);
	k8s_buf_addc(b, '"');
}

/*
 * The shortest decimal digits that read back as @f, as strconv does:
 * @digits (no point, no sign) and the decimal exponent @exp of their
 * first digit (d.ddd x 10^exp).
 */
static void shortest(double f, char *digits, size_t size, int *exp)
{
	char s[40];
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(s, sizeof(s), "%.*e", prec - 1, f);
		if (strtod(s, NULL) == f)
			break;
	}
	{
		char *e = strchr(s, 'e'), *o = digits;
		const char *p;

		*exp = (int)strtol(e + 1, NULL, 10);
		for (p = s; p < e && (size_t)(o - digits) < size - 1; p++)
			if (*p >= '0' && *p <= '9')
				*o++ = *p;
		*o = '\0';
	}
	/* trailing zeros are not digits strconv would keep */
	{
		size_t n = strlen(digits);

		while (n > 1 && digits[n - 1] == '0')
			digits[--n] = '\0';
	}
}

/* strconv.FormatFloat(f, 'e' or 'f', -1, 64). */
static void put_float_fmt(struct k8s_buf *b, double f, char fmt)
{
	char d[32], s[400];
	int exp, n, i;
	size_t o = 0;

	if (f == 0) {
		k8s_buf_adds(b, signbit(f) ? "-0" : "0");
		return;
	}
	if (f < 0) {
		k8s_buf_addc(b, '-');
		f = -f;
	}
	shortest(f, d, sizeof(d), &exp);
	n = (int)strlen(d);
	if (fmt == 'e') {
		s[o++] = d[0];
		if (n > 1) {
			s[o++] = '.';
			for (i = 1; i < n; i++)
				s[o++] = d[i];
		}
		o +=
		    (size_t)snprintf(s + o, sizeof(s) - o, "e%c%02d",
				     exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		k8s_buf_add(b, s, o);
		return;
	}
	if (exp < 0) {
		s[o++] = '0';
		s[o++] = '.';
		for (i = -1; i > exp; i--)
			s[o++] = '0';
		for (i = 0; i < n; i++)
			s[o++] = d[i];
	} else {
		for (i = 0; i <= exp; i++)
			s[o++] = i < n ? d[i] : '0';
		if (n > exp + 1) {
			s[o++] = '.';
			for (i = exp + 1; i < n; i++)
				s[o++] = d[i];
		}
	}
	k8s_buf_add(b, s, o);
}

/* encoding/json's float64: 'f', or 'e' with e-07 as e-7. */
static void put_real(struct k8s_buf *b, double f)
{
	double a = fabs(f);
	size_t start = b->len;

	if (a != 0 && (a < 1e-6 || a >= 1e21)) {
		put_float_fmt(b, f, 'e');
		if (!b->err && b->len - start >= 4 && b->p[b->len - 4] == 'e' &&
		    b->p[b->len - 3] == '-' && b->p[b->len - 2] == '0') {
			b->p[b->len - 2] = b->p[b->len - 1];
			b->len--;
		}
		return;
	}
	put_float_fmt(b, f, 'f');
}

static void indent(struct k8s_buf *b, int depth)
{
	int i;

	k8s_buf_addc(b, '\n');
	for (i = 0; i < depth; i++)
		k8s_buf_add(b, "  ", 2);
}

static void put_value(struct k8s_buf *b, json_t *v, int depth, bool pretty)
{
	char num[32];

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *key;
		size_t klen, n = 0;
		json_t *val;

		if (json_object_size(v) == 0) {
			k8s_buf_add(b, "{}", 2);
			return;
		}
		k8s_buf_addc(b, '{');
		json_object_keylen_foreach(v, key, klen, val)
		{
			if (n++)
				k8s_buf_addc(b, ',');
			if (pretty)
				indent(b, depth + 1);
			put_string(b, key, klen);
			k8s_buf_adds(b, pretty ? ": " : ":");
			put_value(b, val, depth + 1, pretty);
		}
		if (pretty)
			indent(b, depth);
		k8s_buf_addc(b, '}');
		return;
	}
	case JSON_ARRAY: {
		size_t i;

		if (json_array_size(v) == 0) {
			k8s_buf_add(b, "[]", 2);
			return;
		}
		k8s_buf_addc(b, '[');
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				k8s_buf_addc(b, ',');
			if (pretty)
				indent(b, depth + 1);
			put_value(b, json_array_get(v, i), depth + 1, pretty);
		}
		if (pretty)
			indent(b, depth);
		k8s_buf_addc(b, ']');
		return;
	}
	case JSON_STRING:
		put_string(b, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		k8s_buf_adds(b, num);
		return;
	case JSON_REAL:
		put_real(b, json_real_value(v));
		return;
	case JSON_TRUE:
		k8s_buf_adds(b, "true");
		return;
	case JSON_FALSE:
		k8s_buf_adds(b, "false");
		return;
	case JSON_NULL:
		k8s_buf_adds(b, "null");
		return;
	}
}

void k8s_json_write(struct k8s_buf *b, json_t *v)
{
	put_value(b, v, 0, true);
}

void k8s_json_write_compact(struct k8s_buf *b, json_t *v)
{
	put_value(b, v, 0, false);
}
