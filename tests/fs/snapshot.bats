#!/usr/bin/env bats
#
# tests/fs/snapshot.bats - mounting an etcd snapshot file: `etcdfs FILE
# MNT` or -o snapshot=FILE, read-only, at its newest revision or at
# revision=N
#
# The file is made by the real `etcdctl snapshot save` of the test's etcd;
# then the live key space moves on, and the snapshot's mount at $SNAP is
# checked against etcdctl get --rev.  v3 only (tests/meson.build
# registers it for v3 alone).

load ../lib/mount

setup()
{
	fs_require_api v3
	fs_setup
	SNAP=$BATS_TEST_TMPDIR/snap
	SNAP_FILE=$BATS_TEST_TMPDIR/backup.db
	SNAP_PID=
	mkdir -p "$SNAP"
}

teardown()
{
	local rc=0

	if fs_is_mounted "$SNAP"; then
		fusermount3 -u "$SNAP" || fusermount3 -u -z "$SNAP" || rc=1
	fi
	if [[ -n $SNAP_PID ]]; then
		wait_for 10 _snap_gone || { kill "$SNAP_PID"; rc=1; }
	fi
	fs_teardown || rc=1
	return $rc
}

_snap_gone()
{
	! kill -0 "$SNAP_PID" 2>/dev/null || false
}

# snap_mount ARGS...: etcdfs -f ARGS... $SNAP in a background job, with
# etcdctl's variables unset (a snapshot needs no endpoint); waits for it.
snap_mount()
{
	fs_clean_env
	env "${FS_CLEAN_ENV[@]}" "$ETCDFS" -f "$@" "$SNAP" \
		>"$BATS_TEST_TMPDIR/snap.log" 2>&1 </dev/null 3>&- &
	SNAP_PID=$!
	if ! wait_for 20 fs_is_mounted "$SNAP"; then
		cat "$BATS_TEST_TMPDIR/snap.log" >&2
		return 1
	fi
}

xattr()
{
	getfattr --absolute-names --only-values -n "user.etcd.$1" "$2"
}

@test "a snapshot file shows the keys as saved, read-only, with no watch" {
	local rev sum
	kv_put /a one
	kv_put /d/b two
	kv_put /gone three
	kv_put /a ONE
	rev=$(kv_rev)
	etcdctl snapshot save "$SNAP_FILE" >/dev/null 2>&1
	sum=$(sha256sum "$SNAP_FILE")
	kv_put /a later
	kv_del /gone >/dev/null
	kv_put /d/new x

	# the source argument names a file: that is a snapshot
	snap_mount "$SNAP_FILE"
	[ "$(cat "$SNAP/a")" = ONE ]
	[ "$(cat "$SNAP/d/b")" = two ]
	[ "$(cat "$SNAP/gone")" = three ]
	[ ! -e "$SNAP/d/new" ]
	[ "$(ls "$SNAP" | tr '\n' ' ')" = "a d gone " ]
	[ "$(xattr resourceVersion "$SNAP/a")" = "$(etcdctl get -w json --rev="$rev" /a |
		"$FS_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')" ]
	[ "$(xattr version "$SNAP/a")" = 2 ]
	[ "$(xattr watch "$SNAP")" = off ]
	# both revisions of /a the file holds
	[ "$(xattr history "$SNAP/a" | awk '{ print $2 }' | tr '\n' ' ')" = "1 2 " ]
	findmnt -n -o OPTIONS "$SNAP" | grep -Eq '(^|,)ro(,|$)'
	# df: the file's size is the database's
	[ "$(stat -f -c %b "$SNAP")" -gt 0 ]
	findmnt -n -o SOURCE "$SNAP" | grep -qF "etcdfs#$SNAP_FILE"

	run bash -c 'echo x >"$1"' _ "$SNAP/a"
	[[ $output == *"Read-only file system"* ]]
	run bash -c 'echo x >"$1"' _ "$SNAP/new"
	[[ $output == *"Read-only file system"* ]]
	run rm "$SNAP/d/b"
	[[ $output == *"Read-only file system"* ]]
	run mkdir "$SNAP/dir"
	[[ $output == *"Read-only file system"* ]]
	[ "$(cat "$SNAP/a")" = ONE ]
	[ "$(sha256sum "$SNAP_FILE")" = "$sum" ]
	! grep -Eq "$FS_SUSPICIOUS" "$BATS_TEST_TMPDIR/snap.log" || false
}

@test "-o snapshot= with revision= and prefix=; a compacted or damaged file is refused in one line" {
	local old keep
	kv_put /p/a one
	old=$(kv_rev)
	kv_put /p/a two
	kv_put /p/b b
	kv_put /q/c c
	keep=$(kv_rev)
	etcdctl compact "$old" >/dev/null
	etcdctl snapshot save "$SNAP_FILE" >/dev/null 2>&1

	snap_mount -o "snapshot=$SNAP_FILE,revision=$old,prefix=/p"
	[ "$(cat "$SNAP/a")" = one ]
	[ "$(ls "$SNAP" | tr '\n' ' ')" = "a " ]
	[ "$(xattr revision "$SNAP")" = "$old" ]
	fusermount3 -u "$SNAP"
	wait_for 10 _snap_gone
	SNAP_PID=

	run "$ETCDFS" -f -o "snapshot=$SNAP_FILE,revision=$((old - 1))" "$SNAP"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"oldest revision the snapshot keeps is $old"* ]]
	run "$ETCDFS" -f -o "snapshot=$SNAP_FILE,revision=$((keep + 1))" "$SNAP"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"the snapshot's newest is $keep"* ]]

	cp "$SNAP_FILE" "$BATS_TEST_TMPDIR/bad.db"
	printf 'x' | dd of="$BATS_TEST_TMPDIR/bad.db" bs=1 seek=9000 \
		conv=notrunc status=none
	run "$ETCDFS" -f "$BATS_TEST_TMPDIR/bad.db" "$SNAP"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"sha256 mismatch"* ]]
	! fs_is_mounted "$SNAP" || false

	# with the hash skipped, a file whose metas are both gone
	printf '\0' | dd of="$BATS_TEST_TMPDIR/bad.db" bs=1 seek=16 \
		conv=notrunc status=none
	printf '\0' | dd of="$BATS_TEST_TMPDIR/bad.db" bs=1 seek=4112 \
		conv=notrunc status=none
	run "$ETCDFS" -f -o skip_hash_check "$BATS_TEST_TMPDIR/bad.db" "$SNAP"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == *"not a bbolt file: meta page 0 (offset 0): magic"* ]]
}
