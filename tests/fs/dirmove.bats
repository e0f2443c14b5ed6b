#!/usr/bin/env bats
#
# tests/fs/dirmove.bats - mv of a directory of keys: one transaction where
# the keys fit in one (v3), else EXDEV, and mv copies and deletes
#
# etcdctl (or /v2/keys) checks what etcd holds and at how many revisions.
# The conflict case holds the mount's watch ($ETCDFS_TEST_HOLD_WATCH, see
# fs/live.c), so that another client's put is in etcd and not yet in the
# mount when mv runs.  The lost answer's case freezes etcd (SIGSTOP) past
# the mount's request timeout, and lets it go before the settling ends.

load ../lib/mount

setup()
{
	HOLD=$BATS_TEST_TMPDIR/hold-watch
	export ETCDFS_TEST_HOLD_WATCH=$HOLD
	fs_live_setup
}

teardown()
{
	rm -f "$HOLD"
	if [[ -n ${ETCD_FROZEN-} ]]; then
		kill -CONT "$ETCD_FROZEN" 2>/dev/null
	fi
	fs_live_teardown
}

# fill PREFIX N: N keys PREFIX/k01.. with values v01.., through etcdctl
# or /v2/keys, then waits for the mount to have them.
fill()
{
	local i

	for ((i = 1; i <= $2; i++)); do
		printf -v i2 '%02d' "$i"
		kv_put "$1/k$i2" "v$i2" || return 1
	done
}

# The keys under PREFIX with their values, "KEY VALUE" a line, the prefix
# taken off.
dump_under()
{
	kv_dump | awk -v p="$1/" 'index($1, p) == 1 { print substr($0, length(p) + 1) }'
}

@test "mv of a directory of 10 keys is one revision (v2: copies)" {
	local before after id ino_dir ino_file
	fill /d 8
	kv_put /d/sub/x "in sub"
	kv_put /d/sub/y "in sub too"
	if ! fs_v2; then
		id=$(etcdctl lease grant 600 | awk '$1 == "lease" { print $2 }')
		etcdctl put --lease="$id" /d/sub/y "in sub too" >/dev/null
	fi
	kv_put /other o
	fs_wait_value "$MNT/d/sub/y" "in sub too"
	before=$(dump_under /d)
	ino_dir=$(stat -c %i "$MNT/d")
	ino_file=$(stat -c %i "$MNT/d/k03")
	rev=$(kv_rev)
	inw_start

	mv "$MNT/d" "$MNT/e"
	[ "$(dump_under /e)" = "$before" ]
	[ -z "$(dump_under /d)" ]
	kv_is /other o
	[ "$(cat "$MNT/e/sub/x")" = "in sub" ]
	[ ! -e "$MNT/d" ]
	[ "$(ls "$MNT/e" | wc -l)" -eq 9 ]
	if fs_v2; then
		# a put and a delete a key
		(($(kv_rev) > rev + 1))
		return 0
	fi
	[ "$(kv_rev)" -eq $((rev + 1)) ]
	[ "$(kv_meta /e/k01 mod_revision)" -eq $((rev + 1)) ]
	[ "$(kv_meta /e/sub/x mod_revision)" -eq $((rev + 1)) ]
	# the lease went with its key
	[ "$(printf '%016x' "$(kv_meta /e/sub/y lease)")" = "$id" ]
	[ "$(kv_meta /e/sub/x lease)" = 0 ]
	# the same inodes, as after a local rename, and its events
	[ "$(stat -c %i "$MNT/e")" = "$ino_dir" ]
	[ "$(stat -c %i "$MNT/e/k03")" = "$ino_file" ]
	wait_event MOVED_FROM,ISDIR d
	wait_event MOVED_TO,ISDIR e
	# the mirror's attributes are the new keys'
	[ "$(getfattr --only-values -n user.etcd.resourceVersion "$MNT/e/k01")" -eq $((rev + 1)) ]
	# later edits go to the new keys; the watch's own events change nothing
	echo new | cat >"$MNT/e/k02"
	kv_is /e/k02 $'new\n'
	kv_absent /d/k02
	wait_mirror_equal
}

@test "mv of a directory whose key another client changed is ESTALE and changes nothing" {
	local rev before
	fill /d 5
	fs_wait_value "$MNT/d/k05" v05
	# the mount does not see this put until the hold goes
	touch "$HOLD"
	if fs_v2; then
		_kv2 put /d/k03 theirs >/dev/null
	else
		etcdctl put /d/k03 theirs >/dev/null
	fi
	sleep 0.5
	[ "$(cat "$MNT/d/k03")" = v03 ]
	rev=$(kv_rev)
	before=$(kv_dump)

	run mv "$MNT/d" "$MNT/e"
	echo "$output"
	[ "$status" -ne 0 ]
	if fs_v2; then
		# v2 copies key by key: the copy of k03 fails on its revision
		kv_is /d/k03 theirs
		rm -f "$HOLD"
		return 0
	fi
	[[ $output == *"Stale file handle"* ]]
	[ "$(kv_rev)" = "$rev" ]
	[ "$(kv_dump)" = "$before" ]
	[ -z "$(dump_under /e)" ]
	kv_is /d/k03 theirs
	rm -f "$HOLD"
	fs_wait_value "$MNT/d/k03" theirs
	[ -d "$MNT/d" ]
	[ ! -e "$MNT/e" ]
}

# held_put KEY VALUE: with the mount's watch held, another client puts
# KEY; the mount does not see it until the hold goes.
held_put()
{
	touch "$HOLD"
	if fs_v2; then
		_kv2 put "$1" "$2" >/dev/null
	else
		etcdctl put "$1" "$2" >/dev/null
	fi
	sleep 0.5
}

# The request bytes etcd has not read from its clients' connections: a
# frozen etcd's unanswered requests.
etcd_unread()
{
	ss -Htn state established "( sport = :${ETCD_ENDPOINT##*:} )" |
		awk '{ n += $1 } END { print n + 0 }'
}

# blocked_in PID FUNCTION: PID waits in the kernel's FUNCTION
# (request_wait_answer: for an answer of the mount's; do_renameat2: for
# a directory's lock, held by a request that waits in the mount).
blocked_in()
{
	[[ $(cat "/proc/$1/wchan" 2>/dev/null) == "$2" ]]
}

@test "mv of a directory under which another client put a new key: v3 ESTALE, nothing changed; v2 the new key kept" {
	local rev before
	fill /d 3
	fs_wait_value "$MNT/d/k03" v03
	held_put /d/theirs new
	[ ! -e "$MNT/d/theirs" ]
	rev=$(kv_rev)
	before=$(kv_dump)

	run mv "$MNT/d" "$MNT/e"
	echo "$output"
	[ "$status" -ne 0 ]
	if fs_v2; then
		# v2 copies key by key what the mount knows, then cannot
		# remove the directory that still holds the other key
		[[ $output == *"cannot remove '$MNT/d': Directory not empty"* ]]
		[ "$(dump_under /e)" = "$(printf 'k01 v01\nk02 v02\nk03 v03')" ]
		[ "$(dump_under /d)" = "theirs new" ]
	else
		[[ $output == *"Stale file handle"* ]]
		[ "$(kv_rev)" = "$rev" ]
		[ "$(kv_dump)" = "$before" ]
		[ -z "$(dump_under /e)" ]
	fi
	kv_is /d/theirs new
	rm -f "$HOLD"
	fs_wait_value "$MNT/d/theirs" new
}

@test "mv of a directory onto a name another client just filled: v3 ESTALE, nothing changed; v2 merged into it" {
	local rev before
	fill /d 3
	fs_wait_value "$MNT/d/k03" v03
	held_put /e/theirs new
	[ ! -e "$MNT/e" ]
	rev=$(kv_rev)
	before=$(kv_dump)

	run mv -T "$MNT/d" "$MNT/e"
	echo "$output"
	if fs_v2; then
		# v2 copies key by key what the mount knows, into the
		# directory the other client made: no key lost
		[ "$status" -eq 0 ]
		[ "$(dump_under /e)" = "$(printf 'k01 v01\nk02 v02\nk03 v03\ntheirs new')" ]
		[ -z "$(dump_under /d)" ]
	else
		[ "$status" -ne 0 ]
		[[ $output == *"Stale file handle"* ]]
		[ "$(kv_rev)" = "$rev" ]
		[ "$(kv_dump)" = "$before" ]
		[ "$(dump_under /e)" = "theirs new" ]
		[ "$(dump_under /d | wc -l)" -eq 3 ]
	fi
	rm -f "$HOLD"
	fs_wait_value "$MNT/e/theirs" new
}

@test "mv of a directory of 200 keys is EXDEV, and mv copies it" {
	local rev before
	puts_http /big/k 200
	wait_for 20 test -e "$MNT/big/k0199"
	before=$(dump_under /big)
	[ "$(echo "$before" | wc -l)" -eq 200 ]
	rev=$(kv_rev)

	run "$FS_PYTHON" -c 'import os, sys
try:
    os.rename(sys.argv[1], sys.argv[2])
except OSError as e:
    print(e.errno == __import__("errno").EXDEV and "EXDEV" or e)' "$MNT/big" "$MNT/moved"
	[ "$output" = EXDEV ]
	[ "$(kv_rev)" = "$rev" ]

	mv "$MNT/big" "$MNT/moved"
	[ "$(dump_under /moved)" = "$before" ]
	[ -z "$(dump_under /big)" ]
	# key by key: many revisions
	(($(kv_rev) > rev + 200))
}

@test "mv of a directory of 2 MB, past etcd's request size, copies it" {
	local v i before
	v=$(head -c 102400 /dev/zero | tr '\0' a)
	for i in $(seq -w 1 20); do
		kv_put "/huge/f$i" "$i$v"
	done
	wait_for 20 test -e "$MNT/huge/f20"
	before=$(dump_under /huge | md5sum)
	[ "$(dump_under /huge | wc -l)" -eq 20 ]

	run mv "$MNT/huge" "$MNT/moved"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(dump_under /moved | md5sum)" = "$before" ]
	[ -z "$(dump_under /huge)" ]
	[ "$(stat -c %s "$MNT/moved/f07")" -eq 102402 ]
}

@test "max_txn_ops= bounds the keys one transaction moves" {
	local rev
	fs_unmount
	fs_mount max_txn_ops=10
	fill /five 5
	fill /six 6
	fs_wait_value "$MNT/six/k06" v06
	rev=$(kv_rev)
	mv "$MNT/five" "$MNT/five2"
	if fs_v2; then
		(($(kv_rev) > rev + 1))	# v2: copies whatever the size
	else
		[ "$(kv_rev)" -eq $((rev + 1)) ]
	fi
	rev=$(kv_rev)
	run mv -T "$MNT/six" "$MNT/six2"
	[ "$status" -eq 0 ]
	(($(kv_rev) > rev + 1))
	[ "$(dump_under /six2 | wc -l)" -eq 6 ]
	[ "$(dump_under /five2 | wc -l)" -eq 5 ]
	run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,max_txn_ops=1" "$BATS_TEST_TMPDIR"
	[ "$status" -ne 0 ]
	[[ $output == *"max_txn_ops"* ]]
}

@test "mv of a directory onto an existing one: an empty one is replaced, a full one is ENOTEMPTY" {
	fill /a 2
	fill /b 1
	mkdir "$MNT/empty"
	fs_wait_value "$MNT/b/k01" v01
	run mv -T "$MNT/a" "$MNT/b"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"Directory not empty"* ]]
	run fs_try 'os.rename(args[0], args[1])' "$MNT/a" "$MNT/b"
	[ "$output" = ENOTEMPTY ]
	[ "$(dump_under /a)" = "$(printf 'k01 v01\nk02 v02')" ]
	[ "$(dump_under /b)" = "k01 v01" ]
	mv -T "$MNT/a" "$MNT/empty"
	kv_is /empty/k02 v02
	kv_absent /a/k01
	[ "$(cat "$MNT/empty/k01")" = v01 ]
}

@test "a file made or a directory renamed in a directory whose rename is in flight takes the new prefix" {
	local mvpid tpid rpid dir ino unread
	fill /d 3
	kv_put /d/sub/x o
	fs_wait_value "$MNT/d/k03" v03
	fs_wait_value "$MNT/d/sub/x" o
	ino=$(stat -c %i "$MNT/d/sub/x")
	if ! fs_v2; then
		# etcd frozen: the rename's transaction waits in flight, the
		# mount's lock dropped, while a file is made in the directory
		etcd_freeze
	fi
	unread=$(etcd_unread)
	mv "$MNT/d" "$MNT/e" &
	mvpid=$!
	# v2 copies key by key: there the file is made once mv is done
	fs_v2 && wait "$mvpid"
	fs_v2 && dir=e || dir=d
	# v3: the rename's transaction waits, unread, in etcd's socket
	fs_v2 || wait_for 10 eval '(($(etcd_unread) > unread + 100))'
	echo new >"$MNT/$dir/new" &
	tpid=$!
	# v3: the file's create waits for the rename in flight in the
	# mount, holding the directory's lock in the kernel; the other
	# rename, started once it does, waits for that lock (one that came
	# first would wait in the mount instead: the next case)
	fs_v2 || wait_for 10 blocked_in "$tpid" request_wait_answer
	mv "$MNT/$dir/sub" "$MNT/$dir/sub2" &
	rpid=$!
	if ! fs_v2; then
		wait_for 10 blocked_in "$rpid" do_renameat2
		kill -CONT "$ETCD_FROZEN"
		ETCD_FROZEN=
	fi
	fs_v2 || wait "$mvpid"
	wait "$tpid"
	wait "$rpid"
	kv_is /e/new $'new\n'
	kv_is /e/sub2/x o
	kv_absent /d/new
	[ -z "$(kv_keys /d/)" ]
	[ "$(cat "$MNT/e/new")" = new ]
	[ "$(cat "$MNT/e/sub2/x")" = o ]
	[ ! -e "$MNT/e/sub" ]
	# the subdirectory's rename waited for its parent's and was one
	# transaction too (not mv's copy): the file kept its inode
	fs_v2 || [ "$(stat -c %i "$MNT/e/sub2/x")" = "$ino" ]
	[ ! -e "$MNT/d" ]
	kv_is /e/k01 v01
}

# move_in_flight FROM TO: mv FROM TO with etcd frozen, its transaction
# sent and unread (v3), in the background ($MVPID) until thaw; v2 has no
# rename in flight (mv copies key by key): there mv is done at once.
move_in_flight()
{
	local unread

	if fs_v2; then
		mv "$MNT/$1" "$MNT/$2"
		MVPID=
		return
	fi
	etcd_freeze
	unread=$(etcd_unread)
	mv "$MNT/$1" "$MNT/$2" &
	MVPID=$!
	wait_for 10 eval '(($(etcd_unread) > unread + 100))'
}

# thaw PID: once PID waits in the mount (v3), lets etcd go and waits for
# the rename in flight and for PID.
thaw()
{
	if [[ -n $MVPID ]]; then
		wait_for 10 blocked_in "$1" request_wait_answer
		kill -CONT "$ETCD_FROZEN"
		ETCD_FROZEN=
		wait "$MVPID"
	fi
	wait "$1"
}

# A rename or a mkdir in a directory whose rename is in flight reaches
# the mount when nothing else holds that directory in the kernel (above,
# the file's create holds it, and the other rename waits for the kernel's
# lock): it waits in the mount for the rename in flight, then takes the
# new prefix.  Answered at once, the rename was EXDEV (its keys in flight)
# and mv copied and deleted through the old path, gone by then; the mkdir
# made its directory under the old prefix.
@test "a rename or a mkdir in a directory whose rename is in flight waits for it" {
	local dir ino

	fill /d 3
	kv_put /d/sub/x o
	fs_wait_value "$MNT/d/sub/x" o
	ino=$(stat -c %i "$MNT/d/sub/x")
	wait_for 10 fs_echo_idle
	move_in_flight d e
	[[ -n $MVPID ]] && dir=d || dir=e
	mv "$MNT/$dir/sub" "$MNT/$dir/sub2" &
	thaw $!
	kv_is /e/sub2/x o
	[ -z "$(kv_keys /d/)" ]
	[ -z "$(kv_keys /e/sub/)" ]
	[ "$(cat "$MNT/e/sub2/x")" = o ]
	[ ! -e "$MNT/e/sub" ]
	[ ! -e "$MNT/d" ]
	# one transaction, not mv's copy: the file kept its inode
	fs_v2 || [ "$(stat -c %i "$MNT/e/sub2/x")" = "$ino" ]

	move_in_flight e f
	[[ -n $MVPID ]] && dir=e || dir=f
	mkdir "$MNT/$dir/m" &
	thaw $!
	[ -d "$MNT/f/m" ]
	echo z >"$MNT/f/m/z"
	kv_is /f/m/z $'z\n'
	[ -z "$(kv_keys /e/)" ]
	[ -z "$(kv_keys /d/)" ]
	[ ! -e "$MNT/e" ]
}

@test "mv of a directory whose answer is lost is settled: one revision, mv succeeds (v2: the copy's mkdir times out, nothing moved)" {
	local rev before mvpid st=0 timeouts
	fs_unmount
	fs_mount request_timeout=1s
	fill /d 5
	fs_wait_value "$MNT/d/k05" v05
	before=$(dump_under /d)
	rev=$(kv_rev)
	timeouts=$(fs_stat etcd_errors_timeout)
	# etcd frozen: the transaction's answer does not come within the
	# request timeout, and etcd answers again before the settling ends
	# (v2: mv's copy starts with a mkdir, which times out)
	etcd_freeze
	mv "$MNT/d" "$MNT/e" 2>"$BATS_TEST_TMPDIR/mv.err" &
	mvpid=$!
	wait_for 10 eval '(($(fs_stat etcd_errors_timeout) > timeouts))'
	kill -CONT "$ETCD_FROZEN"
	ETCD_FROZEN=
	wait "$mvpid" || st=$?
	cat "$BATS_TEST_TMPDIR/mv.err"
	if fs_v2; then
		[ "$st" -ne 0 ]
		grep -q "cannot create directory '$MNT/e': Connection timed out" \
			"$BATS_TEST_TMPDIR/mv.err"
		[ "$(dump_under /d)" = "$before" ]
		[ -z "$(dump_under /e)" ]
		[ "$(kv_history "$rev" | grep -c PUT)" -eq 0 ]
		return 0
	fi
	[ "$st" -eq 0 ]
	[ "$(dump_under /e)" = "$before" ]
	[ -z "$(dump_under /d)" ]
	[ "$(kv_rev)" -eq $((rev + 1)) ]
	[ "$(cat "$MNT/e/k03")" = v03 ]
	[ ! -e "$MNT/d" ]
	wait_mirror_equal
}
