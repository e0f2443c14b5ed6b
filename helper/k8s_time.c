/*
 * k8s_time.c - times and durations as Go's time package writes and reads
 * them, for the k8s codec
 *
 * metav1.Time is time.RFC3339 in UTC ("2008-01-01T01:01:01Z"), MicroTime
 * the same with six fractional digits; a Duration is Go's
 * time.Duration.String() ("1h2m0.5s") and time.ParseDuration().
 *
 * What it cannot do: time zones other than a numeric offset or Z, and the
 * years past what 50 bits of seconds hold.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "k8s_i.h"

/* Days since 1970-01-01 to a civil date (proleptic Gregorian). */
static void civil(int64_t days, int64_t *y, int *m, int *d)
{
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;

	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void k8s_time_format(struct k8s_buf *b, int64_t sec, int32_t nsec, bool micro)
{
	int64_t days = sec / 86400, rem = sec % 86400, y;
	int m, d;
	char s[64];

	if (rem < 0) {
		rem += 86400;
		days--;
	}
	civil(days, &y, &m, &d);
	/* Go writes the year with at least 4 digits, a minus before them */
	snprintf(s, sizeof(s), "%s%04" PRId64 "-%02d-%02dT%02d:%02d:%02d",
		 y < 0 ? "-" : "", y < 0 ? -y : y, m, d, (int)(rem / 3600),
		 (int)(rem / 60 % 60), (int)(rem % 60));
	k8s_buf_adds(b, s);
	if (micro) {
		snprintf(s, sizeof(s), ".%06d", nsec / 1000);
		k8s_buf_adds(b, s);
	}
	k8s_buf_addc(b, 'Z');
}

static int digits(const char **p, const char *end, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (*p >= end || **p < '0' || **p > '9')
			return -1;
		*v = *v * 10 + (*(*p)++ - '0');
	}
	return 0;
}

int k8s_time_parse(const char *s, size_t len, int64_t *sec, int32_t *nsec)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31};
	const char *p = s, *end = s + len;
	int y, mo, d, h, mi, se, oh = 0, om = 0, sign = 0;
	int32_t ns = 0;

	if (digits(&p, end, 4, &y) || p >= end || *p++ != '-' ||
	    digits(&p, end, 2, &mo) || p >= end || *p++ != '-' ||
	    digits(&p, end, 2, &d) || p >= end || *p++ != 'T' ||
	    digits(&p, end, 2, &h) || p >= end || *p++ != ':' ||
	    digits(&p, end, 2, &mi) || p >= end || *p++ != ':' ||
	    digits(&p, end, 2, &se))
		return -EINVAL;
	if (p < end && *p == '.') {
		int n = 0;

		p++;
		while (p < end && *p >= '0' && *p <= '9') {
			if (n < 9)
				ns = ns * 10 + (*p - '0');
			n++;
			p++;
		}
		if (n == 0)
			return -EINVAL;
		for (; n < 9; n++)
			ns *= 10;
	}
	if (p < end && *p == 'Z') {
		p++;
	} else if (p < end && (*p == '+' || *p == '-')) {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, end, 2, &oh) || p >= end || *p++ != ':' ||
		    digits(&p, end, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (p != end || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))) ||
	    h > 23 || mi > 59 || se > 59)
		return -EINVAL;
	*sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se -
	       sign * (oh * 3600 + om * 60);
	*nsec = ns;
	return 0;
}

/* Go's fmtFrac: the fraction of @v / 10^@prec, trailing zeros left out. */
static void put_frac(char *buf, int *w, uint64_t *v, int prec)
{
	bool print = false;
	int i;

	for (i = 0; i < prec; i++) {
		int digit = (int)(*v % 10);

		print = print || digit != 0;
		if (print)
			buf[--*w] = (char)('0' + digit);
		*v /= 10;
	}
	if (print)
		buf[--*w] = '.';
}

static void put_int(char *buf, int *w, uint64_t v)
{
	if (v == 0) {
		buf[--*w] = '0';
		return;
	}
	while (v > 0) {
		buf[--*w] = (char)('0' + v % 10);
		v /= 10;
	}
}

void k8s_duration_format(struct k8s_buf *b, int64_t ns)
{
	char buf[40];
	int w = sizeof(buf);
	uint64_t u = (uint64_t)ns;
	bool neg = ns < 0;

	if (neg)
		u = -u;
	if (u < 1000000000) {
		int prec = 0;

		buf[--w] = 's';
		if (u == 0) {
			buf[--w] = '0';
			k8s_buf_add(b, buf + w, sizeof(buf) - w);
			return;
		} else if (u < 1000) {
			buf[--w] = 'n';
		} else if (u < 1000000) {
			prec = 3;
			buf[--w] = '\xb5';
			buf[--w] = '\xc2';
		} else {
			prec = 6;
			buf[--w] = 'm';
		}
		put_frac(buf, &w, &u, prec);
		put_int(buf, &w, u);
	} else {
		buf[--w] = 's';
		put_frac(buf, &w, &u, 9);
		put_int(buf, &w, u % 60);
		u /= 60;
		if (u > 0) {
			buf[--w] = 'm';
			put_int(buf, &w, u % 60);
			u /= 60;
			if (u > 0) {
				buf[--w] = 'h';
				put_int(buf, &w, u);
			}
		}
	}
	if (neg)
		buf[--w] = '-';
	k8s_buf_add(b, buf + w, sizeof(buf) - w);
}

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000},
    {"\xce\xbcs", 1000},
    {"ms", 1000000},
    {"s", 1000000000},
    {"m", 60000000000ULL},
    {"h", 3600000000000ULL},
};

/* Go's time.ParseDuration. */
int k8s_duration_parse(const char *s, size_t len, int64_t *ns)
{
	const char *p = s, *end = s + len;
	uint64_t total = 0;
	bool neg = false;

	if (p < end && (*p == '-' || *p == '+'))
		neg = *p++ == '-';
	if (end - p == 1 && *p == '0') {
		*ns = 0;
		return 0;
	}
	if (p == end)
		return -EINVAL;
	while (p < end) {
		uint64_t v = 0, f = 0, scale = 1, unit = 0;
		bool pre = false, post = false;
		const char *u;
		size_t i, ulen;

		while (p < end && *p >= '0' && *p <= '9') {
			if (v > (UINT64_C(1) << 63) / 10)
				return -EINVAL;
			v = v * 10 + (uint64_t)(*p++ - '0');
			if (v > UINT64_C(1) << 63)
				return -EINVAL;
			pre = true;
		}
		if (p < end && *p == '.') {
			p++;
			while (p < end && *p >= '0' && *p <= '9') {
				if (scale <= UINT64_C(1) << 59) {
					f = f * 10 + (uint64_t)(*p - '0');
					scale *= 10;
				}
				p++;
				post = true;
			}
		}
		if (!pre && !post)
			return -EINVAL;
		u = p;
		while (p < end && *p != '.' && (*p < '0' || *p > '9'))
			p++;
		ulen = (size_t)(p - u);
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strlen(units[i].name) == ulen &&
			    !memcmp(units[i].name, u, ulen))
				unit = units[i].ns;
		if (!unit)
			return -EINVAL;
		if (v > (UINT64_C(1) << 63) / unit)
			return -EINVAL;
		v *= unit;
		if (f > 0) {
			v += (uint64_t)((double)f * ((double)unit / scale));
			if (v > UINT64_C(1) << 63)
				return -EINVAL;
		}
		total += v;
		if (total > UINT64_C(1) << 63)
			return -EINVAL;
	}
	if (!neg && total > (UINT64_C(1) << 63) - 1)
		return -EINVAL;
	*ns = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}
