/*
 * test_endpoint.c - unit tests of helper/endpoint.c: endpoint lists in
 * every form etcdctl and URLs allow, the entries refused and the message
 * that names them, member URLs, and etcdctl's durations
 *
 * Nothing here talks to anything: the module only parses.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "tap.h"

/* @list (TLS or not) parses into the comma list @want. */
static bool list_is(const char *list, bool tls, const char *want)
{
	struct endpoint_list l;
	char why[256] = "";
	char *got;
	bool ok;

	if (endpoint_list_parse(&l, list, tls, why, sizeof(why)) != 0) {
		tap_diag("'%s' refused: %s", list, why);
		return false;
	}
	got = endpoint_list_join(&l);
	ok = got && strcmp(got, want) == 0;
	if (!ok)
		tap_diag("'%s' became '%s', want '%s'", list, got, want);
	free(got);
	endpoint_list_release(&l);
	return ok;
}

/* @list is refused with a message that starts with @want. */
static bool list_bad(const char *list, const char *want)
{
	struct endpoint_list l = { 0 };
	char why[256] = "";
	int rc;

	rc = endpoint_list_parse(&l, list, false, why, sizeof(why));
	if (rc != -EINVAL || l.urls || l.n) {
		tap_diag("'%s' accepted (rc %d)", list, rc);
		endpoint_list_release(&l);
		return false;
	}
	if (strncmp(why, want, strlen(want)) != 0) {
		tap_diag("'%s': got '%s', want '%s...'", list, why, want);
		return false;
	}
	return true;
}

static bool test_urls(void)
{
	CHECK(list_is("http://127.0.0.1:2379", false, "http://127.0.0.1:2379"));
	CHECK(list_is("https://etcd.example.com:2379/", false,
		      "https://etcd.example.com:2379"));
	/* a URL keeps its scheme whatever the TLS settings */
	CHECK(list_is("http://a:1", true, "http://a:1"));
	CHECK(list_is("HTTPS://A:1//", false, "https://A:1"));
	CHECK(list_is("http://etcd", false, "http://etcd"));
	CHECK(list_is("http://[::1]:2379", false, "http://[::1]:2379"));
	CHECK(list_is("https://[fe80::1]", false, "https://[fe80::1]"));
	CHECK(list_is("http://my_host-1.local:65535", false,
		      "http://my_host-1.local:65535"));
	return true;
}

static bool test_etcdctl_form(void)
{
	CHECK(list_is("127.0.0.1:2379", false, "http://127.0.0.1:2379"));
	CHECK(list_is("127.0.0.1:2379", true, "https://127.0.0.1:2379"));
	CHECK(list_is("[::1]:2379", false, "http://[::1]:2379"));
	CHECK(list_is("localhost:1/", true, "https://localhost:1"));
	/* lists, mixed forms, spaces around entries */
	CHECK(list_is("a:1,http://b:2, https://c:3 ,\td:4", false,
		      "http://a:1,http://b:2,https://c:3,http://d:4"));
	return true;
}

static bool test_refused(void)
{
	CHECK(list_bad("", "bad endpoint '': none given"));
	CHECK(list_bad(" ", "bad endpoint '': none given"));
	CHECK(list_bad("a:1,,b:2", "bad endpoint '': an empty entry in 'a:1,,b:2'"));
	CHECK(list_bad("a:1,", "bad endpoint '': an empty entry"));
	CHECK(list_bad(",a:1", "bad endpoint '': an empty entry"));
	/* the bad one is named, not its good neighbours */
	CHECK(list_bad("http://a:1,http://b:1/v3", "bad endpoint 'http://b:1/v3': a path"));
	CHECK(list_bad("http://h:1/x", "bad endpoint 'http://h:1/x': a path"));
	CHECK(list_bad("h:1/x", "bad endpoint 'h:1/x': a path"));
	CHECK(list_bad("http://h:1?x=1", "bad endpoint 'http://h:1?x=1': a query"));
	CHECK(list_bad("http://h:1/#f", "bad endpoint 'http://h:1/#f': a query"));
	CHECK(list_bad("http://u:p@h:1", "bad endpoint 'http://u:p@h:1': user@"));
	CHECK(list_bad("u@h:1", "bad endpoint 'u@h:1': user@"));
	CHECK(list_bad("ftp://h:1", "bad endpoint 'ftp://h:1': the scheme"));
	CHECK(list_bad("unix://h:1", "bad endpoint 'unix://h:1': the scheme"));
	CHECK(list_bad("etcd", "bad endpoint 'etcd': expected http://HOST:PORT"));
	CHECK(list_bad("not-a-url", "bad endpoint 'not-a-url': expected"));
	CHECK(list_bad("http://", "bad endpoint 'http://': no host"));
	CHECK(list_bad("http://:2379", "bad endpoint 'http://:2379': no host"));
	CHECK(list_bad(":2379", "bad endpoint ':2379': no host"));
	CHECK(list_bad("http://h:", "bad endpoint 'http://h:': bad port"));
	CHECK(list_bad("h:0", "bad endpoint 'h:0': bad port"));
	CHECK(list_bad("h:65536", "bad endpoint 'h:65536': bad port"));
	CHECK(list_bad("h:123456", "bad endpoint 'h:123456': bad port"));
	CHECK(list_bad("h:12a", "bad endpoint 'h:12a': bad port"));
	CHECK(list_bad("h:-1", "bad endpoint 'h:-1': bad port"));
	CHECK(list_bad("::1:2379", "bad endpoint '::1:2379': an IPv6"));
	CHECK(list_bad("http://[::1", "bad endpoint 'http://[::1': an IPv6"));
	CHECK(list_bad("http://[]:1", "bad endpoint 'http://[]:1': an IPv6"));
	CHECK(list_bad("[zz::1]:1", "bad endpoint '[zz::1]:1': bad IPv6"));
	CHECK(list_bad("[1.2.3.4]:1", "bad endpoint '[1.2.3.4]:1': bad IPv6"));
	CHECK(list_bad("[::1]x", "bad endpoint '[::1]x': bad port"));
	CHECK(list_bad("http://a b:1", "bad endpoint 'http://a b:1': a space"));
	CHECK(list_bad("http://h\x01:1", "bad endpoint 'http://h\x01:1': a space"));
	CHECK(list_bad("http://h\xc3\xa9:1", "bad endpoint"));
	CHECK(list_bad("http://h!:1", "bad endpoint 'http://h!:1': bad host"));
	return true;
}

static bool test_member_urls(void)
{
	CHECK(endpoint_url_ok("http://127.0.0.1:2379"));
	CHECK(endpoint_url_ok("https://[::1]:2379"));
	CHECK(endpoint_url_ok("http://etcd"));
	/* exactly as parse would give it: no trailing '/', lower-case scheme */
	CHECK(!endpoint_url_ok("http://127.0.0.1:2379/"));
	CHECK(!endpoint_url_ok("HTTP://127.0.0.1:2379"));
	/* etcdctl's short form is for people, not for what a member says */
	CHECK(!endpoint_url_ok("127.0.0.1:2379"));
	CHECK(!endpoint_url_ok("http://h:1/x"));
	CHECK(!endpoint_url_ok("http://u@h:1"));
	CHECK(!endpoint_url_ok("http://h:1,http://g:2"));
	CHECK(!endpoint_url_ok(""));
	return true;
}

static bool duration_is(const char *s, long want)
{
	char why[128] = "";
	long ms = -7;

	if (endpoint_duration_ms(s, &ms, why, sizeof(why)) != 0) {
		tap_diag("'%s' refused: %s", s, why);
		return false;
	}
	if (ms != want)
		tap_diag("'%s' is %ld ms, want %ld", s, ms, want);
	return ms == want;
}

static bool duration_bad(const char *s, const char *want)
{
	char why[128] = "";
	long ms = -7;

	if (endpoint_duration_ms(s, &ms, why, sizeof(why)) != -EINVAL) {
		tap_diag("'%s' accepted as %ld ms", s, ms);
		return false;
	}
	if (ms != -7 || strncmp(why, want, strlen(want)) != 0) {
		tap_diag("'%s': got '%s' (%ld), want '%s...'", s, why, ms,
			 want);
		return false;
	}
	return true;
}

static bool test_durations(void)
{
	/* etcdfs's own: milliseconds */
	CHECK(duration_is("1", 1));
	CHECK(duration_is("2000", 2000));
	CHECK(duration_is("3600000", 3600000));
	/* etcdctl's, as Go's time.ParseDuration */
	CHECK(duration_is("500ms", 500));
	CHECK(duration_is("2s", 2000));
	CHECK(duration_is("1m", 60000));
	CHECK(duration_is("1m30s", 90000));
	CHECK(duration_is("1h", 3600000));
	CHECK(duration_is("1.5s", 1500));
	CHECK(duration_is(".5s", 500));
	CHECK(duration_is("1s500ms", 1500));
	CHECK(duration_is("1000000ns", 1));
	CHECK(duration_is("2000us", 2));
	CHECK(duration_is("2000\xc2\xb5s", 2));
	/* a fraction of a millisecond is rounded up, never down to 0 */
	CHECK(duration_is("1500us", 2));
	CHECK(duration_is("0.0015s", 2));
	return true;
}

static bool test_durations_refused(void)
{
	const char *form = "expected milliseconds or a duration";
	const char *range = "a timeout is 1ms to 1h";

	CHECK(duration_bad("", form));
	CHECK(duration_bad("2x", form));
	CHECK(duration_bad("s", form));
	CHECK(duration_bad("2 s", form));
	CHECK(duration_bad(" 2s", form));
	CHECK(duration_bad("-1s", form));
	CHECK(duration_bad("+1s", form));
	CHECK(duration_bad("1e3ms", form));
	CHECK(duration_bad("0x10s", form));
	CHECK(duration_bad("inf", form));
	CHECK(duration_bad("nan", form));
	CHECK(duration_bad(".s", form));
	CHECK(duration_bad("1.5", form));
	CHECK(duration_bad("2S", form));
	CHECK(duration_bad("2sec", form));
	CHECK(duration_bad("0", range));
	CHECK(duration_bad("0s", range));
	CHECK(duration_bad("999us", range));
	CHECK(duration_bad("3600001", range));
	CHECK(duration_bad("1h1ms", range));
	CHECK(duration_bad("99999999999", range));
	CHECK(duration_bad("9999999999999999999h", range));
	return true;
}

static bool test_defaults(void)
{
	struct endpoint_list l;
	char why[64];

	/* the default is a list the parser takes as it is */
	CHECK(endpoint_list_parse(&l, ENDPOINT_DEFAULT, false, why,
				  sizeof(why)) == 0);
	CHECK(l.n == 1 && strcmp(l.urls[0], ENDPOINT_DEFAULT) == 0);
	endpoint_list_release(&l);
	CHECK(endpoint_url_ok(ENDPOINT_DEFAULT));
	CHECK(ENDPOINT_DIAL_TIMEOUT_MS == 2000);
	CHECK(ENDPOINT_COMMAND_TIMEOUT_MS == 5000);
	CHECK(ENDPOINT_COMMAND_TIMEOUT_MS <= ENDPOINT_TIMEOUT_MAX_MS);
	return true;
}

int main(void)
{
	TAP_RUN(test_urls);
	TAP_RUN(test_etcdctl_form);
	TAP_RUN(test_refused);
	TAP_RUN(test_member_urls);
	TAP_RUN(test_durations);
	TAP_RUN(test_durations_refused);
	TAP_RUN(test_defaults);
	return tap_done(0);
}
