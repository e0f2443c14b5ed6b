#!/usr/bin/env bats
#
# tests/fs/cmdline.bats - the etcdfs command line: --help, --version, bad
# options and mountpoints, unreachable or malformed endpoints, passwords,
# TLS files, and the life of a mount (foreground, daemon, -d), ended by
# SIGTERM, SIGINT, SIGHUP or fusermount3 -u.
#
# One etcd (tests/lib/etcd.sh) serves the whole file; each test uses keys
# under a prefix of its own.  Tests that need auth or TLS start an etcd of
# their own.  Every failure case that is not about the endpoint points
# etcdfs at a live etcd, so that it fails only because of what the test got
# wrong on purpose, and runs it without -f, so that a check done too late
# would show as a daemon that mounted and exited 0.  teardown unmounts
# lazily, kills by pid what is left and stops the test's own etcd, even
# when the test failed.
#
# It does not test what the options do to files (ro, uid, umask: see
# basic.bats), only that they are taken, refused or passed on.
#
# With ETCDFS_API=v2 every etcd runs with --enable-v2=true, every etcdfs
# gets -o api=v2 first, keys are written over /v2/keys, and the login test
# turns on v2 auth (basic auth; the guest role loses its rights) instead
# of v3's.

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
	attr_timeout uid gid umask notemp chmod_ok)

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
	MNT=$BATS_TEST_TMPDIR/mnt
	LOG=$BATS_TEST_TMPDIR/etcdfs.log
	P=/cmdline-$BATS_TEST_NUMBER	# this test's keys
	DAEMON_PID=
	OWN_ETCD=
	OTHER_PIDS=()
	MOUNTPOINTS=("$MNT")	# teardown unmounts each
	mkdir -p "$MNT"
	# a password from the caller's environment would change the outcome
	unset ETCDFS_PASSWORD
}

teardown()
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

# The pids of the etcdfs processes with @1 as an argument.  Builtins only:
# forking once per process in /proc would take seconds.
etcdfs_pids()
{
	local d arg

	for d in /proc/[0-9]*; do
		[[ $d/exe -ef $ETCDFS ]] || continue
		while IFS= read -r -d '' arg; do
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
# sets EXIT_STATUS.  Fails if it is still running.
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

@test "--help lists every option and exits 0" {
	local opt

	for flag in --help -h; do
		run --separate-stderr "$ETCDFS" "$flag"
		[ "$status" -eq 0 ]
		[[ ${lines[0]} == usage:*etcdfs*MOUNTPOINT ]]
		for opt in "${ETCDFS_OPTIONS[@]}"; do
			if ! grep -qE -- "-o $opt(=|[[:space:]])" <<<"$output"; then
				echo "$flag does not list -o $opt" >&2
				return 1
			fi
		done
		# then libfuse's own options
		grep -qE -- '^ +-f +foreground' <<<"$output"
		grep -qE -- '^ +-d +-o debug' <<<"$output"
		grep -qE -- '^ +-s ' <<<"$output"
		grep -qE -- '-o allow_other' <<<"$output"
		[ -z "$stderr" ]
	done
	not_mounted "$MNT"
}

@test "--version names etcdfs, libfuse, libcurl and jansson and exits 0" {
	for flag in --version -V; do
		run --separate-stderr "$ETCDFS" "$flag"
		[ "$status" -eq 0 ]
		[[ ${lines[0]} =~ ^etcdfs\ version\ [0-9]+\.[0-9]+\.[0-9]+ ]]
		grep -qE '^FUSE library version 3\.' <<<"$output"
		grep -qE '^libcurl/[0-9]' <<<"$output"
		grep -qE '^jansson version 2\.' <<<"$output"
	done
}

@test "no mountpoint: usage on stderr, exit 1" {
	expect_failure "^etcdfs: no mountpoint given.*usage:" \
		-o "endpoints=$ETCD_ENDPOINT"
	[ "$status" -eq 1 ]
}

@test "an unknown option is refused" {
	expect_failure "^etcdfs: unknown option 'foo'$" \
		-o "endpoints=$ETCD_ENDPOINT,foo" "$MNT"
	expect_failure "^etcdfs: unknown option 'nonempty'$" \
		-o "nonempty,endpoints=$ETCD_ENDPOINT" "$MNT"
	expect_failure "^etcdfs: unknown option '--frobnicate'$" \
		--frobnicate -o "endpoints=$ETCD_ENDPOINT" "$MNT"
	# a password never goes on the command line
	expect_failure "^etcdfs: unknown option 'password=x'$" \
		-o "endpoints=$ETCD_ENDPOINT,user=root,password=x" "$MNT"
	expect_failure "^etcdfs: a password does not belong on the command line" \
		-o "endpoints=$ETCD_ENDPOINT,user=root:x" "$MNT"
}

@test "a bad number is refused with the option's name and value" {
	local bad name value

	for bad in uid=x uid=-1 uid=4294967295 uid= gid=1.5 gid=0x10 \
		umask=8 umask=01000 umask=-22 connect_timeout=0 \
		connect_timeout=2s request_timeout=abc entry_timeout=-1 \
		entry_timeout=nan attr_timeout=1s attr_timeout=; do
		name=${bad%%=*}
		value=${bad#*=}
		expect_failure "^etcdfs: bad value for '$name': '$value'$" \
			-o "endpoints=$ETCD_ENDPOINT,$bad" "$MNT"
	done
	expect_failure "^etcdfs: bad value for 'api': 'v4'$" \
		-o "endpoints=$ETCD_ENDPOINT,api=v4" "$MNT"
}

@test "a mountpoint that does not exist is refused" {
	local mp=$BATS_TEST_TMPDIR/nothing/here

	MOUNTPOINTS+=("$mp")
	# libfuse's fuse_parse_cmdline() says so, quoting it as `this'
	expect_failure "bad mount ?point .$mp': No such file or directory$" \
		-o "endpoints=$ETCD_ENDPOINT" "$mp"
	[ ! -e "$mp" ]
}

@test "a mountpoint that is a file is refused" {
	local file=$BATS_TEST_TMPDIR/file

	MOUNTPOINTS+=("$file")
	echo data >"$file"
	expect_failure "^etcdfs: bad mountpoint '$file': not a directory$" \
		-o "endpoints=$ETCD_ENDPOINT" "$file"
	[ "$(cat "$file")" = data ]
	not_mounted "$file"
}

@test "an unreachable endpoint fails at once, before daemonizing" {
	local port ep

	port=$(etcd_free_port)
	ep=http://127.0.0.1:$port
	expect_failure "^etcdfs: cannot reach '$ep': .+" \
		-o "endpoints=$ep" "$MNT"
	[ "$status" -eq 1 ]
	# the default endpoint is 127.0.0.1:2379, which nothing here serves
	if ! curl -s --max-time 2 http://127.0.0.1:2379/health >/dev/null; then
		expect_failure "^etcdfs: cannot reach 'http://127.0.0.1:2379': .+" \
			"$MNT"
	fi
}

@test "an endpoint that accepts but never answers fails after request_timeout" {
	local port ep start

	# listens, so the connection is made, but never reads or answers
	python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
time.sleep(600)
' >"$BATS_TEST_TMPDIR/port" 3>&- &
	OTHER_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[[ -s $BATS_TEST_TMPDIR/port ]] && break
		sleep 0.05
	done
	port=$(cat "$BATS_TEST_TMPDIR/port")
	ep=http://127.0.0.1:$port
	start=$(date +%s%N)
	expect_failure "^etcdfs: cannot reach '$ep': .+" \
		-o "endpoints=$ep,request_timeout=500,connect_timeout=500" "$MNT"
	# bounded by the timeouts given, not by timeout(1)'s 10 s
	(( ($(date +%s%N) - start) / 1000000 < 5000 ))
}

@test "a malformed endpoint URL is refused before anything is sent" {
	local ep

	for ep in not-a-url 127.0.0.1:2379 ftp://127.0.0.1:2379 http:// \
		"http://:2379" "http://127.0.0.1:2379/v3"; do
		expect_failure "^etcdfs: bad endpoint '$ep': expected http://HOST:PORT" \
			-o "endpoints=$ep" "$MNT"
	done
	# one bad URL in a list spoils it, even next to a good one
	expect_failure "^etcdfs: bad endpoint 'http://': expected" \
		-o "endpoints=$ETCD_ENDPOINT,http://" "$MNT"
	expect_failure "^etcdfs: bad endpoint 'https://h/x': expected" \
		-o "endpoints=https://h/x,$ETCD_ENDPOINT" "$MNT"
	# -o splits at commas: a word that is no URL is no endpoint
	expect_failure "^etcdfs: unknown option 'bogus'$" \
		-o "endpoints=$ETCD_ENDPOINT,bogus" "$MNT"
	expect_failure "^etcdfs: bad endpoint ''" \
		-o "endpoints=" "$MNT"
}

@test "a password_file that does not exist is refused" {
	local pf=$BATS_TEST_TMPDIR/no-such-password

	expect_failure "^etcdfs: cannot read '$pf': No such file or directory$" \
		-o "endpoints=$ETCD_ENDPOINT,user=root,password_file=$pf" "$MNT"
	expect_failure "^etcdfs: password_file= needs user=$" \
		-o "endpoints=$ETCD_ENDPOINT,password_file=/dev/null" "$MNT"
	expect_failure "^etcdfs: user 'root' needs a password" \
		-o "endpoints=$ETCD_ENDPOINT,user=root" "$MNT"
}

@test "a TLS file that does not exist is refused" {
	local f=$BATS_TEST_TMPDIR/none.pem

	for opt in cacert cert key; do
		expect_failure "^etcdfs: cannot read '$f': No such file or directory$" \
			-o "endpoints=$ETCD_ENDPOINT,$opt=$f" "$MNT"
	done
}

@test "a good mount answers ls; SIGTERM unmounts it and exits 0" {
	put "$P/hello" world
	put "$P/dir/key" value

	start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix=$P"
	run ls "$MNT"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'dir\nhello')" ]
	[ "$(cat "$MNT/hello")" = world ]
	# /proc/mounts escapes '#' as \043
	[ "$(mount_field 1)" = "etcdfs\\043$ETCD_ENDPOINT" ]
	[ "$(mount_field 3)" = fuse.etcdfs ]
	grep -qw default_permissions <<<"$(mount_field 4)"

	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
	not_mounted "$MNT"
	quiet_log
	# the mountpoint is an empty directory again
	[ -z "$(ls -A "$MNT")" ]
}

@test "SIGINT and SIGHUP unmount cleanly too" {
	local sig

	put "$P/k" v
	for sig in INT HUP; do
		RESET_SIGNALS=1 start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix=$P"
		[ "$(ls "$MNT")" = k ]
		kill -"$sig" "$DAEMON_PID"
		wait_daemon
		echo "SIG$sig: exit status $EXIT_STATUS"
		[ "$EXIT_STATUS" -eq 0 ]
		not_mounted "$MNT"
		quiet_log
	done
}

@test "fusermount3 -u ends the daemon cleanly" {
	put "$P/k" v

	start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix=$P"
	[ "$(ls "$MNT")" = k ]
	fusermount3 -u "$MNT"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
	not_mounted "$MNT"
	quiet_log
}

@test "without -f it mounts, then returns 0 and serves from the background" {
	local pid i

	put "$P/k" v
	run --separate-stderr timeout 20 "$ETCDFS" "${API_ARGS[@]}" \
		-o "endpoints=$ETCD_ENDPOINT,prefix=$P" "$MNT" 3>&-
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -z "$stderr" ]
	# mounted by the time the command returns, not some time later
	is_mounted "$MNT"
	[ "$(cat "$MNT/k")" = v ]
	pid=$(etcdfs_pids "$MNT")
	[ -n "$pid" ]
	[ "$(wc -w <<<"$pid")" -eq 1 ]
	# a daemon: its own session, stdin and stdout on /dev/null, cwd /
	[ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ]
	[ "$(readlink "/proc/$pid/fd/0")" = /dev/null ]
	[ "$(readlink "/proc/$pid/fd/1")" = /dev/null ]
	[ "$(readlink "/proc/$pid/cwd")" = / ]

	fusermount3 -u "$MNT"
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	not_alive "$pid"
	not_mounted "$MNT"
}

@test "-d prints libfuse's request log and stays in the foreground" {
	put "$P/k" v

	start_daemon -d -o "endpoints=$ETCD_ENDPOINT,prefix=$P"
	[ "$(ls "$MNT")" = k ]
	# -d implies -f: the process we started is the one serving
	[ "$(etcdfs_pids "$MNT")" = "$DAEMON_PID" ]
	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
	grep -q 'opcode: INIT' "$LOG"
	grep -q 'opcode: READDIR' "$LOG"
}

@test "fstab-only words are ignored; mount options reach the kernel" {
	put "$P/k" v

	start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix=$P,_netdev,nofail,noauto,auto,user,users,defaults,x-systemd.automount,noexec,nosuid,nodev,noatime"
	[ "$(ls "$MNT")" = k ]
	mount_field 4
	grep -qw noexec <<<"$(mount_field 4)"
	grep -qw noatime <<<"$(mount_field 4)"
	fusermount3 -u "$MNT"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
	quiet_log
}

@test "endpoints= takes a comma list; a dead member is skipped" {
	local dead

	put "$P/k" v
	dead=http://127.0.0.1:$(etcd_free_port)
	for list in "$ETCD_ENDPOINT,$dead" "$dead,$ETCD_ENDPOINT"; do
		start_daemon -o "endpoints=$list,prefix=$P"
		[ "$(cat "$MNT/k")" = v ]
		# the name in /proc/mounts is the first endpoint
		[ "$(mount_field 1)" = "etcdfs\\043${list%%,*}" ]
		kill -TERM "$DAEMON_PID"
		wait_daemon
		[ "$EXIT_STATUS" -eq 0 ]
	done
}

@test "prefix= without a trailing '/' is a directory; empty is every key" {
	put "$P/a" 1
	put "${P}x/b" 2	# shares the bytes of the prefix, not the directory
	# v2 keys all start with '/'
	fs_v2 || put "nolead-$BATS_TEST_NUMBER" 3

	start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix=$P"
	[ "$(ls "$MNT")" = a ]
	kill -TERM "$DAEMON_PID"
	wait_daemon

	# the default prefix is "/": keys without a leading '/' are not shown
	start_daemon -o "endpoints=$ETCD_ENDPOINT"
	[ "$(cat "$MNT/$P/a")" = 1 ]
	[ "$(cat "$MNT/${P}x/b")" = 2 ]
	[ ! -e "$MNT/nolead-$BATS_TEST_NUMBER" ]
	kill -TERM "$DAEMON_PID"
	wait_daemon

	# prefix= (empty): the whole key space; the empty segment before the
	# leading '/' is the directory "%"
	start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix="
	fs_v2 || [ "$(cat "$MNT/nolead-$BATS_TEST_NUMBER")" = 3 ]
	[ "$(cat "$MNT/%/$P/a")" = 1 ]
	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
}

@test "user= with password_file= or ETCDFS_PASSWORD logs in; a wrong one fails" {
	local ep pf=$BATS_TEST_TMPDIR/password

	OWN_ETCD=$BATS_TEST_TMPDIR/etcd-auth
	ep=$(etcd_start "$OWN_ETCD" "${ETCD_ARGS[@]}")
	if fs_v2; then
		# v2 auth: root, and a guest role that may do nothing
		ETCDCTL_API=2 etcdctl --endpoints="$ep" user add root:s3cret \
			>/dev/null
		ETCDCTL_API=2 etcdctl --endpoints="$ep" auth enable >/dev/null
		ETCDCTL_API=2 etcdctl --endpoints="$ep" --username=root:s3cret \
			role revoke guest --path='/*' --readwrite >/dev/null
	else
		etcd_ctl "$OWN_ETCD" user add root --new-user-password=s3cret >/dev/null
		etcd_ctl "$OWN_ETCD" role add root >/dev/null 2>&1 || true
		etcd_ctl "$OWN_ETCD" user grant-role root root >/dev/null
		etcd_ctl "$OWN_ETCD" auth enable >/dev/null
	fi
	AUTH=s3cret own_put "$OWN_ETCD" /secret/k v

	printf 'wrong\n' >"$pf"
	expect_failure "^etcdfs: cannot log in to '$ep' as 'root': .+" \
		-o "endpoints=$ep,user=root,password_file=$pf" "$MNT"
	ETCDFS_PASSWORD=wrong expect_failure \
		"^etcdfs: cannot log in to '$ep' as 'root': .+" \
		-o "endpoints=$ep,user=root" "$MNT"
	# auth is on and no user was given
	expect_failure "^etcdfs: .*'$ep'" -o "endpoints=$ep" "$MNT"

	# the first line, without its line end, is the password
	printf 's3cret\r\nnot this\n' >"$pf"
	start_daemon -o "endpoints=$ep,user=root,password_file=$pf,prefix=/secret"
	[ "$(cat "$MNT/k")" = v ]
	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]

	ETCDFS_PASSWORD=s3cret start_daemon \
		-o "endpoints=$ep,user=root,prefix=/secret"
	[ "$(cat "$MNT/k")" = v ]
	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
	quiet_log
}

@test "cacert=, cert=, key= given as relative paths still work as a daemon" {
	local ep pid i w certs=$BATS_TEST_TMPDIR/certs
	local -a writers=()

	etcd_certs "$certs"
	OWN_ETCD=$BATS_TEST_TMPDIR/etcd-tls
	ep=$(etcd_start_tls "$OWN_ETCD" "$certs" "${ETCD_ARGS[@]}")
	own_put "$OWN_ETCD" /tls/k v

	cd "$certs"
	# a CA that did not sign the server's certificate
	expect_failure "^etcdfs: cannot [a-z ]+ '$ep': .+" \
		-o "endpoints=$ep,cacert=other-ca.pem,cert=client.pem,key=client-key.pem" \
		"$MNT"
	# no client certificate
	expect_failure "^etcdfs: cannot [a-z ]+ '$ep': .+" \
		-o "endpoints=$ep,cacert=ca.pem" "$MNT"

	# relative to where etcdfs started, even after the daemon's chdir("/")
	run --separate-stderr timeout 20 "$ETCDFS" "${API_ARGS[@]}" -o \
		"endpoints=$ep,cacert=ca.pem,cert=client.pem,key=client-key.pem,prefix=/tls" \
		"$MNT" 3>&-
	cd "$BATS_TEST_TMPDIR"
	echo "$stderr"
	[ "$status" -eq 0 ]
	pid=$(etcdfs_pids "$MNT")
	[ -n "$pid" ]
	# The mirror was loaded before the fork; what follows needs new TLS
	# connections, made after the daemon's chdir("/"): writes from
	# several FUSE threads at once, and the watch.
	for i in 1 2 3 4 5 6; do
		(echo "w$i" >"$MNT/w$i") &
		writers+=($!)
	done
	# by pid: a bare wait would also wait for bats' own timeout watchdog
	for w in "${writers[@]}"; do
		wait "$w"
	done
	for i in 1 2 3 4 5 6; do
		[ "$(own_get "$OWN_ETCD" /tls/w$i)" = "w$i" ]
	done
	own_put "$OWN_ETCD" /tls/remote r
	for ((i = 0; i < 200; i++)); do
		[[ $(cat "$MNT/remote" 2>/dev/null) == r ]] && break
		sleep 0.05
	done
	[ "$(cat "$MNT/remote")" = r ]

	pid=$(etcdfs_pids "$MNT")
	fusermount3 -u "$MNT"
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	not_alive "$pid"
}
