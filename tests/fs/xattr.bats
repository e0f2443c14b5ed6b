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
	[ "$(kv_get /k)" = two ]
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
	[ "$(kv_get /k)" = mine ]
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
	[ "$(kv_get /k)" = two ]
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
	[ "$(kv_get /k)" = second ]
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
	[ "$(kv_get /k)" = two ]
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
	[ "$(kv_get /k)" = two ]
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
	[ "$(kv_get /k)" = from-b ]
	: >"$BATS_TEST_TMPDIR/b-done"

	astatus=0
	wait "$apid" || astatus=$?
	echo "A: status $astatus"
	cat "$BATS_TEST_TMPDIR/a.log"
	[ "$astatus" -ne 0 ]
	[ "$astatus" -ne 7 ]
	[ "$astatus" -ne 9 ]
	grep -q 'Stale file handle' "$BATS_TEST_TMPDIR/a.log"
	[ "$(kv_get /k)" = from-b ]
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
	[ "$(kv_get /k)" = mine ]
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
