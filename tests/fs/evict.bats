#!/usr/bin/env bats
#
# tests/fs/evict.bats - the kernel's inodes of the mount let go of (as
# under memory pressure) and made again: the first open of each new inode
# fills its pages again, so that reading sends no READ and marks no atime
# stale, as on a fresh mount (readpath.bats); and inode numbers stay
#
# The kernel is made to let go with `echo 2 > /proc/sys/vm/drop_caches`,
# which drops every unused dentry and inode of the machine: other tests'
# request counts would move, so this file runs alone (tests/meson.build).
# Each test starts its own etcd and mount (tests/lib/mount.bash).  It
# cannot choose which inodes the kernel drops: it asks for all of them.
# Nor is a clean page ever sure to stay: proactive reclaim (DAMON's
# pageout) takes some between two cats on a machine with memory to spare.
# So the first opens are pin_pages's, which holds every page from then on,
# and a READ counted is the daemon's doing.

load ../lib/mount
load ../lib/fuse_counts

teardown()
{
	unpin_pages
	fs_teardown
}

@test "after the kernel let go of its inodes, the first open fills the new ones' pages" {
	fs_setup
	put_dir 500
	cat "$MNT"/d/* >/dev/null
	snap
	sync
	echo 2 >/proc/sys/vm/drop_caches
	# the kernel told the daemon (FORGET, or many in one)
	wait_for 10 eval '(($(delta forget) >= 500))'
	# the first opens are pin_pages's, which then holds every page
	snap
	pin_pages "$MNT/d"
	cat "$MNT"/d/* >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want"
	echo "lookup $(delta lookup) getattr $(delta getattr)" \
	     "read $(delta read) stored $(delta stored)"
	[ "$(delta read)" -eq 0 ]
	[ "$(delta stored)" -eq 500 ]
	# and the next cat costs no GETATTR: the first read() marked no
	# atime stale
	snap
	cat "$MNT"/d/* >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want"
	echo "lookup $(delta lookup) getattr $(delta getattr)" \
	     "read $(delta read) stored $(delta stored)"
	[ "$(delta getattr)" -le 1 ]
	[ "$(delta read)" -eq 0 ]
	[ "$(delta stored)" -eq 0 ]
}

@test "inode numbers survive the kernel forgetting the inodes" {
	local ia ib

	fs_setup
	kv_put /a 1
	kv_put /dir/b 2
	ia=$(stat -c %i "$MNT/a")
	ib=$(stat -c %i "$MNT/dir/b")

	sync
	echo 2 >/proc/sys/vm/drop_caches
	[ "$(stat -c %i "$MNT/a")" = "$ia" ]
	[ "$(stat -c %i "$MNT/dir/b")" = "$ib" ]
}
