#!/usr/bin/env bats
#
# tests/fs/conflicts.bats - no silent last-writer-wins
#
# A write whose key another client changed between open and close fails at
# close/fsync with ESTALE and etcd keeps the other client's value; an
# unlink of a key changed since the mount last read it fails the same way;
# and shell scripts that pin the revision they read (setfattr
# user.etcd.pin) lose no update even when eight of them increment one
# counter at once.

load ../lib/mount

setup()
{
	fs_setup
}

teardown()
{
	rm -f "$BATS_TEST_TMPDIR/hold-echo" "$BATS_TEST_TMPDIR/hold-invals"
	exec 8<&- || true
	fs_teardown
}

@test "close fails with ESTALE when another client changed the key" {
	local rev
	kv_put /k original

	run fs_try '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"mine\n")
kv_put(b"/k", b"theirs")
os.close(fd)' "$MNT/k"
	echo "$output"
	[ "$output" = ESTALE ]
	kv_is /k theirs
	[ "$(kv_meta /k version)" -eq 2 ]
	fs_wait_value "$MNT/k" theirs
}

# Puts the value $2 at the key $1 (both plain words) over HTTP with bash
# builtins only: a command run while the test holds a file open for
# writing would get a copy of it, and closing that copy is a flush, which
# commits.  v3: the JSON gateway's put (base64 by bash alone is not at
# hand, so the caller passes $3 and $4, the key and value in base64);
# v2: a set on /v2/keys.
put_builtin()
{
	local body hostport line

	hostport=${ETCD_ENDPOINT#http://}
	exec 6<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
	if fs_v2; then
		body="value=$2"
		printf 'PUT /v2/keys%s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s' \
			"$1" "$hostport" "${#body}" "$body" >&6
	else
		body="{\"key\":\"$3\",\"value\":\"$4\"}"
		printf 'POST /v3/kv/put HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
			"$hostport" "${#body}" "$body" >&6
	fi
	read -r line <&6
	exec 6<&-
	[[ $line == "HTTP/1."?" 20"[01]* ]]
}

@test "a shell writer's close fails with Stale file handle" {
	local key value
	kv_put /k original
	key=$(printf /k | base64)
	value=$(printf theirs | base64)

	# Opened (O_TRUNC) by the shell, written and closed by cat: its close
	# is the first flush with data, and cat reports its error.
	exec 5>"$MNT/k"
	put_builtin /k theirs "$key" "$value"
	run bash -c 'cat >&5 <<<mine'
	exec 5>&-
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"Stale file handle"* ]]
	kv_is /k theirs
	[ "$(kv_meta /k version)" -eq 2 ]
}

@test "fsync fails with ESTALE when another client changed the key" {
	kv_put /k original

	run fs_try '
fd = os.open(args[0], os.O_RDWR)
os.read(fd, 100)
os.pwrite(fd, b"MINE", 0)
kv_put(b"/k", b"theirs")
try:
    os.fsync(fd)
finally:
    try:
        os.close(fd)
    except OSError:
        pass' "$MNT/k"
	echo "$output"
	[ "$output" = ESTALE ]
	kv_is /k theirs
	[ "$(kv_meta /k version)" -eq 2 ]
}

# The kernel may still have the name of a file another client changed
# while it was open elsewhere: the mirror put the new value on a new
# inode, and the kernel has not yet been told that the name leads there
# (the watch's invalidation is held, $ETCDFS_TEST_HOLD_INVALS, and the
# echo's, $ETCDFS_TEST_HOLD_ECHO).  A save through that name starts from
# the change the mount had before the open: no conflict.
@test "a save through a name the kernel has not yet seen change commits" {
	export ETCDFS_TEST_HOLD_ECHO=$BATS_TEST_TMPDIR/hold-echo
	export ETCDFS_TEST_HOLD_INVALS=$BATS_TEST_TMPDIR/hold-invals
	fs_unmount
	fs_mount
	kv_put /k original
	exec 8<"$MNT/k"
	[ "$(cat "$MNT/k")" = original ]
	events=$(fs_stat watch_events)
	touch "$ETCDFS_TEST_HOLD_ECHO" "$ETCDFS_TEST_HOLD_INVALS"
	FS_NO_CATCH_UP=1 kv_put /k theirs
	fs_wait_applied "$events"

	printf mine >"$MNT/k"
	kv_is /k mine
	[ "$(kv_meta /k version)" -eq 3 ]
	[ "$(cat <&8)" = original ]
	rm "$ETCDFS_TEST_HOLD_ECHO" "$ETCDFS_TEST_HOLD_INVALS"
}

@test "a new file loses against a key another client created meanwhile" {
	run fs_try '
fd = os.open(args[0], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"mine")
kv_put(b"/new", b"theirs")
os.close(fd)' "$MNT/new"
	echo "$output"
	[ "$output" = ESTALE ]
	kv_is /new theirs
}

@test "of two writers through the mount the later close fails" {
	kv_put /k original

	run fs_try '
a = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
b = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(b, b"second")
os.close(b)
os.write(a, b"first")
os.close(a)' "$MNT/k"
	echo "$output"
	[ "$output" = ESTALE ]
	kv_is /k second
	[ "$(kv_meta /k version)" -eq 2 ]
}

@test "a writer with no competitor commits" {
	kv_put /k original

	run fs_try '
fd = os.open(args[0], os.O_RDWR)
os.read(fd, 100)
os.pwrite(fd, b"O", 0)
os.fsync(fd)
os.pwrite(fd, b"!", 8)
os.close(fd)' "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
	kv_is /k 'Original!'
	[ "$(kv_meta /k version)" -eq 3 ]
}

@test "rm of a key changed since the mount read it fails and keeps the key" {
	# Without the watch, what the mount knows of /k is its last read;
	# with it, the mount learns of the change at once (see the pin test).
	fs_unmount
	fs_mount nowatch
	kv_put /k original
	[ "$(cat "$MNT/k")" = original ]

	kv_put /k theirs
	run rm "$MNT/k"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"Stale file handle"* ]]
	kv_is /k theirs

	# Once the mount has read the new revision, rm works.
	fs_wait_value "$MNT/k" theirs
	rm "$MNT/k"
	kv_absent /k
	[ ! -e "$MNT/k" ]
}

@test "rm of a key nobody changed deletes it" {
	kv_put /k v
	cat "$MNT/k" >/dev/null

	rm "$MNT/k"
	kv_absent /k
	[ ! -e "$MNT/k" ]
}

# One of the counter scripts: adds 1 to the counter in $1, $2 times, with
# nothing but getfattr, setfattr, cat, shell arithmetic and redirection;
# a commit that loses the race fails (ESTALE) and is tried again.
COUNTER_SCRIPT='
f=$1 n=0 tries=0
while ((n < $2)); do
	((tries++ < 20000)) || { echo "gave up after $tries tries" >&2; exit 2; }
	rev=$(getfattr --absolute-names --only-values -n user.etcd.resourceVersion "$f") || continue
	v=$(cat "$f") || continue
	if [[ ! $v =~ ^[0-9]+$ ]]; then
		echo "read a value that is not a number: \"$v\"" >&2
		exit 3
	fi
	setfattr -n user.etcd.pin -v "$rev" "$f" || continue
	cat >"$f" 2>/dev/null <<<"$((v + 1))" && n=$((n + 1))
done
exit 0
'

@test "8 scripts incrementing one counter 25 times each end at 200" {
	local i pids=() failed=0
	kv_put /counter 0
	printf '%s' "$COUNTER_SCRIPT" >"$BATS_TEST_TMPDIR/incr.sh"

	for ((i = 0; i < 8; i++)); do
		timeout 300 bash "$BATS_TEST_TMPDIR/incr.sh" "$MNT/counter" 25 \
			>"$BATS_TEST_TMPDIR/incr.$i.log" 2>&1 3>&- &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			echo "script $i failed:"
			cat "$BATS_TEST_TMPDIR/incr.$i.log"
			failed=1
		fi
	done
	[ "$failed" -eq 0 ]
	kv_is /counter $'200\n'
	# ...and yet some were lost: a number below 200, as written
	[ "$(cat "$MNT/counter")" = 200 ]
}

@test "the counter script without its pin loses updates (the test can fail)" {
	# The same race without setfattr: shows that the counter test above
	# exercises real conflicts, i.e. that the pin is what saves it.
	local i pids=() script failed=0 n
	kv_put /counter 0
	script=${COUNTER_SCRIPT/setfattr -n user.etcd.pin -v \"\$rev\" \"\$f\" || continue/:}
	[ "$script" != "$COUNTER_SCRIPT" ]
	printf '%s' "$script" >"$BATS_TEST_TMPDIR/incr.sh"

	for ((i = 0; i < 8; i++)); do
		timeout 300 bash "$BATS_TEST_TMPDIR/incr.sh" "$MNT/counter" 25 \
			>"$BATS_TEST_TMPDIR/incr.$i.log" 2>&1 3>&- &
		pids+=($!)
	done
	# each script made its 25 writes (not one failed for good), and
	# never read a torn value (it exits 3 then)
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			echo "script $i failed:"
			cat "$BATS_TEST_TMPDIR/incr.$i.log"
			failed=1
		fi
	done
	[ "$failed" -eq 0 ]
	# and yet some were lost: a number below 200, as written (a
	# write of the bytes etcd holds already makes no revision: the key's
	# version does not count the writes)
	n=$(kv_get /counter)
	[[ $n =~ ^[0-9]+$ ]]
	kv_is /counter "$n"$'\n'
	((n > 0 && n < 200))
}
