/*
 * fuzz.h - what the fuzz targets of tests/fuzz/ share
 *
 * A target defines LLVMFuzzerTestOneInput() and aborts, through check()
 * or fuzz_fail(), as soon as a promise of the code under test is broken,
 * with the file and line on stderr.  The same target links two ways: with
 * libFuzzer (clang -fsanitize=fuzzer, tests/fuzz/meson.build) to search,
 * and with tests/fuzz/replay.c, any compiler, to run its seed corpus and
 * the reply fixtures once as a unit test of every build.  A target must
 * therefore use nothing of libFuzzer but the entry point, and keep no
 * state from one input to the next.
 */
#ifndef ETCDFS_TESTS_FUZZ_H
#define ETCDFS_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn))
static inline void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: %s\n", file, line, what);
	abort();
}

/* Aborts, naming the condition, unless @cond holds. */
#define check(cond)							\
	do {								\
		if (!(cond))						\
			fuzz_fail(__FILE__, __LINE__, #cond);		\
	} while (0)

/* A parser's message in @size bytes: terminated, not empty, one line. */
#define fuzz_check_msg(msg, size)					\
	do {								\
		const char *fuzz_p_;					\
									\
		check(memchr((msg), '\0', (size)) != NULL);		\
		check((msg)[0] != '\0');				\
		for (fuzz_p_ = (msg); *fuzz_p_; fuzz_p_++)		\
			check(*fuzz_p_ != '\n');			\
	} while (0)

/* memcmp() of byte strings of different lengths, as etcd orders keys. */
static inline int fuzz_cmp_bytes(const char *a, size_t alen, const char *b,
				 size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

#endif /* ETCDFS_TESTS_FUZZ_H */
