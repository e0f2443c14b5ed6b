/*
 * replay.c - runs a fuzz target once over its seeds, as a TAP test
 *
 *   fuzz-replay-NAME SEEDS...
 *
 * Each SEEDS is a directory (each regular file in it, not below), a file,
 * or a glob of files (the reply fixtures: tests/data/v2/ then a star then
 * /input).  Every input, in the order given and sorted within each, goes
 * once to the target's LLVMFuzzerTestOneInput() in a buffer of exactly
 * its size (so that AddressSanitizer sees a read past its end) and is one
 * TAP case.
 * A target that finds a broken promise aborts: the plan is then short
 * and the test fails, the input named on stderr.  A SEEDS that names no
 * input fails too, so a moved corpus cannot pass unseen.
 *
 * What it cannot do: search, as libFuzzer does; it is the regression run
 * of what the search found (the corpus) and of the fixtures, for builds
 * without clang and under every sanitizer the build uses.
 */
#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "tap.h"

struct inputs {
	char **path;
	size_t n;
	size_t cap;
};

static void inputs_add(struct inputs *in, const char *path)
{
	if (in->n == in->cap) {
		in->cap = in->cap ? in->cap * 2 : 64;
		in->path = realloc(in->path, in->cap * sizeof(*in->path));
		if (!in->path)
			abort();
	}
	in->path[in->n] = strdup(path);
	if (!in->path[in->n])
		abort();
	in->n++;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Adds the inputs @seeds names; false if it names none. */
static bool add_seeds(struct inputs *in, const char *seeds)
{
	size_t before = in->n, i;
	struct dirent *de;
	char path[4096];
	glob_t g;
	DIR *d;

	d = opendir(seeds);
	if (d) {
		while ((de = readdir(d))) {
			snprintf(path, sizeof(path), "%s/%s", seeds,
				 de->d_name);
			if (de->d_name[0] != '.' && is_file(path))
				inputs_add(in, path);
		}
		closedir(d);
	} else if (glob(seeds, 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			if (is_file(g.gl_pathv[i]))
				inputs_add(in, g.gl_pathv[i]);
		globfree(&g);
	}
	qsort(in->path + before, in->n - before, sizeof(*in->path), cmp_str);
	return in->n > before;
}

/* The bytes of @path in a buffer of exactly their size; NULL if unread. */
static uint8_t *read_input(const char *path, size_t *size)
{
	struct stat st;
	uint8_t *buf;
	FILE *f;

	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
		fclose(f);
		return NULL;
	}
	*size = (size_t)st.st_size;
	buf = malloc(*size ? *size : 1);
	if (!buf)
		abort();
	if (fread(buf, 1, *size, f) != *size) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* @path's last two components: the case and its file, or corpus/input. */
static const char *short_name(const char *path)
{
	const char *p = path + strlen(path);
	int slashes = 0;

	while (p > path) {
		if (p[-1] == '/' && ++slashes == 2)
			break;
		p--;
	}
	return p;
}

int main(int argc, char **argv)
{
	struct inputs in = { 0 };
	bool ok = true;
	size_t i, size;
	int a;

	for (a = 1; a < argc; a++) {
		if (!add_seeds(&in, argv[a])) {
			fprintf(stderr, "replay: no inputs in '%s'\n", argv[a]);
			ok = false;
		}
	}
	if (argc < 2 || !ok) {
		printf("1..1\nnot ok 1 - seeds\n");
		return 1;
	}
	tap_plan((int)in.n);
	for (i = 0; i < in.n; i++) {
		uint8_t *data;

		/* named first: an abort leaves this as the last line */
		fprintf(stderr, "replay: %s\n", in.path[i]);
		data = read_input(in.path[i], &size);
		if (data)
			LLVMFuzzerTestOneInput(data, size);
		tap_ok(data != NULL, "%s", short_name(in.path[i]));
		free(data);
		free(in.path[i]);
	}
	free(in.path);
	return tap_done(1);
}
