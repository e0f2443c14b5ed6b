/*
 * util.c - what the C integration tests share (see util.h)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* vasprintf */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "tap.h"
#include "util.h"

long long util_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void util_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

char *util_vfmt(const char *f, va_list ap)
{
	char *s;

	if (vasprintf(&s, f, ap) < 0) {
		fprintf(stderr, "tests: out of memory\n");
		abort();
	}
	return s;
}

char *util_fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	s = util_vfmt(f, ap);
	va_end(ap);
	return s;
}

void *util_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "tests: out of memory\n");
		abort();
	}
	return p;
}

char *util_xmemdup(const void *p, size_t n)
{
	char *d = util_xmalloc(n + 1);

	memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

int util_sh(const char *f, ...)
{
	va_list ap;
	char *cmd;
	int st;

	va_start(ap, f);
	cmd = util_vfmt(f, ap);
	va_end(ap);
	fflush(stdout);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st)) {
		tap_diag("command did not exit: %s", cmd);
		free(cmd);
		return -1;
	}
	if (WEXITSTATUS(st) != 0)
		tap_diag("command exited with %d: %s", WEXITSTATUS(st), cmd);
	free(cmd);
	return WEXITSTATUS(st);
}

char *util_sh_out(const char *f, ...)
{
	va_list ap;
	char *cmd, *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *p;
	int st;

	va_start(ap, f);
	cmd = util_vfmt(f, ap);
	va_end(ap);
	fflush(stdout);
	p = popen(cmd, "r");
	if (!p) {
		tap_diag("popen failed: %s", cmd);
		free(cmd);
		return NULL;
	}
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 65536 * 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, cap - len - 1, p);
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		tap_diag("command failed (%d): %s", st, cmd);
		free(cmd);
		free(buf);
		return NULL;
	}
	free(cmd);
	return buf;
}

int util_run(char *out, size_t size, const char *f, ...)
{
	va_list ap;
	char *cmd;
	FILE *p;
	int st;

	va_start(ap, f);
	cmd = util_vfmt(f, ap);
	va_end(ap);
	fflush(stdout);
	p = popen(cmd, "r");
	free(cmd);
	if (!p)
		return -1;
	if (out && size) {
		out[0] = '\0';
		if (fgets(out, (int)size, p))
			out[strcspn(out, "\n")] = '\0';
	}
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool util_cluster_start(struct util_cluster *c, const char *name, int n,
			const char *args)
{
	const char *tmp = getenv("TMPDIR");
	char line[UTIL_MAX_MEMBERS * 130];
	char *p, *q;
	int k;

	memset(c, 0, sizeof(*c));
	c->tests_dir = getenv("TESTS_DIR");
	if (!c->tests_dir || n < 1 || n > UTIL_MAX_MEMBERS) {
		tap_diag("TESTS_DIR must name the tests/ dir");
		return false;
	}
	snprintf(c->tmp_dir, sizeof(c->tmp_dir), "%s/etcdfs-%s.XXXXXX",
		 tmp ? tmp : "/tmp", name);
	if (!mkdtemp(c->tmp_dir)) {
		c->tmp_dir[0] = '\0';
		tap_diag("cannot make a temporary dir");
		return false;
	}
	snprintf(c->dir, sizeof(c->dir), "%s/cluster", c->tmp_dir);
	if (util_run(line, sizeof(line), "'%s/lib/cluster.sh' start '%s' %d %s",
		     c->tests_dir, c->dir, n, args ? args : "") != 0) {
		tap_diag("cannot start a %d-member cluster", n);
		util_cluster_stop(c);
		return false;
	}
	snprintf(c->all, sizeof(c->all), "%s", line);
	for (p = line, k = 0; k < n; k++, p = q + 1) {
		q = strchr(p, ',');
		if (!q)
			q = p + strlen(p);
		snprintf(c->eps[k], sizeof(c->eps[k]), "%.*s", (int)(q - p),
			 p);
		if (!*q) {
			k++;
			break;
		}
	}
	if (k != n) {
		tap_diag("no endpoints in '%s'", c->all);
		util_cluster_stop(c);
		return false;
	}
	c->n = n;
	return true;
}

int util_cluster_cmd(struct util_cluster *c, const char *cmd, const char *f,
		     ...)
{
	va_list ap;
	char *args;
	int rc;

	va_start(ap, f);
	args = util_vfmt(f, ap);
	va_end(ap);
	rc = util_sh("'%s/lib/cluster.sh' %s '%s' %s", c->tests_dir, cmd,
		     c->dir, args);
	free(args);
	return rc;
}

int util_cluster_leader(struct util_cluster *c)
{
	char out[16], *end;
	long k;

	if (util_run(out, sizeof(out), "'%s/lib/cluster.sh' leader '%s' %d",
		     c->tests_dir, c->dir, c->n) != 0)
		return 0;
	k = strtol(out, &end, 10);
	return end != out && !*end && k >= 1 && k <= c->n ? (int)k : 0;
}

void util_cluster_stop(struct util_cluster *c)
{
	if (!c->tmp_dir[0])
		return;
	util_run(NULL, 0, "'%s/lib/cluster.sh' stop '%s'", c->tests_dir,
		 c->dir);
	util_run(NULL, 0, "rm -rf '%s'", c->tmp_dir);
	c->tmp_dir[0] = '\0';
}
