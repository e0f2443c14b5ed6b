#!/usr/bin/env bats
#
# tests/fs/mmap.bats - what mmap(2) of the mount's files can do, and
# SQLite on the mount
#
# A file open read-only maps shared or private, at its first open as at
# any later one, and a mapping keeps the revision it was made of while
# another client changes the key.  A file open for writing maps privately
# only: a shared map of it fails with ENODEV (its writes are its own
# until committed).  The mount's temp files, which live in memory, map
# as local files do.  SQLite works with its default rollback journal,
# also when it maps the database; WAL mode needs a writable shared map of
# its "-shm" file and fails, and the way back in docs/semantics.md works.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash).

bats_require_minimum_version 1.5.0

load ../lib/mount

setup()
{
	fs_setup
}

teardown()
{
	rm -f "$BATS_TEST_TMPDIR/hold-echo" "$BATS_TEST_TMPDIR/hold-invals"
	exec 8<&- || true
	fs_teardown
}

# The mmap helpers for fs_try: map(path, flags, prot) maps the whole file
# open with @flags and returns its bytes.
MAP_PY='import mmap
def map(path, flags=os.O_RDONLY, share=mmap.MAP_SHARED,
        prot=mmap.PROT_READ):
    fd = os.open(path, flags)
    try:
        m = mmap.mmap(fd, 0, flags=share, prot=prot)
    finally:
        os.close(fd)
    data = m[:]
    m.close()
    return data
'

@test "a file open read-only maps shared, at its first open and later" {
	head -c 10000 /dev/urandom | base64 -w 0 | head -c 10000 \
		>"$BATS_TEST_TMPDIR/big"
	kv_put /big <"$BATS_TEST_TMPDIR/big"
	kv_put /small hello

	run fs_try "$MAP_PY
for i in range(3):
    if map(args[0]) != read_all(args[1]):
        raise Exception('map %d of big differs' % i)
    if map(args[2]) != b'hello':
        raise Exception('map %d of small differs' % i)
    if map(args[2], share=mmap.MAP_PRIVATE) != b'hello':
        raise Exception('private map %d of small differs' % i)" \
		"$MNT/big" "$BATS_TEST_TMPDIR/big" "$MNT/small"
	echo "$output"
	[ "$output" = OK ]

	# a file this mount wrote, mapped at its first open after the write
	printf 'written here' >"$MNT/new"
	run fs_try "$MAP_PY
assert map(args[0]) == b'written here'" "$MNT/new"
	echo "$output"
	[ "$output" = OK ]
}

@test "a shared map keeps its revision; a new one sees the key's new value" {
	kv_put /k first-value

	run fs_try "$MAP_PY
fd = os.open(args[0], os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
os.close(fd)
assert m[:] == b'first-value', m[:]
kv_put(b'/k', b'second, longer value')
deadline = time.time() + 10
while read_all(args[0]) != b'second, longer value':
    assert time.time() < deadline, 'the mount never saw the change'
    time.sleep(0.05)
assert m[:] == b'first-value', m[:]
assert map(args[0]) == b'second, longer value'
kv_put(b'/k', b'3')
while read_all(args[0]) != b'3':
    assert time.time() < deadline, 'the mount never saw the change'
    time.sleep(0.05)
assert map(args[0]) == b'3'
assert m[:] == b'first-value', m[:]
m.close()" "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
}

# The kernel may still have the name of a file another client changed
# while it was open: the mirror put the new value on a new inode, and the
# kernel has not yet been told that the name leads there (the watch's
# invalidation is held, $ETCDFS_TEST_HOLD_INVALS, and the echo's, which
# would tell it too, $ETCDFS_TEST_HOLD_ECHO).  An open through that name
# reads the new value, and maps it shared: it lands on the new inode
# (fs/file.c's stale_name).
@test "an open through a name the kernel has not yet seen change maps shared" {
	export ETCDFS_TEST_HOLD_ECHO=$BATS_TEST_TMPDIR/hold-echo
	export ETCDFS_TEST_HOLD_INVALS=$BATS_TEST_TMPDIR/hold-invals
	fs_unmount
	fs_mount
	kv_put /k first-value
	exec 8<"$MNT/k"
	[ "$(cat "$MNT/k")" = first-value ]
	events=$(fs_stat watch_events)
	touch "$ETCDFS_TEST_HOLD_ECHO" "$ETCDFS_TEST_HOLD_INVALS"
	FS_NO_CATCH_UP=1 kv_put /k second-and-longer
	fs_wait_applied "$events"

	run fs_try "$MAP_PY
assert read_all(args[0]) == b'second-and-longer', read_all(args[0])
assert map(args[0]) == b'second-and-longer'" "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
	# an open by the open file (no name to look up) reads the key now
	[ "$(cat /proc/self/fd/8)" = second-and-longer ]
	[ "$(cat <&8)" = first-value ]
	rm "$ETCDFS_TEST_HOLD_ECHO" "$ETCDFS_TEST_HOLD_INVALS"
}

@test "a file open for writing maps privately; a shared map of it is ENODEV" {
	kv_put /w value

	run fs_try "$MAP_PY
map(args[0], os.O_RDWR, prot=mmap.PROT_READ | mmap.PROT_WRITE)" "$MNT/w"
	echo "$output"
	[ "$output" = ENODEV ]
	run fs_try "$MAP_PY
map(args[0], os.O_RDWR, prot=mmap.PROT_READ)" "$MNT/w"
	echo "$output"
	[ "$output" = ENODEV ]
	run fs_try "$MAP_PY
assert map(args[0], os.O_RDWR, mmap.MAP_PRIVATE,
           mmap.PROT_READ | mmap.PROT_WRITE) == b'value'" "$MNT/w"
	echo "$output"
	[ "$output" = OK ]
	# while it is open for writing, a reader reads around the pages
	run fs_try "$MAP_PY
fd = os.open(args[0], os.O_RDWR)
try:
    map(args[0])
finally:
    os.close(fd)" "$MNT/w"
	echo "$output"
	[ "$output" = ENODEV ]
	# and once it is closed, maps shared again
	run fs_try "$MAP_PY
assert map(args[0]) == b'value'" "$MNT/w"
	echo "$output"
	[ "$output" = OK ]
	kv_is /w value
}

@test "a temp file, in memory, maps shared for writing as a local file" {
	run fs_try "$MAP_PY
with open(args[0], 'wb') as f:
    f.write(b'0123456789')
fd = os.open(args[0], os.O_RDWR)
m = mmap.mmap(fd, 0)
m[0:4] = b'abcd'
m.flush()
m.close()
os.close(fd)
assert read_all(args[0]) == b'abcd456789', read_all(args[0])" "$MNT/scratch~"
	echo "$output"
	[ "$output" = OK ]
	run kv_keys
	[ -z "$output" ]
}

# sqlite3's log (.log stderr) names every mmap that failed.  v2 holds
# UTF-8 text only: a database, which is not, is refused (ENOTSUP).
@test "sqlite3 reads and writes a database copied into the mount, and maps it (v2: refused)" {
	local db=$BATS_TEST_TMPDIR/a.db rev
	sqlite3 "$db" 'CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);'
	if fs_v2; then
		run cp "$db" "$MNT/a.db"
		echo "$output"
		[ "$status" -ne 0 ]
		[[ $output == *"Operation not supported"* ]]
		run kv_keys
		[ -z "$output" ]
		# a new database: the empty file it made, nothing more
		run sqlite3 "$MNT/b.db" 'CREATE TABLE t(x);'
		echo "$output"
		[ "$status" -ne 0 ]
		[[ $output == *"disk I/O error"* ]]
		[ "$(kv_keys)" = /b.db ]
		kv_is /b.db ''
		return 0
	fi
	cp "$db" "$MNT/a.db"
	kv_get /a.db | cmp - "$db"

	run --separate-stderr sqlite3 -readonly "$MNT/a.db" '.log stderr' \
		'PRAGMA mmap_size = 1048576;' 'SELECT sum(x) FROM t;'
	echo "out: $output"
	echo "err: $stderr"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = 3 ]
	[ -z "$stderr" ]

	rev=$(kv_rev)
	sqlite3 "$MNT/a.db" 'INSERT INTO t VALUES (3);'
	[ "$(sqlite3 "$MNT/a.db" 'SELECT sum(x) FROM t;')" = 6 ]
	# what etcd holds is the database; its journal came and went
	kv_get /a.db >"$db"
	[ "$(sqlite3 "$db" 'SELECT sum(x) FROM t;')" = 6 ]
	[ "$(kv_keys)" = /a.db ]
	run kv_history "$rev"
	echo "$output"
	[ "$(grep -c '^PUT /a.db$' <<<"$output")" -eq 1 ]
	[ ! -e "$MNT/a.db-journal" ]
}

@test "sqlite3 in WAL mode fails with an I/O error; the way back in docs/semantics.md works (v2: refused)" {
	if fs_v2; then
		# no database on v2 (see the test above), in WAL mode neither
		sqlite3 "$BATS_TEST_TMPDIR/w.db" 'PRAGMA journal_mode = WAL;' \
			'CREATE TABLE t(x);' >/dev/null
		run cp "$BATS_TEST_TMPDIR/w.db" "$MNT/w.db"
		echo "$output"
		[[ $output == *"Operation not supported"* ]]
		run kv_keys
		[ -z "$output" ]
		return 0
	fi
	sqlite3 "$MNT/w.db" 'CREATE TABLE t(x); INSERT INTO t VALUES (7);'
	[ "$(sqlite3 "$MNT/w.db" 'PRAGMA journal_mode = WAL;')" = wal ]
	run sqlite3 "$MNT/w.db" 'SELECT x FROM t;'
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"disk I/O error"* ]]

	run sqlite3 "$MNT/w.db" 'PRAGMA locking_mode = EXCLUSIVE;' \
		'PRAGMA journal_mode = DELETE;'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = delete ]
	rm -f "$MNT/w.db-shm" "$MNT/w.db-wal"
	[ "$(sqlite3 "$MNT/w.db" 'SELECT x FROM t;')" = 7 ]
	[ "$(kv_keys)" = /w.db ]
}

# A private map of a file open for writing is filled from what the writer
# wrote; those pages must never be what a reader reads.  The pin of a
# revision the key is not at makes the writer's commit fail (ESTALE), so
# that the key keeps its revision and its bytes.
@test "a writer's private map never shows in what readers read" {
	kv_put /p original
	# the kernel has the pages of this revision, and readers use them
	[ "$(cat "$MNT/p")" = original ]
	[ "$(cat "$MNT/p")" = original ]
	rev=$(kv_meta /p mod_revision)

	run fs_try "$MAP_PY
os.setxattr(args[0], 'user.etcd.pin', str(int(args[1]) - 1).encode())
fd = os.open(args[0], os.O_RDWR)
os.pwrite(fd, b'POLLUTED', 0)
m = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
assert m[:] == b'POLLUTED', m[:]
os.close(fd)" "$MNT/p" "$rev"
	echo "$output"
	[ "$output" = ESTALE ]
	kv_is /p original
	[ "$(kv_meta /p mod_revision)" -eq "$rev" ]
	[ "$(cat "$MNT/p")" = original ]
	run fs_try "$MAP_PY
assert map(args[0]) == b'original', map(args[0])" "$MNT/p"
	echo "$output"
	[ "$output" = OK ]

	# a reader that opened before the writer: once the writer is closed
	# it reads its own revision again
	run fs_try "$MAP_PY
r = os.open(args[0], os.O_RDONLY)
assert os.pread(r, 100, 0) == b'original'
os.setxattr(args[0], 'user.etcd.pin', str(int(args[1]) - 1).encode())
fd = os.open(args[0], os.O_RDWR)
os.pwrite(fd, b'POLLUTED', 0)
m = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
assert m[:] == b'POLLUTED', m[:]
m.close()
try:
    os.close(fd)
except OSError as e:
    assert e.errno == errno.ESTALE, e
got = os.pread(r, 100, 0)
assert got == b'original', got" "$MNT/p" "$rev"
	echo "$output"
	[ "$output" = OK ]
	kv_is /p original
}
