#!/usr/bin/env bats
#
# tests/fs/compaction.bats - etcd v3 compaction under a live mount
#
# A watch that resumes from a revision etcd compacted away makes the mount
# list again and report the differences as inotify events.  Compaction is
# etcd v3's alone: tests/meson.build runs this file on v3 only (run by hand
# with ETCDFS_API=v2 it fails in setup); v2's equivalent, a watch that
# falls more than 1,000 events behind, is in v2.bats.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash), watches
# the mountpoint with `inotifywait -m -r`, then checks the events and
# compares a full read of the mount with a full read of etcd.  It cannot
# tell an event that comes late from one that never comes beyond the
# bounds used here.

load ../lib/mount

setup()
{
	fs_require_api v3
	fs_live_setup
}

teardown()
{
	fs_live_teardown
}

@test "compaction and an etcd restart: the mirror equals etcd, and events go on" {
	local rev
	puts_http /c/k 20
	wait_mirror_equal 10
	rev=$(kv_rev)
	etcdctl compact "$rev" >/dev/null
	etcd_stop_keep
	etcd_start_again
	kv_put /c/k0005 changed
	kv_del /c/k0006 >/dev/null
	wait_mirror_equal 30
	[ "$(cat "$MNT/c/k0005")" = changed ]
	[ ! -e "$MNT/c/k0006" ]

	inw_start
	kv_put /c/new fresh
	wait_event CREATE c/new
	wait_event CLOSE_WRITE,CLOSE c/new
	[ "$(cat "$MNT/c/new")" = fresh ]
	wait_mirror_equal 10
	inw_stop
}

@test "a frozen mount whose watch resumes from a compacted revision: the mirror equals etcd, with events" {
	kv_put /small 1
	kv_put /keep k
	fs_wait_value "$MNT/small" 1
	inw_start

	# While the daemon is stopped, 40 MB of puts fill the watch's socket
	# buffers and etcd holds the rest of the events.  Nothing may touch
	# the mount meanwhile.
	kill -STOP "$FS_PID"
	python3 - "$ETCD_ENDPOINT" <<'EOF'
import base64, http.client, json, os, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
b64 = lambda b: base64.b64encode(b).decode()
for i in range(40):
    body = json.dumps({"key": b64(b"/big"),
                       "value": b64(os.urandom(1000000))})
    c.request("POST", "/v3/kv/put", body,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit("put %d: HTTP %d" % (i, r.status))
EOF
	kv_put /small 2
	kv_del /small >/dev/null
	kv_put /late 3
	etcdctl compact "$(kv_rev)" >/dev/null
	# the events etcd still holds die with it: the watch must resume from
	# a revision that is compacted away
	etcd_stop_keep
	etcd_start_again
	kill -CONT "$FS_PID"

	wait_event DELETE small 30
	wait_event CREATE late
	wait_event CLOSE_WRITE,CLOSE late
	wait_mirror_equal 10
	[ ! -e "$MNT/small" ]
	[ "$(cat "$MNT/late")" = 3 ]
	cmp "$MNT/big" <(kv_get /big)

	kv_put /after-compaction x
	wait_event CREATE after-compaction
	fs_wait_value "$MNT/after-compaction" x
	inw_stop
}
