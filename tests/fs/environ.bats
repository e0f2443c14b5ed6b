#!/usr/bin/env bats
#
# tests/fs/environ.bats - the settings an operator's etcdctl already has:
# ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY,
# ETCDCTL_USER, ETCDCTL_PASSWORD, ETCDCTL_DIAL_TIMEOUT,
# ETCDCTL_COMMAND_TIMEOUT and ETCDCTL_INSECURE_SKIP_TLS_VERIFY, each
# honoured when its option is missing and ignored when it is given;
# timeouts as milliseconds and as etcdctl's durations; where -d says each
# setting came from; and -o logfile=.
#
# The harness is tests/lib/cmdline.bash (one etcd for the file, a prefix
# per test, nothing of the caller's environment); tests that need TLS or
# auth start an etcd of their own.  A variable is given to one etcdfs
# only, as VAR=value before the helper that runs it.

bats_require_minimum_version 1.5.0

load ../lib/cmdline

# The line -d logs for a setting: "etcdfs: NAME VALUE (from WHERE)".
logged()
{
	if ! grep -qF "etcdfs: $1 ($2)" "$LOG"; then
		echo "no line 'etcdfs: $1 ($2)' in:" >&2
		grep 'etcdfs: .*(from ' "$LOG" >&2
		return 1
	fi
}

# timed_failure ERE ARGS...: as expect_failure, and sets ELAPSED to the
# milliseconds etcdfs took (without the check for stray daemons, which
# reads every process).
timed_failure()
{
	local pattern=$1 start

	shift
	start=$(now_ms)
	run --separate-stderr timeout 10 "$ETCDFS" "${API_ARGS[@]}" "$@" 3>&-
	ELAPSED=$(($(now_ms) - start))
	echo "etcdfs $*: status $status after $ELAPSED ms: $stderr"
	[ "$status" -ne 124 ]
	[ "$status" -ne 0 ]
	[[ $stderr =~ $pattern ]]
	not_mounted "$MNT"
}

# start_full_server: a TCP listener on 127.0.0.1 whose accept queue is
# full, so that a connect to it never completes; sets FULL_PORT.
start_full_server()
{
	local i

	python3 -c '
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
port = s.getsockname()[1]
held = []
for i in range(3):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    held.append(c)
time.sleep(0.2)
print(port, flush=True)
time.sleep(600)
' >"$BATS_TEST_TMPDIR/full-port" 3>&- &
	OTHER_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[[ -s $BATS_TEST_TMPDIR/full-port ]] && break
		sleep 0.05
	done
	FULL_PORT=$(cat "$BATS_TEST_TMPDIR/full-port")
	[[ -n $FULL_PORT ]]
}

stop_daemon()
{
	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
}

@test "ETCDCTL_ENDPOINTS is used when neither endpoints= nor ENDPOINTS gives them" {
	local hostport=${ETCD_ENDPOINT#http://} dead

	put "$P/k" v
	dead=127.0.0.1:$(etcd_free_port)
	ETCDCTL_ENDPOINTS="$dead,$hostport" start_daemon -d -o "prefix=$P"
	[ "$(cat "$MNT/k")" = v ]
	[ "$(mount_field 1)" = "etcdfs\\043http://$dead" ]
	logged "endpoints http://$dead,$ETCD_ENDPOINT" "from ETCDCTL_ENDPOINTS"
	stop_daemon

	# the option wins, and then the variable is not even read
	for env in "$dead" "h:1/bad"; do
		ETCDCTL_ENDPOINTS=$env start_daemon -d \
			-o "endpoints=$hostport,prefix=$P"
		[ "$(cat "$MNT/k")" = v ]
		logged "endpoints $ETCD_ENDPOINT" "from -o endpoints="
		stop_daemon
	done
	# so does the ENDPOINTS argument
	ETCDCTL_ENDPOINTS=$ETCD_ENDPOINT expect_failure \
		"^etcdfs: cannot reach 'http://$dead': " "$dead" "$MNT"
	ETCDCTL_ENDPOINTS=$dead start_daemon -d -o "prefix=$P" "$hostport"
	logged "endpoints $ETCD_ENDPOINT" "from the ENDPOINTS argument"
	stop_daemon
	# a bad one is named, with the variable it came from
	ETCDCTL_ENDPOINTS=h:1/bad expect_failure \
		"^etcdfs: bad endpoint 'h:1/bad': a path is not allowed \(requests add their own\) \(in ETCDCTL_ENDPOINTS\)$" \
		"$MNT"
}

@test "ETCDCTL_DIAL_TIMEOUT and ETCDCTL_COMMAND_TIMEOUT bound requests unless an option does" {
	local ep

	start_silent_server
	ep=http://127.0.0.1:$SILENT_PORT
	# the server never answers: the request timeout ends it (default 5 s)
	ETCDCTL_DIAL_TIMEOUT=300ms ETCDCTL_COMMAND_TIMEOUT=400ms \
		timed_failure "^etcdfs: cannot reach '$ep': .+ timed out after 400 ms$" \
		"$ep" "$MNT"
	((ELAPSED < 3000))
	# an option wins: a variable of 20 s would outlast timeout(1)'s 10
	ETCDCTL_COMMAND_TIMEOUT=20s timed_failure \
		"^etcdfs: cannot reach '$ep': .+ timed out after 400 ms$" \
		-o request_timeout=400 "$ep" "$MNT"
	((ELAPSED < 3000))
	ETCDCTL_COMMAND_TIMEOUT=20s timed_failure \
		"^etcdfs: cannot reach '$ep': .+ timed out after 450 ms$" \
		-o command_timeout=450ms "$ep" "$MNT"
	((ELAPSED < 3000))

	# a listener whose queue is full: the connect itself never ends,
	# and the connect timeout (default 2 s) ends it
	start_full_server
	ep=http://127.0.0.1:$FULL_PORT
	ETCDCTL_DIAL_TIMEOUT=300ms timed_failure \
		"^etcdfs: cannot reach '$ep': .+" "$ep" "$MNT"
	((ELAPSED < 1500))
	ETCDCTL_DIAL_TIMEOUT=20s timed_failure \
		"^etcdfs: cannot reach '$ep': .+" -o dial_timeout=300ms "$ep" "$MNT"
	((ELAPSED < 1500))

	# with -d, each says where it came from
	put "$P/k" v
	ETCDCTL_DIAL_TIMEOUT=1500ms ETCDCTL_COMMAND_TIMEOUT=9s \
		start_daemon -d -o "command_timeout=3s,prefix=$P" \
		"$ETCD_ENDPOINT"
	logged "connect_timeout 1500 ms" "from ETCDCTL_DIAL_TIMEOUT"
	logged "request_timeout 3000 ms" "from -o command_timeout="
	stop_daemon
	start_daemon -d -o "prefix=$P" "$ETCD_ENDPOINT"
	logged "connect_timeout 2000 ms" "from the default"
	logged "request_timeout 5000 ms" "from the default"
	stop_daemon

	# a bad value in a variable is refused, naming it; unless the
	# option is given, when the variable is not read
	ETCDCTL_DIAL_TIMEOUT=2x expect_failure \
		"^etcdfs: bad value for ETCDCTL_DIAL_TIMEOUT: '2x': expected milliseconds or a duration such as 500ms, 2s or 1m30s$" \
		"$ETCD_ENDPOINT" "$MNT"
	ETCDCTL_COMMAND_TIMEOUT=0s expect_failure \
		"^etcdfs: bad value for ETCDCTL_COMMAND_TIMEOUT: '0s': a timeout is 1ms to 1h$" \
		"$ETCD_ENDPOINT" "$MNT"
	ETCDCTL_DIAL_TIMEOUT=2x start_daemon -o "dial_timeout=2s,prefix=$P" \
		"$ETCD_ENDPOINT"
	[ "$(cat "$MNT/k")" = v ]
	stop_daemon
	quiet_log
}

@test "timeouts take milliseconds and etcdctl's durations" {
	local pair d ms

	put "$P/k" v
	for pair in 2000:2000 500ms:500 2s:2000 1m:60000 1m30s:90000 \
		1.5s:1500 1h:3600000 2500000us:2500 1s500ms:1500; do
		d=${pair%%:*}
		ms=${pair#*:}
		start_daemon -d -o "request_timeout=$d,dial_timeout=$d,prefix=$P" \
			"$ETCD_ENDPOINT"
		[ "$(cat "$MNT/k")" = v ]
		logged "request_timeout $ms ms" "from -o request_timeout="
		logged "connect_timeout $ms ms" "from -o dial_timeout="
		stop_daemon
	done
}

# bad_timeouts NAME: every malformed or out-of-range value of -o NAME= is
# refused with its message.  One test a name: each is some 15 runs of
# etcdfs, and all four in one case came near the 120 s a case may take on
# a loaded machine.
bad_timeouts()
{
	local name=$1 bad

	for bad in 2x 2S 2sec 1.5 -1s s 1e3ms " 2s" "2 s" ""; do
		expect_failure \
			"^etcdfs: bad value for '$name': '$bad': expected milliseconds or a duration such as 500ms, 2s or 1m30s$" \
			-o "$name=$bad" "$ETCD_ENDPOINT" "$MNT"
	done
	for bad in 0 0s 500us 1h1ms 3600001; do
		expect_failure \
			"^etcdfs: bad value for '$name': '$bad': a timeout is 1ms to 1h$" \
			-o "$name=$bad" "$ETCD_ENDPOINT" "$MNT"
	done
}

@test "bad values of connect_timeout= are refused" {
	bad_timeouts connect_timeout
}

@test "bad values of dial_timeout= are refused" {
	bad_timeouts dial_timeout
}

@test "bad values of request_timeout= are refused" {
	bad_timeouts request_timeout
}

@test "bad values of command_timeout= are refused" {
	bad_timeouts command_timeout
}

@test "ETCDCTL_CACERT, ETCDCTL_CERT and ETCDCTL_KEY give TLS; the options win" {
	local ep hp certs=$BATS_TEST_TMPDIR/certs

	etcd_certs "$certs"
	OWN_ETCD=$BATS_TEST_TMPDIR/etcd-tls
	ep=$(etcd_start_tls "$OWN_ETCD" "$certs" "${ETCD_ARGS[@]}")
	own_put "$OWN_ETCD" /tls/k v
	hp=${ep#https://}

	# etcdctl's HOST:PORT is https:// once TLS is configured
	ETCDCTL_CACERT=$certs/ca.pem ETCDCTL_CERT=$certs/client.pem \
		ETCDCTL_KEY=$certs/client-key.pem start_daemon -d \
		-o prefix=/tls "$hp"
	[ "$(cat "$MNT/k")" = v ]
	[ "$(mount_field 1)" = "etcdfs\\043$ep" ]
	logged "cacert $certs/ca.pem" "from ETCDCTL_CACERT"
	logged "cert $certs/client.pem" "from ETCDCTL_CERT"
	logged "key $certs/client-key.pem" "from ETCDCTL_KEY"
	stop_daemon

	# the options win: a CA that did not sign the server's certificate,
	# a client certificate the server does not trust
	ETCDCTL_CACERT=$certs/ca.pem ETCDCTL_CERT=$certs/client.pem \
		ETCDCTL_KEY=$certs/client-key.pem expect_failure \
		"^etcdfs: cannot [a-z ]+ '$ep': .+" \
		-o "cacert=$certs/other-ca.pem" "$hp" "$MNT"
	ETCDCTL_CACERT=$certs/ca.pem ETCDCTL_CERT=$certs/client.pem \
		ETCDCTL_KEY=$certs/client-key.pem expect_failure \
		"^etcdfs: cannot [a-z ]+ '$ep': .+" \
		-o "cert=$certs/other-client.pem,key=$certs/other-client-key.pem" \
		"$hp" "$MNT"
	# and the variables alone, right, as above; wrong:
	ETCDCTL_CACERT=$certs/other-ca.pem ETCDCTL_CERT=$certs/client.pem \
		ETCDCTL_KEY=$certs/client-key.pem expect_failure \
		"^etcdfs: cannot [a-z ]+ '$ep': .+" "$hp" "$MNT"
	ETCDCTL_CACERT=$BATS_TEST_TMPDIR/none.pem expect_failure \
		"^etcdfs: cannot read '$BATS_TEST_TMPDIR/none.pem': No such file or directory$" \
		"$hp" "$MNT"
	ETCDCTL_KEY=$certs/client-key.pem expect_failure \
		"^etcdfs: a client key \(key= or ETCDCTL_KEY\) needs its certificate \(cert= or ETCDCTL_CERT\)$" \
		"$hp" "$MNT"
}

@test "ETCDCTL_INSECURE_SKIP_TLS_VERIFY and insecure_skip_tls_verify accept any server certificate, loudly" {
	local ep hp certs=$BATS_TEST_TMPDIR/certs v
	local client

	etcd_certs "$certs"
	OWN_ETCD=$BATS_TEST_TMPDIR/etcd-tls
	ep=$(etcd_start_tls "$OWN_ETCD" "$certs" "${ETCD_ARGS[@]}")
	own_put "$OWN_ETCD" /tls/k v
	hp=${ep#https://}
	client="cert=$certs/client.pem,key=$certs/client-key.pem"

	# the system's CAs do not know the test's
	expect_failure "^etcdfs: cannot [a-z ]+ '$ep': .+" -o "$client" "$hp" "$MNT"
	for v in false 0 F; do
		ETCDCTL_INSECURE_SKIP_TLS_VERIFY=$v expect_failure \
			"^etcdfs: cannot [a-z ]+ '$ep': .+" -o "$client" "$hp" "$MNT"
	done
	for v in true 1 TRUE; do
		ETCDCTL_INSECURE_SKIP_TLS_VERIFY=$v start_daemon \
			-o "$client,prefix=/tls" "$hp"
		[ "$(cat "$MNT/k")" = v ]
		grep -q "^etcdfs: warning: insecure_skip_tls_verify: the server's certificate is not checked" "$LOG"
		stop_daemon
	done
	start_daemon -o "insecure_skip_tls_verify,$client,prefix=/tls" "$hp"
	[ "$(cat "$MNT/k")" = v ]
	grep -q "^etcdfs: warning: insecure_skip_tls_verify" "$LOG"
	stop_daemon
	ETCDCTL_INSECURE_SKIP_TLS_VERIFY=maybe expect_failure \
		"^etcdfs: bad value for ETCDCTL_INSECURE_SKIP_TLS_VERIFY: 'maybe': expected true or false$" \
		"$ETCD_ENDPOINT" "$MNT"
}

@test "ETCDCTL_USER and ETCDCTL_PASSWORD log in as etcdctl takes them; user= and password_file= win" {
	local ep pf=$BATS_TEST_TMPDIR/password

	OWN_ETCD=$BATS_TEST_TMPDIR/etcd-auth
	ep=$(start_auth_etcd "$OWN_ETCD")

	# NAME:PASSWORD, or NAME with ETCDCTL_PASSWORD
	ETCDCTL_USER=root:s3cret start_daemon -d -o prefix=/secret "$ep"
	[ "$(cat "$MNT/k")" = v ]
	grep -qF "etcdfs: user 'root' (from ETCDCTL_USER), password from ETCDCTL_USER" "$LOG"
	# never the password itself
	! grep -q s3cret "$LOG" || false
	stop_daemon
	ETCDCTL_USER=root ETCDCTL_PASSWORD=s3cret start_daemon -d \
		-o prefix=/secret "$ep"
	[ "$(cat "$MNT/k")" = v ]
	grep -qF "password from ETCDCTL_PASSWORD" "$LOG"
	stop_daemon

	ETCDCTL_USER=root:wrong expect_failure \
		"^etcdfs: cannot log in to '$ep' as 'root': .+" "$ep" "$MNT"
	ETCDCTL_USER=root ETCDCTL_PASSWORD=wrong expect_failure \
		"^etcdfs: cannot log in to '$ep' as 'root': .+" "$ep" "$MNT"
	ETCDCTL_USER=root expect_failure \
		"^etcdfs: user 'root' needs a password: use password_file=, ETCDFS_PASSWORD or ETCDCTL_PASSWORD$" \
		"$ep" "$MNT"

	# the options win: another user's NAME:PASSWORD is not root's
	printf 's3cret\n' >"$pf"
	ETCDCTL_USER=alice:x start_daemon \
		-o "user=root,password_file=$pf,prefix=/secret" "$ep"
	[ "$(cat "$MNT/k")" = v ]
	stop_daemon
	ETCDCTL_USER=alice:x expect_failure \
		"^etcdfs: user 'root' needs a password" -o user=root "$ep" "$MNT"
	# a password file wins over every variable
	printf 'wrong\n' >"$pf"
	ETCDCTL_USER=root ETCDCTL_PASSWORD=s3cret expect_failure \
		"^etcdfs: cannot log in to '$ep' as 'root': .+" \
		-o "password_file=$pf" "$ep" "$MNT"
	# with ETCDCTL_PASSWORD, ETCDCTL_USER is the whole name, as etcdctl
	# takes --user with --password
	ETCDCTL_USER=root:s3cret ETCDCTL_PASSWORD=s3cret expect_failure \
		"^etcdfs: cannot log in to '$ep' as 'root:s3cret': .+" \
		"$ep" "$MNT"
	# and etcdfs's own variable over etcdctl's
	ETCDCTL_USER=root:wrong ETCDFS_PASSWORD=s3cret start_daemon \
		-o prefix=/secret "$ep"
	[ "$(cat "$MNT/k")" = v ]
	stop_daemon
	quiet_log
}

@test "-o logfile= takes the messages, with the time and pid, never a doubled prefix" {
	local lf=$BATS_TEST_TMPDIR/logs/etcdfs.log pid i

	put "$P/k" v
	mkdir -p "$BATS_TEST_TMPDIR/logs"
	# in the background: the file, not syslog; it need not exist yet
	run --separate-stderr timeout 20 "$ETCDFS" "${API_ARGS[@]}" \
		-o "prefix=$P,logfile=$lf" "$ETCD_ENDPOINT" "$MNT" 3>&-
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(cat "$MNT/k")" = v ]
	pid=$(etcdfs_pids "$MNT")
	[ -n "$pid" ]
	fusermount3 -u "$MNT"
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	not_alive "$pid"
	cat "$lf"
	grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} etcdfs\[$pid\]: serving $ETCD_ENDPOINT at $MNT$" "$lf"
	grep -qE " etcdfs\[$pid\]: unmounting $MNT \(unmounted\)$" "$lf"
	! grep -q 'etcdfs: ' "$lf" || false

	# in the foreground too: after the mount, only the file
	start_daemon -d -o "prefix=$P,logfile=$lf" "$ETCD_ENDPOINT"
	[ "$(cat "$MNT/k")" = v ]
	stop_daemon
	grep -q 'opcode: LOOKUP' "$lf"
	! grep -q 'opcode: LOOKUP' "$LOG" || false
	! grep -q 'etcdfs: ' "$lf" || false

	# what fails before the mount is on the terminal as well
	expect_failure "^etcdfs: cannot reach 'http://127.0.0.1:1': " \
		-o "logfile=$lf" 127.0.0.1:1 "$MNT"
	grep -q "etcdfs\[[0-9]*\]: cannot reach 'http://127.0.0.1:1': " "$lf"
	expect_failure "^etcdfs: cannot write '$BATS_TEST_TMPDIR/none/x.log': No such file or directory$" \
		-o "logfile=$BATS_TEST_TMPDIR/none/x.log" "$ETCD_ENDPOINT" "$MNT"
}
