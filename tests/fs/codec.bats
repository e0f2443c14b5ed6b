#!/usr/bin/env bats
#
# tests/fs/codec.bats - -o codec=PROG: values shown as `PROG decode` writes
# them and saved through `PROG encode`
#
# The codec is tests/lib/testcodec: "TC1 " and netstrings "NAME=VALUE" in
# etcd, "NAME: VALUE" lines in the mount.  TESTCODEC_CTL makes it hang or
# fail, TESTCODEC_LOG counts its runs; etcdctl checks what etcd holds.

load ../lib/mount

CODEC_OPTS=

setup()
{
	export TESTCODEC_CTL=$BATS_TEST_TMPDIR/ctl
	export TESTCODEC_LOG=$BATS_TEST_TMPDIR/runs
	: >"$TESTCODEC_CTL"
	: >"$TESTCODEC_LOG"
	fs_live_setup "codec=$TESTS_DIR/lib/testcodec,request_timeout=5s"
}

teardown()
{
	local pid

	for pid in "$TESTCODEC_CTL".child "$TESTCODEC_CTL".pid; do
		[[ -f $pid ]] && kill -9 "$(cat "$pid")" 2>/dev/null
	done
	fs_live_teardown
}

# The runs of `testcodec VERB` since the log was last emptied.
runs()
{
	grep -c "^$1\$" "$TESTCODEC_LOG" || true
}

@test "cat shows what decode writes; etcd keeps the raw value" {
	kv_put /svc 'TC1 9:app=nginx,10:replicas=3,'
	[ "$(cat "$MNT/svc")" = "$(printf '# testcodec\napp: nginx\nreplicas: 3')" ]
	kv_is /svc 'TC1 9:app=nginx,10:replicas=3,'
	# from the open on, stat shows the view's size
	[ "$(stat -c %s "$MNT/svc")" -eq 35 ]
	# the view is kept with the value: a second reader runs nothing
	: >"$TESTCODEC_LOG"
	[ "$(cat "$MNT/svc")" = "$(printf '# testcodec\napp: nginx\nreplicas: 3')" ]
	cp "$MNT/svc" "$BATS_TEST_TMPDIR/copy"
	[ "$(cat "$BATS_TEST_TMPDIR/copy")" = "$(printf '# testcodec\napp: nginx\nreplicas: 3')" ]
	[ "$(runs decode)" -eq 0 ]
	# a new revision is decoded anew
	kv_put /svc 'TC1 7:app=web,'
	[ "$(cat "$MNT/svc")" = "$(printf '# testcodec\napp: web')" ]
	[ "$(runs decode)" -eq 1 ]
}

@test "cat reads the whole view, longer or shorter than the raw value" {
	local raw='TC1 ' i
	for i in $(seq 100 399); do
		raw+="10:f$i=abcde,"
	done
	# 300 fields of 14 bytes: "10:fNNN=abcde,"
	kv_put /big "$raw"
	# stat does not decode: the raw size first
	[ "$(stat -c %s "$MNT/big")" -eq $((4 + 300 * 14)) ]
	# "# testcodec\n" and 300 lines of 12 bytes, "fNNN: abcde\n": less
	# than the raw size
	[ "$(wc -c <"$MNT/big")" -eq 3612 ]
	[ "$(tail -n 1 "$MNT/big")" = 'f399: abcde' ]
	[ "$(stat -c %s "$MNT/big")" -eq 3612 ]
	# "TC1 3:a=x," (10 bytes) is "# testcodec\na: x\n" (17): more
	kv_put /grow 'TC1 3:a=x,'
	[ "$(stat -c %s "$MNT/grow")" -eq 10 ]
	[ "$(wc -c <"$MNT/grow")" -eq 17 ]
	[ "$(tail -n 1 "$MNT/grow")" = 'a: x' ]
	[ "$(stat -c %s "$MNT/grow")" -eq 17 ]
	# cp and an editor read what cat reads
	cp "$MNT/big" "$BATS_TEST_TMPDIR/big"
	[ "$(wc -c <"$BATS_TEST_TMPDIR/big")" -eq 3612 ]
	timeout 60 vim -es -Nu NONE -i NONE -c 'w! '"$BATS_TEST_TMPDIR/vim" \
		-c 'q!' "$MNT/big" </dev/null
	cmp "$BATS_TEST_TMPDIR/vim" "$BATS_TEST_TMPDIR/big"
}

@test "stat, ls -l and find never run the codec" {
	local f
	for f in a b c; do
		kv_put "/d/$f" "TC1 3:$f=1,"
	done
	echo hang >"$TESTCODEC_CTL"
	: >"$TESTCODEC_LOG"
	[ "$(stat -c %s "$MNT/d/a")" -eq 10 ]
	ls -l "$MNT/d"
	[ "$(find "$MNT/d" -type f | wc -l)" -eq 3 ]
	[ "$(find "$MNT/d" -type f -size -2k | wc -l)" -eq 3 ]
	getfattr -d "$MNT/d/b"
	[ "$(wc -l <"$TESTCODEC_LOG")" -eq 0 ]
}

@test "a save through the view is encoded: printf >, sed -i, vim" {
	local rev
	kv_put /k 'TC1 9:app=nginx,'
	rev=$(kv_meta /k mod_revision)

	printf 'app: web\nreplicas: 2\n' >"$MNT/k"
	kv_is /k 'TC1 7:app=web,10:replicas=2,'
	[ "$(kv_meta /k mod_revision)" -eq $((rev + 1)) ]
	[ "$(cat "$MNT/k")" = "$(printf '# testcodec\napp: web\nreplicas: 2')" ]

	sed -i 's/replicas: 2/replicas: 5/' "$MNT/k"
	kv_is /k 'TC1 7:app=web,10:replicas=5,'
	[ "$(kv_meta /k mod_revision)" -eq $((rev + 2)) ]

	timeout 60 vim -es -Nu NONE -i NONE -c '%s/web/api/' -c 'wq' "$MNT/k" \
		</dev/null
	kv_is /k 'TC1 7:app=api,10:replicas=5,'
	[ "$(kv_meta /k mod_revision)" -eq $((rev + 3)) ]
	[ "$(kv_keys)" = /k ]

	# a new file is encoded too
	printf 'x: 1\n' >"$MNT/new"
	kv_is /new 'TC1 3:x=1,'
}

@test "a text encode refuses fails with EINVAL and writes nothing" {
	local rev
	kv_put /k 'TC1 9:app=nginx,'
	rev=$(kv_meta /k mod_revision)
	cat "$MNT/k"

	run fs_try '
fd = os.open(args[0], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"not a field\n")
os.close(fd)' "$MNT/k"
	echo "$output"
	[ "$output" = EINVAL ]
	run sh -c 'printf "no colon\n" | cat >"$1"' sh "$MNT/k"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"Invalid argument"* ]]
	kv_is /k 'TC1 9:app=nginx,'
	[ "$(kv_meta /k mod_revision)" -eq "$rev" ]
	[ "$(kv_rev)" -eq "$rev" ]
	[ "$(cat "$MNT/k")" = "$(printf '# testcodec\napp: nginx')" ]
	# the codec's standard error is in the log
	grep "'k' not saved: '.*testcodec encode' failed (exit status 1: testcodec: line 1: expected" "$FS_LOG"

	echo encode:fail >"$TESTCODEC_CTL"
	run fs_try '
fd = os.open(args[0], os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"a: b\n")
os.close(fd)' "$MNT/other"
	[ "$output" = EINVAL ]
	run kv_absent /other
	[ "$status" -eq 0 ]
	grep "exit status 3: testcodec: told to fail" "$FS_LOG"
}

@test "a value decode refuses is shown raw, logged once" {
	kv_put /plain 'hello world'
	[ "$(cat "$MNT/plain")" = 'hello world' ]
	[ "$(stat -c %s "$MNT/plain")" -eq 11 ]
	[ "$(cat "$MNT/plain")" = 'hello world' ]
	kv_put /plain 'hello again'
	[ "$(cat "$MNT/plain")" = 'hello again' ]
	[ "$(grep -c "'plain' shown raw: '.*testcodec decode' failed (exit status 1: testcodec: not a TC1 value)" "$FS_LOG")" -eq 1 ]
	# a decode that fails at once is the raw value too
	echo decode:fail >"$TESTCODEC_CTL"
	kv_put /obj 'TC1 3:a=1,'
	[ "$(cat "$MNT/obj")" = 'TC1 3:a=1,' ]
}

# The time since @1 (${EPOCHREALTIME/./}), in ms.
ms_since()
{
	echo $(((${EPOCHREALTIME/./} - $1) / 1000))
}

@test "a hanging codec is killed after the request timeout; the mount answers" {
	local start took pid child
	# the request timeout (5 s, setup's) is the subject: never scaled;
	# how late the kill may come is a limit on the machine: scaled
	local late=$((3000 * FS_SCALE))
	kv_put /h 'TC1 3:a=1,'
	kv_put /other 'TC1 3:b=2,'
	echo decode:hang >"$TESTCODEC_CTL"

	start=${EPOCHREALTIME/./}
	cat "$MNT/h" >"$BATS_TEST_TMPDIR/out" &
	pid=$!
	# while it hangs, the mount answers
	wait_for 10 test -s "$TESTCODEC_CTL.child"
	ls -l "$MNT" >/dev/null
	kv_is /other 'TC1 3:b=2,'
	[ "$(getfattr --only-values -n user.etcd.version "$MNT/other")" != "" ]
	wait "$pid"
	took=$(ms_since "$start")
	echo "the read took $took ms"
	((took >= 5000 && took < 5000 + late))
	# killed: the raw value is shown
	[ "$(cat "$BATS_TEST_TMPDIR/out")" = 'TC1 3:a=1,' ]
	grep "'h' shown raw: .*(killed after the request timeout)" "$FS_LOG"
	# the codec and its child are gone, and no zombie is left
	child=$(cat "$TESTCODEC_CTL.child")
	pid=$(cat "$TESTCODEC_CTL.pid")
	wait_for 5 sh -c "! kill -0 $child 2>/dev/null"
	run kill -0 "$pid"
	[ "$status" -ne 0 ]
	run ps -o stat= --ppid "$FS_PID"
	echo "children: $output"
	[[ $output != *Z* ]]

	# an encode that hangs is killed too, and nothing is written
	echo encode:hang >"$TESTCODEC_CTL"
	rm -f "$TESTCODEC_CTL.child" "$TESTCODEC_CTL.pid"
	start=${EPOCHREALTIME/./}
	run sh -c 'printf "a: 9\n" | cat >"$1"' sh "$MNT/h"
	took=$(ms_since "$start")
	echo "the write took $took ms"
	((took >= 5000 && took < 5000 + late))
	[ "$status" -ne 0 ]
	[[ $output == *"Invalid argument"* ]]
	kv_is /h 'TC1 3:a=1,'
	grep "'h' not saved: .*(killed after the request timeout)" "$FS_LOG"
	run kill -0 "$(cat "$TESTCODEC_CTL.pid")"
	[ "$status" -ne 0 ]
	: >"$TESTCODEC_CTL"
	[ "$(tail -n 1 "$MNT/other")" = 'b: 2' ]
}

@test "truncate(2) of a coded key's path to N > 0 is refused and writes nothing" {
	local rev
	kv_put /k 'TC1 9:app=nginx,'
	rev=$(kv_meta /k mod_revision)
	# its raw bytes are not the text: cutting them would store garbage
	run python3 -c 'import os, sys; os.truncate(sys.argv[1], 3)' "$MNT/k"
	[ "$status" -ne 0 ]
	[[ $output == *"Operation not supported"* ]]
	kv_is /k 'TC1 9:app=nginx,'
	[ "$(kv_meta /k mod_revision)" -eq "$rev" ]
	# truncate(1) cuts the open file's text, which is then encoded
	truncate -s 12 "$MNT/k"
	kv_is /k 'TC1 '
	[ "$(kv_meta /k mod_revision)" -eq $((rev + 1)) ]
}

@test "a codec edit that conflicts fails with ESTALE and keeps their value" {
	kv_put /k 'TC1 3:a=1,'
	run fs_try '
fd = os.open(args[0], os.O_RDWR)
assert os.read(fd, 100) == b"# testcodec\na: 1\n"
kv_put(b"/k", b"TC1 3:a=2,")
os.lseek(fd, 0, 0)
os.write(fd, b"# testcodec\na: 3\n")
os.close(fd)' "$MNT/k"
	echo "$output"
	[ "$output" = ESTALE ]
	kv_is /k 'TC1 3:a=2,'
	fs_wait_value "$MNT/k" $'# testcodec\na: 2\n'
}

@test "codec_prefix= limits the codec to the keys under it" {
	kv_put /enc/a 'TC1 3:a=1,'
	kv_put /plain/a 'TC1 3:a=1,'
	fs_unmount
	fs_mount "codec=$TESTS_DIR/lib/testcodec,codec_prefix=/enc/"
	: >"$TESTCODEC_LOG"
	[ "$(cat "$MNT/plain/a")" = 'TC1 3:a=1,' ]
	[ "$(runs decode)" -eq 0 ]
	printf 'raw text' >"$MNT/plain/b"
	kv_is /plain/b 'raw text'
	[ "$(runs encode)" -eq 0 ]
	[ "$(tail -n 1 "$MNT/enc/a")" = 'a: 1' ]
	printf 'b: 2\n' >"$MNT/enc/b"
	kv_is /enc/b 'TC1 3:b=2,'

	# a codec_prefix above the mount's prefix covers every key of it
	fs_unmount
	fs_mount "prefix=/enc,codec=$TESTS_DIR/lib/testcodec,codec_prefix=/"
	[ "$(tail -n 1 "$MNT/a")" = 'a: 1' ]
}

@test "the view counts against the value budget and goes with the value" {
	local i
	for i in $(seq 1 20); do
		kv_put "/v/$i" "TC1 4:a=$(printf %02d "$i"),"
	done
	fs_unmount
	fs_mount "codec=$TESTS_DIR/lib/testcodec,value_budget=64"
	: >"$TESTCODEC_LOG"
	for i in $(seq 1 20); do
		[ "$(tail -n 1 "$MNT/v/$i")" = "a: $(printf %02d "$i")" ]
	done
	(($(getfattr --only-values -n user.etcd.valueBytes "$MNT") <= 64))
	# evicted views are decoded again
	[ "$(tail -n 1 "$MNT/v/1")" = 'a: 01' ]
	[ "$(runs decode)" -eq 21 ]
}

@test "codec= may name a program in PATH" {
	kv_put /k 'TC1 3:a=1,'
	fs_unmount
	PATH=$TESTS_DIR/lib:$PATH fs_mount codec=testcodec
	[ "$(tail -n 1 "$MNT/k")" = 'a: 1' ]
}
