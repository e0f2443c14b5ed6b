#!/usr/bin/env bats
#
# tests/fs/integrity.bats - no lost, resurrected or silently dropped data
#
# A file truncated and closed unwritten, then removed or renamed at once;
# the size of a file open for writing, as its writer and other processes
# see it; a commit that failed, and the calls on that open file after it;
# a refused write (EFBIG); a rename of a file open for writing; O_EXCL
# right after a rename (git's lock files); timestamps set by touch, cp -a,
# tar and rsync; chmod of temp files and rsync -a.  The syscall sequences
# come from tests/fs/probe.c ($FS_PROBE); each answer is the one a local
# filesystem gives.  It does not cover conflicts with other clients
# (conflicts.bats) nor outages beyond one failed commit (errors.bats).

load ../lib/mount

setup()
{
	if [[ -z ${FS_PROBE:-} || ! -x $FS_PROBE ]]; then
		echo "FS_PROBE must name the fs-probe binary (got '${FS_PROBE:-}')" >&2
		return 1
	fi
	fs_setup
	ETCD_FROZEN=
	LOCAL=$BATS_TEST_TMPDIR/local
	mkdir -p "$LOCAL"
}

teardown()
{
	if [[ -n $ETCD_FROZEN ]]; then
		kill -CONT "$ETCD_FROZEN" 2>/dev/null
	fi
	if [[ -n ${HOLD_PID:-} ]]; then
		kill "$HOLD_PID" 2>/dev/null
		wait "$HOLD_PID" 2>/dev/null || true
	fi
	fs_teardown
}

# The probe's answers as one line, "a=b c=d ...".
probe()
{
	"$FS_PROBE" "$@" | paste -sd ' '
}

# The kernel sends a file's RELEASE after close() returned, from another
# thread: a commit made that late is in etcd a moment later.  Checks that
# something did not happen wait this long first.
late_commits()
{
	sleep 1
}

@test "a write refused with EFBIG changes nothing: close commits what the file held" {
	run probe efbig "$MNT/big"
	echo "$output"
	[ "$output" = "write=ok pwrite=short close=ok" ]
	kv_has /big
	[ "$(kv_get /big | head -c 5)" = hello ]
	[ "$(kv_get /big | wc -c)" -eq "$(stat -c %s "$MNT/big")" ]

	run probe efbig-new "$MNT/new"
	echo "$output"
	[ "$output" = "pwrite=EFBIG close=ok" ]
	kv_has /new
	[ -z "$(kv_get /new)" ]
	[ -f "$MNT/new" ]
	[ "$(stat -c %s "$MNT/new")" -eq 0 ]
}
