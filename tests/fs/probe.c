/*
 * probe.c - syscall sequences for the filesystem tests (tests/fs/NAME.bats)
 *
 * `fs-probe steps PATH` reads one step a line from stdin and prints, for
 * each, one line "name=result": a number, "ok" or the errno's name
 * ("ESTALE"), so that a test compares them with what a local filesystem
 * answers.  Lines are answered as they come, so a test may drive it from a
 * coproc and look at the mount (or stop etcd) between two steps.  Steps
 * (a name ending in 2 acts on the dup, the others on the open):
 *
 *   open FLAGS        open PATH; FLAGS: rdonly wronly rdwr creat excl trunc
 *                     append, joined by '|'
 *   dup               descriptor 2 = dup(1)
 *   write[2] TEXT     write TEXT at the file offset
 *   pwrite[2] OFF LEN write LEN bytes 'x' at OFF; "short" if fewer went
 *   trunc[2] SIZE     ftruncate
 *   fstat[2]          the size fstat gives
 *   seek_end[2]       lseek(0, SEEK_END)
 *   fsync[2], close[2]
 *   stat [OTHER]      the size stat gives of OTHER (default PATH)
 *   rename A B        rename(2)
 *   utime[2] SECS     futimens: atime and mtime SECS
 *   chmod[2] OCTAL    fchmod
 *   stop PID, cont PID  SIGSTOP and SIGCONT (a test's own etcd)
 *
 * `fs-probe excl DIR COUNT` runs COUNT times: make DIR/a with O_EXCL, write,
 * close, rename it to DIR/b, make DIR/a again with O_CREAT|O_EXCL, close,
 * unlink it; it prints each failure and then "failures=COUNT".
 *
 * It exits 0 when the steps could be read (whatever the calls answered),
 * 2 on a bad step.  What it cannot do: run a sequence on a local file for
 * comparison; the tests hold the local filesystem's answers.
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

static void show(const char *name, long ret)
{
	if (ret < 0)
		printf("%s=%s\n", name, errname(errno));
	else
		printf("%s=ok\n", name);
}

static void show_num(const char *name, long long v)
{
	if (v < 0)
		printf("%s=%s\n", name, errname(errno));
	else
		printf("%s=%lld\n", name, v);
}

static void bad(const char *what, const char *s)
{
	fprintf(stderr, "probe: %s: '%s'\n", what, s);
	exit(2);
}

/* @s as a number in @base, or exits: the tests pass only numbers. */
static long long number(const char *s, int base)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, base);
	if (errno || end == s || *end)
		bad("not a number", s);
	return v;
}

static int open_flags(char *s)
{
	static const struct {
		const char *name;
		int flag;
	} names[] = {
	    {"rdonly", O_RDONLY}, {"wronly", O_WRONLY}, {"rdwr", O_RDWR},
	    {"creat", O_CREAT},	  {"excl", O_EXCL},	{"trunc", O_TRUNC},
	    {"append", O_APPEND},
	};
	int flags = 0;
	char *tok, *save;
	size_t i;

	for (tok = strtok_r(s, "|", &save); tok;
	     tok = strtok_r(NULL, "|", &save)) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(tok, names[i].name) == 0)
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			bad("no such open flag", tok);
		flags |= names[i].flag;
	}
	return flags;
}

static long long fsize(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_size;
}

static long long psize(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long long)st.st_size;
}

static void do_pwrite(const char *name, int fd, char *args)
{
	char *len_s = strchr(args, ' ');
	size_t len;
	ssize_t n;
	char *buf;

	if (!len_s)
		bad("pwrite needs OFF LEN", args);
	*len_s++ = '\0';
	len = (size_t)number(len_s, 10);
	buf = malloc(len ? len : 1);
	if (!buf)
		bad("out of memory for", len_s);
	memset(buf, 'x', len);
	n = pwrite(fd, buf, len, (off_t)number(args, 10));
	if (n >= 0 && (size_t)n < len)
		printf("%s=short\n", name);
	else
		show(name, n < 0 ? -1 : 0);
	free(buf);
}

/* One step: @cmd is its name (ending in 2 for the dup), @arg the rest. */
static void step(const char *path, int fds[3], char *cmd, char *arg)
{
	size_t len = strlen(cmd);
	int n = len > 1 && cmd[len - 1] == '2' ? 2 : 1;
	char base[32];
	int fd = fds[n];

	snprintf(base, sizeof(base), "%.*s", (int)(n == 2 ? len - 1 : len),
		 cmd);
	if (strcmp(base, "open") == 0) {
		fds[1] = open(path, open_flags(arg), 0644);
		show(cmd, fds[1]);
	} else if (strcmp(base, "dup") == 0) {
		fds[2] = dup(fds[1]);
		show(cmd, fds[2]);
	} else if (strcmp(base, "write") == 0) {
		show(cmd, write(fd, arg, strlen(arg)) == (ssize_t)strlen(arg)
			      ? 0
			      : -1);
	} else if (strcmp(base, "pwrite") == 0) {
		do_pwrite(cmd, fd, arg);
	} else if (strcmp(base, "trunc") == 0) {
		show(cmd, ftruncate(fd, (off_t)number(arg, 10)));
	} else if (strcmp(base, "fstat") == 0) {
		show_num(cmd, fsize(fd));
	} else if (strcmp(base, "seek_end") == 0) {
		show_num(cmd, (long long)lseek(fd, 0, SEEK_END));
	} else if (strcmp(base, "fsync") == 0) {
		show(cmd, fsync(fd));
	} else if (strcmp(base, "close") == 0) {
		show(cmd, close(fd));
	} else if (strcmp(base, "stat") == 0) {
		show_num(cmd, psize(*arg ? arg : path));
	} else if (strcmp(base, "rename") == 0) {
		char *to = strchr(arg, ' ');

		if (!to)
			bad("rename needs A B", arg);
		*to++ = '\0';
		show(cmd, rename(arg, to));
	} else if (strcmp(base, "utime") == 0) {
		struct timespec ts[2] = {{(time_t)number(arg, 10), 0},
					 {(time_t)number(arg, 10), 0}};

		show(cmd, futimens(fd, ts));
	} else if (strcmp(base, "chmod") == 0) {
		show(cmd, fchmod(fd, (mode_t)number(arg, 8)));
	} else if (strcmp(base, "stop") == 0 || strcmp(base, "cont") == 0) {
		show(cmd, kill((pid_t)number(arg, 10),
			       base[0] == 's' ? SIGSTOP : SIGCONT));
	} else {
		bad("no such step", cmd);
	}
}

static int probe_steps(const char *path)
{
	int fds[3] = {-1, -1, -1};
	char line[4096];

	while (fgets(line, sizeof(line), stdin)) {
		char *arg;

		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		arg = strchr(line, ' ');
		if (arg)
			*arg++ = '\0';
		step(path, fds, line, arg ? arg : line + strlen(line));
	}
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
	if (strcmp(cmd, "steps") == 0 && argc == 3)
		return probe_steps(argv[2]);
	if (strcmp(cmd, "excl") == 0 && argc == 4)
		return probe_excl(argv[2], (long)number(argv[3], 10));
	fprintf(stderr, "usage: fs-probe steps PATH <STEPS\n"
			"       fs-probe excl DIR COUNT\n");
	return 2;
}
