/*
 * k8s_quantity.c - resource.Quantity's canonical string, for the k8s codec
 *
 * Kubernetes parses a quantity ("1.5Gi", "500m", "2e3") wherever it reads
 * one, from protobuf or JSON, and writes it back in canonical form: no
 * fraction, a decimal exponent that is a multiple of 3 with its SI suffix
 * (or e<n>), a binary suffix only for exact multiples of 1024, and the
 * text as given when it was canonical already.  This is
 * resource.ParseQuantity() and Quantity.String() for the values that fit
 * Go's int64 fast path: at most 18 digits, nothing finer than a nano.
 *
 * What it cannot do: Go's arbitrary-precision path (more digits, or
 * fractions finer than 10^-9, which Go rounds up): such a quantity is
 * valid and goes through as written (k8s_quantity() answers 1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_i.h"

enum q_format { Q_DECIMAL_SI, Q_BINARY_SI, Q_DECIMAL_EXP };

static const struct {
	const char *s;
	int exp;
} dec_suffix[] = {
    {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},	{"k", 3},
    {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18},
};

static const char *const bin_suffix[] = {"",   "Ki", "Mi", "Gi",
					 "Ti", "Pi", "Ei"};

/* quantitySuffixer.interpret(): base 10 or 2, the exponent, the format. */
static int suffix_interpret(const char *s, size_t len, int *base, int *exp,
			    enum q_format *fmt)
{
	size_t i;

	for (i = 0; i < sizeof(dec_suffix) / sizeof(dec_suffix[0]); i++) {
		if (strlen(dec_suffix[i].s) == len &&
		    !memcmp(dec_suffix[i].s, s, len)) {
			*base = 10, *exp = dec_suffix[i].exp;
			*fmt = Q_DECIMAL_SI;
			return 0;
		}
	}
	for (i = 1; i < 7; i++) {
		if (len == 2 && !memcmp(bin_suffix[i], s, 2)) {
			*base = 2, *exp = (int)i * 10;
			*fmt = Q_BINARY_SI;
			return 0;
		}
	}
	if (len >= 2 && (s[0] == 'e' || s[0] == 'E')) {
		char tmp[16], *end;
		long v;

		if (len >= sizeof(tmp))
			return -1;
		memcpy(tmp, s + 1, len - 1);
		tmp[len - 1] = '\0';
		if (tmp[0] != '-' && tmp[0] != '+' &&
		    (tmp[0] < '0' || tmp[0] > '9'))
			return -1;
		errno = 0;
		v = strtol(tmp, &end, 10);
		if (errno || *end || v < INT32_MIN || v > INT32_MAX)
			return -1;
		*base = 10, *exp = (int)v;
		*fmt = Q_DECIMAL_EXP;
		return 0;
	}
	return -1;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* parseQuantityString(): sign, numerator, denominator, suffix. */
static int split(const char *s, size_t len, bool *positive, const char **num,
		 size_t *nlen, const char **den, size_t *dlen, const char **suf,
		 size_t *slen)
{
	size_t pos = 0, i;

	*positive = true;
	*den = "", *dlen = 0, *suf = "", *slen = 0;
	if (pos < len && (s[0] == '-' || s[0] == '+'))
		*positive = s[pos++] == '+';
	while (pos < len && s[pos] == '0')
		pos++;
	if (pos == len) {
		*num = "0", *nlen = 1;
		return 0;
	}
	for (i = pos; i < len && is_digit(s[i]); i++)
		;
	*num = s + pos, *nlen = i - pos;
	if (*nlen == 0)
		*num = "0", *nlen = 1;
	pos = i;
	if (pos < len && s[pos] == '.') {
		pos++;
		for (i = pos; i < len && is_digit(s[i]); i++)
			;
		*den = s + pos, *dlen = i - pos;
		pos = i;
	}
	*suf = s + pos;
	for (i = pos; i < len && strchr("eEinumkKMGTP", s[i]); i++)
		;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	for (; i < len; i++)
		if (!is_digit(s[i]))
			return -1;
	*slen = len - pos;
	return 0;
}

static bool mul_ok(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

static void put_i64(struct k8s_buf *b, int64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRId64, v);
	k8s_buf_adds(b, s);
}

/* 0, -EINVAL, or 1 (written nothing): past the int64 fast path. */
static int canonical(const char *s, size_t len, struct k8s_buf *out)
{
	const char *num, *den, *suf;
	size_t nlen, dlen, slen, i;
	bool positive;
	enum q_format fmt;
	int base, exp, scale, precision;
	int64_t mantissa = 1, value = 0, result, amount;
	char shifted[20];
	int times;

	if (len == 1 && s[0] == '0') {
		k8s_buf_addc(out, '0');
		return 0;
	}
	if (split(s, len, &positive, &num, &nlen, &den, &dlen, &suf, &slen) <
		0 ||
	    suffix_interpret(suf, slen, &base, &exp, &fmt) < 0)
		return -EINVAL;
	if (fmt == Q_BINARY_SI) {
		scale = 0;
		if (dlen)
			return 1;
		mantissa = INT64_C(1) << exp;
		precision = 15 - (int)nlen - (int)((float)exp * 3 / 10) - 1;
	} else {
		scale = exp;
		precision = 18 - (int)(nlen + dlen);
	}
	(void)base;
	if (precision < 0)
		return 1;
	scale -= (int)dlen;
	if (scale < -9)
		return 1;
	/* "shifted": the numerator's and the denominator's digits */
	memcpy(shifted, num, nlen);
	memcpy(shifted + nlen, den, dlen);
	nlen += dlen;
	for (i = 0; i < nlen; i++)
		value = value * 10 + (shifted[i] - '0');
	if (!mul_ok(value, mantissa, &result))
		return 1;
	if (!positive)
		result = -result;
	/* the text is kept when Go finds it canonical already */
	if (fmt == Q_BINARY_SI
		? (value & 7) != 0
		: scale % 3 == 0 && shifted[0] != '0' &&
		      !(nlen >= 3 && !memcmp(shifted + nlen - 3, "000", 3))) {
		k8s_buf_add(out, s, len);
		return 0;
	}
	if (result == 0) {
		k8s_buf_addc(out, '0');
		return 0;
	}
	if (fmt == Q_BINARY_SI) {
		int64_t v = result;

		if (v > -1024 && v < 1024) {
			fmt = Q_DECIMAL_SI;
		} else {
			times = 0;
			amount = v < 0 ? -v : v;
			while (amount >= 1024 && amount % 1024 == 0) {
				amount /= 1024;
				times++;
			}
			put_i64(out, v < 0 ? -amount : amount);
			k8s_buf_adds(out, bin_suffix[times]);
			return 0;
		}
	}
	/* AsCanonicalBytes: factors of 10 out, the exponent a multiple of 3 */
	amount = result < 0 ? -result : result;
	times = 0;
	while (amount >= 10 && amount % 10 == 0) {
		amount /= 10;
		times++;
	}
	exp = scale + times;
	switch (((exp % 3) + 3) % 3) {
	case 1:
		if (!mul_ok(amount, 10, &amount))
			return 1;
		exp -= 1;
		break;
	case 2:
		if (!mul_ok(amount, 100, &amount))
			return 1;
		exp -= 2;
		break;
	}
	put_i64(out, result < 0 ? -amount : amount);
	if (fmt == Q_DECIMAL_SI) {
		for (i = 0; i < sizeof(dec_suffix) / sizeof(dec_suffix[0]);
		     i++) {
			if (dec_suffix[i].exp == exp) {
				k8s_buf_adds(out, dec_suffix[i].s);
				return 0;
			}
		}
	}
	if (exp != 0) {
		k8s_buf_addc(out, 'e');
		put_i64(out, exp);
	}
	return 0;
}

int k8s_quantity(const char *s, size_t len, struct k8s_buf *out)
{
	int ret;

	if (len == 0)
		return -EINVAL;
	ret = canonical(s, len, out);
	if (ret == 1)
		k8s_buf_add(out, s, len);
	return ret;
}
