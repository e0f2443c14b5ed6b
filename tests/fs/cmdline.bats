#!/usr/bin/env bats
#
# tests/fs/cmdline.bats - the etcdfs command line: --help, --version, bad
# options and mountpoints, unreachable or malformed endpoints, passwords,
# TLS files, and the life of a mount (foreground, daemon, -d), ended by
# SIGTERM, SIGINT, SIGHUP or fusermount3 -u.
#
# The harness is tests/lib/cmdline.bash: one etcd for the file, a prefix
# per test; tests that need auth or TLS start an etcd of their own.  Every
# failure case that is not about the endpoint points etcdfs at a live
# etcd, so that it fails only because of what the test got wrong on
# purpose, and runs it without -f, so that a check done too late would
# show as a daemon that mounted and exited 0.
#
# It does not test what the options do to files (ro, uid, umask: see
# basic.bats), only that they are taken, refused or passed on.
#
# With ETCDFS_API=v2 every etcd runs with --enable-v2=true, every etcdfs
# gets -o api=v2 first, keys are written over /v2/keys, and the login test
# turns on v2 auth (basic auth; the guest role loses its rights) instead
# of v3's.

load ../lib/cmdline

@test "--help lists every option and exits 0" {
	local opt

	for flag in --help -h; do
		run --separate-stderr "$ETCDFS" "$flag"
		[ "$status" -eq 0 ]
		[[ ${lines[0]} == usage:*etcdfs*MOUNTPOINT ]]
		for opt in "${ETCDFS_OPTIONS[@]}"; do
			if ! grep -qE -- "-o $opt(=|[[:space:]]|$)" <<<"$output"; then
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

@test "--help names the extended attributes and what writing one does" {
	local name

	run --separate-stderr "$ETCDFS" --help
	[ "$status" -eq 0 ]
	for name in user.etcd.resourceVersion user.etcd.lease user.etcd.pin \
		user.etcd.ttl user.etcd.history user.k8s.apiVersion \
		user.k8s.kind user.etcd.stats; do
		if ! grep -qE -- "(^|[ ,])$name([ ,:]|$)" <<<"$output"; then
			echo "--help does not name $name" >&2
			return 1
		fi
	done
	# a time to live is set, and made permanent again, with setfattr
	grep -qE -- '^ +user\.etcd\.ttl +.*seconds' <<<"$output"
	grep -qE -- 'setfattr -x' <<<"$output"
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

	# timeouts: see environ.bats
	for bad in uid=x uid=-1 uid=4294967295 uid= gid=1.5 gid=0x10 \
		umask=8 umask=01000 umask=-22 entry_timeout=-1 \
		entry_timeout=nan attr_timeout=1s attr_timeout= \
		value_budget=1T cacert= logfile=; do
		name=${bad%%=*}
		value=${bad#*=}
		expect_failure "^etcdfs: bad value for '$name': '$value'$" \
			-o "endpoints=$ETCD_ENDPOINT,$bad" "$MNT"
	done
	expect_failure "^etcdfs: bad value for 'api': 'v4'$" \
		-o "endpoints=$ETCD_ENDPOINT,api=v4" "$MNT"
}

@test "a bad temp_names list is refused with what is wrong with it" {
	local bad

	for bad in '' 'a::b' '*.part:' ':*.part'; do
		expect_failure "^etcdfs: bad value for 'temp_names': '$(
			sed 's/[*.]/\\&/g' <<<"$bad")': an empty pattern$" \
			-o "endpoints=$ETCD_ENDPOINT,temp_names=$bad" "$MNT"
	done
	expect_failure "^etcdfs: bad value for 'temp_names': 'tmp/\\*': a pattern matches one name, without '/'$" \
		-o "endpoints=$ETCD_ENDPOINT,temp_names=tmp/*" "$MNT"
}

@test "a codec that cannot be run, or a codec_prefix without one, is refused" {
	local codec=$TESTS_DIR/lib/testcodec

	expect_failure "^etcdfs: bad value for 'codec': '/no/such/codec': no such executable file$" \
		-o "endpoints=$ETCD_ENDPOINT,codec=/no/such/codec" "$MNT"
	expect_failure "^etcdfs: bad value for 'codec': 'no-such-codec-here': not found in PATH$" \
		-o "endpoints=$ETCD_ENDPOINT,codec=no-such-codec-here" "$MNT"
	# a file that is not executable
	expect_failure "^etcdfs: bad value for 'codec': '$TESTS_DIR/lib/mount.bash': no such executable file$" \
		-o "endpoints=$ETCD_ENDPOINT,codec=$TESTS_DIR/lib/mount.bash" "$MNT"
	expect_failure "^etcdfs: bad value for 'codec': '': a program's path or name$" \
		-o "endpoints=$ETCD_ENDPOINT,codec=" "$MNT"
	expect_failure "^etcdfs: bad value for 'codec': '$codec decode': a program's path or name, without arguments$" \
		-o "endpoints=$ETCD_ENDPOINT,codec=$codec decode" "$MNT"
	expect_failure "^etcdfs: 'codec_prefix=' needs 'codec=PROG' or 'k8s'$" \
		-o "endpoints=$ETCD_ENDPOINT,codec_prefix=/registry/" "$MNT"
	expect_failure "^etcdfs: bad value for 'codec_prefix': '/other/': no key of the mount's prefix '/registry/' starts with it$" \
		-o "endpoints=$ETCD_ENDPOINT,prefix=/registry,codec=$codec,codec_prefix=/other/" "$MNT"
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
	local ep start

	# listens, so the connection is made, but never reads or answers
	start_silent_server
	ep=http://127.0.0.1:$SILENT_PORT
	start=$(date +%s%N)
	expect_failure "^etcdfs: cannot reach '$ep': .+" \
		-o "endpoints=$ep,request_timeout=500,connect_timeout=500" "$MNT"
	# bounded by the timeouts given, not by timeout(1)'s 10 s
	(( ($(date +%s%N) - start) / 1000000 < 5000 ))
}

@test "a malformed endpoint is refused before anything is sent, and named" {
	local ep why

	while IFS='|' read -r ep why; do
		expect_failure "^etcdfs: bad endpoint '$ep': $why" \
			-o "endpoints=$ep" "$MNT"
	done <<'EOF'
not-a-url|expected http://HOST:PORT, https://HOST:PORT or HOST:PORT$
127.0.0.1|expected http://HOST:PORT
ftp://127.0.0.1:2379|the scheme must be http:// or https://$
http://|no host$
http://:2379|no host$
http://127.0.0.1:2379/v3|a path is not allowed
127.0.0.1:2379/v3|a path is not allowed
http://127.0.0.1:2379/#top|a query or a fragment is not allowed$
http://root:pw@127.0.0.1:2379|user@ is not allowed
127.0.0.1:0|bad port: expected 1 to 65535$
127.0.0.1:65536|bad port
::1:2379|an IPv6 address goes in brackets: \[::1\]:2379$
EOF
	expect_failure "^etcdfs: bad endpoint 'h:1\?x=1': a query" \
		-o "endpoints=h:1?x=1" "$MNT"
	# one bad URL in a list spoils it, even next to a good one
	expect_failure "^etcdfs: bad endpoint 'http://': no host" \
		-o "endpoints=$ETCD_ENDPOINT,http://" "$MNT"
	expect_failure "^etcdfs: bad endpoint 'https://h/x': a path" \
		-o "endpoints=https://h/x,$ETCD_ENDPOINT" "$MNT"
	# -o splits at commas: a word that is no endpoint is no endpoint
	expect_failure "^etcdfs: unknown option 'bogus'$" \
		-o "endpoints=$ETCD_ENDPOINT,bogus" "$MNT"
	expect_failure "^etcdfs: bad endpoint '': none given$" \
		-o "endpoints=" "$MNT"
	expect_failure "^etcdfs: bad endpoint '': an empty entry in '$ETCD_ENDPOINT,,$ETCD_ENDPOINT'" \
		"$ETCD_ENDPOINT,,$ETCD_ENDPOINT" "$MNT"
}

@test "ENDPOINTS before the mountpoint: URLs or etcdctl's HOST:PORT" {
	local hostport=${ETCD_ENDPOINT#http://} dead src first

	put "$P/k" v
	dead=127.0.0.1:$(etcd_free_port)
	for src in "$ETCD_ENDPOINT" "$hostport" "$dead,$hostport" \
		"http://$dead/,$ETCD_ENDPOINT/"; do
		start_daemon -o "prefix=$P" "$src"
		[ "$(cat "$MNT/k")" = v ]
		# the name in /proc/mounts is the first endpoint, as a URL
		first=${src%%,*}
		first=${first#http://}
		[ "$(mount_field 1)" = "etcdfs\\043http://${first%/}" ]
		kill -TERM "$DAEMON_PID"
		wait_daemon
		[ "$EXIT_STATUS" -eq 0 ]
		quiet_log
	done
	# -o splits at commas: HOST:PORT words join endpoints= too
	start_daemon -o "endpoints=$dead,$hostport,prefix=$P"
	[ "$(cat "$MNT/k")" = v ]
	kill -TERM "$DAEMON_PID"
	wait_daemon
}

@test "-o endpoints= wins over the ENDPOINTS argument, which is then not read" {
	local src

	put "$P/k" v
	# a placeholder, as fstab lines without a source have
	for src in "127.0.0.1:$(etcd_free_port)" etcdfs "http://x/y?z"; do
		start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix=$P" "$src"
		[ "$(cat "$MNT/k")" = v ]
		[ "$(mount_field 1)" = "etcdfs\\043$ETCD_ENDPOINT" ]
		kill -TERM "$DAEMON_PID"
		wait_daemon
		[ "$EXIT_STATUS" -eq 0 ]
	done
}

@test "a bad ENDPOINTS argument is named; a third argument is refused" {
	expect_failure "^etcdfs: bad endpoint 'h:1/x': a path is not allowed \(requests add their own\) \(in the ENDPOINTS argument\)$" \
		h:1/x "$MNT"
	expect_failure "^etcdfs: unexpected argument '$MNT'$" \
		"$ETCD_ENDPOINT" "$MNT" "$MNT"
	# before the mountpoint, where mount(8) puts the source
	expect_failure "^etcdfs: cannot reach 'http://127.0.0.1:1': " \
		127.0.0.1:1 -o "prefix=$P" "$MNT"
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

	start_daemon -o "endpoints=$ETCD_ENDPOINT,prefix=$P,_netdev,nofail,noauto,auto,user,users,owner,group,defaults,comment=etcd,x-systemd.automount,x-mount.mkdir,X-foo=1,noexec,nosuid,nodev,noatime"
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
	ep=$(start_auth_etcd "$OWN_ETCD")

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
	# the replay of the remote put holds a file of the mount open for a
	# moment: an unmount then would be busy
	for ((i = 0; i < 200; i++)); do
		getfattr --only-values -n user.etcd.stats "$MNT" |
			grep -qx 'echo_pending 0' && break
		sleep 0.05
	done
	getfattr --only-values -n user.etcd.stats "$MNT" |
		grep -qx 'echo_pending 0'

	pid=$(etcdfs_pids "$MNT")
	fusermount3 -u "$MNT"
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	not_alive "$pid"
}
