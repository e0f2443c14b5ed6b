#!/usr/bin/env bats
#
# tests/fs/space.bats - df of the mount, and a cluster out of space
#
# df shows etcd's own numbers: used is the database size etcd reports
# (cross-checked with etcdctl endpoint status), size is -o quota= (2 GiB
# by default); while etcd is down df answers from what etcd said last.
# With an etcd started with a small --quota-backend-bytes, a write through
# the mount that etcd refuses for space fails with ENOSPC, the log says so
# once, and the keys written before are intact.  On v2, whose writes etcd
# never refuses for space, the same full cluster takes the mount's writes.
# It does not cover a cluster of several members (each has its own size).

load ../lib/mount

setup()
{
	FS_ETCD_ARGS=()
	if [[ $BATS_TEST_DESCRIPTION == *quota-backend-bytes* ]]; then
		FS_ETCD_ARGS=(--quota-backend-bytes=$((1 << 20)))
		fs_setup quota=1M
		return
	fi
	fs_setup quota=64M
}

teardown()
{
	fs_teardown
}

# etcd's own dbSize, by etcdctl over v3 (v2's etcdctl has no status).
etcd_db_size()
{
	local out

	out=$(ETCDCTL_API=3 "$ETCDCTL_BIN" endpoint status -w json) || return 1
	[[ $out =~ \"dbSize\":([0-9]+) ]] || return 1
	echo "${BASH_REMATCH[1]}"
}

# df's used and size in bytes, "USED SIZE".
df_bytes()
{
	timeout 20 df -B1 --output=used,size "$MNT" | tail -n 1 |
		awk '{ print $1, $2 }'
}

# _iused_is N: df -i says N names are used
_iused_is()
{
	local used

	used=$(timeout 20 df --output=iused "$MNT" | tail -n 1) || return 1
	echo "df -i: $used used" >&2
	((used == $1))
}

_df_used_is_db_size()
{
	local db df

	db=$(etcd_db_size) || return 1
	df=$(df_bytes) || return 1
	echo "etcd dbSize $db, df $df" >&2
	[[ ${df%% *} == "$db" ]]
}

@test "df shows etcd's database size as used and the quota as size" {
	local v size

	# enough data for the database to grow past its first pages: 200
	# random values of 4,000 bytes (as text: base64)
	v=$(head -c 3000 /dev/urandom | base64 -w 0)
	puts_http /grow/k 200 "$v"
	# the mount asks etcd at most every 2 s: wait for a fresh answer
	wait_for 15 _df_used_is_db_size
	size=$(df_bytes)
	[ "${size#* }" -eq $((64 << 20)) ]
	# df -i: the names the mount holds (200 keys and their directory),
	# once the watch has brought the last of them
	wait_for 10 _iused_is 201
	run stat -f -c '%S %s %l' "$MNT"
	[ "$output" = "4096 4096 255" ]
}

@test "df without quota= says 2 GiB, etcd's default quota" {
	local out

	fs_unmount
	fs_mount
	out=$(df_bytes)
	[ "${out#* }" -eq $((2 << 30)) ]
}

@test "df while etcd is down answers from what etcd said last" {
	local before after start

	wait_for 15 _df_used_is_db_size
	before=$(df_bytes)
	etcd_stop_keep
	sleep 2.5	# older than the 2 s the mount keeps an answer
	start=$SECONDS
	after=$(df_bytes)
	[ "$after" = "$before" ]
	# and at once again: no second wait on a cluster that is down
	after=$(df_bytes)
	[ "$after" = "$before" ]
	echo "took $((SECONDS - start)) s"
	((SECONDS - start <= 12))	# two request timeouts at most
	etcd_start_again
	wait_for 15 _df_used_is_db_size
}

@test "writes into an etcd with a small --quota-backend-bytes fail with ENOSPC, logged once" {
	local i v ok=0 n out

	mkdir "$MNT/fill"
	if fs_v2; then
		# v2 writes are not counted against the quota: fill v3's
		v=$(head -c 100000 /dev/zero | tr '\0' a)
		for ((i = 0; i < 30; i++)); do
			ETCDCTL_API=3 "$ETCDCTL_BIN" put "/v3fill/$i" "$v" \
				>/dev/null 2>&1 || break
		done
		run env ETCDCTL_API=3 "$ETCDCTL_BIN" alarm list
		[[ $output == *NOSPACE* ]]
		echo v2 >"$BATS_TEST_TMPDIR/v"
		cp "$BATS_TEST_TMPDIR/v" "$MNT/fill/after"
		kv_is /fill/after $'v2\n'
		! grep -q NOSPACE "$FS_LOG" || false
		return 0
	fi
	for ((i = 0; i < 30; i++)); do
		fs_random 100000 >"$BATS_TEST_TMPDIR/v$i"
		if ! out=$(cp "$BATS_TEST_TMPDIR/v$i" "$MNT/fill/$i" 2>&1); then
			echo "write $i: $out"
			[[ $out == *"No space left on device"* ]]
			break
		fi
		ok=$((ok + 1))
	done
	echo "$ok writes went in"
	((ok >= 3 && ok < 30))
	# more writes, the same refusal, and one log line for all of them
	for n in a b; do
		echo "$n" >"$BATS_TEST_TMPDIR/small"
		run cp "$BATS_TEST_TMPDIR/small" "$MNT/fill/$n"
		[[ $output == *"No space left on device"* ]]
		kv_absent "/fill/$n"
	done
	run grep -c 'alarm NOSPACE' "$FS_LOG"
	[ "$output" = 1 ]
	grep -q "etcdctl alarm disarm" "$FS_LOG"
	# nothing written before is lost, in etcd or in the mount
	for ((i = 0; i < ok; i++)); do
		cmp <(kv_get "/fill/$i") "$BATS_TEST_TMPDIR/v$i"
		cmp "$MNT/fill/$i" "$BATS_TEST_TMPDIR/v$i"
	done
	kv_absent "/fill/$ok"
	# df says there was less room than the refused write needed
	wait_for 15 _df_used_is_db_size
	run df --output=avail -B1 "$MNT"
	[ "${lines[1]// /}" -lt 100000 ]
}
