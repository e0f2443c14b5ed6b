#!/usr/bin/env bats
#
# tests/fs/live.bats - the live view: other clients' changes replayed on
# the mountpoint as inotify events, the mirror kept equal to etcd through
# bursts and etcd restarts, and no second set of events for the mount's own
# writes.  Compaction, which only etcd v3 has, is in compaction.bats; v2's
# history of 1,000 events is in v2.bats.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash), watches
# the mountpoint with `inotifywait -m -r` and changes etcd with etcdctl (or
# its JSON gateway), then checks the events and compares a full read of the
# mount with a full read of etcd.  It cannot tell an event that comes late
# from one that never comes beyond the bounds used here (10 s, 30 s after
# an etcd restart), nor check the order of events of different files.

load ../lib/mount

setup()
{
	fs_live_setup
}

teardown()
{
	fs_live_teardown
}

@test "a remote put of a new key: CREATE and CLOSE_WRITE, then cat shows it" {
	kv_put /seed s
	fs_wait_value "$MNT/seed" s
	inw_start

	kv_put /newkey hello
	wait_event CREATE newkey
	wait_event CLOSE_WRITE,CLOSE newkey
	[ "$(cat "$MNT/newkey")" = hello ]
	has_event MODIFY newkey
	# CREATE comes before CLOSE_WRITE
	[ "$(grep -n -Fx "CREATE $MNT/newkey" "$EVENTS" | cut -d: -f1)" -lt \
	  "$(grep -n -Fx "CLOSE_WRITE,CLOSE $MNT/newkey" "$EVENTS" | cut -d: -f1)" ]
	inw_stop
}

@test "a remote put of an existing key: MODIFY and CLOSE_WRITE, then cat shows the new value" {
	kv_put /k old
	fs_wait_value "$MNT/k" old
	inw_start

	kv_put /k brand-new
	wait_event MODIFY k
	wait_event CLOSE_WRITE,CLOSE k
	[ "$(cat "$MNT/k")" = brand-new ]
	[ "$(count_event CREATE k)" -eq 0 ]
	[ "$(count_event DELETE k)" -eq 0 ]
	inw_stop
}

@test "a remote del: DELETE, and the file is gone" {
	kv_put /gone x
	kv_put /stay y
	fs_wait_value "$MNT/gone" x
	inw_start

	[ "$(kv_del /gone)" = 1 ]
	wait_event DELETE gone
	[ ! -e "$MNT/gone" ]
	run ls "$MNT"
	[ "$output" = stay ]
	[ "$(cat "$MNT/stay")" = y ]
	inw_stop
}

@test "a remote del --prefix of a subtree: DELETE per file, DELETE,ISDIR per directory" {
	kv_put /other 0
	kv_put /t/a 1
	kv_put /t/d1/b 2
	kv_put /t/d1/c 3
	fs_wait_value "$MNT/t/d1/c" 3
	inw_start

	[ "$(kv_del --prefix /t/)" = 3 ]
	wait_event DELETE t/a
	wait_event DELETE t/d1/b
	wait_event DELETE t/d1/c
	wait_event DELETE,ISDIR t/d1
	wait_event DELETE,ISDIR t
	[ ! -e "$MNT/t" ]
	run ls "$MNT"
	[ "$output" = other ]
	inw_stop
}

@test "a remote put deep in new directories: CREATE,ISDIR per directory, then CREATE of the file" {
	kv_put /seed s
	fs_wait_value "$MNT/seed" s
	inw_start

	kv_put /n1/n2/k deep
	wait_event CREATE,ISDIR n1
	# inotifywait -r watches a new directory only after it reports it:
	# what is made in it before that is not seen (as with mkdir -p).
	if wait_event CREATE,ISDIR n1/n2 && wait_event CREATE n1/n2/k; then
		wait_event CLOSE_WRITE,CLOSE n1/n2/k
	else
		echo "inotifywait watched a new directory too late" >&2
	fi
	[ "$(cat "$MNT/n1/n2/k")" = deep ]
	[ "$(count_event CREATE,ISDIR n1)" -eq 1 ]
	inw_stop
}

@test "a burst of 1000 remote puts: a CLOSE_WRITE per key, and the mount equals etcd" {
	local n
	# the directory exists before the watch: no race with inotifywait -r
	kv_put /burst/seed s
	fs_wait_value "$MNT/burst/seed" s
	inw_start

	puts_http /burst/k 1000
	count_closed()
	{
		n=$(grep "^CLOSE_WRITE,CLOSE $MNT/burst/k[0-9]\{4\}\$" \
			"$EVENTS" | sort -u | wc -l)
		((n == 1000))
	}
	if ! wait_for 30 count_closed; then
		echo "CLOSE_WRITE for $n distinct keys of 1000" >&2
		false
	fi
	wait_mirror_equal 10
	[ "$(mount_dump | wc -l)" -eq 1001 ]
	[ "$(count_event CREATE burst/k0999)" -eq 1 ]
	inw_stop
}

@test "no double echo: a write through the mount gives only the local events" {
	local rev
	kv_put /seed s
	fs_wait_value "$MNT/seed" s
	inw_start

	printf x >"$MNT/mine"
	kv_is /mine x
	# the watch brought our own put back, and nothing is being replayed
	rev=$(kv_meta /mine mod_revision)
	wait_for 10 eval '(($(getfattr --only-values \
		-n user.etcd.revision "$MNT") >= rev))'
	wait_for 10 fs_echo_idle
	# a remote change after ours: the watch delivers in revision order,
	# so once its events are here an echo of ours would be too
	kv_put /marker m
	wait_event CLOSE_WRITE,CLOSE marker
	sleep 0.5
	grep -F "$MNT/mine" "$EVENTS" >&2 || true
	[ "$(count_event CLOSE_WRITE,CLOSE mine)" -eq 1 ]
	[ "$(count_event CREATE mine)" -eq 1 ]
	[ "$(count_event DELETE mine)" -eq 0 ]
	[ "$(cat "$MNT/mine")" = x ]
	inw_stop
}

@test "the watch survives an etcd restart" {
	kv_put /before 1
	fs_wait_value "$MNT/before" 1
	inw_start

	etcd_stop_keep
	sleep 1
	etcd_start_again
	kv_put /after 2
	wait_event CREATE after 30
	wait_event CLOSE_WRITE,CLOSE after 10
	[ "$(cat "$MNT/after")" = 2 ]
	wait_mirror_equal 10
	# and it goes on following etcd
	kv_put /before 3
	wait_event MODIFY before
	fs_wait_value "$MNT/before" 3
	inw_stop
}
