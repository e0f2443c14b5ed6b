#!/usr/bin/env bats
#
# tests/fs/visible.bats - another client's changes as the mount serves
# them: new keys deep in new directories readable soon after the put
# (within 2 s: a bound for correctness, not a speed target, which the
# benchmarks measure), deletions, a key that is also a prefix, and a key
# the mount holds as a new file still open.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash).  The
# puts of new keys go over etcd's HTTP API without waiting for the mount
# (puts_http), so the test sees what a script sees; kv_put waits for the
# root's user.etcd.revision, which a progress notification can move past
# changes the echo has not applied yet, so its values are waited for too
# (readable), and what must hold at once is checked after them.

load ../lib/mount

teardown()
{
	fs_teardown
}

# holds PATH VALUE: PATH reads VALUE now
holds()
{
	[[ $(cat "$1" 2>/dev/null) == "$2" ]]
}

# readable PATH VALUE: PATH reads VALUE within 2 s
readable()
{
	wait_for 2 holds "$1" "$2"
}

@test "another client's new key 1 directory deep is readable right after its put" {
	fs_setup
	puts_http /n1/k 1
	readable "$MNT/n1/k0000" v0000
	[ "$(stat -c %s "$MNT/n1/k0000")" -eq 5 ]
}

@test "another client's new key 6 directories deep is readable right after its put" {
	fs_setup
	ls "$MNT" >/dev/null
	puts_http /a/b/c/d/e/f/k 1
	readable "$MNT/a/b/c/d/e/f/k0000" v0000
	[ "$(ls "$MNT/a/b/c/d/e/f")" = k0000 ]
}

@test "another client's deletion is seen at once" {
	fs_setup
	kv_put /d/x 1
	readable "$MNT/d/x" 1
	[ "$(kv_del /d/x)" = 1 ]
	[ ! -e "$MNT/d/x" ]
	run cat "$MNT/d/x"
	[ "$status" -ne 0 ]
}

@test "another client's put of a key that is also a prefix is seen by stat and cat at once" {
	fs_setup
	kv_put /p/a 1
	readable "$MNT/p/a" 1
	if fs_v2; then
		# v2: a node is a key or a directory, never both
		run kv_put /p value-of-p
		[ "$status" -ne 0 ]
		[ ! -e "$MNT/p/%value" ]
		return 0
	fi
	kv_put /p value-of-p
	readable "$MNT/p/%value" value-of-p
	[ "$(stat -c %s "$MNT/p/%value")" -eq 10 ]
	kv_put /p v2
	readable "$MNT/p/%value" v2
	[ "$(stat -c %s "$MNT/p/%value")" -eq 2 ]
	[ "$(cat "$MNT/p/a")" = 1 ]
}

@test "another client's put of a key the mount holds as a new file still open is seen at once" {
	fs_setup
	exec 8>"$MNT/n"
	kv_put /n remote
	readable "$MNT/n" remote
	[ "$(stat -c %s "$MNT/n")" -eq 6 ]
	# its close finds the key made meanwhile: etcd keeps the other value
	exec 8>&- || true
	[ "$(kv_get /n)" = remote ]
	[ "$(cat "$MNT/n")" = remote ]
}
