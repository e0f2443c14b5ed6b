/*
 * bench.c - etcdfs-bench: the timing loops and direct-client baselines of
 * the benchmark suite (tests/bench/run.sh)
 *
 * One program, one subcommand per measurement.  The same code acts on a
 * path (an etcdfs mount or a tmpfs copy of the same files) or, through the
 * helper library (helper/store.h), on etcd itself over one kept-alive
 * connection per thread, so both sides of a comparison pay for the same
 * work.  Times come from CLOCK_MONOTONIC around each operation; results go
 * to stdout as one line of name=value pairs (the "ms" subcommands print one
 * value per line), errors to stderr with a non-zero exit.
 *
 *   load    puts COUNT keys of SIZE bytes under PREFIX, BATCH (128) puts
 *           per txn over gRPC (tests/loader.c), from THREADS threads
 *   files   writes the same keys as files under DIR (the tmpfs copy)
 *   stat    stat() latency of files of the data set, cold or warm
 *   read    open/read/close latency of the same
 *   get     store_get latency of the same keys
 *   list    time of store_list of PREFIX (one range request, or pages of
 *           --page-size keys), per call
 *   write   open/write/close of 1 KiB values from THREADS threads, on DIR
 *   txn     the same writes through store_guaranteed_update, one txn each
 *   inotify delay from a change made through the helper to the first
 *           inotify event naming it on DIR (a mount of PREFIX); exits 3
 *           with na_reason=... if not one event came
 *   raw     the bytes of COUNT keys plus their values
 *
 * The key of index i is PREFIX "k%07zu" (flat) or, with --per-dir M,
 * PREFIX "a%03zu/b%03zu/k%07zu" with M keys per leaf directory and M leaf
 * directories per top one.  Values are printable lines; one in a hundred
 * holds the word "needle" (for grep).
 *
 * What it cannot do: speak TLS or auth to etcd (the suite starts a plain
 * loopback etcd), or measure anything below the syscall (the kernel's and
 * the daemon's shares of a latency are not told apart).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "loader.h"
#include "store.h"


/* exit status of inotify when no event came at all */
#define EXIT_NO_EVENTS 3

struct opts {
	const char *endpoint;
	const char *prefix;
	const char *dir;
	const char *name;
	size_t count;
	size_t size;
	size_t per_dir;
	size_t threads;
	size_t iters;
	size_t files;
	size_t batch;
	size_t page_size;
	long timeout_ms;
	bool cold;
	bool keys_only;
};

static struct opts o = {
	.prefix = "",
	.name = "live",
	.count = 1000,
	.size = 1024,
	.threads = 1,
	.iters = 1000,
	.files = 8,
	.batch = 128,		/* etcd 3.4's default --max-txn-ops */
	.timeout_ms = 2000,
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
							noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("etcdfs-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static size_t parse_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > SIZE_MAX / 2)
		die("bad %s '%s'", what, s);
	return (size_t)v;
}

/* The key of index @i relative to the data set's prefix, into @buf. */
static int key_name(size_t i, char *buf, size_t len)
{
	int n;

	if (o.per_dir)
		n = snprintf(buf, len, "a%03zu/b%03zu/k%07zu",
			     i / (o.per_dir * o.per_dir),
			     (i / o.per_dir) % o.per_dir, i);
	else
		n = snprintf(buf, len, "k%07zu", i);
	if (n < 0 || (size_t)n >= len)
		die("key name too long");
	return n;
}

/*
 * The value of key @i: @size bytes of lines of 63 letters, the first line
 * naming the key, "needle" in one key out of a hundred.  Consecutive
 * letters never spell "needle" by chance.
 */
static void value_fill(size_t i, char *buf, size_t size)
{
	char head[64];
	int n;
	size_t j;

	for (j = 0; j < size; j++)
		buf[j] = (j % 64 == 63) ? '\n' : (char)('a' + (i + j) % 26);
	n = snprintf(head, sizeof(head), "key %zu%s ", i,
		     i % 100 == 0 ? " needle" : "");
	if (n > 0)
		memcpy(buf, head, (size_t)n < size ? (size_t)n : size);
	if (size)
		buf[size - 1] = '\n';
}

static struct store *store_open(void)
{
	struct store_config cfg = {
		.api = STORE_API_V3,
		.endpoints = o.endpoint,
		.prefix = o.prefix,
		/* 0: one request for a whole data set */
		.page_size = o.page_size ? o.page_size : (size_t)1 << 30,
		.request_timeout_ms = 600000,
		.max_reply_size = (size_t)1 << 30,
	};
	struct store_error err;
	struct store *s;
	int64_t rev;

	if (!o.endpoint)
		die("--endpoint is needed");
	s = store_new(&cfg, &err);
	if (!s)
		die("store: %s", err.msg);
	/* connect now, so that no timed call pays for it */
	if (store_revision(s, &rev, &err))
		die("store: cannot reach '%s': %s", o.endpoint, err.msg);
	return s;
}

/* --- statistics --- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The @q quantile (0..1) of @v sorted, nearest rank. */
static double quantile(const double *v, size_t n, double q)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)(q * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static void print_latencies(double *v, size_t n, double wall_us,
			    size_t extra_ops)
{
	double sum = 0;
	size_t i;

	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	printf("n=%zu p50_us=%.2f p99_us=%.2f mean_us=%.2f max_us=%.2f",
	       n, quantile(v, n, 0.5), quantile(v, n, 0.99),
	       n ? sum / (double)n : 0, n ? v[n - 1] : 0);
	if (wall_us > 0)
		printf(" wall_s=%.4f rate=%.1f", wall_us / 1e6,
		       (double)(n + extra_ops) / (wall_us / 1e6));
	putchar('\n');
}

/* --- load: the data set into etcd, or into files --- */

struct loader {
	struct grpc_transport *t;
	atomic_size_t next;	/* the next batch to send */
};

static void *load_main(void *arg)
{
	struct loader *l = arg;
	size_t plen = strlen(o.prefix), ksize = plen + 64;
	struct loader_kv *kvs = xcalloc(o.batch, sizeof(*kvs));
	char *keys = xmalloc(o.batch * ksize);
	char *vals = xmalloc(o.batch * (o.size ? o.size : 1));
	char why[512];

	for (;;) {
		size_t batch = atomic_fetch_add(&l->next, 1);
		size_t first = batch * o.batch, i, n = 0;

		if (first >= o.count)
			break;
		for (i = first; i < o.count && i < first + o.batch; i++, n++) {
			char *key = keys + n * ksize, *val = vals + n * o.size;

			memcpy(key, o.prefix, plen);
			kvs[n].key = key;
			kvs[n].key_len = plen + (size_t)key_name(i, key + plen,
								 64);
			value_fill(i, val, o.size);
			kvs[n].value = val;
			kvs[n].value_len = o.size;
		}
		if (loader_put(l->t, kvs, n, why, sizeof(why)) < 0)
			die("load: %s", why);
	}
	free(vals);
	free(keys);
	free(kvs);
	return NULL;
}

static int cmd_load(void)
{
	struct loader l = { 0 };
	char why[512];
	pthread_t *th;
	double t0;
	size_t i;

	if (!o.endpoint)
		die("--endpoint is needed");
	if (o.batch == 0 || o.batch > LOADER_BATCH)
		die("load: batches of 1 to %d puts", LOADER_BATCH);
	l.t = loader_transport(o.endpoint, why, sizeof(why));
	if (!l.t)
		die("load: %s", why);
	th = xcalloc(o.threads, sizeof(*th));
	t0 = now_us();
	for (i = 0; i < o.threads; i++)
		if (pthread_create(&th[i], NULL, load_main, &l))
			die("load: cannot start a thread");
	for (i = 0; i < o.threads; i++)
		pthread_join(th[i], NULL);
	printf("keys=%zu wall_s=%.3f\n", o.count, (now_us() - t0) / 1e6);
	grpc_transport_free(l.t);
	free(th);
	return 0;
}

/* mkdir -p of the directories of @path, which is writable */
static void mkdirs(char *path)
{
	char *p;

	for (p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			die("mkdir '%s': %s", path, strerror(errno));
		*p = '/';
	}
}

static void write_file(const char *path, const char *buf, size_t len,
		       int flags)
{
	int fd = open(path, O_WRONLY | flags, 0644);
	size_t off = 0;

	if (fd < 0)
		die("open '%s': %s", path, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("write '%s': %s", path, strerror(errno));
		}
		off += (size_t)w;
	}
	if (close(fd))
		die("close '%s': %s", path, strerror(errno));
}

static int cmd_files(void)
{
	char path[PATH_MAX];
	char *val = xmalloc(o.size);
	size_t dlen, i;

	if (!o.dir)
		die("--dir is needed");
	dlen = (size_t)snprintf(path, sizeof(path), "%s/", o.dir);
	if (dlen >= sizeof(path) - 64)
		die("dir too long");
	for (i = 0; i < o.count; i++) {
		key_name(i, path + dlen, sizeof(path) - dlen);
		if (o.per_dir && i % o.per_dir == 0)
			mkdirs(path);
		value_fill(i, val, o.size);
		write_file(path, val, o.size, O_CREAT | O_TRUNC);
	}
	free(val);
	printf("files=%zu\n", o.count);
	return 0;
}

static int cmd_raw(void)
{
	char key[64];
	size_t plen = strlen(o.prefix), sum = 0, i;

	for (i = 0; i < o.count; i++)
		sum += plen + (size_t)key_name(i, key, sizeof(key)) + o.size;
	printf("keys=%zu raw_bytes=%zu\n", o.count, sum);
	return 0;
}

/* --- single-key latencies --- */

/*
 * The data set's keys to sample: @iters of them (at most count), spread
 * evenly over the whole set.
 */
static size_t sample_index(size_t j, size_t n)
{
	return (size_t)((double)j * (double)o.count / (double)n);
}

static double op_stat(const char *path)
{
	struct stat st;
	double t0 = now_us();

	if (stat(path, &st))
		die("stat '%s': %s", path, strerror(errno));
	return now_us() - t0;
}

static double op_read(const char *path, char *buf, size_t cap)
{
	double t0 = now_us();
	int fd = open(path, O_RDONLY);
	size_t total = 0;
	ssize_t r;

	if (fd < 0)
		die("open '%s': %s", path, strerror(errno));
	while ((r = read(fd, buf, cap)) > 0)
		total += (size_t)r;
	if (r < 0)
		die("read '%s': %s", path, strerror(errno));
	if (close(fd))
		die("close '%s': %s", path, strerror(errno));
	t0 = now_us() - t0;
	if (total != o.size)
		die("'%s' holds %zu bytes, expected %zu", path, total, o.size);
	return t0;
}

/*
 * Cold: each sampled file once, on a mount that has seen none of them.
 * Warm: every sampled file once untimed, then @iters timed operations
 * going round the samples.
 */
static int cmd_path_latency(bool is_read)
{
	size_t n = o.cold ? (o.iters < o.count ? o.iters : o.count)
			  : (o.files < o.count ? o.files : o.count);
	size_t total = o.cold ? n : o.iters, dlen, j;
	char **paths = xcalloc(n, sizeof(*paths));
	double *lat = xcalloc(total, sizeof(*lat));
	char buf[65536];
	char path[PATH_MAX];

	if (!o.dir)
		die("--dir is needed");
	if (!n)
		die("nothing to sample");
	dlen = (size_t)snprintf(path, sizeof(path), "%s/", o.dir);
	if (dlen >= sizeof(path) - 64)
		die("dir too long");
	for (j = 0; j < n; j++) {
		key_name(sample_index(j, n), path + dlen, sizeof(path) - dlen);
		paths[j] = strdup(path);
		if (!paths[j])
			die("out of memory");
	}
	if (!o.cold)
		for (j = 0; j < n; j++)
			is_read ? op_read(paths[j], buf, sizeof(buf))
				: op_stat(paths[j]);
	for (j = 0; j < total; j++)
		lat[j] = is_read ? op_read(paths[j % n], buf, sizeof(buf))
				 : op_stat(paths[j % n]);
	print_latencies(lat, total, 0, 0);
	for (j = 0; j < n; j++)
		free(paths[j]);
	free(paths);
	free(lat);
	return 0;
}

static int cmd_get(void)
{
	struct store *s = store_open();
	size_t n = o.files < o.count ? o.files : o.count, j;
	double *lat = xcalloc(o.iters, sizeof(*lat));
	char key[64];

	if (o.cold)
		n = o.iters < o.count ? o.iters : o.count;
	for (j = 0; j < o.iters; j++) {
		struct store_kv kv = { 0 };
		struct store_error err;
		int klen = key_name(sample_index(j % n, n), key, sizeof(key));
		double t0 = now_us();
		int rc = store_get(s, key, (size_t)klen, 0, &kv, &err);

		lat[j] = now_us() - t0;
		if (rc)
			die("get '%s': %s", key, err.msg);
		if (kv.value_len != o.size)
			die("'%s' holds %zu bytes, expected %zu", key,
			    kv.value_len, o.size);
		store_kv_release(&kv);
	}
	print_latencies(lat, o.iters, 0, 0);
	free(lat);
	store_free(s);
	return 0;
}

static int cmd_list(void)
{
	struct store *s = store_open();
	size_t j;

	for (j = 0; j < o.iters; j++) {
		struct store_list l = { 0 };
		struct store_list_stats st;
		struct store_error err;
		double t0 = now_us();
		int rc = store_list(s, "", 0,
				    o.keys_only ? STORE_READ_KEYS_ONLY : 0,
				    &l, &err);
		double t = now_us() - t0;

		if (rc)
			die("list: %s", err.msg);
		if (l.n != o.count)
			die("list: %zu keys, expected %zu", l.n, o.count);
		store_list_release(&l);
		printf("ms=%.3f\n", t / 1e3);
		store_list_stats(s, &st);
		fprintf(stderr, "list: %" PRIu64 " requests, %" PRIu64
			" keys walked, %.1f ms counting, %.1f ms fetching\n",
			st.requests, st.walked, st.count_us / 1e3,
			st.fetch_us / 1e3);
	}
	store_free(s);
	return 0;
}

/* --- writes --- */

struct writer {
	pthread_t thread;
	size_t id;
	struct store *s;	/* txn: shared */
	struct store_kv *last;	/* txn: the state each key was written at */
	double *lat;		/* o.iters */
	pthread_barrier_t *start;
};

/* The value of write @n of a writer: 1 KiB (o.size) that differs each time. */
static void write_value(char *buf, size_t id, size_t n)
{
	value_fill(id * 1000003 + n, buf, o.size);
}

static void write_path(char *buf, size_t len, size_t id, size_t f)
{
	if ((size_t)snprintf(buf, len, "%s/w%02zu-%03zu", o.dir, id, f) >= len)
		die("path too long");
}

static void *write_main(void *arg)
{
	struct writer *w = arg;
	char path[PATH_MAX];
	char *val = xmalloc(o.size);
	size_t f, j;

	/* the files exist before the clock starts: what is timed is updates */
	for (f = 0; f < o.files; f++) {
		write_path(path, sizeof(path), w->id, f);
		write_value(val, w->id, f);
		write_file(path, val, o.size, O_CREAT | O_TRUNC);
	}
	pthread_barrier_wait(w->start);
	for (j = 0; j < o.iters; j++) {
		double t0;

		write_path(path, sizeof(path), w->id, j % o.files);
		write_value(val, w->id, o.files + j);
		t0 = now_us();
		write_file(path, val, o.size, O_TRUNC);
		w->lat[j] = now_us() - t0;
	}
	pthread_barrier_wait(w->start);
	free(val);
	return NULL;
}

struct txn_arg {
	size_t id;
	size_t n;
};

static int txn_update(void *arg, const struct store_kv *cur,
		      struct store_update *out)
{
	const struct txn_arg *a = arg;

	out->value = xmalloc(o.size);
	out->value_len = o.size;
	out->lease = 0;
	write_value(out->value, a->id, a->n);
	return 0;
}

static void txn_one(struct writer *w, size_t f, size_t n)
{
	char key[64];
	int klen = snprintf(key, sizeof(key), "w%02zu-%03zu", w->id, f);
	struct txn_arg a = { w->id, n };
	struct store_kv out = { 0 };
	struct store_error err;
	int rc;

	rc = store_guaranteed_update(w->s, key, (size_t)klen, true, NULL,
				     w->last[f].key ? &w->last[f] : NULL,
				     txn_update, &a, &out, &err);
	if (rc)
		die("txn '%s': %s", key, err.msg);
	store_kv_release(&w->last[f]);
	w->last[f] = out;
}

static void *txn_main(void *arg)
{
	struct writer *w = arg;
	size_t f, j;

	/* the first write of a key reads it; later ones are one txn each */
	for (f = 0; f < o.files; f++)
		txn_one(w, f, f);
	pthread_barrier_wait(w->start);
	for (j = 0; j < o.iters; j++) {
		double t0 = now_us();

		txn_one(w, j % o.files, o.files + j);
		w->lat[j] = now_us() - t0;
	}
	pthread_barrier_wait(w->start);
	for (f = 0; f < o.files; f++)
		store_kv_release(&w->last[f]);
	return NULL;
}

static int cmd_write(bool txn)
{
	struct writer *w = xcalloc(o.threads, sizeof(*w));
	double *all = xcalloc(o.threads * o.iters, sizeof(*all));
	struct store *s = NULL;
	pthread_barrier_t start;
	double t0, wall;
	size_t i;

	if (!o.files || !o.iters || !o.threads)
		die("--files, --iters and --threads must be positive");
	if (txn)
		s = store_open();
	else if (!o.dir)
		die("--dir is needed");
	pthread_barrier_init(&start, NULL, (unsigned)o.threads + 1);
	for (i = 0; i < o.threads; i++) {
		w[i].id = i;
		w[i].s = s;
		w[i].lat = all + i * o.iters;
		w[i].start = &start;
		if (txn)
			w[i].last = xcalloc(o.files, sizeof(*w[i].last));
		if (pthread_create(&w[i].thread, NULL,
				   txn ? txn_main : write_main, &w[i]))
			die("cannot start a thread");
	}
	pthread_barrier_wait(&start);
	t0 = now_us();
	pthread_barrier_wait(&start);
	wall = now_us() - t0;
	for (i = 0; i < o.threads; i++) {
		pthread_join(w[i].thread, NULL);
		free(w[i].last);
	}
	print_latencies(all, o.threads * o.iters, wall, 0);
	pthread_barrier_destroy(&start);
	if (s)
		store_free(s);
	free(all);
	free(w);
	return 0;
}

/* --- remote change to inotify event --- */

/*
 * Waits until an inotify event names @name, at most until @deadline_us.
 * Returns the time it came, or 0 on timeout.
 */
static double wait_event(int fd, const char *name, double deadline_us)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		double left = deadline_us - now_us();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t len;
		char *ptr;
		int rc;

		if (left <= 0)
			return 0;
		rc = poll(&p, 1, (int)(left / 1000) + 1);
		if (rc < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rc <= 0)
			continue;
		len = read(fd, buf, sizeof(buf));
		if (len < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			die("read inotify: %s", strerror(errno));
		}
		for (ptr = buf; ptr < buf + len;) {
			const struct inotify_event *ev = (const void *)ptr;

			if (ev->mask & IN_Q_OVERFLOW)
				die("inotify queue overflow");
			if (ev->len && !strcmp(ev->name, name))
				return now_us();
			ptr += sizeof(*ev) + ev->len;
		}
	}
}

/* Reads events until none came for @quiet_ms: leftovers of a phase. */
static void drain_events(int fd, int quiet_ms)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (poll(&p, 1, quiet_ms) > 0)
		if (read(fd, buf, sizeof(buf)) < 0 && errno != EINTR &&
		    errno != EAGAIN)
			die("read inotify: %s", strerror(errno));
}

static int cmd_inotify(void)
{
	struct store *s = store_open();
	size_t half = (o.iters + 1) / 2, got = 0, lost = 0, n_create = 0, j;
	double *lat = xcalloc(o.iters, sizeof(*lat));
	char *val = xmalloc(o.size);
	int fd, wd;

	if (!o.dir)
		die("--dir is needed");
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		die("inotify_init1: %s", strerror(errno));
	wd = inotify_add_watch(fd, o.dir, IN_CREATE | IN_MODIFY |
			       IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_TO |
			       IN_ATTRIB);
	if (wd < 0)
		die("inotify_add_watch '%s': %s", o.dir, strerror(errno));
	/*
	 * First half: new keys (CREATE); second half: changes of those keys
	 * (MODIFY), each key once per phase so that a late event of one
	 * change is never taken for the next one's.
	 */
	for (j = 0; j < o.iters; j++) {
		bool create = j < half;
		size_t k = create ? j : j - half;
		char key[64];
		int klen = snprintf(key, sizeof(key), "%.40s-%06zu", o.name,
				    k);
		struct store_error err;
		double t0, t1;
		int rc;

		if (j == half) {
			n_create = got;
			drain_events(fd, 200);
		}
		value_fill(j, val, o.size);
		if (create) {
			t0 = now_us();
			rc = store_create(s, key, (size_t)klen, val, o.size,
					  0, NULL, &err);
		} else {
			struct txn_arg a = { 0, j };
			struct store_kv cur = { 0 };

			/* read first, so that the change is one txn */
			rc = store_get(s, key, (size_t)klen, 0, &cur, &err);
			if (rc)
				die("get '%s': %s", key, err.msg);
			t0 = now_us();
			rc = store_guaranteed_update(s, key, (size_t)klen,
						     false, NULL, &cur,
						     txn_update, &a, NULL,
						     &err);
			store_kv_release(&cur);
		}
		if (rc)
			die("change of '%s': %s", key, err.msg);
		t1 = wait_event(fd, key, t0 + (double)o.timeout_ms * 1e3);
		if (!t1) {
			if (!got) {
				printf("na_reason=no inotify event within %ld "
				       "ms of a remote change\n", o.timeout_ms);
				return EXIT_NO_EVENTS;
			}
			lost++;
			continue;
		}
		lat[got++] = t1 - t0;
	}
	if (half >= o.iters)
		n_create = got;
	qsort(lat, n_create, sizeof(*lat), cmp_double);
	qsort(lat + n_create, got - n_create, sizeof(*lat), cmp_double);
	printf("lost=%zu create_p50_us=%.2f create_p99_us=%.2f "
	       "modify_p50_us=%.2f modify_p99_us=%.2f ", lost,
	       quantile(lat, n_create, 0.5), quantile(lat, n_create, 0.99),
	       quantile(lat + n_create, got - n_create, 0.5),
	       quantile(lat + n_create, got - n_create, 0.99));
	print_latencies(lat, got, 0, 0);
	close(fd);
	free(val);
	free(lat);
	store_free(s);
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: etcdfs-bench COMMAND [options]\n"
	      "commands: load files raw stat read get list write txn inotify\n"
	      "options:\n"
	      "  --endpoint URL   etcd (load, get, list, txn, inotify)\n"
	      "  --prefix P       the data set's key prefix (default: none)\n"
	      "  --dir D          the data set's directory (files, stat, read,\n"
	      "                   write, inotify)\n"
	      "  --count N        keys in the data set (default 1000)\n"
	      "  --size N         bytes per value (default 1024)\n"
	      "  --per-dir M      keys per directory (default 0: flat)\n"
	      "  --threads N      loaders or writers (default 1)\n"
	      "  --batch N        load: puts per txn (default 128, etcd's\n"
	      "                   default --max-txn-ops)\n"
	      "  --iters N        timed operations (per writer) (default 1000)\n"
	      "  --files N        warm: files cycled through; write: files per\n"
	      "                   writer (default 8)\n"
	      "  --cold           stat/read/get: each sampled key once\n"
	      "  --keys-only      list: keys without values\n"
	      "  --page-size N    list: keys per range request (default 0:\n"
	      "                   all in one)\n"
	      "  --timeout-ms N   inotify: wait per event (default 2000)\n"
	      "  --name S         inotify: the changed keys are S-NNNNNN\n"
	      "                   (default live)\n", f);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "per-dir", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "iters", required_argument, NULL, 'i' },
		{ "files", required_argument, NULL, 'f' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "name", required_argument, NULL, 'N' },
		{ "batch", required_argument, NULL, 'b' },
		{ "page-size", required_argument, NULL, 'P' },
		{ "cold", no_argument, NULL, 'c' },
		{ "keys-only", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *cmd;
	int c, rc;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'e': o.endpoint = optarg; break;
		case 'p': o.prefix = optarg; break;
		case 'd': o.dir = optarg; break;
		case 'n': o.count = parse_size(optarg, "count"); break;
		case 's': o.size = parse_size(optarg, "size"); break;
		case 'm': o.per_dir = parse_size(optarg, "per-dir"); break;
		case 't': o.threads = parse_size(optarg, "threads"); break;
		case 'i': o.iters = parse_size(optarg, "iters"); break;
		case 'f': o.files = parse_size(optarg, "files"); break;
		case 'T':
			o.timeout_ms = (long)parse_size(optarg, "timeout");
			break;
		case 'N': o.name = optarg; break;
		case 'b': o.batch = parse_size(optarg, "batch"); break;
		case 'P': o.page_size = parse_size(optarg, "page size"); break;
		case 'c': o.cold = true; break;
		case 'k': o.keys_only = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc)
		die("unexpected argument '%s'", argv[optind]);
	if (o.per_dir && o.per_dir > 999)
		die("--per-dir must be at most 999");
	if (o.batch < 1 || o.batch > 100000)
		die("--batch must be 1 to 100000");
	if (o.threads < 1 || o.threads > 1024)
		die("--threads must be 1 to 1024");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		die("cannot initialise libcurl");

	if (!strcmp(cmd, "load"))
		rc = cmd_load();
	else if (!strcmp(cmd, "files"))
		rc = cmd_files();
	else if (!strcmp(cmd, "raw"))
		rc = cmd_raw();
	else if (!strcmp(cmd, "stat"))
		rc = cmd_path_latency(false);
	else if (!strcmp(cmd, "read"))
		rc = cmd_path_latency(true);
	else if (!strcmp(cmd, "get"))
		rc = cmd_get();
	else if (!strcmp(cmd, "list"))
		rc = cmd_list();
	else if (!strcmp(cmd, "write"))
		rc = cmd_write(false);
	else if (!strcmp(cmd, "txn"))
		rc = cmd_write(true);
	else if (!strcmp(cmd, "inotify"))
		rc = cmd_inotify();
	else
		die("unknown command '%s'", cmd);
	fflush(stdout);
	curl_global_cleanup();
	return rc;
}
