/*
 * k8s_quantity.c - resource.Quantity's canonical string, for the k8s codec
 *
 * Kubernetes parses a quantity ("1.5Gi", "500m", "2e3") wherever it reads
 * one, from protobuf or JSON, and writes it back in canonical form: no
 * fraction, a decimal exponent that is a multiple of 3 with its SI suffix
 * (or e<n>), a binary suffix only for exact multiples of 1024, and the
 * text as given when it was canonical already.  This is
 * resource.ParseQuantity() and Quantity.String().
 *
 * Go's arbitrary-precision path (more than 18 digits, a fraction of a
 * binary suffix, fractions finer than 10^-9, which Go rounds up) is done
 * in 128 bits.
 *
 * What it cannot do: a quantity past 128 bits (some 38 digits) is valid
 * and goes through as written (k8s_quantity() answers 1).
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

typedef unsigned __int128 u128;

#define U128_MAX (~(u128)0)

static void put_u128(struct k8s_buf *b, u128 v, bool neg)
{
	char s[48];
	int i = sizeof(s);

	s[--i] = '\0';
	do {
		s[--i] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	if (neg)
		s[--i] = '-';
	k8s_buf_adds(b, s + i);
}

static bool mul_u128(u128 *v, u128 by)
{
	if (by && *v > U128_MAX / by)
		return false;
	*v *= by;
	return true;
}

static u128 pow10_u128(int n)
{
	u128 v = 1;

	while (n-- > 0)
		v *= 10;
	return v;
}

/*
 * Go's arbitrary-precision path (inf.Dec) in 128 bits: the value is
 * @digits x 10^-@scale (binary suffixes multiplied in), rounded up to a
 * nano, capped at 2^63 - 1, then written as Quantity.String() does.
 * 0, or 1 when it does not fit 128 bits (nothing written).
 */
static int slow(bool positive, const char *digits, size_t n, int scale,
		int bin_exp, enum q_format fmt, struct k8s_buf *out)
{
	const u128 max = ((u128)1 << 63) - 1;
	u128 m = 0, unit;
	size_t i;
	int times;

	for (i = 0; i < n; i++) {
		u128 d = (u128)(digits[i] - '0');

		if (!mul_u128(&m, 10) || m > U128_MAX - d)
			return 1;
		m += d;
	}
	if (bin_exp && !mul_u128(&m, (u128)1 << bin_exp))
		return 1;
	if (scale < 0) {
		if (scale < -38 || !mul_u128(&m, pow10_u128(-scale)))
			return 1;
		scale = 0;
	}
	if (scale > 9) {
		/* finer than a nano: Go rounds up (away from zero) */
		u128 d;

		if (scale > 38)
			return 1;
		d = pow10_u128(scale - 9);
		m = m / d + (m % d != 0);
		scale = 9;
	}
	unit = pow10_u128(scale);
	if (m / unit > max || (m / unit == max && m % unit)) {
		m = max;
		scale = 0;
		unit = 1;
	}
	if (m == 0) {
		k8s_buf_addc(out, '0');
		return 0;
	}
	if (fmt == Q_BINARY_SI && (m < unit || m < 1024 * unit ||
				   m % unit != 0))
		fmt = Q_DECIMAL_SI;
	if (fmt == Q_BINARY_SI) {
		m /= unit;
		for (times = 0; m % 1024 == 0 && times < 6; times++)
			m /= 1024;
		put_u128(out, m, !positive);
		k8s_buf_adds(out, bin_suffix[times]);
		return 0;
	}
	/* AsCanonicalBytes: factors of 10 out, the exponent a multiple of 3 */
	times = -scale;
	while (m >= 10 && m % 10 == 0) {
		m /= 10;
		times++;
	}
	while (((times % 3) + 3) % 3) {
		if (!mul_u128(&m, 10))
			return 1;
		times--;
	}
	put_u128(out, m, !positive);
	if (fmt == Q_DECIMAL_SI) {
		for (i = 0; i < sizeof(dec_suffix) / sizeof(dec_suffix[0]);
		     i++) {
			if (dec_suffix[i].exp == times) {
				k8s_buf_adds(out, dec_suffix[i].s);
				return 0;
			}
		}
	}
	if (times != 0) {
		k8s_buf_addc(out, 'e');
		put_i64(out, times);
	}
	return 0;
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
	char shifted[64];
	int times;

	if (len == 1 && s[0] == '0') {
		k8s_buf_addc(out, '0');
		return 0;
	}
	if (split(s, len, &positive, &num, &nlen, &den, &dlen, &suf, &slen) <
		0 ||
	    suffix_interpret(suf, slen, &base, &exp, &fmt) < 0)
		return -EINVAL;
	if (nlen + dlen > 60)
		return 1;
	memcpy(shifted, num, nlen);
	memcpy(shifted + nlen, den, dlen);
	if (fmt == Q_BINARY_SI) {
		scale = 0;
		if (dlen)
			return slow(positive, shifted, nlen + dlen, (int)dlen,
				    exp, fmt, out);
		mantissa = INT64_C(1) << exp;
		precision = 15 - (int)nlen - (int)((float)exp * 3 / 10) - 1;
	} else {
		scale = exp;
		precision = 18 - (int)(nlen + dlen);
	}
	(void)base;
	if (precision < 0 || scale - (int)dlen < -9)
		return slow(positive, shifted, nlen + dlen,
			    fmt == Q_BINARY_SI ? (int)dlen :
						 (int)dlen - scale,
			    fmt == Q_BINARY_SI ? exp : 0, fmt, out);
	scale -= (int)dlen;
	/* "shifted": the numerator's and the denominator's digits */
	nlen += dlen;
	for (i = 0; i < nlen; i++)
		value = value * 10 + (shifted[i] - '0');
	if (!mul_ok(value, mantissa, &result))
		return slow(positive, shifted, nlen, -scale,
			    fmt == Q_BINARY_SI ? exp : 0, fmt, out);
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
