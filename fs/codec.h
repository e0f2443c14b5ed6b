/*
 * codec.h - -o codec=PROG: values shown and saved through a program, as
 * etcd-io/auger's `auger decode` and `auger encode`
 *
 * codec_run() (codec_run.c) runs the program once and knows no FUSE and
 * no etcd; the rest (codec.c) is the filesystem's side: which keys, the
 * views kept with the values in the mirror, and the encoding of a save.
 */
#ifndef ETCDFS_CODEC_H
#define ETCDFS_CODEC_H

#include <stdbool.h>
#include <stddef.h>

/* What of a program's standard error is kept (and logged). */
#define CODEC_STDERR_MAX 1024
/* The largest view a decode may write: past it, the raw value is shown. */
#define CODEC_VIEW_MAX (16u << 20)

struct codec_buf {
	char *data;		/* NUL-terminated past len; NULL if empty */
	size_t len;
	size_t cap;
};

struct codec_result {
	struct codec_buf out;	/* standard output, at most out_max bytes */
	struct codec_buf err;	/* standard error, at most CODEC_STDERR_MAX */
	int status;		/* exit status; 128 + N for signal N */
	bool timed_out;		/* killed at the deadline */
};

/*
 * Runs `@prog @verb` (@prog an absolute path; no shell) with @in on its
 * standard input, for at most @timeout_ms (<= 0: 5 s), and collects its
 * outputs into @r (released with codec_result_release() in every case).
 * 0 if it exited with status 0 having written at most @out_max bytes;
 * -ECHILD if it exited otherwise or was killed by a signal, -ETIMEDOUT
 * if it was killed at the deadline, -EFBIG (killed) if it wrote more,
 * another -errno if it could not be started.  It is always reaped.
 */
int codec_run(const char *prog, const char *verb, const char *in,
	      size_t in_len, long timeout_ms, size_t out_max,
	      struct codec_result *r);
void codec_result_release(struct codec_result *r);

#endif /* ETCDFS_CODEC_H */
