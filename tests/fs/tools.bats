#!/usr/bin/env bats
#
# tests/fs/tools.bats - the standard Unix tools on the mount
#
# ls -lR, find, cat, grep -r, wc, cp -r, tar, tee, mkdir -p, rm -r, mv,
# touch, truncate, >>, dd (sparse and partial writes) and the size limit,
# each compared with the same tree on the local disk and with what etcdctl
# reads from etcd.  Editors are in editors.bats.

load ../lib/mount

setup()
{
	fs_setup
	LOCAL=$BATS_TEST_TMPDIR/local
}

teardown()
{
	fs_teardown
}

# Writes a small tree of files (no empty directories: etcd v3 has none)
# into $1, with modes 0644/0755 as a local umask 022 gives.  On v2, whose
# values are UTF-8 text, the binary file holds control bytes and UTF-8.
make_tree()
{
	local d=$1

	(
		umask 022
		mkdir -p "$d/etc/app" "$d/etc/db" "$d/srv/www/static" "$d/var"
		printf 'name = demo\nlisten = 8080\n# needle here\n' >"$d/etc/app/main.conf"
		printf 'replicas = 3\n' >"$d/etc/app/scale.conf"
		printf 'host = db.local\nneedle = yes\nport = 5432\n' >"$d/etc/db/db.conf"
		printf '<html>needle</html>\n' >"$d/srv/www/index.html"
		if fs_v2; then
			printf '\x00\x01\x02\xc3\xa9 binary' >"$d/srv/www/static/logo.bin"
		else
			printf '\x00\x01\x02\xff\xfe binary' >"$d/srv/www/static/logo.bin"
		fi
		: >"$d/srv/www/static/empty"
		python3 -c 'import sys; sys.stdout.write("".join("row %06d needle-%d\n" % (i, i % 7) for i in range(6000)))' \
			>"$d/var/big.log"
		printf 'no newline' >"$d/top"
	)
}

# Puts every file under the local dir $1 as a key under the prefix $2.
load_tree()
{
	local f

	while IFS= read -r -d '' f; do
		kv_put "$2/${f#./}" <"$1/$f" || return 1
	done < <(cd "$1" && find . -type f -print0)
}

# The keys a tree in $1 becomes under the prefix $2, sorted as etcd sorts.
tree_keys()
{
	(cd "$1" && find . -type f) | sed "s|^\./|$2/|" | LC_ALL=C sort
}

# Checks that every file under the local dir $1 is the key under $2 in
# etcd, byte for byte, and that there are no other keys under $2.
check_keys()
{
	local f

	[ "$(kv_keys "$2/")" = "$(tree_keys "$1" "$2")" ]
	while IFS= read -r -d '' f; do
		[ "$(kv_get "$2/${f#./}" | hex)" = "$(hex <"$1/$f")" ]
	done < <(cd "$1" && find . -type f -print0)
}

# ls -lR reduced to what the mount must match: type, size of files, names.
ls_shape()
{
	(cd "$1" && ls -lR .) | awk '
		/^total / { next }
		/^-/ { print "f", $5, $NF; next }
		/^d/ { print "d", $NF; next }
		{ print }'
}

@test "ls -lR shows the tree with exact sizes" {
	make_tree "$LOCAL"
	load_tree "$LOCAL" ""

	run ls_shape "$MNT"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$output" = "$(ls_shape "$LOCAL")" ]
}

@test "find lists the tree" {
	make_tree "$LOCAL"
	load_tree "$LOCAL" ""

	[ "$(cd "$MNT" && find . | LC_ALL=C sort)" = "$(cd "$LOCAL" && find . | LC_ALL=C sort)" ]
	[ "$(cd "$MNT" && find . -type f -name '*.conf' | LC_ALL=C sort)" = \
	  "$(cd "$LOCAL" && find . -type f -name '*.conf' | LC_ALL=C sort)" ]
	[ "$(cd "$MNT" && find . -type d | LC_ALL=C sort)" = \
	  "$(cd "$LOCAL" && find . -type d | LC_ALL=C sort)" ]
	[ "$(cd "$MNT" && find . -type f -empty)" = ./srv/www/static/empty ]
}

@test "cat, wc and grep -r read the tree" {
	local files
	make_tree "$LOCAL"
	load_tree "$LOCAL" ""
	files=$(cd "$LOCAL" && find . -type f | LC_ALL=C sort)

	# shellcheck disable=SC2086
	[ "$(cd "$MNT" && cat $files | md5sum)" = "$(cd "$LOCAL" && cat $files | md5sum)" ]
	# shellcheck disable=SC2086
	[ "$(cd "$MNT" && wc $files)" = "$(cd "$LOCAL" && wc $files)" ]
	[ "$(cd "$MNT" && grep -r needle . | LC_ALL=C sort)" = \
	  "$(cd "$LOCAL" && grep -r needle . | LC_ALL=C sort)" ]
	[ "$(cd "$MNT" && grep -rl needle . | LC_ALL=C sort)" = \
	  "$(cd "$LOCAL" && grep -rl needle . | LC_ALL=C sort)" ]
	run grep -rc 'needle-3' "$MNT/var"
	echo "$output"
	[ "$output" = "$MNT/var/big.log:857" ]
}

@test "cp -r out of the mount copies every byte" {
	make_tree "$LOCAL"
	load_tree "$LOCAL" /tree

	cp -r "$MNT/tree" "$BATS_TEST_TMPDIR/out"
	diff -r "$LOCAL" "$BATS_TEST_TMPDIR/out"
}

@test "cp -r into the mount makes one key per file" {
	make_tree "$LOCAL"

	cp -r "$LOCAL" "$MNT/in"
	diff -r "$LOCAL" "$MNT/in"
	check_keys "$LOCAL" /in
	[ "$(kv_keys)" = "$(tree_keys "$LOCAL" /in)" ]
}

@test "tar extracts into the mount" {
	local fmode dmode
	make_tree "$LOCAL"
	# tar run by root restores the archived modes; give the archive the
	# modes the mount shows, as a chmod that changes something is refused.
	: >"$MNT/probe"
	mkdir "$MNT/probedir"
	fmode=$(stat -c %a "$MNT/probe")
	dmode=$(stat -c %a "$MNT/probedir")
	rm "$MNT/probe"
	rmdir "$MNT/probedir"
	find "$LOCAL" -type f -exec chmod "$fmode" {} +
	find "$LOCAL" -type d -exec chmod "$dmode" {} +
	tar -cf "$BATS_TEST_TMPDIR/t.tar" -C "$LOCAL" .
	mkdir "$MNT/x"

	run tar -xf "$BATS_TEST_TMPDIR/t.tar" -C "$MNT/x"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	diff -r "$LOCAL" "$MNT/x"
	check_keys "$LOCAL" /x
}

@test "tar archives the mount" {
	make_tree "$LOCAL"
	load_tree "$LOCAL" /t
	mkdir "$BATS_TEST_TMPDIR/back"

	run tar -cf "$BATS_TEST_TMPDIR/t.tar" -C "$MNT/t" .
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	tar -xf "$BATS_TEST_TMPDIR/t.tar" -C "$BATS_TEST_TMPDIR/back"
	diff -r "$LOCAL" "$BATS_TEST_TMPDIR/back"
}

@test "tee writes a key" {
	printf 'via tee\n' | tee "$MNT/teed" >/dev/null
	printf 'more\n' | tee -a "$MNT/teed" >/dev/null

	kv_is /teed $'via tee\nmore\n'
}

@test "mkdir -p then a file makes the nested key" {
	mkdir -p "$MNT/a/b/c"
	[ -d "$MNT/a/b/c" ]
	printf 'deep' >"$MNT/a/b/c/f"

	kv_is /a/b/c/f deep
	[ "$(kv_keys)" = /a/b/c/f ]
	mkdir -p "$MNT/a/b/c"
}

@test "rm -r removes every key below and nothing else" {
	make_tree "$LOCAL"
	load_tree "$LOCAL" /t
	kv_put /tx keep
	kv_put /t0/y keep
	kv_put /u/t keep

	rm -r "$MNT/t"
	[ ! -e "$MNT/t" ]
	[ "$(kv_keys)" = "$(printf '/t0/y\n/tx\n/u/t')" ]
	[ "$(kv_keys /t/)" = "" ]
}

@test "rm -r of a tree made in the mount" {
	mkdir -p "$MNT/m/n/o"
	printf 1 >"$MNT/m/n/o/f"
	printf 2 >"$MNT/m/g"
	mkdir "$MNT/m/empty"

	rm -r "$MNT/m"
	[ ! -e "$MNT/m" ]
	[ -z "$(kv_keys)" ]
}

# v2 has no transactions: a rename is a put with compare-and-swap, then a
# compare-and-delete, in that order (the key is never missing).
@test "mv of a file: one transaction on v3, put then delete on v2" {
	local rev
	kv_put /a value-a
	rev=$(kv_rev)

	mv "$MNT/a" "$MNT/b"
	[ ! -e "$MNT/a" ]
	[ "$(cat "$MNT/b")" = value-a ]
	kv_is /b value-a
	kv_absent /a
	if fs_v2; then
		[ "$(kv_rev)" -eq $((rev + 2)) ]
		[ "$(kv_history "$rev")" = "$(printf 'PUT /b\nDELETE /a')" ]
	else
		[ "$(kv_rev)" -eq $((rev + 1)) ]
		[ "$(kv_history "$rev" | LC_ALL=C sort)" = "$(printf 'DELETE /a\nPUT /b')" ]
	fi
}

@test "mv of a file over another key: one transaction on v3, put then delete on v2" {
	local rev
	kv_put /src new
	kv_put /dst old
	rev=$(kv_rev)

	mv "$MNT/src" "$MNT/dst"
	kv_is /dst new
	[ "$(kv_meta /dst version)" -eq 2 ]
	kv_absent /src
	if fs_v2; then
		[ "$(kv_rev)" -eq $((rev + 2)) ]
		[ "$(kv_history "$rev")" = "$(printf 'PUT /dst\nDELETE /src')" ]
	else
		[ "$(kv_rev)" -eq $((rev + 1)) ]
	fi
	[ "$(cat "$MNT/dst")" = new ]
	[ ! -e "$MNT/src" ]
}

@test "mv of a file into another directory" {
	kv_put /d1/f v
	kv_put /d2/g w
	mv "$MNT/d1/f" "$MNT/d2/"

	kv_is /d2/f v
	kv_absent /d1/f
	[ "$(kv_keys)" = "$(printf '/d2/f\n/d2/g')" ]
}

@test "mv of a directory moves every key" {
	kv_put /d1/a 1
	kv_put /d1/s/b 2
	kv_put /d1x keep

	# rename(2) may move it or fail with EXDEV, and then mv copies and
	# removes: either way it must succeed without a complaint.
	run mv "$MNT/d1" "$MNT/d2"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "$MNT/d1" ]
	[ "$(cat "$MNT/d2/a")" = 1 ]
	[ "$(cat "$MNT/d2/s/b")" = 2 ]
	[ "$(kv_keys)" = "$(printf '/d1x\n/d2/a\n/d2/s/b')" ]
	kv_is /d2/s/b 2
}

@test "touch makes an empty key and leaves an existing one alone" {
	kv_put /old value

	touch "$MNT/new" "$MNT/old"
	kv_has /new
	[ "$(kv_get /new | wc -c)" -eq 0 ]
	kv_is /old value
	[ -f "$MNT/new" ]
}

@test "truncate grows with zeros and shrinks" {
	printf abc | kv_put /t

	truncate -s 10 "$MNT/t"
	[ "$(kv_get /t | hex)" = "$(printf 'abc\0\0\0\0\0\0\0' | hex)" ]
	[ "$(stat -c %s "$MNT/t")" -eq 10 ]
	truncate -s 2 "$MNT/t"
	[ "$(kv_get /t | hex)" = "$(printf 'ab' | hex)" ]
	[ "$(cat "$MNT/t")" = ab ]
	truncate -s 0 "$MNT/t"
	kv_has /t
	[ "$(kv_get /t | wc -c)" -eq 0 ]
	[ "$(stat -c %s "$MNT/t")" -eq 0 ]
}

@test "ftruncate and a partial overwrite give what a local file would" {
	printf 'hello world' | kv_put /f

	run fs_try '
fd = os.open(args[0], os.O_RDWR)
os.pwrite(fd, b"J", 0)
os.pwrite(fd, b"W", 6)
os.ftruncate(fd, 9)
os.pwrite(fd, b"!", 12)
os.close(fd)' "$MNT/f"
	echo "$output"
	[ "$output" = OK ]
	[ "$(kv_get /f | hex)" = "$(printf 'Jello Wor\0\0\0!' | hex)" ]
	[ "$(kv_meta /f version)" -eq 2 ]
}

@test "echo >> appends" {
	printf 'line1\n' | kv_put /log

	echo line2 >>"$MNT/log"
	echo line3 >>"$MNT/log"
	echo first >>"$MNT/newlog"
	kv_is /log $'line1\nline2\nline3\n'
	kv_is /newlog $'first\n'
	[ "$(cat "$MNT/log")" = "$(printf 'line1\nline2\nline3')" ]
}

@test "dd with seek writes sparse files and partial overwrites" {
	printf abc | kv_put /f
	printf 'hello world' | kv_put /g

	printf XY | dd of="$MNT/f" bs=1 seek=10 conv=notrunc status=none
	[ "$(kv_get /f | hex)" = "$(printf 'abc\0\0\0\0\0\0\0XY' | hex)" ]
	printf Z | dd of="$MNT/new" bs=1 seek=5 status=none
	[ "$(kv_get /new | hex)" = "$(printf '\0\0\0\0\0Z' | hex)" ]
	printf J | dd of="$MNT/g" bs=1 conv=notrunc status=none
	kv_is /g 'Jello world'
	printf Q | dd of="$MNT/g" bs=1 seek=3 status=none
	kv_is /g JelQ
	dd if=/dev/zero of="$MNT/zeros" bs=4096 count=0 seek=3 status=none
	[ "$(stat -c %s "$MNT/zeros")" -eq 12288 ]
	[ "$(kv_get /zeros | hex)" = "$(head -c 12288 /dev/zero | hex)" ]
}

@test "cp over an existing key is one new revision" {
	local rev
	kv_put /k old
	printf 'copied\n' >"$BATS_TEST_TMPDIR/src"
	rev=$(kv_rev)

	cp "$BATS_TEST_TMPDIR/src" "$MNT/k"
	kv_is /k $'copied\n'
	[ "$(kv_history "$rev")" = "PUT /k" ]
}

@test "a 1 MiB value is written whole" {
	fs_random 1048576 >"$BATS_TEST_TMPDIR/1m"

	cp "$BATS_TEST_TMPDIR/1m" "$MNT/m"
	cmp "$MNT/m" "$BATS_TEST_TMPDIR/1m"
	[ "$(kv_get /m | md5sum)" = "$(md5sum <"$BATS_TEST_TMPDIR/1m")" ]
}

@test "a 2 MiB value fails with EFBIG at write time" {
	kv_put /small keep

	run bash -c 'head -c 2097152 /dev/zero | tr "\0" x >"$1"' _ "$MNT/big"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"File too large"* ]]
	run fs_try '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
chunk = b"y" * 65536
for i in range(32):
    os.write(fd, chunk)
os.close(fd)' "$MNT/small"
	echo "$output"
	[ "$output" = EFBIG ]

	# The mount goes on working.
	printf ok >"$MNT/after"
	kv_is /after ok
}

# Python's atomic write: a temp file from tempfile in the same directory,
# written, flushed to disk, then os.replace()d over the key.  Its names
# ("tmp" or ".tmp" and 8 of [a-z0-9_]) are temp names: the temp file
# lives in the mount's memory, and etcd sees one put of the key.
@test "Python's tempfile + os.replace: one put of the key, no temp key ever" {
	local rev
	kv_put /conf/app.json '{"v": 1}'
	rev=$(kv_rev)

	run fs_try '
import tempfile
d = args[0]
for target, data, kw in (("app.json", b"{\"v\": 2}\n", {}),
                         ("new.json", b"{}\n", {}),
                         ("app.json", b"{\"v\": 3}\n", {"prefix": ".tmp"})):
    fd, tmp = tempfile.mkstemp(dir=d, **kw)
    print(os.path.basename(tmp), file=sys.stderr)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(d, target))
# and a temp file that is removed, never renamed
with tempfile.NamedTemporaryFile(dir=d) as f:
    f.write(b"scratch")
    f.flush()
with tempfile.TemporaryFile(dir=d) as f:
    f.write(b"scratch")' "$MNT/conf"
	echo "$output"
	[ "${lines[-1]}" = OK ]
	run kv_history "$rev"
	echo "$output"
	[ "$output" = "$(printf 'PUT /conf/app.json\nPUT /conf/new.json\nPUT /conf/app.json')" ]
	kv_is /conf/app.json $'{"v": 3}\n'
	kv_is /conf/new.json $'{}\n'
	[ "$(ls -A "$MNT/conf")" = "$(printf 'app.json\nnew.json')" ]
}

@test "-o temp_names: a site's patterns keep its tools' temp files out of etcd" {
	local rev
	kv_put /d/report.part 'a key, made elsewhere'
	fs_unmount
	fs_mount 'temp_names=*.part:.~lock.*#'
	kv_put /d/doc old
	rev=$(kv_rev)

	printf 'new' >"$MNT/d/doc.part"
	mv "$MNT/d/doc.part" "$MNT/d/doc"
	: >"$MNT/d/.~lock.doc#"
	rm "$MNT/d/.~lock.doc#"
	# '*' does not match a leading '.', as in the shell: that one is a key
	printf 'hidden' >"$MNT/d/.hidden.part"
	# a key made elsewhere with such a name stays a key
	[ "$(cat "$MNT/d/report.part")" = 'a key, made elsewhere' ]
	printf 'edited' >"$MNT/d/report.part"

	run kv_history "$rev"
	echo "$output"
	[ "$output" = "$(printf 'PUT /d/doc\nPUT /d/.hidden.part\nPUT /d/report.part')" ]
	kv_is /d/doc new
	kv_is /d/report.part edited
}

# A new file whose name is a temp name stays in memory; -o notemp sends
# it to etcd like any other (docs/semantics.md's advice when a real key's name
# matches a rule).
@test "-o notemp: a new key with a temp file's name reaches etcd" {
	printf 'kept here' >"$MNT/tmpstorage1"
	[ "$(cat "$MNT/tmpstorage1")" = 'kept here' ]
	kv_absent /tmpstorage1
	rm "$MNT/tmpstorage1"

	fs_unmount
	fs_mount notemp
	printf 'stored' >"$MNT/tmpstorage1"
	printf 'stored too' >"$MNT/app.conf~"
	kv_is /tmpstorage1 stored
	kv_is /app.conf~ 'stored too'
}
