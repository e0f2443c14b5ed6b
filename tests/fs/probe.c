/*
 * probe.c - syscall sequences for the filesystem tests (tests/fs/NAME.bats)
 *
 * Each subcommand runs one sequence on files of the mount and prints what
 * each step returned, one "name=value" per line (a size, an offset, "ok"
 * or the errno's name), so that a bats test compares the whole line with
 * what a local filesystem gives.  It exits 0 when the sequence could be
 * run to its end, whatever the calls returned; 2 on bad usage.  The tests
 * find it through $FS_PROBE (tests/meson.build).
 *
 *   size FILE          O_RDWR|O_CREAT; ftruncate 100000; fstat, lseek END;
 *                      ftruncate 0; write "hello"; fstat, lseek END; close
 *   append FILE        O_WRONLY|O_CREAT|O_TRUNC; write AAAA; lseek END;
 *                      write BBBB; close
 *   hold FILE          O_RDWR|O_CREAT, writes "hello" and waits for a line on
 *                      stdin ("close" closes and exits) between steps:
 *                      "trunc N" ftruncates, "write S" writes at the end
 *   dup-fsync FILE PID O_WRONLY|O_TRUNC; write "one"; dup; SIGSTOP PID;
 *                      close (fails); SIGCONT PID; write "two" on the dup;
 *                      fsync; close
 *   efbig FILE         write "hello"; pwrite 2 MiB at 5; close
 *   efbig-new FILE     O_CREAT|O_EXCL; pwrite 1 byte at 2 GiB; close
 *   rename-open A B    open A for writing; write; rename A B; write;
 *                      close; stat B
 *   excl DIR N         N times: make DIR/a with O_EXCL, write, close,
 *                      rename to DIR/b, open DIR/a with O_CREAT|O_EXCL,
 *                      close, unlink DIR/a; prints the failures
 *
 * What it cannot do: run a sequence on a local file for comparison; the
 * tests hold the local filesystem's answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The errno's name, as the tests compare it: "EEXIST", "ESTALE"... */
static const char *errname(int e)
{
	const char *name = strerrorname_np(e);

	return name ? name : "unknown";
}

/* Prints "name=ok" or "name=ERRNO" for a call that returned @ret. */
static void show(const char *name, long ret)
{
	if (ret < 0)
		printf("%s=%s\n", name, errname(errno));
	else
		printf("%s=ok\n", name);
	fflush(stdout);
}

static void show_num(const char *name, long long v)
{
	if (v < 0)
		printf("%s=%s\n", name, errname(errno));
	else
		printf("%s=%lld\n", name, v);
	fflush(stdout);
}

/* @s as a number, or exits with a message: the tests pass only numbers. */
static long long number(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "probe: not a number: '%s'\n", s);
		exit(2);
	}
	return v;
}

static long long fsize(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -1;
	return (long long)st.st_size;
}

static int probe_size(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0644);

	if (fd < 0) {
		show("open", -1);
		return 0;
	}
	show("ftruncate", ftruncate(fd, 100000));
	show_num("fstat", fsize(fd));
	show_num("seek_end", (long long)lseek(fd, 0, SEEK_END));
	show("ftruncate0", ftruncate(fd, 0));
	show("write", write(fd, "hello", 5) == 5 ? 0 : -1);
	show_num("fstat", fsize(fd));
	show_num("seek_end", (long long)lseek(fd, 0, SEEK_END));
	show("close", close(fd));
	return 0;
}

static int probe_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0) {
		show("open", -1);
		return 0;
	}
	show("write", write(fd, "AAAA", 4) == 4 ? 0 : -1);
	show_num("seek_end", (long long)lseek(fd, 0, SEEK_END));
	show("write", write(fd, "BBBB", 4) == 4 ? 0 : -1);
	show("close", close(fd));
	return 0;
}

static int probe_hold(const char *path)
{
	char line[256];
	int fd = open(path, O_RDWR | O_CREAT, 0644);

	if (fd < 0) {
		show("open", -1);
		return 0;
	}
	show("write", write(fd, "hello", 5) == 5 ? 0 : -1);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "trunc ", 6) == 0) {
			show("ftruncate",
			     ftruncate(fd, (off_t)number(line + 6)));
		} else if (strncmp(line, "write ", 6) == 0) {
			size_t n = strlen(line + 6);

			if (lseek(fd, 0, SEEK_END) < 0)
				show("seek_end", -1);
			show("write",
			     write(fd, line + 6, n) == (ssize_t)n ? 0 : -1);
		} else if (strcmp(line, "fstat") == 0) {
			show_num("fstat", fsize(fd));
		} else if (strcmp(line, "close") == 0) {
			break;
		}
	}
	show("close", close(fd));
	return 0;
}

static int probe_dup_fsync(const char *path, pid_t etcd)
{
	int fd = open(path, O_WRONLY | O_TRUNC), fd2;

	if (fd < 0) {
		show("open", -1);
		return 0;
	}
	show("write", write(fd, "one", 3) == 3 ? 0 : -1);
	fd2 = dup(fd);
	if (kill(etcd, SIGSTOP)) {
		show("sigstop", -1);
		return 1;
	}
	show("close", close(fd));
	kill(etcd, SIGCONT);
	/* the etcd is back: the dup's writes and fsync must reach it */
	show("write2", write(fd2, "two", 3) == 3 ? 0 : -1);
	show("fsync", fsync(fd2));
	show("close2", close(fd2));
	return 0;
}

static int probe_efbig(const char *path)
{
	size_t big = 2u << 20;
	char *buf = malloc(big);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (!buf || fd < 0) {
		show("open", -1);
		return 0;
	}
	memset(buf, 'x', big);
	show("write", write(fd, "hello", 5) == 5 ? 0 : -1);
	n = pwrite(fd, buf, big, 5);
	if (n < 0)
		show("pwrite", -1);
	else
		printf("pwrite=%s\n", (size_t)n < big ? "short" : "whole");
	show("close", close(fd));
	free(buf);
	return 0;
}

static int probe_efbig_new(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0) {
		show("open", -1);
		return 0;
	}
	show("pwrite", pwrite(fd, "x", 1, 2LL << 30) == 1 ? 0 : -1);
	show("close", close(fd));
	return 0;
}

static int probe_rename_open(const char *a, const char *b)
{
	int fd = open(a, O_WRONLY | O_TRUNC);
	struct stat st;

	if (fd < 0) {
		show("open", -1);
		return 0;
	}
	show("write", write(fd, "first ", 6) == 6 ? 0 : -1);
	show("rename", rename(a, b));
	show("write", write(fd, "second", 6) == 6 ? 0 : -1);
	show("close", close(fd));
	show_num("size", stat(b, &st) ? -1 : (long long)st.st_size);
	return 0;
}

static int probe_excl(const char *dir, long n)
{
	char a[4096], b[4096];
	long i, fails = 0;
	int fd;

	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	for (i = 0; i < n; i++) {
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			/* a name that came back: count it, and go on */
			printf("iteration %ld: create: %s\n", i,
			       errname(errno));
			fails++;
			unlink(a);
			continue;
		}
		if (write(fd, "lock\n", 5) != 5 || close(fd) || rename(a, b)) {
			printf("iteration %ld: write, close or rename: %s\n", i,
			       errname(errno));
			return 0;
		}
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			printf("iteration %ld: open after rename: %s\n", i,
			       errname(errno));
			fails++;
			unlink(a);
			continue;
		}
		if (close(fd) || unlink(a)) {
			printf("iteration %ld: close or unlink: %s\n", i,
			       errname(errno));
			return 0;
		}
	}
	printf("failures=%ld\n", fails);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(cmd, "size") == 0 && argc == 3)
		return probe_size(argv[2]);
	if (strcmp(cmd, "append") == 0 && argc == 3)
		return probe_append(argv[2]);
	if (strcmp(cmd, "hold") == 0 && argc == 3)
		return probe_hold(argv[2]);
	if (strcmp(cmd, "dup-fsync") == 0 && argc == 4)
		return probe_dup_fsync(argv[2], (pid_t)number(argv[3]));
	if (strcmp(cmd, "efbig") == 0 && argc == 3)
		return probe_efbig(argv[2]);
	if (strcmp(cmd, "efbig-new") == 0 && argc == 3)
		return probe_efbig_new(argv[2]);
	if (strcmp(cmd, "rename-open") == 0 && argc == 4)
		return probe_rename_open(argv[2], argv[3]);
	if (strcmp(cmd, "excl") == 0 && argc == 4)
		return probe_excl(argv[2], (long)number(argv[3]));
	fprintf(stderr, "usage: probe size|append|hold|dup-fsync|efbig|"
			"efbig-new|rename-open|excl ARGS\n");
	return 2;
}
