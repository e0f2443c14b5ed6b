/*
 * fixture.c - the harness of the unit tests that run a codec's parsers on
 * reply fixtures (see fixture.h)
 *
 * Reads a case's files, picks its kind by the name's prefix, compares the
 * dump with `expected`, and checks that the directory holds no case the
 * test does not list.  It aborts on out of memory (a test has nothing
 * better to do), and cannot read a fixture path longer than 511 bytes.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture.h"
#include "store.h"

void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		if (!t->p)
			abort();
	}
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void text_quote(struct text *t, const char *s, size_t len)
{
	size_t i;

	text_add(t, "\"");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			text_add(t, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			text_add(t, "%c", c);
		else
			text_add(t, "\\x%02x", c);
	}
	text_add(t, "\"");
}

void text_free(struct text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

char *fixture_read(const char *dir, const char *name, const char *file,
		   size_t *len)
{
	char path[512];
	char *buf = NULL;
	size_t cap = 0, n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, file);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (n + 4096 + 1 > cap) {
			cap = (n + 4096 + 1) * 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

char *fixture_file(const struct fixture *fx, const char *file, size_t *len)
{
	return fixture_read(fx->dir, fx->name, file, len);
}

bool fixture_arg(const char *args, const char *name, char *buf, size_t size,
		 size_t *len)
{
	size_t nlen = strlen(name), o = 0;
	const char *p = args;

	while (p && *p) {
		if (!strncmp(p, name, nlen) && p[nlen] == '=') {
			p += nlen + 1;
			while (*p && *p != '\n' && o < size) {
				unsigned int c;

				if (p[0] == '\\' && p[1] == 'x' &&
				    sscanf(p + 2, "%2x", &c) == 1) {
					buf[o++] = (char)c;
					p += 4;
				} else if (p[0] == '\\' && p[1] == '\\') {
					buf[o++] = '\\';
					p += 2;
				} else {
					buf[o++] = *p++;
				}
			}
			*len = o;
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

const char *fixture_err_name(int code)
{
	static const char *const names[STORE_ERR_COUNT] = {
		"OK", "ENOTFOUND", "EEXISTS", "ECONFLICT", "EPRECONDITION",
		"ECOMPACTED", "EUNREACHABLE", "ETIMEOUT", "EUNAUTHENTICATED",
		"EPERMISSION", "ETOOLARGE", "EBADREPLY", "EINTERNAL", "EINVAL",
		"ENOTSUP", "EUNKNOWN",
	};

	if (code > 0 || -code >= STORE_ERR_COUNT || !names[-code])
		return "?";
	return names[-code];
}

static void show_lines(const char *tag, const char *s, size_t len)
{
	const char *p;

	for (p = s; p < s + len;) {
		const char *nl = memchr(p, '\n', (size_t)(s + len - p));
		int n = nl ? (int)(nl - p) : (int)(s + len - p);

		tap_diag("%s %.*s", tag, n, p);
		p += n + 1;
	}
}

void fixture_show_diff(const char *name, const char *got, size_t got_len,
		       const char *want, size_t want_len)
{
	tap_diag("%s: the parser's output differs from 'expected'", name);
	show_lines("got: ", got, got_len);
	show_lines("want:", want, want_len);
}

static const struct fixture_kind *kind_of(const struct fixture_suite *s,
					  const char *name)
{
	size_t i;

	for (i = 0; i < s->n_kinds; i++)
		if (!strncmp(name, s->kinds[i].prefix,
			     strlen(s->kinds[i].prefix)))
			return &s->kinds[i];
	return NULL;
}

/* Reads @name's status file, if any, into @fx; false if it is bad. */
static bool read_status(struct fixture *fx)
{
	char *s, *end;
	size_t len;
	bool ok = true;

	s = fixture_file(fx, "status", &len);
	if (!s)
		return true;
	fx->has_status = true;
	fx->status = strtol(s, &end, 10);
	if (end == s || (*end && *end != '\n')) {
		tap_diag("%s: bad status file", fx->name);
		ok = false;
	}
	free(s);
	return ok;
}

bool fixture_run(const struct fixture_suite *s, const char *name)
{
	const struct fixture_kind *kind = kind_of(s, name);
	struct fixture fx = { .dir = s->dir, .name = name };
	struct text got = { 0 };
	char *expected = NULL;
	size_t exp_len, args_len;
	bool ok = false;

	if (!kind) {
		tap_diag("%s: no parser for this name", name);
		return false;
	}
	fx.input = fixture_file(&fx, "input", &fx.len);
	expected = fixture_file(&fx, "expected", &exp_len);
	fx.args = fixture_file(&fx, "args", &args_len);
	if (!fx.input || !expected) {
		tap_diag("%s: no input or no expected", name);
		goto out;
	}
	if (!read_status(&fx))
		goto out;
	if (kind->needs_status && !fx.has_status) {
		tap_diag("%s: a %s fixture needs a status", name, kind->prefix);
		goto out;
	}
	if (!kind->dump(&got, &fx))
		goto out;
	if (!got.p)
		text_add(&got, "%s", "");
	if (got.len != exp_len || memcmp(got.p, expected, exp_len)) {
		fixture_show_diff(name, got.p, got.len, expected, exp_len);
		goto out;
	}
	ok = !kind->check || kind->check(&fx);
out:
	text_free(&got);
	free(fx.input);
	free(fx.args);
	free(expected);
	return ok;
}

bool fixture_all_listed(const struct fixture_suite *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	struct stat st;
	char path[512];
	size_t i, seen = 0;
	bool ok = true;

	if (!d) {
		tap_diag("cannot open '%s'", s->dir);
		return false;
	}
	while ((de = readdir(d))) {
		bool found = false;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", s->dir, de->d_name);
		if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;	/* a capture script */
		for (i = 0; i < s->n_names; i++)
			if (!strcmp(s->names[i], de->d_name))
				found = true;
		if (!found) {
			tap_diag("fixture '%s' is not run", de->d_name);
			ok = false;
		}
		seen++;
	}
	closedir(d);
	if (ok && seen != s->n_names) {
		tap_diag("%zu fixtures listed, %zu in '%s'", s->n_names, seen,
			 s->dir);
		ok = false;
	}
	return ok;
}
