/*
 * visible.c - etcdfs-visible: how soon another client's new key is
 * readable through a mount (tests/bench/run.sh, workload 7)
 *
 *   etcdfs-visible --endpoint URL --prefix P --dir MNT [--depth N]
 *                  [--iters N] [--timeout-ms N] [--name S]
 *
 * Each iteration creates, through the helper (another client than the
 * mount), the key P "S-NNNN/d1/.../k" with --depth directories that did
 * not exist (default 4), then opens and reads MNT/S-NNNN/d1/.../k until
 * it holds the value, every 50 µs.  It prints, as name=value pairs, the
 * median and the worst time from etcd's acknowledgement of the put to the
 * first read of the value (visible_p50_us, visible_max_us), the put's own
 * round trip (put_p50_us), and how many keys were not readable within the
 * timeout (lost).
 *
 * What it cannot do: tell the watch's delay from the mount's; poll faster
 * than its sleeps, so a figure is at most about 50 µs plus a loop late.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "store.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("etcdfs-visible: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long parse_num(const char *s, const char *what, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		die("bad %s '%s': expected 1 to %ld", what, s, max);
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Does @path hold exactly @val (@len bytes)? */
static bool holds(const char *path, const char *val, size_t len)
{
	char buf[256];
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		if (errno != ENOENT)
			die("open '%s': %s", path, strerror(errno));
		return false;
	}
	r = read(fd, buf, sizeof(buf));
	close(fd);
	return r == (ssize_t)len && memcmp(buf, val, len) == 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },
		{ "depth", required_argument, NULL, 'D' },
		{ "iters", required_argument, NULL, 'i' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "name", required_argument, NULL, 'N' },
		{ 0 }
	};
	const char *endpoint = NULL, *prefix = "", *dir = NULL, *name = "vis";
	long depth = 4, iters = 20, timeout_ms = 5000, i, d, got = 0;
	struct store_config cfg = { .api = STORE_API_V3 };
	struct store_error err;
	double *vis, *put;
	struct store *s;
	int64_t rev;
	int c;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'e': endpoint = optarg; break;
		case 'p': prefix = optarg; break;
		case 'd': dir = optarg; break;
		case 'D': depth = parse_num(optarg, "depth", 64); break;
		case 'i': iters = parse_num(optarg, "iters", 100000); break;
		case 'T':
			timeout_ms = parse_num(optarg, "timeout", 3600000);
			break;
		case 'N': name = optarg; break;
		default: return 2;
		}
	}
	if (!endpoint || !dir || optind != argc)
		die("usage: etcdfs-visible --endpoint URL --prefix P --dir MNT "
		    "[--depth N] [--iters N] [--timeout-ms N] [--name S]");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		die("cannot initialise libcurl");
	cfg.endpoints = endpoint;
	cfg.prefix = prefix;
	cfg.request_timeout_ms = 10000;
	s = store_new(&cfg, &err);
	if (!s)
		die("store: %s", err.msg);
	if (store_revision(s, &rev, &err))
		die("cannot reach '%s': %s", endpoint, err.msg);
	vis = calloc((size_t)iters, sizeof(*vis));
	put = calloc((size_t)iters, sizeof(*put));
	if (!vis || !put)
		die("out of memory");
	for (i = 0; i < iters; i++) {
		char key[1024], path[4096], val[64];
		int klen = snprintf(key, sizeof(key), "%.40s-%04ld", name, i);
		int vlen = snprintf(val, sizeof(val), "value %ld", i);
		double t0, t1, t2;

		for (d = 1; d <= depth; d++)
			klen += snprintf(key + klen, sizeof(key) - (size_t)klen,
					 "/d%ld", d);
		klen += snprintf(key + klen, sizeof(key) - (size_t)klen, "/k");
		snprintf(path, sizeof(path), "%s/%s", dir, key);
		t0 = now_us();
		if (store_create(s, key, (size_t)klen, val, (size_t)vlen, 0,
				 NULL, &err))
			die("create '%s': %s", key, err.msg);
		t1 = now_us();
		while (!holds(path, val, (size_t)vlen)) {
			if (now_us() - t1 > (double)timeout_ms * 1e3)
				break;
			usleep(50);
		}
		t2 = now_us();
		if (t2 - t1 > (double)timeout_ms * 1e3)
			continue;
		put[got] = t1 - t0;
		vis[got++] = t2 - t1;
	}
	qsort(vis, (size_t)got, sizeof(*vis), cmp_double);
	qsort(put, (size_t)got, sizeof(*put), cmp_double);
	printf("n=%ld lost=%ld visible_p50_us=%.1f visible_max_us=%.1f "
	       "put_p50_us=%.1f\n", got, iters - got,
	       got ? vis[(got - 1) / 2] : 0, got ? vis[got - 1] : 0,
	       got ? put[(got - 1) / 2] : 0);
	free(vis);
	free(put);
	store_free(s);
	curl_global_cleanup();
	return 0;
}
