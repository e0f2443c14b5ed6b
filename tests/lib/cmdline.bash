# tests/lib/cmdline.bash - what the command-line tests share: one etcd for
# the file, the etcdfs they start, and the checks on what it did
#
# Loaded by tests/fs/cmdline.bats, environ.bats and deploy.bats with
# `load ../lib/cmdline`.  One etcd (tests/lib/etcd.sh) serves the whole
# file (setup_file); each test uses keys under a prefix of its own ($P)
# and may start an etcd of its own ($OWN_ETCD, stopped by teardown).
# teardown unmounts lazily what is left mounted, kills by pid the daemons
# it started (and any that forked when it should have failed) and stops
# the test's own etcd, even when the test failed.  Every test starts with
# none of the variables etcdfs reads (ETCDCTL_*, ETCDFS_PASSWORD,
# NOTIFY_SOCKET) from the caller's environment: a test sets the ones it
# is about.
#
# With ETCDFS_API=v2 every etcd runs with --enable-v2=true, every etcdfs
# gets -o api=v2 first (API_ARGS) and keys are written over /v2/keys.
#
# It cannot share a mount between tests (on purpose).
bats_require_minimum_version 1.5.0

: "${TESTS_DIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
# shellcheck source=tests/lib/etcd.sh
source "$TESTS_DIR/lib/etcd.sh"

# A hung test is killed rather than blocking the whole suite (times
# $TEST_TIMEOUT_MULTIPLIER, as in tests/lib/mount.bash).
: "${BATS_TEST_TIMEOUT:=$((120 * ${TEST_TIMEOUT_MULTIPLIER:-1}))}"
export BATS_TEST_TIMEOUT

# Every option etcdfs documents; --help must list each as "-o NAME".
ETCDFS_OPTIONS=(endpoints prefix api cacert cert key user password_file ro
	quorum nowatch connect_timeout request_timeout entry_timeout
	attr_timeout uid gid umask notemp temp_names chmod_ok dial_timeout
	command_timeout insecure_skip_tls_verify value_budget logfile revision
	max_txn_ops codec codec_prefix)

# The backend: ETCDFS_API, v3 unless told.  API_ARGS go before the
# options of every etcdfs the tests start, ETCD_ARGS to every etcd.
FS_API=${ETCDFS_API:-v3}
case $FS_API in
v3)	API_ARGS=() ETCD_ARGS=() ;;
v2)	API_ARGS=(-o api=v2) ETCD_ARGS=(--enable-v2=true) ;;
*)	echo "ETCDFS_API must be v3 or v2 (got '$FS_API')" >&2
	exit 1 ;;
esac

fs_v2()
{
	[[ $FS_API == v2 ]]
}

setup_file()
{
	if [[ -z ${ETCDFS:-} || ! -x $ETCDFS ]]; then
		echo "ETCDFS must name the etcdfs binary (got '${ETCDFS:-}')" >&2
		return 1
	fi
	SHARED_ETCD=$BATS_FILE_TMPDIR/etcd
	ETCD_ENDPOINT=$(etcd_start "$SHARED_ETCD" "${ETCD_ARGS[@]}") || return 1
	export SHARED_ETCD ETCD_ENDPOINT
}

teardown_file()
{
	etcd_stop "$BATS_FILE_TMPDIR/etcd"
}

setup()
{
	local v

	MNT=$BATS_TEST_TMPDIR/mnt
	LOG=$BATS_TEST_TMPDIR/etcdfs.log
	P=/cmdline-$BATS_TEST_NUMBER	# this test's keys
	DAEMON_PID=
	OWN_ETCD=
	OTHER_PIDS=()
	MOUNTPOINTS=("$MNT")	# teardown unmounts each
	mkdir -p "$MNT"
	# settings from the caller's environment would change the outcome
	unset ETCDFS_PASSWORD NOTIFY_SOCKET
	for v in $(compgen -e); do
		[[ $v != ETCDCTL_* ]] || unset "$v"
	done
}

# The teardown of every test; a file with a teardown of its own calls it.
teardown()
{
	cmdline_teardown
}

cmdline_teardown()
{
	local mp pid rc=0

	for mp in "${MOUNTPOINTS[@]}"; do
		if is_mounted "$mp"; then
			timeout 20 fusermount3 -u -z "$mp" || rc=1
		fi
	done
	# ours, and any daemon that forked when it should have failed
	for pid in $DAEMON_PID "${OTHER_PIDS[@]}"; do
		stop_pid "$pid"
	done
	for mp in "${MOUNTPOINTS[@]}"; do
		for pid in $(etcdfs_pids "$mp"); do
			stop_pid "$pid"
		done
	done
	if [[ -n $OWN_ETCD ]]; then
		etcd_stop "$OWN_ETCD" || rc=1
	fi
	return $rc
}

# True if @1 is a mountpoint in /proc/mounts (never touches the mount).
is_mounted()
{
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

# "! cmd" never fails a bats test (set -e ignores it): these do.
not_mounted()
{
	if is_mounted "$1"; then
		echo "'$1' is mounted" >&2
		return 1
	fi
}

not_alive()
{
	if alive "$1"; then
		echo "process $1 still runs" >&2
		return 1
	fi
}

# Field @1 of our mount's line in /proc/mounts (1 source, 3 type, 4 options).
mount_field()
{
	awk -v m="$MNT" -v f="$1" '$2 == m { print $f }' /proc/mounts
}

# True while pid @1 runs; a zombie counts as gone.
alive()
{
	[[ -n $1 ]] && kill -0 "$1" 2>/dev/null &&
		[[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

stop_pid()
{
	local pid=$1 i

	alive "$pid" || { wait "$pid" 2>/dev/null; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	alive "$pid" && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# The pids of the etcdfs processes ($ETCDFS, or $ETCDFS_INSTALLED if set)
# with @1 as an argument: the daemons, not their echo processes
# (`etcdfs --echo-process MOUNTPOINT PID`, fs/echo.c), which go with their
# daemon.  Builtins only: forking once per process in /proc would take
# seconds.
etcdfs_pids()
{
	local d arg n

	for d in /proc/[0-9]*; do
		[[ $d/exe -ef $ETCDFS ]] ||
			[[ -n ${ETCDFS_INSTALLED:-} && $d/exe -ef $ETCDFS_INSTALLED ]] ||
			continue
		n=0
		while IFS= read -r -d '' arg; do
			((n++ != 1)) || [[ $arg != --echo-process ]] || break
			if [[ $arg == "$1" ]]; then
				echo "${d#/proc/}"
				break
			fi
		done 2>/dev/null <"$d/cmdline"
	done
	return 0
}

# Starts etcdfs -f in the background with the given arguments (before the
# mountpoint) and waits until it has mounted; fails if it exits first.
# With RESET_SIGNALS=1 SIGINT and SIGHUP are reset to their default first:
# a non-interactive shell starts background jobs with SIGINT ignored, and
# libfuse leaves an ignored signal ignored.
start_daemon()
{
	local start
	local -a pre=()

	if [[ ${RESET_SIGNALS:-0} == 1 ]]; then
		pre=(python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])')
	fi
	# fd 3 is bats' own: a daemon holding it would hang bats
	"${pre[@]}" "$ETCDFS" -f "${API_ARGS[@]}" "$@" "$MNT" </dev/null \
		>"$LOG" 2>&1 3>&- &
	DAEMON_PID=$!
	start=$SECONDS
	while ! is_mounted "$MNT"; do
		if ! alive "$DAEMON_PID"; then
			wait "$DAEMON_PID"
			echo "etcdfs $* exited with status $? before mounting:" >&2
			cat "$LOG" >&2
			DAEMON_PID=
			return 1
		fi
		if ((SECONDS - start > 20)); then
			echo "etcdfs $* did not mount within 20 s:" >&2
			cat "$LOG" >&2
			return 1
		fi
		sleep 0.05
	done
}

# Waits up to 15 s for the daemon started by start_daemon to exit and
# sets EXIT_STATUS (its log shown when it is not 0).  Fails if it is
# still running.
wait_daemon()
{
	local start=$SECONDS

	while alive "$DAEMON_PID"; do
		if ((SECONDS - start > 15)); then
			echo "etcdfs $DAEMON_PID still runs after 15 s" >&2
			return 1
		fi
		sleep 0.05
	done
	EXIT_STATUS=0
	wait "$DAEMON_PID" || EXIT_STATUS=$?
	DAEMON_PID=
	# shown if the test fails on it
	if ((EXIT_STATUS != 0)); then
		echo "etcdfs exited with status $EXIT_STATUS; it printed:" >&2
		cat "$LOG" >&2
	fi
}

# Checks that the daemon printed nothing: a clean mount and unmount say
# nothing on stderr.
quiet_log()
{
	if [[ -s $LOG ]]; then
		echo "etcdfs printed:" >&2
		cat "$LOG" >&2
		return 1
	fi
}

# expect_failure ERE ARGS...: runs etcdfs ARGS (no -f) and expects it to
# exit non-zero within 10 s, print nothing on stdout and a message matching
# ERE on stderr, mount nothing and leave no daemon behind.
expect_failure()
{
	local pattern=$1

	shift
	# fd 3 is bats' own: a daemon forked by mistake must not hold it
	run --separate-stderr timeout 10 "$ETCDFS" "${API_ARGS[@]}" "$@" 3>&-
	echo "etcdfs $*"
	echo "status: $status"
	echo "stdout: $output"
	echo "stderr: $stderr"
	[ "$status" -ne 124 ]	# timeout(1): it hung
	[ "$status" -ne 0 ]
	[ -z "$output" ]
	[[ $stderr =~ $pattern ]]
	not_mounted "$MNT"
	[ -z "$(etcdfs_pids "$MNT")" ]
}

put()
{
	own_put "$SHARED_ETCD" "$1" "$2"
}

# own_put DIR KEY VALUE: puts to the etcd of DIR (with its client
# certificate if it has TLS, as root if AUTH names root's password).
own_put()
{
	local ep
	local -a tls=() auth=()

	if ! fs_v2; then
		etcd_ctl "$1" ${AUTH:+--user=root:$AUTH} put -- "$2" "$3" >/dev/null
		return
	fi
	ep=$(etcd_endpoint "$1") || return 1
	if [[ -s $1/certs ]]; then
		local certs
		certs=$(cat "$1/certs")
		tls=(--cacert "$certs/ca.pem" --cert "$certs/client.pem"
		     --key "$certs/client-key.pem")
	fi
	[[ -z ${AUTH:-} ]] || auth=(-u "root:$AUTH")
	curl -sSf --max-time 20 "${tls[@]}" "${auth[@]}" -X PUT \
		--data-urlencode "value=$3" "$ep/v2/keys$2" >/dev/null
}

# own_get DIR KEY: the value of KEY in the etcd of DIR.
own_get()
{
	local ep certs

	if ! fs_v2; then
		etcd_ctl "$1" get --print-value-only "$2"
		return
	fi
	ep=$(etcd_endpoint "$1") || return 1
	certs=$(cat "$1/certs")
	curl -sSf --max-time 20 --cacert "$certs/ca.pem" \
		--cert "$certs/client.pem" --key "$certs/client-key.pem" \
		"$ep/v2/keys$2" | python3 -c '
import json, sys
print(json.load(sys.stdin)["node"]["value"])'
}

# start_auth_etcd DIR: starts an etcd of the test's own in DIR with auth
# on (user root, password s3cret; on v2 the guest role may do nothing),
# puts /secret/k = v as root and prints its endpoint.
start_auth_etcd()
{
	local ep

	ep=$(etcd_start "$1" "${ETCD_ARGS[@]}") || return 1
	if fs_v2; then
		ETCDCTL_API=2 etcdctl --endpoints="$ep" user add root:s3cret \
			>/dev/null
		ETCDCTL_API=2 etcdctl --endpoints="$ep" auth enable >/dev/null
		ETCDCTL_API=2 etcdctl --endpoints="$ep" --username=root:s3cret \
			role revoke guest --path='/*' --readwrite >/dev/null
	else
		etcd_ctl "$1" user add root --new-user-password=s3cret >/dev/null
		etcd_ctl "$1" role add root >/dev/null 2>&1 || true
		etcd_ctl "$1" user grant-role root root >/dev/null
		etcd_ctl "$1" auth enable >/dev/null
	fi
	AUTH=s3cret own_put "$1" /secret/k v || return 1
	echo "$ep"
}

# start_silent_server: a TCP server on 127.0.0.1 that accepts connections
# and never reads or answers (tests/lib/silent_server.py); sets
# SILENT_PORT.  teardown stops it.  (Not in $(...): its pid must reach
# OTHER_PIDS.)
start_silent_server()
{
	local i

	python3 "$TESTS_DIR/lib/silent_server.py" \
		>"$BATS_TEST_TMPDIR/silent-port" 3>&- &
	OTHER_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[[ -s $BATS_TEST_TMPDIR/silent-port ]] && break
		sleep 0.05
	done
	SILENT_PORT=$(cat "$BATS_TEST_TMPDIR/silent-port")
	[[ -n $SILENT_PORT ]]
}

# Milliseconds since the epoch.
now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}
