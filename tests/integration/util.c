/*
 * util.c - what the C integration tests share (see util.h)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* vasprintf */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"

extern char **environ;

const char *util_tests_dir;
const char *util_scratch;

long long util_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void util_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

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

	if (n)
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

/*
 * Runs @cmd (freed here) in a shell and returns what it printed
 * (malloc()ed, NUL-terminated, its length in *@len_out if not NULL), or
 * NULL if it could not start or did not exit with 0.
 */
static char *sh_capture(char *cmd, size_t *len_out)
{
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *p;
	int st;

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
	if (len_out)
		*len_out = len;
	return buf;
}

char *util_sh_out(const char *f, ...)
{
	va_list ap;
	char *cmd;

	va_start(ap, f);
	cmd = util_vfmt(f, ap);
	va_end(ap);
	return sh_capture(cmd, NULL);
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
		snprintf(c->eps[k], sizeof(c->eps[k]), "%.*s", (int)(q - p), p);
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

/* ---- keys, stores, etcd servers, watch events ---- */

/* Prints @p as a C string literal into a static buffer, for diagnostics. */
const char *util_show(const char *p, size_t n)
{
	static char buf[4][200];
	static int which;
	char *b = buf[which++ % 4];
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < sizeof(buf[0]); i++) {
		unsigned char c = (unsigned char)p[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			b[o++] = (char)c;
		else
			o += (size_t)snprintf(b + o, sizeof(buf[0]) - o,
					      "\\x%02x", c);
	}
	b[o] = '\0';
	return b;
}

bool util_mem_is(const char *p, size_t n, const char *want, size_t want_n)
{
	return n == want_n && (n == 0 || memcmp(p, want, n) == 0);
}

/* True if @kv holds @key and @value, both NUL-terminated past their end. */
bool util_kv_is(const struct store_kv *kv, const char *key, size_t key_len,
		const char *value, size_t value_len)
{
	if (!kv->key || !util_mem_is(kv->key, kv->key_len, key, key_len)) {
		tap_diag("key is '%s', expected '%s'",
			 kv->key ? util_show(kv->key, kv->key_len) : "(null)",
			 util_show(key, key_len));
		return false;
	}
	if (!kv->value ||
	    !util_mem_is(kv->value, kv->value_len, value, value_len)) {
		tap_diag("value of '%s' is '%s', expected '%s'",
			 util_show(key, key_len),
			 kv->value ? util_show(kv->value, kv->value_len)
				   : "(null)",
			 util_show(value, value_len));
		return false;
	}
	if (kv->key[kv->key_len] != '\0' || kv->value[kv->value_len] != '\0') {
		tap_diag("key or value of '%s' not NUL-terminated",
			 util_show(key, key_len));
		return false;
	}
	return true;
}

struct store *util_store_open(const struct store_config *cfg)
{
	struct store_error err;
	struct store *s;

	memset(&err, 0, sizeof(err));
	s = store_new(cfg, &err);
	if (!s)
		tap_diag("store_new: %s (%s)", err.msg,
			 store_errname(err.code));
	return s;
}

/* A bad configuration is refused by store_new with EINVAL. */
bool util_einval(const struct store_config *cfg, const char *what)
{
	struct store_error err;
	struct store *s;

	memset(&err, 0, sizeof(err));
	s = store_new(cfg, &err);
	if (s) {
		tap_diag("store_new accepted %s", what);
		store_free(s);
		return false;
	}
	if (err.code != STORE_EINVAL || err.msg[0] == '\0') {
		tap_diag("store_new on %s: code %s, msg '%s'", what,
			 store_errname(err.code), err.msg);
		return false;
	}
	return true;
}

int util_incr_fn(void *arg, const struct store_kv *cur,
		 struct store_update *out)
{
	long n = 0;
	char *end;

	(void)arg;
	if (cur) {
		errno = 0;
		n = strtol(cur->value, &end, 10);
		if (errno || end == cur->value || *end)
			return STORE_EINVAL;
	}
	out->value = util_fmt("%ld", n + 1);
	out->value_len = strlen(out->value);
	out->lease = -1;
	return 0;
}

/* Reads the first line of @path into @buf. */
bool util_read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok && buf[0];
}

/*
 * Starts an etcd in @scratch/@name: "start" with @args, or "start-tls"
 * with the certificates in @certs.
 */
bool util_etcd_start(struct util_etcd *e, const char *name, const char *certs,
		     const char *args)
{
	char path[PATH_MAX + 16];

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s/%s", util_scratch, name);
	if (certs) {
		if (util_sh(
			"'%s/lib/etcd.sh' start-tls '%s' '%s' %s >/dev/null",
			util_tests_dir, e->dir, certs,
			args ? args : "") != 0)
			return false;
	} else {
		if (util_sh("'%s/lib/etcd.sh' start '%s' %s >/dev/null",
			    util_tests_dir, e->dir, args ? args : "") != 0)
			return false;
	}
	e->running = true;
	snprintf(path, sizeof(path), "%s/endpoint", e->dir);
	if (!util_read_line(path, e->endpoint, sizeof(e->endpoint))) {
		tap_diag("no endpoint in '%s'", path);
		return false;
	}
	if (certs)
		snprintf(e->ctl, sizeof(e->ctl),
			 "etcdctl --endpoints=%s --cacert='%s/ca.pem' "
			 "--cert='%s/client.pem' --key='%s/client-key.pem' "
			 "--dial-timeout=5s --command-timeout=20s",
			 e->endpoint, certs, certs, certs);
	else
		snprintf(e->ctl, sizeof(e->ctl),
			 "etcdctl --endpoints=%s --dial-timeout=5s "
			 "--command-timeout=20s",
			 e->endpoint);
	return true;
}

void util_etcd_stop(struct util_etcd *e)
{
	if (e->running)
		util_sh("'%s/lib/etcd.sh' stop '%s'", util_tests_dir, e->dir);
	e->running = false;
}

void util_evlog_init(struct util_evlog *l)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
}

void util_evlog_release(struct util_evlog *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->evs[i].key);
		free(l->evs[i].value);
		free(l->evs[i].prev_value);
	}
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
}

void util_on_event(void *arg, const struct store_event *ev)
{
	struct util_evlog *l = arg;
	struct util_ev *e;

	pthread_mutex_lock(&l->lock);
	if (ev->type == STORE_EV_PROGRESS) {
		l->progress++;
		goto out;
	}
	if (l->n == sizeof(l->evs) / sizeof(l->evs[0])) {
		l->dropped++;
		goto out;
	}
	e = &l->evs[l->n++];
	memset(e, 0, sizeof(*e));
	e->type = ev->type;
	e->revision = ev->revision;
	e->err = ev->err;
	e->compact_revision = ev->compact_revision;
	if (ev->type == STORE_EV_PUT || ev->type == STORE_EV_DELETE) {
		e->key =
		    util_xmemdup(ev->kv.key ? ev->kv.key : "", ev->kv.key_len);
		e->key_len = ev->kv.key_len;
		e->value = util_xmemdup(ev->kv.value ? ev->kv.value : "",
					ev->kv.value_len);
		e->value_len = ev->kv.value_len;
		e->mod_revision = ev->kv.mod_revision;
		e->create_revision = ev->kv.create_revision;
		e->version = ev->kv.version;
		if (ev->prev_kv.key) {
			e->prev_value = util_xmemdup(
			    ev->prev_kv.value ? ev->prev_kv.value : "",
			    ev->prev_kv.value_len);
			e->prev_len = ev->prev_kv.value_len;
		}
		if (e->mod_revision <= l->last_revision)
			l->out_of_order = true;
		l->last_revision = e->mod_revision;
	}
out:
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

/* Waits until @l holds @n events or @ms pass; returns how many it holds. */
size_t util_evlog_wait(struct util_evlog *l, size_t n, long ms)
{
	long long deadline = util_now_ms() + ms;
	size_t got;

	pthread_mutex_lock(&l->lock);
	while (l->n < n) {
		long long left = deadline - util_now_ms();
		struct timespec ts;

		if (left <= 0)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&l->cond, &l->lock, &ts);
	}
	got = l->n;
	pthread_mutex_unlock(&l->lock);
	return got;
}

bool util_ev_is(const struct util_ev *e, enum store_event_type type,
		const char *key, size_t key_len, const char *value,
		size_t value_len)
{
	if (e->type != type) {
		tap_diag("event type %d, expected %d (err %s)", e->type, type,
			 store_errname(e->err));
		return false;
	}
	if (!util_mem_is(e->key, e->key_len, key, key_len)) {
		tap_diag("event key '%s', expected '%s'",
			 util_show(e->key, e->key_len),
			 util_show(key, key_len));
		return false;
	}
	if (type == STORE_EV_PUT &&
	    !util_mem_is(e->value, e->value_len, value, value_len)) {
		tap_diag("event value '%s', expected '%s'",
			 util_show(e->value, e->value_len),
			 util_show(value, value_len));
		return false;
	}
	return true;
}

/*
 * Runs a shell command and returns what it printed (malloc()ed,
 * NUL-terminated, its length in *@len if not NULL), or NULL if it failed.
 */
char *util_sh_out_len(size_t *len_out, const char *f, ...)
{
	va_list ap;
	char *cmd;

	va_start(ap, f);
	cmd = util_vfmt(f, ap);
	va_end(ap);
	return sh_capture(cmd, len_out);
}

/* ---- the garbage servers ---- */

/* Reads the port the server prints on its first line; 0 on failure. */
static long garbage_port(int fd)
{
	char line[32];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	char *end;
	long port;

	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		ssize_t n;

		if (poll(&pfd, 1, 10000) <= 0)
			break;
		n = read(fd, line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	line[got] = '\0';
	errno = 0;
	port = strtol(line, &end, 10);
	if (errno || end == line || *end != '\n' || port <= 0 || port > 65535)
		return 0;
	return port;
}

bool util_server_start(struct util_garbage *g, const char *const *argv)
{
	posix_spawn_file_actions_t fa;
	int fds[2], rc;
	long port;

	memset(g, 0, sizeof(*g));
	if (pipe2(fds, O_CLOEXEC) < 0)
		return false;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	rc = posix_spawnp(&g->pid, argv[0], &fa, NULL, (char *const *)argv,
			  environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		tap_diag("cannot start '%s': %s", argv[0], strerror(rc));
		close(fds[0]);
		g->pid = 0;
		return false;
	}
	port = garbage_port(fds[0]);
	close(fds[0]);
	if (!port) {
		tap_diag("'%s %s' printed no port", argv[0],
			 argv[1] ? argv[1] : "");
		kill(g->pid, SIGTERM);
		waitpid(g->pid, NULL, 0);
		g->pid = 0;
		return false;
	}
	g->port = (int)port;
	snprintf(g->url, sizeof(g->url), "http://127.0.0.1:%ld", port);
	return true;
}

bool util_garbage_start(struct util_garbage *g, bool h2, const char *mode,
			size_t size)
{
	char script[PATH_MAX], sizebuf[32];
	const char *argv[8];
	int i = 0;

	snprintf(script, sizeof(script), "%s/lib/%s", util_tests_dir,
		 h2 ? "grpc-garbage-server.py" : "garbage-server.py");
	snprintf(sizebuf, sizeof(sizebuf), "%zu", size ? size : 1u << 20);
	/* the HTTP/2 one by its own #! line: the python3 that has h2 */
	if (!h2)
		argv[i++] = "python3";
	argv[i++] = script;
	argv[i++] = mode;
	argv[i++] = "--size";
	argv[i++] = sizebuf;
	argv[i++] = "--lifetime";
	argv[i++] = "300";
	argv[i] = NULL;
	return util_server_start(g, argv);
}

void util_garbage_stop(struct util_garbage *g)
{
	if (g->pid > 0) {
		kill(g->pid, SIGTERM);
		waitpid(g->pid, NULL, 0);
	}
	g->pid = 0;
}

/* ---- a TCP proxy that loses answers ---- */

/*
 * The next line @p said, without its newline, into @line; false if none
 * came within @ms.
 */
static bool proxy_line(struct util_proxy *p, char *line, size_t size, long ms)
{
	struct pollfd pfd = { .fd = p->out, .events = POLLIN };
	long long until = util_now_ms() + ms;
	char *nl;
	ssize_t n;

	while (!(nl = memchr(p->buf, '\n', p->len))) {
		long left = (long)(until - util_now_ms());

		if (p->len == sizeof(p->buf) || left <= 0 ||
		    poll(&pfd, 1, (int)left) <= 0)
			return false;
		n = read(p->out, p->buf + p->len, sizeof(p->buf) - p->len);
		if (n <= 0)
			return false;
		p->len += (size_t)n;
	}
	n = nl - p->buf < (ssize_t)size ? nl - p->buf : (ssize_t)size - 1;
	memcpy(line, p->buf, (size_t)n);
	line[n] = '\0';
	p->len -= (size_t)(nl + 1 - p->buf);
	memmove(p->buf, nl + 1, p->len);
	return true;
}

/* Sends @p the command @cmd and waits for the line @want. */
static bool proxy_tell(struct util_proxy *p, const char *cmd, const char *want)
{
	char line[128] = "";
	size_t len = strlen(cmd);

	if (write(p->in, cmd, len) != (ssize_t)len ||
	    write(p->in, "\n", 1) != 1 ||
	    !proxy_line(p, line, sizeof(line), 10000) || strcmp(line, want)) {
		tap_diag("proxy: '%s' answered '%s', not '%s'", cmd, line,
			 want);
		return false;
	}
	return true;
}

bool util_proxy_start(struct util_proxy *p, const char *target, int port)
{
	posix_spawn_file_actions_t fa;
	char script[PATH_MAX], sport[16], starget[16], line[32] = "";
	const char *colon = strrchr(target, ':');
	const char *argv[5];
	int in[2], out[2], rc;
	char *end;
	long v;

	memset(p, 0, sizeof(*p));
	p->in = p->out = -1;
	if (!colon)
		return false;
	snprintf(script, sizeof(script), "%s/lib/tcp_proxy.py", util_tests_dir);
	snprintf(sport, sizeof(sport), "%d", port);
	snprintf(starget, sizeof(starget), "%s", colon + 1);
	argv[0] = "python3";
	argv[1] = script;
	argv[2] = sport;
	argv[3] = starget;
	argv[4] = NULL;
	if (pipe2(in, O_CLOEXEC) < 0)
		return false;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return false;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	fflush(stdout);
	rc = posix_spawnp(&p->pid, argv[0], &fa, NULL, (char *const *)argv,
			  environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
	if (rc != 0) {
		tap_diag("cannot start '%s': %s", script, strerror(rc));
		p->pid = 0;
		util_proxy_stop(p);
		return false;
	}
	if (proxy_line(p, line, sizeof(line), 10000)) {
		errno = 0;
		v = strtol(line, &end, 10);
		if (!errno && end != line && !*end && v > 0 && v <= 65535)
			p->port = (int)v;
	}
	if (!p->port) {
		tap_diag("the proxy did not start (it said '%s')", line);
		util_proxy_stop(p);
		return false;
	}
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%d", p->port);
	return true;
}

void util_proxy_stop(struct util_proxy *p)
{
	if (p->losing)
		util_proxy_lost(p);
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	p->pid = 0;
	if (p->in >= 0)
		close(p->in);
	if (p->out >= 0)
		close(p->out);
	p->in = p->out = -1;
	p->len = 0;
}

static void *proxy_lose_main(void *arg)
{
	struct util_proxy *p = arg;
	const char *want = strncmp(p->mode, "lose", 4) ? "swallowed" :
			   "answered";
	char line[128] = "";

	if (!proxy_line(p, line, sizeof(line), 30000) || strcmp(line, want)) {
		tap_diag("proxy: no request came to %s (it said '%s')",
			 p->mode, line);
		return NULL;
	}
	if (p->meanwhile && util_sh("%s", p->meanwhile) != 0)
		return NULL;
	p->lost = proxy_tell(p, p->end, p->end);
	return NULL;
}

static bool proxy_lose(struct util_proxy *p, const char *mode,
		       const char *meanwhile, const char *end)
{
	if (p->losing || !proxy_tell(p, mode, "armed"))
		return false;
	p->mode = mode;
	p->meanwhile = meanwhile;
	p->end = end;
	p->lost = false;
	if (pthread_create(&p->thread, NULL, proxy_lose_main, p) != 0)
		return false;
	p->losing = true;
	return true;
}

bool util_proxy_lose(struct util_proxy *p, const char *mode,
		     const char *meanwhile)
{
	return proxy_lose(p, mode, meanwhile, "cut");
}

bool util_proxy_lose_reset(struct util_proxy *p, const char *mode,
			   const char *meanwhile)
{
	return proxy_lose(p, mode, meanwhile, "reset");
}

bool util_proxy_lost(struct util_proxy *p)
{
	if (!p->losing)
		return false;
	pthread_join(p->thread, NULL);
	p->losing = false;
	return p->lost;
}

/* ---- the watchdog ---- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool armed;		/* protected by lock */
	bool running;		/* the thread; the main thread's only */
	struct timespec until;	/* CLOCK_MONOTONIC */
	const char *what;
	pid_t kill[UTIL_WATCHDOG_KILL];
	size_t n_kill;
} wd = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *wd_main(void *arg)
{
	int rc = 0;

	pthread_mutex_lock(&wd.lock);
	while (wd.armed && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&wd.cond, &wd.lock, &wd.until);
	if (wd.armed) {
		/* the case is stuck inside a call: nothing to undo but
		 * the processes it named */
		printf("Bail out! %s is still running past its bound\n",
		       wd.what);
		fflush(stdout);
		for (size_t i = 0; i < wd.n_kill; i++)
			if (wd.kill[i] > 0)
				kill(wd.kill[i], SIGTERM);
		_exit(1);
	}
	pthread_mutex_unlock(&wd.lock);
	return NULL;
}

void util_watchdog_arm(long ms, const char *what, const pid_t *pids,
		       size_t n)
{
	pthread_condattr_t ca;
	sigset_t all, old;

	/* one at a time: a case that returned past its disarm ends here */
	util_watchdog_disarm();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd.cond, &ca);
	pthread_condattr_destroy(&ca);
	clock_gettime(CLOCK_MONOTONIC, &wd.until);
	wd.until.tv_sec += ms / 1000;
	wd.until.tv_nsec += ms % 1000 * 1000000L;
	if (wd.until.tv_nsec >= 1000000000L) {
		wd.until.tv_sec++;
		wd.until.tv_nsec -= 1000000000L;
	}
	wd.what = what;
	if (n > UTIL_WATCHDOG_KILL)
		abort();
	for (size_t i = 0; i < n; i++)
		wd.kill[i] = pids[i];
	wd.n_kill = n;
	wd.armed = true;
	/* signals stay with the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&wd.thread, NULL, wd_main, NULL) != 0)
		abort();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	wd.running = true;
}

void util_watchdog_disarm(void)
{
	if (!wd.running)
		return;
	wd.running = false;
	pthread_mutex_lock(&wd.lock);
	wd.armed = false;
	pthread_cond_signal(&wd.cond);
	pthread_mutex_unlock(&wd.lock);
	pthread_join(wd.thread, NULL);
	pthread_cond_destroy(&wd.cond);
}
