/*
 * log.h - where etcdfs's messages go
 *
 * Until the mount is up, to stderr (the terminal of whoever ran it, or
 * mount(8)'s), so that a mistake is seen where it was made; after that,
 * in the foreground to stderr, in the background to syslog (facility
 * daemon, ident etcdfs), or with -o logfile= to that file, one line each,
 * with the time and the pid.  Debug messages only with -d.
 *
 * What it cannot do: catch what libraries write to stderr themselves
 * (libfuse's own argument errors); after daemonizing those go nowhere.
 */
#ifndef ETCDFS_LOG_H
#define ETCDFS_LOG_H

#include <stdbool.h>

/* Installs the log function in libfuse; @debug: -d. */
void log_init(bool debug);

/* Also writes every message to @path from now on.  0, or -1 after one. */
int log_open_file(const char *path);

/*
 * The mount is up: with a log file messages go there only, else a
 * daemon's go to syslog.
 */
void log_started(bool daemon);

/* True if messages go to stderr (a foreground mount without logfile=). */
bool log_to_stderr(void);

void log_release(void);

#endif
