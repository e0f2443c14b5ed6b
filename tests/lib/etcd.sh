#!/bin/bash
#
# tests/lib/etcd.sh - private etcd servers for the tests, on loopback
#
# Starts Debian's etcd (3.4, or 3.5 with ETCDFS_ETCD_VERSION=3.5) on 127.0.0.1 with free client and peer ports
# and a data dir of its own, waits until it answers, and stops it by the pid
# it recorded.  Also makes the certificates a TLS test needs.  It cannot
# start a multi-member cluster, and it never kills anything by name.
#
# Use it two ways:
#
#   as a library (bash, bats):   . tests/lib/etcd.sh
#   as a command (C tests):      tests/lib/etcd.sh start DIR [etcd args...]
#                                tests/lib/etcd.sh start-tls DIR CERTS [args...]
#                                tests/lib/etcd.sh stop DIR
#                                tests/lib/etcd.sh restart DIR
#                                tests/lib/etcd.sh certs DIR
#                                tests/lib/etcd.sh ctl DIR [etcdctl args...]
#                                tests/lib/etcd.sh free-port
#
# Functions (each returns non-zero with a message on stderr on failure;
# sourcing sets no shell options, and they work under set -e, as in bats):
#
#   etcd_free_port
#       Prints a TCP port on 127.0.0.1 the kernel reports free.
#
#   etcd_start DIR [ETCD_ARGS...]
#       Starts etcd with its data in DIR/data and its log in DIR/etcd.log;
#       extra arguments go to etcd as they are (e.g. --auth-token simple
#       --auth-token-ttl 2), after its defaults, so they win.  Those are
#       a heartbeat of 10 ms and an election timeout of 100 ms (etcd's
#       own: 100 ms and 1 s): a lone member spends most of its start
#       waiting for its first election (0.7 s of about 1 s, even with the
#       ticks fast-forwarded), with no peers a short timeout can make it
#       lose nothing, and every test starts one.  Waits up to
#       $ETCD_START_TIMEOUT seconds (default 30) for /health to answer,
#       else prints the log's tail, stops it and fails.  Records DIR/pid
#       and DIR/endpoint and prints the endpoint (http://127.0.0.1:PORT).
#       DIR is created if needed.
#
#   etcd_start_tls DIR CERTS [ETCD_ARGS...]
#       As etcd_start, with an https endpoint that requires a client
#       certificate: --cert-file CERTS/server.pem, --key-file
#       CERTS/server-key.pem, --trusted-ca-file CERTS/ca.pem,
#       --client-cert-auth.  CERTS is made by etcd_certs.  Records the
#       certificate dir in DIR/certs.
#
#   etcd_stop DIR
#       Stops the etcd recorded in DIR/pid: SIGTERM, then SIGKILL after
#       $ETCD_STOP_TIMEOUT seconds (default 10); waits until it is gone.
#       Succeeds if it was not running.  Keeps DIR (and its log).
#
#   etcd_restart DIR
#       Stops the etcd recorded in DIR/pid (as etcd_stop) and starts it
#       again with the same command line: same ports, same data, so its
#       clients see the server go away and come back.  Waits for /health
#       as etcd_start does.
#
#   etcd_certs DIR
#       Writes, with openssl, into DIR: ca.pem/ca-key.pem (a test CA),
#       server.pem/server-key.pem (for 127.0.0.1 and localhost, by
#       subjectAltName), client.pem/client-key.pem (CN=client, from the
#       CA), other-ca.pem/other-ca-key.pem (a second CA that signed
#       nothing above) and other-client.pem/other-client-key.pem (a client
#       certificate from that second CA).
#
#   etcd_ctl DIR [ETCDCTL_ARGS...]
#       Runs etcdctl (API 3) against the etcd of DIR, with its client
#       certificate if it was started with TLS.
#
#   etcd_endpoint DIR
#       Prints the endpoint recorded in DIR/endpoint.

# The etcd and etcdctl binaries; tests may point these elsewhere
# (ETCD_BIN, ETCDCTL_BIN).  With ETCDFS_ETCD_VERSION=3.5 they default to
# Debian 13's etcd 3.5, fetched into the tests' cache by
# tests/lib/fetch-etcd35.sh (never installed), and its directory goes first
# in PATH, so that a bare etcdctl is the same version; any other value but
# 3.4 (Debian 12's, the default) is an error.  etcd reads every ETCD_*
# variable of its environment as an option, so the two are not passed on.
case ${ETCDFS_ETCD_VERSION:-3.4} in
3.4) ;;
3.5)
	if _etcd35_bin=$("$(dirname "${BASH_SOURCE[0]}")/fetch-etcd35.sh"); then
		ETCD_BIN=${ETCD_BIN:-$_etcd35_bin/etcd}
		ETCDCTL_BIN=${ETCDCTL_BIN:-$_etcd35_bin/etcdctl}
		case :$PATH: in
		*:"$_etcd35_bin":*) ;;
		*) export PATH=$_etcd35_bin:$PATH ;;
		esac
	else
		echo "etcd.sh: cannot fetch etcd 3.5" >&2
		ETCD_BIN=${ETCD_BIN:-/nonexistent/etcd-3.5}
	fi
	unset _etcd35_bin
	;;
*)
	echo "etcd.sh: unknown ETCDFS_ETCD_VERSION" \
		"'$ETCDFS_ETCD_VERSION' (3.4 or 3.5)" >&2
	ETCD_BIN=/nonexistent/etcd-$ETCDFS_ETCD_VERSION
	;;
esac
ETCD_BIN=${ETCD_BIN:-etcd}
ETCDCTL_BIN=${ETCDCTL_BIN:-etcdctl}

etcd_free_port()
{
	python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
'
}

# Prints two distinct free ports on one line; both sockets are held open
# together so the kernel cannot hand out the same port twice.
_etcd_free_port_pair()
{
	python3 -c '
import socket
a = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
b = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
a.bind(("127.0.0.1", 0))
b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])
'
}

etcd_endpoint()
{
	local dir=$1

	if [[ ! -s $dir/endpoint ]]; then
		echo "etcd.sh: no endpoint recorded in '$dir'" >&2
		return 1
	fi
	cat "$dir/endpoint"
}

# The etcdctl TLS options for the etcd of DIR, one per line (none without
# TLS).
_etcd_tls_args()
{
	local dir=$1 certs

	[[ -s $dir/certs ]] || return 0
	certs=$(cat "$dir/certs")
	printf '%s\n' "--cacert=$certs/ca.pem" "--cert=$certs/client.pem" \
		"--key=$certs/client-key.pem"
}

etcd_ctl()
{
	local dir=$1 ep
	local -a tls

	shift
	ep=$(etcd_endpoint "$dir") || return 1
	mapfile -t tls < <(_etcd_tls_args "$dir")
	ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" "${tls[@]}" \
		--dial-timeout=5s --command-timeout=20s "$@"
}

# True while @pid runs (a zombie counts as gone).
_etcd_alive()
{
	local pid=$1 state

	kill -0 "$pid" 2>/dev/null || return 1
	state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ $state != Z ]]
}

# True if @pid is the etcd whose data dir is @data (guards against a
# recycled pid).
_etcd_is_ours()
{
	local pid=$1 data=$2

	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -- "--data-dir=$data"
}

# True if the etcd answering on @ep is the process @pid: the member list
# it gives names the peer URL @pid was started with.  The rest are curl's
# TLS options.
_etcd_answers_as()
{
	local ep=$1 pid=$2 peer

	shift 2
	peer=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null |
		sed -n 's/^--initial-advertise-peer-urls=//p' | tail -n 1)
	[[ -n $peer ]] || return 1
	curl -s --max-time 2 "$@" -X POST -d '{}' \
		"$ep/v3/cluster/member/list" 2>/dev/null | grep -qF "\"$peer\""
}

# Asks /health until our etcd says true, the process dies, or time runs
# out.  Another test may have started an etcd on the same client port
# (the free port it was given was free for us too, or it took ours while
# ours was stopped): then that one answers while ours dies of "address
# already in use", and its answers are not ours.
# Returns 0 (healthy), 1 (timed out), 2 (died).
_etcd_wait_healthy()
{
	local dir=$1 pid=$2 ep=$3 limit=$4 start
	local -a curl_tls=()

	if [[ -s $dir/certs ]]; then
		local certs
		certs=$(cat "$dir/certs")
		curl_tls=(--cacert "$certs/ca.pem" --cert "$certs/client.pem"
			  --key "$certs/client-key.pem")
	fi
	start=$SECONDS
	while ((SECONDS - start < limit)); do
		if ! _etcd_alive "$pid"; then
			wait "$pid" 2>/dev/null || true
			return 2
		fi
		if curl -s --max-time 2 "${curl_tls[@]}" "$ep/health" 2>/dev/null |
			grep -q '"health":"true"' &&
			_etcd_answers_as "$ep" "$pid" "${curl_tls[@]}"; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# _etcd_launch DIR SCHEME CERTS [ETCD_ARGS...]
_etcd_launch()
{
	local dir=$1 scheme=$2 certs=$3 ports cport pport ep pid rc
	local logstart=1 n
	local limit=${ETCD_START_TIMEOUT:-30}
	local -a tls=()
	local -a fast=(--heartbeat-interval=10 --election-timeout=100)

	shift 3
	if ! mkdir -p "$dir"; then
		echo "etcd.sh: cannot create '$dir'" >&2
		return 1
	fi
	dir=$(cd "$dir" && pwd) || return 1
	if [[ -s $dir/pid ]] && _etcd_alive "$(cat "$dir/pid")"; then
		echo "etcd.sh: an etcd runs already for '$dir'" >&2
		return 1
	fi
	rm -f "$dir/pid" "$dir/endpoint" "$dir/certs"
	if [[ $scheme == https ]]; then
		certs=$(cd "$certs" && pwd) || return 1
		local f
		for f in ca.pem server.pem server-key.pem client.pem \
			 client-key.pem; do
			if [[ ! -r $certs/$f ]]; then
				echo "etcd.sh: missing '$certs/$f' (run etcd_certs)" >&2
				return 1
			fi
		done
		tls=(--cert-file="$certs/server.pem"
		     --key-file="$certs/server-key.pem"
		     --trusted-ca-file="$certs/ca.pem" --client-cert-auth)
		echo "$certs" >"$dir/certs"
	fi
	if ! command -v "$ETCD_BIN" >/dev/null; then
		echo "etcd.sh: '$ETCD_BIN' not found (install etcd-server)" >&2
		return 1
	fi

	# Another test may take a port between our probe and etcd's bind:
	# then etcd dies with "address already in use" and we try again.
	for _ in 1 2 3 4 5; do
		ports=$(_etcd_free_port_pair) || return 1
		read -r cport pport <<<"$ports"
		ep="$scheme://127.0.0.1:$cport"
		rm -rf "$dir/data"
		# where this attempt's lines start in the log
		logstart=$(($(stat -c %s "$dir/etcd.log" 2>/dev/null || echo 0) + 1))
		env -u ETCD_BIN -u ETCDCTL_BIN "$ETCD_BIN" --name=test --data-dir="$dir/data" \
			--listen-client-urls="$ep" \
			--advertise-client-urls="$ep" \
			--listen-peer-urls="http://127.0.0.1:$pport" \
			--initial-advertise-peer-urls="http://127.0.0.1:$pport" \
			--initial-cluster="test=http://127.0.0.1:$pport" \
			--initial-cluster-state=new \
			--logger=zap --log-outputs=stderr \
			"${fast[@]}" "${tls[@]}" "$@" \
			</dev/null >>"$dir/etcd.log" 2>&1 3>&- 4>&- 5>&- \
			6>&- 7>&- 8>&- 9>&- &
		pid=$!
		echo "$pid" >"$dir/pid"
		rc=0
		_etcd_wait_healthy "$dir" "$pid" "$ep" "$limit" || rc=$?
		if ((rc == 0)); then
			echo "$ep" >"$dir/endpoint"
			echo "$ep"
			return 0
		fi
		if ((rc == 2)) && tail -n 20 "$dir/etcd.log" |
			grep -q 'address already in use'; then
			continue
		fi
		break
	done
	if ((rc == 1)); then
		echo "etcd.sh: etcd in '$dir' not healthy after ${limit}s" >&2
	else
		echo "etcd.sh: etcd in '$dir' exited at start" >&2
	fi
	# the first lines say why it would not start, the last what it did
	n=$(tail -c "+$logstart" "$dir/etcd.log" | wc -l)
	echo "etcd.sh: from '$dir/etcd.log':" >&2
	if ((n > 20)); then
		tail -c "+$logstart" "$dir/etcd.log" | head -n 5 >&2
		echo "  [...]" >&2
		tail -c "+$logstart" "$dir/etcd.log" | tail -n 15 >&2
	else
		tail -c "+$logstart" "$dir/etcd.log" >&2
	fi
	etcd_stop "$dir"
	return 1
}

etcd_start()
{
	if (($# < 1)); then
		echo "usage: etcd_start DIR [etcd args...]" >&2
		return 2
	fi
	local dir=$1

	shift
	_etcd_launch "$dir" http "" "$@"
}

etcd_start_tls()
{
	if (($# < 2)); then
		echo "usage: etcd_start_tls DIR CERTS [etcd args...]" >&2
		return 2
	fi
	local dir=$1 certs=$2

	shift 2
	_etcd_launch "$dir" https "$certs" "$@"
}

etcd_stop()
{
	if (($# != 1)); then
		echo "usage: etcd_stop DIR" >&2
		return 2
	fi
	local dir=$1 pid start limit=${ETCD_STOP_TIMEOUT:-10}

	[[ -s $dir/pid ]] || return 0
	pid=$(cat "$dir/pid")
	if [[ ! $pid =~ ^[0-9]+$ ]]; then
		echo "etcd.sh: bad pid file '$dir/pid'" >&2
		return 1
	fi
	dir=$(cd "$dir" && pwd) || return 1
	if ! _etcd_alive "$pid"; then
		# gone, or a zombie: reap it if it is our child
		wait "$pid" 2>/dev/null || true
		rm -f "$dir/pid"
		return 0
	fi
	if ! _etcd_is_ours "$pid" "$dir/data"; then
		# the pid was recycled: not ours to stop, nor to wait for
		rm -f "$dir/pid"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	start=$SECONDS
	while _etcd_alive "$pid"; do
		if ((SECONDS - start >= limit)); then
			echo "etcd.sh: etcd $pid ignored SIGTERM, killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
			start=$SECONDS
			limit=5
			while _etcd_alive "$pid" && ((SECONDS - start < limit)); do
				sleep 0.05
			done
			break
		fi
		sleep 0.05
	done
	# Reap it if it is our child; harmless otherwise.
	wait "$pid" 2>/dev/null || true
	if _etcd_alive "$pid"; then
		echo "etcd.sh: etcd $pid would not stop" >&2
		return 1
	fi
	rm -f "$dir/pid"
	return 0
}

# _etcd_relaunch DIR EP CMD...: runs CMD, the command line our etcd in DIR
# was started with, again, on the same ports (EP its client URL), and
# waits until it answers.  etcd reads every ETCD_* variable as an option:
# ours are not passed on.  If it does not come back, says so (another
# test's etcd may have taken one of the ports meanwhile: its answers do
# not pass for ours) and returns 1.
_etcd_relaunch()
{
	local dir=$1 ep=$2 pid

	shift 2
	env -u ETCD_BIN -u ETCDCTL_BIN "$@" </dev/null \
		>>"$dir/etcd.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	pid=$!
	echo "$pid" >"$dir/pid"
	if ! _etcd_wait_healthy "$dir" "$pid" "$ep" \
		"${ETCD_START_TIMEOUT:-30}"; then
		echo "etcd.sh: etcd in '$dir' did not come back on $ep" >&2
		tail -n 20 "$dir/etcd.log" >&2
		return 1
	fi
}

etcd_restart()
{
	if (($# != 1)); then
		echo "usage: etcd_restart DIR" >&2
		return 2
	fi
	local dir=$1 pid ep
	local -a cmd

	dir=$(cd "$dir" && pwd) || return 1
	pid=$(cat "$dir/pid" 2>/dev/null) && ep=$(cat "$dir/endpoint") &&
		_etcd_alive "$pid" && _etcd_is_ours "$pid" "$dir/data" || {
		echo "etcd.sh: no etcd of ours runs for '$dir'" >&2
		return 1
	}
	mapfile -d '' -t cmd <"/proc/$pid/cmdline" || return 1
	etcd_stop "$dir" || return 1
	if ! _etcd_relaunch "$dir" "$ep" "${cmd[@]}"; then
		etcd_stop "$dir"
		return 1
	fi
}

etcd_certs()
{
	if (($# != 1)); then
		echo "usage: etcd_certs DIR" >&2
		return 2
	fi
	local dir=$1 days=30

	mkdir -p "$dir" || return 1
	(
		set -e
		cd "$dir"
		umask 077
		key() { openssl genpkey -algorithm EC \
			-pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }
		ca() {
			key "$1-key.pem"
			openssl req -x509 -new -key "$1-key.pem" -days $days \
				-subj "/CN=$2" -out "$1.pem" \
				-addext basicConstraints=critical,CA:TRUE \
				-addext keyUsage=critical,keyCertSign,cRLSign
		}
		# leaf NAME CA CN EXTENSIONS
		leaf() {
			key "$1-key.pem"
			openssl req -new -key "$1-key.pem" -subj "/CN=$3" \
				-out "$1.csr"
			printf '%s\n' "$4" >"$1.ext"
			openssl x509 -req -in "$1.csr" -CA "$2.pem" \
				-CAkey "$2-key.pem" -CAcreateserial -days $days \
				-extfile "$1.ext" -out "$1.pem" 2>/dev/null
			rm -f "$1.csr" "$1.ext"
		}
		ca ca "etcdfs test ca"
		ca other-ca "etcdfs unrelated ca"
		leaf server ca localhost "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
		leaf client ca client "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
		leaf other-client other-ca client "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
		rm -f ./*.srl
		chmod 644 ./*.pem
	) || {
		echo "etcd.sh: cannot make certificates in '$dir'" >&2
		return 1
	}
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	cmd=${1:-}
	shift || true
	case $cmd in
	start)		etcd_start "$@" ;;
	start-tls)	etcd_start_tls "$@" ;;
	stop)		etcd_stop "$@" ;;
	restart)	etcd_restart "$@" ;;
	certs)		etcd_certs "$@" ;;
	ctl)		etcd_ctl "$@" ;;
	endpoint)	etcd_endpoint "$@" ;;
	free-port)	etcd_free_port ;;
	*)
		echo "usage: $0 start DIR [args] | start-tls DIR CERTS [args] |" \
			"stop DIR | restart DIR | certs DIR | ctl DIR [args] | endpoint DIR |" \
			"free-port" >&2
		exit 2
		;;
	esac
	exit
fi
