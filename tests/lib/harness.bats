#!/usr/bin/env bats
#
# tests/lib/harness.bats - the test harness itself: tests/lib/etcd.sh,
# tests/lib/with-etcd and tests/lib/garbage-server.py
#
# Every other integration test stands on these; a harness that leaves an
# etcd behind, loses an exit status or hangs on a signal would hide real
# failures.  Cannot test tests/lib/deps.sh's install path (needs apt).

bats_require_minimum_version 1.5.0

setup()
{
	lib=${TESTS_DIR:?TESTS_DIR must name the tests/ dir}/lib
	. "$lib/etcd.sh"
	work=$BATS_TEST_TMPDIR
}

teardown()
{
	local d

	# whatever a failed case left running
	for d in "$work"/*/; do
		[[ -f $d/pid ]] && etcd_stop "$d"
	done
	return 0
}

# True while the process @1 exists and is not a zombie.
alive()
{
	kill -0 "$1" 2>/dev/null &&
		[[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

# True once it is gone.  (A bare "! alive" would not fail a bats test:
# set -e ignores a negated command.)
dead()
{
	! alive "$1" || false
}

@test "etcd_free_port gives a port nothing listens on" {
	port=$(etcd_free_port)
	[[ $port =~ ^[0-9]+$ ]]
	((port > 0 && port < 65536))
	run -7 curl -s --max-time 2 "http://127.0.0.1:$port/"
}

@test "etcd_start answers, records pid and endpoint; etcd_stop stops it" {
	ep=$(etcd_start "$work/e")
	[[ $ep =~ ^http://127\.0\.0\.1:[0-9]+$ ]]
	[[ $(cat "$work/e/endpoint") == "$ep" ]]
	pid=$(cat "$work/e/pid")
	alive "$pid"
	etcd_ctl "$work/e" put k v
	[[ $(etcd_ctl "$work/e" get k --print-value-only) == v ]]
	[[ -s $work/e/etcd.log ]]
	etcd_stop "$work/e"
	dead "$pid"
	[[ ! -e $work/e/pid ]]
	# stopping twice is fine
	etcd_stop "$work/e"
}

@test "two etcds side by side get different ports" {
	a=$(etcd_start "$work/a")
	b=$(etcd_start "$work/b")
	[[ $a != "$b" ]]
	etcd_ctl "$work/a" put k in-a
	run etcd_ctl "$work/b" get k --print-value-only
	[[ -z $output ]]
	etcd_stop "$work/a"
	etcd_stop "$work/b"
}

@test "an etcd whose free port another etcd took starts on other ports, not as that one" {
	a=$(etcd_start "$work/a")
	# the first pair of ports has a's client port, as when two tests are
	# given the same free port at once
	taken=${a##*:}
	# the pairs after it are the real ones
	real_pair=$(declare -f _etcd_free_port_pair | tail -n +2)
	eval "_etcd_real_pair() $real_pair"
	_etcd_free_port_pair()
	{
		if [[ ! -e $work/given ]]; then
			: >"$work/given"
			echo "$taken $(etcd_free_port)"
		else
			_etcd_real_pair
		fi
	}
	b=$(etcd_start "$work/b")
	[[ -e $work/given ]]
	[[ $b != "$a" ]]
	alive "$(cat "$work/b/pid")"
	grep -q 'address already in use' "$work/b/etcd.log"
	etcd_ctl "$work/b" put k in-b
	run etcd_ctl "$work/a" get k --print-value-only
	[[ -z $output ]]
	etcd_stop "$work/a"
	etcd_stop "$work/b"
}

@test "etcd_start passes extra arguments to etcd" {
	etcd_start "$work/e" --max-request-bytes=4096 >/dev/null
	etcd_ctl "$work/e" put small "$(head -c 1000 /dev/zero | tr '\0' x)"
	run etcd_ctl "$work/e" put big "$(head -c 8000 /dev/zero | tr '\0' x)"
	[[ $status -ne 0 ]]
	[[ $output == *"request is too large"* ]]
	etcd_stop "$work/e"
}

@test "etcd_start fails with the log's tail when etcd cannot start" {
	run etcd_start "$work/e" --no-such-flag
	[[ $status -ne 0 ]]
	[[ $output == *"exited at start"* ]]
	[[ $output == *"no-such-flag"* ]]
	[[ ! -e $work/e/pid ]]
}

@test "etcd_stop leaves alone a recycled pid that is not its etcd" {
	mkdir -p "$work/x"
	sleep 30 &
	pid=$!
	echo "$pid" >"$work/x/pid"
	etcd_stop "$work/x"
	alive "$pid"
	kill "$pid"
	wait "$pid" || true
}

@test "the command form starts and stops an etcd" {
	ep=$("$lib/etcd.sh" start "$work/c")
	pid=$(cat "$work/c/pid")
	alive "$pid"
	[[ $("$lib/etcd.sh" endpoint "$work/c") == "$ep" ]]
	"$lib/etcd.sh" ctl "$work/c" put x y
	"$lib/etcd.sh" stop "$work/c"
	dead "$pid"
	run -2 "$lib/etcd.sh" bogus
}

@test "etcd_certs makes a CA, a server and client certificate, and a stranger" {
	etcd_certs "$work/certs"
	cd "$work/certs"
	openssl verify -CAfile ca.pem server.pem client.pem
	openssl verify -CAfile other-ca.pem other-client.pem
	run openssl verify -CAfile other-ca.pem server.pem
	[[ $status -ne 0 ]]
	san=$(openssl x509 -in server.pem -noout -ext subjectAltName)
	[[ $san == *"IP Address:127.0.0.1"* ]]
	[[ $san == *"DNS:localhost"* ]]
	openssl x509 -in client.pem -noout -ext extendedKeyUsage |
		grep -q "TLS Web Client Authentication"
}

@test "etcd_start_tls requires a client certificate from the CA" {
	etcd_certs "$work/certs"
	ep=$(etcd_start_tls "$work/t" "$work/certs")
	[[ $ep == https://127.0.0.1:* ]]
	etcd_ctl "$work/t" put k v
	c=$work/certs
	curl -sf --cacert "$c/ca.pem" --cert "$c/client.pem" \
		--key "$c/client-key.pem" "$ep/health"
	run curl -sf --cacert "$c/ca.pem" "$ep/health"
	[[ $status -ne 0 ]]
	run curl -sf --cacert "$c/ca.pem" --cert "$c/other-client.pem" \
		--key "$c/other-client-key.pem" "$ep/health"
	[[ $status -ne 0 ]]
	run curl -sf --cacert "$c/other-ca.pem" --cert "$c/client.pem" \
		--key "$c/client-key.pem" "$ep/health"
	[[ $status -ne 0 ]]
	etcd_stop "$work/t"
}

@test "with-etcd gives the command an etcd and its status back" {
	run -7 "$lib/with-etcd" bash -c '
		[[ $ETCDFS_TEST_ENDPOINTS == http://127.0.0.1:* ]] || exit 1
		[[ $ETCDCTL_ENDPOINTS == "$ETCDFS_TEST_ENDPOINTS" ]] || exit 2
		[[ $ETCDCTL_API == 3 ]] || exit 3
		[[ -d $ETCDFS_TEST_DIR ]] || exit 4
		etcdctl put k v >/dev/null || exit 5
		[[ $(etcdctl get k --print-value-only) == v ]] || exit 6
		echo "dir=$ETCDFS_TEST_DIR"
		exit 7'
	dir=${output##*dir=}
	[[ -n $dir && ! -e $dir ]]
}

@test "with-etcd passes stdin on" {
	out=$(echo hello | "$lib/with-etcd" cat)
	[[ $out == hello ]]
}

@test "with-etcd stops everything on SIGTERM" {
	"$lib/with-etcd" bash -c '
		echo "$ETCDFS_TEST_DIR" >"$0/dir"
		echo $$ >"$0/child"
		"$1/etcd.sh" start "$ETCDFS_TEST_DIR/extra" >/dev/null
		exec sleep 60' "$work" "$lib" 3>&- &
	w=$!
	for _ in $(seq 100); do
		[[ -s $work/child && -s $(cat "$work/dir" 2>/dev/null)/extra/pid ]] &&
			break
		sleep 0.1
	done
	dir=$(cat "$work/dir")
	child=$(cat "$work/child")
	extra=$(cat "$dir/extra/pid")
	main=$(cat "$dir/../etcd/pid")
	alive "$extra"
	alive "$main"
	kill -TERM "$w"
	rc=0
	wait "$w" || rc=$?
	[[ $rc -eq 143 ]]
	dead "$child"
	dead "$extra"
	dead "$main"
	[[ ! -e $dir ]]
}

@test "garbage-server prints a port and answers as its mode says" {
	coproc GS { exec python3 "$lib/garbage-server.py" notjson 3>&-; }
	read -r -t 10 port <&"${GS[0]}"
	[[ $port =~ ^[0-9]+$ ]]
	out=$(curl -s --max-time 5 -X POST -d '{}' "http://127.0.0.1:$port/v3/kv/range")
	[[ $out == "this is not json"* ]]
	kill -TERM "$GS_PID"
	wait "$GS_PID" || true
	dead "$GS_PID"
}

@test "garbage-server: silent never answers, close closes, short cuts off" {
	for mode in silent close short; do
		coproc GS { exec python3 "$lib/garbage-server.py" "$mode" 3>&-; }
		read -r -t 10 port <&"${GS[0]}"
		run curl -s --max-time 1 "http://127.0.0.1:$port/"
		case $mode in
		silent) [[ $status -eq 28 ]] ;;
		close) [[ $status -eq 52 || $status -eq 56 ]] ;;
		short) [[ $status -eq 18 ]] ;;
		esac
		kill -TERM "$GS_PID"
		wait "$GS_PID" || true
	done
}

@test "garbage-server ends by itself after its lifetime" {
	coproc GS { exec python3 "$lib/garbage-server.py" silent --lifetime 1 3>&-; }
	read -r -t 10 port <&"${GS[0]}"
	sleep 2
	dead "$GS_PID"
}
