# tests/lib/mount.bash - bats helpers: a private etcd and an etcdfs mount of it
#
# Loaded by the filesystem tests (tests/fs/*.bats) with `load ../lib/mount`.
# Each test gets its own etcd (tests/lib/etcd.sh: loopback, free ports, a
# data dir in the test's temporary dir) and its own mount of it, made by
# running "$ETCDFS" -f in the background; teardown unmounts, waits for the
# daemon, stops etcd by its pid and fails the test if the daemon died, did
# not exit cleanly or printed anything that looks like a crash or a
# sanitizer report.  It cannot share an etcd between tests (on purpose:
# each test sees only its own keys and revisions).
#
# Environment: ETCDFS (the etcdfs binary, required) and TESTS_DIR (the
# tests/ source dir; defaults to the parent of the .bats file's dir).
#
# After fs_setup: MNT (the mountpoint), ETCD_DIR, ETCD_ENDPOINT,
# ETCDCTL_API=3 and ETCDCTL_ENDPOINTS (so a bare etcdctl talks to our etcd),
# FS_PID, FS_LOG (the daemon's stderr and stdout).  The mountpoint is
# $FS_MNT_BASE/mnt if the test sets FS_MNT_BASE (vim makes no backup of
# files under /tmp, where the test's own temporary dir lives), else in the
# test's temporary dir.
#
# Functions:
#   fs_setup [OPTS]      etcd, then fs_mount OPTS (call from setup)
#   fs_teardown          fs_unmount, etcd_stop, checks (call from teardown)
#   fs_mount [OPTS]      mounts with -o endpoints=...[,OPTS]; waits for it
#   fs_unmount           unmounts, waits for the daemon, checks its log
#   wait_for SECS CMD... runs CMD every 50 ms until it succeeds
#   fs_wait_value PATH VALUE [SECS]
#                        waits (default 10 s) until PATH reads as VALUE
#   kv_put KEY [VALUE]   etcdctl put; without VALUE the value is stdin
#   kv_get KEY           the value's exact bytes on stdout; fails if absent
#   kv_has KEY           succeeds if the key exists
#   kv_absent KEY        succeeds if etcd answers that the key does not
#   kv_meta KEY FIELD    mod_revision, create_revision, version or lease
#   kv_keys [PREFIX]     keys under PREFIX (default all), one a line
#   kv_keys_hex [PREFIX] the same, each key as hex bytes
#   kv_rev               etcd's current revision
#   kv_history REV       every event after REV up to now, one a line:
#                        "PUT KEY" or "DELETE KEY" (non-printable bytes
#                        escaped as \xNN, newline as \n)
#   fs_try CODE [ARGS]   runs Python CODE (args in `args`); prints OK or
#                        the errno's name (ESTALE, EEXIST...) of the
#                        OSError it raised, and fails in that case; CODE
#                        may call kv_put(k, v), kv_get(k) (bytes) and
#                        read_all(path); killed after $FS_TRY_TIMEOUT
#                        seconds (default 120; status 124)
#   hex                  stdin as hex bytes, no spaces
#   etcd_remember        remembers how our etcd was started
#   etcd_stop_keep       stops our etcd, remembering how it was started
#   etcd_start_again     starts it again: same ports, same data dir

: "${TESTS_DIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
# shellcheck source=tests/lib/etcd.sh
source "$TESTS_DIR/lib/etcd.sh"

# Sorting and error messages ("Stale file handle") as the tests expect.
export LC_ALL=C

# A hung test is killed rather than blocking the whole suite.
: "${BATS_TEST_TIMEOUT:=300}"
export BATS_TEST_TIMEOUT

# Lines in the daemon's output that mean a crash or a sanitizer finding.
FS_SUSPICIOUS='AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer|UndefinedBehaviorSanitizer|runtime error:|Segmentation fault|SIGSEGV|SEGV on|stack smashing|double free|free\(\): invalid|malloc\(\): |corrupted (size|double-linked)|Assertion .* failed|Aborted|core dumped'

fs_setup()
{
	if [[ -z ${ETCDFS:-} || ! -x $ETCDFS ]]; then
		echo "ETCDFS must name the etcdfs binary (got '${ETCDFS:-}')" >&2
		return 1
	fi
	ETCD_DIR=$BATS_TEST_TMPDIR/etcd
	ETCD_ENDPOINT=$(etcd_start "$ETCD_DIR") || return 1
	export ETCDCTL_API=3
	export ETCDCTL_ENDPOINTS=$ETCD_ENDPOINT
	export ETCDCTL_DIAL_TIMEOUT=5s
	export ETCDCTL_COMMAND_TIMEOUT=20s
	fs_mount "$@"
}

fs_teardown()
{
	local rc=0

	fs_unmount || rc=1
	if [[ -n ${ETCD_DIR:-} ]]; then
		etcd_stop "$ETCD_DIR" || rc=1
	fi
	return $rc
}

# True if @1 is a mountpoint in /proc/mounts; never touches the mount
# itself, so a hung daemon cannot hang the check.
fs_is_mounted()
{
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

fs_mount()
{
	local opts="endpoints=$ETCD_ENDPOINT${1:+,$1}" start status

	if [[ -n ${FS_MNT_BASE:-} ]]; then
		MNT=$FS_MNT_BASE/mnt
	else
		MNT=$BATS_TEST_TMPDIR/mnt
	fi
	FS_LOG=$BATS_TEST_TMPDIR/etcdfs.log
	mkdir -p "$MNT" || return 1
	if fs_is_mounted "$MNT"; then
		echo "'$MNT' is mounted already" >&2
		return 1
	fi
	# fd 3 is bats' output: a daemon holding it would hang bats.
	"$ETCDFS" -f -o "$opts" "$MNT" </dev/null >>"$FS_LOG" 2>&1 3>&- &
	FS_PID=$!
	start=$SECONDS
	while ! fs_is_mounted "$MNT"; do
		if ! kill -0 "$FS_PID" 2>/dev/null; then
			status=0
			wait "$FS_PID" || status=$?
			echo "etcdfs -o $opts exited with status $status before" \
				"mounting; its output:" >&2
			cat "$FS_LOG" >&2
			FS_PID=
			return 1
		fi
		if ((SECONDS - start > 20)); then
			echo "etcdfs -o $opts did not mount within 20 s;" \
				"its output:" >&2
			cat "$FS_LOG" >&2
			return 1
		fi
		sleep 0.05
	done
	return 0
}

fs_unmount()
{
	local rc=0 start status

	[[ -n ${MNT:-} ]] || return 0
	if fs_is_mounted "$MNT"; then
		if ! timeout 20 fusermount3 -u "$MNT" 2>/dev/null; then
			echo "fusermount3 -u failed (busy?): unmounting lazily" >&2
			timeout 20 fusermount3 -u -z "$MNT" || rc=1
		fi
	fi
	if [[ -n ${FS_PID:-} ]]; then
		start=$SECONDS
		while kill -0 "$FS_PID" 2>/dev/null &&
			[[ $(awk '{ print $3 }' "/proc/$FS_PID/stat" 2>/dev/null) != Z ]]; do
			if ((SECONDS - start > 15)); then
				echo "etcdfs $FS_PID still runs 15 s after the" \
					"unmount: killing it" >&2
				kill -TERM "$FS_PID" 2>/dev/null
				sleep 2
				kill -KILL "$FS_PID" 2>/dev/null
				rc=1
				break
			fi
			sleep 0.05
		done
		status=0
		wait "$FS_PID" || status=$?
		if ((status != 0)); then
			echo "etcdfs exited with status $status after the unmount" >&2
			rc=1
		fi
		FS_PID=
	fi
	if fs_is_mounted "$MNT"; then
		echo "'$MNT' is still mounted" >&2
		rc=1
	fi
	if [[ -f ${FS_LOG:-} ]] && grep -Eq "$FS_SUSPICIOUS" "$FS_LOG"; then
		echo "suspicious lines in the output of etcdfs:" >&2
		grep -E -C 5 "$FS_SUSPICIOUS" "$FS_LOG" | head -n 80 >&2
		rc=1
	fi
	if ((rc != 0)) && [[ -f ${FS_LOG:-} ]]; then
		echo "--- last lines of the etcdfs output ---" >&2
		tail -n 30 "$FS_LOG" >&2
	fi
	return $rc
}

wait_for()
{
	local secs=$1 start=$SECONDS

	shift
	until "$@"; do
		((SECONDS - start < secs)) || return 1
		sleep 0.05
	done
}

_fs_value_is()
{
	local v

	v=$(cat -- "$1" 2>/dev/null && echo x) || return 1
	[[ ${v%x} == "$2" ]]
}

fs_wait_value()
{
	wait_for "${3:-10}" _fs_value_is "$1" "$2"
}

kv_put()
{
	local value_file out rc

	if (($# >= 2)); then
		out=$(etcdctl put -w json -- "$1" "$2") || return
		_fs_catch_up "$out"
		return 0
	fi
	# etcdctl refuses an empty stdin: an empty value must be an argument.
	value_file=$(mktemp) || return 1
	cat >"$value_file" || { rm -f "$value_file"; return 1; }
	if [[ -s $value_file ]]; then
		out=$(etcdctl put -w json -- "$1" <"$value_file")
	else
		out=$(etcdctl put -w json -- "$1" "")
	fi
	rc=$?
	rm -f "$value_file"
	((rc == 0)) && _fs_catch_up "$out"
	return $rc
}

# _fs_catch_up JSON: waits (2 s at most) until the mount at $MNT, if one is
# mounted with its watch connected, has applied the revision of etcdctl's
# reply JSON: another client's change shows in the mount a few ms later,
# and the tests read it through the mount at once.
_fs_catch_up()
{
	local rev have i

	[[ $1 =~ \"revision\":\"?([0-9]+) ]] || return 0
	rev=${BASH_REMATCH[1]}
	[[ -n ${MNT:-} ]] && fs_is_mounted "$MNT" || return 0
	# a test may have frozen the daemon (SIGSTOP): never wait on it
	[[ $(timeout -s KILL 1 getfattr --only-values -n user.etcd.watch \
		"$MNT" 2>/dev/null) == connected ]] || return 0
	for ((i = 0; i < 200; i++)); do
		have=$(timeout -s KILL 1 getfattr --only-values \
			-n user.etcd.revision "$MNT" 2>/dev/null) || return 0
		((have >= rev)) && return 0
		sleep 0.01
	done
	return 0
}

# Runs the Python code $2 over the JSON etcdctl prints for `get -w json`
# of the key $1 (extra etcdctl options in $3...); `r` is the reply.
_kv_json()
{
	local key=$1 code=$2
	local -

	set -o pipefail
	shift 2
	etcdctl get -w json "$@" -- "$key" | python3 -c "
import base64, json, sys
r = json.load(sys.stdin)
$code
"
}

kv_get()
{
	_kv_json "$1" '
kvs = r.get("kvs") or []
if not kvs:
    sys.exit(1)
sys.stdout.buffer.write(base64.b64decode(kvs[0].get("value", "")))
'
}

kv_has()
{
	_kv_json "$1" 'sys.exit(0 if r.get("kvs") else 1)'
}

# Not `! kv_has`: bats does not fail a test on a negated command, and
# an unreachable etcd must not pass for an absent key.
kv_absent()
{
	_kv_json "$1" 'sys.exit(1 if r.get("kvs") else 0)'
}

kv_meta()
{
	_kv_json "$1" "
kvs = r.get('kvs') or []
if not kvs:
    sys.exit(1)
print(kvs[0].get('$2', 0))
"
}

kv_keys()
{
	_kv_json "${1:-}" '
for kv in r.get("kvs") or []:
    sys.stdout.buffer.write(base64.b64decode(kv["key"]) + b"\n")
' --prefix --keys-only
}

kv_keys_hex()
{
	_kv_json "${1:-}" '
for kv in r.get("kvs") or []:
    print(base64.b64decode(kv["key"]).hex())
' --prefix --keys-only
}

kv_rev()
{
	_kv_json "" 'print(r["header"]["revision"])' --prefix --keys-only \
		--limit=1
}

kv_history()
{
	local from=$(($1 + 1)) now

	now=$(kv_rev) || return 1
	((from <= now)) || return 0
	python3 - "$from" "$now" <<'EOF'
import base64, json, subprocess, sys, time

first, last = int(sys.argv[1]), int(sys.argv[2])
p = subprocess.Popen(["etcdctl", "watch", "--prefix", "", "--rev",
                      str(first), "-w", "json"], stdout=subprocess.PIPE,
                     stdin=subprocess.DEVNULL)

def show(key):
    s = key.decode("utf-8", "backslashreplace").replace("\n", "\\n")
    return "".join(c if c.isprintable() or c == "\\" else
                   "\\x%02x" % ord(c) for c in s)

seen = 0
deadline = time.time() + 20
try:
    while seen < last and time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        if not line.startswith(b"{"):
            continue
        for ev in json.loads(line).get("Events") or []:
            kv = ev["kv"]
            kind = "DELETE" if ev.get("type", 0) == 1 else "PUT"
            print(kind, show(base64.b64decode(kv["key"])))
            seen = max(seen, int(kv.get("mod_revision", 0)))
finally:
    p.kill()
    p.wait()
if seen < last:
    print("kv_history: saw events up to %d of %d" % (seen, last),
          file=sys.stderr)
    sys.exit(1)
EOF
}

hex()
{
	od -An -v -tx1 | tr -d ' \n'
}

# The helpers kv_put(key, value) and kv_get(key) of fs_try talk to etcd
# over HTTP from the Python process itself: a fork while a file is open
# for writing would close the child's copy of it, which is a FUSE flush,
# which commits.
FS_TRY_PRELUDE='
import base64, errno, json, os, sys, time, urllib.request
args = sys.argv[1:]
def _kv(path, req):
    url = os.environ["ETCDCTL_ENDPOINTS"].split(",")[0] + "/v3/kv/" + path
    body = json.dumps(req).encode()
    with urllib.request.urlopen(url, body, timeout=20) as r:
        return json.load(r)
def _b64(b):
    return base64.b64encode(b).decode()
def kv_put(key, value):
    _kv("put", {"key": _b64(key), "value": _b64(value)})
def kv_get(key):
    kvs = _kv("range", {"key": _b64(key)}).get("kvs")
    return base64.b64decode(kvs[0].get("value", "")) if kvs else None
def read_all(path):
    with open(path, "rb") as f:
        return f.read()
'

fs_try()
{
	local code=$1

	shift
	timeout "${FS_TRY_TIMEOUT:-120}" python3 -c "$FS_TRY_PRELUDE
try:
$(sed 's/^/    /' <<<"$code")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(1)
print('OK')
" "$@"
}

# Remembers our etcd's command line (same ports, same data dir) for
# etcd_start_again.
etcd_remember()
{
	local pid

	pid=$(cat "$ETCD_DIR/pid") || return 1
	mapfile -d '' -t ETCD_CMD <"/proc/$pid/cmdline" || return 1
	((${#ETCD_CMD[@]} > 1))
}

# Stops our etcd, remembering how to start it again.
etcd_stop_keep()
{
	etcd_remember || return 1
	# Called in a condition: etcd_stop is not written for errexit.
	etcd_stop "$ETCD_DIR" || return 1
}

etcd_start_again()
{
	local start

	"${ETCD_CMD[@]}" </dev/null >>"$ETCD_DIR/etcd.log" 2>&1 3>&- &
	echo $! >"$ETCD_DIR/pid"
	start=$SECONDS
	until curl -s --max-time 2 "$ETCD_ENDPOINT/health" 2>/dev/null |
		grep -q '"health":"true"'; do
		if ((SECONDS - start > 30)) || ! kill -0 "$(cat "$ETCD_DIR/pid")"; then
			echo "etcd did not come back on $ETCD_ENDPOINT" >&2
			tail -n 20 "$ETCD_DIR/etcd.log" >&2
			return 1
		fi
		sleep 0.1
	done
}
