#!/usr/bin/env bats
#
# tests/fs/stats.bats - user.etcd.stats on the root, and -d's trace
#
# Reads the counters, does known work through the mount (N new files, M
# opens of values the value budget evicted, one conflict, K changes by
# another client) and checks the differences where they are exact: etcd
# writes, reads, conflicts, watch events, FUSE creates, writes and opens.
# With -d, the daemon's log has a line for each FUSE operation and each
# etcd request of a cat and a write.  It does not check byte counts
# exactly (they depend on the encoding), only that they grow.

load ../lib/mount

setup()
{
	# a budget of one byte: every value not open is evicted
	fs_setup value_budget=1
}

teardown()
{
	rm -f "$BATS_TEST_TMPDIR/hold-echo"
	fs_teardown
}

# stats FILE: the counters now, into FILE
stats()
{
	getfattr --only-values -n user.etcd.stats "$MNT" >"$1"
}

# delta NAME: the counter NAME in $AFTER minus in $BEFORE
delta()
{
	local a b

	a=$(awk -v n="$1" '$1 == n { print $2 }' "$AFTER")
	b=$(awk -v n="$1" '$1 == n { print $2 }' "$BEFORE")
	[[ -n $a && -n $b ]] || { echo "no counter '$1'" >&2; return 1; }
	echo $((a - b))
}

_events_reached()
{
	stats "$AFTER" && (($(delta watch_events) >= $1))
}

@test "user.etcd.stats counts requests, conflicts, watch events and FUSE operations exactly" {
	local i n=5 m=3 k=2

	BEFORE=$BATS_TEST_TMPDIR/before AFTER=$BATS_TEST_TMPDIR/after
	kv_put /r/seed0 s0
	kv_put /r/seed1 s1
	kv_put /r/seed2 s2
	kv_put /c/key c0
	# the echo's replays of those puts are FUSE operations too: counted
	# before, not after
	wait_for 10 fs_echo_idle
	stats "$BEFORE"
	cat "$BEFORE"
	# every line is "name value"
	! grep -Evq '^[a-z0-9_]+ [0-9]+$' "$BEFORE" || false
	for ((i = 0; i < n; i++)); do
		echo "v$i" | cat >"$MNT/w$i"
	done
	# evicted values: each open reads its key once
	for ((i = 0; i < m; i++)); do
		[ "$(cat "$MNT/r/seed$i")" = "s$i" ]
	done
	# a conflict: another client writes the key while it is open
	# (the close waits until the watch brought c1: then the mount reads
	# the key before its write, finds the change, and sends no write)
	run fs_try '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"mine")
before = int(os.getxattr(args[1], "user.etcd.revision"))
kv_put(b"/c/key", b"c1")
end = time.monotonic() + float(args[2])
while int(os.getxattr(args[1], "user.etcd.revision")) <= before:
    if time.monotonic() > end:
        raise SystemExit("the watch did not bring c1")
    time.sleep(0.01)
os.close(fd)' "$MNT/c/key" "$MNT" $((10 * FS_SCALE))
	[ "$output" = ESTALE ]
	kv_is /c/key c1
	# and another client's changes: k more events
	for ((i = 0; i < k; i++)); do
		kv_put "/other$i" o
	done
	# n own puts, the pinned key's put and k others: n + 1 + k events
	wait_for 10 _events_reached $((n + 1 + k))
	sleep 0.5
	stats "$AFTER"
	cat "$AFTER"
	[ "$(delta watch_events)" -eq $((n + 1 + k)) ]
	# n commits; the conflicting one was not sent (the read before it
	# found the change)
	[ "$(delta etcd_requests_write)" -eq "$n" ]
	[ "$(delta etcd_conflicts)" -eq 1 ]
	# FUSE counts the echo's requests too: it replays each of the k
	# new keys as a create and a write, and c1 as an open and a write
	[ "$(delta fuse_create)" -eq $((n + k)) ]
	[ "$(delta fuse_write)" -eq $((n + 1 + k + 1)) ]
	# the m cats, the conflicting writer and the echo of c1
	[ "$(delta fuse_open)" -eq $((m + 1 + 1)) ]
	[ "$(delta etcd_errors_unreachable)" -eq 0 ]
	[ "$(delta watch_relists)" -eq 0 ]
	[ "$(delta watch_lag)" -eq 0 ]
	(($(delta etcd_bytes_sent) > 0))
	(($(delta etcd_bytes_received) > 0))
	# the mirror holds the new names
	[ "$(delta mirror_names)" -eq $((n + k)) ]
	# reads: m evicted values, and what the n creates and the conflict
	# read; each exactly once more than without them
	echo "reads: $(delta etcd_requests_read)"
	(($(delta etcd_requests_read) >= m))
}

@test "echo_pending counts other clients' changes until their replay is over" {
	export ETCDFS_TEST_HOLD_ECHO=$BATS_TEST_TMPDIR/hold-echo

	fs_unmount
	fs_mount
	[ "$(fs_stat echo_pending)" -eq 0 ]
	touch "$ETCDFS_TEST_HOLD_ECHO"
	kv_put /p/a 1
	kv_put /p/b 2
	# the first is the one replaying (held), the second waits behind it
	wait_for 10 eval '(($(fs_stat echo_pending) == 2))'
	# in the mirror already
	[ "$(cat "$MNT/p/b")" = 2 ]
	rm "$ETCDFS_TEST_HOLD_ECHO"
	wait_for 10 fs_echo_idle
}

@test "-d traces every FUSE operation and every etcd request of a cat and a write" {
	fs_unmount
	fs_mount debug
	kv_put /t/k hello
	[ "$(cat "$MNT/t/k")" = hello ]
	# a read the daemon answers: a file open for reading and writing
	# reads around the page cache (a cat's first open put the value
	# into the kernel's pages, so that it sends no READ)
	[ "$(python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
sys.stdout.write(os.read(fd, 4096).decode())
os.close(fd)' "$MNT/t/k")" = hello ]
	echo new | cat >"$MNT/t/n"
	kv_is /t/n $'new\n'
	cat "$FS_LOG" | grep -E '^etcdfs: (fuse|etcd) ' | tail -n 40
	# the cat's open and the read, with results (the cat's lookup was
	# answered by the kernel: the echo of the put made the entry)
	grep -Eq "^etcdfs: fuse open node [0-9]+ pid [0-9]+ -> 0 \(open\) in [0-9]+ us$" "$FS_LOG"
	grep -Eq "^etcdfs: fuse read node [0-9]+ pid [0-9]+ -> 0 \(5 bytes\) in [0-9]+ us$" "$FS_LOG"
	# the write: lookup, create, write, and the commit's request to etcd
	grep -Eq "^etcdfs: fuse lookup node [0-9]+ name 'n' pid [0-9]+ -> 0 \(no entry \(cached\)\) in [0-9]+ us$" "$FS_LOG"
	grep -Eq "^etcdfs: fuse create node [0-9]+ name 'n' pid [0-9]+ -> 0 \(created ino [0-9]+\) in [0-9]+ us$" "$FS_LOG"
	grep -Eq "^etcdfs: fuse write node [0-9]+ pid [0-9]+ -> 0 \(4 bytes written\) in [0-9]+ us$" "$FS_LOG"
	if fs_v2; then
		grep -Eq "^etcdfs: etcd PUT /v2/keys key '/t/n' -> ok in [0-9]+ us$" "$FS_LOG"
	else
		grep -Eq "^etcdfs: etcd /etcdserverpb.KV/Txn key '/t/n' -> ok in [0-9]+ us$" "$FS_LOG"
	fi
	# an error is traced with its errno
	run cat "$MNT/t/absent"
	grep -Eq "^etcdfs: fuse lookup node [0-9]+ name 'absent' pid [0-9]+ -> 0 \(no entry \(cached\)\) in [0-9]+ us$" "$FS_LOG"
	run cat "$MNT/t/x%zz"
	grep -Eq "^etcdfs: fuse lookup node [0-9]+ name 'x%zz' pid [0-9]+ -> -2 \(No such file or directory\) in [0-9]+ us$" "$FS_LOG"
}

@test "without -d nothing is traced" {
	kv_put /t/k hello
	[ "$(cat "$MNT/t/k")" = hello ]
	! grep -Eq '^etcdfs: (fuse|etcd) ' "$FS_LOG" || false
}
