#!/usr/bin/env bats
#
# tests/fs/history.bats - user.etcd.history: the revisions of a key etcd
# still holds, checked against etcdctl get --rev
#
# v3 only (tests/meson.build registers it for v3 alone; run by hand on v2
# it fails in setup): on v2, which keeps no history of a key, the attribute
# is ENOTSUP (tests/fs/v2.bats).

load ../lib/mount

setup()
{
	fs_require_api v3
	fs_setup
}

teardown()
{
	fs_teardown
}

history()
{
	getfattr --absolute-names --only-values -n user.etcd.history "$1"
}

# The first field of each line of the history of FILE, one a line.
history_revs()
{
	history "$1" | awk '{ print $1 }'
}

# etcdctl's view of KEY at revision REV: "MOD VERSION", or nothing.
etcd_at()
{
	"$ETCDCTL_BIN" get -w json --rev="$2" -- "$1" |
		"$FS_PYTHON" -c 'import json, sys
kvs = json.load(sys.stdin).get("kvs", [])
if kvs:
    print(kvs[0]["mod_revision"], kvs[0].get("version", 0))'
}

@test "user.etcd.history lists every revision of the key, as etcdctl sees them" {
	local -a revs=()
	local r line mod ver when
	kv_put /k one
	revs+=("$(kv_meta /k mod_revision)")
	kv_put /other x
	kv_put /k two
	revs+=("$(kv_meta /k mod_revision)")
	printf three >"$MNT/k"
	revs+=("$(kv_meta /k mod_revision)")
	kv_put /k four
	revs+=("$(kv_meta /k mod_revision)")
	fs_wait_value "$MNT/k" four

	history "$MNT/k"
	[ "$(history_revs "$MNT/k" | tr '\n' ' ')" = "${revs[*]} " ]
	while read -r mod ver when; do
		[ "$(etcd_at /k "$mod")" = "$mod $ver" ]
		# the mount saw each of these come
		[[ $when =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z$ ]]
	done < <(history "$MNT/k")
	[ "$(history "$MNT/k" | awk '{ print $2 }' | tr '\n' ' ')" = "1 2 3 4 " ]
	# the value at each revision is the one written then
	[ "$(etcdctl get --print-value-only --rev="${revs[0]}" /k)" = one ]
	[ "$(etcdctl get --print-value-only --rev="${revs[2]}" /k)" = three ]
}

@test "user.etcd.history after a remount: '-' for what the mount did not see" {
	local first
	kv_put /k one
	kv_put /k two
	fs_unmount
	fs_mount
	kv_put /k three
	fs_wait_value "$MNT/k" three

	history "$MNT/k"
	[ "$(history "$MNT/k" | wc -l)" -eq 3 ]
	first=$(history "$MNT/k" | head -n 2 | awk '{ print $3 }' | sort -u)
	[ "$first" = - ]
	history "$MNT/k" | tail -n 1 | grep -Eq ' [0-9]{4}-[0-9]{2}-'
}

@test "user.etcd.history after a compaction lists only what etcd still holds" {
	local r1 r2 r3 r4 r5
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	r2=$(kv_meta /k mod_revision)
	kv_put /other x
	kv_put /k three
	r3=$(kv_meta /k mod_revision)
	kv_put /between y
	kv_put /k four
	r4=$(kv_meta /k mod_revision)
	kv_put /k five
	r5=$(kv_meta /k mod_revision)
	fs_wait_value "$MNT/k" five

	# compacted at r3: r3 is still held (readable at r3), r2 not
	etcdctl compact "$r3" >/dev/null
	run etcdctl get --rev="$r2" /k
	[ "$status" -ne 0 ]
	history "$MNT/k"
	[ "$(history_revs "$MNT/k" | tr '\n' ' ')" = "$r3 $r4 $r5 " ]
	# compacted between r3 and r4: r3 is readable at the compacted
	# revision only, not at its own, so it is not listed
	etcdctl compact "$((r4 - 1))" >/dev/null
	run etcdctl get --rev="$r3" /k
	[ "$status" -ne 0 ]
	[ "$(history_revs "$MNT/k" | tr '\n' ' ')" = "$r4 $r5 " ]
	[ "$(etcd_at /k "$r4")" = "$r4 4" ]
	# compacted past the last write: the current revision stays
	etcdctl put /late z >/dev/null
	etcdctl compact "$(kv_rev)" >/dev/null
	[ "$(history_revs "$MNT/k")" = "$r5" ]
	[ "$(history "$MNT/k" | awk '{ print $2 }')" = 5 ]
	[ -n "$r1" ]
}

@test "user.etcd.history of a key made again starts at its new life" {
	local r
	kv_put /k one
	kv_put /k two
	kv_del /k >/dev/null
	kv_put /k again
	r=$(kv_meta /k mod_revision)
	fs_wait_value "$MNT/k" again

	[ "$(history "$MNT/k")" = "$r 1 $(history "$MNT/k" | awk '{ print $3 }')" ]
	[ "$(history "$MNT/k" | wc -l)" -eq 1 ]
	mkdir "$MNT/d"
	run history "$MNT/d"
	[ "$status" -ne 0 ]
	[[ $output == *"No such attribute"* ]]
}

@test "a put between getxattr's size probe and its read gives no ERANGE" {
	kv_put /k one
	kv_put /k two
	# getfattr's protocol: ask the size (a NULL buffer), then read with a
	# buffer of that size; another client's put comes in between
	run fs_try '
		import ctypes
		libc = ctypes.CDLL(None, use_errno=True)
		p = args[0].encode()
		name = b"user.etcd.history"
		n = libc.getxattr(p, name, None, 0)
		if n <= 0:
			raise OSError(ctypes.get_errno(), "size probe")
		kv_put(b"/k", b"three")
		buf = ctypes.create_string_buffer(n)
		got = libc.getxattr(p, name, buf, n)
		if got < 0:
			raise OSError(ctypes.get_errno(), "read")
		lines = buf.raw[:got].decode().splitlines()
		if got != n or len(lines) != 2:
			raise SystemExit("%d bytes of %d: %r" % (got, n, lines))
		# the next read asks etcd again
		if len(os.getxattr(args[0], name).decode().splitlines()) != 3:
			raise SystemExit("the third revision is not listed")' "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
}
