#!/usr/bin/env bats
#
# tests/fs/cache.bats - what the mount keeps in memory and what the kernel
# may cache: the value budget (-o value_budget: values evicted and read
# again, by readers, appenders, truncate and an editor's rename), the long
# entry and attribute timeouts kept coherent by invalidations, and -o
# quorum answered from the mirror once it holds the key's revision.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash).  The
# bytes of values held are read off the root's user.etcd.valueBytes; which
# values are evicted follows from the order the test reads them in (least
# recently used first).  It cannot see the kernel's caches themselves: it
# checks what stat, ls and cat answer right after another client's change.

load ../lib/mount

teardown()
{
	rm -f "$BATS_TEST_TMPDIR/hold-invals"
	exec 8<&-
	fs_teardown
}

value_bytes()
{
	getfattr --only-values -n user.etcd.valueBytes "$MNT"
}

# put_values N SIZE: keys /v/k000.. with SIZE random (printable) bytes each,
# their values also in $BATS_TEST_TMPDIR/want/k000..
put_values()
{
	local i name

	mkdir -p "$BATS_TEST_TMPDIR/want"
	for ((i = 0; i < $1; i++)); do
		printf -v name 'k%03d' "$i"
		head -c "$2" /dev/urandom | base64 -w 0 | head -c "$2" \
			>"$BATS_TEST_TMPDIR/want/$name"
		kv_put "/v/$name" <"$BATS_TEST_TMPDIR/want/$name"
	done
}

@test "without a value budget every value is held, and said so" {
	fs_setup
	kv_put /a 1
	[ "$(value_bytes)" = all ]
}

@test "a bad value budget is refused before mounting" {
	fs_setup
	local d=$BATS_TEST_TMPDIR/other

	mkdir -p "$d"
	for bad in 12X -5 K 1.5M 99999999999999999999G; do
		run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,value_budget=$bad" "$d"
		[ "$status" -ne 0 ]
		[[ $output == *"bad value for 'value_budget'"* ]]
		run fs_is_mounted "$d"
		[ "$status" -ne 0 ]
	done
}

@test "the value budget: values evicted, read again right, the bytes held stay under it" {
	fs_setup
	fs_unmount
	# half listed at mount, half from the watch
	put_values 30 2048
	fs_mount value_budget=16K
	local i name budget=16384

	for ((i = 30; i < 60; i++)); do
		printf -v name 'k%03d' "$i"
		head -c 2048 /dev/urandom | base64 -w 0 | head -c 2048 \
			>"$BATS_TEST_TMPDIR/want/$name"
		kv_put "/v/$name" <"$BATS_TEST_TMPDIR/want/$name"
	done
	# at most one value over the budget: the one just set
	(($(value_bytes) <= budget + 2048))
	# every file reads as etcd has it, in order, twice
	for pass in 1 2; do
		for ((i = 0; i < 60; i++)); do
			printf -v name 'k%03d' "$i"
			cmp "$MNT/v/$name" "$BATS_TEST_TMPDIR/want/$name"
			[ "$(stat -c %s "$MNT/v/$name")" -eq 2048 ]
		done
		(($(value_bytes) <= budget + 2048))
	done
	(($(value_bytes) > 0))
	wait_mirror_equal
}

@test "an evicted value: append, truncate and an editor's rename keep its bytes" {
	fs_setup value_budget=8K
	local want=$BATS_TEST_TMPDIR/want

	put_values 20 1024
	# read them all: k000..k011 are evicted by the ones read after them
	for f in "$MNT"/v/k*; do cat "$f" >/dev/null; done
	(($(value_bytes) <= 8192 + 1024))

	# an append writes the old bytes and the new
	echo tail >>"$MNT/v/k001"
	{ cat "$want/k001"; echo tail; } >"$want/k001.new"
	kv_get /v/k001 | cmp - "$want/k001.new"

	# truncate(1) to a shorter size keeps the first bytes
	for f in "$MNT"/v/k01*; do cat "$f" >/dev/null; done
	truncate -s 100 "$MNT/v/k002"
	head -c 100 "$want/k002" | cmp - <(kv_get /v/k002)

	# an editor moves the file to its backup name, then writes it anew
	for f in "$MNT"/v/k01*; do cat "$f" >/dev/null; done
	mv "$MNT/v/k003" "$MNT/v/k003~"
	cmp "$MNT/v/k003~" "$want/k003"
	echo new >"$MNT/v/k003"
	rm "$MNT/v/k003~"
	kv_is /v/k003 $'new\n'

	# and a sed -i of an evicted file
	for f in "$MNT"/v/k01*; do cat "$f" >/dev/null; done
	sed -i '1s/^/x/' "$MNT/v/k004"
	{ printf x; cat "$want/k004"; } | cmp - <(kv_get /v/k004)
	wait_mirror_equal
}

@test "another client's change to an evicted value shows at once" {
	fs_setup value_budget=4K
	put_values 10 1024
	for f in "$MNT"/v/k*; do cat "$f" >/dev/null; done
	kv_put /v/k000 changed
	[ "$(cat "$MNT/v/k000")" = changed ]
	kv_del /v/k001 >/dev/null
	[ ! -e "$MNT/v/k001" ]
	run cat "$MNT/v/k001"
	[ "$status" -ne 0 ]
	[[ $output == *"No such file or directory"* ]]
	wait_mirror_equal
}

@test "long attribute and entry caches follow every change at once" {
	fs_setup
	kv_put /d/f abc
	# let the kernel cache the name, its attributes and its pages
	[ "$(stat -c %s "$MNT/d/f")" -eq 3 ]
	[ "$(cat "$MNT/d/f")" = abc ]
	run ls "$MNT/d"
	[ "$output" = f ]

	kv_put /d/f 0123456789
	[ "$(stat -c %s "$MNT/d/f")" -eq 10 ]
	[ "$(cat "$MNT/d/f")" = 0123456789 ]

	kv_put /d/g new
	run ls "$MNT/d"
	[ "$output" = "$(printf 'f\ng')" ]
	[ "$(stat -c %s "$MNT/d/g")" -eq 3 ]

	kv_del /d/f >/dev/null
	wait_for 2 test ! -e "$MNT/d/f"
	run stat "$MNT/d/f"
	[ "$status" -ne 0 ]

	# a name looked up while absent (a negative entry) appears
	run stat "$MNT/d/h"
	[ "$status" -ne 0 ]
	kv_put /d/h here
	[ "$(cat "$MNT/d/h")" = here ]

	# the mount's own write: another process sees the new size at once
	printf 'longer value\n' >"$MNT/d/g"
	[ "$(sh -c 'stat -c %s "$1"' sh "$MNT/d/g")" -eq 13 ]
	kv_is /d/g $'longer value\n'
}

root_rev()
{
	getfattr --absolute-names --only-values -n user.etcd.revision "$MNT"
}

# The mirror takes another client's change before the kernel is told to
# forget what it caches of it (the watch's thread sends the
# invalidations with the mirror's lock dropped): the root's
# user.etcd.revision, which scripts (and kv_put) wait for, must not show
# the change before then, or a stat right after reads the old size.  The
# invalidations are held ($ETCDFS_TEST_HOLD_INVALS, fs/live.c) once the
# mirror has the change.  The file is held open meanwhile: the kernel
# then keeps its name and inode (a drop of the machine's caches would
# otherwise leave it nothing to invalidate, and nothing to hold), and
# the change goes to a new inode, which the kernel reaches through that
# name only once told.
@test "user.etcd.revision shows a change only once the kernel was told" {
	local hold=$BATS_TEST_TMPDIR/hold-invals events before rev

	export ETCDFS_TEST_HOLD_INVALS=$hold
	fs_setup
	kv_put /d/f abc
	[ "$(stat -c %s "$MNT/d/f")" -eq 3 ]
	exec 8<"$MNT/d/f"
	before=$(root_rev)
	events=$(fs_stat watch_events)
	touch "$hold"
	FS_NO_CATCH_UP=1 kv_put /d/f 0123456789
	rev=$(kv_rev)
	# the mirror has it: the watch's thread waits to send the kernel
	# its invalidations
	fs_wait_applied "$events"
	echo "revision before $before, put at $rev, shown $(root_rev)"
	[ "$(root_rev)" -lt "$rev" ]
	[ "$(root_rev)" -eq "$before" ]

	rm "$hold"
	wait_for 10 eval '(($(root_rev) >= rev))'
	[ "$(stat -c %s "$MNT/d/f")" -eq 10 ]
	[ "$(cat "$MNT/d/f")" = 0123456789 ]
	exec 8<&-
}

# grpc_sent: the bytes etcd has sent to its clients so far.
grpc_sent()
{
	curl -s "$ETCD_ENDPOINT/metrics" |
		awk '/^etcd_network_client_grpc_sent_bytes_total / { print $2 }' |
		python3 -c 'import sys; print(int(float(sys.stdin.read() or 0)))'
}

@test "quorum: each open sees what etcd has, and the mirror serves it once caught up" {
	fs_setup quorum
	local before after

	kv_put /q 1
	[ "$(cat "$MNT/q")" = 1 ]
	# without waiting for the watch: the open reads linearizably
	for i in 2 3 4 5; do
		if fs_v2; then
			_kv2 put /q "$i" >/dev/null
		else
			etcdctl put /q "$i" >/dev/null
		fi
		[ "$(cat "$MNT/q")" = "$i" ]
	done

	head -c 196608 /dev/urandom | base64 -w 0 >"$BATS_TEST_TMPDIR/big"
	kv_put /big <"$BATS_TEST_TMPDIR/big"
	cmp "$MNT/big" "$BATS_TEST_TMPDIR/big"
	if fs_v2; then
		return 0	# v2 has no keys-only read: each open reads the value
	fi
	# 20 opens, each a linearizable read of the revision only: not
	# 20 x 256 KiB of the value
	before=$(grpc_sent)
	for i in $(seq 20); do
		cmp "$MNT/big" "$BATS_TEST_TMPDIR/big"
	done
	after=$(grpc_sent)
	echo "etcd sent $((after - before)) bytes for 20 opens" >&2
	((after - before < 262144))
}
