/*
 * temp.h - the names of temp files: editors', tools' and a site's own
 *
 * A new file given one of these names through the mount lives in the
 * mount's memory only (fs/file.c), so that a tool's temp, swap and backup
 * files never reach etcd; renaming one over a key saves its content there.
 * The names are built in (temp_name() says which) or given as fnmatch(3)
 * patterns with -o temp_names=.
 */
#ifndef ETCDFS_TEMP_H
#define ETCDFS_TEMP_H

#include <stdbool.h>

/* A site's own patterns, from -o temp_names=. */
struct temp_names;

/*
 * Checks @spec, fnmatch(3) patterns separated by ':': NULL if it is good,
 * else what is wrong with it (a static string): a pattern is empty, or
 * holds a '/' (it matches one name, never a path).
 */
const char *temp_names_check(const char *spec);

/*
 * Parses @spec (NULL: no patterns) into *@out, which the caller frees with
 * temp_names_free().  Returns 0, -EINVAL if temp_names_check() refuses it,
 * or -ENOMEM.
 */
int temp_names_parse(const char *spec, struct temp_names **out);
void temp_names_free(struct temp_names *t);

/*
 * Whether @name, one component of a path in the mount, is a temp file's:
 * a built-in name, or one of @t's patterns (@t may be NULL).  The patterns
 * match as the shell matches file names (FNM_PERIOD: a leading '.' must
 * be matched by a '.').
 */
bool temp_name(const struct temp_names *t, const char *name);

#endif /* ETCDFS_TEMP_H */
