#!/bin/bash
#
# tests/lib/cluster.sh - a private multi-member etcd cluster on loopback
#
# Starts N etcd members (Debian's etcd 3.4) on 127.0.0.1, each with a free
# client port, a free peer port and a data dir of its own, as one new
# cluster; waits until every member answers /health; stops each member by
# the pid it recorded (tests/lib/etcd.sh's etcd_stop, which checks that
# the pid is still that member's before signalling it).  It cannot start
# members with TLS, or add or remove members of a running cluster; and it
# never kills anything by name.
#
# Use it as a library (bash, bats):   . tests/lib/cluster.sh
# or as a command:                    tests/lib/cluster.sh start DIR N [args]
#                                     tests/lib/cluster.sh stop-member DIR K
#                                     tests/lib/cluster.sh endpoint DIR K
#                                     tests/lib/cluster.sh stop DIR
#                                     tests/lib/cluster.sh leader DIR N
#                                     tests/lib/cluster.sh make-leader DIR N K
#                                     tests/lib/cluster.sh kill-member DIR K
#                                     tests/lib/cluster.sh restart-member DIR K
#
# Functions (non-zero with a message on stderr on failure; sourcing sets
# no shell options; they work under set -e, as in bats):
#
#   cluster_start DIR N [ETCD_ARGS...]
#       Starts members 1..N, member K in DIR/mK (DIR/mK/pid, /endpoint,
#       /etcd.log, /data); extra arguments go to every member (e.g.
#       --enable-v2=true).  Waits up to $ETCD_START_TIMEOUT seconds
#       (default 30) for all of them, else stops them and fails.  Prints
#       the client endpoints, comma separated, in member order.
#
#   cluster_endpoint DIR K
#       Prints member K's client endpoint.
#
#   cluster_stop_member DIR K
#       Stops member K (SIGTERM, then SIGKILL) and waits until it is gone.
#
#   cluster_kill_member DIR K
#       SIGKILLs member K (no clean shutdown: connections reset, a leader
#       gives no notice) and waits until it is gone.
#
#   cluster_restart_member DIR K
#       Starts member K again, with its command line, ports and data dir
#       (it rejoins as the member it was), and waits until it is healthy.
#
#   cluster_leader DIR N
#       Prints the number K of the member that is the leader, as the
#       members of DIR (1..N) that answer say; fails if none is.
#
#   cluster_make_leader DIR N K
#       Moves the leadership to member K (etcdctl move-leader) and waits
#       until the members say K leads.
#
#   cluster_stop DIR
#       Stops every member of DIR.  Succeeds if none was running.

_cluster_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/etcd.sh
source "$_cluster_here/etcd.sh"

# Prints @1 free ports on one line; the sockets are held open together so
# that the kernel cannot hand out one port twice.
_cluster_free_ports()
{
	python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

cluster_endpoint()
{
	etcd_endpoint "$1/m$2"
}

cluster_stop_member()
{
	etcd_stop "$1/m$2"
}

cluster_kill_member()
{
	local m=$1/m$2 pid start

	[[ -s $m/pid ]] || return 0
	pid=$(cat "$m/pid")
	if _etcd_alive "$pid" && _etcd_is_ours "$pid" "$(cd "$m" && pwd)/data"
	then
		kill -KILL "$pid" 2>/dev/null || true
	fi
	start=$SECONDS
	while _etcd_alive "$pid"; do
		if ((SECONDS - start > 10)); then
			echo "cluster.sh: member $2 ($pid) outlived SIGKILL" >&2
			return 1
		fi
		sleep 0.02
	done
	wait "$pid" 2>/dev/null || true
	rm -f "$m/pid"
}

cluster_restart_member()
{
	local m=$1/m$2 ep start limit=${ETCD_START_TIMEOUT:-30}
	local -a cmd

	if [[ -s $m/pid ]] && _etcd_alive "$(cat "$m/pid")"; then
		echo "cluster.sh: member $2 of '$1' runs already" >&2
		return 1
	fi
	mapfile -d '' cmd <"$m/cmd" || return 1
	ep=$(cat "$m/endpoint") || return 1
	# from a subshell, so that no shell reports the job when it is killed
	(
		"${cmd[@]}" </dev/null >>"$m/etcd.log" 2>&1 3>&- 4>&- 5>&- \
			6>&- 7>&- 8>&- 9>&- &
		echo $! >"$m/pid"
	)
	start=$SECONDS
	until curl -s --max-time 2 "$ep/health" 2>/dev/null |
		grep -q '"health":"true"'; do
		if ! _etcd_alive "$(cat "$m/pid")"; then
			echo "cluster.sh: member $2 exited at restart:" >&2
			tail -n 15 "$m/etcd.log" >&2
			return 1
		fi
		if ((SECONDS - start > limit)); then
			echo "cluster.sh: member $2 not healthy ${limit}s after" \
				"its restart" >&2
			return 1
		fi
		sleep 0.1
	done
}

cluster_leader()
{
	local dir=$1 n=$2 k ep

	for ((k = 1; k <= n; k++)); do
		[[ -s $dir/m$k/pid ]] || continue
		ep=$(cat "$dir/m$k/endpoint") || continue
		if curl -s --max-time 2 -X POST -d '{}' \
			"$ep/v3/maintenance/status" 2>/dev/null |
			python3 -c '
import json, sys
r = json.load(sys.stdin)
sys.exit(0 if r.get("leader") and
         r["leader"] == r.get("header", {}).get("member_id") else 1)'
		then
			echo "$k"
			return 0
		fi
	done
	echo "cluster.sh: no member of '$dir' is the leader" >&2
	return 1
}

# member @2's id in hex, as etcdctl move-leader takes it
_cluster_member_id()
{
	ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$(cluster_endpoint "$1" "$2") \
		etcdctl endpoint status -w json | python3 -c '
import json, sys
print("%x" % json.load(sys.stdin)[0]["Status"]["header"]["member_id"])'
}

cluster_make_leader()
{
	local dir=$1 n=$2 k=$3 leader id start=$SECONDS

	leader=$(cluster_leader "$dir" "$n") || return 1
	((leader == k)) && return 0
	id=$(_cluster_member_id "$dir" "$k") || return 1
	ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$(cluster_endpoint "$dir" "$leader") \
		etcdctl move-leader "$id" >/dev/null || return 1
	until [[ $(cluster_leader "$dir" "$n" 2>/dev/null) == "$k" ]]; do
		if ((SECONDS - start > 10)); then
			echo "cluster.sh: member $k is not the leader 10 s" \
				"after move-leader" >&2
			return 1
		fi
		sleep 0.05
	done
}

cluster_stop()
{
	local dir=$1 m rc=0

	[[ -d $dir ]] || return 0
	for m in "$dir"/m*; do
		[[ -d $m ]] || continue
		etcd_stop "$m" || rc=1
	done
	return $rc
}

# True once every member of @1 (of @2) answers /health with "true".
_cluster_healthy()
{
	local dir=$1 n=$2 k ep

	for ((k = 1; k <= n; k++)); do
		ep=$(cat "$dir/m$k/endpoint.pending") || return 1
		curl -s --max-time 2 "$ep/health" 2>/dev/null |
			grep -q '"health":"true"' || return 1
	done
}

# One attempt: 0 started, 1 failed, 2 a port was taken (try again).
_cluster_launch()
{
	local dir=$1 n=$2 ports k initial="" pid start
	local limit=${ETCD_START_TIMEOUT:-30}
	local -a port cport pport

	shift 2
	ports=$(_cluster_free_ports $((2 * n))) || return 1
	read -r -a port <<<"$ports"
	for ((k = 1; k <= n; k++)); do
		cport[k]=${port[2 * k - 2]}
		pport[k]=${port[2 * k - 1]}
		initial+="${initial:+,}m$k=http://127.0.0.1:${pport[k]}"
	done
	# a fresh cluster id every attempt, so that no member of a failed
	# attempt can join this one
	local token
	token="etcdfs-test-$$-$RANDOM$RANDOM"
	for ((k = 1; k <= n; k++)); do
		local m=$dir/m$k ep="http://127.0.0.1:${cport[k]}"

		mkdir -p "$m" || return 1
		rm -rf "$m/data" "$m/pid" "$m/endpoint"
		# etcd takes ETCD_* variables for flags: ETCD_BIN is none of them
		local -a cmd=(env -u ETCD_BIN -u ETCDCTL_BIN "$ETCD_BIN" --name="m$k"
			--data-dir="$m/data"
			--listen-client-urls="$ep"
			--advertise-client-urls="$ep"
			--listen-peer-urls="http://127.0.0.1:${pport[k]}"
			--initial-advertise-peer-urls="http://127.0.0.1:${pport[k]}"
			--initial-cluster="$initial"
			--initial-cluster-token="$token"
			--initial-cluster-state=new
			--logger=zap --log-outputs=stderr "$@")
		# for cluster_restart_member
		printf '%s\0' "${cmd[@]}" >"$m/cmd" || return 1
		"${cmd[@]}" </dev/null >>"$m/etcd.log" 2>&1 3>&- 4>&- 5>&- \
			6>&- 7>&- 8>&- 9>&- &
		echo $! >"$m/pid"
		echo "$ep" >"$m/endpoint.pending"
	done
	start=$SECONDS
	until _cluster_healthy "$dir" "$n"; do
		for ((k = 1; k <= n; k++)); do
			pid=$(cat "$dir/m$k/pid")
			if ! kill -0 "$pid" 2>/dev/null; then
				wait "$pid" 2>/dev/null || true
				if tail -n 20 "$dir/m$k/etcd.log" |
					grep -q 'address already in use'; then
					return 2
				fi
				echo "cluster.sh: member $k in '$dir' exited" \
					"at start; from its log:" >&2
				tail -n 15 "$dir/m$k/etcd.log" >&2
				return 1
			fi
		done
		if ((SECONDS - start > limit)); then
			echo "cluster.sh: cluster in '$dir' not healthy after" \
				"${limit}s" >&2
			for ((k = 1; k <= n; k++)); do
				echo "--- member $k:" >&2
				tail -n 5 "$dir/m$k/etcd.log" >&2
			done
			return 1
		fi
		sleep 0.1
	done
	for ((k = 1; k <= n; k++)); do
		mv "$dir/m$k/endpoint.pending" "$dir/m$k/endpoint" || return 1
	done
	return 0
}

cluster_start()
{
	if (($# < 2)) || [[ ! $2 =~ ^[1-9][0-9]*$ ]]; then
		echo "usage: cluster_start DIR N [etcd args...]" >&2
		return 2
	fi
	local dir=$1 n=$2 k rc list=""

	shift 2
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd) || return 1
	for ((k = 1; k <= n; k++)); do
		if [[ -s $dir/m$k/pid ]] && kill -0 "$(cat "$dir/m$k/pid")" \
			2>/dev/null; then
			echo "cluster.sh: member $k of '$dir' runs already" >&2
			return 1
		fi
	done
	if ! command -v "$ETCD_BIN" >/dev/null; then
		echo "cluster.sh: '$ETCD_BIN' not found (install etcd-server)" >&2
		return 1
	fi
	for _ in 1 2 3 4 5; do
		rc=0
		_cluster_launch "$dir" "$n" "$@" || rc=$?
		((rc == 0)) && break
		cluster_stop "$dir"
		((rc == 2)) || return 1
	done
	((rc == 0)) || return 1
	for ((k = 1; k <= n; k++)); do
		list+="${list:+,}$(cat "$dir/m$k/endpoint")"
	done
	echo "$list"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -eu
	case ${1:-} in
	start)	shift; cluster_start "$@" ;;
	stop)	shift; cluster_stop "$@" ;;
	stop-member) shift; cluster_stop_member "$@" ;;
	leader) shift; cluster_leader "$@" ;;
	make-leader) shift; cluster_make_leader "$@" ;;
	kill-member) shift; cluster_kill_member "$@" ;;
	restart-member) shift; cluster_restart_member "$@" ;;
	endpoint) shift; cluster_endpoint "$@" ;;
	*)	echo "usage: $0 start DIR N [etcd args...] | stop DIR |" \
			"stop-member DIR K | endpoint DIR K" >&2
		exit 2 ;;
	esac
fi
