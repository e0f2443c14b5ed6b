/*
 * endpoint.c - endpoint lists and etcdctl's durations (see endpoint.h)
 *
 * Parses rather than guesses: every entry of a list is checked, and the
 * first bad one is named with what is wrong with it, so that a typo in an
 * fstab line is reported on the terminal, before anything is sent.
 *
 * What it cannot do: tell a host name that does not resolve from one that
 * does (that is the transport's connect error), or check an IPv6 address
 * beyond its characters.
 */
#include <errno.h>
#include <math.h>	/* isfinite, a macro: no libm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "endpoint.h"

#define EXPECTED "expected http://HOST:PORT, https://HOST:PORT or HOST:PORT"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

static bool is_v6_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

/* The length of the scheme prefix of @p ("http://": 7), 0 if none. */
static size_t scheme_len(const char *p, size_t len, bool *https)
{
	if (len >= 7 && strncasecmp(p, "http://", 7) == 0) {
		*https = false;
		return 7;
	}
	if (len >= 8 && strncasecmp(p, "https://", 8) == 0) {
		*https = true;
		return 8;
	}
	return 0;
}

/*
 * Checks the authority @a (@len bytes: HOST, HOST:PORT, [V6], [V6]:PORT)
 * and says what is wrong in @why; @need_port for etcdctl's form.
 */
static bool authority_ok(const char *a, size_t len, bool need_port,
			 const char **why)
{
	const char *end = a + len, *port = NULL, *p;
	long n;

	if (len == 0) {
		*why = "no host";
		return false;
	}
	if (memchr(a, '@', len)) {
		*why = "user@ is not allowed: credentials go in the user and "
		       "password settings";
		return false;
	}
	if (a[0] == '[') {
		const char *close = memchr(a, ']', len);

		if (!close || close == a + 1) {
			*why = "an IPv6 address goes in brackets: [::1]:2379";
			return false;
		}
		for (p = a + 1; p < close; p++)
			if (!is_v6_char(*p))
				break;
		if (p < close || !memchr(a + 1, ':', (size_t)(close - a - 1))) {
			*why = "bad IPv6 address";
			return false;
		}
		if (close + 1 < end && close[1] != ':') {
			*why = "bad port";
			return false;
		}
		if (close + 1 < end)
			port = close + 1;
	} else {
		port = memchr(a, ':', len);
		if (port && memchr(port + 1, ':', (size_t)(end - port - 1))) {
			*why = "an IPv6 address goes in brackets: [::1]:2379";
			return false;
		}
		for (p = a; p < (port ? port : end); p++)
			if (!is_host_char(*p))
				break;
		if (p == a) {
			*why = "no host";
			return false;
		}
		if (p < (port ? port : end)) {
			*why = "bad host name";
			return false;
		}
	}
	if (!port) {
		if (need_port) {
			*why = EXPECTED;
			return false;
		}
		return true;
	}
	/* ":" then 1 to 65535, digits only */
	port++;
	*why = "bad port: expected 1 to 65535";
	if (port == end || end - port > 5)
		return false;
	for (n = 0, p = port; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		n = n * 10 + (*p - '0');
	}
	return n >= 1 && n <= 65535;
}

/*
 * Parses the entry @p (@len bytes, trimmed) into a new URL in *@out, or
 * returns the reason it is bad.
 */
static const char *parse_one(const char *p, size_t len, bool tls, char **out)
{
	bool https = tls;
	size_t skip = scheme_len(p, len, &https);
	const char *a = p + skip, *end = p + len, *stop;
	const char *why = NULL;
	const char *scheme;
	size_t alen, i;

	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
			return "a space or a control byte";
	if (!skip && memmem(p, len, "://", 3))
		return "the scheme must be http:// or https://";
	stop = a;
	while (stop < end && *stop != '/' && *stop != '?' && *stop != '#')
		stop++;
	alen = (size_t)(stop - a);
	if (memchr(stop, '?', (size_t)(end - stop)) ||
	    memchr(stop, '#', (size_t)(end - stop)))
		return "a query or a fragment is not allowed";
	for (; stop < end; stop++) {
		if (*stop != '/')
			return "a path is not allowed (requests add their own)";
	}
	if (!authority_ok(a, alen, !skip, &why))
		return why;
	scheme = https ? "https://" : "http://";
	*out = malloc(strlen(scheme) + alen + 1);
	if (!*out)
		return NULL;
	memcpy(*out, scheme, strlen(scheme));
	memcpy(*out + strlen(scheme), a, alen);
	(*out)[strlen(scheme) + alen] = '\0';
	return NULL;
}

void endpoint_list_release(struct endpoint_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->urls[i]);
	free(l->urls);
	l->urls = NULL;
	l->n = 0;
}

int endpoint_list_parse(struct endpoint_list *l, const char *list, bool tls,
			char *why, size_t why_size)
{
	const char *a = list, *b, *e, *bad;
	size_t n = 1;
	char *url;

	l->urls = NULL;
	l->n = 0;
	for (b = list; *b; b++)
		if (*b == ',')
			n++;
	l->urls = calloc(n, sizeof(*l->urls));
	if (!l->urls)
		return -ENOMEM;
	for (;;) {
		e = strchrnul(a, ',');
		b = e;
		while (a < b && is_blank(*a))
			a++;
		while (b > a && is_blank(b[-1]))
			b--;
		if (a == b) {
			if (n > 1)
				snprintf(why, why_size, "bad endpoint '': an "
					 "empty entry in '%s'", list);
			else
				snprintf(why, why_size, "bad endpoint '': "
					 "none given");
			goto bad;
		}
		url = NULL;
		bad = parse_one(a, (size_t)(b - a), tls, &url);
		if (bad) {
			snprintf(why, why_size, "bad endpoint '%.*s': %s",
				 (int)(b - a), a, bad);
			goto bad;
		}
		if (!url) {
			endpoint_list_release(l);
			return -ENOMEM;
		}
		l->urls[l->n++] = url;
		if (!*e)
			break;
		a = e + 1;
	}
	return 0;
bad:
	endpoint_list_release(l);
	return -EINVAL;
}

char *endpoint_list_join(const struct endpoint_list *l)
{
	size_t len = 1, i, off = 0;
	char *s;

	for (i = 0; i < l->n; i++)
		len += strlen(l->urls[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (i = 0; i < l->n; i++)
		off += (size_t)snprintf(s + off, len - off, "%s%s",
					i ? "," : "", l->urls[i]);
	return s;
}

bool endpoint_url_ok(const char *url)
{
	size_t len = strlen(url);
	bool https;
	size_t skip = scheme_len(url, len, &https);
	char *out = NULL;
	bool ok;

	if (!skip || strncmp(url, https ? "https://" : "http://", skip) != 0)
		return false;
	if (parse_one(url, len, https, &out) || !out)
		return false;
	ok = strcmp(out, url) == 0;
	free(out);
	return ok;
}

/* A Go duration unit at @p: its length in *@len and its size in ns. */
static double unit_ns(const char *p, size_t *len)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {
		/* longest first: "ms" before "m" */
		{ "ns", 1 }, { "us", 1e3 }, { "\xc2\xb5s", 1e3 },
		{ "\xce\xbcs", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "m", 60e9 }, { "h", 3600e9 },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		*len = strlen(units[i].name);
		if (strncmp(p, units[i].name, *len) == 0)
			return units[i].ns;
	}
	return 0;
}

int endpoint_duration_ms(const char *s, long *ms, char *why, size_t why_size)
{
	const char *p = s;
	double ns = 0;
	bool plain = true;
	size_t i;

	if (!*s)
		goto bad;
	for (i = 0; s[i]; i++)
		if (s[i] < '0' || s[i] > '9')
			plain = false;
	if (plain) {
		/* etcdfs's own form: milliseconds */
		if (strlen(s) > 10)
			goto range;
		ns = strtod(s, NULL) * 1e6;
		goto check;
	}
	while (*p) {
		char *end;
		double v, unit;
		size_t ulen;

		/* a number, maybe with a fraction; then its unit */
		if (!((*p >= '0' && *p <= '9') || *p == '.'))
			goto bad;
		v = strtod(p, &end);
		if (end == p || (end == p + 1 && *p == '.') ||
		    memchr(p, 'e', (size_t)(end - p)) ||
		    memchr(p, 'E', (size_t)(end - p)) ||
		    memchr(p, 'x', (size_t)(end - p)) ||
		    memchr(p, 'X', (size_t)(end - p)))
			goto bad;
		unit = unit_ns(end, &ulen);
		if (unit == 0)
			goto bad;
		ns += v * unit;
		if (!isfinite(ns) || ns > 1e18)
			goto range;
		p = end + ulen;
	}
check:
	if (ns < 1e6)
		goto range;
	if (ns > (double)ENDPOINT_TIMEOUT_MAX_MS * 1e6)
		goto range;
	/* never shorter than asked: round a fraction of a ms up */
	*ms = (long)(ns / 1e6);
	if ((double)*ms * 1e6 < ns - 1)
		(*ms)++;
	return 0;
bad:
	snprintf(why, why_size, "expected milliseconds or a duration such as "
		 "500ms, 2s or 1m30s");
	return -EINVAL;
range:
	snprintf(why, why_size, "a timeout is 1ms to 1h");
	return -EINVAL;
}
