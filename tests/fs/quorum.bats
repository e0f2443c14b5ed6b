#!/usr/bin/env bats
#
# tests/fs/quorum.bats - -o quorum: a lookup, open or listing right after
# another client's change sees it, every time, at any depth; the barrier
# in front of them is shared (the root's user.etcd.stats counts its
# requests); a frozen etcd is ETIMEDOUT, not ENOENT and not a hang.
#
# Each test starts its own etcd and mount (tests/lib/mount.bash).  The
# other client's writes go over HTTP from the same Python process that
# then reads through the mount (fs_try), with no wait between: what a
# script sees.  On v2 (no progress requests) the mount reads etcd for
# names it does not know and for listings instead; the barrier's tests
# are v3's.

load ../lib/mount

teardown()
{
	if [[ -n ${ETCD_FROZEN:-} ]]; then
		kill -CONT "$ETCD_FROZEN" 2>/dev/null
	fi
	fs_teardown
}

# Python for fs_try: kv_del(key) deletes a key over HTTP.
KV_DEL='
def kv_del(key):
    if os.environ.get("ETCDCTL_API") == "2":
        _kv2("DELETE", key.decode())
    else:
        _kv("deleterange", {"key": _b64(key)})
'

@test "quorum: another client's new key 1 and 6 directories deep is read right after its put, every time" {
	fs_setup quorum
	run fs_try '
bad = []
for i in range(20):
    for k in ("/a%d/k" % i, "/b%d/c/d/e/f/g/k" % i):
        v = b"v%d" % i
        kv_put(k.encode(), v)
        try:
            got = read_all(args[0] + k)
        except OSError as e:
            got = errno.errorcode.get(e.errno)
        if got != v:
            bad.append((k, got))
print("wrong reads:", bad)
if bad:
    sys.exit(1)
' "$MNT"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "quorum: another client's change of a value is read right after it, every time" {
	fs_setup quorum
	kv_put /k v
	run fs_try '
bad = []
for i in range(20):
    v = b"value %d" % i
    kv_put(b"/k", v)
    got = read_all(args[0] + "/k")
    if got != v:
        bad.append((i, got))
print("wrong reads:", bad)
if bad:
    sys.exit(1)
' "$MNT"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "quorum: another client's deletion is seen at once" {
	fs_setup quorum
	run fs_try "$KV_DEL"'
bad = []
for i in range(20):
    k = "/d/k%d" % i
    kv_put(k.encode(), b"x")
    if read_all(args[0] + k) != b"x":
        bad.append((k, "not there"))
    kv_del(k.encode())
    try:
        read_all(args[0] + k)
        bad.append((k, "read after its deletion"))
    except FileNotFoundError:
        pass
    if os.environ.get("ETCDCTL_API") != "2" and os.path.exists(args[0] + k):
        bad.append((k, "stat after its deletion"))
print("wrong:", bad)
if bad:
    sys.exit(1)
' "$MNT"
	echo "$output"
	getfattr --only-values -n user.etcd.stats "$MNT" | grep quorum
	[ "$status" -eq 0 ]
}

@test "quorum: a listing right after another client's put shows the new name" {
	fs_setup quorum
	kv_put /l/k0 x
	[ "$(ls "$MNT/l")" = k0 ]
	run fs_try '
bad = []
for i in range(1, 21):
    kv_put(b"/l/k%d" % i, b"x")
    names = os.listdir(args[0] + "/l")
    if "k%d" % i not in names:
        bad.append(i)
    kv_put(b"/m%d/x/k" % i, b"x")
    if "x" not in os.listdir(args[0] + "/m%d" % i):
        bad.append(("m", i))
print("missing:", bad)
if bad:
    sys.exit(1)
' "$MNT"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "quorum: operations waiting at once share one request" {
	fs_require_api v3
	fs_setup quorum,request_timeout=10s
	local i req0 wait0 req1 wait1 pids=()

	for i in 0 1 2 3 4 5 6 7; do
		kv_put "/s$i" "$i"
	done
	req0=$(fs_stat quorum_requests)
	wait0=$(fs_stat quorum_waits)
	# while etcd is frozen the first lookup's request hangs; the others
	# arrive meanwhile and must all wait for the one after it
	etcd_freeze
	for i in 0 1 2 3 4 5 6 7; do
		stat -c %s "$MNT/s$i" >"$BATS_TEST_TMPDIR/size$i" &
		pids+=($!)
	done
	# all eight wait at the barrier (a bound on the machine: scaled)
	wait_for 10 eval '(($(fs_stat quorum_waits 1) - wait0 >= 8))'
	kill -CONT "$ETCD_FROZEN"
	ETCD_FROZEN=
	for i in "${pids[@]}"; do
		wait "$i"
	done
	for i in 0 1 2 3 4 5 6 7; do
		[ "$(cat "$BATS_TEST_TMPDIR/size$i")" -eq 1 ]
	done
	req1=$(fs_stat quorum_requests)
	wait1=$(fs_stat quorum_waits)
	echo "requests $((req1 - req0)) for $((wait1 - wait0)) waits" >&2
	((wait1 - wait0 >= 8))
	# the one in flight when etcd froze, and the one they all shared
	((req1 - req0 <= 2))
}

@test "quorum: a frozen etcd is ETIMEDOUT within the request timeout, never ENOENT" {
	fs_setup quorum,request_timeout=2s
	local start

	kv_put /k v
	[ "$(cat "$MNT/k")" = v ]
	etcd_freeze
	for path in "$MNT/new" "$MNT/k"; do
		if fs_v2 && [[ $path == "$MNT/k" ]]; then
			continue	# v2: a known name is served from the mirror
		fi
		start=$SECONDS
		run timeout 20 cat "$path"
		echo "cat $path -> $status after $((SECONDS - start)) s: $output"
		[ "$status" -ne 0 ]
		[ "$status" -ne 124 ]
		[[ $output == *"Connection timed out"* ]]
		((SECONDS - start <= 8))
	done
	if ! fs_v2; then
		run timeout 20 ls "$MNT"
		[[ $output == *"Connection timed out"* ]]
	fi
	kill -CONT "$ETCD_FROZEN"
	ETCD_FROZEN=
	[ "$(cat "$MNT/k")" = v ]
}
