/*
 * test_store_net.c - the store (helper/store.h) against a real etcd: the
 * network: failover between endpoints, unreachable and silent servers
 * (tests/lib/garbage-server.py), sizes, TLS and auth (an etcd of the
 * case's own, through tests/lib/etcd.sh, stopped before the case returns,
 * pass or fail); the hostile gRPC replies are test_store_grpc.c's
 *
 * Runs under tests/lib/with-etcd, which gives it a private etcd in
 * ETCDFS_TEST_ENDPOINTS and a scratch dir in ETCDFS_TEST_DIR.  Every case
 * works under a key prefix of its own and cross-checks what etcd holds with
 * etcdctl (tests/integration/ctl.c), never with the store under test.
 *
 * What it cannot test: a peer that vanishes in the middle of a request
 * (test_leader.c), the etcd2 backend (test_store_v2.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"
#include "ctl.h"

/* ---- a refused port ---- */

/* A port on 127.0.0.1 nothing listens on (connections are refused). */
static int dead_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		close(fd);
		return -1;
	}
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* ---- endpoints ---- */

static bool test_failover(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.prefix = "/t/fo/",
		.connect_timeout_ms = 1000,
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	char eps[512];
	struct store *s;
	long long t0;
	int rc;

	CHECK(ctl_put("/t/fo/k", "v"));
	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,http://127.0.0.1:%d,%s",
		 dead_port(), dead_port(), ctl_endpoint);
	cfg.endpoints = eps;
	s = util_store_open(&cfg);
	CHECK(s);
	t0 = util_now_ms();
	util_watchdog_arm(20000, "test_failover", NULL, 0);
	rc = store_get(s, S("k"), 0, &kv, &err);
	util_watchdog_disarm();
	CHECK_RC(rc, STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("v")));
	store_kv_release(&kv);
	CHECK(util_now_ms() - t0 < 5000);
	CHECK(strcmp(store_endpoint(s), ctl_endpoint) == 0);
	/* and it stays there */
	CHECK_RC(store_create(s, S("k2"), S("v2"), 0, NULL, &err), STORE_OK);
	CHECK(ctl_has("/t/fo/k2", "v2"));
	CHECK(strcmp(store_endpoint(s), ctl_endpoint) == 0);
	store_free(s);
	return true;
}

/* Every kind of call on @s, whose endpoints are all dead: unreachable. */
static bool unreachable_calls(struct store *s)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store_list l = { 0 };
	int64_t rev;

	CHECK_RC(store_revision(s, &rev, &err), STORE_EUNREACHABLE);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNREACHABLE);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_EUNREACHABLE);
	store_list_release(&l);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s, S("k"), S("v"), 0, NULL, &err),
		 STORE_EUNREACHABLE);
	return true;
}

static bool test_unreachable(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 2000,
	};
	struct store *s;
	char eps[128];
	long long t0;
	bool ok;

	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,http://127.0.0.1:%d",
		 dead_port(), dead_port());
	cfg.endpoints = eps;
	s = util_store_open(&cfg);
	CHECK(s);
	/* a case that fails returns with the watchdog disarmed */
	util_watchdog_arm(20000, "test_unreachable", NULL, 0);
	t0 = util_now_ms();
	ok = unreachable_calls(s);
	util_watchdog_disarm();
	store_free(s);
	CHECK(ok);
	CHECK(util_now_ms() - t0 < 10000);
	return true;
}

/* ---- sizes ---- */

/* A try_update that returns a value of *@arg bytes. */
static int grow_fn(void *arg, const struct store_kv *cur,
		   struct store_update *out)
{
	const size_t *big = arg;

	out->value = util_xmalloc(*big);
	memset(out->value, 'B', *big);
	out->value_len = *big;
	out->lease = -1;
	return 0;
}

static bool test_too_large(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ctl_endpoint,
		.prefix = "/t/big/",
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	size_t big = 2u << 20;
	char *v = util_xmalloc(big);
	struct store *s, *s4;
	int64_t mod;

	memset(v, 'x', big);
	s = util_store_open(&cfg);
	CHECK(s);
	CHECK(store_max_value_size(s) == 1536u * 1024);

	/* refused by the store before sending */
	CHECK_RC(store_create(s, S("huge"), v, big, 0, NULL, &err),
		 STORE_ETOOLARGE);
	CHECK(ctl_lacks("/t/big/huge"));

	/* refused by etcd when the store lets it through */
	cfg.max_value_size = 4u << 20;
	s4 = util_store_open(&cfg);
	CHECK(s4);
	CHECK(store_max_value_size(s4) == 4u << 20);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s4, S("huge"), v, big, 0, NULL, &err),
		 STORE_ETOOLARGE);
	CHECK(ctl_lacks("/t/big/huge"));

	/* an update that grows too large leaves the key as it was */
	CHECK(ctl_put("/t/big/small", "s"));
	mod = ctl_mod("/t/big/small");
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_guaranteed_update(s, S("small"), false, NULL, NULL,
					 grow_fn, &big, NULL, &err),
		 STORE_ETOOLARGE);
	CHECK(ctl_mod("/t/big/small") == mod);

	/* a large value under the limit goes through whole */
	CHECK_RC(store_create(s, S("mib"), v, 1u << 20, 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("mib"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("mib"), v, 1u << 20));
	store_kv_release(&kv);
	free(v);
	store_free(s4);
	store_free(s);
	return true;
}

/* ---- hostile servers (the gRPC ones: test_store_grpc.c) ---- */

/* A request to a server that never answers times out in bounded time. */
static bool test_timeout(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 700,
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct util_garbage g;
	struct store *s;
	long long t0, took;
	int rc;

	if (!util_garbage_start(&g, false, "silent", 0))
		return false;
	cfg.endpoints = g.url;
	s = util_store_open(&cfg);
	if (!s) {
		util_garbage_stop(&g);
		return false;
	}
	util_watchdog_arm(10000, "test_timeout", &g.pid, 1);
	t0 = util_now_ms();
	rc = store_get(s, S("k"), 0, &kv, &err);
	took = util_now_ms() - t0;
	util_watchdog_disarm();
	store_free(s);
	util_garbage_stop(&g);
	tap_diag("timed out after %lld ms", took);
	CHECK_RC(rc, STORE_ETIMEOUT);
	CHECK(took >= 600 && took < 4000);
	return true;
}

/* ---- TLS ---- */

static bool tls_refused(const char *what, const char *certs, const char *ep,
			const char *cacert, const char *cert, const char *key,
			bool want_cert_msg)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = ep,
		.prefix = "/tls/",
		.connect_timeout_ms = 2000,
		.request_timeout_ms = 3000,
	};
	char ca[PATH_MAX + 32], c[PATH_MAX + 32], k[PATH_MAX + 32];
	struct store_error err = { 0 };
	struct store *s;
	long long t0;
	int rc;

	if (cacert) {
		snprintf(ca, sizeof(ca), "%s/%s", certs, cacert);
		cfg.cacert = ca;
	}
	if (cert) {
		snprintf(c, sizeof(c), "%s/%s", certs, cert);
		snprintf(k, sizeof(k), "%s/%s", certs, key);
		cfg.cert = c;
		cfg.key = k;
	}
	s = util_store_open(&cfg);
	if (!s)
		return false;
	t0 = util_now_ms();
	util_watchdog_arm(30000, "tls_refused", NULL, 0);
	rc = store_create(s, S("refused"), S("x"), 0, NULL, &err);
	util_watchdog_disarm();
	store_free(s);
	tap_diag("%s: %s (%lld ms): %s", what, store_errname(rc),
		 util_now_ms() - t0, err.msg);
	if (rc == STORE_OK || rc == STORE_EINTERNAL || err.code != rc ||
	    err.msg[0] == '\0') {
		tap_diag("%s: not refused clearly", what);
		return false;
	}
	/* a handshake etcd refused ran nothing: never "may have been applied" */
	if (rc == STORE_EUNKNOWN) {
		tap_diag("%s: an unknown outcome for a refused handshake", what);
		return false;
	}
	if (want_cert_msg && !strcasestr(err.msg, "certificate") &&
	    !strcasestr(err.msg, "ssl") && !strcasestr(err.msg, "tls")) {
		tap_diag("%s: the message does not name the certificate", what);
		return false;
	}
	if (util_now_ms() - t0 > 8000) {
		tap_diag("%s: took too long", what);
		return false;
	}
	return true;
}

static bool tls_cases(struct util_etcd *e, const char *certs)
{
	char ca[PATH_MAX + 32], c[PATH_MAX + 32], k[PATH_MAX + 32];
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = e->endpoint,
		.prefix = "/tls/",
		.cacert = ca,
		.cert = c,
		.key = k,
	};
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct ctl_list cl;
	struct store *s;
	char local[160];
	const char *port;

	snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
	snprintf(c, sizeof(c), "%s/client.pem", certs);
	snprintf(k, sizeof(k), "%s/client-key.pem", certs);
	CHECK(strncmp(e->endpoint, "https://", 8) == 0);

	s = util_store_open(&cfg);
	CHECK(s);
	CHECK_RC(store_create(s, S("k"), S("secret"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("secret")));
	store_kv_release(&kv);
	store_free(s);
	CHECK(ctl_range(e->ctl, "/tls/k", &cl));
	CHECK(cl.n == 1 && util_mem_is(cl.kvs[0].value, cl.kvs[0].value_len,
				  S("secret")));
	ctl_list_release(&cl);

	/* the server's name is checked: localhost is in its certificate */
	port = strrchr(e->endpoint, ':');
	CHECK(port);
	snprintf(local, sizeof(local), "https://localhost%s", port);
	cfg.endpoints = local;
	s = util_store_open(&cfg);
	CHECK(s);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	store_kv_release(&kv);
	store_free(s);

	CHECK(tls_refused("wrong ca", certs, e->endpoint, "other-ca.pem",
			  "client.pem", "client-key.pem", true));
	CHECK(tls_refused("system ca", certs, e->endpoint, NULL,
			  "client.pem", "client-key.pem", true));
	CHECK(tls_refused("no client certificate", certs, e->endpoint,
			  "ca.pem", NULL, NULL, false));
	CHECK(tls_refused("client certificate of another ca", certs,
			  e->endpoint, "ca.pem", "other-client.pem",
			  "other-client-key.pem", false));
	CHECK(ctl_range(e->ctl, "/tls/refused", &cl));
	CHECK(cl.n == 0);
	ctl_list_release(&cl);
	return true;
}

static bool test_tls(void)
{
	struct util_etcd e;
	char certs[PATH_MAX];
	bool ok;

	snprintf(certs, sizeof(certs), "%s/certs", util_scratch);
	CHECK(util_sh("'%s/lib/etcd.sh' certs '%s'", util_tests_dir,
		      certs) == 0);
	if (!util_etcd_start(&e, "etcd-tls", certs, NULL)) {
		util_etcd_stop(&e);
		return false;
	}
	ok = tls_cases(&e, certs);
	util_etcd_stop(&e);
	return ok;
}

/* ---- auth ---- */

#define AUTH_TTL 2

static bool auth_setup(struct util_etcd *e)
{
	static const char *cmds[] = {
		"user add root --new-user-password=rootpw",
		"role add root",
		"user grant-role root root",
		"role add rw",
		"role grant-permission rw --prefix=true readwrite /app/",
		"role add ro",
		"role grant-permission ro --prefix=true read /app/",
		"user add alice --new-user-password=alicepw",
		"user grant-role alice rw",
		"user add bob --new-user-password=bobpw",
		"user grant-role bob ro",
		"auth enable",
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		CHECK(util_sh("%s %s >/dev/null 2>&1", e->ctl, cmds[i]) == 0);
	return true;
}

static struct store *auth_store(struct util_etcd *e, const char *user,
				const char *password, const char *prefix)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = e->endpoint,
		.prefix = prefix,
		.user = user,
		.password = password,
		.connect_timeout_ms = 2000,
		.request_timeout_ms = 3000,
	};

	return util_store_open(&cfg);
}

static bool auth_cases(struct util_etcd *e)
{
	struct store_error err = { 0 };
	struct store_kv kv = { 0 };
	struct store_list l = { 0 };
	struct store *s;
	struct ctl_list cl;
	char ctl[sizeof(e->ctl) + 64], *tok, *out, *p, *q;
	int64_t rev;

	CHECK(auth_setup(e));
	snprintf(ctl, sizeof(ctl), "%s --user=root:rootpw", e->ctl);

	/* a real user with a read-write role */
	s = auth_store(e, "alice", "alicepw", "/app/");
	CHECK(s);
	CHECK_RC(store_create(s, S("k"), S("by alice"), 0, NULL, &err),
		 STORE_OK);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("by alice")));
	store_kv_release(&kv);
	CHECK_RC(store_list(s, "", 0, 0, &l, &err), STORE_OK);
	CHECK(l.n == 1);
	store_list_release(&l);
	CHECK(ctl_range(ctl, "/app/k", &cl));
	CHECK(cl.n == 1 && util_mem_is(cl.kvs[0].value, cl.kvs[0].value_len,
				  S("by alice")));
	ctl_list_release(&cl);

	/*
	 * The token expires AUTH_TTL seconds after its last use (checked
	 * by hand below); the store must get a new one and carry on.
	 */
	tok =
	    util_sh_out("curl -s -X POST -d '{\"name\":\"alice\",\"password\":"
			"\"alicepw\"}' %s/v3/auth/authenticate",
			e->endpoint);
	CHECK(tok);
	p = strstr(tok, "\"token\":\"");
	CHECK(p);
	p += 9;
	q = strchr(p, '"');
	CHECK(q);
	*q = '\0';
	util_sleep_ms(AUTH_TTL * 1000 + 2000);
	out = util_sh_out("curl -s -X POST -H 'Authorization: %s' "
		     "-d '{\"key\":\"L2FwcC9r\"}' %s/v3/kv/range", p,
		     e->endpoint);
	free(tok);
	CHECK(out);
	if (!strstr(out, "invalid auth token"))
		tap_diag("an idle token still works: %s", out);
	CHECK(strstr(out, "invalid auth token"));
	free(out);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	CHECK(util_kv_is(&kv, S("k"), S("by alice")));
	store_kv_release(&kv);
	util_sleep_ms(AUTH_TTL * 1000 + 2000);
	CHECK_RC(store_create(s, S("k2"), S("after expiry"), 0, NULL, &err),
		 STORE_OK);
	CHECK(ctl_range(ctl, "/app/k2", &cl));
	CHECK(cl.n == 1);
	ctl_list_release(&cl);

	/* authenticated, but not allowed outside her prefix */
	store_free(s);
	s = auth_store(e, "alice", "alicepw", "/other/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s, S("k"), S("x"), 0, NULL, &err),
		 STORE_EPERMISSION);
	store_free(s);

	/* a read-only user reads, and cannot write */
	s = auth_store(e, "bob", "bobpw", "/app/");
	CHECK(s);
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_OK);
	store_kv_release(&kv);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_create(s, S("bob"), S("x"), 0, NULL, &err),
		 STORE_EPERMISSION);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_delete(s, S("k"), NULL, NULL, NULL, &err),
		 STORE_EPERMISSION);
	store_free(s);
	CHECK(ctl_range(ctl, "/app/ --prefix", &cl));
	CHECK(cl.n == 2);
	ctl_list_release(&cl);

	/* a wrong password */
	s = auth_store(e, "alice", "wrong", "/app/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_revision(s, &rev, &err), STORE_EUNAUTHENTICATED);
	store_free(s);

	/* an unknown user */
	s = auth_store(e, "mallory", "x", "/app/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	store_free(s);

	/* no credentials on a cluster that wants them */
	s = auth_store(e, NULL, NULL, "/app/");
	CHECK(s);
	memset(&err, 0, sizeof(err));
	CHECK_RC(store_get(s, S("k"), 0, &kv, &err), STORE_EUNAUTHENTICATED);
	store_free(s);
	return true;
}

/* A watch with a token gets its events. */
static bool auth_watch(struct util_etcd *e)
{
	struct store_error err = { 0 };
	struct store_watch *w = NULL;
	struct util_evlog log;
	struct store *s = auth_store(e, "alice", "alicepw", "/app/");
	char ctl[sizeof(e->ctl) + 64];
	int64_t rev = 0;
	bool ok;

	CHECK(s);
	snprintf(ctl, sizeof(ctl), "%s --user=alice:alicepw", e->ctl);
	util_evlog_init(&log);
	CHECK_RC(store_revision(s, &rev, &err), STORE_OK);
	CHECK_RC(store_watch(s, "", 0, true, rev + 1, util_on_event, &log, &w,
			     &err), STORE_OK);
	CHECK(util_sh("%s put /app/w watched >/dev/null", ctl) == 0);
	ok = util_evlog_wait(&log, 1, 10000) >= 1;
	pthread_mutex_lock(&log.lock);
	ok = ok && util_ev_is(&log.evs[0], STORE_EV_PUT, S("w"), S("watched"));
	pthread_mutex_unlock(&log.lock);
	store_watch_stop(w);
	util_evlog_release(&log);
	store_free(s);
	return ok;
}

static bool test_auth(void)
{
	struct util_etcd e;
	char args[64];
	bool ok;

	snprintf(args, sizeof(args), "--auth-token=simple --auth-token-ttl=%d",
		 AUTH_TTL);
	if (!util_etcd_start(&e, "etcd-auth", NULL, args)) {
		util_etcd_stop(&e);
		return false;
	}
	ok = auth_cases(&e) && auth_watch(&e);
	util_etcd_stop(&e);
	return ok;
}

int main(void)
{
	if (!ctl_setup())
		return 1;
	TAP_RUN(test_failover);
	TAP_RUN(test_unreachable);
	TAP_RUN(test_timeout);
	TAP_RUN(test_too_large);
	TAP_RUN(test_tls);
	TAP_RUN(test_auth);
	return tap_done(0);
}
