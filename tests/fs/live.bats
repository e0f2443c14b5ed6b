#!/usr/bin/env bats
#
# tests/fs/live.bats - the live view: other clients' changes replayed on
# the mountpoint as inotify events, the mirror kept equal to etcd through
# bursts, etcd restarts and compaction, and no second set of events for the
# mount's own writes.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash), watches
# the mountpoint with `inotifywait -m -r` and changes etcd with etcdctl (or
# its JSON gateway), then checks the events and compares a full read of the
# mount with a full read of etcd.  It cannot tell an event that comes late
# from one that never comes beyond the bounds used here (10 s, 30 s after
# an etcd restart), nor check the order of events of different files.

load ../lib/mount

setup()
{
	fs_setup
	INW_PID=
	EVENTS=$BATS_TEST_TMPDIR/events
}

teardown()
{
	# a test that froze the daemon must not leave it frozen
	[[ -z ${FS_PID:-} ]] || kill -CONT "$FS_PID" 2>/dev/null || true
	inw_stop
	fs_teardown
}

# Starts inotifywait -m -r on the mount, its events in $EVENTS, one a line
# ("CREATE /path", "CREATE,ISDIR /path"...), and waits until its watches
# are in place.
inw_start()
{
	: >"$EVENTS"
	inotifywait -m -r --format '%e %w%f' "$MNT" >"$EVENTS" \
		2>"$EVENTS.err" 3>&- &
	INW_PID=$!
	if ! wait_for 20 grep -q 'Watches established' "$EVENTS.err"; then
		echo "inotifywait did not establish its watches:" >&2
		cat "$EVENTS.err" >&2
		return 1
	fi
}

inw_stop()
{
	if [[ -n ${INW_PID:-} ]]; then
		kill "$INW_PID" 2>/dev/null
		wait "$INW_PID" 2>/dev/null || true
		INW_PID=
	fi
	return 0
}

# has_event EVENTS PATH: a line for PATH (relative to the mount) with
# exactly these events (as inotifywait prints them, e.g. CREATE,ISDIR).
has_event()
{
	grep -Fxq -- "$1 $MNT/$2" "$EVENTS"
}

# wait_event EVENTS PATH [SECS]
wait_event()
{
	if ! wait_for "${3:-10}" has_event "$1" "$2"; then
		echo "no '$1 $2' within ${3:-10} s; events:" >&2
		sed "s|$MNT|\$MNT|" "$EVENTS" | head -n 50 >&2
		return 1
	fi
}

# count_event EVENTS PATH: how many such lines.
count_event()
{
	grep -Fxc -- "$1 $MNT/$2" "$EVENTS" || true
}

# The mount's files as "KEY VALUE" lines, sorted; the key is the file's
# path under the mount with a leading slash (the mount has no prefix).
mount_dump()
{
	python3 - "$MNT" <<'EOF'
import os, sys
root = sys.argv[1]
out = []
for d, dirs, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        with open(p, "rb") as fh:
            v = fh.read()
        out.append(b"/" + os.path.relpath(p, root).encode() + b" " + v)
for line in sorted(out):
    sys.stdout.buffer.write(line + b"\n")
EOF
}

# Every key in etcd as "KEY VALUE" lines, sorted.
etcd_dump()
{
	local -

	set -o pipefail
	etcdctl get -w json --prefix "" | python3 -c '
import base64, json, sys
r = json.load(sys.stdin)
out = [base64.b64decode(kv["key"]) + b" " +
       base64.b64decode(kv.get("value", "")) for kv in r.get("kvs") or []]
for line in sorted(out):
    sys.stdout.buffer.write(line + b"\n")
'
}

_dumps_equal()
{
	local m e

	m=$(mount_dump) || return 1
	e=$(etcd_dump) || return 1
	[[ -n $e && $m == "$e" ]]
}

# Waits until a full read of the mount equals a full read of etcd.
wait_mirror_equal()
{
	if ! wait_for "${1:-10}" _dumps_equal; then
		echo "the mount differs from etcd after ${1:-10} s:" >&2
		diff <(mount_dump) <(etcd_dump) | head -n 40 >&2
		return 1
	fi
}

# puts_http PREFIX N: N puts of PREFIX0000.. with values v0000.., over one
# HTTP connection to etcd's JSON gateway.
puts_http()
{
	python3 - "$ETCD_ENDPOINT" "$1" "$2" <<'EOF'
import base64, http.client, json, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
prefix, n = sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
b64 = lambda s: base64.b64encode(s.encode()).decode()
for i in range(n):
    body = json.dumps({"key": b64("%s%04d" % (prefix, i)),
                       "value": b64("v%04d" % i)})
    c.request("POST", "/v3/kv/put", body,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit("put %d: HTTP %d" % (i, r.status))
EOF
}

@test "a remote put of a new key: CREATE and CLOSE_WRITE, then cat shows it" {
	kv_put /seed s
	fs_wait_value "$MNT/seed" s
	inw_start

	kv_put /newkey hello
	wait_event CREATE newkey
	wait_event CLOSE_WRITE,CLOSE newkey
	[ "$(cat "$MNT/newkey")" = hello ]
	has_event MODIFY newkey
	# CREATE comes before CLOSE_WRITE
	[ "$(grep -n -Fx "CREATE $MNT/newkey" "$EVENTS" | cut -d: -f1)" -lt \
	  "$(grep -n -Fx "CLOSE_WRITE,CLOSE $MNT/newkey" "$EVENTS" | cut -d: -f1)" ]
	inw_stop
}

@test "a remote put of an existing key: MODIFY and CLOSE_WRITE, then cat shows the new value" {
	kv_put /k old
	fs_wait_value "$MNT/k" old
	inw_start

	kv_put /k brand-new
	wait_event MODIFY k
	wait_event CLOSE_WRITE,CLOSE k
	[ "$(cat "$MNT/k")" = brand-new ]
	[ "$(count_event CREATE k)" -eq 0 ]
	[ "$(count_event DELETE k)" -eq 0 ]
	inw_stop
}

@test "a remote del: DELETE, and the file is gone" {
	kv_put /gone x
	kv_put /stay y
	fs_wait_value "$MNT/gone" x
	inw_start

	[ "$(etcdctl del /gone)" = 1 ]
	wait_event DELETE gone
	[ ! -e "$MNT/gone" ]
	run ls "$MNT"
	[ "$output" = stay ]
	[ "$(cat "$MNT/stay")" = y ]
	inw_stop
}

@test "a remote del --prefix of a subtree: DELETE per file, DELETE,ISDIR per directory" {
	kv_put /other 0
	kv_put /t/a 1
	kv_put /t/d1/b 2
	kv_put /t/d1/c 3
	fs_wait_value "$MNT/t/d1/c" 3
	inw_start

	[ "$(etcdctl del --prefix /t/)" = 3 ]
	wait_event DELETE t/a
	wait_event DELETE t/d1/b
	wait_event DELETE t/d1/c
	wait_event DELETE,ISDIR t/d1
	wait_event DELETE,ISDIR t
	[ ! -e "$MNT/t" ]
	run ls "$MNT"
	[ "$output" = other ]
	inw_stop
}

@test "a remote put deep in new directories: CREATE,ISDIR per directory, then CREATE of the file" {
	kv_put /seed s
	fs_wait_value "$MNT/seed" s
	inw_start

	kv_put /n1/n2/k deep
	wait_event CREATE,ISDIR n1
	# inotifywait -r watches a new directory only after it reports it:
	# what is made in it before that is not seen (as with mkdir -p).
	if wait_event CREATE,ISDIR n1/n2 && wait_event CREATE n1/n2/k; then
		wait_event CLOSE_WRITE,CLOSE n1/n2/k
	else
		echo "inotifywait watched a new directory too late" >&2
	fi
	[ "$(cat "$MNT/n1/n2/k")" = deep ]
	[ "$(count_event CREATE,ISDIR n1)" -eq 1 ]
	inw_stop
}

@test "a burst of 1000 remote puts: a CLOSE_WRITE per key, and the mount equals etcd" {
	local n
	# the directory exists before the watch: no race with inotifywait -r
	kv_put /burst/seed s
	fs_wait_value "$MNT/burst/seed" s
	inw_start

	puts_http /burst/k 1000
	count_closed()
	{
		n=$(grep "^CLOSE_WRITE,CLOSE $MNT/burst/k[0-9]\{4\}\$" \
			"$EVENTS" | sort -u | wc -l)
		((n == 1000))
	}
	if ! wait_for 30 count_closed; then
		echo "CLOSE_WRITE for $n distinct keys of 1000" >&2
		false
	fi
	wait_mirror_equal 10
	[ "$(mount_dump | wc -l)" -eq 1001 ]
	[ "$(count_event CREATE burst/k0999)" -eq 1 ]
	inw_stop
}

@test "no double echo: a write through the mount gives only the local events" {
	kv_put /seed s
	fs_wait_value "$MNT/seed" s
	inw_start

	printf x >"$MNT/mine"
	[ "$(kv_get /mine)" = x ]
	sleep 2
	# a remote change after ours: the watch delivers in revision order,
	# so once its events are here an echo of ours would be too
	kv_put /marker m
	wait_event CLOSE_WRITE,CLOSE marker
	sleep 0.5
	grep -F "$MNT/mine" "$EVENTS" >&2 || true
	[ "$(count_event CLOSE_WRITE,CLOSE mine)" -eq 1 ]
	[ "$(count_event CREATE mine)" -eq 1 ]
	[ "$(count_event DELETE mine)" -eq 0 ]
	[ "$(cat "$MNT/mine")" = x ]
	inw_stop
}

@test "the watch survives an etcd restart" {
	kv_put /before 1
	fs_wait_value "$MNT/before" 1
	inw_start

	etcd_stop_keep
	sleep 1
	etcd_start_again
	kv_put /after 2
	wait_event CREATE after 30
	wait_event CLOSE_WRITE,CLOSE after 10
	[ "$(cat "$MNT/after")" = 2 ]
	wait_mirror_equal 10
	# and it goes on following etcd
	kv_put /before 3
	wait_event MODIFY before
	fs_wait_value "$MNT/before" 3
	inw_stop
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
	etcdctl del /c/k0006 >/dev/null
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
	etcdctl del /small >/dev/null
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
