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
# root's user.etcd.revision, so its values are waited for too (readable),
# and what must hold at once is checked after them.
#
# The cases "... the echo held" hold the echo ($ETCDFS_TEST_HOLD_ECHO:
# while that file exists the echo replays nothing), put with remote_put,
# which waits only until the root's user.etcd.revision reaches the put's
# revision (the watch delivered it and the mirror applied it; the delay
# goes to the TAP output), and then look without waiting: the data must
# be there while the echo has replayed nothing.  Then they let the echo
# go and wait for every inotify event, exactly once each.

load ../lib/mount

setup()
{
	INW_PID=
	EVENTS=$BATS_TEST_TMPDIR/events
	HOLD=$BATS_TEST_TMPDIR/hold-echo
	export ETCDFS_TEST_HOLD_ECHO=$HOLD
}

teardown()
{
	rm -f "$HOLD"
	exec 8>&- || true
	inw_stop
	if [[ -n ${FOLLOWER_PID:-} ]]; then
		kill "$FOLLOWER_PID" 2>/dev/null
		wait "$FOLLOWER_PID" 2>/dev/null || true
	fi
	fs_teardown
}

# mirror_at OUT: waits, polling every 2 ms for 2 s at most, until the
# root's user.etcd.revision reaches the revision in OUT (the JSON that
# etcdctl -w json or tests/lib/kv2.py printed); fails if it does not.
# Says on fd 3 how long the watch took.
mirror_at()
{
	local rev have t0=${EPOCHREALTIME/./} t

	[[ $1 =~ \"revision\":\"?([0-9]+) ]] || return 1
	rev=${BASH_REMATCH[1]}
	for (( ; ; )); do
		have=$(getfattr --absolute-names --only-values \
			-n user.etcd.revision "$MNT") || return 1
		t=$((${EPOCHREALTIME/./} - t0))
		if ((have >= rev)); then
			echo "# the mirror is at revision $rev" \
				"$((t / 1000)) ms after the request returned" >&3
			return 0
		fi
		((t < 2000000)) || break
		sleep 0.002
	done
	echo "the mount did not reach revision $rev within 2 s" >&2
	return 1
}

# remote_put KEY VALUE: another client's put (etcdctl; v2: its keys API),
# then mirror_at its revision
remote_put()
{
	local out

	if fs_v2; then
		out=$(_kv2 put "$1" "$2") || return
	else
		out=$("$ETCDCTL_BIN" put -w json -- "$1" "$2") || return
	fi
	mirror_at "$out"
}

# remote_del KEY: the same for a deletion
remote_del()
{
	local out

	if fs_v2; then
		out=$(_kv2 del "$1" | tail -n 1) || return
	else
		out=$("$ETCDCTL_BIN" del -w json -- "$1") || return
	fi
	mirror_at "$out"
}

# once EVENTS PATH: exactly one such event, within 10 s
once()
{
	wait_event "$1" "$2" || return
	sleep 0.1
	if [[ $(count_event "$1" "$2") != 1 ]]; then
		echo "'$1 $2' $(count_event "$1" "$2") times; events:" >&2
		sed "s|$MNT|\$MNT|" "$EVENTS" >&2
		return 1
	fi
}

# echo_held: no change seen by inotify since inw_start (the tests' own
# reads give OPEN, ACCESS and CLOSE_NOWRITE)
echo_held()
{
	if grep -E '^(CREATE|MODIFY|CLOSE_WRITE|DELETE|MOVED)' "$EVENTS"; then
		echo "events while the echo was held:" >&2
		cat "$EVENTS" >&2
		return 1
	fi
}

# follower: the mount has seen inotifywait -r follow a new directory of
# the echo's, and waits for it to walk each one (user.etcd.stats)
follower()
{
	getfattr --absolute-names --only-values -n user.etcd.stats "$MNT" |
		grep -qx 'echo_follower 1'
}

# seed KEY: another client's put of KEY, whose echo is over (its events
# would otherwise come after the next inw_start), and a new directory
# that inotifywait -r follows, so that the echo waits for it to watch
# every new directory from then on (docs/semantics.md, "The live view").  The echo
# replays in order: a key put last in the root, watched from the start,
# has its CLOSE_WRITE once the rest is replayed.
seed()
{
	inw_start || return
	kv_put "$1" s || return
	kv_put /seed-dir/k s || return
	kv_put /seed-mark m || return
	wait_event CLOSE_WRITE,CLOSE seed-mark || return
	wait_for 5 follower || { echo "no follower seen" >&2; return 1; }
	inw_stop
}

# closes_are N PATH: N CLOSE_WRITE events of PATH
closes_are()
{
	[[ $(count_event CLOSE_WRITE,CLOSE "$2") == "$1" ]]
}

# holds PATH VALUE: PATH reads VALUE now
holds()
{
	[[ $(cat "$1" 2>/dev/null) == "$2" ]]
}

# readable PATH VALUE: PATH reads VALUE within 2 s (the subject: not
# scaled by $TEST_TIMEOUT_MULTIPLIER)
readable()
{
	FS_SCALE=1 wait_for 2 holds "$1" "$2"
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
	kv_is /n remote
	[ "$(cat "$MNT/n")" = remote ]
}

@test "a new key 1 directory deep is there at once, the echo held; then its events" {
	fs_setup
	seed /seed
	readable "$MNT/seed" s
	inw_start
	touch "$HOLD"
	remote_put /n1/k v1
	[ "$(cat "$MNT/n1/k")" = v1 ]
	[ "$(ls "$MNT/n1")" = k ]
	[ "$(stat -c %s "$MNT/n1/k")" -eq 2 ]
	sleep 0.2
	echo_held
	rm "$HOLD"
	once CREATE,ISDIR n1
	once CREATE n1/k
	once CLOSE_WRITE,CLOSE n1/k
	[ "$(cat "$MNT/n1/k")" = v1 ]
}

@test "a new key 6 directories deep is there at once, the echo held; then its events" {
	local d p=

	fs_setup
	seed /seed
	readable "$MNT/seed" s
	inw_start
	touch "$HOLD"
	remote_put /a/b/c/d/e/f/k deep
	[ "$(cat "$MNT/a/b/c/d/e/f/k")" = deep ]
	[ "$(ls "$MNT/a/b/c/d/e/f")" = k ]
	# every new directory is in the kernel's dentries before the echo
	for d in a b c d e f; do
		p+=${p:+/}$d
		[ -d "$MNT/$p" ]
	done
	sleep 0.2
	echo_held
	rm "$HOLD"
	p=
	for d in a b c d e f; do
		p+=${p:+/}$d
		once CREATE,ISDIR "$p"
	done
	once CREATE a/b/c/d/e/f/k
	once CLOSE_WRITE,CLOSE a/b/c/d/e/f/k
	[ "$(cat "$MNT/a/b/c/d/e/f/k")" = deep ]
}

@test "keys put then deleted while the echo is held: gone at once, then their events in order" {
	fs_setup
	seed /x/seed
	readable "$MNT/x/seed" s
	inw_start
	touch "$HOLD"
	remote_put /x/k v
	remote_put /x/y/k2 v2
	[ "$(cat "$MNT/x/k")" = v ]
	[ "$(cat "$MNT/x/y/k2")" = v2 ]
	remote_del /x/k
	remote_del /x/y/k2
	[ ! -e "$MNT/x/k" ]
	[ ! -e "$MNT/x/y" ]
	sleep 0.2
	echo_held
	rm "$HOLD"
	once CREATE x/k
	once CLOSE_WRITE,CLOSE x/k
	once DELETE x/k
	# x/y was gone before the echo made it: inotifywait -r cannot watch
	# it, so what happens inside it is not seen (docs/semantics.md)
	once CREATE,ISDIR x/y
	once DELETE,ISDIR x/y
	[ "$(grep -n -Fx "CLOSE_WRITE,CLOSE $MNT/x/k" "$EVENTS" | cut -d: -f1)" -lt \
	  "$(grep -n -Fx "DELETE $MNT/x/k" "$EVENTS" | cut -d: -f1)" ]
	[ "$(grep -n -Fx "CREATE,ISDIR $MNT/x/y" "$EVENTS" | cut -d: -f1)" -lt \
	  "$(grep -n -Fx "DELETE,ISDIR $MNT/x/y" "$EVENTS" | cut -d: -f1)" ]
	[ "$(ls "$MNT/x")" = seed ]
}

@test "a changed value is there at once, the echo held, and never empty while it is replayed" {
	local i

	fs_setup
	kv_put /v/k old-value
	readable "$MNT/v/k" old-value
	inw_start
	touch "$HOLD"
	remote_put /v/k new-value
	[ "$(cat "$MNT/v/k")" = new-value ]
	sleep 0.2
	echo_held
	rm "$HOLD"
	# the echo's open and write: readers see the value meanwhile
	for ((i = 0; i < 50; i++)); do
		[ "$(cat "$MNT/v/k")" = new-value ]
	done
	wait_event MODIFY v/k
	once CLOSE_WRITE,CLOSE v/k
	[ "$(count_event CREATE v/k)" -eq 0 ]
}

@test "another client's put of a key that is also a prefix is seen at once, the echo held" {
	fs_setup
	kv_put /p/a 1
	readable "$MNT/p/a" 1
	if fs_v2; then
		# v2: a node is a key or a directory, never both (see above)
		run kv_put /p value-of-p
		[ "$status" -ne 0 ]
		return 0
	fi
	# the kernel knows the name is absent
	[ ! -e "$MNT/p/%value" ]
	inw_start
	touch "$HOLD"
	remote_put /p value-of-p
	[ "$(stat -c %s "$MNT/p/%value")" -eq 10 ]
	[ "$(cat "$MNT/p/%value")" = value-of-p ]
	remote_put /p v2
	[ "$(stat -c %s "$MNT/p/%value")" -eq 2 ]
	[ "$(cat "$MNT/p/%value")" = v2 ]
	[ "$(cat "$MNT/p/a")" = 1 ]
	sleep 0.2
	echo_held
	rm "$HOLD"
	once CREATE p/%value
	wait_for 10 closes_are 2 p/%value || { cat "$EVENTS" >&2; false; }
}

@test "another client's put of a key the mount holds as a new file still open is seen at once, the echo held" {
	fs_setup
	exec 8>"$MNT/n"
	# the kernel has its attributes: size 0
	[ "$(stat -c %s "$MNT/n")" -eq 0 ]
	touch "$HOLD"
	remote_put /n remote
	[ "$(stat -c %s "$MNT/n")" -eq 6 ]
	[ "$(cat "$MNT/n")" = remote ]
	rm "$HOLD"
	exec 8>&- || true
	kv_is /n remote
	[ "$(cat "$MNT/n")" = remote ]
}

# counter NAME: the counter NAME of the root's user.etcd.stats
counter()
{
	getfattr --absolute-names --only-values -n user.etcd.stats "$MNT" |
		sed -n "s/^$1 //p"
}

@test "a watcher slow to follow new directories sees each one: the echo waits until it walked it" {
	local out=$BATS_TEST_TMPDIR/follower p= d walked

	fs_setup
	# 50 ms before each walk: five times the echo's pause when nobody is
	# known to follow (FOLLOW_PAUSE_MS), so that without its wait the
	# walk of n1 comes after n2 is made; and a quarter of the longest
	# wait for a walk (FOLLOW_WAIT_MS, 200 ms), so that the walk, with a
	# listing of three FUSE requests on a loaded machine, comes in time
	python3 "$TESTS_DIR/lib/slow_follower.py" "$MNT" 0.05 "$out" &
	FOLLOWER_PID=$!
	wait_for 10 grep -qsx READY "$out"
	# its walk of a first new directory tells the mount it follows
	kv_put /f0/k s
	wait_for 5 follower
	walked=$(counter echo_dirs_walked)
	kv_put /n1/n2/n3/n4/k deep
	wait_for 10 grep -qFx "CLOSE_WRITE,CLOSE $MNT/n1/n2/n3/n4/k" "$out" ||
		{ cat "$out" >&2; false; }
	for d in n1 n2 n3 n4; do
		p+=${p:+/}$d
		grep -qFx "CREATE,ISDIR $MNT/$p" "$out" ||
			{ echo "no CREATE of $p" >&2; cat "$out" >&2; false; }
	done
	grep -qFx "CREATE $MNT/n1/n2/n3/n4/k" "$out"
	[ "$(counter echo_dirs_walked)" -eq $((walked + 4)) ]
	[ "$(counter echo_dirs_unwalked)" -eq 0 ]
}
