#!/bin/bash
#
# tests/tools/etcdfs-k8s.sh - tools/etcdfs-k8s on Kubernetes' own fixtures
#
#   etcdfs-k8s.sh PROGRAM TESTDATA
#
# TESTDATA is k8s.io/api/testdata of the tree the build read.  For every
# kind of TESTDATA/HEAD: `decode` gives its .json (and a newline),
# `decode --yaml` its .yaml, and `encode` of either (and of the fixture's
# own .json) gives back its .pb byte for byte, as etcdfs's -o codec= runs
# them: one process a value.  Then the batch verbs on all of them at
# once, the format chosen by ETCDFS_K8S_FORMAT and by the program's name,
# and bad inputs: a non-zero status, one line on stderr, nothing on
# stdout.  A fixture that names no kind (WatchEvent's) must be refused,
# and so must an object with a field the schema does not know.
# Speaks TAP.

set -u

prog=$1
head=$2/HEAD
tmp=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-k8s-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

ok()
{
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok()
{
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	local line
	for line in "$@"; do
		echo "# $line"
	done
}

# check NAME COMMAND...: ok if the command succeeds
check()
{
	local name=$1
	shift
	if "$@" 2>"$tmp/err"; then
		ok "$name"
	else
		not_ok "$name" "$(head -n 3 "$tmp/err")"
	fi
}

# same FILE EXPECTED: the bytes of FILE are those of EXPECTED
same()
{
	cmp -s "$1" "$2" || {
		echo "$1 differs from $2: $(cmp "$1" "$2" 2>&1 | head -n 1)" >&2
		return 1
	}
}

shopt -s nullglob
pbs=("$head"/*.pb)
if ((${#pbs[@]} < 100)); then
	echo "1..1"
	not_ok "the fixtures of $head" "only ${#pbs[@]} .pb files there"
	exit 1
fi

# A fixture whose envelope names no kind (WatchEvent's: its Go caller
# knows the type; a value in etcd always names one) must be refused.
names_kind()
{
	grep -q '^  "kind": ' "${1%.pb}.json"
}

# Every kind, one process a value, as the filesystem runs it.
round_trip()
{
	local pb=$1 base=${1%.pb}
	if ! names_kind "$pb"; then
		"$prog" decode <"$pb" >"$tmp/json" 2>"$tmp/why"
		(($? == 1)) && [[ ! -s $tmp/json ]] && return 0
		echo "a value that names no kind is not refused" >&2
		return 1
	fi
	"$prog" decode <"$pb" >"$tmp/json" || return 1
	printf '\n' | cat "$base.json" - >"$tmp/want.json"
	same "$tmp/json" "$tmp/want.json" || return 1
	"$prog" decode --yaml <"$pb" >"$tmp/yaml" || return 1
	same "$tmp/yaml" "$base.yaml" || return 1
	"$prog" encode <"$tmp/json" >"$tmp/pb1" || return 1
	same "$tmp/pb1" "$pb" || return 1
	"$prog" encode <"$base.json" >"$tmp/pb2" || return 1
	same "$tmp/pb2" "$pb" || return 1
	"$prog" encode --yaml <"$tmp/yaml" >"$tmp/pb3" || return 1
	same "$tmp/pb3" "$pb"
}

echo "1..$((${#pbs[@]} + 13))"
for pb in "${pbs[@]}"; do
	check "$(basename "$pb" .pb): decode, encode, byte for byte" \
		round_trip "$pb"
done

# The batch verbs: all the values in one run, then back.
records()
{
	local f
	for f in "$@"; do
		printf '%d\n' "$(stat -c %s "$f")"
		cat "$f"
	done
}
kinds=()
for pb in "${pbs[@]}"; do
	names_kind "$pb" && kinds+=("$pb")
done
records "${kinds[@]}" >"$tmp/all.rec"
check "decode-batch of every kind" \
	bash -c '"$1" decode-batch <"$2/all.rec" >"$2/all.json.rec"' _ \
	"$prog" "$tmp"
check "encode-batch of decode-batch gives every value back" \
	bash -c '"$1" encode-batch <"$2/all.json.rec" | cmp -s - "$2/all.rec"' \
	_ "$prog" "$tmp"
check "decode-batch --yaml then encode-batch --yaml" \
	bash -c '"$1" decode-batch --yaml <"$2/all.rec" |
		"$1" encode-batch --yaml | cmp -s - "$2/all.rec"' _ \
	"$prog" "$tmp"

pod=$head/core.v1.Pod
check "ETCDFS_K8S_FORMAT=yaml chooses YAML" \
	bash -c 'ETCDFS_K8S_FORMAT=yaml "$1" decode <"$2.pb" |
		cmp -s - "$2.yaml"' _ "$prog" "$pod"
check "--json wins over ETCDFS_K8S_FORMAT=yaml" \
	bash -c 'ETCDFS_K8S_FORMAT=yaml "$1" decode --json <"$2.pb" |
		head -c 1 | grep -q "{"' _ "$prog" "$pod"
if ln "$prog" "$tmp/etcdfs-k8s-yaml" 2>/dev/null ||
	cp "$prog" "$tmp/etcdfs-k8s-yaml"; then
	check "a name ending in -yaml chooses YAML" \
		bash -c '"$1" decode <"$2.pb" | cmp -s - "$2.yaml" &&
			"$1" encode <"$2.yaml" | cmp -s - "$2.pb"' _ \
		"$tmp/etcdfs-k8s-yaml" "$pod"
else
	not_ok "a name ending in -yaml chooses YAML" "cannot copy $prog"
fi

# fails STATUS NAME COMMAND [< INPUT via bash -c]: exits with STATUS,
# writes nothing on stdout and one line on stderr
fails()
{
	local want=$1 name=$2 rc
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if ((rc == want)) && [[ ! -s $tmp/out ]] &&
		(($(wc -l <"$tmp/err") == 1)); then
		ok "$name"
	else
		not_ok "$name" "status $rc (want $want)," \
			"$(wc -c <"$tmp/out") bytes out, stderr:" \
			"$(head -n 3 "$tmp/err")"
	fi
}

fails 1 "decode of a value that is not an object" \
	bash -c 'printf "{\"kind\": \"Foo\"}" | "$1" decode' _ "$prog"
fails 1 "decode of a damaged object" \
	bash -c 'head -c 40 "$2.pb" | "$1" decode' _ "$prog" "$pod"
fails 1 "encode of text that is not JSON" \
	bash -c 'echo "kind: [" | "$1" encode' _ "$prog"
fails 1 "encode of a kind the schema does not know" \
	bash -c 'echo "{\"apiVersion\": \"v9\", \"kind\": \"Nope\"}" |
		"$1" encode' _ "$prog"
fails 1 "encode-batch of a truncated record" \
	bash -c 'printf "100\n{}" | "$1" encode-batch' _ "$prog"
fails 2 "a verb it does not know" "$prog" frobnicate

# A value with a field this build does not know (field 999 of the object,
# as a newer API server could write) is not decoded: a save of its text
# would drop the field (the same value without it decodes: its case
# above).
with_unknown_field()
{
	python3 - "$1" <<'PYEOF'
import sys
v = open(sys.argv[1], 'rb').read()
assert v[:4] == b'k8s\0'

def varint(b, i):
    n = s = 0
    while True:
        n |= (b[i] & 0x7f) << s
        s += 7
        i += 1
        if not b[i - 1] & 0x80:
            return n, i

def put_varint(n):
    out = b''
    while n > 0x7f:
        out += bytes([n & 0x7f | 0x80])
        n >>= 7
    return out + bytes([n])

out, i = b'k8s\0', 4
while i < len(v):
    key, i = varint(v, i)
    n, i = varint(v, i)
    body = v[i:i + n]
    i += n
    if key >> 3 == 2:
        body += put_varint(999 << 3) + b'\x01'
    out += put_varint(key) + put_varint(len(body)) + body
sys.stdout.buffer.write(out)
PYEOF
}
with_unknown_field "$pod.pb" >"$tmp/unknown.pb"
fails 1 "decode of an object with a field it does not know" \
	"$prog" decode <"$tmp/unknown.pb"

exit $((failed > 0))
