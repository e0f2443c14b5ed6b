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
# Environment: ETCDFS (the etcdfs binary, required), TESTS_DIR (the
# tests/ source dir; defaults to the parent of the .bats file's dir) and
# ETCDFS_API (v3, the default, or v2: etcd then runs with
# --enable-v2=true, the mount gets -o api=v2 and every kv_* helper speaks
# etcd's v2 keys API, whose key space is apart from v3's).
#
# On v2 the kv_* helpers map v3's words onto v2's: mod_revision is
# modifiedIndex, create_revision createdIndex, the revision etcd's index
# (X-Etcd-Index); version, which v2 does not keep, is counted from etcd's
# event history (the writes since the key was last created; only the last
# 1,000 events are kept, so a key older than that has no version); lease
# is always 0.  Keys are UTF-8 paths; kv_keys lists keys, not directory
# nodes; kv_del --prefix takes a directory (a PREFIX ending in '/').
#
# After fs_setup: MNT (the mountpoint), ETCD_DIR, ETCD_ENDPOINT,
# FS_API (v3 or v2), ETCDCTL_API (3, or 2 on v2) and ETCDCTL_ENDPOINTS
# (so a bare etcdctl talks to our etcd in the backend's API),
# FS_PID, FS_LOG (the daemon's stderr and stdout).  The mountpoint is
# $FS_MNT_BASE/mnt if the test sets FS_MNT_BASE (vim makes no backup of
# files under /tmp, where the test's own temporary dir lives), else in the
# test's temporary dir.
#
# Functions:
#   fs_setup [OPTS]      etcd, then fs_mount OPTS (call from setup)
#   fs_teardown          fs_unmount, etcd_stop, checks (call from teardown)
#   fs_mount [OPTS]      mounts with -o endpoints=...[,OPTS]; waits for it
#                        (the daemon runs without the ETCDCTL_* variables
#                        set here for the tests' etcdctl: fs_clean_env)
#   fs_clean_env         sets FS_CLEAN_ENV: env(1)'s arguments that unset
#                        ETCDCTL_*, ETCDFS_PASSWORD and NOTIFY_SOCKET
#   fs_unmount           unmounts, waits for the daemon, checks its log
#   wait_for SECS CMD... runs CMD every 50 ms until it succeeds
#   fs_wait_value PATH VALUE [SECS]
#                        waits (default 10 s) until PATH reads as VALUE
#   kv_put [--ttl SECS] KEY [VALUE]
#                        etcdctl put (v2: set); without VALUE the value
#                        is stdin; --ttl (v2 only) gives the key a TTL
#   kv_del [--prefix] KEY
#                        deletes KEY (or every key under the prefix KEY)
#                        and prints how many keys it deleted, as
#                        `etcdctl del` does
#   kv_dump              every key as "KEY VALUE" lines, sorted
#   kv_get KEY           the value's exact bytes on stdout; fails if absent
#   kv_has KEY           succeeds if the key exists
#   kv_absent KEY        succeeds if etcd answers that the key does not
#   kv_meta KEY FIELD    mod_revision, create_revision, version or lease
#   kv_keys [PREFIX]     keys under PREFIX (default all), one a line
#   kv_keys_hex [PREFIX] the same, each key as hex bytes
#   kv_rev               etcd's current revision
#   kv_history REV       every event after REV up to now, one a line:
#                        "PUT KEY" or "DELETE KEY" (non-printable bytes
#                        escaped as \xNN, newline as \n); on v2 also
#                        "MKDIR KEY" and "RMDIR KEY" for directory nodes
#                        (an expired key is a DELETE)
#   fs_v2                succeeds if the suite runs on etcd's v2 API
#   fs_try CODE [ARGS]   runs Python CODE (args in `args`); prints OK or
#                        the errno's name (ESTALE, EEXIST...) of the
#                        OSError it raised, and fails in that case; CODE
#                        may call kv_put(k, v), kv_get(k) (bytes) and
#                        read_all(path); killed after $FS_TRY_TIMEOUT
#                        seconds (default 120; status 124)
#   hex                  stdin as hex bytes, no spaces
#   fs_random N          N random bytes: any bytes on v3, letters, digits,
#                        '+' and '/' on v2 (whose values are UTF-8 text)
#   etcd_remember        remembers how our etcd was started
#   etcd_stop_keep       stops our etcd, remembering how it was started
#   etcd_start_again     starts it again: same ports, same data dir
#   inw_start, inw_stop  inotifywait -m -r on $MNT into $EVENTS, and stop
#   has_event, wait_event EVENTS PATH [SECS], count_event EVENTS PATH
#                        a line "EVENTS $MNT/PATH" is in $EVENTS
#   mount_dump           every file of the mount as "KEY VALUE" lines
#   wait_mirror_equal [SECS]
#                        waits until mount_dump equals kv_dump
#   puts_http PREFIX N   N puts PREFIX0000.. over one HTTP connection
#                        (FS_PUT_PY: the put itself, for Python code)

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

# The backend the suite runs on: ETCDFS_API, v3 unless told.
FS_API=${ETCDFS_API:-v3}

fs_v2()
{
	[[ $FS_API == v2 ]]
}

fs_setup()
{
	local -a etcd_args=()

	if [[ -z ${ETCDFS:-} || ! -x $ETCDFS ]]; then
		echo "ETCDFS must name the etcdfs binary (got '${ETCDFS:-}')" >&2
		return 1
	fi
	case $FS_API in
	v3)	export ETCDCTL_API=3 ;;
	v2)	export ETCDCTL_API=2
		etcd_args=(--enable-v2=true) ;;
	*)	echo "ETCDFS_API must be v3 or v2 (got '$FS_API')" >&2
		return 1 ;;
	esac
	ETCD_DIR=$BATS_TEST_TMPDIR/etcd
	ETCD_ENDPOINT=$(etcd_start "$ETCD_DIR" "${etcd_args[@]}") || return 1
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

	if fs_v2; then
		opts+=,api=v2
	fi

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
	# fd 3 is bats' output: a daemon holding it would hang bats.  The
	# ETCDCTL_* variables are the tests' etcdctl's: the mount gets its
	# settings from its options only (etcdfs reads ETCDCTL_DIAL_TIMEOUT
	# and the others when an option is missing), and no NOTIFY_SOCKET of
	# whoever runs the tests.
	fs_clean_env
	env "${FS_CLEAN_ENV[@]}" "$ETCDFS" -f -o "$opts" "$MNT" </dev/null \
		>>"$FS_LOG" 2>&1 3>&- &
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

# Sets FS_CLEAN_ENV to env(1)'s arguments that unset the variables etcdfs
# reads (ETCDCTL_*, ETCDFS_PASSWORD, NOTIFY_SOCKET): `env
# "${FS_CLEAN_ENV[@]}" "$ETCDFS" ... &` starts the daemon itself, so that
# $! is its pid.
fs_clean_env()
{
	local v

	FS_CLEAN_ENV=()
	for v in $(compgen -e); do
		case $v in
		ETCDCTL_*|ETCDFS_PASSWORD|NOTIFY_SOCKET) FS_CLEAN_ENV+=(-u "$v") ;;
		esac
	done
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

# The kv_* helpers on v2, over /v2/keys: python3 -c "$FS_KV2_PY" CMD ARGS.
FS_KV2_PY=$(cat <<'EOF'
# The v2 side of the kv_* helpers: python3 -c "$FS_KV2_PY" CMD ARGS...
import json, os, sys, urllib.error, urllib.parse, urllib.request

EP = os.environ["ETCDCTL_ENDPOINTS"].split(",")[0]


def call(method, key, query=None, form=None):
    """(reply JSON, etcd index) of a /v2/keys request; errors too."""
    url = EP + "/v2/keys" + urllib.parse.quote(key, safe="/")
    if query:
        url += "?" + urllib.parse.urlencode(query)
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return json.load(r), int(r.headers.get("X-Etcd-Index", 0))
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            j = json.loads(body)
        except ValueError:
            sys.exit("v2 %s %s: HTTP %d %r" % (method, key, e.code, body))
        return j, int(e.headers.get("X-Etcd-Index") or j.get("index", 0))


def fail(j):
    sys.exit("etcd v2: %s (%s)" % (j.get("message"), j.get("cause")))


def node(key):
    """The node of @key, None if there is none."""
    j, _ = call("GET", key, {"quorum": "true"})
    if j.get("errorCode") == 100:
        return None
    if "errorCode" in j:
        fail(j)
    return j["node"]


def rev():
    # the index of a quorum read, as in the mount's probe: a not-found
    # error of an absent key carries it
    j, index = call("GET", "/_kv2_no_such_key", {"quorum": "true"})
    return index


def leaves(n, out):
    if n.get("dir"):
        for c in n.get("nodes") or []:
            leaves(c, out)
    else:
        out.append(n)


def under(prefix):
    """The keys (leaf nodes) whose name starts with @prefix, sorted."""
    d = prefix[:prefix.rfind("/") + 1] if "/" in prefix else "/"
    j, _ = call("GET", d, {"recursive": "true", "quorum": "true"})
    if j.get("errorCode") in (100, 104):
        return []
    if "errorCode" in j:
        fail(j)
    out = []
    leaves(j["node"], out)
    return sorted((n for n in out if n["key"].startswith(prefix)),
                  key=lambda n: n["key"].encode())


def events(key, first, last, recursive):
    """Every event on @key (and below it if @recursive) at indexes
    first..last, by waiting on each in turn."""
    i = first
    while i <= last:
        q = {"wait": "true", "waitIndex": str(i)}
        if recursive:
            q["recursive"] = "true"
        j, _ = call("GET", key, q)
        if "errorCode" in j:
            fail(j)
        # an expiry or a delete carries the node without a value
        at = j["node"]["modifiedIndex"]
        if at > last:
            return
        yield j
        i = at + 1


def version(key):
    """How many writes @key had since it was last created, from etcd's
    event history, as v3's version."""
    n = node(key)
    if n is None or n.get("dir"):
        return None
    last = n["modifiedIndex"]
    first = max(1, rev() - 999)
    v = 0 if first == 1 else None
    for e in events(key, first, last, False):
        if e["action"] in ("delete", "compareAndDelete", "expire"):
            v = 0
        elif e["node"]["key"] != key:
            continue
        elif "prevNode" not in e or e["prevNode"].get("dir"):
            v = 1
        elif v is not None:
            v += 1
    if v is None:
        sys.exit("kv2: the creation of %s is older than etcd's history"
                 % key)
    return v


def show(key):
    s = key.replace("\n", "\\n")
    return "".join(c if c.isprintable() or c == "\\" else
                   "\\x%02x" % ord(c) for c in s)


def value_arg(args):
    if len(args) >= 2:
        return args[1]
    return sys.stdin.buffer.read().decode("utf-8")


def main(cmd, args):
    if cmd == "put":
        # [--ttl SECS] KEY [VALUE]
        form = {}
        if args[0] == "--ttl":
            form["ttl"] = args[1]
            args = args[2:]
        form["value"] = value_arg(args)
        j, index = call("PUT", args[0], None, form)
        if "errorCode" in j:
            fail(j)
        print(json.dumps({"revision": index}, separators=(",", ":")))
    elif cmd == "get":
        n = node(args[0])
        if n is None or n.get("dir"):
            return 1
        sys.stdout.buffer.write(n.get("value", "").encode())
    elif cmd == "has":
        n = node(args[0])
        return 0 if n is not None and not n.get("dir") else 1
    elif cmd == "absent":
        return 0 if node(args[0]) is None else 1
    elif cmd == "meta":
        key, field = args
        if field == "version":
            v = version(key)
        else:
            n = node(key)
            v = None if n is None else {
                "mod_revision": n["modifiedIndex"],
                "create_revision": n["createdIndex"],
                "lease": 0}[field]
        if v is None:
            return 1
        print(v)
    elif cmd in ("keys", "keys_hex"):
        for n in under(args[0] if args else ""):
            k = n["key"].encode()
            print(k.hex() if cmd == "keys_hex" else k.decode())
    elif cmd == "dump":
        for n in under(""):
            sys.stdout.buffer.write(n["key"].encode() + b" " +
                                    n.get("value", "").encode() + b"\n")
    elif cmd == "rev":
        print(rev())
    elif cmd == "del":
        if args[0] == "--prefix":
            prefix = args[1]
            if not prefix.endswith("/"):
                sys.exit("kv2: del --prefix takes a directory, not %r"
                         % prefix)
            count = len(under(prefix))
            j, _ = call("DELETE", prefix.rstrip("/") or "/",
                        {"recursive": "true"})
            if j.get("errorCode") == 100:
                count = 0
            elif "errorCode" in j:
                fail(j)
        else:
            j, _ = call("DELETE", args[0])
            count = 1
            if j.get("errorCode") == 100:
                count = 0
            elif "errorCode" in j:
                fail(j)
        print(count)
    elif cmd == "history":
        first, last = int(args[0]), int(args[1])
        for e in events("/", first, last, True):
            n = e["node"]
            if e["action"] in ("delete", "compareAndDelete", "expire"):
                kind = "RMDIR" if n.get("dir") else "DELETE"
            else:
                kind = "MKDIR" if n.get("dir") else "PUT"
            print(kind, show(n["key"]))
    else:
        sys.exit("kv2: no command %r" % cmd)
    return 0


sys.exit(main(sys.argv[1], sys.argv[2:]))
EOF
)

# The interpreter itself, not a wrapper script that finds it on each call
# (pyenv's shim costs 0.4 s a call, and a test makes hundreds).
FS_PYTHON=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) ||
	FS_PYTHON=python3
[[ -n $FS_PYTHON ]] || FS_PYTHON=python3

_kv2()
{
	"$FS_PYTHON" -c "$FS_KV2_PY" "$@"
}

kv_put()
{
	local value_file out rc

	if fs_v2; then
		out=$(_kv2 put "$@") || return
		_fs_catch_up "$out"
		return 0
	fi
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
	if fs_v2; then
		_kv2 get "$1"
		return
	fi
	_kv_json "$1" '
kvs = r.get("kvs") or []
if not kvs:
    sys.exit(1)
sys.stdout.buffer.write(base64.b64decode(kvs[0].get("value", "")))
'
}

kv_has()
{
	if fs_v2; then
		_kv2 has "$1"
		return
	fi
	_kv_json "$1" 'sys.exit(0 if r.get("kvs") else 1)'
}

# Not `! kv_has`: bats does not fail a test on a negated command, and
# an unreachable etcd must not pass for an absent key.
kv_absent()
{
	if fs_v2; then
		_kv2 absent "$1"
		return
	fi
	_kv_json "$1" 'sys.exit(1 if r.get("kvs") else 0)'
}

kv_meta()
{
	if fs_v2; then
		_kv2 meta "$1" "$2"
		return
	fi
	_kv_json "$1" "
kvs = r.get('kvs') or []
if not kvs:
    sys.exit(1)
print(kvs[0].get('$2', 0))
"
}

kv_keys()
{
	if fs_v2; then
		_kv2 keys "${1:-}"
		return
	fi
	_kv_json "${1:-}" '
for kv in r.get("kvs") or []:
    sys.stdout.buffer.write(base64.b64decode(kv["key"]) + b"\n")
' --prefix --keys-only
}

kv_keys_hex()
{
	if fs_v2; then
		_kv2 keys_hex "${1:-}"
		return
	fi
	_kv_json "${1:-}" '
for kv in r.get("kvs") or []:
    print(base64.b64decode(kv["key"]).hex())
' --prefix --keys-only
}

kv_rev()
{
	if fs_v2; then
		_kv2 rev
		return
	fi
	_kv_json "" 'print(r["header"]["revision"])' --prefix --keys-only \
		--limit=1
}

kv_history()
{
	local from=$(($1 + 1)) now

	now=$(kv_rev) || return 1
	((from <= now)) || return 0
	if fs_v2; then
		_kv2 history "$from" "$now"
		return
	fi
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

kv_del()
{
	if fs_v2; then
		_kv2 del "$@"
		return
	fi
	etcdctl del "$@"
}

kv_dump()
{
	local -

	if fs_v2; then
		_kv2 dump
		return
	fi
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

fs_random()
{
	if fs_v2; then
		head -c $((($1 + 3) / 4 * 3)) /dev/urandom | base64 -w 0 |
			head -c "$1"
		return
	fi
	head -c "$1" /dev/urandom
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
import base64, errno, json, os, sys, time
import urllib.error, urllib.parse, urllib.request
args = sys.argv[1:]
def _kv(path, req):
    url = os.environ["ETCDCTL_ENDPOINTS"].split(",")[0] + "/v3/kv/" + path
    body = json.dumps(req).encode()
    with urllib.request.urlopen(url, body, timeout=20) as r:
        return json.load(r)
def _b64(b):
    return base64.b64encode(b).decode()
def _kv2(method, key, data=None):
    url = (os.environ["ETCDCTL_ENDPOINTS"].split(",")[0] + "/v2/keys" +
           urllib.parse.quote(key, safe="/") + "?quorum=true")
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
def kv_put(key, value):
    if os.environ.get("ETCDCTL_API") == "2":
        _kv2("PUT", key.decode(), urllib.parse.urlencode(
            {"value": value.decode()}).encode())
        return
    _kv("put", {"key": _b64(key), "value": _b64(value)})
def kv_get(key):
    if os.environ.get("ETCDCTL_API") == "2":
        r = _kv2("GET", key.decode())
        return r["node"].get("value", "").encode() if r else None
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

# --- inotify events and whole-tree comparisons ---
#
# For live.bats, v2.bats and compaction.bats: inw_start and the others
# use $EVENTS (a file the test names) and $INW_PID; a test that calls
# inw_start calls inw_stop in its teardown.

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

_dumps_equal()
{
	local m e

	m=$(mount_dump) || return 1
	e=$(kv_dump) || return 1
	[[ -n $e && $m == "$e" ]]
}

# Waits until a full read of the mount equals a full read of etcd.
wait_mirror_equal()
{
	if ! wait_for "${1:-10}" _dumps_equal; then
		echo "the mount differs from etcd after ${1:-10} s:" >&2
		diff <(mount_dump) <(kv_dump) | head -n 40 >&2
		return 1
	fi
}

# puts_http PREFIX N: N puts of PREFIX0000.. with values v0000.., over one
# HTTP connection to etcd (v3: its JSON gateway; v2: /v2/keys).
# FS_PUT_PY: Python that defines put(conn, api, key, value), one put over
# the http.client connection conn (v3: etcd's JSON gateway; v2: /v2/keys),
# raising RuntimeError unless etcd answers 200 or 201.
FS_PUT_PY=$(cat <<'EOF'
import base64, http.client, json, sys, urllib.parse


def put(c, api, key, value):
    b64 = lambda s: base64.b64encode(s.encode()).decode()
    if api == "v2":
        c.request("PUT", "/v2/keys" + urllib.parse.quote(key),
                  urllib.parse.urlencode({"value": value}),
                  {"Content-Type": "application/x-www-form-urlencoded"})
    else:
        c.request("POST", "/v3/kv/put",
                  json.dumps({"key": b64(key), "value": b64(value)}),
                  {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status not in (200, 201):
        raise RuntimeError("put %s: HTTP %d" % (key, r.status))
EOF
)

puts_http()
{
	python3 -c "$FS_PUT_PY
u = urllib.parse.urlparse(sys.argv[1])
api, prefix, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
for i in range(n):
    put(c, api, '%s%04d' % (prefix, i), 'v%04d' % i)
" "$ETCD_ENDPOINT" "$FS_API" "$1" "$2"
}
