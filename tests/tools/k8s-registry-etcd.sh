#!/bin/bash
#
# tests/tools/k8s-registry-etcd.sh - tests/lib/k8s_registry.py --endpoint
# puts every object into etcd as the value it encoded
#
#   with-etcd k8s-registry-etcd.sh PROGRAM GENERATOR
#
# PROGRAM is tools/etcdfs-k8s, GENERATOR tests/lib/k8s_registry.py; the
# etcd is tests/lib/with-etcd's (ETCDFS_TEST_ENDPOINTS, ETCDCTL_*).  The
# keys etcd then holds under /registry/ are those of --list, each once,
# and each value is the one --out writes for it, byte for byte (read back
# with etcdctl, base64 in its JSON).  Speaks TAP.

set -u

prog=$1
gen=$2
tmp=${ETCDFS_TEST_DIR:?run under tests/lib/with-etcd}
n=0
failed=0

check()
{
	local name=$1
	shift
	n=$((n + 1))
	if "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		sed 's/^/# /' "$tmp/err" | head -n 20
	fi
}

echo "1..3"
check "it loads a scale of 2 over one connection" \
	python3 "$gen" --codec "$prog" --scale 2 \
	--endpoint "$ETCDFS_TEST_ENDPOINTS"
python3 "$gen" --codec "$prog" --scale 2 --out "$tmp/tree" 2>/dev/null
python3 "$gen" --scale 2 --list 2>/dev/null | sort >"$tmp/want"
etcdctl get /registry/ --prefix -w json >"$tmp/got.json"

same_keys()
{
	python3 - "$tmp/got.json" "$tmp/want" <<'EOF'
import base64, json, sys
kvs = json.load(open(sys.argv[1])).get('kvs', [])
got = sorted(base64.b64decode(kv['key']).decode() for kv in kvs)
want = open(sys.argv[2]).read().split()
if got != want:
    sys.exit('etcd holds %d keys, the generator made %d; first apart: %s'
             % (len(got), len(want),
                next((a, b) for a, b in zip(got + [''], want + ['']) if a != b)))
EOF
}
check "etcd holds the generator's keys, each once" same_keys

same_values()
{
	python3 - "$tmp/got.json" "$tmp/tree" <<'EOF'
import base64, json, os, sys
kvs = json.load(open(sys.argv[1])).get('kvs', [])
bad = 0
for kv in kvs:
    key = base64.b64decode(kv['key']).decode()
    val = base64.b64decode(kv.get('value', ''))
    want = open(os.path.join(sys.argv[2], key.lstrip('/')), 'rb').read()
    if val != want or not val.startswith(b'k8s\0'):
        bad += 1
        if bad <= 5:
            print('%s: %d bytes in etcd, %d generated' % (
                key, len(val), len(want)), file=sys.stderr)
sys.exit(1 if bad or not kvs else 0)
EOF
}
check "each value is the protobuf object it encoded, byte for byte" \
	same_values

exit $((failed > 0))
