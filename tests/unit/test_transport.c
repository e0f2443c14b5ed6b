/*
 * tests/unit/test_transport.c - the transports (helper/transport.h, the
 * HTTP/1 one of etcd2, and helper/grpc_transport.h, gRPC of etcd3) alone
 *
 * Linked with helper/'s transport library only (helper/meson.build), not
 * the store: the build of this test is the proof that the transports need
 * nothing above them.  It checks what they do with no server: a
 * configuration without endpoints is refused, and a port that nothing
 * listens on (held bound, so no other process can take it) is
 * unreachable, reported as nothing sent.
 *
 * What it cannot test: anything a server answers (the integration tests).
 */
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grpc_frame.h"
#include "grpc_transport.h"
#include "tap.h"
#include "transport.h"

/* A loopback URL of a port bound and not listening: connects are refused. */
static int closed_port(char *url, size_t size)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		tap_diag("no port of our own");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(url, size, "http://127.0.0.1:%d", ntohs(a.sin_port));
	return fd;
}

static bool test_http_no_endpoint(void)
{
	struct transport_config cfg = { 0 };
	struct store_error err = { 0 };

	CHECK(!transport_new(&cfg, &err));
	CHECK(err.code == STORE_EINVAL && strstr(err.msg, "no endpoint"));
	return true;
}

static bool test_http_unreachable(void)
{
	char url[64];
	const char *eps[] = { url };
	struct transport_config cfg = {
		.endpoints = eps,
		.n_endpoints = 1,
		.connect_timeout_ms = 2000,
		.request_timeout_ms = 2000,
	};
	struct transport_reply reply;
	struct store_error err = { 0 };
	struct transport *t;
	int fd = closed_port(url, sizeof(url));
	int rc;

	CHECK(fd >= 0);
	t = transport_new(&cfg, &err);
	CHECK(t);
	rc = transport_request(t, "GET", "/v2/keys/a", NULL, NULL, 0, &reply,
			       &err);
	transport_free(t);
	close(fd);
	if (rc != STORE_EUNREACHABLE)
		tap_diag("returned %s: %s", store_errname(rc), err.msg);
	CHECK(rc == STORE_EUNREACHABLE);
	return true;
}

static bool test_grpc_no_endpoint(void)
{
	struct grpc_transport_config cfg = { 0 };
	struct store_error err = { 0 };

	CHECK(!grpc_transport_new(&cfg, &err));
	CHECK(err.code == STORE_EINVAL);
	return true;
}

static bool test_grpc_unreachable(void)
{
	char url[64];
	const char *eps[] = { url };
	struct grpc_transport_config cfg = {
		.endpoints = eps,
		.n_endpoints = 1,
		.connect_timeout_ms = 2000,
		.request_timeout_ms = 2000,
	};
	uint8_t frame[5];
	struct grpc_reply reply = { 0 };
	struct store_error err = { 0 };
	struct grpc_transport *t;
	bool sent = true;
	int fd = closed_port(url, sizeof(url));
	int rc;

	CHECK(fd >= 0);
	t = grpc_transport_new(&cfg, &err);
	CHECK(t);
	grpc_frame_prefix(frame, 0);
	rc = grpc_call(t, "/etcdserverpb.Maintenance/Status", frame,
		       sizeof(frame), GRPC_CALL_IDEMPOTENT, &reply, &sent,
		       &err);
	grpc_reply_release(&reply);
	grpc_transport_free(t);
	close(fd);
	if (rc != STORE_EUNREACHABLE || sent)
		tap_diag("returned %s (sent %d): %s", store_errname(rc), sent,
			 err.msg);
	CHECK(rc == STORE_EUNREACHABLE && !sent);
	return true;
}

int main(void)
{
	TAP_RUN(test_http_no_endpoint);
	TAP_RUN(test_http_unreachable);
	TAP_RUN(test_grpc_no_endpoint);
	TAP_RUN(test_grpc_unreachable);
	return tap_done(0);
}
