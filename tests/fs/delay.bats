#!/usr/bin/env bats
#
# tests/fs/delay.bats - -o delay_connect: mounted before etcd answers
#
# Each test starts etcd once (to have its ports and a key), stops it, and
# mounts with delay_connect: the mount comes up at once, every operation
# that needs etcd fails with ENOTCONN (ls of the root too), the mount
# keeps trying (each kind of failure logged once, STATUS= lines to
# systemd, READY=1 once mounted), and once etcd is started on its port
# the keys appear, writes reach etcd and the watch follows other
# clients.  An unmount while it waits is prompt.  Without the option a
# mount with etcd down fails at once.  It does not cover TLS or auth
# failures while waiting (their classes are logged the same way).

load ../lib/mount

setup()
{
	NOTIFY_PID=
	fs_setup
	kv_put /seed/k v1
	fs_unmount
	etcd_stop_keep
}

teardown()
{
	if [[ -n $NOTIFY_PID ]]; then
		kill "$NOTIFY_PID" 2>/dev/null
		wait "$NOTIFY_PID" 2>/dev/null || true
	fi
	fs_teardown
}

# ",api=v2" on v2, as fs_mount adds it
api_opt()
{
	if fs_v2; then
		echo ,api=v2
	fi
}

ENOTCONN_MSG='Transport endpoint is not connected'

# Runs a command that needs etcd: it must fail at once (5 s: no request
# is made), with ENOTCONN's message.
expect_enotconn()
{
	run timeout 5 "$@"
	echo "$* -> $status: $output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[[ $output == *"$ENOTCONN_MSG"* ]]
}

@test "with delay_connect and etcd down: mounted, and ENOTCONN for ls, cat, touch, df" {
	fs_mount delay_connect
	fs_is_mounted "$MNT"
	expect_enotconn ls "$MNT"
	expect_enotconn cat "$MNT/seed/k"
	expect_enotconn touch "$MNT/new"
	expect_enotconn mkdir "$MNT/dir"
	expect_enotconn df "$MNT"
	expect_enotconn getfattr -n user.etcd.revision "$MNT"
	# never ENOENT: nothing says "no such key" while etcd was not asked
	run ls "$MNT/seed"
	[[ $output != *"No such file"* ]]
	# the mountpoint itself is a directory: cd and stat work
	[ "$(stat -c %F "$MNT")" = directory ]
	(cd "$MNT")
	# and it still is, later (the mount keeps trying)
	sleep 1
	expect_enotconn ls "$MNT"
}

@test "when etcd comes up, the keys appear, writes work and the watch follows" {
	fs_mount delay_connect
	expect_enotconn cat "$MNT/seed/k"
	# the root as it is before the load (the kernel may keep it)
	[ "$(stat -c %h "$MNT")" -eq 2 ]
	etcd_start_again
	# the back-off is 5 s at most
	fs_wait_value "$MNT/seed/k" v1 15
	ls "$MNT" | grep -qx seed
	# and the root's attributes are the keys' once they are loaded:
	# 2 + one subdirectory
	[ "$(stat -c %h "$MNT")" -eq 3 ]
	echo written | cat >"$MNT/seed/new"
	kv_is /seed/new $'written\n'
	# another client's change comes through the watch
	kv_put /seed/k v2
	fs_wait_value "$MNT/seed/k" v2 10
	[ "$(getfattr --only-values -n user.etcd.watch "$MNT")" = connected ]
	# df works too, with etcd's numbers
	df "$MNT"
	grep -q "etcd at '.*' answers: the keys are loaded" "$FS_LOG"
}

@test "each kind of failure is logged once while waiting" {
	fs_mount delay_connect
	# 200 ms, 400, 800, 1600: four attempts or more in 3.5 s
	sleep 3.5
	cat "$FS_LOG"
	run grep -c 'waiting for etcd (delay_connect): ' "$FS_LOG"
	[ "$output" = 1 ]
	grep -q "waiting for etcd (delay_connect): cannot reach '$ETCD_ENDPOINT'" \
		"$FS_LOG"
}

@test "an unmount while waiting for etcd is prompt" {
	local start

	fs_mount delay_connect
	sleep 1
	start=$SECONDS
	fs_unmount
	echo "unmounted in $((SECONDS - start)) s"
	# promptness is the subject: not scaled by $TEST_TIMEOUT_MULTIPLIER
	((SECONDS - start <= 5))
}

@test "STATUS= lines while waiting; READY=1 once mounted" {
	local sock=$BATS_TEST_TMPDIR/notify notes=$BATS_TEST_TMPDIR/notes

	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[2] + ".up", "w").close()
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(4096).decode().replace("\n", "|") + "\n")
        out.flush()
' "$sock" "$notes" 3>&- &
	NOTIFY_PID=$!
	wait_for 10 test -e "$notes.up"
	MNT=$BATS_TEST_TMPDIR/mnt
	FS_LOG=$BATS_TEST_TMPDIR/etcdfs.log
	fs_clean_env
	env "${FS_CLEAN_ENV[@]}" NOTIFY_SOCKET="$sock" "$ETCDFS" -f \
		-o "endpoints=$ETCD_ENDPOINT,delay_connect$(api_opt)" \
		"$MNT" </dev/null >>"$FS_LOG" 2>&1 3>&- &
	FS_PID=$!
	wait_for 10 grep -q '^READY=1' "$notes"
	fs_is_mounted "$MNT"
	grep -qx "READY=1|STATUS=mounted at $MNT, waiting for etcd at $ETCD_ENDPOINT|MAINPID=$FS_PID" "$notes"
	wait_for 10 grep -q "^STATUS=waiting for etcd at $ETCD_ENDPOINT: .* (attempt 2)$" "$notes"
	etcd_start_again
	wait_for 15 grep -q "^STATUS=serving $ETCD_ENDPOINT (loaded after [0-9]* failed attempts)$" "$notes"
	cat "$notes"
	[ "$(cat "$MNT/seed/k")" = v1 ]
}

@test "without delay_connect a mount with etcd down fails at once" {
	MNT=$BATS_TEST_TMPDIR/mnt
	fs_clean_env
	run timeout 20 env "${FS_CLEAN_ENV[@]}" "$ETCDFS" -f \
		-o "endpoints=$ETCD_ENDPOINT$(api_opt)" "$MNT" 3>&-
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"cannot reach '$ETCD_ENDPOINT'"* ]]
	! fs_is_mounted "$MNT" || false
}
