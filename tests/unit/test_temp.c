/*
 * test_temp.c - unit tests of fs/temp.c, the names of temp files
 *
 * The built-in names of each editor and tool, as they make them; names
 * of real keys (Kubernetes objects, configuration files) that must stay
 * keys, among them the near misses of each rule; the site's patterns of
 * -o temp_names= and the lists refused.  It does not test out-of-memory
 * paths.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "temp.h"

static bool is_temp(const char *name)
{
	return temp_name(NULL, name);
}

static bool test_editors_and_tools(void)
{
	static const char *const temp[] = {
		".app.conf.swp", ".app.conf.swo", ".app.conf.swx",
		".app.conf.swpx", "app.conf~", "4913", "5036", "sedAb12Cd",
		"XXab12cd", "app.conf.save", "#app.conf#", ".#app.conf",
		".app.conf.Ab12Cd",
	};
	size_t i;

	for (i = 0; i < sizeof(temp) / sizeof(temp[0]); i++) {
		if (!is_temp(temp[i]))
			tap_diag("not a temp name: '%s'", temp[i]);
		CHECK(is_temp(temp[i]));
	}
	return true;
}

/* CPython's tempfile: "tmp" and 8 of [a-z0-9_]; with a '.' too. */
static bool test_python(void)
{
	static const char *const temp[] = {
		"tmpab_12xyz", "tmp3k9_q0zl", "tmp________", "tmp00000000",
		".tmpabcdefgh", ".tmp_x_y_z_0",
	};
	static const char *const keys[] = {
		"tmp", "tmpfile", "tmpabcdefg", "tmpabcdefghi", "tmp-abcdefg",
		"tmpABCDEFGH", "tmpabcd.efg", "tmp.abcdefgh", "xtmpabcdefgh",
		"..tmpabcdefgh", "tmpabcdefg-", ".tmpabcdefg",
	};
	size_t i;

	for (i = 0; i < sizeof(temp) / sizeof(temp[0]); i++)
		CHECK(is_temp(temp[i]));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (is_temp(keys[i]))
			tap_diag("a temp name: '%s'", keys[i]);
		CHECK(!is_temp(keys[i]));
	}
	return true;
}

/* Names of keys in Kubernetes' and other etcd users' key spaces. */
static bool test_real_keys(void)
{
	static const char *const keys[] = {
		"registry", "pods", "web-0", "coredns-5d78c9869d-x7k2p",
		"kube-proxy", "kube-system", "default", "app.conf",
		"config.json", "log_level", "leader", "1234", "4912", "sed",
		"sedabc", "XX", "README", ".well-known", "node-1.example.com",
		"v1.apps", "tmp", "temp", "saved", "a.b.c",
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (is_temp(keys[i]))
			tap_diag("a temp name: '%s'", keys[i]);
		CHECK(!is_temp(keys[i]));
	}
	return true;
}

static bool test_site_patterns(void)
{
	struct temp_names *t = NULL;

	CHECK(temp_names_check("*.part:.~lock.*#:tmp????????.json") == NULL);
	CHECK(temp_names_parse("*.part:.~lock.*#:tmp????????.json", &t) == 0);
	CHECK(t != NULL);
	CHECK(temp_name(t, "backup.part"));
	CHECK(temp_name(t, ".~lock.report.odt#"));
	CHECK(temp_name(t, "tmpab_12xyz.json"));
	/* as the shell: '*' does not match a leading '.' */
	CHECK(!temp_name(t, ".backup.part"));
	CHECK(!temp_name(t, "part"));
	CHECK(!temp_name(t, "backup.parts"));
	CHECK(!temp_name(t, "tmpab_12xy.json"));
	/* and the built-in names are still there */
	CHECK(temp_name(t, "app.conf~"));
	temp_names_free(t);

	CHECK(temp_names_parse(NULL, &t) == 0);
	CHECK(t == NULL);
	CHECK(!temp_name(t, "backup.part"));
	return true;
}

static bool test_bad_lists(void)
{
	static const char *const bad[] = { "", ":", "a::b", "a:", ":a",
					   "dir/*.tmp", "*.tmp:x/" };
	struct temp_names *t;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = temp_names_check(bad[i]);
		CHECK(why != NULL && why[0] != '\0');
		CHECK(temp_names_parse(bad[i], &t) == -EINVAL);
		CHECK(t == NULL);
	}
	CHECK(temp_names_check("*") == NULL);
	CHECK(temp_names_check("a:b") == NULL);
	return true;
}

int main(void)
{
	TAP_RUN(test_editors_and_tools);
	TAP_RUN(test_python);
	TAP_RUN(test_real_keys);
	TAP_RUN(test_site_patterns);
	TAP_RUN(test_bad_lists);
	return tap_done(0);
}
