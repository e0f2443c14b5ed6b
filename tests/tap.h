/*
 * tap.h - a tiny TAP producer for the C tests, run by meson with
 * protocol 'tap'
 *
 * A test program calls tap_plan() (or nothing, and tap_done() prints the
 * plan at the end), then one tap_ok()/CHECK per case.  CHECK() prints the
 * file and line of a failed condition, so a failure points at the test.
 */
#ifndef ETCDFS_TAP_H
#define ETCDFS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n;
static int tap_failed;

static inline void tap_plan(int n)
{
	printf("1..%d\n", n);
	fflush(stdout);
}

__attribute__((format(printf, 2, 3)))
static inline int tap_ok(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failed++;
	return ok;
}

/* Reports a diagnostic line (TAP comment). */
__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/*
 * Inside a test case: on failure, says where and returns false from the
 * enclosing function (which returns bool).
 */
#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			tap_diag("%s:%d: check failed: %s",		\
				 __FILE__, __LINE__, #cond);		\
			return false;					\
		}							\
	} while (0)

/* Runs the bool-returning function @fn as one test case. */
#define TAP_RUN(fn) tap_ok(fn(), "%s", #fn)

/* Prints the plan if none was given; the exit status for main(). */
static inline int tap_done(int planned)
{
	if (!planned)
		printf("1..%d\n", tap_n);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif /* ETCDFS_TAP_H */
