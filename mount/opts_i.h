/*
 * opts_i.h - what opts.c and setup.c share: the option table's rows
 *
 * What it cannot do: be used outside mount/.
 */
#ifndef ETCDFS_OPTS_I_H
#define ETCDFS_OPTS_I_H

#include <stdbool.h>
#include <stddef.h>

#include "opts.h"

/* How often -o refresh_endpoints asks the cluster for its members. */
#define OPTS_REFRESH_SECONDS 30

/*
 * How long the kernel may cache names and attributes when not told.  With
 * the watch, every change another client makes invalidates exactly what it
 * touches, so the kernel may keep them for long; without it nothing tells
 * the kernel, and a second is what a stale stat may lag behind.
 */
#define OPTS_CACHE_SECONDS 3600
#define OPTS_NOWATCH_CACHE_SECONDS 1

enum opts_kind {
	OPT_FLAG,	/* bool: the row's flag; from the environment a bool */
	OPT_STR,	/* const char *, the value as given */
	OPT_FILE,	/* const char *, made absolute; must exist */
	OPT_MS,		/* long: milliseconds or an etcdctl duration */
	OPT_SECONDS,	/* double */
	OPT_SIZE,	/* size_t, with K, M, G */
	OPT_UID,	/* uid_t */
	OPT_GID,	/* gid_t */
	OPT_OCTAL,	/* mode_t, 0 to 0777 */
};

struct opts_row {
	const char *templ;	/* fuse_opt's: "prefix=", "ro" */
	enum opts_kind kind;
	size_t field;		/* offset in struct opts */
	bool flag;		/* OPT_FLAG: the value the word sets */
	bool keep;		/* libfuse and the kernel need it too */
	bool create;		/* OPT_FILE: may not exist yet (a log) */
	const char *env;	/* etcdctl's variable it falls back to */
	const char *usage;	/* in --help: "prefix=PREFIX"; NULL: hidden */
	const char *help;	/* lines, '\n' between them */
};

extern const struct opts_row opts_rows[];
extern const size_t opts_nrows;

/* Where a setting came from, in opts->from[] and messages. */
extern const char opts_from_option[];
extern const char opts_from_source[];
#define OPTS_FROM_OPTION opts_from_option
#define OPTS_FROM_SOURCE opts_from_source

/* The row of @templ ("endpoints="); aborts if there is none. */
size_t opts_row(const char *templ);

/*
 * Parses @value for row @i into its field; @from is OPTS_FROM_OPTION or
 * the variable it was read from.  0, or -1 after a message.
 */
int opts_apply(struct opts *o, size_t i, const char *value, const char *from);

/* "bad value for 'NAME': 'S'[: WHY]", or "for VARIABLE" from one. */
void opts_bad_value(const char *name, const char *from, const char *s,
		    const char *why);

/* A whole number in [@min, @max] in @base, or -1 after a message. */
int opts_parse_num(const char *name, const char *from, const char *s,
		   int base, long long min, long long max, long long *out);

/*
 * -o codec= and codec_prefix= (codec_opts.c), after the prefix is
 * decided: fills o->fs.codec and o->fs.codec_prefix.  0, or -1 after a
 * message.
 */
int opts_decide_codec(struct opts *o);

#endif
