#!/usr/bin/env bats
#
# tests/fs/names.bats - keys of any bytes have one path each (fs/names.h)
#
# For each awkward key (spaces, newlines, control bytes, '%', non-UTF-8,
# empty segments, "." and "..", long segments, a key that is also a
# prefix), written by etcdctl: the mount lists it under its documented
# path, reads it, writes it, deletes it and creates it again, and etcd
# holds exactly the bytes of the key each time.  NUL bytes cannot pass
# through a shell argument; the C unit tests of fs/names.c cover them.
#
# On etcd v2 (ETCDFS_API=v2) a key is a UTF-8 path without empty, "." or
# ".." segments, and no key is also a directory: the names of the keys v2
# cannot hold are refused (EINVAL) and nothing reaches etcd.

load ../lib/mount

setup()
{
	fs_setup
}

teardown()
{
	fs_teardown
}

# roundtrip KEY PATH
roundtrip()
{
	local key=$1 path=$2 khex

	khex=$(printf '%s' "$key" | hex)
	kv_put "$key" v1
	[ "$(kv_keys_hex)" = "$khex" ]

	run find "$MNT" -mindepth 1 -type f -printf '%P\n'
	echo "listed: $output"
	echo "wanted: $path"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$output" = "$path" ]
	[ "$(cat "$MNT/$path")" = v1 ]
	[ "$(stat -c %s "$MNT/$path")" -eq 2 ]

	printf v2 >"$MNT/$path"
	[ "$(kv_keys_hex)" = "$khex" ]
	kv_is "$key" v2

	rm "$MNT/$path"
	[ -z "$(kv_keys_hex)" ]
	[ ! -e "$MNT/$path" ]

	mkdir -p "$(dirname "$MNT/$path")"
	printf v3 >"$MNT/$path"
	[ "$(kv_keys_hex)" = "$khex" ]
	kv_is "$key" v3
	[ "$(cat "$MNT/$path")" = v3 ]

	rm "$MNT/$path"
	[ -z "$(kv_keys_hex)" ]
}

# v3: roundtrip KEY PATH; v2, which cannot hold KEY: creating PATH
# through the mount fails with EINVAL, and etcd holds no key.
roundtrip_v3()
{
	local key=$1 path=$2

	if ! fs_v2; then
		roundtrip "$key" "$path"
		return
	fi
	run fs_try '
d = os.path.dirname(args[0])
if not os.path.isdir(d):
    os.makedirs(d)
with open(args[0], "wb") as f:
    f.write(b"v1")' "$MNT/$path"
	echo "create $path: $output"
	[ "$output" = EINVAL ]
	[ ! -e "$MNT/$path" ]
	[ -z "$(kv_keys_hex)" ]
	run find "$MNT" -type f
	[ -z "$output" ]
}

@test "a space stands as it is" {
	roundtrip '/with space' 'with space'
	roundtrip '/dir with space/f g' 'dir with space/f g'
}

@test "newline, tab and DEL are escaped" {
	roundtrip "$(printf '/line\nbreak')" 'line%0Abreak'
	roundtrip "$(printf '/t\tab\x7f')" 't%09ab%7F'
	roundtrip "$(printf '/\x01\x1f')" '%01%1F'
}

@test "a percent sign is escaped" {
	roundtrip '/100%' '100%25'
	roundtrip '/%41' '%2541'
	roundtrip '/%value' '%25value'
	roundtrip '/%' '%25'
}

@test "bytes that are not UTF-8 are escaped (v2: refused)" {
	roundtrip_v3 "$(printf '/bad\xff\xfe')" 'bad%FF%FE'
	roundtrip_v3 "$(printf '/cut\xc3')" 'cut%C3'
	roundtrip_v3 "$(printf '/overlong\xc0\xaf')" 'overlong%C0%AF'
	roundtrip_v3 "$(printf '/surrogate\xed\xa0\x80')" 'surrogate%ED%A0%80'
	roundtrip_v3 "$(printf '/\xe4\xb8')" '%E4%B8'
}

@test "well-formed UTF-8 stands as it is" {
	roundtrip '/héllo-世界' 'héllo-世界'
	roundtrip '/emoji-😀' 'emoji-😀'
}

@test "empty segments are % (v2: refused)" {
	roundtrip_v3 '/a//b' 'a/%/b'
	roundtrip_v3 '/dir/' 'dir/%'
	roundtrip_v3 '//x' '%/x'
	roundtrip_v3 '/a///b' 'a/%/%/b'
}

@test "the segments . and .. are %2E and %2E%2E (v2: refused)" {
	roundtrip_v3 '/d/./x' 'd/%2E/x'
	roundtrip_v3 '/d/../y' 'd/%2E%2E/y'
	roundtrip_v3 '/./z' '%2E/z'
	roundtrip '/...' '...'
	roundtrip '/.hidden' '.hidden'
	roundtrip '/d/..x' 'd/..x'
}

@test "a 300-byte segment is split into a 253-byte part and the rest" {
	local x300 x253 x47
	x300=$(printf 'x%.0s' {1..300})
	x253=${x300:0:253}
	x47=${x300:0:47}

	roundtrip "/long/$x300" "long/$x253%+/$x47"
	roundtrip "/$x300/after" "$x253%+/$x47/after"
}

@test "a 255-byte segment stands whole, a 256-byte one is split" {
	local x
	x=$(printf 'y%.0s' {1..256})

	roundtrip "/${x:0:255}" "${x:0:255}"
	roundtrip "/$x" "${x:0:253}%+/yyy"
}

@test "long segments are never cut inside a character or an escape" {
	local p
	# 150 two-byte characters: 126 of them (252 bytes) fit in a part.
	roundtrip "/$(printf 'é%.0s' {1..150})" \
		"$(printf 'é%.0s' {1..126})%+/$(printf 'é%.0s' {1..24})"

	p=$(printf '%%25%.0s' {1..100})
	roundtrip "/$(printf '%%%.0s' {1..100})" "${p:0:252}%+/${p:0:48}"
}

# v2 has no key that is also a directory: %value is refused there.
@test "a key that is also a prefix is a directory with %value (v2: refused)" {
	if fs_v2; then
		kv_put /a/b value-of-b
		run fs_try '
with open(args[0], "wb") as f:
    f.write(b"x")' "$MNT/a/%value"
		echo "$output"
		[ "$output" = EINVAL ]
		[ ! -e "$MNT/a/%value" ]
		[ "$(ls -A "$MNT/a")" = b ]
		[ "$(kv_keys)" = /a/b ]
		# /a is the directory node of /a/b, and holds nothing else
		[ "$(etcdctl ls /a)" = /a/b ]
		# and a file cannot take a key below it
		kv_put /f plain
		run fs_try 'os.mkdir(args[0])' "$MNT/f/%value"
		echo "$output"
		[ "$output" = ENOTDIR ]
		[ "$(kv_keys)" = "$(printf '/a/b\n/f')" ]
		return 0
	fi
	kv_put /a value-of-a
	kv_put /a/b value-of-b

	[ -d "$MNT/a" ]
	run env LC_ALL=C ls -A "$MNT/a"
	echo "$output"
	[ "$output" = "$(printf '%%value\nb')" ]
	[ "$(cat "$MNT/a/%value")" = value-of-a ]
	[ "$(cat "$MNT/a/b")" = value-of-b ]
	[ "$(stat -c %s "$MNT/a/%value")" -eq 10 ]

	printf 'new-a' >"$MNT/a/%value"
	kv_is /a new-a
	kv_is /a/b value-of-b
	[ "$(kv_keys)" = "$(printf '/a\n/a/b')" ]

	rm "$MNT/a/%value"
	kv_absent /a
	kv_is /a/b value-of-b
	[ ! -e "$MNT/a/%value" ]
	[ "$(ls -A "$MNT/a")" = b ]

	# Made through the mount again.
	printf 'again' >"$MNT/a/%value"
	kv_is /a again
	[ "$(kv_keys)" = "$(printf '/a\n/a/b')" ]
}

@test "a file becomes a directory when another client puts a key below it" {
	kv_put /f plain
	[ -f "$MNT/f" ]

	if fs_v2; then
		# v2: the key must go before a directory can take its name
		kv_del /f >/dev/null
		kv_put /f/child c
		wait_for 10 test -d "$MNT/f"
		[ ! -e "$MNT/f/%value" ]
		[ "$(ls -A "$MNT/f")" = child ]
		[ "$(cat "$MNT/f/child")" = c ]
		return 0
	fi
	kv_put /f/child c
	wait_for 10 test -d "$MNT/f"
	[ "$(cat "$MNT/f/%value")" = plain ]
	[ "$(cat "$MNT/f/child")" = c ]
}

@test "names that are not canonical map to no key" {
	local dot=OK
	kv_put /A a
	if fs_v2; then
		# v2 has no key "/.": %2E names none
		dot=ENOENT
	else
		kv_put /. dot
	fi

	run fs_try 'os.stat(args[0])' "$MNT/%41"
	echo "$output"
	[ "$output" = ENOENT ]
	run fs_try 'os.stat(args[0])' "$MNT/%2e"
	echo "$output"
	[ "$output" = ENOENT ]
	run fs_try 'os.stat(args[0])' "$MNT/%2E"
	echo "$output"
	[ "$output" = "$dot" ]
	run fs_try 'os.stat(args[0])' "$MNT/%0a"
	echo "$output"
	[ "$output" = ENOENT ]

	local name
	for name in '50%' '%zz' '%0a' '%41' 'a%' '%2e' '%+'; do
		run fs_try 'os.close(os.open(args[0], os.O_CREAT | os.O_WRONLY, 0o644))' \
			"$MNT/$name"
		echo "create $name: $output"
		[ "$output" = EINVAL ]
		run fs_try 'os.mkdir(args[0])' "$MNT/$name"
		echo "mkdir $name: $output"
		[ "$output" = EINVAL ]
	done
	if fs_v2; then
		[ "$(kv_keys)" = /A ]
	else
		[ "$(kv_keys)" = "$(printf '/.\n/A')" ]
	fi
}

# v2 keys all start with '/'; what v2 hides is a segment that starts
# with '_' (etcd leaves it out of directory listings).
@test "keys outside the prefix are not shown (v2: nor hidden keys)" {
	if fs_v2; then
		kv_put /_hidden v
		kv_put /_dir/k v
	else
		kv_put noslash v
	fi
	kv_put /inside w

	run ls -A "$MNT"
	echo "$output"
	[ "$output" = inside ]
}

@test "many awkward keys side by side are each listed and read" {
	local -A want
	local path key
	want['with space']='/with space'
	want['line%0Abreak']=$(printf '/line\nbreak')
	want['100%25']='/100%'
	want['a/b']='/a/b'
	want['héllo']='/héllo'
	if ! fs_v2; then
		want['bad%FF']=$(printf '/bad\xff')
		want['a/%/b']='/a//b'
		want['a/%value']='/a'
		want['d/%2E/x']='/d/./x'
		want['d/%2E%2E/y']='/d/../y'
	fi
	for path in "${!want[@]}"; do
		kv_put "${want[$path]}" "value of $path"
	done

	run find "$MNT" -mindepth 1 -type f -printf '%P\n'
	[ "$(LC_ALL=C sort <<<"$output")" = "$(printf '%s\n' "${!want[@]}" | LC_ALL=C sort)" ]
	for path in "${!want[@]}"; do
		[ "$(cat "$MNT/$path")" = "value of $path" ]
	done
}

# A component of the mount is at most NAME_MAX (255) bytes by construction
# (long segments are cut into parts): a longer name is ENAMETOOLONG
# wherever it comes in, as statfs's f_namemax says, and never a key.
@test "a name over 255 bytes is ENAMETOOLONG everywhere" {
	local long max
	long=$(printf 'n%.0s' {1..256})
	max=${long:0:255}
	kv_put /d/f v
	kv_put /d/sub/g w

	[ "$(stat -f -c %l "$MNT")" -eq 255 ]
	run touch "$MNT/d/$long"
	echo "touch: $output"
	[ "$status" -ne 0 ]
	[[ $output == *"File name too long"* ]]
	run mkdir "$MNT/d/$long"
	echo "mkdir: $output"
	[[ $output == *"File name too long"* ]]
	run stat "$MNT/d/$long"
	echo "stat: $output"
	[[ $output == *"File name too long"* ]]
	run ls "$MNT/d/$long/x"
	echo "ls: $output"
	[[ $output == *"File name too long"* ]]

	local call
	for call in \
	    'os.close(os.open(args[0] + "/" + args[1], os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))' \
	    'os.mknod(args[0] + "/" + args[1], 0o644 | stat.S_IFREG)' \
	    'os.mkdir(args[0] + "/" + args[1])' \
	    'os.stat(args[0] + "/" + args[1])' \
	    'os.unlink(args[0] + "/" + args[1])' \
	    'os.rmdir(args[0] + "/" + args[1])' \
	    'os.rename(args[0] + "/f", args[0] + "/" + args[1])' \
	    'os.rename(args[0] + "/sub", args[0] + "/" + args[1])' \
	    'os.rename(args[0] + "/" + args[1], args[0] + "/f")' \
	    'os.symlink("f", args[0] + "/" + args[1])' \
	    'os.link(args[0] + "/f", args[0] + "/" + args[1])'; do
		run fs_try "import stat
$call" "$MNT/d" "$long"
		echo "$call: $output"
		[ "$output" = ENAMETOOLONG ]
	done
	# nothing changed, and 255 bytes is a name like any other
	[ "$(kv_dump)" = "$(printf '/d/f v\n/d/sub/g w')" ]
	printf x >"$MNT/d/$max"
	kv_is "/d/$max" x
	mv "$MNT/d/$max" "$MNT/d/f"
	[ "$(kv_dump)" = "$(printf '/d/f x\n/d/sub/g w')" ]
}
