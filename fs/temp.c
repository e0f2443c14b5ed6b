/*
 * temp.c - the names of temp files: editors', tools' and a site's own
 *
 * The built-in names are the ones the common editors and tools give their
 * temp, swap and backup files next to the file they write: each rule below
 * is as narrow as the tool's own pattern, so that the names of real keys
 * (Kubernetes object names are lower-case letters, digits, '-' and '.')
 * are seldom taken for one.  The site's patterns come from
 * -o temp_names=.
 *
 * What it cannot do: tell a temp file from a key by anything but its name.
 * A key made elsewhere keeps being a key whatever its name (only new files
 * made through the mount are temp files); a new file made through the
 * mount with such a name stays out of etcd (-o notemp turns every rule
 * off).
 */
#include "temp.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

struct temp_names {
	size_t n;
	char *pats[];	/* NUL-terminated, in the same allocation */
};

static bool all_alnum(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)s[i]))
			return false;
	}
	return s[n] == '\0';
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/*
 * Python's tempfile (mkstemp, NamedTemporaryFile: the first half of an
 * atomic write, os.replace() the second): "tmp" and 8 characters of
 * [a-z0-9_], and the same with a leading '.' as some tools ask for.
 */
static bool python_temp(const char *name, size_t len)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
	size_t skip = name[0] == '.' ? 1 : 0;

	return len == skip + 11 && memcmp(name + skip, "tmp", 3) == 0 &&
	       strspn(name + skip + 3, chars) == 8;
}

/*
 * vim's ".NAME.swp" (and the names it tries after it), "NAME~" and its
 * "4913" probe (and the numbers it tries after it), sed -i's "sedXXXXXX",
 * perl -i's "XXxxxxxx", nano's "NAME.save", emacs' "#NAME#" and ".#NAME",
 * rsync's ".NAME.XXXXXX", Python's tempfile.
 */
static bool builtin_temp(const char *name)
{
	size_t len = strlen(name);
	const char *dot;

	if (len == 0)
		return false;
	if (name[len - 1] == '~')
		return true;
	/*
	 * vim's swap files: ".NAME.swp", then .swo, .swn ... .saa, and
	 * ".NAME.swx"/".NAME.swpx" with which it tries names out.
	 */
	dot = strrchr(name, '.');
	if (name[0] == '.' && dot && dot > name && dot[1] == 's' &&
	    islower((unsigned char)dot[2]) && islower((unsigned char)dot[3]) &&
	    (dot[4] == '\0' || (dot[4] == 'x' && dot[5] == '\0')))
		return true;
	if (len >= 4 && len <= 5 && strspn(name, "0123456789") == len) {
		long v = strtol(name, NULL, 10);

		if (v >= 4913 && v % 123 == 4913 % 123)
			return true;
	}
	if (len == 9 && memcmp(name, "sed", 3) == 0 && all_alnum(name + 3, 6))
		return true;
	if (len == 8 && memcmp(name, "XX", 2) == 0 && all_alnum(name + 2, 6))
		return true;
	if (ends_with(name, len, ".save"))
		return true;
	if (len > 2 && name[0] == '#' && name[len - 1] == '#')
		return true;
	if (len > 2 && name[0] == '.' && name[1] == '#')
		return true;
	dot = strrchr(name, '.');
	if (name[0] == '.' && dot && dot > name + 1 && all_alnum(dot + 1, 6))
		return true;
	return python_temp(name, len);
}

bool temp_name(const struct temp_names *t, const char *name)
{
	size_t i;

	if (builtin_temp(name))
		return true;
	for (i = 0; t && i < t->n; i++) {
		if (fnmatch(t->pats[i], name, FNM_PERIOD) == 0)
			return true;
	}
	return false;
}

const char *temp_names_check(const char *spec)
{
	const char *p = spec, *end;

	for (;; p = end + 1) {
		end = strchrnul(p, ':');
		if (end == p)
			return "an empty pattern";
		if (memchr(p, '/', (size_t)(end - p)))
			return "a pattern matches one name, without '/'";
		if (*end == '\0')
			return NULL;
	}
}

int temp_names_parse(const char *spec, struct temp_names **out)
{
	size_t len = spec ? strlen(spec) : 0, n = 1, i;
	struct temp_names *t;
	char *p;

	*out = NULL;
	if (!spec)
		return 0;
	if (temp_names_check(spec))
		return -EINVAL;
	for (i = 0; i < len; i++)
		n += spec[i] == ':';
	/* the pointers, then the patterns with their NULs in place of ':' */
	t = malloc(sizeof(*t) + n * sizeof(t->pats[0]) + len + 1);
	if (!t)
		return -ENOMEM;
	p = (char *)&t->pats[n];
	memcpy(p, spec, len + 1);
	for (t->n = 0; t->n < n; t->n++) {
		char *end = strchrnul(p, ':');

		*end = '\0';
		t->pats[t->n] = p;
		p = end + 1;
	}
	*out = t;
	return 0;
}

void temp_names_free(struct temp_names *t)
{
	free(t);
}
