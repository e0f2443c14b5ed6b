#!/usr/bin/env bats
#
# tests/fs/errors.bats - the mount when etcd goes away and comes back
#
# With etcd stopped (or frozen by SIGSTOP) while mounted, operations that
# need etcd fail within a bounded time with ENOTCONN or ETIMEDOUT, never
# ENOENT and never a hang; once etcd is back on the same port with the same
# data, they work again and the mount follows changes again.  It does not
# cover bad options or bad endpoints at mount time.

load ../lib/mount

setup()
{
	fs_setup
	ETCD_FROZEN=
}

teardown()
{
	if [[ -n $ETCD_FROZEN ]]; then
		kill -CONT "$ETCD_FROZEN" 2>/dev/null
	fi
	fs_teardown
}

DOWN_RE='Transport endpoint is not connected|Connection timed out'

# Runs a command that needs etcd: it must fail, within 20 s, with ENOTCONN
# or ETIMEDOUT as its message.
expect_down()
{
	local start=$SECONDS

	run timeout 20 "$@"
	echo "$* -> status $status after $((SECONDS - start)) s: $output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$status" -lt 128 ]
	[[ $output =~ $DOWN_RE ]]
	[[ $output != *"No such file"* ]]
}

# Runs Python CODE on the mount: it must fail within 20 s with ENOTCONN or
# ETIMEDOUT.
expect_down_errno()
{
	local start=$SECONDS

	FS_TRY_TIMEOUT=20 run fs_try "$@"
	echo "python -> status $status after $((SECONDS - start)) s: $output"
	[ "$status" -ne 124 ]
	[[ $output == ENOTCONN || $output == ETIMEDOUT ]]
}

_mirror_caught_up()
{
	if kv_has /dir/a; then
		[ -e "$MNT/dir/a" ]
	else
		[ ! -e "$MNT/dir/a" ]
	fi
}

_mount_works()
{
	local v

	v=$(kv_get /k) && [ "$(cat "$MNT/k" 2>/dev/null)" = "$v" ]
}

seed()
{
	kv_put /k v
	kv_put /dir/a 1
	kv_put /unseen/b 2
	kv_put /unread w
	[ "$(cat "$MNT/k")" = v ]
	[ "$(cat "$MNT/dir/a")" = 1 ]
}

# What must work again once etcd is back.
check_recovered()
{
	if ! wait_for 30 _mount_works; then
		echo "the mount did not recover within 30 s"
		return 1
	fi
	[ "$(ls "$MNT/unseen")" = b ]
	[ "$(cat "$MNT/unread")" = w ]
	printf 'after' >"$MNT/k"
	kv_is /k after
	# (dir goes with its last key if that delete was applied)
	mkdir -p "$MNT/dir"
	printf 'created' >"$MNT/dir/new"
	kv_is /dir/new created
	# (a delete that timed out may have been applied meanwhile)
	wait_for 10 _mirror_caught_up
	rm -f "$MNT/dir/a"
	kv_absent /dir/a

	# The watch follows other clients again.
	kv_put /k from-etcdctl
	fs_wait_value "$MNT/k" from-etcdctl
	kv_put /late x
	wait_for 10 test -e "$MNT/late"
}

@test "etcd stopped: writes, creates and deletes fail with ENOTCONN or ETIMEDOUT, then work again" {
	seed
	printf 'mine' >"$BATS_TEST_TMPDIR/src"
	etcd_stop_keep

	expect_down cp "$BATS_TEST_TMPDIR/src" "$MNT/k"
	expect_down cp "$BATS_TEST_TMPDIR/src" "$MNT/dir/created"
	expect_down rm "$MNT/dir/a"
	expect_down_errno '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"x")
os.close(fd)' "$MNT/k"
	expect_down_errno '
fd = os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"x")
os.close(fd)' "$MNT/excl"
	expect_down_errno 'os.rename(args[0], args[1])' "$MNT/k" "$MNT/renamed"

	etcd_start_again
	kv_is /k v
	kv_absent /dir/created
	kv_absent /excl
	kv_absent /renamed
	kv_is /dir/a 1
	check_recovered
}

@test "etcd stopped: reads come from the mirror, then the mount follows etcd again" {
	seed
	etcd_stop_keep

	[ "$(ls "$MNT/unseen")" = b ]
	[ "$(cat "$MNT/unread")" = w ]
	[ "$(cat "$MNT/k")" = v ]

	etcd_start_again
	check_recovered
}

@test "etcd stopped, nowatch: listing and reading fail with ENOTCONN or ETIMEDOUT, then work again" {
	fs_unmount
	fs_mount nowatch
	seed
	etcd_stop_keep

	expect_down ls "$MNT/unseen"
	expect_down cat "$MNT/unread"
	expect_down cat "$MNT/k"

	etcd_start_again
	check_recovered
}

@test "etcd frozen: writes time out instead of hanging, then work again" {
	seed
	etcd_freeze

	expect_down_errno '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"x")
os.close(fd)' "$MNT/k"
	expect_down rm "$MNT/dir/a"

	kill -CONT "$ETCD_FROZEN"
	ETCD_FROZEN=
	# A request that timed out after it was sent may still be applied
	# when etcd wakes up: ETIMEDOUT means "outcome unknown".
	kv_is /k v || kv_is /k x
	check_recovered
}

@test "etcd frozen, nowatch: reads time out instead of hanging, then work again" {
	fs_unmount
	fs_mount nowatch
	seed
	etcd_freeze

	expect_down ls "$MNT/unseen"
	expect_down cat "$MNT/unread"

	kill -CONT "$ETCD_FROZEN"
	ETCD_FROZEN=
	check_recovered
}

@test "a commit while etcd is down fails and loses nothing" {
	seed
	etcd_remember

	# All in one process: a fork would flush (commit) the open file.
	FS_TRY_TIMEOUT=40 run fs_try '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"mine")
pid = int(args[1])
os.kill(pid, 15)
deadline = time.time() + 15
while time.time() < deadline:
    try:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                break
    except FileNotFoundError:
        break
    time.sleep(0.05)
else:
    raise SystemExit("etcd did not stop")
os.close(fd)' "$MNT/k" "$(cat "$ETCD_DIR/pid")"
	echo "$output"
	[[ $output == ENOTCONN || $output == ETIMEDOUT ]]
	etcd_stop "$ETCD_DIR" || true

	etcd_start_again
	kv_is /k v
	[ "$(kv_meta /k version)" -eq 1 ]
	check_recovered
}

@test "the mount unmounts cleanly while etcd is down" {
	local start
	seed
	etcd_stop_keep

	start=$SECONDS
	fs_unmount
	# a limit on the machine, not the subject: scaled
	[ $((SECONDS - start)) -lt $((15 * FS_SCALE)) ]
	! fs_is_mounted "$MNT" || false
}
