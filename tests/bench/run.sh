#!/bin/bash
#
# tests/bench/run.sh - the benchmark suite: etcdfs against baselines, one run
#
# Starts a private etcd on loopback (tests/lib/etcd.sh), loads the data sets
# with etcdfs-bench (tests/bench/bench.c), and measures each workload on
# etcdfs and on its baselines in the same run: a tmpfs copy of the same
# files, etcdctl, and the helper library called directly.  Each measurement
# is repeated (--reps) and the report gives medians and ratios.  Cold means
# a fresh mount (a new daemon, nothing in the kernel's caches for it); warm
# means the same command again on the same mount.
#
#   1  read a subtree: cat dir/* and grep -r, cold and warm
#   2  list: ls -l of a big directory, find over a big tree
#   3  one key: stat and open/read/close latency, p50 and p99; warm also
#      on a read-only mount (-o ro, whose opens send the daemon nothing),
#      with the FUSE requests the daemon received per operation
#   4  writes: open/write/close of 1 KiB values, 1 and 16 writers
#   5  a remote change to its inotify event on the mount
#   6  memory: the daemon's peak RSS, mount and list time, for big trees
#   7  a new key of another client, 4 directories deep, to the moment it
#      is readable on the mount (etcdfs-visible, tests/bench/visible.c)
#   8  -o quorum: a warm cat of 2,000 files of 1 KiB with and without it
#
# Writes to the results dir (--out, default bench-results/DATE): raw.tsv
# (every sample), results.md (the table), results.png (the plot, with
# gnuplot), machine.txt, command.txt and params.txt.  Exits non-zero if any
# step fails (a command, a mount, a daemon that does not exit cleanly, a
# listing that misses keys); workload 5 is reported as n/a with the reason
# when an inotify watch on the mount sees no event for a remote change.
#
# What it cannot do: keep other processes off the machine (the load average
# at start and end is recorded next to the results), or measure a cluster
# of several members or one over a real network.
#
# See tests/bench/README.md.

set -u -o pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=$(cd "$BENCH_DIR/../.." && pwd)
# shellcheck source=tests/lib/etcd.sh
source "$SRC_DIR/tests/lib/etcd.sh"
export LC_ALL=C

usage()
{
	cat <<EOF
usage: bash tests/bench/run.sh [--quick | --smoke] [options]

  --quick            smaller sizes, 3 repetitions, no million-key tree
  --smoke            a few keys, one repetition (checks that it runs)
  --reps N           repetitions of each measurement (default 5)
  --out DIR          results dir (default bench-results/YYYYmmdd-HHMMSS)
  --build DIR        meson build dir to build and use (default build)
  --workloads LIST   which workloads to run, e.g. 1,3 (default 1,...,8)
  --read-keys N      workloads 1-3: keys in the subtree (default 10000)
  --read-size N      their value size (default 1024)
  --tree-keys N      workload 2: keys in the tree for find (default 100000)
  --mem-keys LIST    workload 6: tree sizes (default 100000,1000000)
  --mem-size N       value size of the trees of workloads 2 and 6 (256)
  --mem-baseline-max N  workload 6: list trees up to N keys with the
                     helper too (default 100000: that takes as long as
                     a mount)
  --lat-iters N      workload 3: timed operations per warm run (20000)
  --cold-keys N      workload 3: distinct keys per cold run (1000)
  --write-iters N    workload 4: writes per writer, one writer (500);
                     16 writers do a quarter each
  --writers LIST     workload 4: writer counts (default 1,16)
  --ctl-puts N       workload 4: etcdctl puts per run (default 50)
  --events N         workload 5: remote changes per run (default 1000)
  --quorum-keys N    workload 8: files of 1 KiB, 500 a directory (2000)
  --keep             keep the work dir (etcd data, daemon logs)

Environment: ETCDFS and ETCDFS_BENCH name the binaries to use instead of
building them; TMPFS_DIR a tmpfs dir for the copies (default /dev/shm).
EOF
}

reps=5
out=
build=build
workloads=1,2,3,4,5,6,7,8
read_keys=10000
read_size=1024
tree_keys=100000
mem_keys=100000,1000000
mem_size=256
mem_baseline_max=100000
lat_iters=20000
cold_keys=1000
write_iters=500
writers=1,16
ctl_puts=50
events=1000
quorum_keys=2000
keep=0
mode=default
cmdline="bash tests/bench/run.sh${*:+ $*}"

need_arg()
{
	if (($2 < 2)); then
		echo "run.sh: $1 needs a value" >&2
		exit 2
	fi
}

while (($#)); do
	case $1 in
	--quick)
		mode=quick reps=3 read_keys=2000 tree_keys=20000
		mem_keys=20000,100000 lat_iters=5000 cold_keys=500
		write_iters=200 ctl_puts=20 events=100 quorum_keys=1000
		;;
	--smoke)
		mode=smoke reps=1 read_keys=20 tree_keys=50 mem_keys=50
		lat_iters=50 cold_keys=10 write_iters=8 ctl_puts=2 events=4
		quorum_keys=50
		;;
	--reps) need_arg "$1" $#; reps=$2; shift ;;
	--out) need_arg "$1" $#; out=$2; shift ;;
	--build) need_arg "$1" $#; build=$2; shift ;;
	--workloads) need_arg "$1" $#; workloads=$2; shift ;;
	--read-keys) need_arg "$1" $#; read_keys=$2; shift ;;
	--read-size) need_arg "$1" $#; read_size=$2; shift ;;
	--tree-keys) need_arg "$1" $#; tree_keys=$2; shift ;;
	--mem-keys) need_arg "$1" $#; mem_keys=$2; shift ;;
	--mem-size) need_arg "$1" $#; mem_size=$2; shift ;;
	--mem-baseline-max) need_arg "$1" $#; mem_baseline_max=$2; shift ;;
	--lat-iters) need_arg "$1" $#; lat_iters=$2; shift ;;
	--cold-keys) need_arg "$1" $#; cold_keys=$2; shift ;;
	--write-iters) need_arg "$1" $#; write_iters=$2; shift ;;
	--writers) need_arg "$1" $#; writers=$2; shift ;;
	--ctl-puts) need_arg "$1" $#; ctl_puts=$2; shift ;;
	--events) need_arg "$1" $#; events=$2; shift ;;
	--quorum-keys) need_arg "$1" $#; quorum_keys=$2; shift ;;
	--keep) keep=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

for v in reps read_keys read_size tree_keys mem_size mem_baseline_max \
	 lat_iters cold_keys write_iters ctl_puts events quorum_keys; do
	if [[ ! ${!v} =~ ^[1-9][0-9]*$ ]]; then
		echo "run.sh: --${v//_/-} must be a positive number" >&2
		exit 2
	fi
done
for v in mem_keys writers workloads; do
	if [[ ! ${!v} =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
		echo "run.sh: --${v//_/-} must be a comma list of numbers" >&2
		exit 2
	fi
done
IFS=, read -r -a mem_list <<<"$mem_keys"
IFS=, read -r -a writer_list <<<"$writers"

log()
{
	printf '%s %s\n' "$(date +%T)" "$*" >&2
}

fail()
{
	echo "run.sh: $*" >&2
	exit 1
}

want()
{
	[[ ,$workloads, == *,$1,* ]]
}

# --- binaries, results dir, scratch dirs ---

if [[ -z ${ETCDFS:-} || -z ${ETCDFS_BENCH:-} ]]; then
	command -v meson >/dev/null || fail "meson not found"
	if [[ ! -f $build/build.ninja ]]; then
		log "meson setup $build"
		meson setup "$build" "$SRC_DIR" >/dev/null ||
			fail "meson setup '$build' failed"
	fi
	log "ninja -C $build"
	ninja -C "$build" >/dev/null || fail "the build in '$build' failed"
	ETCDFS=${ETCDFS:-$build/mount/etcdfs}
	ETCDFS_BENCH=${ETCDFS_BENCH:-$build/tests/bench/etcdfs-bench}
	ETCDFS_VISIBLE=${ETCDFS_VISIBLE:-$build/tests/bench/etcdfs-visible}
fi
ETCDFS_VISIBLE=${ETCDFS_VISIBLE:-$(dirname "$ETCDFS_BENCH")/etcdfs-visible}
for b in "$ETCDFS" "$ETCDFS_BENCH" "$ETCDFS_VISIBLE"; do
	[[ -x $b ]] || fail "'$b' is not built (is tests/bench in tests/meson.build?)"
done
ETCDFS=$(realpath "$ETCDFS")
ETCDFS_BENCH=$(realpath "$ETCDFS_BENCH")
ETCDFS_VISIBLE=$(realpath "$ETCDFS_VISIBLE")
for t in etcd etcdctl fusermount3 python3 find grep curl; do
	command -v "$t" >/dev/null || fail "'$t' not found"
done
command -v gnuplot >/dev/null ||
	fail "gnuplot not found (apt-get install gnuplot-nox)"

out=${out:-bench-results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || fail "cannot create '$out'"
out=$(cd "$out" && pwd)
RAW=$out/raw.tsv
printf 'key\tsystem\tmetric\tvalue\n' >"$RAW"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-bench.XXXXXX") || fail "no work dir"
tmpfs_base=${TMPFS_DIR:-/dev/shm}
[[ $(stat -f -c %T "$tmpfs_base" 2>/dev/null) == tmpfs ]] ||
	fail "'$tmpfs_base' is not a tmpfs (set TMPFS_DIR)"
TMPFS=$(mktemp -d "$tmpfs_base/etcdfs-bench.XXXXXX") || fail "no tmpfs dir"

FS_PID=
MNT=

cleanup()
{
	local rc=$?

	trap - EXIT INT TERM
	if [[ -n $FS_PID ]]; then
		mnt_down || true
	fi
	etcd_stop "$WORK/etcd" >/dev/null 2>&1
	rm -rf "$TMPFS"
	if ((keep)); then
		echo "run.sh: work dir kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- measuring ---

# rec KEY SYSTEM METRIC VALUE: one sample into raw.tsv
rec()
{
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RAW"
}

# Microseconds since the epoch, without a fork.
now_us()
{
	local t=${EPOCHREALTIME/./}

	echo $((10#$t))
}

# time_ms CMD: runs the shell command CMD (output thrown away), prints its
# wall time in ms; fails if it fails.
time_ms()
{
	local t0 t1

	t0=${EPOCHREALTIME/./}
	if ! eval "$1" >/dev/null 2>"$WORK/cmd.err"; then
		echo "run.sh: '$1' failed:" >&2
		tail -n 5 "$WORK/cmd.err" >&2
		return 1
	fi
	t1=${EPOCHREALTIME/./}
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1000 }'
}

# bench_rec KEY SYSTEM CMD...: runs etcdfs-bench CMD..., records each
# name=value it prints (but n and lost) as a metric of KEY/SYSTEM.
bench_rec()
{
	local key=$1 sys=$2 line kv

	shift 2
	line=$("$ETCDFS_BENCH" "$@") || fail "etcdfs-bench $* failed"
	for kv in $line; do
		case ${kv%%=*} in
		n | wall_s) ;;
		*) rec "$key" "$sys" "${kv%%=*}" "${kv#*=}" ;;
		esac
	done
}

# --- etcd and mounts ---

log "results in $out"
EP=$(etcd_start "$WORK/etcd" --quota-backend-bytes=$((8 << 30)) \
	--snapshot-count=1000000) || fail "cannot start etcd"
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$EP
log "etcd at $EP"

# mnt_up NAME PREFIX [OPTS]: mounts PREFIX at $WORK/mnt-NAME with the daemon
# in the foreground (its pid in FS_PID), with the mount options OPTS (a
# comma list, e.g. "ro") besides the endpoint and the prefix; MOUNT_MS is
# the time from start to a usable mountpoint.
mnt_up()
{
	local t0 limit=$((SECONDS + 900)) opts=${3:+,$3}

	[[ -z $FS_PID ]] || fail "a mount is up already"
	MNT=$WORK/mnt-$1
	mkdir -p "$MNT"
	t0=$(now_us)
	"$ETCDFS" -f -o "endpoints=$EP,prefix=$2$opts" "$MNT" \
		>>"$WORK/fs-$1.log" 2>&1 </dev/null &
	FS_PID=$!
	until awk -v m="$MNT" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; do
		if ! kill -0 "$FS_PID" 2>/dev/null; then
			FS_PID=
			tail -n 20 "$WORK/fs-$1.log" >&2
			fail "etcdfs exited before mounting '$2'"
		fi
		((SECONDS < limit)) || fail "'$2' not mounted after 900 s"
		sleep 0.01
	done
	stat "$MNT" >/dev/null || fail "cannot stat the mount of '$2'"
	MOUNT_MS=$((($(now_us) - t0) / 1000))
}

# fs_stats FILE: the counters of the mount that is up (the root's
# user.etcd.stats, a name and a value a line) into FILE
fs_stats()
{
	getfattr --absolute-names --only-values -n user.etcd.stats "$MNT" \
		>"$1" 2>"$WORK/cmd.err" ||
		fail "cannot read user.etcd.stats of '$MNT': $(cat "$WORK/cmd.err")"
}

# stats_begin: the mount's counters before a measurement, read twice: the
# difference is what reading them costs (getfattr's own requests), which
# stats_end takes off
stats_begin()
{
	fs_stats "$WORK/stats.0"
	fs_stats "$WORK/stats.1"
}

# stats_end KEY SYSTEM OPS: records the FUSE requests the daemon received
# since stats_begin, per operation of the OPS the measurement made:
# fuse_requests (all of them), fuse_OP for each kind it received,
# fuse_stored (values it put in the page cache without a request),
# quorum_waits and quorum_requests (-o quorum's barrier), the last three
# only where there were any
stats_end()
{
	local name value

	fs_stats "$WORK/stats.2"
	while read -r name value; do
		rec "$1" "$2" "$name" "$value"
	done < <(awk -v ops="$3" '
		FNR == 1 { f++ }
		f == 1 { a[$1] = $2; next }
		f == 2 { b[$1] = $2; next }
		/^fuse_/ || /^quorum_(waits|requests) / {
			d = $2 - 2 * b[$1] + a[$1]
			if (/^fuse_/ && !/^fuse_stored /)
				total += d
			if (d)
				out[++n] = sprintf("%s %.4g", $1, d / ops)
		}
		END {
			printf "fuse_requests %.4g\n", total / ops
			for (i = 1; i <= n; i++)
				print out[i]
		}' "$WORK/stats.0" "$WORK/stats.1" "$WORK/stats.2")
}

# The daemon's peak resident set, in KiB.
fs_hwm_kib()
{
	awk '/^VmHWM:/ { print $2 }' "/proc/$FS_PID/status"
}

mnt_down()
{
	local pid=$FS_PID i

	FS_PID=
	fusermount3 -u "$MNT" || fusermount3 -u -z "$MNT" ||
		echo "run.sh: cannot unmount '$MNT'" >&2
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "run.sh: etcdfs $pid still runs after unmount, stopping it" >&2
		kill -TERM "$pid"
	fi
	wait "$pid"
	local rc=$?
	((rc == 0)) || { echo "run.sh: etcdfs exited with $rc" >&2; return 1; }
}

# load PREFIX COUNT SIZE PER_DIR: the data set into etcd
load()
{
	local line

	line=$("$ETCDFS_BENCH" load --endpoint "$EP" --prefix "$1" \
		--count "$2" --size "$3" --per-dir "$4" --threads 4) ||
		fail "cannot load '$1'"
	log "loaded $2 keys of $3 bytes under $1 ($line)"
}

# copy DIR COUNT SIZE PER_DIR: the same data set as files on tmpfs
copy()
{
	mkdir -p "$1"
	"$ETCDFS_BENCH" files --dir "$1" --count "$2" --size "$3" \
		--per-dir "$4" >/dev/null || fail "cannot write '$1'"
}

# --- the machine ---

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "nproc: $(nproc)"
	echo "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "memory: $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "kernel: $(uname -sr)"
	echo "etcd: $(etcd --version | awk '/^etcd Version:/ { print $3 }')"
	echo "etcdfs: $("$ETCDFS" --version 2>&1 | head -n 1)"
	if git -C "$SRC_DIR" rev-parse --short HEAD >/dev/null 2>&1; then
		echo "commit: $(git -C "$SRC_DIR" rev-parse --short HEAD)$(
			git -C "$SRC_DIR" diff --quiet HEAD 2>/dev/null ||
			echo ' (with local changes)')"
	fi
	echo "etcd data: $(df --output=fstype "$WORK" | tail -n 1 | tr -d ' ') (${WORK%/*})"
	echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"
echo "$cmdline" >"$out/command.txt"
{
	echo "mode=$mode reps=$reps read_keys=$read_keys read_size=$read_size"
	echo "tree_keys=$tree_keys mem_keys=$mem_keys mem_size=$mem_size"
	echo "lat_iters=$lat_iters cold_keys=$cold_keys write_iters=$write_iters"
	echo "writers=$writers ctl_puts=$ctl_puts events=$events"
	echo "quorum_keys=$quorum_keys"
} >"$out/params.txt"

# The big trees (workloads 2 and 6) take a mount of many seconds each:
# at most 3 repetitions of those, 1 of a million keys.
big_reps=$((reps < 3 ? reps : 3))

READ_PREFIX=/bench/read/
TREE_PREFIX=/bench/tree/
READ_COPY=$TMPFS/read
TREE_COPY=$TMPFS/tree

# The requests etcd has served on its KV service (Range, Txn, Put,
# DeleteRange), from its metrics: what the daemon asked for in between
# two calls, when nothing else talks to etcd.
etcd_kv_requests()
{
	curl -s --max-time 10 "$EP/metrics" | awk '
		/^grpc_server_handled_total\{/ &&
		/grpc_service="etcdserverpb.KV"/ { n += $NF }
		END { printf "%d\n", n }'
}

# run_etcdfs KEY CMD [SYSTEM]: times CMD (@MNT@ stands for the mount) on
# the mount that is up; records its time (also left in LAST_MS) and the
# etcd requests it caused, as SYSTEM's (default etcdfs).
run_etcdfs()
{
	local t r0 r1 sys=${3:-etcdfs}

	r0=$(etcd_kv_requests)
	t=$(time_ms "${2//@MNT@/$MNT}") || fail "$1 on $sys failed"
	r1=$(etcd_kv_requests)
	LAST_MS=$t
	rec "$1" "$sys" ms "$t"
	rec "$1" "$sys" etcd_requests $((r1 - r0))
}

# run_base KEY SYSTEM CMD: times a baseline's command
run_base()
{
	local t

	t=$(time_ms "$3") || fail "$1 on $2 failed"
	rec "$1" "$2" ms "$t"
}

# run_helper_list KEY PREFIX COUNT [ARGS...]: the helper's range request
# of PREFIX, timed in-process
run_helper_list()
{
	local key=$1 prefix=$2 count=$3 line

	shift 3
	line=$("$ETCDFS_BENCH" list --endpoint "$EP" --prefix "$prefix" \
		--count "$count" --iters 1 "$@") ||
		fail "helper list of '$prefix' failed"
	rec "$key" helper ms "${line#ms=}"
}

# mount_read: a fresh mount of the read set, its time and etcd requests
mount_read()
{
	local r0 r1

	r0=$(etcd_kv_requests)
	mnt_up read "$READ_PREFIX"
	r1=$(etcd_kv_requests)
	rec mount.read etcdfs ms "$MOUNT_MS"
	rec mount.read etcdfs etcd_requests $((r1 - r0))
}

if want 1 || want 2 || want 3; then
	load "$READ_PREFIX" "$read_keys" "$read_size" 0
	copy "$READ_COPY" "$read_keys" "$read_size" 0
fi

# Every repetition measures etcdfs and its baselines one after the other,
# so that a change in the machine's load falls on both sides alike.

# --- 1. read a subtree ---

if want 1; then
	log "1: read a subtree of $read_keys keys"
	cat_cmd='cat @MNT@/*'
	grep_cmd='grep -r needle @MNT@'
	for ((r = 0; r < reps; r++)); do
		for c in cat grep; do
			cmd=${c}_cmd
			mount_read
			run_etcdfs "$c.cold" "${!cmd}"
			mnt_down || fail "unmount failed"
			run_base "$c.cold" tmpfs "${!cmd//@MNT@/$READ_COPY}"
		done
		run_base read.prefix etcdctl "etcdctl get --prefix $READ_PREFIX"
		run_helper_list read.prefix "$READ_PREFIX" "$read_keys"
	done
	mount_read
	# what etcdfs shows is what tmpfs holds, byte for byte
	cmp -s <(cat "$MNT"/*) <(cat "$READ_COPY"/*) ||
		fail "the mount does not show the data set's values"
	time_ms "${grep_cmd//@MNT@/$MNT}" >/dev/null || fail "grep failed"
	for ((r = 0; r < reps; r++)); do
		for c in cat grep; do
			cmd=${c}_cmd
			run_etcdfs "$c.warm" "${!cmd}"
			run_base "$c.warm" tmpfs "${!cmd//@MNT@/$READ_COPY}"
		done
	done
	mnt_down || fail "unmount failed"
fi

# --- 2. list ---

if want 2; then
	log "2: ls -l of $read_keys entries, find over $tree_keys keys"
	ls_cmd='ls -l @MNT@'
	for ((r = 0; r < reps; r++)); do
		mount_read
		run_etcdfs ls.cold "$ls_cmd"
		mnt_down || fail "unmount failed"
		run_base ls.cold tmpfs "${ls_cmd//@MNT@/$READ_COPY}"
		run_base ls.keys etcdctl \
			"etcdctl get --prefix --keys-only $READ_PREFIX"
		run_helper_list ls.keys "$READ_PREFIX" "$read_keys" --keys-only
	done
	mount_read
	time_ms "${ls_cmd//@MNT@/$MNT}" >/dev/null || fail "ls failed"
	for ((r = 0; r < reps; r++)); do
		run_etcdfs ls.warm "$ls_cmd"
		run_base ls.warm tmpfs "${ls_cmd//@MNT@/$READ_COPY}"
	done
	mnt_down || fail "unmount failed"

	load "$TREE_PREFIX" "$tree_keys" "$mem_size" 100
	copy "$TREE_COPY" "$tree_keys" "$mem_size" 100
	rec "mem.$tree_keys" raw bytes "$("$ETCDFS_BENCH" raw \
		--prefix "$TREE_PREFIX" --count "$tree_keys" \
		--size "$mem_size" --per-dir 100 | sed 's/.*raw_bytes=//')"
	# cold: a fresh mount each time; its mount time and peak memory
	# are workload 6's figures for this tree
	for ((r = 0; r < big_reps; r++)); do
		r0=$(etcd_kv_requests)
		mnt_up tree "$TREE_PREFIX"
		r1=$(etcd_kv_requests)
		rec "mem.$tree_keys" etcdfs mount_ms "$MOUNT_MS"
		rec "mem.$tree_keys" etcdfs etcd_requests $((r1 - r0))
		run_etcdfs find.cold 'find @MNT@'
		rec "mem.$tree_keys" etcdfs list_ms "$LAST_MS"
		rec "mem.$tree_keys" etcdfs hwm_kib "$(fs_hwm_kib)"
		if ((r == big_reps - 1)); then
			n=$(find "$MNT" -name 'k*' | wc -l)
			((n == tree_keys)) ||
				fail "find saw $n keys of $tree_keys"
			for ((w = 0; w < reps; w++)); do
				run_etcdfs find.warm 'find @MNT@'
				run_base find.warm tmpfs "find $TREE_COPY"
			done
		fi
		mnt_down || fail "unmount failed"
		run_base find.cold tmpfs "find $TREE_COPY"
		run_base find.keys etcdctl \
			"etcdctl get --prefix --keys-only $TREE_PREFIX"
		run_helper_list find.keys "$TREE_PREFIX" "$tree_keys" --keys-only
	done
	# the baseline of a mount: the helper's listing of keys and values
	# in the daemon's pages of 1000 keys
	run_helper_list "mem.$tree_keys" "$TREE_PREFIX" "$tree_keys" \
		--page-size 1000
	rm -rf "$TREE_COPY"
fi

# --- 3. one key ---

if want 3; then
	log "3: stat and read latency"
	lat=(--count "$read_keys" --size "$read_size")
	for ((r = 0; r < reps; r++)); do
		for op in stat read; do
			mount_read
			r0=$(etcd_kv_requests)
			bench_rec "$op.cold" etcdfs "$op" --dir "$MNT" --cold \
				--iters "$cold_keys" "${lat[@]}"
			r1=$(etcd_kv_requests)
			rec "$op.cold" etcdfs etcd_requests $((r1 - r0))
			mnt_down || fail "unmount failed"
		done
		bench_rec get.cold helper get --endpoint "$EP" \
			--prefix "$READ_PREFIX" --cold --iters "$cold_keys" \
			"${lat[@]}"
	done
	# warm: on a read-write mount and on a read-only one (whose opens
	# send the daemon nothing), each fresh and read once before it is
	# measured, then on tmpfs; with the FUSE requests each loop sent the
	# daemon, per operation (its untimed first pass over the files
	# included)
	warm=(--files 100 --iters "$lat_iters" "${lat[@]}")
	ops=$((lat_iters + (read_keys < 100 ? read_keys : 100)))
	for ((r = 0; r < reps; r++)); do
		for opts in "" ro; do
			sys=etcdfs${opts:+ -o $opts}
			mnt_up read "$READ_PREFIX" "$opts"
			"$ETCDFS_BENCH" read --dir "$MNT" --files 100 --iters 1 \
				"${lat[@]}" >/dev/null || fail "reading '$MNT' failed"
			for op in stat read; do
				r0=$(etcd_kv_requests)
				stats_begin
				bench_rec "$op.warm" "$sys" "$op" --dir "$MNT" \
					"${warm[@]}"
				stats_end "$op.warm" "$sys" "$ops"
				r1=$(etcd_kv_requests)
				rec "$op.warm" "$sys" etcd_requests $((r1 - r0))
			done
			mnt_down || fail "unmount failed"
		done
		for op in stat read; do
			bench_rec "$op.warm" tmpfs "$op" --dir "$READ_COPY" \
				"${warm[@]}"
		done
		bench_rec get.warm helper get --endpoint "$EP" \
			--prefix "$READ_PREFIX" --files 100 \
			--iters $((lat_iters / 10 + 1)) "${lat[@]}"
	done
fi
rm -rf "$READ_COPY"

# --- 4. writes ---

if want 4; then
	log "4: writes, ${writers//,/ and } writers"
	mnt_up write /bench/write-fs/
	value=$(head -c 1024 /dev/zero | tr '\0' v)
	for ((r = 0; r < reps; r++)); do
		for w in "${writer_list[@]}"; do
			iters=$write_iters
			((w > 1)) && iters=$(((write_iters + 3) / 4))
			r0=$(etcd_kv_requests)
			bench_rec "write.$w" etcdfs write --dir "$MNT" \
				--threads "$w" --iters "$iters" --files 4 \
				--size 1024
			r1=$(etcd_kv_requests)
			# per commit, the files' first writes included
			rec "write.$w" etcdfs etcd_requests "$(awk \
				-v d=$((r1 - r0)) -v n=$((w * (iters + 4))) \
				'BEGIN { printf "%.2f", d / n }')"
			bench_rec "write.$w" helper txn --endpoint "$EP" \
				--prefix /bench/write-txn/ --threads "$w" \
				--iters "$iters" --files 4 --size 1024
			t=$(time_ms "seq $ctl_puts | xargs -P $w -I{} \
				etcdctl put /bench/write-ctl/k{} $value") ||
				fail "etcdctl put failed"
			rec "write.$w" etcdctl rate \
				"$(awk -v n="$ctl_puts" -v t="$t" \
				'BEGIN { printf "%.1f", n / (t / 1000) }')"
		done
	done
	mnt_down || fail "unmount failed"
fi

# --- 5. remote change to inotify event ---

if want 5; then
	log "5: remote change to inotify event"
	mnt_up live /bench/live/
	for ((r = 0; r < reps; r++)); do
		line=$("$ETCDFS_BENCH" inotify --endpoint "$EP" \
			--prefix /bench/live/ --dir "$MNT" --name "live$r" \
			--iters "$events" --size 64 --timeout-ms 2000)
		rc=$?
		if ((rc == 3)); then
			rec inotify etcdfs na "${line#na_reason=}"
			break
		fi
		((rc == 0)) || fail "etcdfs-bench inotify failed"
		for kv in $line; do
			case ${kv%%=*} in
			n) ;;
			*) rec inotify etcdfs "${kv%%=*}" "${kv#*=}" ;;
			esac
		done
	done
	mnt_down || fail "unmount failed"
fi

# --- 7. visibility ---

if want 7; then
	log "7: another client's new key, 4 directories deep, readable"
	mnt_up vis /bench/vis/
	for ((r = 0; r < reps; r++)); do
		line=$("$ETCDFS_VISIBLE" --endpoint "$EP" --prefix /bench/vis/ \
			--dir "$MNT" --name "vis$r" --depth 4 --iters 20 \
			--timeout-ms 5000) || fail "etcdfs-visible failed"
		for kv in $line; do
			case ${kv%%=*} in
			n) ;;
			*) rec visible etcdfs "${kv%%=*}" "${kv#*=}" ;;
			esac
		done
	done
	# the echo replays the new directories for inotify, 10 ms each, on
	# the mount, behind the reads (the mirror serves a key before its
	# echo): let it finish (5 per key, 20 keys a run), or the unmount
	# finds the mount busy
	sleep $((reps + 3))
	mnt_down || fail "unmount failed"
fi

# --- 8. quorum ---

if want 8; then
	log "8: warm cat of $quorum_keys files, with and without -o quorum"
	quorum_prefix=/bench/quorum/
	load "$quorum_prefix" "$quorum_keys" 1024 500
	# The files by path, relative to the mount (listed once, on the
	# first plain mount): `xargs cat` reads them on either mount without
	# a listing, which the barrier would hold as well.  Each repetition
	# mounts without and with -o quorum in turn, reads every file once,
	# then times the warm pass, with the FUSE requests and the barrier's
	# waits and linearizable requests per file.
	qfiles=$WORK/quorum.files
	qcat="(cd @MNT@ && exec xargs -0 cat) <$qfiles"
	for ((r = 0; r < reps; r++)); do
		for opts in "" quorum; do
			sys=etcdfs${opts:+ -o $opts}
			mnt_up quorum "$quorum_prefix" "$opts"
			if [[ ! -s $qfiles ]]; then
				(cd "$MNT" && find . -type f -print0) >"$qfiles" ||
					fail "cannot list the mount of '$quorum_prefix'"
				n=$(tr -cd '\0' <"$qfiles" | wc -c)
				((n == quorum_keys)) ||
					fail "the mount shows $n files of $quorum_keys"
			fi
			time_ms "${qcat//@MNT@/$MNT}" >/dev/null ||
				fail "cat on $sys failed"
			stats_begin
			run_etcdfs qcat.warm "$qcat" "$sys"
			stats_end qcat.warm "$sys" "$quorum_keys"
			mnt_down || fail "unmount failed"
		done
	done
fi

# --- 6. memory ---

if want 6; then
	for n in "${mem_list[@]}"; do
		if want 2 && ((n == tree_keys)); then
			continue	# measured with find in workload 2
		fi
		log "6: memory, mount and list of $n keys"
		prefix=/bench/mem-$n/
		load "$prefix" "$n" "$mem_size" 100
		rec "mem.$n" raw bytes "$("$ETCDFS_BENCH" raw --prefix "$prefix" \
			--count "$n" --size "$mem_size" --per-dir 100 |
			sed 's/.*raw_bytes=//')"
		mreps=$big_reps
		((n >= 1000000)) && mreps=1
		for ((r = 0; r < mreps; r++)); do
			r0=$(etcd_kv_requests)
			mnt_up "mem$n" "$prefix"
			r1=$(etcd_kv_requests)
			rec "mem.$n" etcdfs mount_ms "$MOUNT_MS"
			rec "mem.$n" etcdfs etcd_requests $((r1 - r0))
			t=$(time_ms "find $MNT >$WORK/find.out") ||
				fail "find on etcdfs failed"
			rec "mem.$n" etcdfs list_ms "$t"
			rec "mem.$n" etcdfs hwm_kib "$(fs_hwm_kib)"
			k=$(grep -c '/k[0-9]*$' "$WORK/find.out")
			((k == n)) || fail "find saw $k keys of $n"
			mnt_down || fail "unmount failed"
		done
		rm -f "$WORK/find.out"
		# the helper's listing takes about as long as a mount: it is
		# measured up to --mem-baseline-max keys
		if ((n <= mem_baseline_max)); then
			run_helper_list "mem.$n" "$prefix" "$n" --page-size 1000
		fi
	done
fi

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"

# --- the report ---

log "report"
python3 "$BENCH_DIR/report.py" "$out" || fail "report failed"
gnuplot -e "datafile='$out/plot.dat'; outfile='$out/results.png'" \
	"$BENCH_DIR/plot.gp" || fail "gnuplot failed"
[[ -s $out/results.md && -s $out/results.png ]] || fail "no report written"
log "done: $out/results.md, $out/results.png"
