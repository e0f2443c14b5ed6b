#!/usr/bin/env bats
#
# tests/fs/v2.bats - what only etcd's v2 keys API has: directory nodes,
# keys with a TTL, and a watch history of 1,000 events
#
# Runs only with ETCDFS_API=v2 (tests/meson.build registers it for v2
# alone; run by hand on v3 it fails in setup).  Each test starts its own
# etcd with --enable-v2=true and a mount with -o api=v2
# (tests/lib/mount.bash), changes etcd with etcdctl's v2 commands or curl
# on /v2/keys, and checks the mount, inotify events and what etcd holds.
# It cannot tell an event that comes late from one that never comes
# beyond the bounds used here, nor test v2 auth.  Not tested because not
# built: an empty directory node made by another client (or left from an
# earlier mount) is not shown; the mirror holds keys, and a directory
# only while a key is below it or this mount made it.

load ../lib/mount

setup()
{
	fs_require_api v2
	fs_live_setup
}

teardown()
{
	fs_live_teardown
	proxy_stop
}

# v2_node KEY: the JSON etcd's v2 API answers for a GET of KEY (quorum).
v2_node()
{
	curl -s --max-time 10 "$ETCD_ENDPOINT/v2/keys$1?quorum=true"
}

# v2_is_dir KEY: succeeds if KEY is a directory node in etcd.
v2_is_dir()
{
	v2_node "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
sys.exit(0 if r.get("node", {}).get("dir") else 1)'
}

# v2_is_absent KEY: succeeds if etcd answers that KEY does not exist.
v2_is_absent()
{
	v2_node "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
sys.exit(0 if r.get("errorCode") == 100 else 1)'
}

@test "mkdir and rmdir through the mount make and remove v2 directory nodes" {
	local rev
	kv_put /seed s
	rev=$(kv_rev)

	mkdir "$MNT/d"
	v2_is_dir /d
	run etcdctl ls --sort /
	echo "$output"
	[ "$output" = "$(printf '/d\n/seed')" ]
	mkdir -p "$MNT/p/q/r"
	v2_is_dir /p/q/r
	[ "$(etcdctl ls /p/q)" = /p/q/r ]
	[ "$(kv_history "$rev")" = "$(printf 'MKDIR /d\nMKDIR /p\nMKDIR /p/q\nMKDIR /p/q/r')" ]

	# a non-empty directory stays
	printf x >"$MNT/p/q/f"
	run fs_try 'os.rmdir(args[0])' "$MNT/p/q"
	echo "$output"
	[ "$output" = ENOTEMPTY ]
	v2_is_dir /p/q
	kv_is /p/q/f x

	rev=$(kv_rev)
	rmdir "$MNT/d"
	v2_is_absent /d
	[ ! -e "$MNT/d" ]
	rmdir "$MNT/p/q/r"
	v2_is_absent /p/q/r
	v2_is_dir /p/q
	[ "$(kv_history "$rev")" = "$(printf 'RMDIR /d\nRMDIR /p/q/r')" ]
	[ "$(etcdctl ls --sort /)" = "$(printf '/p\n/seed')" ]
}

@test "keys with a TTL expire: DELETE, and the file is gone" {
	kv_put /stay y
	kv_put /ttl/seed s
	fs_wait_value "$MNT/ttl/seed" s
	inw_start

	kv_put --ttl 2 /short v
	kv_put --ttl 2 /ttl/inner w
	[ "$(cat "$MNT/short")" = v ]
	[ "$(cat "$MNT/ttl/inner")" = w ]
	wait_event CREATE short
	wait_event CREATE ttl/inner

	# etcd expires them within a second or so of their TTL
	wait_event DELETE short 10
	wait_event DELETE ttl/inner 10
	v2_is_absent /short
	v2_is_absent /ttl/inner
	[ ! -e "$MNT/short" ]
	[ ! -e "$MNT/ttl/inner" ]
	[ "$(ls "$MNT")" = "$(printf 'stay\nttl')" ]
	[ "$(ls "$MNT/ttl")" = seed ]
	[ "$(count_event DELETE stay)" -eq 0 ]
	wait_mirror_equal 10
	inw_stop
}

@test "a watch more than 1000 events behind: the mount lists again, with events" {
	local i
	kv_put /keep k
	kv_put /gone g
	kv_put /mod/k0001 old
	fs_wait_value "$MNT/mod/k0001" old
	inw_start

	# Nothing may touch the mount while its daemon is stopped.  etcd keeps
	# the last 1000 events: 1200 writes clear the index the watch waits
	# on.
	kill -STOP "$FS_PID"
	python3 - "$ETCD_ENDPOINT" <<'EOF'
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
def req(method, key, body=None):
    h = {"Content-Type": "application/x-www-form-urlencoded"}
    c.request(method, "/v2/keys" + key, body, h)
    r = c.getresponse()
    r.read()
    if r.status not in (200, 201):
        sys.exit("%s %s: HTTP %d" % (method, key, r.status))
for i in range(1200):
    req("PUT", "/mod/k%04d" % (i % 10),
        urllib.parse.urlencode({"value": "v%04d" % i}))
req("DELETE", "/gone")
req("PUT", "/fresh/new", "value=hello")
EOF
	[ "$(($(kv_rev) - $(kv_meta /keep mod_revision)))" -gt 1000 ]
	kill -CONT "$FS_PID"

	wait_event DELETE gone 30
	# the watch found its index cleared, and listed again
	grep -q 'watch: the revision is compacted' "$FS_LOG"
	wait_event CREATE,ISDIR fresh
	wait_mirror_equal 10
	[ ! -e "$MNT/gone" ]
	[ "$(cat "$MNT/fresh/new")" = hello ]
	[ "$(cat "$MNT/mod/k0001")" = v1191 ]
	[ "$(cat "$MNT/mod/k0009")" = v1199 ]
	[ "$(cat "$MNT/keep")" = k ]
	wait_event CLOSE_WRITE,CLOSE mod/k0001
	wait_event CREATE mod/k0009
	[ "$(count_event DELETE keep)" -eq 0 ]

	# and the watch goes on from the new listing
	kv_put /after x
	wait_event CREATE after
	fs_wait_value "$MNT/after" x
	inw_stop
}

@test "a relist while a write of the mount's is in flight echoes nothing of that write" {
	local pid relists st=0 hold=$BATS_TEST_TMPDIR/hold-watch

	kv_put /f a
	# the mount's put of f reaches etcd, and its answer is held until
	# the proxy cuts the connection: the write is in flight meanwhile
	ETCDFS_TEST_HOLD_WATCH=$hold proxy_mount request_timeout=5s
	fs_wait_value "$MNT/f" a
	inw_start
	relists=$(fs_stat watch_relists)
	# the watch holds (fs/live.c) on another client's change, so that
	# 1,100 more clear the index it waits on: it lists everything again,
	# and does not see the event of the mount's own put first
	touch "$hold"
	kv_put /marker0 m
	proxy_tell "lose PUT" armed
	printf b >"$MNT/f" &
	pid=$!
	proxy_wait answered
	kv_is /f b
	puts_http /other 1100
	rm "$hold"
	wait_for 30 eval '(($(fs_stat watch_relists) > relists))'
	# time for that listing to be read and compared with the mirror
	# while the write is still in flight (its settling, once the proxy
	# cuts the connection, would otherwise win the race)
	sleep 2
	proxy_tell cut cut
	wait "$pid" || st=$?
	[ "$st" -eq 0 ]
	[ "$(cat "$MNT/f")" = b ]
	# a change after it: once its events are here, an echo of the
	# mount's write would be too
	kv_put /marker m
	wait_event CLOSE_WRITE,CLOSE marker 30
	sleep 0.5
	grep -F "$MNT/f" "$EVENTS" >&2 || true
	[ "$(count_event CLOSE_WRITE,CLOSE f)" -eq 1 ]
	kv_is /f b
	wait_mirror_equal 10
	inw_stop
}

@test "user.etcd.history is ENOTSUP: v2 keeps no history of a key" {
	kv_put /k one
	kv_put /k two
	fs_wait_value "$MNT/k" two
	run getfattr --absolute-names --only-values -n user.etcd.history "$MNT/k"
	[ "$status" -ne 0 ]
	[[ $output == *"Operation not supported"* ]]
}

@test "-o revision= is refused on v2, with a message" {
	local past=$BATS_TEST_TMPDIR/past
	mkdir -p "$past"
	run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,api=v2,revision=1" "$past"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"revision=1 needs etcd's v3 API: v2 keeps no past revisions"* ]]
	! fs_is_mounted "$past" || false
}
