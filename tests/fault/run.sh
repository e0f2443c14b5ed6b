#!/bin/bash
#
# tests/fault/run.sh - the fault campaign
#
#   bash tests/fault/run.sh [--seconds N] [--seed S] [--out DIR]
#
# Starts a 3-member etcd cluster on loopback (tests/lib/cluster.sh), two
# etcdfs mounts of it (a and b, -o quorum, each member reached through a
# TCP proxy of its own: tests/lib/tcp_proxy.py), clients doing real file
# operations on both mounts and one writing to etcd directly
# (tests/fault/workload.py), an inotify watcher on each mount; then for N
# seconds (default 60) faults from a schedule seeded by S: SIGKILL of the
# leader or a follower and its restart on its data, SIGSTOP/SIGCONT of a
# member, SIGKILL of a mount's daemon and a remount, and a cut of a mount's
# links to two members (its proxies killed, and started again on their
# ports).  Then the faults stop, the mounts catch up, etcd's final state
# is read, and tests/fault/check.py checks the history.
#
# Prints one line "N operations, F faults, A anomalies" and exits 1 on any
# anomaly (2 when the campaign could not run).  The history (JSON lines,
# with the seed) and the logs are kept in DIR (default: a new temporary
# directory, named at the end).
#
# Environment: ETCDFS (the etcdfs binary; default build-fault/mount/etcdfs
# under the source tree, then build/mount/etcdfs), ETCD_BIN (etcd).
# Everything it starts it stops by pid; every wait is bounded.  A daemon
# still there 5 s after its SIGKILL is an anomaly ("hang" in the history):
# its mount is then aborted with umount -f.

set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
seconds=60
seed=$((RANDOM * 32768 + RANDOM))
out=
while (($#)); do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: run.sh [--seconds N] [--seed S] [--out DIR]" >&2
		exit 2 ;;
	esac
done
if [[ -z ${ETCDFS:-} ]]; then
	for b in "$top/build-fault/mount/etcdfs" "$top/build/mount/etcdfs"; do
		[[ -x $b ]] && ETCDFS=$b && break
	done
fi
if [[ -z ${ETCDFS:-} || ! -x $ETCDFS ]]; then
	echo "run.sh: set ETCDFS to the etcdfs binary" >&2
	exit 2
fi
export ETCD_BIN=${ETCD_BIN:-etcd}
# shellcheck source=tests/lib/cluster.sh
source "$top/tests/lib/cluster.sh"

work=${out:-$(mktemp -d -t etcdfs-fault.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
hist=$work/history.jsonl
: >"$hist"
prefix=/fault
W=(python3 "$here/workload.py")
RANDOM=$seed
pids=()          # clients and watchers
declare -A proxy_pid proxy_port fs_pid stopped

monotonic() { python3 -c 'import time; print(time.monotonic_ns())'; }
log() { echo "$*" >>"$hist"; }
note() { echo "run.sh: $*" >>"$work/faults.log"; }

cleanup()
{
	local p k
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for k in "${!stopped[@]}"; do
		[[ -s $work/c/m$k/pid ]] && kill -CONT "$(cat "$work/c/m$k/pid")" 2>/dev/null
	done
	for m in a b; do
		[[ -n ${fs_pid[$m]:-} ]] && kill -TERM "${fs_pid[$m]}" 2>/dev/null
		if awk -v m="$work/mnt-$m" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; then
			timeout 20 fusermount3 -u "$work/mnt-$m" 2>/dev/null ||
				timeout 20 fusermount3 -u -z "$work/mnt-$m" 2>/dev/null
		fi
	done
	for k in "${!proxy_pid[@]}"; do kill -TERM "${proxy_pid[$k]}" 2>/dev/null; done
	cluster_stop "$work/c" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 2' INT TERM

# -- the cluster, and a proxy per link (mount m to member k)
eps=$(ETCD_START_TIMEOUT=60 cluster_start "$work/c" 3) || exit 2
IFS=, read -r -a member_ep <<<"$eps"

proxy_start()	# MOUNT K [PORT]: again on its port, if given
{
	local key=$1$2 target=${member_ep[$2 - 1]##*:} f=$work/proxy-$1$2 try
	for try in 1 2 3 4 5 6 7 8 9 10; do
		: >"$f.port"
		python3 "$top/tests/lib/tcp_proxy.py" "${3:-0}" "$target" \
			</dev/null >"$f.port" 2>>"$f.log" &
		proxy_pid[$key]=$!
		for _ in $(seq 100); do
			[[ -s $f.port ]] && break
			kill -0 "${proxy_pid[$key]}" 2>/dev/null || break
			sleep 0.05
		done
		if [[ -s $f.port ]]; then
			proxy_port[$key]=$(head -n1 "$f.port")
			return 0
		fi
		# the port is not free yet: the cut proxy's sockets linger
		kill -TERM "${proxy_pid[$key]}" 2>/dev/null
		wait "${proxy_pid[$key]}" 2>/dev/null
		note "proxy $key: start $try failed"
		sleep 0.5
	done
	echo "run.sh: proxy $key does not start" >&2
	return 1
}
for m in a b; do for k in 1 2 3; do proxy_start $m $k || exit 2; done; done

# True once process @1 has exited (a zombie with no thread left counts),
# within @2 tenths of a second
gone()
{
	local i t
	for ((i = 0; i < $2; i++)); do
		[[ -d /proc/$1 ]] || return 0
		t=(/proc/"$1"/task/*)
		[[ ${#t[@]} -le 1 &&
			$(cut -d' ' -f3 /proc/"$1"/stat 2>/dev/null) == Z ]] && return 0
		sleep 0.1
	done
	return 1
}

is_mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }

mount_fs()	# MOUNT
{
	local m=$1 dir=$work/mnt-$1 opts
	opts="endpoints=http://127.0.0.1:${proxy_port[${1}1]},http://127.0.0.1:${proxy_port[${1}2]},http://127.0.0.1:${proxy_port[${1}3]}"
	opts+=",prefix=$prefix,quorum,request_timeout=2s,connect_timeout=1s"
	mkdir -p "$dir"
	env -u NOTIFY_SOCKET "$ETCDFS" -f -o "$opts" "$dir" </dev/null \
		>>"$work/etcdfs-$m.log" 2>&1 &
	fs_pid[$m]=$!
	for _ in $(seq 200); do
		is_mounted "$dir" && [[ -d $dir/d ]] && return 0
		kill -0 "${fs_pid[$m]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "run.sh: mount $m did not come up (see etcdfs-$m.log)" >&2
	return 1
}

# the clients' directory, kept by a key nobody touches
curl -s --max-time 5 -X POST -d "{\"key\":\"$(printf %s "$prefix/d/.keep" | base64)\",\"value\":\"$(printf keep | base64)\"}" \
	"${member_ep[0]}/v3/kv/put" >/dev/null || exit 2
for m in a b; do
	mount_fs $m || exit 2
	echo "0 up" >"$work/state-$m"
done
log "{\"op\": \"seed\", \"seed\": $seed, \"seconds\": $seconds}"
"${W[@]}" snapshot manifest "$eps" "$prefix" "$work/init.jsonl" || exit 2
python3 - "$work/init.jsonl" >>"$hist" <<'EOF'
import json, sys
m = json.loads(open(sys.argv[1]).readline())
for k, v in sorted(m["state"].items()):
    print(json.dumps({"op": "init", "key": k, "value": v}))
EOF

# -- clients and watchers
for m in a b; do
	nice -n 10 "${W[@]}" watch "w$m" $m "$work/mnt-$m/d" "$work/state-$m" "$work/h-w$m.jsonl" &
	pids+=($!)
done
sleep 0.5
for c in 1 2 3; do
	for m in a b; do
		nice -n 10 "${W[@]}" client "c$m$c" $m "$work/mnt-$m/d" "$work/state-$m" \
			"$seed" "$seconds" "$work/h-c$m$c.jsonl" &
		pids+=($!)
	done
done
nice -n 10 "${W[@]}" control ctl "$eps" "$prefix" "$seed" "$seconds" "$work/h-ctl.jsonl" &
pids+=($!)
clients_end=$((SECONDS + seconds))

# -- faults
faults=0
manifest() { "${W[@]}" snapshot manifest "$eps" "$prefix" "$hist"; }
member_pid() { cat "$work/c/m$1/pid"; }
while ((SECONDS < clients_end - 3)); do
	sleep $((2 + RANDOM % 3))
	((SECONDS < clients_end - 3)) || break
	faults=$((faults + 1))
	case $((RANDOM % 5)) in
	0|1)	# kill the leader or a follower, restart it on its data
		leader=$(cluster_leader "$work/c" 3 2>/dev/null) || leader=1
		if ((RANDOM % 2)); then k=$leader; what=leader
		else k=$(((leader % 3) + 1)); what=follower; fi
		note "SIGKILL member $k ($what)"
		log "{\"op\": \"crash\", \"what\": \"etcd\", \"member\": $k, \"time\": $(monotonic)}"
		cluster_kill_member "$work/c" "$k"
		sleep "0.$((RANDOM % 9 + 1))"
		ETCD_START_TIMEOUT=30 cluster_restart_member "$work/c" "$k" ||
			note "member $k did not come back"
		manifest ;;
	2)	# SIGSTOP a member for a while
		k=$((RANDOM % 3 + 1))
		note "SIGSTOP member $k"
		p=$(member_pid $k)
		stopped[$k]=1
		kill -STOP "$p"
		sleep "$((RANDOM % 2)).$((RANDOM % 9 + 1))"
		kill -CONT "$p"
		unset "stopped[$k]" ;;
	3)	# SIGKILL a mount's daemon, remount
		m=$([[ $((RANDOM % 2)) == 0 ]] && echo a || echo b)
		g=$(cut -d' ' -f1 "$work/state-$m")
		echo "$((g + 1)) down" >"$work/state-$m"
		note "SIGKILL etcdfs $m (${fs_pid[$m]})"
		log "{\"op\": \"crash\", \"what\": \"etcdfs\", \"mount\": \"$m\", \"time\": $(monotonic)}"
		kill -KILL "${fs_pid[$m]}"
		if ! gone "${fs_pid[$m]}" 50; then
			# a thread of it is stuck in the kernel: the mount would
			# hang its callers, which the daemon's death must not do
			note "etcdfs $m (${fs_pid[$m]}) still there 5 s after SIGKILL:" \
				"$(cat /proc/"${fs_pid[$m]}"/task/*/wchan 2>/dev/null | tr '\0' ' ')"
			log "{\"op\": \"hang\", \"what\": \"etcdfs\", \"mount\": \"$m\", \"time\": $(monotonic), \"detail\": \"alive 5 s after SIGKILL\"}"
			timeout 10 umount -f "$work/mnt-$m"   # aborts the connection
			gone "${fs_pid[$m]}" 50 || { note "etcdfs $m still there"; break; }
		fi
		wait "${fs_pid[$m]}" 2>/dev/null
		timeout 20 fusermount3 -u "$work/mnt-$m" 2>/dev/null ||
			timeout 20 fusermount3 -u -z "$work/mnt-$m"
		manifest
		mount_fs "$m" || exit 2
		echo "$((g + 2)) up" >"$work/state-$m" ;;
	4)	# cut a mount's links to two members
		m=$([[ $((RANDOM % 2)) == 0 ]] && echo a || echo b)
		k=$((RANDOM % 3 + 1)); j=$(((k % 3) + 1))
		note "partition: mount $m from members $k and $j"
		for x in $k $j; do
			kill -TERM "${proxy_pid[$m$x]}"; wait "${proxy_pid[$m$x]}" 2>/dev/null
		done
		sleep "$((RANDOM % 3)).$((RANDOM % 9 + 1))"
		for x in $k $j; do
			proxy_start "$m" "$x" "${proxy_port[$m$x]}" || exit 2
		done ;;
	esac
done

# -- the faults stopped: let the clients finish, the mounts catch up
for p in "${pids[@]:2}"; do
	for _ in $(seq 600); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -TERM "$p" 2>/dev/null
done
for m in a b; do
	"${W[@]}" converge $m "$work/mnt-$m/d" "$eps" "$prefix" 15 "$work/h-conv-$m.jsonl"
done
sleep 2   # the watchers' last events
for p in "${pids[@]:0:2}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
"${W[@]}" snapshot final "$eps" "$prefix" "$hist" || exit 2
cat "$work"/h-*.jsonl >>"$hist"

python3 "$here/check.py" "$hist" >"$work/check.txt"
rc=$?
grep -v '^note:' "$work/check.txt" | grep -v 'operations checked' | head -n 20 >&2
nops=$(grep -c '"op": "\(read\|write\|cas\|create\|unlink\|rename\)"' "$hist")
anom=$(tail -n1 "$work/check.txt" | sed -n 's/.*, \([0-9]*\) anomalies$/\1/p')
echo "history: $hist (seed $seed)" >&2
echo "$nops operations, $faults faults, ${anom:-?} anomalies"
((rc == 0)) || exit 1
