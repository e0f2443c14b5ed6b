#!/usr/bin/env bats
#
# tests/fs/xattr.bats - revision metadata as extended attributes, and pins
#
# user.etcd.resourceVersion, createRevision, version and lease of a file
# are what etcdctl reads for its key; user.etcd.pin makes the next commit
# of that key by the script that set it (or that script's children) depend
# on the pinned revision.  The mount root tells the endpoint in use and the
# revision the mount has seen.

load ../lib/mount

setup()
{
	fs_setup
}

teardown()
{
	fs_teardown
}

xattr()
{
	getfattr --absolute-names --only-values -n "user.etcd.$1" "$2"
}

# The user.etcd.version a file with N writes shows: N, but 0 on v2,
# which keeps no version.
xversion()
{
	if fs_v2; then
		echo 0
	else
		echo "$1"
	fi
}

_xattr_is()
{
	[ "$(xattr "$1" "$2" 2>/dev/null)" = "$3" ]
}

@test "getfattr -d lists the revision attributes" {
	local name
	kv_put /k v

	run getfattr --absolute-names -d "$MNT/k"
	echo "$output"
	[ "$status" -eq 0 ]
	for name in resourceVersion createRevision version lease; do
		grep -q "^user\.etcd\.$name=\"[0-9]*\"\$" <<<"$output"
	done
	run getfattr --absolute-names -d -m '^user\.etcd\.' "$MNT/k"
	[ "$status" -eq 0 ]
	grep -q '^user\.etcd\.resourceVersion=' <<<"$output"
}

# v2 has no leases: a key with a TTL shows lease 0, and an unconditional
# set (etcdctl set) replaces the node, so its createdIndex moves with it.
@test "the attributes are what etcd holds for the key" {
	local id
	kv_put /k v1
	kv_put /other x
	kv_put /k v2
	kv_put /k v3
	if fs_v2; then
		kv_put --ttl 600 /leased v
		id=0
	else
		# "lease 694d7a1e9a6b1a0b granted with TTL(600s)": etcdctl
		# prints lease ids in hex, and takes them so
		id=$(etcdctl lease grant 600 | awk '$1 == "lease" { print $2 }')
		[[ $id =~ ^[0-9a-f]{16}$ ]]
		etcdctl put --lease="$id" /leased v >/dev/null
	fi

	fs_wait_value "$MNT/k" v3
	[ "$(xattr resourceVersion "$MNT/k")" = "$(kv_meta /k mod_revision)" ]
	[ "$(xattr createRevision "$MNT/k")" = "$(kv_meta /k create_revision)" ]
	[ "$(xattr version "$MNT/k")" = "$(xversion 3)" ]
	[ "$(kv_meta /k version)" -eq 3 ]
	[ "$(xattr lease "$MNT/k")" = 0 ]
	if fs_v2; then
		[ "$(kv_meta /k create_revision)" = "$(kv_meta /k mod_revision)" ]
	else
		[ "$(kv_meta /k create_revision)" != "$(kv_meta /k mod_revision)" ]
	fi

	fs_wait_value "$MNT/leased" v
	[ "$(xattr lease "$MNT/leased")" = "$id" ]
	# what the mount shows, etcdctl takes back
	fs_v2 || etcdctl lease timetolive "$(xattr lease "$MNT/leased")" |
		grep -q "^lease $id granted with TTL(600s)"
	[ "$(xattr resourceVersion "$MNT/leased")" = "$(kv_meta /leased mod_revision)" ]
	[ "$(xattr version "$MNT/leased")" = "$(xversion 1)" ]
}

@test "the attributes follow a write through the mount at once" {
	kv_put /k v1
	[ "$(xattr version "$MNT/k")" = "$(xversion 1)" ]

	printf 'v2' >"$MNT/k"
	[ "$(xattr resourceVersion "$MNT/k")" = "$(kv_meta /k mod_revision)" ]
	[ "$(xattr version "$MNT/k")" = "$(xversion 2)" ]
	printf 'new' >"$MNT/n"
	[ "$(xattr resourceVersion "$MNT/n")" = "$(kv_meta /n mod_revision)" ]
	[ "$(xattr createRevision "$MNT/n")" = "$(kv_meta /n create_revision)" ]
}

@test "the attributes follow another client's change" {
	kv_put /k v1
	[ "$(xattr version "$MNT/k")" = "$(xversion 1)" ]

	kv_put /k v2
	wait_for 10 _xattr_is resourceVersion "$MNT/k" "$(kv_meta /k mod_revision)"
	[ "$(xattr version "$MNT/k")" = "$(xversion 2)" ]
	# a v2 set replaces the node: its createdIndex moves too
	[ "$(xattr createRevision "$MNT/k")" = "$(kv_meta /k create_revision)" ]
}

@test "a write after a pin on a stale revision fails with ESTALE" {
	local r1
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	fs_wait_value "$MNT/k" two

	run bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		cat >"$1" <<<mine
		rc=$?
		exit $rc' _ "$MNT/k" "$r1"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 9 ]
	[[ $output == *"Stale file handle"* ]]
	kv_is /k two
	[ "$(kv_meta /k version)" -eq 2 ]
}

@test "a write after a pin on the current revision commits" {
	local r
	kv_put /k one
	r=$(xattr resourceVersion "$MNT/k")
	[ "$r" = "$(kv_meta /k mod_revision)" ]

	run bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		cat >"$1" <<<mine
		rc=$?
		exit $rc' _ "$MNT/k" "$r"
	echo "$output"
	[ "$status" -eq 0 ]
	kv_is /k $'mine\n'
	[ "$(kv_meta /k version)" -eq 2 ]
}

@test "rm after a pin on a stale revision fails and keeps the key" {
	local r1
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	fs_wait_value "$MNT/k" two

	run bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		rm "$1"
		rc=$?
		exit $rc' _ "$MNT/k" "$r1"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 9 ]
	[[ $output == *"Stale file handle"* ]]
	kv_is /k two
	[ -f "$MNT/k" ]
}

@test "a pin guards one commit only" {
	local r1
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	fs_wait_value "$MNT/k" two

	run bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		cat >"$1" <<<first && exit 8
		cat >"$1" <<<second
		rc=$?
		exit $rc' _ "$MNT/k" "$r1"
	echo "$output"
	[ "$status" -eq 0 ]
	kv_is /k $'second\n'
	[ "$(kv_meta /k version)" -eq 3 ]
}

@test "a pin applies to the children of the script that set it" {
	local r1
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	fs_wait_value "$MNT/k" two

	# The commit is made by cp, a child of the script.
	printf 'mine\n' >"$BATS_TEST_TMPDIR/src"
	run bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		cp "$3" "$1"
		rc=$?
		exit $rc' _ "$MNT/k" "$r1" "$BATS_TEST_TMPDIR/src"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 9 ]
	kv_is /k two
}

@test "a pin applies to a write by the script itself" {
	local r1
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	fs_wait_value "$MNT/k" two

	# echo is a builtin: the script itself commits (and, being bash,
	# ignores the error of close), so only etcd can tell.
	run bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		echo mine >"$1"
		exit 0' _ "$MNT/k" "$r1"
	[ "$status" -eq 0 ]
	kv_is /k two
	[ "$(kv_meta /k version)" -eq 2 ]
}

@test "scripts running at the same time keep their own pins" {
	local r1 apid astatus
	kv_put /k one
	r1=$(kv_meta /k mod_revision)
	kv_put /k two
	fs_wait_value "$MNT/k" two

	# Script A pins the stale revision, then waits for script B.
	bash -c 'setfattr -n user.etcd.pin -v "$2" "$1" || exit 9
		: >"$3/a-ready"
		for ((i = 0; i < 400; i++)); do
			[[ -e $3/b-done ]] && break
			sleep 0.05
		done
		[[ -e $3/b-done ]] || exit 7
		cat >"$1" <<<from-a
		rc=$?
		exit $rc' _ "$MNT/k" "$r1" "$BATS_TEST_TMPDIR" \
		>"$BATS_TEST_TMPDIR/a.log" 2>&1 3>&- &
	apid=$!
	wait_for 20 test -e "$BATS_TEST_TMPDIR/a-ready"

	# Script B is not A's child: A's pin is not B's.
	run bash -c 'cat >"$1" <<<from-b
		rc=$?
		exit $rc' _ "$MNT/k"
	echo "B: $output"
	[ "$status" -eq 0 ]
	kv_is /k $'from-b\n'
	: >"$BATS_TEST_TMPDIR/b-done"

	astatus=0
	wait "$apid" || astatus=$?
	echo "A: status $astatus"
	cat "$BATS_TEST_TMPDIR/a.log"
	[ "$astatus" -ne 0 ]
	[ "$astatus" -ne 7 ]
	[ "$astatus" -ne 9 ]
	grep -q 'Stale file handle' "$BATS_TEST_TMPDIR/a.log"
	kv_is /k $'from-b\n'
	[ "$(kv_meta /k version)" -eq 3 ]
}

@test "a malformed pin is refused and pins nothing" {
	kv_put /k one

	run bash -c 'setfattr -n user.etcd.pin -v not-a-number "$1" && exit 9
		cat >"$1" <<<mine
		rc=$?
		exit $rc' _ "$MNT/k"
	echo "$output"
	[ "$status" -eq 0 ]
	kv_is /k $'mine\n'
}

@test "the revision attributes cannot be set, nor unknown ones" {
	local rev
	kv_put /k one
	rev=$(kv_rev)

	run setfattr -n user.etcd.resourceVersion -v 1 "$MNT/k"
	[ "$status" -ne 0 ]
	run setfattr -n user.etcd.version -v 7 "$MNT/k"
	[ "$status" -ne 0 ]
	run fs_try 'os.setxattr(args[0], "user.other", b"x")' "$MNT/k"
	echo "$output"
	[ "$output" = ENOTSUP ]
	[ "$(kv_rev)" -eq "$rev" ]
	[ "$(xattr version "$MNT/k")" = "$(xversion 1)" ]
}

@test "the mount root tells the endpoint and the revision" {
	local rev
	run getfattr --absolute-names -d "$MNT"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^user\.etcd\.endpoint=' <<<"$output"
	grep -q '^user\.etcd\.revision=' <<<"$output"
	[ "$(xattr endpoint "$MNT")" = "$ETCD_ENDPOINT" ]

	kv_put /k v
	kv_put /k w
	rev=$(kv_rev)
	wait_for 10 _xattr_is revision "$MNT" "$rev"
	printf 'x' >"$MNT/k"
	[ "$(xattr revision "$MNT")" = "$(kv_rev)" ]
}

# A Pod as the apiserver stores it: "k8s\0", then runtime.Unknown with its
# TypeMeta {apiVersion v1, kind Pod}, a raw object, contentEncoding and
# contentType (helper/object.c reads it; tests/unit/test_object.c has it too).
K8S_POD='k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x03\x0a\x01x\x1a\x00\x22\x00'

k8s()
{
	getfattr --absolute-names --only-values -n "user.k8s.$1" "$2"
}

@test "a Kubernetes object's apiVersion and kind, protobuf or JSON" {
	mkdir -p "$MNT/registry/pods/default"
	# shellcheck disable=SC2059 # the format is the value
	printf "$K8S_POD" >"$MNT/registry/pods/default/web"
	# what etcd holds is the bytes written, NUL and all
	# shellcheck disable=SC2059
	cmp <(printf "$K8S_POD") <(kv_get /registry/pods/default/web)
	kv_put /registry/configmaps/default/app \
		'{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}'
	kv_put /registry/deployments/x '  {"kind": "Deployment", "apiVersion": "apps/v1"}'
	kv_put /plain hello

	[ "$(k8s apiVersion "$MNT/registry/pods/default/web")" = v1 ]
	[ "$(k8s kind "$MNT/registry/pods/default/web")" = Pod ]
	fs_wait_value "$MNT/registry/configmaps/default/app" \
		'{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}'
	[ "$(k8s kind "$MNT/registry/configmaps/default/app")" = ConfigMap ]
	[ "$(k8s apiVersion "$MNT/registry/configmaps/default/app")" = v1 ]
	wait_for 10 test -e "$MNT/registry/deployments/x"
	[ "$(k8s apiVersion "$MNT/registry/deployments/x")" = apps/v1 ]

	# listed with the others where the value may be an object
	run getfattr --absolute-names -d -m '^user\.' "$MNT/registry/pods/default/web"
	echo "$output"
	grep -q '^user\.k8s\.kind="Pod"$' <<<"$output"
	grep -q '^user\.etcd\.resourceVersion=' <<<"$output"

	# not an object: no such attribute, and none listed
	wait_for 10 test -e "$MNT/plain"
	run fs_try 'os.getxattr(args[0], "user.k8s.kind")' "$MNT/plain"
	[ "$output" = ENODATA ]
	run getfattr --absolute-names -d -m '^user\.' "$MNT/plain"
	! grep -q 'user\.k8s' <<<"$output" || false
	# a JSON object without a kind has none
	kv_put /nokind '{"apiVersion":"v1"}'
	wait_for 10 test -e "$MNT/nokind"
	run fs_try 'os.getxattr(args[0], "user.k8s.kind")' "$MNT/nokind"
	[ "$output" = ENODATA ]
	# the magic with a cut envelope: a clear error, and the value intact
	printf 'k8s\0\x0a\x09\x0a\x02v1' >"$MNT/cut"
	run fs_try 'os.getxattr(args[0], "user.k8s.kind")' "$MNT/cut"
	[ "$output" = EBADMSG ]
	cmp <(printf 'k8s\0\x0a\x09\x0a\x02v1') "$MNT/cut"
	# read-only: setting one is refused, and changes nothing
	run setfattr -n user.k8s.kind -v Node "$MNT/registry/pods/default/web"
	[ "$status" -ne 0 ]
	[ "$(k8s kind "$MNT/registry/pods/default/web")" = Pod ]
}

@test "user.k8s.kind of a value the value budget evicted reads it again" {
	local i
	fs_unmount
	fs_mount value_budget=4K
	kv_put /obj '{"apiVersion":"v1","kind":"Secret","data":{}}'
	wait_for 10 test -e "$MNT/obj"
	cat "$MNT/obj" >/dev/null
	# evict it: read more than the budget of other values after it
	for ((i = 0; i < 12; i++)); do
		head -c 1024 /dev/zero | tr '\0' x | kv_put "/fill/v$i"
	done
	for ((i = 0; i < 12; i++)); do
		wait_for 10 test -e "$MNT/fill/v$i"
		cat "$MNT/fill/v$i" >/dev/null
	done
	(($(getfattr --absolute-names --only-values -n user.etcd.valueBytes "$MNT") <= 4096 + 1024))
	[ "$(k8s kind "$MNT/obj")" = Secret ]
	[ "$(k8s apiVersion "$MNT/obj")" = v1 ]
}
