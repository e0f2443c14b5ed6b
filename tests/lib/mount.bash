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
# etcd's v2 keys API, whose key space is apart from v3's).  The etcd and
# etcdctl it runs are tests/lib/etcd.sh's $ETCD_BIN and $ETCDCTL_BIN.
#
# The Python it runs lives in tests/lib: kv2.py and kv3.py (the two sides
# of the kv_* helpers), fs_try.py, mount_dump.py, puts_http.py and
# fs_put.py.
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
#   fs_setup [OPTS]      etcd, then fs_mount OPTS (call from setup); the
#                        array FS_ETCD_ARGS, if the test sets it, goes to
#                        etcd (e.g. --quota-backend-bytes=N)
#   fs_teardown          fs_unmount, etcd_stop, checks (call from teardown)
#   fs_live_setup [OPTS], fs_live_teardown
#                        the same for a test that watches the mount with
#                        inw_start: EVENTS and INW_PID set, and a daemon
#                        the test froze (SIGSTOP) is thawed, inotifywait
#                        stopped, before the unmount
#   fs_require_api API   fails (with a message) unless the suite runs on
#                        API (v3 or v2): for files of one backend only
#   fs_mount [OPTS]      mounts with -o endpoints=...[,OPTS]; waits for it
#                        (the daemon runs without the ETCDCTL_* variables
#                        set here for the tests' etcdctl: fs_clean_env)
#   fs_clean_env         sets FS_CLEAN_ENV: env(1)'s arguments that unset
#                        ETCDCTL_*, ETCDFS_PASSWORD and NOTIFY_SOCKET
#   fs_unmount           unmounts, waits for the daemon, checks its log
#   wait_for SECS CMD... runs CMD every 50 ms until it succeeds, for SECS
#                        times $TEST_TIMEOUT_MULTIPLIER at most (FS_SCALE)
#   fs_wait_value PATH VALUE [SECS]
#                        waits (default 10 s) until PATH reads as VALUE
#   kv_put [--ttl SECS] KEY [VALUE]
#                        etcdctl put (v2: set); without VALUE the value
#                        is stdin; --ttl (v2 only) gives the key a TTL;
#                        then waits until a mount with a connected watch
#                        has applied it (_fs_catch_up), unless
#                        FS_NO_CATCH_UP is set (a test that holds the
#                        mount's watch or invalidations waits for what
#                        it needs itself)
#   kv_del [--prefix] KEY
#                        deletes KEY (or every key under the prefix KEY)
#                        and prints how many keys it deleted, as
#                        `etcdctl del` does; as kv_put, it then waits
#                        until a mount with a connected watch has applied
#                        the deletion (_fs_catch_up)
#   kv_dump              every key as "KEY VALUE" lines, sorted
#   kv_get KEY           the value's exact bytes on stdout; fails if absent
#   kv_is KEY VALUE      succeeds if etcd holds exactly the bytes VALUE at
#                        KEY (a trailing newline counts: $'v\n' is not v);
#                        else says what it holds, as hex
#   kv_same KEY FILE     succeeds if etcd holds exactly FILE's bytes at KEY
#   kv_has KEY           succeeds if the key exists
#   kv_absent KEY        succeeds if etcd answers that the key does not
#   kv_meta KEY FIELD    mod_revision, create_revision, version or lease
#   kv_metas PREFIX FIELD
#                        kv_meta of every key under PREFIX, in one call,
#                        as "KEY VALUE" lines in key order (keys escaped
#                        as kv_history's)
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
#   etcd_freeze          SIGSTOPs our etcd (ETCD_FROZEN: its pid, for
#                        the test's kill -CONT and its teardown's) and
#                        waits until every thread of it has stopped
#   inw_start, inw_stop  inotifywait -m -r on $MNT into $EVENTS, and stop
#   has_event, wait_event EVENTS PATH [SECS], count_event EVENTS PATH
#                        a line "EVENTS $MNT/PATH" is in $EVENTS
#   mount_dump           every file of the mount as "KEY VALUE" lines
#   wait_mirror_equal [SECS]
#                        waits until mount_dump equals kv_dump, byte for
#                        byte (NUL bytes and trailing newlines count)
#   puts_http PREFIX N   N puts PREFIX0000.. over one HTTP connection
#                        (FS_PUT_PY: the put itself, for Python code)

: "${TESTS_DIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
# shellcheck source=tests/lib/etcd.sh
source "$TESTS_DIR/lib/etcd.sh"

# Sorting and error messages ("Stale file handle") as the tests expect.
export LC_ALL=C

# A hung test is killed rather than blocking the whole suite.  A slower
# build (the sanitizers' pass of tests/run.sh) multiplies the bound by the
# integer $TEST_TIMEOUT_MULTIPLIER, as meson test --timeout-multiplier
# does its own.
: "${BATS_TEST_TIMEOUT:=$((300 * ${TEST_TIMEOUT_MULTIPLIER:-1}))}"
export BATS_TEST_TIMEOUT

# So does every bound on how long a step may take: wait_for's (and so
# fs_wait_value's, wait_event's, wait_mirror_equal's) and the mount's and
# unmount's here.  A bound that is a test's subject (a timeout option
# measured) is not a wait_for's and is not scaled.
FS_SCALE=${TEST_TIMEOUT_MULTIPLIER:-1}

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
	local -a etcd_args=("${FS_ETCD_ARGS[@]}")

	if [[ -z ${ETCDFS:-} || ! -x $ETCDFS ]]; then
		echo "ETCDFS must name the etcdfs binary (got '${ETCDFS:-}')" >&2
		return 1
	fi
	case $FS_API in
	v3)	export ETCDCTL_API=3 ;;
	v2)	export ETCDCTL_API=2
		etcd_args+=(--enable-v2=true) ;;
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

fs_live_setup()
{
	INW_PID=
	EVENTS=$BATS_TEST_TMPDIR/events
	fs_setup "$@"
}

fs_live_teardown()
{
	# a test that froze the daemon must not leave it frozen
	[[ -z ${FS_PID:-} ]] || kill -CONT "$FS_PID" 2>/dev/null || true
	inw_stop
	fs_teardown
}

fs_require_api()
{
	if [[ $FS_API != "$1" ]]; then
		echo "${BATS_TEST_FILENAME##*/} is for etcd $1 only" \
			"(ETCDFS_API=$1; got '$FS_API')" >&2
		return 1
	fi
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
		if ((SECONDS - start > 20 * FS_SCALE)); then
			echo "etcdfs -o $opts did not mount within" \
				"$((20 * FS_SCALE)) s; its output:" >&2
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

# The replay of another client's change holds a file of the mount open
# for a moment (docs/semantics.md: user.etcd.stats' echo_pending): an unmount waits
# until none is left, for 10 s at most.  A daemon that does not answer
# (frozen, or gone) is not waited for: each read is killed after 1 s.
_fs_echo_settle()
{
	local start=$SECONDS pending

	while pending=$(fs_stat echo_pending 1 2>/dev/null) &&
		[[ -n $pending ]] && ((pending > 0 && SECONDS - start < 10)); do
		sleep 0.05
	done
}

fs_unmount()
{
	local rc=0 start status

	[[ -n ${MNT:-} ]] || return 0
	if fs_is_mounted "$MNT"; then
		_fs_echo_settle
		if ! timeout 20 fusermount3 -u "$MNT" 2>/dev/null; then
			echo "fusermount3 -u failed (busy?): unmounting lazily" >&2
			timeout 20 fusermount3 -u -z "$MNT" || rc=1
		fi
	fi
	if [[ -n ${FS_PID:-} ]]; then
		start=$SECONDS
		while kill -0 "$FS_PID" 2>/dev/null &&
			[[ $(awk '{ print $3 }' "/proc/$FS_PID/stat" 2>/dev/null) != Z ]]; do
			if ((SECONDS - start > 15 * FS_SCALE)); then
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
	local secs=$(($1 * FS_SCALE)) start=$SECONDS

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

# The interpreter itself, not a wrapper script that finds it on each call
# (pyenv's shim costs 0.4 s a call, and a test makes hundreds).
FS_PYTHON=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) ||
	FS_PYTHON=python3
[[ -n $FS_PYTHON ]] || FS_PYTHON=python3

# The v2 and v3 sides of the kv_* helpers (tests/lib/kv2.py, kv3.py).
_kv2()
{
	"$FS_PYTHON" "$TESTS_DIR/lib/kv2.py" "$@"
}

_kv3()
{
	"$FS_PYTHON" "$TESTS_DIR/lib/kv3.py" "$ETCDCTL_BIN" "$@"
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
		out=$("$ETCDCTL_BIN" put -w json -- "$1" "$2") || return
		_fs_catch_up "$out"
		return 0
	fi
	# etcdctl refuses an empty stdin: an empty value must be an argument.
	value_file=$(mktemp) || return 1
	cat >"$value_file" || { rm -f "$value_file"; return 1; }
	if [[ -s $value_file ]]; then
		out=$("$ETCDCTL_BIN" put -w json -- "$1" <"$value_file")
	else
		out=$("$ETCDCTL_BIN" put -w json -- "$1" "")
	fi
	rc=$?
	rm -f "$value_file"
	((rc == 0)) && _fs_catch_up "$out"
	return $rc
}

# _fs_catch_up JSON: waits (5 s at most) until the mount at $MNT, if one is
# mounted with its watch connected, has applied the revision of etcdctl's
# reply JSON, and sent the kernel its invalidations (the root's
# user.etcd.revision): another client's change shows in the mount a few
# ms later, and the tests read it through the mount at once.  A change
# the mount never sees (a key outside its prefix, or hidden on v2) waits
# it all.  Nothing with FS_NO_CATCH_UP set.
_fs_catch_up()
{
	local rev have until

	[[ -z ${FS_NO_CATCH_UP:-} ]] || return 0
	[[ $1 =~ \"revision\":\"?([0-9]+) ]] || return 0
	rev=${BASH_REMATCH[1]}
	[[ -n ${MNT:-} ]] && fs_is_mounted "$MNT" || return 0
	# a test may have frozen the daemon (SIGSTOP): never wait on it
	[[ $(timeout -s KILL 1 getfattr --only-values -n user.etcd.watch \
		"$MNT" 2>/dev/null) == connected ]] || return 0
	# by the clock: each getfattr costs more than the sleep
	until=$((${EPOCHREALTIME//[!0-9]/} + 5000000 * FS_SCALE))
	while :; do
		have=$(timeout -s KILL 1 getfattr --only-values \
			-n user.etcd.revision "$MNT" 2>/dev/null) || return 0
		((have >= rev)) && return 0
		((${EPOCHREALTIME//[!0-9]/} < until)) || return 0
		sleep 0.01
	done
}

kv_get()
{
	if fs_v2; then
		_kv2 get "$1"
		return
	fi
	_kv3 get "$1"
}

# Not [ "$(kv_get KEY)" = VALUE ]: $(...) drops trailing newlines (and
# NUL bytes), so "v\n" would pass for "v".  Compared as hex, whose text
# loses nothing.
kv_is()
{
	local got want

	got=$(set -o pipefail; kv_get "$1" | hex) || {
		echo "kv_is: etcd has no key '$1'" >&2
		return 1
	}
	want=$(printf '%s' "$2" | hex)
	if [[ $got != "$want" ]]; then
		echo "kv_is: etcd holds $got (hex) at '$1', not $want" >&2
		return 1
	fi
}

kv_same()
{
	local got want

	got=$(set -o pipefail; kv_get "$1" | hex) || {
		echo "kv_same: etcd has no key '$1'" >&2
		return 1
	}
	want=$(hex <"$2") || return 1
	if [[ $got != "$want" ]]; then
		echo "kv_same: etcd holds $got (hex) at '$1', not $want" \
			"('$2')" >&2
		return 1
	fi
}

kv_has()
{
	if fs_v2; then
		_kv2 has "$1"
		return
	fi
	_kv3 has "$1"
}

# Not `! kv_has`: bats does not fail a test on a negated command, and
# an unreachable etcd must not pass for an absent key.
kv_absent()
{
	if fs_v2; then
		_kv2 absent "$1"
		return
	fi
	_kv3 absent "$1"
}

kv_meta()
{
	if fs_v2; then
		_kv2 meta "$1" "$2"
		return
	fi
	_kv3 meta "$1" "$2"
}

kv_metas()
{
	if fs_v2; then
		_kv2 metas "$1" "$2"
		return
	fi
	_kv3 metas "$1" "$2"
}

kv_keys()
{
	if fs_v2; then
		_kv2 keys "${1:-}"
		return
	fi
	_kv3 keys "${1:-}"
}

kv_keys_hex()
{
	if fs_v2; then
		_kv2 keys_hex "${1:-}"
		return
	fi
	_kv3 keys_hex "${1:-}"
}

kv_rev()
{
	if fs_v2; then
		_kv2 rev
		return
	fi
	_kv3 rev
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
	_kv3 history "$from" "$now"
}

kv_del()
{
	local out

	if fs_v2; then
		out=$(_kv2 del "$@") || return
		head -n 1 <<<"$out"
		_fs_catch_up "$(tail -n 1 <<<"$out")"
		return 0
	fi
	out=$("$ETCDCTL_BIN" del -w json "$@") || return
	if [[ $out =~ \"deleted\":\"?([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		echo 0	# JSON leaves a zero out
	fi
	_fs_catch_up "$out"
}

kv_dump()
{
	if fs_v2; then
		_kv2 dump
		return
	fi
	_kv3 dump
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

# fs_try CODE [ARGS]: tests/lib/fs_try.py, killed after $FS_TRY_TIMEOUT s.
fs_try()
{
	timeout "${FS_TRY_TIMEOUT:-120}" "$FS_PYTHON" "$TESTS_DIR/lib/fs_try.py" \
		"$@"
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

# Starts our etcd again (etcd_stop_keep), on the same ports.
etcd_start_again()
{
	_etcd_relaunch "$ETCD_DIR" "$ETCD_ENDPOINT" "${ETCD_CMD[@]}"
}

# _fs_all_stopped PID: every thread of PID is stopped (state T).
_fs_all_stopped()
{
	local t s

	for t in /proc/"$1"/task/*/stat; do
		s=$(sed 's/.*) //' "$t" 2>/dev/null | cut -d' ' -f1)
		[[ $s == T ]] || return 1
	done
}

# etcd_freeze: kill -STOP does not wait for the process to stop.  The
# thread the kernel picks to take the signal stops the others once it
# runs, which on a loaded machine can be after etcd's other threads have
# answered a request or two sent meanwhile (tests/fs/errors.bats saw an
# ls succeed that way): etcd is frozen once each of its threads is.
etcd_freeze()
{
	ETCD_FROZEN=$(cat "$ETCD_DIR/pid") || return 1
	kill -STOP "$ETCD_FROZEN" || return 1
	if ! wait_for 10 _fs_all_stopped "$ETCD_FROZEN"; then
		echo "etcd $ETCD_FROZEN did not stop within 10 s:" >&2
		grep -H '^State' /proc/"$ETCD_FROZEN"/task/*/status >&2
		return 1
	fi
}

# --- inotify events and whole-tree comparisons ---
#
# For live.bats, v2.bats, compaction.bats and load.bats: inw_start and
# the others use $EVENTS (a file the test names; fs_live_setup names one)
# and $INW_PID; a test that calls inw_start calls inw_stop in its teardown
# (fs_live_teardown does).

# proxy_mount [OPTION...]: mounts again, with OPTIONs, through
# tests/lib/tcp_proxy.py in front of etcd (the coprocess PROXY, its pid
# PROXY_PROC; proxy_stop ends it, after the mount), so that a test can
# lose the answer of one request of the mount's (proxy_tell).
proxy_mount()
{
	local port=${ETCD_ENDPOINT##*:}

	coproc PROXY {
		exec python3 "$TESTS_DIR/lib/tcp_proxy.py" 0 "$port" 3>&-
	}
	PROXY_PROC=$PROXY_PID
	read -r -t 10 port <&"${PROXY[0]}" || {
		echo "the proxy did not say its port" >&2
		return 1
	}
	fs_unmount
	ETCD_ENDPOINT=http://127.0.0.1:$port fs_mount "$@"
}

# proxy_tell COMMAND ANSWER: tells the proxy COMMAND and waits for ANSWER;
# proxy_wait ANSWER: waits for the proxy to say ANSWER (30 s at most).
proxy_tell()
{
	echo "$1" >&"${PROXY[1]}"
	proxy_wait "$2"
}

proxy_wait()
{
	local line=

	read -r -t 30 line <&"${PROXY[0]}" && [[ $line == "$1" ]] || {
		echo "the proxy said '$line', not '$1'" >&2
		return 1
	}
}

# In a teardown, after the mount that talked through it.
proxy_stop()
{
	if [[ -n ${PROXY_PROC-} ]]; then
		kill -KILL "$PROXY_PROC" 2>/dev/null
		wait "$PROXY_PROC" 2>/dev/null || true
		PROXY_PROC=
	fi
	return 0
}

# fs_stat NAME [SECS]: the counter NAME of the root's user.etcd.stats
# (nothing if the read fails); with SECS, a read that takes longer (a
# frozen daemon) is killed
fs_stat()
{
	local -a limit=()

	[[ -z ${2:-} ]] || limit=(timeout -s KILL "$2")
	"${limit[@]}" getfattr --absolute-names --only-values \
		-n user.etcd.stats "$MNT" |
		awk -v n="$1" '$1 == n { print $2 }'
}

# fs_echo_idle: true when no other client's change waits for its replay
# (user.etcd.stats' echo_pending 0), which may hold a file of the mount
# open for a moment
fs_echo_idle()
{
	[[ $(fs_stat echo_pending) == 0 ]]
}

# fs_wait_applied N: waits (10 s at most) until the watch has delivered
# more than N events (user.etcd.stats' watch_events, taken before the
# changes) and the mirror has applied every one (watch_lag 0), even while
# the kernel's invalidations are held ($ETCDFS_TEST_HOLD_INVALS)
fs_wait_applied()
{
	local _fs_events=$1

	wait_for 10 eval '(($(fs_stat watch_events) > _fs_events &&
			   $(fs_stat watch_lag) == 0))'
}

# Starts inotifywait -m -r on the mount, its events in $EVENTS, one a line
# ("CREATE /path", "CREATE,ISDIR /path"...), and waits until its watches
# are in place.  It first lets the echo replay what it holds (10 s at
# most): a change the mount already shows may not have been replayed yet
# (only the events wait for the echo), and its events would be counted as
# the next change's.
inw_start()
{
	_fs_echo_settle
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
	"$FS_PYTHON" "$TESTS_DIR/lib/mount_dump.py" "$MNT"
}

# Compared as files, not $(...): that would drop NUL bytes and a value's
# trailing newlines.
_dumps_equal()
{
	mount_dump >"$BATS_TEST_TMPDIR/dump.mount" || return 1
	kv_dump >"$BATS_TEST_TMPDIR/dump.etcd" || return 1
	[[ -s $BATS_TEST_TMPDIR/dump.etcd ]] &&
		cmp -s "$BATS_TEST_TMPDIR/dump.mount" "$BATS_TEST_TMPDIR/dump.etcd"
}

# Waits until a full read of the mount equals a full read of etcd.
wait_mirror_equal()
{
	if ! wait_for "${1:-10}" _dumps_equal; then
		echo "the mount differs from etcd after ${1:-10} s:" >&2
		diff -a <(mount_dump | od -c) <(kv_dump | od -c) |
			head -n 40 >&2
		return 1
	fi
}

# puts_http PREFIX N [VALUE]: N puts of PREFIX0000.. with values v0000..
# (or each VALUE, text), over one HTTP connection to etcd (v3: its JSON
# gateway; v2: /v2/keys); a PREFIX or VALUE with a % formats the key's
# number instead (tests/lib/puts_http.py).  It does not wait for the
# mount.
puts_http()
{
	"$FS_PYTHON" -B "$TESTS_DIR/lib/puts_http.py" "$ETCD_ENDPOINT" "$FS_API" \
		"$@"
}

# FS_PUT_PY: Python that defines put(conn, api, key, value), one put over
# the http.client connection conn, raising RuntimeError unless etcd
# answers 200 or 201 (tests/lib/fs_put.py's text, for python3 -c).
# shellcheck disable=SC2034 # used by the tests
FS_PUT_PY=$(<"$TESTS_DIR/lib/fs_put.py")
