/*
 * fixture.h - the harness of the unit tests that run a codec's parsers on
 * reply fixtures
 *
 * A fixture is a directory DIR/<case>/ (DIR is tests/data/v3, tests/data/v2,
 * ...): `input` is a reply body as a server sent it (text or binary),
 * `expected` what the parser must make of it, written out as text by the
 * test's own dump function; `status` (the HTTP status) and `args` (what
 * the test asks of the parser, as "name=VALUE" lines) when the case has
 * them, and any other file a kind of case reads with fixture_file().  A
 * case's name starts with its kind ("range-", "list-", ...), which picks
 * the dump function.  A test lists its cases by name: every listed case
 * is one TAP case (FIXTURE_RUN_ALL), and one more checks that every
 * directory under DIR is listed, so that none rots unrun.
 *
 * A test of a new codec follows tests/unit/test_codec_v2.c: its fixtures
 * in tests/data/<codec>/ (binary inputs are fine: a gRPC reply is kept as
 * the frame the server sent, its trailers in a file of their own), one
 * dump function per kind that writes every field the parser returns, the
 * list of cases, a fixture_suite, and FIXTURE_RUN_ALL() in main(); its
 * fuzz target takes the same inputs as seeds (tests/meson.build's
 * fuzz_targets).
 *
 * The harness compares the dump with `expected` byte for byte and shows
 * both, line by line, as TAP comments when they differ.  What it cannot
 * do: know what a parser means; the dump functions and the expected files
 * say that.  It reports through tap.h's tap_diag(), and leaves the TAP
 * numbering to the test (tap.h keeps it per program).
 */
#ifndef ETCDFS_TESTS_FIXTURE_H
#define ETCDFS_TESTS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "tap.h"

/* A growable text buffer: what a dump function writes into. */
struct text {
	char *p;	/* NUL-terminated; NULL while nothing was added */
	size_t len;
	size_t cap;
};

__attribute__((format(printf, 2, 3)))
void text_add(struct text *t, const char *fmt, ...);
/* Adds @len bytes of @s, quoted, with other than printable ASCII as \xNN. */
void text_quote(struct text *t, const char *s, size_t len);
void text_free(struct text *t);

/* One case, read from its directory. */
struct fixture {
	const char *dir;	/* the suite's DIR */
	const char *name;	/* the case */
	char *input;		/* NUL-terminated past @len */
	size_t len;
	long status;		/* 0 without a status file */
	bool has_status;
	char *args;		/* the args file, NUL-terminated; or NULL */
};

/* How one kind of case (the cases whose name starts with @prefix) runs. */
struct fixture_kind {
	const char *prefix;
	bool needs_status;	/* a case of this kind without status fails */
	/*
	 * Writes what the parser made of @fx into @got.  Returns false, with
	 * a TAP comment saying why, if the case cannot be run or failed a
	 * check of its own (a stream that frames differently in pieces).
	 */
	bool (*dump)(struct text *got, const struct fixture *fx);
	/* If not NULL: more checks, once @got equals expected. */
	bool (*check)(const struct fixture *fx);
};

struct fixture_suite {
	const char *dir;
	const char *const *names;	/* the cases, by name */
	size_t n_names;
	const struct fixture_kind *kinds;
	size_t n_kinds;
};

/*
 * Reads @dir/@name/@file, NUL-terminated past *@len.  NULL if it cannot be
 * read (newly allocated otherwise).
 */
char *fixture_read(const char *dir, const char *name, const char *file,
		   size_t *len);

/* fixture_read() of another file of @fx's case. */
char *fixture_file(const struct fixture *fx, const char *file, size_t *len);

/*
 * One argument of an args file: the line "@name=VALUE", VALUE with \xNN
 * and \\ escapes decoded into @buf (at most @size bytes, not terminated).
 * False if @args is NULL or has no such line.
 */
bool fixture_arg(const char *args, const char *name, char *buf, size_t size,
		 size_t *len);

/* The name of a negative enum store_err ("ENOTFOUND"), "OK" for 0. */
const char *fixture_err_name(int code);

/* Shows @got and @want, line by line, as TAP comments. */
void fixture_show_diff(const char *name, const char *got, size_t got_len,
		       const char *want, size_t want_len);

/* Runs the case @name of @s: true if its dump is what it expects. */
bool fixture_run(const struct fixture_suite *s, const char *name);

/* True if every directory under s->dir is one of s->names, and no more. */
bool fixture_all_listed(const struct fixture_suite *s);

/* Every case of the suite @s as one TAP case each, then the listing check. */
#define FIXTURE_RUN_ALL(s)						\
	do {								\
		size_t fixture_i_;					\
									\
		for (fixture_i_ = 0; fixture_i_ < (s)->n_names;		\
		     fixture_i_++)					\
			tap_ok(fixture_run((s), (s)->names[fixture_i_]), \
			       "fixture %s", (s)->names[fixture_i_]);	\
		tap_ok(fixture_all_listed(s), "every_fixture_listed");	\
	} while (0)

#define FIXTURE_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif /* ETCDFS_TESTS_FIXTURE_H */
