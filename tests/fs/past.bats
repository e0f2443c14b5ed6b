#!/usr/bin/env bats
#
# tests/fs/past.bats - -o revision=N: the key space as it was at a past
# revision, read-only
#
# A second mount at $PAST beside the live one at $MNT: its files, their
# xattrs and its EROFS are checked against etcdctl get --rev.  v3 only
# (tests/meson.build registers it for v3 alone; run by hand on v2 it fails
# in setup): v2's refusal is in tests/fs/v2.bats.

load ../lib/mount

setup()
{
	fs_require_api v3
	fs_setup
	PAST=$BATS_TEST_TMPDIR/past
	PAST_PID=
	mkdir -p "$PAST"
}

teardown()
{
	local rc=0

	if fs_is_mounted "$PAST"; then
		fusermount3 -u "$PAST" || fusermount3 -u -z "$PAST" || rc=1
	fi
	if [[ -n $PAST_PID ]]; then
		wait_for 10 _past_gone || { kill "$PAST_PID"; rc=1; }
	fi
	fs_teardown || rc=1
	return $rc
}

_past_gone()
{
	! kill -0 "$PAST_PID" 2>/dev/null || false
}

# past_mount REV [OPTS]: mounts the revision at $PAST, in the foreground
# of a background job, and waits for it.
past_mount()
{
	"$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,revision=$1${2:+,$2}" \
		"$PAST" >"$BATS_TEST_TMPDIR/past.log" 2>&1 &
	PAST_PID=$!
	if ! wait_for 20 fs_is_mounted "$PAST"; then
		cat "$BATS_TEST_TMPDIR/past.log" >&2
		return 1
	fi
}

xattr()
{
	getfattr --absolute-names --only-values -n "user.etcd.$1" "$2"
}

@test "a past revision shows the old values and the keys deleted since" {
	local rev
	kv_put /a one
	kv_put /d/b two
	kv_put /gone three
	rev=$(kv_rev)
	kv_put /a ONE
	kv_put /d/new x
	kv_del /gone >/dev/null
	kv_put /d/b TWO

	past_mount "$rev"
	[ "$(cat "$PAST/a")" = one ]
	[ "$(cat "$PAST/d/b")" = two ]
	[ "$(cat "$PAST/gone")" = three ]
	[ ! -e "$PAST/d/new" ]
	[ "$(ls "$PAST" | tr '\n' ' ')" = "a d gone " ]
	[ "$(ls "$PAST/d")" = b ]
	# the live mount beside it
	[ "$(cat "$MNT/a")" = ONE ]
	[ ! -e "$MNT/gone" ]
	# every xattr as it was then
	[ "$(xattr resourceVersion "$PAST/a")" = "$(etcdctl get -w json --rev="$rev" /a |
		"$FS_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')" ]
	[ "$(xattr version "$PAST/a")" = 1 ]
	[ "$(xattr version "$MNT/a")" = 2 ]
	[ "$(xattr revision "$PAST")" = "$rev" ]
	[ "$(xattr watch "$PAST")" = off ]
	[ "$(getfattr --absolute-names --only-values -n user.etcd.history "$PAST/d/b" | awk '{ print $2 }')" = 1 ]
	findmnt -n -o OPTIONS "$PAST" | grep -Eq '(^|,)ro(,|$)'
}

@test "a past revision keeps each key's lease, creation and object kind; no time to live" {
	local rev id made
	id=$(etcdctl lease grant 600 | awk '$1 == "lease" { print $2 }')
	etcdctl put --lease="$id" /leased v >/dev/null
	kv_put /obj '{"apiVersion":"v1","kind":"ConfigMap"}'
	kv_put /made x
	made=$(kv_meta /made create_revision)
	rev=$(kv_rev)
	# since: the lease taken off, the key made again, the object another
	etcdctl put /leased v >/dev/null
	kv_del /made >/dev/null
	kv_put /made y
	kv_put /obj '{"apiVersion":"apps/v1","kind":"Deployment"}'
	[ "$(kv_meta /leased lease)" = 0 ]

	past_mount "$rev"
	[ "$(xattr lease "$PAST/leased")" = "$id" ]
	[ "$(xattr createRevision "$PAST/made")" = "$made" ]
	[ "$(xattr createRevision "$MNT/made")" -gt "$made" ]
	[ "$(getfattr --absolute-names --only-values -n user.k8s.kind "$PAST/obj")" = ConfigMap ]
	[ "$(getfattr --absolute-names --only-values -n user.k8s.apiVersion "$PAST/obj")" = v1 ]
	[ "$(getfattr --absolute-names --only-values -n user.k8s.kind "$MNT/obj")" = Deployment ]
	# etcd keeps no past time to live, though the lease still runs
	run getfattr --absolute-names -n user.etcd.ttl "$PAST/leased"
	[ "$status" -ne 0 ]
	[[ $output == *"No such attribute"* ]]
}

@test "a past revision refuses every change with EROFS" {
	local rev before
	kv_put /a one
	kv_put /d/b two
	rev=$(kv_rev)
	kv_put /a ONE
	before=$(kv_dump)

	past_mount "$rev"
	run bash -c 'echo x >"$1"' _ "$PAST/a"
	[[ $output == *"Read-only file system"* ]]
	run bash -c 'echo x >"$1"' _ "$PAST/new"
	[[ $output == *"Read-only file system"* ]]
	run rm "$PAST/a"
	[[ $output == *"Read-only file system"* ]]
	run mkdir "$PAST/dir"
	[[ $output == *"Read-only file system"* ]]
	run mv "$PAST/a" "$PAST/c"
	[[ $output == *"Read-only file system"* ]]
	run setfattr -n user.etcd.ttl -v 60 "$PAST/a"
	[[ $output == *"Read-only file system"* ]]
	run setfattr -n user.etcd.pin -v 2 "$PAST/a"
	[[ $output == *"Read-only file system"* ]]
	run truncate -s 0 "$PAST/d/b"
	[[ $output == *"Read-only file system"* ]]
	[ "$(kv_dump)" = "$before" ]
	[ "$(cat "$PAST/a")" = one ]
}

@test "a past revision shows no later change: no watch" {
	local rev
	kv_put /a one
	rev=$(kv_rev)
	past_mount "$rev"
	[ "$(cat "$PAST/a")" = one ]
	kv_put /a two
	kv_put /b new
	fs_wait_value "$MNT/a" two
	sleep 1
	[ "$(cat "$PAST/a")" = one ]
	[ ! -e "$PAST/b" ]
	ls "$PAST" >/dev/null
	[ "$(ls "$PAST")" = a ]
}

@test "a compacted revision is refused, naming the oldest revision kept" {
	local old keep
	kv_put /a one
	old=$(kv_rev)
	kv_put /a two
	kv_put /a three
	keep=$(kv_rev)
	etcdctl compact "$keep" >/dev/null

	run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,revision=$old" "$PAST"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"revision $old is compacted: the oldest revision etcd keeps is $keep"* ]]
	! fs_is_mounted "$PAST" || false
	# the oldest kept one mounts
	past_mount "$keep"
	[ "$(cat "$PAST/a")" = three ]
}

@test "a revision in the future, or not a revision, is refused" {
	local now
	kv_put /a one
	now=$(kv_rev)

	run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,revision=$((now + 10))" "$PAST"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"revision $((now + 10)) is in the future: the cluster is at revision $now"* ]]
	for bad in 0 -1 x 1.5 ''; do
		run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,revision=$bad" "$PAST"
		echo "'$bad': $output"
		[ "$status" -ne 0 ]
		[ "$output" = "etcdfs: bad value for 'revision': '$bad'" ]
	done
	! fs_is_mounted "$PAST" || false
}

@test "diff of a mount at a history revision and the live mount shows what changed" {
	local rev
	kv_put /cfg/app "replicas: 2"
	kv_put /cfg/db "size: 10"
	kv_put /cfg/app "replicas: 3"
	fs_wait_value "$MNT/cfg/app" "replicas: 3"
	# the first revision of cfg/app, from its history
	rev=$(getfattr --absolute-names --only-values -n user.etcd.history "$MNT/cfg/app" |
		head -n 1 | awk '{ print $1 }')
	past_mount "$rev"

	run diff -r "$PAST/cfg" "$MNT/cfg"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"< replicas: 2"* ]]
	[[ $output == *"> replicas: 3"* ]]
	[[ $output == *"Only in $MNT/cfg: db"* ]]
}
