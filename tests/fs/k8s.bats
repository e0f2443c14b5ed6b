#!/usr/bin/env bats
#
# tests/fs/k8s.bats - -o k8s: Kubernetes' protobuf objects read as the JSON
# (k8s=yaml: the YAML) Kubernetes writes, and saved as protobuf again
#
# The values are Kubernetes' own round-trip fixtures of the tree the build
# read (K8S_TESTDATA: k8s.io/api/testdata), put with etcdctl; etcdctl
# checks what etcd holds after a save, byte for byte.

load ../lib/mount

CM=registry/configmaps/shop/web

setup()
{
	FIX=$K8S_TESTDATA/HEAD/core.v1.ConfigMap
	fs_live_setup "k8s,codec_prefix=/registry/"
}

teardown()
{
	fs_live_teardown
}

@test "a protobuf object reads as Kubernetes' JSON; other values as they are" {
	kv_put /$CM <"$FIX.pb"
	diff <(cat "$MNT/$CM") <(cat "$FIX.json"; echo)
	# stat shows the text's size once it was read
	[ "$(stat -c %s "$MNT/$CM")" -eq $(($(stat -c %s "$FIX.json") + 1)) ]
	# JSON (a custom resource) and encrypted values are shown raw
	kv_put /registry/example.com/widgets/w '{"kind":"Widget"}'
	[ "$(cat "$MNT/registry/example.com/widgets/w")" = '{"kind":"Widget"}' ]
	printf 'k8s:enc:aescbc:v1:key1:\001\002' |
		kv_put /registry/secrets/shop/s
	cmp "$MNT/registry/secrets/shop/s" <(printf 'k8s:enc:aescbc:v1:key1:\001\002')
	# no key outside codec_prefix= is decoded
	kv_put /other <"$FIX.pb"
	cmp "$MNT/other" "$FIX.pb"
	# none of them is a failure to log
	run grep 'shown raw' "$FS_LOG"
	[ "$status" -ne 0 ]
}

@test "a save stores the protobuf the API server writes" {
	kv_put /$CM <"$FIX.pb"
	cat "$MNT/$CM" >/dev/null
	sed -i 's/"dataValue"/"dataVALUE"/' "$MNT/$CM"
	# the same object with that one string changed, byte for byte
	"$FS_PYTHON" -c '
import sys
pb = open(sys.argv[1], "rb").read()
assert pb.count(b"dataValue") == 1
sys.stdout.buffer.write(pb.replace(b"dataValue", b"dataVALUE"))' \
		"$FIX.pb" >"$BATS_TEST_TMPDIR/want.pb"
	kv_get /$CM >"$BATS_TEST_TMPDIR/got.pb"
	cmp "$BATS_TEST_TMPDIR/got.pb" "$BATS_TEST_TMPDIR/want.pb"
	grep -q '"dataKey": "dataVALUE"' "$MNT/$CM"
}

@test "text that is no valid object is refused with EINVAL, named in the log" {
	local rev
	kv_put /$CM <"$FIX.pb"
	rev=$(kv_meta /$CM mod_revision)
	sed 's/"immutable"/"immutible"/' "$MNT/$CM" >"$BATS_TEST_TMPDIR/bad"
	run sh -c 'cat "$2" >"$1"' sh "$MNT/$CM" "$BATS_TEST_TMPDIR/bad"
	[ "$status" -ne 0 ]
	[[ $output == *"Invalid argument"* ]]
	[ "$(kv_meta /$CM mod_revision)" -eq "$rev" ]
	kv_get /$CM | cmp - "$FIX.pb"
	grep "'$CM' not saved: immutible: unknown field" "$FS_LOG"
	# a changed kind too
	sed 's/"kind": "ConfigMap"/"kind": "Secret"/' "$MNT/$CM" \
		>"$BATS_TEST_TMPDIR/bad"
	run sh -c 'cat "$2" >"$1"' sh "$MNT/$CM" "$BATS_TEST_TMPDIR/bad"
	[ "$status" -ne 0 ]
	grep "'$CM' not saved: kind: 'Secret' of 'v1' replaces 'ConfigMap'" \
		"$FS_LOG"
}

@test "k8s=yaml reads and saves Kubernetes' YAML" {
	fs_unmount
	fs_mount "k8s=yaml,codec_prefix=/registry/"
	kv_put /$CM <"$FIX.pb"
	diff "$MNT/$CM" "$FIX.yaml"
	# a new object, written as YAML, is stored as protobuf
	cat "$FIX.yaml" >"$MNT/registry/configmaps/shop/copy"
	kv_get /registry/configmaps/shop/copy | cmp - "$FIX.pb"
}

@test "k8s= takes json or yaml, and not with codec=" {
	mkdir "$BATS_TEST_TMPDIR/m2"
	run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,k8s=xml" \
		"$BATS_TEST_TMPDIR/m2"
	[ "$status" -ne 0 ]
	[[ $output == *"bad value for 'k8s': 'xml': json or yaml"* ]]
	run "$ETCDFS" -f -o "endpoints=$ETCD_ENDPOINT,k8s,codec=cat" \
		"$BATS_TEST_TMPDIR/m2"
	[ "$status" -ne 0 ]
	[[ $output == *"'k8s' and 'codec=' exclude each other"* ]]
}
