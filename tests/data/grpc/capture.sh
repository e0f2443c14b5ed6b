#!/bin/bash
#
# tests/data/grpc/capture.sh - captures the gRPC reply fixtures of
# tests/unit/test_grpc.c from real etcd 3.4 and 3.5 servers
#
#   tests/data/grpc/capture.sh [3.4|3.5 ...]     (default: both)
#
# For each version, starts private etcd servers on loopback
# (tests/lib/etcd.sh; 3.5 is Debian 13's, see tests/lib/fetch-etcd35.sh):
# one plain, one with auth on, one with a tiny space quota.  It sends a
# fixed sequence of gRPC requests, encoded by pb.py, each with its own
# curl --http2-prior-knowledge process, and writes for each CASE:
#
#   VERSION/CASE/body       the reply body as it came: gRPC frames
#   VERSION/CASE/status     the HTTP status, then the grpc-status and
#                           grpc-message lines (trailers, or headers of a
#                           call that failed at once)
#
# Watch cases hold their stream open for 3 seconds while etcdctl changes
# keys, so their body has several frames.  The sequence starts on an empty
# store, so revisions come out the same on every run; ids, member ids and
# ports change.  The malformed cases (tests/data/grpc/bad/) are written by
# hand and by tests/unit/test_grpc.c from these.  Capturing again
# overwrites body and status: diff them before committing.

set -eu

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pb=$here/pb.py
versions=("$@")
((${#versions[@]})) || versions=(3.4 3.5)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-capture-grpc.XXXXXX")
cleanup()
{
	local d
	for d in "$tmp"/*/; do
		[[ -d $d ]] && etcd_stop "$d" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# call CASE METHOD [ARGS...]: one unary call, its reply kept
call()
{
	local name=$1 method=$2 kind dir
	shift 2
	case $method in
	*/Range) kind=range ;;
	*/Put) kind=put ;;
	*/Txn) kind=txn ;;
	*/LeaseGrant) kind=lease_grant ;;
	*/LeaseTimeToLive | */LeaseRevoke) kind=lease_id ;;
	*/MemberList) kind=members ;;
	*/Authenticate) kind=auth ;;
	*) kind=empty ;;
	esac
	dir=$out/$name
	mkdir -p "$dir"
	python3 "$pb" "$kind" "$@" >"$tmp/req.bin"
	curl -s --http2-prior-knowledge --max-time 10 \
		-H 'content-type: application/grpc' -H 'te: trailers' \
		"${hdr[@]}" --data-binary @"$tmp/req.bin" -o "$dir/body" \
		-D "$tmp/headers" "$ep/$method" || true
	{
		awk 'NR == 1 { print $2 }' "$tmp/headers"
		grep -ai '^grpc-\(status\|message\):' "$tmp/headers" |
			tr -d '\r' || true
	} >"$dir/status"
	printf '%-5s %-26s %s\n' "$v" "$name" "$(tr '\n' ' ' <"$dir/status")"
}

# watch CASE SECONDS "ACTIONS" FRAME-ARGS...: a stream held open while
# ACTIONS (shell, with ctl) run; FRAME-ARGS sets are separated by '--'
watch_case()
{
	local name=$1 secs=$2 actions=$3 dir a=()
	shift 3
	dir=$out/$name
	mkdir -p "$dir"
	: >"$tmp/req.bin"
	for x in "$@" --; do
		if [[ $x == -- ]]; then
			python3 "$pb" watch "${a[@]}" >>"$tmp/req.bin"
			a=()
		else
			a+=("$x")
		fi
	done
	curl -s --http2-prior-knowledge --max-time "$secs" \
		-H 'content-type: application/grpc' -H 'te: trailers' \
		"${hdr[@]}" --data-binary @"$tmp/req.bin" -o "$dir/body" \
		-D "$tmp/headers" "$ep/etcdserverpb.Watch/Watch" &
	local pid=$!
	sleep 0.5
	eval "$actions"
	wait "$pid" || true
	{
		awk 'NR == 1 { print $2 }' "$tmp/headers"
		grep -ai '^grpc-\(status\|message\):' "$tmp/headers" |
			tr -d '\r' || true
	} >"$dir/status"
	printf '%-5s %-26s %s bytes\n' "$v" "$name" "$(stat -c %s "$dir/body")"
}

ctl()
{
	ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" "$@" >/dev/null
}

for v in "${versions[@]}"; do
	out=$here/$v
	hdr=()
	(
		export ETCDFS_ETCD_VERSION=$v
		. "$here/../../lib/etcd.sh"

		# ---- a plain etcd ----
		ep=$(etcd_start "$tmp/$v-plain")
		call put etcdserverpb.KV/Put key=/a/x value=v1    # rev 2
		call put-prev-kv etcdserverpb.KV/Put key=/a/x value=v2 \
			prev_kv=True                                    # rev 3
		ctl put /a/y "$(printf 'line1\nline2')"              # rev 4
		ctl put /a/z ''                                      # rev 5
		call range-one etcdserverpb.KV/Range key=/a/x
		call range-prefix etcdserverpb.KV/Range key=/a/ range_end=/a0
		call range-absent etcdserverpb.KV/Range key=/nope
		call range-count-only etcdserverpb.KV/Range key=/a/ \
			range_end=/a0 count_only=True
		call range-keys-only etcdserverpb.KV/Range key=/a/ \
			range_end=/a0 keys_only=True
		call range-limit etcdserverpb.KV/Range key=/a/ range_end=/a0 \
			limit=2
		call range-at-revision etcdserverpb.KV/Range key=/a/x \
			revision=2
		call range-future etcdserverpb.KV/Range key=/a/x revision=99
		call txn-cas-won etcdserverpb.KV/Txn \
			"cmp=[('/a/x','MOD',3)]" \
			"ok=[('put',{'key':'/a/x','value':'v3'})]" \
			"ko=[('range',{'key':'/a/x'})]"                # rev 6
		call txn-cas-lost etcdserverpb.KV/Txn \
			"cmp=[('/a/x','MOD',3)]" \
			"ok=[('put',{'key':'/a/x','value':'v4'})]" \
			"ko=[('range',{'key':'/a/x'})]"
		call txn-create-exists etcdserverpb.KV/Txn \
			"cmp=[('/a/x','MOD',0)]" \
			"ok=[('put',{'key':'/a/x','value':'v4'})]" \
			"ko=[('range',{'key':'/a/x'})]"
		call txn-delete-won etcdserverpb.KV/Txn \
			"cmp=[('/a/z','MOD',5)]" \
			"ok=[('del',{'key':'/a/z','prev_kv':True})]" \
			"ko=[('range',{'key':'/a/z'})]"                # rev 7
		call txn-delete-absent etcdserverpb.KV/Txn \
			"ok=[('del',{'key':'/a/z','prev_kv':True})]" \
			"ko=[('range',{'key':'/a/z'})]"
		call txn-move-won etcdserverpb.KV/Txn \
			"cmp=[('/a/y','MOD',4),('/a/w','MOD',0)]" \
			"ok=[('put',{'key':'/a/w','value':'moved'}),('del',{'key':'/a/y'})]" \
			"ko=[('range',{'key':'/a/y'}),('range',{'key':'/a/w'})]" # rev 8
		call txn-move-lost etcdserverpb.KV/Txn \
			"cmp=[('/a/y','MOD',4),('/a/w','MOD',0)]" \
			"ok=[('put',{'key':'/a/w','value':'moved'}),('del',{'key':'/a/y'})]" \
			"ko=[('range',{'key':'/a/y'}),('range',{'key':'/a/w'})]"
		call lease-grant etcdserverpb.Lease/LeaseGrant ttl=60
		call lease-ttl-absent etcdserverpb.Lease/LeaseTimeToLive id=12345
		call lease-revoke-absent etcdserverpb.Lease/LeaseRevoke id=12345
		call members etcdserverpb.Cluster/MemberList linearizable=True
		call status etcdserverpb.Maintenance/Status
		call auth-not-enabled etcdserverpb.Auth/Authenticate \
			name=root password=pw
		call unimplemented etcdserverpb.KV/NoSuchMethod
		watch_case watch-events 3 \
			"ctl put /w/a 1; ctl put /w/a 2; ctl del /w/a" \
			key=/w/ range_end=/w0 prev_kv=True progress_notify=True
		watch_case watch-progress 2 "" \
			key=/w/ range_end=/w0 -- progress=True
		watch_case watch-cancel 2 "" \
			key=/w/ range_end=/w0 -- cancel=0
		ctl compact 9
		call range-compacted etcdserverpb.KV/Range key=/a/x revision=2
		watch_case watch-compacted 2 "" key=/a/ range_end=/a0 \
			start_revision=2
		etcd_stop "$tmp/$v-plain"

		# ---- auth on ----
		ep=$(etcd_start "$tmp/$v-auth")
		ctl user add root:pw
		ctl role add root
		ctl user grant-role root root
		ctl user add reader:rpw
		ctl role add ro
		ctl role grant-permission ro read /r/ --prefix=true
		ctl user grant-role reader ro
		ctl auth enable
		call auth-ok etcdserverpb.Auth/Authenticate name=root \
			password=pw
		call auth-wrong-password etcdserverpb.Auth/Authenticate \
			name=root password=wrong
		call auth-no-token etcdserverpb.KV/Range key=/a
		hdr=(-H 'token: not-a-token.1')
		call auth-bad-token etcdserverpb.KV/Range key=/a
		watch_case watch-bad-token 2 "" key=/a
		python3 "$pb" auth name=reader password=rpw >"$tmp/req.bin"
		tok=$(curl -s --http2-prior-knowledge \
			-H 'content-type: application/grpc' -H 'te: trailers' \
			--data-binary @"$tmp/req.bin" \
			"$ep/etcdserverpb.Auth/Authenticate" | tail -c +6 |
			python3 -c 'import sys; d = sys.stdin.buffer.read()
i = d.index(b"\x12"); n = d[i + 1]; print(d[i + 2:i + 2 + n].decode())')
		hdr=(-H "token: $tok")
		call permission-denied etcdserverpb.KV/Put key=/r/x value=1
		call auth-range-ok etcdserverpb.KV/Range key=/r/x
		hdr=()
		etcd_stop "$tmp/$v-auth"

		# ---- a full quota ----
		ep=$(etcd_start "$tmp/$v-quota" --quota-backend-bytes=1000000)
		head -c 200000 /dev/zero | tr '\0' x >"$tmp/big"
		for i in $(seq 1 20); do
			ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" put \
				"/q/$i" <"$tmp/big" >/dev/null 2>&1 || break
		done
		call no-space etcdserverpb.KV/Put key=/q/more value=1
		etcd_stop "$tmp/$v-quota"
	)
done
