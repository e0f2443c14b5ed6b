#!/bin/bash
#
# tests/bench/listing.sh - listing and mount against etcdctl, in one run
#
#   bash tests/bench/listing.sh [--smoke] [--keys LIST] [--reps N]
#                               [--out FILE] [--build DIR]
#
# Starts a private etcd on loopback (tests/lib/etcd.sh, a quota of 8 GiB;
# ETCDFS_ETCD_VERSION=3.5 for etcd 3.5), loads the data sets with
# etcdfs-bench load (txns of 128 puts over gRPC, 4 threads), and measures,
# each against its baseline in the same run:
#
#   - one range of 10,000 values of 1 KiB through the helper, in process
#     (etcdfs-bench list, one request) vs `etcdctl get --prefix`
#     (process start included), medians of --reps;
#   - for each tree of --keys (default 200,000 and 1,000,000 keys of 256 B,
#     100 per directory): a mount until it answers (the daemon lists the
#     tree before it mounts) vs `etcdctl get --prefix` of the tree to
#     /dev/null; the daemon's peak RSS (VmHWM, after a find of every key)
#     vs the raw bytes of keys and values + 100 B per key; the requests
#     the mount sent (etcd's own counters);
#   - 16 writers committing through the helper (etcdfs-bench txn);
#   - a remote change to its inotify event on a mount (etcdfs-bench
#     inotify), p50 and p99;
#   - the helper's own listing of each tree in the daemon's pages of
#     1,000 keys (etcdfs-bench list), to tell the helper's share of a
#     mount from the filesystem's.
#
# The writes and the inotify delay are measured first, on a small
# database: in a run that measured them after putting and deleting a
# million keys, etcd 3.4 committed 100 times slower.
#
# Prints a markdown table (also to --out FILE) with the ratios and the
# targets of issue 12.  --smoke: a few keys, one repetition, to check that
# it runs (tests/bench/smoke).  Stops what it started, by pid, at the end.
#
# What it cannot do: keep other processes off the machine (the load
# average is printed), or measure a cluster of several members.

set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib/etcd.sh
source "$src/tests/lib/etcd.sh"
export LC_ALL=C

keys=200000,1000000
reps=5
range_keys=10000
out=
build=$src/build
while (($#)); do
	case $1 in
	--smoke) keys=300 reps=1 range_keys=50 ;;
	--keys) keys=$2; shift ;;
	--reps) reps=$2; shift ;;
	--out) out=$2; shift ;;
	--build) build=$2; shift ;;
	*) echo "listing.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
IFS=, read -r -a key_list <<<"$keys"
ETCDFS=${ETCDFS:-$build/mount/etcdfs}
ETCDFS_BENCH=${ETCDFS_BENCH:-$build/tests/bench/etcdfs-bench}
for b in "$ETCDFS" "$ETCDFS_BENCH"; do
	[[ -x $b ]] || { echo "listing.sh: '$b' is not built" >&2; exit 1; }
done

fail()
{
	echo "listing.sh: $*" >&2
	exit 1
}

log()
{
	printf '%s %s\n' "$(date +%T)" "$*" >&2
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-listing.XXXXXX") || exit 1
FS_PID=
MNT=
cleanup()
{
	local rc=$?

	trap - EXIT INT TERM
	[[ -z $FS_PID ]] || mnt_down
	etcd_stop "$WORK/etcd" >/dev/null 2>&1
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

EP=$(etcd_start "$WORK/etcd" --quota-backend-bytes=$((8 << 30)) \
	--snapshot-count=1000000) || fail "cannot start etcd"
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$EP
# a million keys take longer than etcdctl's default 5 s
CTL="${ETCDCTL_BIN:-etcdctl} --command-timeout=600s"

# ms CMD: the wall time of the shell command CMD, in ms
ms()
{
	local t0=${EPOCHREALTIME/./} t1

	eval "$1" >/dev/null 2>"$WORK/cmd.err" ||
		{ tail -n 5 "$WORK/cmd.err" >&2; fail "'$1' failed"; }
	t1=${EPOCHREALTIME/./}
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) / 1000 }'
}

# median of the numbers on stdin
median()
{
	sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

kv_requests()
{
	curl -s --max-time 10 "$EP/metrics" | awk '
		/^grpc_server_handled_total\{/ &&
		/grpc_service="etcdserverpb.KV"/ { n += $NF }
		END { printf "%d\n", n }'
}

# mnt_up PREFIX: mounts PREFIX at $MNT; MOUNT_MS from start to answering
mnt_up()
{
	local t0 limit=$((SECONDS + 1800))

	MNT=$WORK/mnt
	mkdir -p "$MNT"
	t0=${EPOCHREALTIME/./}
	"$ETCDFS" -f -o "endpoints=$EP,prefix=$1" "$MNT" \
		>>"$WORK/fs.log" 2>&1 </dev/null &
	FS_PID=$!
	until awk -v m="$MNT" '$2 == m { f = 1 } END { exit !f }' /proc/mounts
	do
		kill -0 "$FS_PID" 2>/dev/null ||
			{ FS_PID=; tail -n 20 "$WORK/fs.log" >&2;
			  fail "etcdfs exited before mounting '$1'"; }
		((SECONDS < limit)) || fail "'$1' not mounted after 1800 s"
		sleep 0.005
	done
	stat "$MNT" >/dev/null || fail "cannot stat the mount of '$1'"
	MOUNT_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
}

mnt_down()
{
	local pid=$FS_PID i

	FS_PID=
	fusermount3 -u "$MNT" || fusermount3 -u -z "$MNT"
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && kill -TERM "$pid"
	wait "$pid"
}

load()
{
	"$ETCDFS_BENCH" load --endpoint "$EP" --prefix "$1" --count "$2" \
		--size "$3" --per-dir "$4" --threads 4 >/dev/null ||
		fail "cannot load '$1'"
}

table=$WORK/table.md
row()
{
	printf '| %s |\n' "$*" >>"$table"
}

# ratio A B [DIGITS]
ratio()
{
	awk -v a="$1" -v b="$2" -v d="${3:-2}" \
		'BEGIN { f = "%." d "f"; printf f, (b > 0 ? a / b : 0) }'
}

# verdict R LIMIT: "met" if R <= LIMIT
verdict()
{
	awk -v r="$1" -v l="$2" 'BEGIN { print (r <= l ? "met" : "not met") }'
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
row "workload | etcdfs | baseline | ratio | target"
row "---|---|---|---|---"

# --- one range of 10,000 x 1 KiB ---

log "range of $range_keys values of 1 KiB"
load /bench/range/ "$range_keys" 1024 0
ctl=$(for ((r = 0; r < reps; r++)); do
	ms "$CTL get --prefix /bench/range/"; done | median) ||
	fail "etcdctl get failed"
helper=$("$ETCDFS_BENCH" list --endpoint "$EP" --prefix /bench/range/ \
	--count "$range_keys" --iters "$reps" | sed 's/^ms=//' | median) ||
	fail "helper list failed"
r=$(ratio "$helper" "$ctl")
row "one range of $range_keys × 1 KiB, helper in process | $helper ms |" \
	"etcdctl get --prefix $ctl ms | ×$r | ≤ ×1: $(verdict "$r" 1)"

# --- 16 commits at once through the helper ---

log "16 writers through the helper"
iters=$((reps * 40))
rate=$("$ETCDFS_BENCH" txn --endpoint "$EP" --prefix /bench/txn/ \
	--threads 16 --iters "$iters" --files 4 --size 1024 |
	sed 's/.*rate=\([0-9.]*\).*/\1/') || fail "txn failed"
row "16 writers, 1 KiB commits, helper | $rate/s |" \
	"JSON gateway: gone (1,476/s recorded) | ×$(ratio "$rate" 1476) |" \
	"≥ ×1.5: $(verdict $((1476 * 3 / 2)) "$rate")"

# --- a remote change to its inotify event ---

log "remote change to inotify event"
mnt_up /bench/live/
line=$("$ETCDFS_BENCH" inotify --endpoint "$EP" --prefix /bench/live/ \
	--dir "$MNT" --name live --iters $((reps * 200)) --size 64 \
	--timeout-ms 2000) || fail "inotify failed"
mnt_down || fail "etcdfs did not exit cleanly"
p50=$(sed 's/.* p50_us=\([0-9.]*\).*/\1/' <<<"$line")
p99=$(sed 's/.* p99_us=\([0-9.]*\).*/\1/' <<<"$line")
row "remote change → inotify event | p50 $(ratio "$p50" 1000) ms," \
	"p99 $(ratio "$p99" 1000) ms | | | p99 ≤ 5 ms:" \
	"$(verdict "$p99" 5000)"

# --- mounts of big trees ---

for n in "${key_list[@]}"; do
	log "mount of $n keys of 256 B"
	prefix=/bench/tree-$n/
	load "$prefix" "$n" 256 100
	raw=$("$ETCDFS_BENCH" raw --prefix "$prefix" --count "$n" --size 256 \
		--per-dir 100 | sed 's/.*raw_bytes=//')
	mreps=$((reps < 3 ? reps : 3))
	((n >= 1000000)) && mreps=1
	ctl=$(for ((r = 0; r < mreps; r++)); do
		ms "$CTL get --prefix $prefix"; done | median) ||
		fail "etcdctl get failed"
	mounts=() hwm=0
	for ((r = 0; r < mreps; r++)); do
		r0=$(kv_requests)
		mnt_up "$prefix"
		r1=$(kv_requests)
		mounts+=("$MOUNT_MS")
		k=$(find "$MNT" -name 'k*' | wc -l)
		((k == n)) || fail "find saw $k keys of $n"
		h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$FS_PID/status")
		((h > hwm)) && hwm=$h
		mnt_down || fail "etcdfs did not exit cleanly"
	done
	mount=$(printf '%s\n' "${mounts[@]}" | median)
	r=$(ratio "$mount" "$ctl")
	target=1.5
	((n >= 1000000)) && target=2
	row "mount of $n keys of 256 B ($((r1 - r0)) requests) |" \
		"$(ratio "$mount" 1000 2) s | etcdctl get --prefix" \
		"$(ratio "$ctl" 1000 2) s | ×$r | ≤ ×$target:" \
		"$(verdict "$r" "$target")"
	budget=$((raw + 100 * n))
	r=$(ratio $((hwm * 1024)) "$budget")
	row "peak RSS, $n keys | $(ratio "$hwm" 1024 1) MiB |" \
		"raw $(ratio "$raw" 1048576 1) MiB + 100 B/key =" \
		"$(ratio "$budget" 1048576 1) MiB | ×$r | ≤ ×1.5:" \
		"$(verdict "$r" 1.5)"
	# the helper alone, in the daemon's pages: what the mount adds to it
	list=$("$ETCDFS_BENCH" list --endpoint "$EP" --prefix "$prefix" \
		--count "$n" --iters 1 --page-size 1000 | sed 's/^ms=//') ||
		fail "helper list failed"
	row "helper listing of the $n keys in pages of 1,000 |" \
		"$(ratio "$list" 1000 2) s | etcdctl get --prefix" \
		"$(ratio "$ctl" 1000 2) s | ×$(ratio "$list" "$ctl") |"
done

{
	echo "machine: $(nproc) cores, $(awk -F': ' '/^model name/ \
		{ print $2; exit }' /proc/cpuinfo), $(awk '/^MemTotal:/ \
		{ printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)," \
		"$(uname -sr)"
	echo "etcd: $("$ETCD_BIN" --version | awk '/^etcd Version:/ \
		{ print $3 }'); load average at start $load_start, at end" \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	cat "$table"
} | tee ${out:+"$out"}
