#!/usr/bin/env bats
#
# tests/fs/daemon.bats - the daemon and its mount: a daemon killed while
# it replays other clients' changes never leaves its mount hanging, and
# nothing is replayed onto whatever the mountpoint is when it is not the
# mount any more (the directory underneath, after a lazy unmount, or
# another mount over it).
#
# Other clients write all the time (two writers over HTTP: many small
# keys that come, change and go in a few directories, and fewer large
# values), so that the echo (fs/echo.c) is replaying changes when the
# daemon is killed or the mount is detached.  Every access to a mount
# whose daemon may be dead runs under `timeout -s KILL`, so a hang fails
# the test instead of hanging it.  It cannot prove that no kill ever
# hangs the mount, only that none of these did.

load ../lib/mount
load ../lib/tier

setup()
{
	fs_setup
	WRITERS=()
	KILLED=
	KILL_NO=
	KILLER_PROC=
	OVER_PID=
	INW_PID=
	HELD=()
}

teardown()
{
	local p

	rm -f "$BATS_TEST_TMPDIR/hold-invals"
	# the descriptors that keep a lazily unmounted mount alive
	for p in "${HELD[@]}"; do
		exec {p}<&-
	done
	inw_stop
	if [[ -n $KILLER_PROC ]]; then
		kill "$KILLER_PROC" 2>/dev/null || true
		wait "$KILLER_PROC" 2>/dev/null || true
	fi
	for p in "${WRITERS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	_unhang
	# a mount over ours goes first, or ours cannot be unmounted
	if [[ -n $OVER_PID ]]; then
		timeout -s KILL 20 fusermount3 -u "$MNT" ||
			timeout -s KILL 20 fusermount3 -u -z "$MNT" || true
		wait_for 10 _tasks_gone "$OVER_PID" || kill -KILL "$OVER_PID"
		wait "$OVER_PID" 2>/dev/null || true
	fi
	fs_teardown
}

# The writers: python3 -c "$WRITER_PY" ENDPOINT API PREFIX NKEYS SIZE
# BATCH THREADS COUNTFILE puts keys PREFIX<d>/k<n> (NKEYS of them, in 5
# directories) with values of SIZE bytes, and deletes a quarter of the
# time, from THREADS connections, until killed; on v3 BATCH changes go in
# one transaction (etcd syncs its disk once per write: one change at a
# time would leave the echo idle most of the time).  It writes how many
# changes it made to COUNTFILE five times a second.
WRITER_PY="$FS_PUT_PY
import os, threading, time


def request(c, method, path, body, headers):
    c.request(method, path, body, headers)
    r = c.getresponse()
    r.read()
    if r.status not in (200, 201, 404):
        raise RuntimeError('%s %s: HTTP %d' % (method, path, r.status))


def batch(c, api, ops):
    \"\"\"Puts (key, value) and deletes (key, None): on v3 one txn.\"\"\"
    if api == 'v2':
        for key, value in ops:
            path = '/v2/keys' + urllib.parse.quote(key)
            if value is None:
                request(c, 'DELETE', path, None, {})
            else:
                request(c, 'PUT', path,
                        urllib.parse.urlencode({'value': value}),
                        {'Content-Type':
                         'application/x-www-form-urlencoded'})
        return
    b64 = lambda s: base64.b64encode(s.encode()).decode()
    txn = [{'request_delete_range': {'key': b64(k)}} if v is None else
           {'request_put': {'key': b64(k), 'value': b64(v)}}
           for k, v in ops]
    request(c, 'POST', '/v3/kv/txn', json.dumps({'success': txn}),
            {'Content-Type': 'application/json'})


u = urllib.parse.urlparse(sys.argv[1])
api, prefix = sys.argv[2], sys.argv[3]
nkeys, size, nbatch = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
nthreads, count = int(sys.argv[7]), sys.argv[8]
ops = [0] * nthreads


def work(t):
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        i = t * nkeys // nthreads
        while True:
            b = []
            for j in range(nbatch):
                key = '%s%d/%s%d' % (prefix, i % 5, 'k' * (t + 1),
                                     i % nkeys)
                b.append((key, None if (i // 3) % 4 == 3 else
                          ('%08d' % i) * (size // 8)))
                i += 1
            batch(c, api, b)
            ops[t] += len(b)
    except Exception as e:
        print('writer:', e, file=sys.stderr)
        os._exit(1)


for t in range(nthreads):
    threading.Thread(target=work, args=(t,), daemon=True).start()
while True:
    time.sleep(0.2)
    with open(count + '.tmp', 'w') as f:
        f.write('%d\\n' % sum(ops))
    os.replace(count + '.tmp', count)
"

# Two other clients: many small keys that come, change and go, and a few
# large values (each echoed as several FUSE writes).
writers_start()
{
	python3 -c "$WRITER_PY" "$ETCD_ENDPOINT" "$FS_API" /w/small 300 16 \
		50 2 "$BATS_TEST_TMPDIR/count.small" 3>&- &
	WRITERS+=($!)
	python3 -c "$WRITER_PY" "$ETCD_ENDPOINT" "$FS_API" /w/large 10 \
		100000 1 2 "$BATS_TEST_TMPDIR/count.large" 3>&- &
	WRITERS+=($!)
}

# How many ops the writers did so far; fails if one of them died.
writers_ops()
{
	local p n=0 f

	for p in "${WRITERS[@]}"; do
		kill -0 "$p" || { echo "writer $p died" >&2; return 1; }
	done
	for f in "$BATS_TEST_TMPDIR"/count.*; do
		[[ -f $f ]] && n=$((n + $(cat "$f")))
	done
	echo "$n"
}

# python3 -c "$KILLER_PY": for each line "PID MNT" it reads, SIGKILLs PID
# at a moment when it or a process it started has a file under MNT open
# (the echo replaying a change), or after 2 s if that never happens (a
# fresh mount takes a moment to start replaying), and answers "open" or
# "late".  It reads /proc only, never the mount.  One process for all
# the kills: starting Python for each would take longer than the rest.
KILLER_PY='
import os, signal, sys, time


def pids(pid):
    out = [pid]
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def has_open(p, mnt):
    try:
        fds = os.listdir("/proc/%d/fd" % p)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (p, fd)).startswith(mnt):
                return True
        except OSError:
            pass
    return False


for line in sys.stdin:
    pid, mnt = line.rstrip("\n").split(" ", 1)
    pid, mnt = int(pid), mnt + "/"
    end = time.monotonic() + 2
    what = "late"
    watched = pids(pid)
    while time.monotonic() < end:
        if any(has_open(p, mnt) for p in watched):
            what = "open"
            break
        if len(watched) == 1:
            watched = pids(pid)
    os.kill(pid, signal.SIGKILL)
    print(what, flush=True)
'

# killer_start, then kill_busy PID: kills PID as KILLER_PY does, and adds
# what it said to $BATS_TEST_TMPDIR/kills.
killer_start()
{
	coproc KILLER { exec python3 -c "$KILLER_PY" 3>&-; }
	KILLER_PROC=$KILLER_PID
}

kill_busy()
{
	local what

	echo "$1 $MNT" >&"${KILLER[1]}"
	if ! read -r -t 30 what <&"${KILLER[0]}"; then
		echo "no answer from the killer about $1" >&2
		kill -KILL "$1"
		return 1
	fi
	echo "$what" >>"$BATS_TEST_TMPDIR/kills"
}

# _tasks_gone PID: every thread of PID has exited (a zombie waiting to be
# reaped counts as gone; a zombie leader with a live thread does not).
_tasks_gone()
{
	local t s

	for t in /proc/"$1"/task/*/stat; do
		s=$(sed 's/.*) //' "$t" 2>/dev/null | cut -d' ' -f1)
		[[ -z $s || $s == Z || $s == X ]] || return 1
	done
	return 0
}

# _dump_tasks PID: the state and wait channel of each thread of PID
_dump_tasks()
{
	local t

	for t in /proc/"$1"/task/*; do
		echo "thread ${t##*/}: $(sed 's/.*) //' "$t/stat" 2>/dev/null |
			cut -d' ' -f1) $(cat "$t/wchan" 2>/dev/null)" >&2
	done
}

# The processes PID started (its children, of every thread).
_children()
{
	cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . || true
}

# _echo_of PID: the pid of PID's echo process (fs/echo.c); fails if none.
_echo_of()
{
	local k

	for k in $(_children "$1"); do
		if [[ $({ tr '\0' ' ' <"/proc/$k/cmdline"; } 2>/dev/null) == \
		      "etcdfs --echo-process "* ]]; then
			echo "$k"
			return 0
		fi
	done
	return 1
}

# _daemon_of MNT: the pid of the etcdfs daemon (not its echo) serving MNT,
# found by its command line, which names MNT.
_daemon_of()
{
	local f

	for f in /proc/[0-9]*/cmdline; do
		if [[ $({ tr '\0' ' ' <"$f"; } 2>/dev/null) == "$ETCDFS "*" $1 " ]]; then
			f=${f#/proc/}
			echo "${f%/cmdline}"
			return 0
		fi
	done
	return 1
}

# python3 -c "$FDS_PY" DAEMON ECHO MNT SECS: watches, for SECS seconds,
# the descriptors of the daemon and of its echo process; prints how many
# times it saw the daemon with a file under MNT open, the echo with one,
# and either with /dev/fuse: "daemon-mnt N echo-mnt N daemon-fuse N
# echo-fuse N".
FDS_PY='
import os, sys, time
daemon, echo, mnt, secs = sys.argv[1], sys.argv[2], sys.argv[3] + "/", \
    float(sys.argv[4])
seen = {"daemon-mnt": 0, "echo-mnt": 0, "daemon-fuse": 0, "echo-fuse": 0}
end = time.monotonic() + secs
while time.monotonic() < end:
    for who, pid in (("daemon", daemon), ("echo", echo)):
        targets = []
        for fd in os.listdir("/proc/%s/fd" % pid):
            try:
                targets.append(os.readlink("/proc/%s/fd/%s" % (pid, fd)))
            except OSError:
                pass
        seen[who + "-mnt"] += any(t.startswith(mnt) for t in targets)
        seen[who + "-fuse"] += "/dev/fuse" in targets
print(" ".join("%s %d" % kv for kv in seen.items()))
'

# A daemon killed while one of its threads waits on its own mount never
# finishes exiting (that thread waits for an answer nobody will give):
# abort its connection with umount -f (MNT_FORCE), so that the test fails
# instead of hanging on it, and leaves no such process behind.  $KILLED is
# the pid of a daemon the test killed and has not seen gone yet.
_unhang()
{
	[[ -n ${KILLED:-} ]] || return 0
	if fs_is_mounted "$MNT"; then
		timeout -s KILL 10 python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.umount2(sys.argv[1].encode(), 1)	# MNT_FORCE: aborts the connection
' "$MNT" || true
	fi
	if wait_for 5 _tasks_gone "$KILLED"; then
		wait "$KILLED" 2>/dev/null || true
	else
		echo "daemon $KILLED does not finish exiting" >&2
	fi
	[[ $FS_PID != "$KILLED" ]] || FS_PID=
	KILLED=
}

# _mounted_times MNT N: N filesystems are mounted at MNT, one over the
# other, as /proc/mounts says.
_mounted_times()
{
	[[ $(awk -v m="$1" '$2 == m' /proc/mounts | wc -l) -eq $2 ]]
}

# _tree DIR: every file and directory under DIR, with its type, size and
# content's checksum (a directory that is no mount: never an etcdfs one).
_tree()
{
	(cd "$1" && find . -printf '%p %y %s\n' | sort &&
		find . -type f -exec sha256sum {} + | sort -k 2)
}

# _same_tree LISTING DIR: DIR is as _tree saw it in LISTING; else says
# how it differs (the first lines).
_same_tree()
{
	local now

	now=$(_tree "$2")
	if [[ $now != "$(cat "$1")" ]]; then
		echo "'$2' changed:" >&2
		diff "$1" <(echo "$now") | head -n 20 >&2
		return 1
	fi
}

# _answers_enotconn CMD...: CMD fails with "Transport endpoint is not
# connected" within 2 s.  A request the kernel had queued when the daemon
# died fails with ECONNABORTED ("Software caused connection abort"): try
# again, within the same 2 s.
_answers_enotconn()
{
	local start=${EPOCHREALTIME/./} left

	for (( ; ; )); do
		left=$((2000000 - (${EPOCHREALTIME/./} - start)))
		((left > 0)) || break
		run timeout -s KILL "$((left / 1000))e-3" "$@"
		[[ $status -ne 0 && $output == *"Transport endpoint is not connected"* ]] &&
			return 0
		[[ $status -ne 0 && $output == *"connection abort"* ]] || break
		sleep 0.05
	done
	echo "${KILL_NO:+kill $KILL_NO: }'$*' answered status $status:" \
		"$output" >&2
	return 1
}

@test "a daemon killed again and again while other clients write: the mount answers ENOTCONN within 2 s and the daemon and its echo are gone" {
	local i pid kids k before rc kills=$(tier_len 20 50)

	writers_start
	killer_start
	wait_for 20 test -s "$BATS_TEST_TMPDIR/count.large"
	before=$(writers_ops)
	for ((i = 0; i < kills; i++)); do
		KILL_NO=$i
		if ((i > 0)); then
			fs_mount
		fi
		pid=$FS_PID
		kids=$(_children "$pid")
		KILLED=$pid
		# while the echo replays a change, if it can be caught at it
		kill_busy "$pid"
		if ! _answers_enotconn ls -- "$MNT" ||
		   ! _answers_enotconn stat -- "$MNT/never-looked-up-$i"; then
			_dump_tasks "$pid"
			return 1
		fi
		if ! wait_for 2 _tasks_gone "$pid"; then
			echo "kill $i: daemon $pid still has live threads:" >&2
			_dump_tasks "$pid"
			return 1
		fi
		for k in $kids; do
			if ! wait_for 2 _tasks_gone "$k"; then
				echo "kill $i: process $k of daemon $pid still runs" >&2
				return 1
			fi
		done
		rc=0
		wait "$pid" || rc=$?
		[ "$rc" -eq 137 ]
		FS_PID= KILLED=
		timeout -s KILL 10 fusermount3 -u "$MNT"
		if fs_is_mounted "$MNT"; then
			echo "kill $i: '$MNT' still mounted" >&2
			return 1
		fi
	done
	# the writers wrote all along, and some kills caught the echo at work
	(($(writers_ops) > before + 1000))
	echo "# kills: $(sort "$BATS_TEST_TMPDIR/kills" | uniq -c | xargs)" >&3
	grep -qx open "$BATS_TEST_TMPDIR/kills"
	for k in "${WRITERS[@]}"; do
		kill "$k"
		wait "$k" || true
	done
	WRITERS=()
	fs_mount
	wait_mirror_equal 30
}

@test "the echo replays from a process of its own that never holds /dev/fuse; the daemon never opens a file on its mount" {
	local echo

	wait_for 10 _echo_of "$FS_PID"
	echo=$(_echo_of "$FS_PID")
	[ "$(tr '\0' ' ' <"/proc/$echo/cmdline")" = \
	  "etcdfs --echo-process $MNT $FS_PID " ]
	writers_start
	wait_for 20 test -s "$BATS_TEST_TMPDIR/count.large"
	run python3 -c "$FDS_PY" "$FS_PID" "$echo" "$MNT" 3
	echo "$output"
	[[ $output =~ daemon-mnt\ 0\ echo-mnt\ ([0-9]+)\ daemon-fuse\ ([0-9]+)\ echo-fuse\ 0 ]]
	# the echo was caught replaying, and the daemon does hold /dev/fuse
	((BASH_REMATCH[1] > 0 && BASH_REMATCH[2] > 0))
	[ "$(_echo_of "$FS_PID")" = "$echo" ]
}

@test "a stopped echo process never stalls the mount: after 5 s another one replays" {
	local echo again

	EVENTS=$BATS_TEST_TMPDIR/events
	wait_for 10 _echo_of "$FS_PID"
	echo=$(_echo_of "$FS_PID")
	kill -STOP "$echo"
	kv_put /during stopped
	# the change is applied without its echo once the echo gave up
	fs_wait_value "$MNT/during" stopped 20
	wait_for 10 _tasks_gone "$echo"
	grep -q "echo: no answer within 5000 ms" "$FS_LOG"
	wait_for 20 _echo_of "$FS_PID"
	again=$(_echo_of "$FS_PID")
	[ "$again" != "$echo" ]
	inw_start
	kv_put /after replayed
	wait_event CREATE after
	wait_event CLOSE_WRITE,CLOSE after
	[ "$(cat "$MNT/after")" = replayed ]
	inw_stop
}

@test "daemonized, and with -d: the echo replays, and goes with its daemon" {
	local opts="endpoints=$ETCD_ENDPOINT" daemon echo mode

	fs_v2 && opts+=,api=v2
	EVENTS=$BATS_TEST_TMPDIR/events
	fs_unmount
	for mode in daemonized -d; do
		if [[ $mode == daemonized ]]; then
			# fuse_daemonize() forks: the daemon is not our child
			"$ETCDFS" -o "$opts" "$MNT" </dev/null >>"$FS_LOG" 2>&1 3>&-
		else
			"$ETCDFS" -d -o "$opts" "$MNT" </dev/null \
				>>"$FS_LOG" 2>&1 3>&- &
		fi
		wait_for 20 fs_is_mounted "$MNT"
		daemon=$(_daemon_of "$MNT")
		KILLED=$daemon
		wait_for 10 _echo_of "$daemon"
		echo=$(_echo_of "$daemon")
		inw_start
		kv_put "/$mode" "$mode"
		wait_event CREATE "$mode"
		wait_event CLOSE_WRITE,CLOSE "$mode"
		inw_stop
		kill -KILL "$daemon"
		_answers_enotconn ls -- "$MNT"
		wait_for 2 _tasks_gone "$daemon"
		wait_for 2 _tasks_gone "$echo"
		[[ $mode == daemonized ]] || wait "$daemon" || true
		KILLED=
		timeout -s KILL 10 fusermount3 -u "$MNT"
	done
}

@test "after a lazy unmount with a file open, other clients' changes never reach the directory underneath" {
	local listing=$BATS_TEST_TMPDIR/listing fd root

	fs_unmount
	# the directory to mount over holds files of its own
	echo precious >"$MNT/precious"
	mkdir "$MNT/dir"
	echo local >"$MNT/dir/local"
	_tree "$MNT" >"$listing"
	kv_put /precious "from etcd"
	kv_put /dir/x x
	kv_put /keep open
	fs_mount
	fs_wait_value "$MNT/precious" "from etcd"
	writers_start
	exec {fd}<"$MNT/keep" {root}<"$MNT"
	HELD=("$fd" "$root")
	timeout -s KILL 10 fusermount3 -u -z "$MNT"
	if fs_is_mounted "$MNT"; then
		echo "'$MNT' is still mounted" >&2
		return 1
	fi
	# the mount lives on, detached, for the files open in it
	kv_put /precious "changed elsewhere"
	kv_put /newfile new
	kv_put /dir/local remote
	kv_put /dir2/deep/file new
	[ "$(kv_del /dir/x)" = 1 ]
	fs_wait_value "/proc/$BASHPID/fd/$root/newfile" new
	fs_wait_value "/proc/$BASHPID/fd/$root/dir2/deep/file" new
	fs_wait_value "/proc/$BASHPID/fd/$root/precious" "changed elsewhere"
	sleep 1
	_same_tree "$listing" "$MNT"
	[ "$(cat "$MNT/precious")" = precious ]
	grep -q "is not this mount any more" "$FS_LOG" || { cat "$FS_LOG" >&2; false; }
	# once nothing holds it, the detached mount goes, and its daemon
	exec {fd}<&- {root}<&-
	HELD=()
	wait_for 10 _tasks_gone "$FS_PID"
	wait "$FS_PID"
	FS_PID=
	_same_tree "$listing" "$MNT"
}

@test "with another mount over the mountpoint nothing is replayed onto it, and once it is gone the echo replays again" {
	local opts="endpoints=$ETCD_ENDPOINT,prefix=/other/" root status

	fs_v2 && opts+=,api=v2
	EVENTS=$BATS_TEST_TMPDIR/events
	kv_put /before one
	fs_wait_value "$MNT/before" one
	exec {root}<"$MNT"
	# another etcdfs over ours: its files are the keys under /other/, so
	# a replay onto it would show in etcd
	"$ETCDFS" -f -o "$opts" "$MNT" </dev/null \
		>>"$BATS_TEST_TMPDIR/over.log" 2>&1 3>&- &
	OVER_PID=$!
	wait_for 20 _mounted_times "$MNT" 2
	# (kv_put would wait for the mount at $MNT, not ours, to catch up)
	MNT= kv_put /x remote
	MNT= kv_put /dir/y remote
	fs_wait_value "/proc/$BASHPID/fd/$root/x" remote
	fs_wait_value "/proc/$BASHPID/fd/$root/dir/y" remote
	exec {root}<&-
	sleep 1
	kv_absent /other/x
	kv_absent /other/dir/y
	[ -z "$(kv_keys /other/)" ]
	[ -z "$(ls -A "$MNT")" ]
	grep -q "is not this mount any more" "$FS_LOG"
	# the mount on top goes: ours is the mountpoint again
	timeout -s KILL 20 fusermount3 -u "$MNT"
	status=0
	wait "$OVER_PID" || status=$?
	OVER_PID=
	[ "$status" -eq 0 ]
	_mounted_times "$MNT" 1
	inw_start
	kv_put /z again
	wait_event CREATE z
	wait_event CLOSE_WRITE,CLOSE z
	inw_stop
	grep -q "is this mount again" "$FS_LOG"
	[ "$(cat "$MNT/z")" = again ]
	[ -z "$(kv_keys /other/)" ]
}

# The watch's thread outlives the session's loop (it stops in the
# filesystem's destroy): an invalidation it sends after libfuse's unmount
# closed the device went to a closed descriptor ("fuse: writing device:
# Bad file descriptor"), or to whatever took its number.  The watch is
# held ($ETCDFS_TEST_HOLD_INVALS) with an invalidation to send, across
# the unmount.
@test "after the unmount the watch sends the kernel nothing" {
	local hold=$BATS_TEST_TMPDIR/hold-invals events

	export ETCDFS_TEST_HOLD_INVALS=$hold
	fs_unmount
	fs_mount
	kv_put /k first
	[ "$(cat "$MNT/k")" = first ]
	events=$(fs_stat watch_events)
	touch "$hold"
	FS_NO_CATCH_UP=1 kv_put /k second
	fs_wait_applied "$events"
	# its replay holds the file open for a moment: the unmount waits
	wait_for 10 fs_echo_idle
	timeout -s KILL 20 fusermount3 -u "$MNT"
	! fs_is_mounted "$MNT" || false
	# the daemon waits in its destroy for the watch, held
	sleep 0.5
	kill -0 "$FS_PID"
	rm "$hold"
	fs_unmount
	if grep -n 'writing device' "$FS_LOG"; then
		return 1
	fi
}
