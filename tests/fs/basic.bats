#!/usr/bin/env bats
#
# tests/fs/basic.bats - the core of the mount: listing, stat, read, create,
# write, mkdir/rmdir, revisions, inode numbers, mtime, open-file snapshots,
# -o ro, -o prefix= and the ownership options.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash) and
# cross-checks what the mount shows against what etcdctl reads from etcd.
# It does not cover editors, conflicts, xattrs or odd key names (see the
# other files in tests/fs/).

load ../lib/mount

setup()
{
	fs_setup
}

teardown()
{
	fs_teardown
}

_not_mounted()
{
	! fs_is_mounted "$1" || false
}

@test "ls shows keys as files and prefixes as directories" {
	kv_put /a 1
	kv_put /dir/b 2
	kv_put /dir/c 3
	kv_put /dir/sub/d 4

	run ls "$MNT"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$output" = "$(printf 'a\ndir')" ]
	run ls "$MNT/dir"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$output" = "$(printf 'b\nc\nsub')" ]
	[ -f "$MNT/a" ]
	[ -d "$MNT/dir" ]
	[ -d "$MNT/dir/sub" ]
	[ -f "$MNT/dir/sub/d" ]
	[ ! -e "$MNT/nothing" ]
}

@test "a prefix is a directory boundary: /d/ never lists /dx" {
	kv_put /d/in 1
	kv_put /dx 2
	kv_put /d0 3

	run ls "$MNT/d"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$output" = in ]
	run ls "$MNT"
	echo "$output"
	[ "$output" = "$(printf 'd\nd0\ndx')" ]
}

@test "stat gives exact sizes" {
	local n f
	for n in 0 1 4095 4096 4097 100000; do
		fs_random "$n" | kv_put "/size/$n"
	done
	printf 'h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c\n' | kv_put /size/utf8

	for n in 0 1 4095 4096 4097 100000; do
		[ "$(stat -c %s "$MNT/size/$n")" -eq "$n" ]
		[ "$(wc -c <"$MNT/size/$n")" -eq "$n" ]
	done
	[ "$(stat -c %s "$MNT/size/utf8")" -eq 14 ]
}

@test "cat gives the exact bytes of the value" {
	local bin
	if fs_v2; then
		# v2 values are UTF-8 text (NUL and CR are text)
		bin='line 1\n\0\xc3\xa9 text\r\nno newline at end'
	else
		bin='line 1\n\0\xff\xfe binary\r\nno newline at end'
	fi
	printf "$bin" | kv_put /bin
	fs_random 300000 >"$BATS_TEST_TMPDIR/big"
	kv_put /big <"$BATS_TEST_TMPDIR/big"

	[ "$(hex <"$MNT/bin")" = "$(kv_get /bin | hex)" ]
	[ "$(hex <"$MNT/bin")" = "$(printf "$bin" | hex)" ]
	cmp "$MNT/big" "$BATS_TEST_TMPDIR/big"
}

@test "a value that is not UTF-8: stored as it is on v3, ENOTSUP on v2" {
	local rev
	kv_put /k old
	rev=$(kv_rev)

	run fs_try 'with open(args[0], "wb") as f: f.write(b"\xff\xfe")' "$MNT/k"
	echo "$output"
	if fs_v2; then
		# etcd v2 would send it back with U+FFFD for each bad byte
		[ "$output" = ENOTSUP ]
		kv_is /k old
		[ "$(cat "$MNT/k")" = old ]
		run fs_try 'with open(args[0], "wb") as f: f.write(b"\xc3")' \
			"$MNT/new"
		echo "$output"
		[ "$output" = ENOTSUP ]
		kv_absent /new
		[ ! -e "$MNT/new" ]
		[ "$(kv_rev)" -eq "$rev" ]
	else
		[ "$output" = OK ]
		[ "$(kv_get /k | hex)" = fffe ]
		[ "$(hex <"$MNT/k")" = fffe ]
		[ "$(kv_rev)" -eq $((rev + 1)) ]
	fi
}

@test "mkdir makes an empty directory: in the mount on v3, a directory node on v2" {
	local rev
	kv_put /other x
	rev=$(kv_rev)

	mkdir "$MNT/empty"
	[ -d "$MNT/empty" ]
	run ls "$MNT"
	echo "$output"
	[ "$output" = "$(printf 'empty\nother')" ]
	run ls -A "$MNT/empty"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(kv_keys)" = /other ]
	if fs_v2; then
		[ "$(kv_rev)" -eq $((rev + 1)) ]
		[ "$(kv_history "$rev")" = "MKDIR /empty" ]
	else
		[ "$(kv_rev)" -eq "$rev" ]
	fi

	rev=$(kv_rev)
	rmdir "$MNT/empty"
	[ ! -e "$MNT/empty" ]
	if fs_v2; then
		[ "$(kv_history "$rev")" = "RMDIR /empty" ]
	else
		[ "$(kv_rev)" -eq "$rev" ]
	fi
}

@test "a file written in a new directory makes its key" {
	mkdir -p "$MNT/new/deeper"
	printf 'v\n' >"$MNT/new/deeper/file"

	kv_is /new/deeper/file $'v\n'
	[ "$(kv_keys)" = /new/deeper/file ]
	[ -d "$MNT/new/deeper" ]
}

@test "rmdir of a non-empty directory fails with ENOTEMPTY" {
	kv_put /full/x 1
	mkdir "$MNT/mine"
	printf 'y' >"$MNT/mine/y"

	run rmdir "$MNT/full"
	[ "$status" -ne 0 ]
	[[ $output == *"Directory not empty"* ]]
	run fs_try 'os.rmdir(args[0])' "$MNT/mine"
	echo "$output"
	[ "$output" = ENOTEMPTY ]
	kv_is /full/x 1
	kv_is /mine/y y
	[ -d "$MNT/full" ]
}

@test "rm of the last file then rmdir works, as on a local disk" {
	kv_put /d/only 1

	rm "$MNT/d/only"
	kv_absent /d/only
	rmdir "$MNT/d"
	[ ! -e "$MNT/d" ]
	[ -z "$(kv_keys)" ]
}

@test "creat makes a key with an empty value" {
	run fs_try 'os.close(os.open(args[0], os.O_CREAT | os.O_WRONLY, 0o644))' \
		"$MNT/created"
	echo "$output"
	[ "$output" = OK ]

	kv_has /created
	[ "$(kv_get /created | wc -c)" -eq 0 ]
	[ "$(kv_meta /created version)" -eq 1 ]
	[ -f "$MNT/created" ]
	[ "$(stat -c %s "$MNT/created")" -eq 0 ]
}

@test "O_CREAT|O_EXCL on an existing key fails with EEXIST" {
	local rev
	kv_put /exists old
	rev=$(kv_rev)

	run fs_try '
fd = os.open(args[0], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(fd, b"new")
os.close(fd)' "$MNT/exists"
	echo "$output"
	[ "$output" = EEXIST ]
	kv_is /exists old
	[ "$(kv_rev)" -eq "$rev" ]
}

@test "O_CREAT|O_EXCL on a key another client created after a listing fails" {
	kv_put /dir/first 1
	run ls "$MNT/dir"
	echo "$output"
	[ "$output" = first ]

	kv_put /dir/late theirs
	run fs_try '
fd = os.open(args[0], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(fd, b"mine")
os.close(fd)' "$MNT/dir/late"
	echo "$output"
	[ "$output" = EEXIST ]
	kv_is /dir/late theirs
	[ "$(kv_meta /dir/late version)" -eq 1 ]
}

@test "O_CREAT|O_EXCL on a new name creates the key" {
	run fs_try '
fd = os.open(args[0], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(fd, b"fresh")
os.close(fd)' "$MNT/fresh"
	echo "$output"
	[ "$output" = OK ]
	kv_is /fresh fresh
	[ "$(kv_meta /fresh version)" -eq 1 ]
}

@test "a write reaches etcd at close, as one new revision" {
	local rev
	kv_put /k old
	rev=$(kv_rev)

	printf 'hello\n' >"$MNT/k"
	printf 'new key\n' >"$MNT/n"

	[ "$(kv_get /k | hex)" = "$(printf 'hello\n' | hex)" ]
	kv_is /n $'new key\n'
	[ "$(kv_meta /k version)" -eq 2 ]
	run kv_history "$rev"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$output" = "$(printf 'PUT /k\nPUT /n')" ]
	[ "$(cat "$MNT/k")" = hello ]
}

@test "nothing reaches etcd before close" {
	kv_put /k old

	run fs_try '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"pending")
r = kv_get(b"/k")
if r != b"old":
    raise SystemExit("etcd holds %r before close" % r)
os.close(fd)' "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
	kv_is /k pending
	[ "$(kv_meta /k version)" -eq 2 ]
}

@test "a close with no write sends nothing" {
	local rev
	kv_put /k value
	rev=$(kv_rev)

	cat "$MNT/k" >/dev/null
	run fs_try 'os.close(os.open(args[0], os.O_RDWR))' "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
	run fs_try 'os.close(os.open(args[0], os.O_WRONLY | os.O_APPEND))' "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
	run fs_try '
fd = os.open(args[0], os.O_RDWR)
os.read(fd, 100)
os.fsync(fd)
os.close(fd)' "$MNT/k"
	echo "$output"
	[ "$output" = OK ]
	: >>"$MNT/k"

	[ "$(kv_rev)" -eq "$rev" ]
	kv_is /k value
	[ "$(kv_meta /k version)" -eq 1 ]
}

@test "a truncating open with no write empties the key" {
	kv_put /a hello
	kv_put /b hello

	: >"$MNT/a"
	[ -z "$(cat "$MNT/a")" ]
	kv_has /a
	[ "$(kv_get /a | wc -c)" -eq 0 ]

	run fs_try '
os.close(os.open(args[0], os.O_WRONLY | os.O_TRUNC))
if read_all(args[0]) != b"":
    raise SystemExit("the mount still shows %r" % read_all(args[0]))
if kv_get(b"/b") != b"":
    raise SystemExit("etcd holds %r" % kv_get(b"/b"))' "$MNT/b"
	echo "$output"
	[ "$output" = OK ]
}

@test "what this mount wrote is what it reads right after close" {
	kv_put /k hello
	kv_put /t hello

	# A reader has the old value in the kernel's cache meanwhile.
	run fs_try '
for name, data in (("k", b"new value"), ("t", b"")):
    path = args[0] + "/" + name
    r = os.open(path, os.O_RDONLY)
    if os.read(r, 100) != b"hello":
        raise SystemExit("the old value is not hello")
    w = os.open(path, os.O_WRONLY | os.O_TRUNC)
    if os.read(r, 100) != b"":
        raise SystemExit("the reader went on past its end")
    if data:
        os.write(w, data)
    os.close(w)
    if read_all(path) != data:
        raise SystemExit("%s reads %r after close, not %r" % (name, read_all(path), data))
    if kv_get(b"/" + name.encode()) != data:
        raise SystemExit("etcd holds %r for %s" % (kv_get(b"/" + name.encode()), name))
    os.close(r)' "$MNT"
	echo "$output"
	[ "$output" = OK ]
}

@test "inode numbers are stable" {
	local a b ia ib
	kv_put /a 1
	kv_put /dir/b 2

	ia=$(stat -c %i "$MNT/a")
	ib=$(stat -c %i "$MNT/dir/b")
	[ "$ia" != "$ib" ]
	[ "$(stat -c %i "$MNT/a")" = "$ia" ]
	a=$(ls -i "$MNT" | awk '$2 == "a" { print $1 }')
	[ "$a" = "$ia" ]
	b=$(ls -i "$MNT/dir" | awk '$2 == "b" { print $1 }')
	[ "$b" = "$ib" ]

	# A new revision of the key is still the same file.
	kv_put /a changed
	fs_wait_value "$MNT/a" changed
	[ "$(stat -c %i "$MNT/a")" = "$ia" ]
	printf 'mine' >"$MNT/a"
	[ "$(stat -c %i "$MNT/a")" = "$ia" ]
}

@test "mtime changes when the revision changes, and only then" {
	local m1 m2 m3
	kv_put /k one

	m1=$(stat -c %y "$MNT/k")
	cat "$MNT/k" >/dev/null
	[ "$(stat -c %y "$MNT/k")" = "$m1" ]

	kv_put /k two
	fs_wait_value "$MNT/k" two
	m2=$(stat -c %y "$MNT/k")
	[ "$m2" != "$m1" ]

	printf 'three' >"$MNT/k"
	m3=$(stat -c %y "$MNT/k")
	[ "$m3" != "$m2" ]
	[ "$(stat -c %y "$MNT/k")" = "$m3" ]
}

@test "an open file keeps its revision while another client changes the key" {
	# 64 KiB so that the second read needs pages the kernel has not read
	# yet.
	python3 -c 'import sys; sys.stdout.write("".join("old line %05d\n" % i for i in range(4400)))' \
		>"$BATS_TEST_TMPDIR/old"
	sed 's/old/NEW/' "$BATS_TEST_TMPDIR/old" >"$BATS_TEST_TMPDIR/new"
	kv_put /k <"$BATS_TEST_TMPDIR/old"

	run fs_try '
old = open(args[1], "rb").read()
new = open(args[2], "rb").read()
fd = os.open(args[0], os.O_RDONLY)
head = os.read(fd, 4096)
kv_put(b"/k", new)
deadline = time.time() + 10
while read_all(args[0]) != new:
    if time.time() > deadline:
        raise SystemExit("the mount never showed the new value")
    time.sleep(0.05)
rest = b""
while True:
    b = os.read(fd, 65536)
    if not b:
        break
    rest += b
if head + rest != old:
    raise SystemExit("the open file changed revision while open")
if os.pread(fd, 4096, 0) != old[:4096]:
    raise SystemExit("pread after the change saw the new value")
os.close(fd)' "$MNT/k" "$BATS_TEST_TMPDIR/old" "$BATS_TEST_TMPDIR/new"
	echo "$output"
	[ "$output" = OK ]
	cmp "$MNT/k" "$BATS_TEST_TMPDIR/new"
}

@test "an open shell fd keeps its content while etcdctl changes the key" {
	local line rest
	printf 'first\nsecond\nthird\n' | kv_put /k

	exec 5<"$MNT/k"
	read -r line <&5
	[ "$line" = first ]
	printf 'changed\n' | kv_put /k
	fs_wait_value "$MNT/k" $'changed\n'
	rest=$(cat <&5)
	exec 5<&-
	[ "$rest" = "$(printf 'second\nthird')" ]
}

@test "SIGTERM with files open: etcdfs unmounts, exits 0 and frees every open file" {
	local r w d pid=$FS_PID

	kv_put /r value
	kv_put /w value
	kv_put /dir/k value
	exec {r}<"$MNT/r" {w}<>"$MNT/w" {d}<"$MNT/dir"
	[ "$(cat <&"$r")" = value ]
	kill -TERM "$pid"
	# the kernel never sends the RELEASEs (nor the RELEASEDIR) of the
	# files still open
	wait_for 10 _not_mounted "$MNT"
	exec {r}<&- {w}<&- {d}<&-
	# fs_unmount checks the exit status, and the log for a sanitizer's
	# report (a leak of an open file's state)
	fs_unmount
	kv_is /w value
	kv_is /r value
}

@test "-o ro: every change fails with EROFS" {
	local rev
	kv_put /file value
	kv_put /dir/inner 1
	fs_unmount
	fs_mount ro
	rev=$(kv_rev)

	[ "$(cat "$MNT/file")" = value ]
	run ls "$MNT"
	echo "$output"
	[ "$output" = "$(printf 'dir\nfile')" ]

	run python3 - "$MNT" <<'EOF'
import errno, os, sys
m = sys.argv[1]
def trunc(p, flags):
    os.close(os.open(p, flags, 0o644))
ops = [
    ("write", lambda: trunc(m + "/file", os.O_WRONLY | os.O_TRUNC)),
    ("append", lambda: trunc(m + "/file", os.O_WRONLY | os.O_APPEND)),
    ("create", lambda: trunc(m + "/new", os.O_WRONLY | os.O_CREAT)),
    ("excl", lambda: trunc(m + "/new", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    ("truncate", lambda: os.truncate(m + "/file", 1)),
    ("unlink", lambda: os.unlink(m + "/file")),
    ("mkdir", lambda: os.mkdir(m + "/newdir")),
    ("rmdir", lambda: os.rmdir(m + "/dir")),
    ("rename", lambda: os.rename(m + "/file", m + "/moved")),
    ("renamedir", lambda: os.rename(m + "/dir", m + "/dir2")),
    ("symlink", lambda: os.symlink("file", m + "/link")),
    ("chmod", lambda: os.chmod(m + "/file", 0o600)),
    ("utime", lambda: os.utime(m + "/file", (0, 0))),
]
for name, op in ops:
    try:
        op()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -vc ' EROFS$' <<<"$output")" -eq 0 ]
	[ "$(wc -l <<<"$output")" -eq 13 ]

	run bash -c 'echo x >"$1"' _ "$MNT/file"
	[[ $output == *"Read-only file system"* ]]
	[ "$(kv_rev)" -eq "$rev" ]
	kv_is /file value
	[ "$(kv_keys)" = "$(printf '/dir/inner\n/file')" ]

	# the kernel knows: /proc/mounts and findmnt say ro
	awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts | grep -qE '^ro(,|$)'
	findmnt -no OPTIONS "$MNT" | grep -qE '^ro(,|$)'
	# and other clients' changes are still shown
	kv_put /file changed
	kv_put /dir/new 2
	fs_wait_value "$MNT/file" changed
	fs_wait_value "$MNT/dir/new" 2
	kv_del /dir/inner >/dev/null
	wait_for 10 test ! -e "$MNT/dir/inner"
}

@test "-o prefix= shows only the keys under the prefix" {
	kv_put /app/a 1
	kv_put /app/d/b 2
	kv_put /apple x
	kv_put /other/y y
	# v2 keys all start with '/'
	fs_v2 || kv_put app z
	fs_unmount
	fs_mount prefix=/app/

	run ls "$MNT"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$output" = "$(printf 'a\nd')" ]
	[ "$(cat "$MNT/a")" = 1 ]
	[ "$(cat "$MNT/d/b")" = 2 ]
	[ ! -e "$MNT/apple" ]
	[ ! -e "$MNT/le" ]
	[ ! -e "$MNT/other" ]

	printf 'new' >"$MNT/new"
	mkdir "$MNT/sub"
	printf 'deep' >"$MNT/sub/f"
	kv_is /app/new new
	kv_is /app/sub/f deep
	rm "$MNT/a"
	kv_absent /app/a
	if fs_v2; then
		[ "$(kv_keys)" = "$(printf '/app/d/b\n/app/new\n/app/sub/f\n/apple\n/other/y')" ]
	else
		[ "$(kv_keys)" = "$(printf '/app/d/b\n/app/new\n/app/sub/f\n/apple\n/other/y\napp')" ]
	fi
	kv_is /apple x
}

@test "-o uid=,gid=,umask= set the owner and mode of every file" {
	kv_put /dir/f 1
	fs_unmount
	fs_mount uid=1234,gid=5678,umask=027

	[ "$(stat -c '%u %g %a' "$MNT/dir/f")" = "1234 5678 640" ]
	[ "$(stat -c '%u %g %a' "$MNT/dir")" = "1234 5678 750" ]
	[ "$(stat -c '%u %g' "$MNT")" = "1234 5678" ]
}
