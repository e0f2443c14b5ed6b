/*
 * codec_opts.c - -o codec=PROG, -o k8s[=yaml] and -o codec_prefix=P,
 * checked before the mount: the program is found now (a name in PATH, or
 * a path made absolute), so that a mistake is seen on the terminal and
 * the daemon, which runs in / once in the background, runs what was
 * meant; k8s needs a build with Kubernetes' types
 *
 * What it cannot do: check that the program speaks `decode` and `encode`
 * (it is first run when a file is opened).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s_codec.h"
#include "opts_i.h"

static bool runnable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* @name in $PATH (etcdctl's and the shell's rule), or NULL. */
static char *in_path(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	char buf[PATH_MAX];

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		int n;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		n = snprintf(buf, sizeof(buf), "%.*s/%s",
			     end == p ? 1 : (int)(end - p),
			     end == p ? "." : p, name);
		if (n > 0 && (size_t)n < sizeof(buf) && runnable(buf))
			return realpath(buf, NULL);
	}
	return NULL;
}

static int decide_program(struct opts *o)
{
	const char *prog = o->codec_opt;

	if (!*prog || strchr(prog, ' ')) {
		opts_bad_value("codec", OPTS_FROM_OPTION, prog,
			       *prog ? "a program's path or name, without "
				       "arguments" : "a program's path or name");
		return -1;
	}
	o->codec = strchr(prog, '/') ? realpath(prog, NULL) : in_path(prog);
	if (!o->codec || !runnable(o->codec)) {
		opts_bad_value("codec", OPTS_FROM_OPTION, prog,
			       strchr(prog, '/') ? "no such executable file"
						 : "not found in PATH");
		free(o->codec);
		o->codec = NULL;
		return -1;
	}
	o->fs.codec = o->codec;
	return 0;
}

/*
 * codec_prefix= is a prefix of etcd's keys (as etcdctl's --prefix); the
 * filesystem's keys are relative to the mount's prefix.
 */
static int decide_prefix(struct opts *o)
{
	const char *p = o->codec_prefix_opt, *m = o->prefix;
	size_t plen = strlen(p), mlen = strlen(m);

	if (plen >= mlen && memcmp(p, m, mlen) == 0) {
		o->fs.codec_prefix = p + mlen;
		return 0;
	}
	if (plen <= mlen && memcmp(m, p, plen) == 0) {
		o->fs.codec_prefix = "";	/* every key of the mount */
		return 0;
	}
	fuse_log(FUSE_LOG_ERR, "etcdfs: bad value for 'codec_prefix': '%s': "
		 "no key of the mount's prefix '%s' starts with it\n", p, m);
	return -1;
}

/* -o k8s and k8s=json|yaml: the codec built in (helper/k8s_codec.h). */
static int decide_k8s(struct opts *o)
{
	if (o->k8s_opt) {
		if (strcmp(o->k8s_opt, "json") && strcmp(o->k8s_opt, "yaml")) {
			opts_bad_value("k8s", OPTS_FROM_OPTION, o->k8s_opt,
				       "json or yaml");
			return -1;
		}
		o->fs.k8s = true;
		o->fs.k8s_yaml = !strcmp(o->k8s_opt, "yaml");
	}
	if (!o->fs.k8s)
		return 0;
	if (o->codec_opt) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: 'k8s' and 'codec=' exclude "
			 "each other\n");
		return -1;
	}
	if (!k8s_built_in()) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: 'k8s': this etcdfs was built "
			 "without Kubernetes' types (meson -Dk8s_api)\n");
		return -1;
	}
	return 0;
}

int opts_decide_codec(struct opts *o)
{
	if (decide_k8s(o) != 0)
		return -1;
	if (o->codec_prefix_opt && !o->codec_opt && !o->fs.k8s) {
		fuse_log(FUSE_LOG_ERR, "etcdfs: 'codec_prefix=' needs "
			 "'codec=PROG' or 'k8s'\n");
		return -1;
	}
	if (o->fs.k8s) {
		if (o->codec_prefix_opt && decide_prefix(o) != 0)
			return -1;
		return 0;
	}
	if (!o->codec_opt)
		return 0;
	if (decide_program(o) != 0)
		return -1;
	if (o->codec_prefix_opt && decide_prefix(o) != 0)
		return -1;
	fuse_log(FUSE_LOG_DEBUG, "etcdfs: codec '%s' for the keys under '%s%s'"
		 "\n", o->codec, o->prefix,
		 o->fs.codec_prefix ? o->fs.codec_prefix : "");
	return 0;
}
