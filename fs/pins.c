/*
 * pins.c - the revisions scripts pin for their next write of a key
 * (user.etcd.pin, set, read and removed through xattr.c; taken by
 * commit.c, move.c, ttl.c)
 *
 * A pin belongs to the parent of the process that ran setfattr (the
 * script), and applies to the next write, truncate, rename or delete of
 * that key by the script itself or by one of its children; it is used
 * once.  It is forgotten when its script exits (its start time in
 * /proc/PID/stat no longer matches) or after PIN_LIFETIME seconds; at
 * most PIN_MAX are kept, the oldest dropped first.  fs->pins and
 * fs->npins are under fs->lock, which every function here is called with.
 *
 * What it cannot do: see a script but through /proc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

#define PIN_MAX 4096
#define PIN_LIFETIME 600

/* The parent and start time of @pid, from /proc; false if it is gone. */
static bool proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	int pp = 0, field;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: skip to the last */
	p = strrchr(buf, ')');
	if (!p)
		return false;
	p++;
	for (field = 3; *p && field <= 22; field++) {
		char *end;

		while (*p == ' ')
			p++;
		if (field == 4)
			pp = (int)strtol(p, &end, 10);
		else if (field == 22)
			st = strtoull(p, &end, 10);
		else
			end = strchr(p, ' ');
		if (!end)
			break;
		p = end;
	}
	if (ppid)
		*ppid = pp;
	if (start)
		*start = st;
	return field > 22;
}

static void pin_drop(struct fs *fs, size_t i)
{
	free(fs->pins[i].key);
	fs->pins[i] = fs->pins[--fs->npins];
}

static bool pin_alive(const struct pin *p)
{
	unsigned long long start;
	struct timespec now;

	fs_now(&now);
	if (now.tv_sec - p->set.tv_sec > PIN_LIFETIME)
		return false;
	return proc_stat(p->owner, NULL, &start) && start == p->owner_start;
}

/* The pin of @key that @pid's writes follow, or -1.  fs->lock held. */
static ssize_t pin_find(struct fs *fs, const char *key, size_t key_len,
			pid_t pid)
{
	pid_t ppid = 0;
	size_t i;

	if (!fs->npins)
		return -1;
	proc_stat(pid, &ppid, NULL);
	for (i = 0; i < fs->npins;) {
		struct pin *p = &fs->pins[i];

		if (!pin_alive(p)) {
			pin_drop(fs, i);
			continue;
		}
		if (p->key_len == key_len && memcmp(p->key, key, key_len) == 0 &&
		    (p->owner == pid || p->owner == ppid))
			return (ssize_t)i;
		i++;
	}
	return -1;
}

bool pin_take(struct fs *fs, const char *key, size_t key_len, pid_t pid,
	      int64_t *rev)
{
	ssize_t i = pin_find(fs, key, key_len, pid);

	if (i < 0)
		return false;
	*rev = fs->pins[i].rev;
	pin_drop(fs, (size_t)i);
	return true;
}

void pins_free(struct fs *fs)
{
	while (fs->npins)
		pin_drop(fs, 0);
	free(fs->pins);
	fs->pins = NULL;
}

int pin_set(struct fs *fs, const char *key, size_t key_len,
		   pid_t setter, int64_t rev)
{
	struct pin p = { 0 };
	size_t i;

	if (!proc_stat(setter, &p.owner, NULL) ||
	    !proc_stat(p.owner, NULL, &p.owner_start))
		return -ESRCH;
	for (i = 0; i < fs->npins; i++) {
		if (fs->pins[i].owner == p.owner &&
		    fs->pins[i].key_len == key_len &&
		    memcmp(fs->pins[i].key, key, key_len) == 0) {
			pin_drop(fs, i);
			break;
		}
	}
	if (fs->npins == PIN_MAX) {
		size_t oldest = 0;

		for (i = 1; i < fs->npins; i++) {
			if (fs->pins[i].set.tv_sec <
			    fs->pins[oldest].set.tv_sec)
				oldest = i;
		}
		pin_drop(fs, oldest);
	}
	if (!fs->pins) {
		fs->pins = calloc(PIN_MAX, sizeof(*fs->pins));
		if (!fs->pins)
			return -ENOMEM;
	}
	p.key = malloc(key_len + 1);
	if (!p.key)
		return -ENOMEM;
	memcpy(p.key, key, key_len);
	p.key[key_len] = '\0';
	p.key_len = key_len;
	p.rev = rev;
	fs_now(&p.set);
	fs->pins[fs->npins++] = p;
	return 0;
}

bool pin_peek(struct fs *fs, const char *key, size_t key_len, pid_t pid,
	      int64_t *rev)
{
	ssize_t i = pin_find(fs, key, key_len, pid);

	if (i < 0)
		return false;
	*rev = fs->pins[i].rev;
	return true;
}

bool pin_remove(struct fs *fs, const char *key, size_t key_len, pid_t remover)
{
	pid_t owner = 0;
	ssize_t i;

	if (!proc_stat(remover, &owner, NULL))
		return false;
	i = pin_find(fs, key, key_len, owner);
	if (i < 0)
		return false;
	pin_drop(fs, (size_t)i);
	return true;
}
