/*
 * endpoint.h - where etcd is and how long to wait for it, in etcdctl's words
 *
 * The one place for the default endpoint and the default timeouts (the
 * store, the transport and the command line take them from here), the
 * parser of an endpoint list and the parser of etcdctl's durations.
 *
 * An endpoint is a base URL: http://HOST[:PORT] or https://HOST[:PORT],
 * HOST a name, an IPv4 address or an [IPv6] address; or etcdctl's
 * HOST:PORT, which means https:// when TLS is configured and http://
 * otherwise.  A trailing '/' is dropped (requests add their own paths);
 * anything else after the authority (a path, a query, a fragment) and
 * user@ (credentials belong in the auth settings, not in a URL that is
 * logged and shown in /proc/mounts) is refused.
 *
 * What it cannot do: resolve names or check that anything listens there
 * (the transport finds out), or take DNS SRV discovery (etcdctl's
 * --discovery-srv).
 *
 * It includes nothing else of helper/, so that any layer may use it.
 */
#ifndef ETCDFS_ENDPOINT_H
#define ETCDFS_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * etcdctl's defaults: 2 s to connect, 5 s a request.  Plain literals, so
 * that --help can print them.
 */
#define ENDPOINT_DEFAULT		"http://127.0.0.1:2379"
#define ENDPOINT_DIAL_TIMEOUT_MS	2000
#define ENDPOINT_COMMAND_TIMEOUT_MS	5000
/* No timeout is longer: a request that waits an hour is a hang. */
#define ENDPOINT_TIMEOUT_MAX_MS		(3600L * 1000)

struct endpoint_list {
	char **urls;	/* owned; lower-case scheme, no trailing '/' */
	size_t n;
};

/*
 * Parses the comma list @list into @l (zeroed first); spaces and tabs
 * around an entry are dropped.  @tls says what HOST:PORT means.  Returns
 * 0, -EINVAL with a one-line message in @why ("bad endpoint 'x': ...",
 * naming the first bad entry) or -ENOMEM.  On error @l holds nothing.
 */
int endpoint_list_parse(struct endpoint_list *l, const char *list, bool tls,
			char *why, size_t why_size);

void endpoint_list_release(struct endpoint_list *l);

/* The URLs of @l joined by commas: a new string, or NULL (no memory). */
char *endpoint_list_join(const struct endpoint_list *l);

/*
 * True if @url is an endpoint URL exactly as endpoint_list_parse would
 * return it (a member's advertised client URL is checked so before it is
 * trusted): scheme, host, maybe a port, nothing else.
 */
bool endpoint_url_ok(const char *url);

/*
 * A timeout in etcdctl's form (Go durations: "500ms", "2s", "1m30s",
 * "1.5s"; units ns, us, ms, s, m, h) or plain milliseconds ("2000"), into
 * *@ms: at least 1 ms, at most ENDPOINT_TIMEOUT_MAX_MS.  Returns 0 or
 * -EINVAL with the reason in @why ("expected ...").
 */
int endpoint_duration_ms(const char *s, long *ms, char *why, size_t why_size);

#endif
