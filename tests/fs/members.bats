#!/usr/bin/env bats
#
# tests/fs/members.bats - the mount follows the cluster's members
# (-o refresh_endpoints)
#
# Each test starts a three-member etcd cluster on loopback
# (tests/lib/cluster.sh) and mounts it given member 1's endpoint only.
# With -o refresh_endpoints the mount learns the other members from the
# cluster at mount time, so that when member 1 stops (members 2 and 3 keep
# quorum) reads, writes and other clients' changes still go through; the
# cluster is cross-checked with etcdctl (or v2 requests) on members 2 and
# 3.  Without the option the same stop is a clear ENOTCONN or ETIMEDOUT,
# never ENOENT and never a silent loss.  Tests named "v2: ..." run the
# same against etcd's v2 API (--enable-v2=true, -o api=v2, /v2/members).
#
# It cannot test a member that is replaced by a new one on other ports
# (a restarted member 1 is on the list already), nor TLS clusters.

load ../lib/mount
# shellcheck source=tests/lib/cluster.sh
source "$TESTS_DIR/lib/cluster.sh"

setup()
{
	local -a args=()

	if [[ $BATS_TEST_DESCRIPTION == v2:* ]]; then
		FS_API=v2
		export ETCDCTL_API=2
		args=(--enable-v2=true)
	else
		FS_API=v3
		export ETCDCTL_API=3
	fi
	if [[ -z ${ETCDFS:-} || ! -x $ETCDFS ]]; then
		echo "ETCDFS must name the etcdfs binary (got '${ETCDFS:-}')" >&2
		return 1
	fi
	CLUSTER_DIR=$BATS_TEST_TMPDIR/cluster
	CLUSTER_EPS=$(cluster_start "$CLUSTER_DIR" 3 "${args[@]}")
	EP1=$(cluster_endpoint "$CLUSTER_DIR" 1)
	EP2=$(cluster_endpoint "$CLUSTER_DIR" 2)
	EP3=$(cluster_endpoint "$CLUSTER_DIR" 3)
	# fs_mount gives the mount $ETCD_ENDPOINT: member 1 only
	ETCD_ENDPOINT=$EP1
	export ETCDCTL_ENDPOINTS=$CLUSTER_EPS
	export ETCDCTL_DIAL_TIMEOUT=5s
	export ETCDCTL_COMMAND_TIMEOUT=20s
}

teardown()
{
	local rc=0

	fs_unmount || rc=1
	cluster_stop "$CLUSTER_DIR" || rc=1
	return $rc
}

# Stops member 1; from now on the checks talk to members 2 and 3 only.
stop_member_1()
{
	cluster_stop_member "$CLUSTER_DIR" 1
	! kill -0 "$(cat "$CLUSTER_DIR/m1/pid" 2>/dev/null)" 2>/dev/null || false
	export ETCDCTL_ENDPOINTS=$EP2,$EP3
	run curl -s --max-time 2 "$EP1/health"
	[ "$status" -ne 0 ]
}

# Writes $2 to the file $1 through the mount and closes it: a failed
# commit shows at close, as its errno name.
write_file()
{
	fs_try '
with open(args[0], "w") as f:
    f.write(args[1])
' "$1" "$2"
}

# The whole scenario with refresh_endpoints (and $1 more options).
outlives_member_1()
{
	local ep

	kv_put /a/x before
	kv_put /a/old gone-soon
	fs_mount "refresh_endpoints${1:+,$1}"
	[ "$(cat "$MNT/a/x")" = before ]

	stop_member_1

	# a write of a file that exists, and of a new one
	run write_file "$MNT/a/x" after
	[ "$status" -eq 0 ] && [ "$output" = OK ]
	kv_is /a/x after
	run write_file "$MNT/a/new" fresh
	[ "$status" -eq 0 ] && [ "$output" = OK ]
	kv_is /a/new fresh
	# a deletion
	rm "$MNT/a/old"
	kv_absent /a/old
	# another client's change, made on member 2, shows in the mount
	kv_put /a/remote "from member 2"
	fs_wait_value "$MNT/a/remote" "from member 2" 15
	[ "$(cat "$MNT/a/x")" = after ]
	# the mount says which member it talks to now
	ep=$(getfattr --absolute-names --only-values -n user.etcd.endpoint \
		"$MNT")
	[[ $ep == "$EP2" || $ep == "$EP3" ]]
	run ls "$MNT/a"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'new\nremote\nx')" ]
}

# The scenario without the option: every change fails, none is lost.
fails_without_option()
{
	kv_put /a/x before
	fs_mount "$1"
	[ "$(cat "$MNT/a/x")" = before ]

	stop_member_1

	run write_file "$MNT/a/x" after
	[ "$status" -ne 0 ]
	[[ $output == ENOTCONN || $output == ETIMEDOUT ]]
	run write_file "$MNT/a/new" fresh
	[ "$status" -ne 0 ]
	[[ $output == ENOTCONN || $output == ETIMEDOUT ]]
	kv_is /a/x before
	kv_absent /a/new
	grep -q "cannot reach '$EP1'" "$FS_LOG"
}

@test "v3: with refresh_endpoints, the mount outlives the member it was given" {
	outlives_member_1
}

@test "v2: with refresh_endpoints, the mount outlives the member it was given" {
	outlives_member_1
}

@test "v3: with refresh_endpoints and nowatch, reads of new keys reach other members" {
	fs_mount refresh_endpoints,nowatch
	stop_member_1
	kv_put /b/k "after the stop"
	run cat "$MNT/b/k"
	[ "$status" -eq 0 ]
	[ "$output" = "after the stop" ]
}

@test "v2: with refresh_endpoints and nowatch, reads of new keys reach other members" {
	fs_mount refresh_endpoints,nowatch
	stop_member_1
	kv_put /b/k "after the stop"
	run cat "$MNT/b/k"
	[ "$status" -eq 0 ]
	[ "$output" = "after the stop" ]
}

@test "v3: without refresh_endpoints, losing the member is ENOTCONN, nothing lost" {
	fails_without_option
}

@test "v2: without refresh_endpoints, losing the member is ENOTCONN, nothing lost" {
	fails_without_option
}

@test "v3: without refresh_endpoints and with nowatch, a read is ENOTCONN, never ENOENT" {
	kv_put /b/k value
	fs_mount nowatch
	stop_member_1
	run fs_try 'read_all(args[0])' "$MNT/b/k"
	[ "$status" -ne 0 ]
	[[ $output == ENOTCONN || $output == ETIMEDOUT ]]
	run fs_try 'os.stat(args[0])' "$MNT/b/other"
	[ "$status" -ne 0 ]
	[[ $output == ENOTCONN || $output == ETIMEDOUT ]]
}

@test "v3: refresh_endpoints=SEC takes a number of seconds, from 1 on" {
	local bad

	mkdir -p "$BATS_TEST_TMPDIR/mnt"
	for bad in 0 -1 abc 1.5 ""; do
		run "$ETCDFS" -f -o "endpoints=$EP1,refresh_endpoints=$bad" \
			"$BATS_TEST_TMPDIR/mnt"
		[ "$status" -ne 0 ]
		[[ $output == *"refresh_endpoints"* ]]
		! fs_is_mounted "$BATS_TEST_TMPDIR/mnt" || false
	done
	run "$ETCDFS" --help
	[[ $output == *"refresh_endpoints[=SEC]"* ]]
}
