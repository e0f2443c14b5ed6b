#!/usr/bin/env bats
#
# tests/fs/readpath.bats - what reading costs the kernel: the requests a
# cold and a warm `cat` of every file of a directory send to the daemon,
# counted by the daemon itself (the root's user.etcd.stats), and that what
# those reads return is still every key's value.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash); the keys
# are put before a fresh mount, so that no echo of them is counted.  It
# cannot see what the kernel answers alone: only the requests it sends.

load ../lib/mount
load ../lib/fuse_counts

teardown()
{
	unpin_pages
	fs_teardown
}

@test "the root's user.etcd.stats counts the kernel's requests" {
	fs_setup
	kv_put /a 1
	local before

	before=$(stat_of open)
	cat "$MNT/a" >/dev/null
	[ "$(stat_of open)" -eq $((before + 1)) ]
	getfattr --absolute-names --only-values -n user.etcd.stats "$MNT" |
		grep -q '^fuse_lookup [0-9][0-9]*$'
}

@test "a cold cat of every file of a directory: one OPEN and RELEASE each, no LOOKUP, GETATTR or READ" {
	fs_setup
	put_dir 500
	ls -d "$MNT/d" >/dev/null
	snap
	cat "$MNT"/d/* >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want"
	echo "lookup $(delta lookup) getattr $(delta getattr) read $(delta read)"
	[ "$(delta readdirplus)" -ge 1 ]
	[ "$(delta readdir)" -eq 0 ]
	[ "$(delta lookup)" -eq 0 ]
	[ "$(delta open)" -eq 500 ]
	[ "$(delta release)" -eq 500 ]
	[ "$(delta flush)" -eq 0 ]
	[ "$(delta read)" -eq 0 ]
	[ "$(delta stored)" -eq 500 ]
	# the getxattr of the root's counters may revalidate the root
	[ "$(delta getattr)" -le 1 ]
}

@test "a warm cat sends no GETATTR nor READ: the first read marked no atime stale" {
	fs_setup
	put_dir 500
	# held from the first open on: a page reclaimed before the cats
	# would be read again, and the read would mark its atime stale
	pin_pages "$MNT/d"
	cat "$MNT"/d/* >/dev/null
	snap
	cat "$MNT"/d/* >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want"
	echo "lookup $(delta lookup) getattr $(delta getattr) read $(delta read)"
	[ "$(delta lookup)" -eq 0 ]
	[ "$(delta getattr)" -le 1 ]
	[ "$(delta read)" -eq 0 ]
	[ "$(delta open)" -eq 500 ]
	[ "$(delta stored)" -eq 0 ]
}

@test "a file changed by another client is read whole after its first cold read" {
	fs_setup
	put_dir 2
	[ "$(cat "$MNT/d/k0000")" = v0000 ]
	# a longer value, then a shorter one: pages of the old revision must
	# not show through
	kv_put /d/k0000 "$(head -c 3000 /dev/zero | tr '\0' x)"
	[ "$(cat "$MNT/d/k0000")" = "$(head -c 3000 /dev/zero | tr '\0' x)" ]
	kv_put /d/k0000 short
	[ "$(cat "$MNT/d/k0000")" = short ]
	[ "$(stat -c %s "$MNT/d/k0000")" -eq 5 ]
}

# A value of 1 KiB, read once (so that its pages are in the kernel's
# cache), then changed through the mount with @1 (a shell command on
# "$f"); the file and etcd must then hold @2.
overwrite_case()
{
	local f=$MNT/d/k0000

	kv_put /d/k0000 "$(head -c 1024 /dev/zero | tr '\0' a)"
	cat "$f" >/dev/null
	eval "$1"
	[ "$(cat "$f")" = "$2" ]
	kv_is /d/k0000 "$2"
	[ "$(stat -c %s "$f")" -eq "${#2}" ]
}

@test "printf hi > f over a 1 KiB value whose pages the kernel holds leaves exactly hi" {
	fs_setup
	overwrite_case 'printf hi >"$f"' hi
}

@test "append and partial overwrite of a file whose pages the kernel holds" {
	fs_setup
	local a

	a=$(head -c 1024 /dev/zero | tr '\0' a)
	overwrite_case 'printf xy >>"$f"' "${a}xy"
	overwrite_case 'printf XY | dd of="$f" bs=1 seek=2 conv=notrunc status=none' \
		"aaXY${a:4}"
	overwrite_case 'truncate -s 3 "$f"' aaa
}

@test "a file open for reading keeps its content across another client's changes" {
	fs_setup
	kv_put /d/k0000 first
	exec 8<"$MNT/d/k0000"
	kv_put /d/k0000 second-and-longer
	[ "$(cat "$MNT/d/k0000")" = second-and-longer ]
	[ "$(cat <&8)" = first ]
	exec 8<&-
}

# ro_dir N: as put_dir, on a fresh read-only mount
ro_dir()
{
	put_dir "$1"
	fs_unmount
	fs_mount ro
}

@test "-o ro: files open without a message; a warm cat of every file sends nothing at all" {
	fs_setup
	ro_dir 300
	pin_pages "$MNT/d"
	cat "$MNT"/d/* >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want"
	# the first open was answered ENOSYS, and the first flush: no more
	[ "$(stat_of open)" -eq 1 ]
	[ "$(stat_of flush)" -le 1 ]
	[ "$(stat_of release)" -eq 0 ]
	snap
	cat "$MNT"/d/* >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want"
	echo "open $(delta open) read $(delta read) lookup $(delta lookup)"
	[ "$(delta open)" -eq 0 ]
	[ "$(delta flush)" -eq 0 ]
	[ "$(delta release)" -eq 0 ]
	[ "$(delta read)" -eq 0 ]
	[ "$(delta lookup)" -eq 0 ]
	[ "$(delta getattr)" -le 1 ]
}

@test "-o ro: a file open for reading keeps its content across another client's change and deletion" {
	fs_setup
	kv_put /d/k first-value
	kv_put /d/gone kept
	fs_unmount
	fs_mount ro
	exec 8<"$MNT/d/k"
	exec 9<"$MNT/d/gone"
	# no page of them yet: what is read next comes from the daemon
	kv_put /d/k second-and-longer
	fs_wait_value "$MNT/d/k" second-and-longer
	[ "$(stat -c %s "$MNT/d/k")" -eq 17 ]
	[ "$(kv_del /d/gone)" = 1 ]
	wait_for 5 test ! -e "$MNT/d/gone"
	[ "$(cat <&8)" = first-value ]
	[ "$(cat <&9)" = kept ]
	exec 8<&- 9<&-
	[ "$(cat "$MNT/d/k")" = second-and-longer ]
	[ "$(stat_of release)" -eq 0 ]
}
