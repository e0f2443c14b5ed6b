#!/bin/bash
#
# tests/bench/grpc-range.sh - a range of N values of 1 KiB, three ways
#
#   tests/bench/grpc-range.sh [BUILD_DIR] [N] [REPS]
#
# Starts a private etcd (tests/lib/etcd.sh; ETCDFS_ETCD_VERSION=3.5 for
# etcd 3.5), puts N keys of 1 KiB under /bench/ (default 10,000), and times
# in one run: `etcdctl get --prefix` to /dev/null and one POST of the range
# to etcd's JSON gateway with curl (their process starts included), then
# one Range through the gRPC transport and one store_list, in process
# (etcdfs-grpc-range), REPS times each (default 7; medians).  Stops its
# etcd and removes its data at the end.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$here/../../build}
n=${2:-10000}
reps=${3:-7}
. "$here/../lib/etcd.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-grpc-range.XXXXXX")
trap 'etcd_stop "$dir/etcd"; rm -rf "$dir"' EXIT
ep=$(etcd_start "$dir/etcd" --quota-backend-bytes=4294967296)
"$ETCDCTL_BIN" version | head -1
python3 - "$n" >"$dir/load.txt" <<'PY'
import sys
v = "x" * 1024
for i in range(int(sys.argv[1])):
    print('put /bench/k%06d "%s"' % (i, v))
PY
# one etcdctl txn per 100 puts (etcd allows 128): fast enough, and no giant request
split -l 100 "$dir/load.txt" "$dir/part."
for f in "$dir"/part.*; do
	{ echo; cat "$f"; echo; echo; } |
		ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" txn >/dev/null
done
# timed REPS times: the median of what "$@" takes, in ms
median_ms()
{
	local what=$1 i s e
	local -a times=()

	shift
	for ((i = 0; i < reps; i++)); do
		s=$(date +%s%N)
		"$@" >/dev/null
		e=$(date +%s%N)
		times+=($(((e - s) / 100000)))
	done
	printf '%s\n' "${times[@]}" | sort -n |
		awk -v r="$reps" -v w="$what" '{ a[NR] = $1 } END {
			printf "%s: %.1f ms (median of %d)\n", w,
				a[int(r / 2) + 1] / 10, r }'
}
median_ms "etcdctl get --prefix" \
	env ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" get --prefix /bench/
# /bench/ to /bench0, base64
median_ms "json gateway range, curl" curl -sf -X POST -o /dev/null \
	-d '{"key":"L2JlbmNoLw==","range_end":"L2JlbmNoMA=="}' \
	"$ep/v3/kv/range"
"$build/tests/bench/etcdfs-grpc-range" "$ep" /bench/ "$reps"
