#!/bin/bash
#
# tests/tools/k8s-registry.sh - tests/lib/k8s_registry.py makes what the
# API server would hold
#
#   k8s-registry.sh PROGRAM GENERATOR
#
# PROGRAM is tools/etcdfs-k8s, GENERATOR tests/lib/k8s_registry.py.  The
# generated objects, encoded by PROGRAM, decode back to their JSON byte
# for byte (Go's field order, maps sorted, the zero values Go writes) at
# two scales and seeds; a seed makes the same bytes each time and another
# seed others; every resource of the layout is there; and what is stored
# has the API server's defaults and metadata (read back by decoding the
# values: a pod's restartPolicy, dnsPolicy, schedulerName, ...; a uid and
# a creationTimestamp, no resourceVersion).  Needs no etcd.  Speaks TAP.

set -u

prog=$1
gen=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/k8s-registry-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
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

echo "1..6"
check "scale 1: every object decodes to its JSON byte for byte" \
	python3 "$gen" --codec "$prog" --check
check "scale 3, seed 7: every object decodes to its JSON byte for byte" \
	python3 "$gen" --codec "$prog" --check --scale 3 --seed 7

python3 "$gen" --codec "$prog" --out "$tmp/a" 2>/dev/null
python3 "$gen" --codec "$prog" --out "$tmp/b" 2>/dev/null
python3 "$gen" --codec "$prog" --out "$tmp/c" --seed 2 2>/dev/null
check "a seed makes the same values each time" diff -r "$tmp/a" "$tmp/b"
check "another seed makes other values" \
	bash -c '! diff -r -q "$1" "$2" >/dev/null' _ "$tmp/a" "$tmp/c"

# every resource of the API server's layout
layout()
{
	local r k
	for r in namespaces minions pods deployments replicasets \
		services/specs endpointslices configmaps secrets leases \
		events serviceaccounts; do
		k=$(cd "$tmp/a" && find "registry/$r" -type f 2>/dev/null |
			head -n 1)
		if [[ -z $k ]]; then
			echo "no key under /registry/$r" >&2
			return 1
		fi
	done
	# namespaced kinds are /registry/RESOURCE/NS/NAME, nodes not
	[[ -f $tmp/a/registry/minions/kind-control-plane ]] ||
		{ echo "no /registry/minions/kind-control-plane" >&2; return 1; }
	[[ -d $tmp/a/registry/pods/shop ]] ||
		{ echo "no /registry/pods/shop/" >&2; return 1; }
}
check "the keys follow the API server's layout" layout

# What is stored, decoded (in one run of decode-batch): defaults and
# metadata as the API server has them.
stored()
{
	python3 - "$prog" "$tmp/a" <<'EOF'
import json, os, subprocess, sys
prog, top = sys.argv[1], sys.argv[2]
keys = sorted(os.path.relpath(os.path.join(d, f), top)
              for d, _, fs in os.walk(top) for f in fs)
vals = [open(os.path.join(top, k), 'rb').read() for k in keys]
out = subprocess.run([prog, 'decode-batch'], check=True,
                     stdout=subprocess.PIPE,
                     input=b''.join(b'%d\n%s' % (len(v), v)
                                    for v in vals)).stdout
texts, i = [], 0
while i < len(out):
    nl = out.index(b'\n', i)
    texts.append(out[nl + 1:nl + 1 + int(out[i:nl])])
    i = nl + 1 + int(out[i:nl])
if len(texts) != len(keys):
    sys.exit('%d values, %d decoded' % (len(keys), len(texts)))
bad, pods = [], 0
for key, text in zip(keys, texts):
    o = json.loads(text)
    m = o['metadata']
    miss = [f for f in ('uid', 'creationTimestamp') if f not in m]
    miss += [f for f in ('resourceVersion', 'selfLink') if f in m]
    if o['kind'] == 'Pod':
        pods += 1
        s = o['spec']
        miss += [f for f in ('restartPolicy', 'dnsPolicy', 'schedulerName',
                             'terminationGracePeriodSeconds',
                             'securityContext', 'enableServiceLinks')
                 if f not in s]
        for c in s['containers']:
            miss += [f for f in ('terminationMessagePath',
                                 'terminationMessagePolicy',
                                 'imagePullPolicy') if f not in c]
        miss += [f for f in ('ownerReferences', 'managedFields',
                             'generateName') if f not in m]
        if any('fieldsV1' not in e for e in m.get('managedFields', [])):
            miss.append('fieldsV1')
    if o['kind'] in ('Deployment', 'ReplicaSet') and 'generation' not in m:
        miss.append('generation')
    if o['kind'] == 'Deployment':
        miss += [f for f in ('strategy', 'revisionHistoryLimit',
                             'progressDeadlineSeconds') if f not in o['spec']]
    if miss:
        bad.append('%s: %s' % (key, ', '.join(miss)))
if not pods:
    bad.append('no pod')
for b in bad[:10]:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
}
check "the stored objects hold the API server's defaults and metadata" stored

exit $((failed > 0))
