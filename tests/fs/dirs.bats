#!/usr/bin/env bats
#
# tests/fs/dirs.bats - directories have the attributes of a local one: a
# link count of 2 plus their subdirectories, and an mtime and ctime that
# change whenever a name comes into them or goes out of them, by this
# mount or by another client, and only then
#
# Each test starts its own etcd and mount (tests/lib/mount.bash).  The
# kernel caches the directories' attributes and listings for an hour:
# every check asks stat, ls -l and find through the kernel right after
# the change, so a missing invalidation fails as surely as a wrong value.

load ../lib/mount

setup()
{
	fs_setup
}

teardown()
{
	fs_teardown
}

# times DIR: its mtime and ctime, to the nanosecond
times()
{
	stat -c '%y %z' "$1"
}

# changed DIR BEFORE: DIR's times differ from BEFORE, and its ctime is
# its mtime (a directory changes only by names coming and going)
changed()
{
	local now

	now=$(times "$1")
	echo "$1: before '$2', now '$now'"
	[ "$now" != "$2" ]
	[ "$(stat -c %y "$1")" = "$(stat -c %z "$1")" ]
}

# same DIR BEFORE: DIR's times are still BEFORE
same()
{
	local now

	now=$(times "$1")
	echo "$1: before '$2', now '$now'"
	[ "$now" = "$2" ]
}

links()
{
	stat -c %h "$1"
}

@test "this mount's changes in a directory change its mtime and ctime, and only those" {
	local t u
	mkdir "$MNT/d" "$MNT/e"

	t=$(times "$MNT/d")
	touch "$MNT/d/f"
	changed "$MNT/d" "$t"

	# a file's content is not the directory's
	t=$(times "$MNT/d")
	echo new >"$MNT/d/f"
	echo more >>"$MNT/d/f"
	cat "$MNT/d/f" >/dev/null
	same "$MNT/d" "$t"

	mkdir "$MNT/d/s"
	changed "$MNT/d" "$t"
	t=$(times "$MNT/d")
	rmdir "$MNT/d/s"
	changed "$MNT/d" "$t"

	# a rename in the directory, then out of it into another
	t=$(times "$MNT/d")
	mv "$MNT/d/f" "$MNT/d/g"
	changed "$MNT/d" "$t"
	t=$(times "$MNT/d")
	u=$(times "$MNT/e")
	mv "$MNT/d/g" "$MNT/e/g"
	changed "$MNT/d" "$t"
	changed "$MNT/e" "$u"

	u=$(times "$MNT/e")
	rm "$MNT/e/g"
	changed "$MNT/e" "$u"

	# the root is a directory like the others
	t=$(times "$MNT")
	touch "$MNT/top"
	changed "$MNT" "$t"
	t=$(times "$MNT")
	rm "$MNT/top"
	changed "$MNT" "$t"
}

@test "another client's keys coming and going change the directory's mtime, seen at once" {
	local t
	kv_put /r/a 1
	ls -l "$MNT/r" >/dev/null

	t=$(times "$MNT/r")
	kv_put /r/b 2
	changed "$MNT/r" "$t"
	[ "$(ls "$MNT/r")" = "$(printf 'a\nb')" ]

	# a new value of a key changes no name (waited for: the mount's
	# revision moves before the kernel's entry of the old inode is
	# dropped, so a cat at once may still open the old revision)
	t=$(times "$MNT/r")
	kv_put /r/b 22
	fs_wait_value "$MNT/r/b" 22
	same "$MNT/r" "$t"

	# not even when the key's file is open: its new value is a new inode
	exec 4<"$MNT/r/a"
	kv_put /r/a 11
	fs_wait_value "$MNT/r/a" 11
	exec 4<&-
	same "$MNT/r" "$t"

	kv_del /r/a >/dev/null
	wait_for 5 test ! -e "$MNT/r/a"
	changed "$MNT/r" "$t"
	[ "$(ls "$MNT/r")" = b ]

	# a key in a new subdirectory: one name more, and one link
	t=$(times "$MNT/r")
	[ "$(links "$MNT/r")" -eq 2 ]
	kv_put /r/sub/x 3
	changed "$MNT/r" "$t"
	[ "$(links "$MNT/r")" -eq 3 ]
	t=$(times "$MNT/r")
	kv_del /r/sub/x >/dev/null
	wait_for 5 test ! -e "$MNT/r/sub"
	changed "$MNT/r" "$t"
	[ "$(links "$MNT/r")" -eq 2 ]
}

@test "a directory's link count is 2 plus its subdirectories, as ls -ld and find see it" {
	mkdir -p "$MNT/d/a" "$MNT/d/b/deep"
	touch "$MNT/d/f" "$MNT/d/b/g"
	kv_put /d/c/x 1
	kv_put /other/y 2

	[ "$(links "$MNT/d")" -eq 5 ]
	[ "$(links "$MNT/d/a")" -eq 2 ]
	[ "$(links "$MNT/d/b")" -eq 3 ]
	[ "$(links "$MNT")" -eq 4 ]
	[ "$(ls -ld "$MNT/d" | awk '{ print $2 }')" -eq 5 ]
	[ "$(links "$MNT/d/f")" -eq 1 ]

	run find "$MNT" -type d -links +2 -printf '%P %n\n'
	echo "$output"
	[ "$(sort <<<"$output")" = "$(printf ' 4\nd 5\nd/b 3')" ]
	# find's view of the tree, leaf optimisation or not
	[ "$(find "$MNT" -printf '%P\n' | sort)" = \
	  "$(find "$MNT" -noleaf -printf '%P\n' | sort)" ]
	[ "$(find "$MNT" -mindepth 1 -type d -printf '%P\n' | sort)" = \
	  "$(printf 'd\nd/a\nd/b\nd/b/deep\nd/c\nother')" ]

	rmdir "$MNT/d/a"
	[ "$(links "$MNT/d")" -eq 4 ]
	mv "$MNT/d/b/deep" "$MNT/d/deep"
	[ "$(links "$MNT/d/b")" -eq 2 ]
	[ "$(links "$MNT/d")" -eq 5 ]
	kv_del /d/c/x >/dev/null
	wait_for 5 test ! -e "$MNT/d/c"
	[ "$(links "$MNT/d")" -eq 4 ]
}
