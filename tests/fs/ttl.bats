#!/usr/bin/env bats
#
# tests/fs/ttl.bats - user.etcd.ttl: a key's time to live set, read and
# detached with setfattr and getfattr
#
# On v3 a time to live is a lease granted by the mount and attached with
# one compare-and-swap; on v2 it is the key's own TTL, put with prevIndex.
# etcdctl (or /v2/keys) checks what etcd holds after each step.  The case
# of a lost answer mounts through tests/lib/tcp_proxy.py, which passes the
# put (v3: the lease's grant) to etcd and drops its answer.

load ../lib/mount

setup()
{
	fs_live_setup
}

teardown()
{
	fs_live_teardown
	proxy_stop
}

xattr()
{
	getfattr --absolute-names --only-values -n "user.etcd.$1" "$2"
}

# The seconds etcd says KEY has left: 0 without a time to live.
etcd_ttl()
{
	local id

	if fs_v2; then
		kv_meta "$1" ttl
		return
	fi
	id=$(kv_meta "$1" lease) || return 1
	if [[ $id == 0 ]]; then
		echo 0
		return
	fi
	"$ETCDCTL_BIN" lease timetolive "$(printf '%x' "$id")" |
		sed -n 's/.*remaining(\(-\?[0-9]*\)s).*/\1/p'
}

# The leases etcd holds, one id a line (v3).
etcd_leases()
{
	"$ETCDCTL_BIN" lease list | sed -n '2,$p'
}

@test "setfattr user.etcd.ttl gives the key a time to live in one revision" {
	local rev left
	kv_put /k v
	rev=$(kv_meta /k mod_revision)

	run getfattr --absolute-names -n user.etcd.ttl "$MNT/k"
	[ "$status" -ne 0 ]
	[[ $output == *"No such attribute"* ]]

	setfattr -n user.etcd.ttl -v 600 "$MNT/k"
	left=$(etcd_ttl /k)
	echo "etcd: $left s left"
	((left > 590 && left <= 600))
	# one new revision, the same value
	kv_is /k v
	[ "$(kv_meta /k mod_revision)" -eq $((rev + 1)) ]
	[ "$(kv_rev)" -eq $((rev + 1)) ]
	# the mount shows it at once
	left=$(xattr ttl "$MNT/k")
	((left > 590 && left <= 600))
	[ "$(xattr resourceVersion "$MNT/k")" = "$(kv_meta /k mod_revision)" ]
	[ "$(cat "$MNT/k")" = v ]
	if ! fs_v2; then
		[ "$(xattr lease "$MNT/k")" = "$(printf '%016x' "$(kv_meta /k lease)")" ]
		getfattr --absolute-names -d "$MNT/k" | grep -q '^user\.etcd\.ttl="'
	fi
}

@test "a key whose time to live runs out goes, with an inotify DELETE" {
	kv_put /gone v
	kv_put /stays w
	inw_start

	setfattr -n user.etcd.ttl -v 2 "$MNT/gone"
	wait_event DELETE gone 20
	[ ! -e "$MNT/gone" ]
	kv_absent /gone
	[ "$(cat "$MNT/stays")" = w ]
}

@test "a time to live detached with -v 0 or -x no longer runs out" {
	kv_put /a v
	kv_put /b w

	setfattr -n user.etcd.ttl -v 3 "$MNT/a"
	setfattr -n user.etcd.ttl -v 3 "$MNT/b"
	[ "$(etcd_ttl /a)" -gt 0 ]
	setfattr -n user.etcd.ttl -v 0 "$MNT/a"
	setfattr -x user.etcd.ttl "$MNT/b"
	[ "$(etcd_ttl /a)" = 0 ]
	[ "$(etcd_ttl /b)" = 0 ]
	run getfattr --absolute-names -n user.etcd.ttl "$MNT/a"
	[[ $output == *"No such attribute"* ]]
	fs_v2 || [ "$(xattr lease "$MNT/a")" = 0 ]
	sleep 5
	kv_is /a v
	kv_is /b w
	[ "$(cat "$MNT/a")" = v ]
	# nothing to remove any more
	run setfattr -x user.etcd.ttl "$MNT/b"
	[ "$status" -ne 0 ]
	[[ $output == *"No such attribute"* ]]
}

@test "a time to live set on a revision another client changed is ESTALE and changes nothing" {
	local r1 r2
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	fs_v2 || [ -z "$(etcd_leases)" ]

	kv_put /k two
	r2=$(kv_meta /k mod_revision)
	fs_wait_value "$MNT/k" two

	# a script that read the key at r1 pins it, as the read-modify-write
	# loop does, and its setfattr is based on it
	run bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		setfattr -n user.etcd.ttl -v 600 "$1"' _ "$MNT/k" "$r1"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 9 ]
	[[ $output == *"Stale file handle"* ]]
	kv_is /k two
	[ "$(kv_meta /k mod_revision)" = "$r2" ]
	[ "$(etcd_ttl /k)" = 0 ]
	# the lease granted for the failed put was revoked
	fs_v2 || [ -z "$(etcd_leases)" ]
}

@test "a bad time to live is EINVAL and changes nothing" {
	local rev v
	kv_put /k v
	rev=$(kv_meta /k mod_revision)

	for v in -1 abc 1.5 ' 5' 9000000001 99999999999999999999 ''; do
		run setfattr -n user.etcd.ttl -v "$v" "$MNT/k"
		echo "'$v': $output"
		[ "$status" -ne 0 ]
		[[ $output == *"Invalid argument"* ]]
	done
	[ "$(kv_meta /k mod_revision)" = "$rev" ]
	[ "$(etcd_ttl /k)" = 0 ]
	fs_v2 || [ -z "$(etcd_leases)" ]
	# on a directory
	mkdir "$MNT/d"
	run setfattr -n user.etcd.ttl -v 5 "$MNT/d"
	[ "$status" -ne 0 ]
}

@test "an edit through the mount keeps the key's lease (v2: makes it permanent)" {
	local lease
	kv_put /k one
	setfattr -n user.etcd.ttl -v 600 "$MNT/k"
	lease=$(kv_meta /k lease)

	echo two | cat >"$MNT/k"
	kv_is /k $'two\n'
	sed -i s/two/three/ "$MNT/k"
	kv_is /k $'three\n'
	if fs_v2; then
		# documented: a v2 write through the mount makes the key
		# permanent
		[ "$(etcd_ttl /k)" = 0 ]
	else
		[ "$(kv_meta /k lease)" = "$lease" ]
		[ "$(etcd_ttl /k)" -gt 590 ]
		[ "$(xattr lease "$MNT/k")" = "$(printf '%016x' "$lease")" ]
	fi
}

@test "user.etcd.ttl on a read-only mount is EROFS" {
	kv_put /k v
	fs_unmount
	fs_mount ro
	run setfattr -n user.etcd.ttl -v 60 "$MNT/k"
	[ "$status" -ne 0 ]
	[[ $output == *"Read-only file system"* ]]
	run setfattr -x user.etcd.ttl "$MNT/k"
	[[ $output == *"Read-only file system"* ]]
	[ "$(etcd_ttl /k)" = 0 ]
}

# The hex id etcdctl prints of KEY's lease (v3): 16 digits, as its %016x
lease_hex()
{
	printf '%016x\n' "$(kv_meta "$1" lease)"
}

@test "a new time to live, -v 0 or -x revokes the lease the mount granted before" {
	local l1 l2 left
	kv_put /k v
	setfattr -n user.etcd.ttl -v 600 "$MNT/k"
	fs_v2 || l1=$(lease_hex /k)
	setfattr -n user.etcd.ttl -v 300 "$MNT/k"
	left=$(etcd_ttl /k)
	((left > 290 && left <= 300))
	if ! fs_v2; then
		l2=$(lease_hex /k)
		[ "$l2" != "$l1" ]
		# the first lease held nothing but this key: it is gone
		[ "$(etcd_leases)" = "$l2" ]
		run "$ETCDCTL_BIN" lease timetolive "$l1"
		[[ $output == *"already expired"* ]]
	fi
	setfattr -n user.etcd.ttl -v 0 "$MNT/k"
	[ "$(etcd_ttl /k)" = 0 ]
	fs_v2 || [ -z "$(etcd_leases)" ]
	setfattr -n user.etcd.ttl -v 600 "$MNT/k"
	setfattr -x user.etcd.ttl "$MNT/k"
	[ "$(etcd_ttl /k)" = 0 ]
	fs_v2 || [ -z "$(etcd_leases)" ]
	kv_is /k v
}

@test "a lease another client attached is left running when the mount moves the key off it" {
	local lo lp
	if fs_v2; then
		# v2 has no leases: a key's TTL is its own
		kv_put /o v
		setfattr -n user.etcd.ttl -v 600 "$MNT/o"
		setfattr -n user.etcd.ttl -v 0 "$MNT/o"
		[ "$(etcd_ttl /o)" = 0 ]
		return
	fi
	# one lease holding two keys, one holding only the key the mount
	# changes: neither is the mount's to revoke
	lo=$("$ETCDCTL_BIN" lease grant 600 | sed -n 's/^lease \([0-9a-f]*\) granted.*/\1/p')
	lp=$("$ETCDCTL_BIN" lease grant 600 | sed -n 's/^lease \([0-9a-f]*\) granted.*/\1/p')
	[ -n "$lo" ] && [ -n "$lp" ]
	"$ETCDCTL_BIN" put --lease="$lo" /o v >/dev/null
	"$ETCDCTL_BIN" put --lease="$lo" /o2 w >/dev/null
	"$ETCDCTL_BIN" put --lease="$lp" /p x >/dev/null
	fs_wait_value "$MNT/p" x
	fs_wait_value "$MNT/o" v

	setfattr -n user.etcd.ttl -v 300 "$MNT/o"
	setfattr -n user.etcd.ttl -v 0 "$MNT/p"
	[ "$(etcd_ttl /p)" = 0 ]
	"$ETCDCTL_BIN" lease timetolive --keys "$lo" | grep -q '/o2'
	run "$ETCDCTL_BIN" lease timetolive "$lp"
	[[ $output != *"already expired"* ]]
	kv_is /o2 w
	[ "$(lease_hex /o2)" = "$lo" ]
	# then the mount's own lease goes when the key moves off it
	setfattr -x user.etcd.ttl "$MNT/o"
	[ "$(etcd_leases | sort)" = "$(printf '%s\n' "$lo" "$lp" | sort)" ]
}

@test "a refused time to live does not refuse the same process's next unlink" {
	local r1
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	fs_wait_value "$MNT/k" two

	# fsetxattr is not retried by the kernel on ESTALE, so the refused
	# set's retry guard is still up when the unlink comes; the unlink is
	# pinned at a revision another client then replaces, so it must be
	# ESTALE, and the key must stay
	run fs_try '
		p = args[0]
		os.setxattr(p, "user.etcd.pin", args[1].encode())
		fd = os.open(p, os.O_RDONLY)
		try:
			os.setxattr(fd, "user.etcd.ttl", b"600")
			raise SystemExit("the set on a pinned old revision worked")
		except OSError as e:
			if e.errno != errno.ESTALE:
				raise
		os.close(fd)
		rev = os.getxattr(p, "user.etcd.resourceVersion")
		os.setxattr(p, "user.etcd.pin", rev)
		kv_put(b"/k", b"three")
		while read_all(p) != b"three":
			time.sleep(0.01)
		os.unlink(p)' "$MNT/k" "$r1"
	echo "$output"
	[ "$output" = ESTALE ]
	kv_is /k three
	[ "$(etcd_ttl /k)" = 0 ]
}

@test "a time to live whose answer is lost is settled: one put, setfattr succeeds" {
	local rev pid grants st=0
	kv_put /k v
	# the mount talks to etcd through a proxy that loses the answer of
	# the set's first request: on v2 the put, on v3 the lease's grant,
	# which the mount sends again with the lease id it chose (an idle
	# mount sends nothing else: the stats below tell the grant was lost)
	proxy_mount request_timeout=5s
	fs_wait_value "$MNT/k" v
	rev=$(kv_meta /k mod_revision)
	if fs_v2; then
		proxy_tell "lose PUT" armed
	else
		etcd_leases >"$BATS_TEST_TMPDIR/before"
		grants=$(fs_stat etcd_requests_lease)
		proxy_tell lose armed
	fi
	setfattr -n user.etcd.ttl -v 600 "$MNT/k" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	proxy_wait answered
	proxy_tell cut cut
	wait "$pid" || st=$?
	cat "$BATS_TEST_TMPDIR/err"
	[ "$st" -eq 0 ]
	kv_is /k v
	[ "$(kv_meta /k mod_revision)" -eq $((rev + 1)) ]
	(($(etcd_ttl /k) > 590))
	[ "$(xattr resourceVersion "$MNT/k")" = "$(kv_meta /k mod_revision)" ]
	fs_v2 && return
	# the grant sent twice, and one lease more: the key's
	[ "$(fs_stat etcd_requests_lease)" -eq $((grants + 2)) ]
	[ "$(etcd_leases | grep -vxFf "$BATS_TEST_TMPDIR/before")" = \
		"$(printf '%016x' "$(kv_meta /k lease)")" ]
}
