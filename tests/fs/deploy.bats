#!/usr/bin/env bats
#
# tests/fs/deploy.bats - etcdfs as an operator deploys it: installed by
# meson install, mounted by mount(8) from an fstab file and with
# mount -t fuse.etcdfs (through Debian's mount.fuse3, with its
# drop_privileges too), read-only in the kernel's mount flags, ready for
# systemd (READY=1 on NOTIFY_SOCKET), and documented by a manual page
# that names every option --help lists.
#
# meson install puts etcdfs into a temporary DESTDIR, once per file.
# mount(8) clears PATH and mount.fuse3 runs "etcdfs" by name from sh's
# default path, so the tests that go through mount(8) link
# /usr/local/sbin/etcdfs to the installed binary for the test's time and
# remove the link in teardown; if something else is there already, the
# test fails rather than touch it.  No two such tests run at once (meson
# runs the filesystem tests one by one).
#
# The harness is tests/lib/cmdline.bash.  BUILD_ROOT is meson's build
# directory (default: the one above $ETCDFS's).

bats_require_minimum_version 1.5.0

load ../lib/cmdline

LINK=/usr/local/sbin/etcdfs

setup_file()
{
	local root

	if [[ -z ${ETCDFS:-} || ! -x $ETCDFS ]]; then
		echo "ETCDFS must name the etcdfs binary (got '${ETCDFS:-}')" >&2
		return 1
	fi
	root=${BUILD_ROOT:-$(cd "$(dirname "$ETCDFS")/.." && pwd)}
	DEST=$BATS_FILE_TMPDIR/dest
	meson install -C "$root" --destdir "$DEST" --no-rebuild --quiet \
		>"$BATS_FILE_TMPDIR/install.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/install.log" >&2
		return 1
	}
	PREFIX=$(meson introspect --buildoptions "$root" | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
	ETCDFS_INSTALLED=$DEST$PREFIX/bin/etcdfs
	MAN_PAGE=$DEST$PREFIX/share/man/man1/etcdfs.1
	SHARED_ETCD=$BATS_FILE_TMPDIR/etcd
	ETCD_ENDPOINT=$(etcd_start "$SHARED_ETCD" "${ETCD_ARGS[@]}") || return 1
	export DEST PREFIX ETCDFS_INSTALLED MAN_PAGE SHARED_ETCD ETCD_ENDPOINT
}

teardown()
{
	local rc=0

	cmdline_teardown || rc=1
	# only our own link: what readlink names is the binary we installed
	if [[ ${LINKED:-} == 1 && $(readlink "$LINK") == "$ETCDFS_INSTALLED" ]]; then
		rm -f "$LINK" || rc=1
	fi
	return $rc
}

# Makes /usr/local/sbin/etcdfs the installed etcdfs, for mount(8).
link_etcdfs()
{
	if [[ -e $LINK || -L $LINK ]]; then
		echo "'$LINK' exists ($(readlink "$LINK")): not replacing it" >&2
		return 1
	fi
	ln -s "$ETCDFS_INSTALLED" "$LINK"
	LINKED=1
}

# The value of key @1 in the shared etcd.
get_value()
{
	if fs_v2; then
		curl -sSf --max-time 20 "$ETCD_ENDPOINT/v2/keys$1" |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["node"]["value"])'
	else
		etcd_ctl "$SHARED_ETCD" get --print-value-only "$1"
	fi
}

# The backend's option for fstab and -o.
api_opt()
{
	fs_v2 && echo api=v2 || echo api=v3
}

# Waits until no etcdfs serves @1 (after an umount).
wait_gone()
{
	local i

	for ((i = 0; i < 300; i++)); do
		[[ -z $(etcdfs_pids "$1") ]] && return 0
		sleep 0.05
	done
	echo "etcdfs still serves '$1': $(etcdfs_pids "$1")" >&2
	return 1
}

# The -o options etcdfs documents in --help, one a line, sorted.
help_options()
{
	"$ETCDFS_INSTALLED" --help | sed -n '/^etcdfs options:/,/^$/p' |
		sed -nE 's/^    -o ([a-z][a-z0-9_]*).*/\1/p' | sort -u
}

# The options etcdfs(1) documents under ETCDFS OPTIONS, one a line, sorted.
man_options()
{
	MANWIDTH=80 man -l "$MAN_PAGE" 2>/dev/null |
		sed -n '/^ETCDFS OPTIONS/,/^[A-Z]/p' |
		sed -nE 's/^       ([a-z][a-z0-9_]*)(=|\[| |,|$).*/\1/p' | sort -u
}

@test "meson install puts etcdfs and etcdfs(1) under the prefix" {
	[ -x "$ETCDFS_INSTALLED" ]
	[ -f "$MAN_PAGE" ]
	run "$ETCDFS_INSTALLED" --version
	[ "$status" -eq 0 ]
	[[ ${lines[0]} =~ ^etcdfs\ version\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
	# the page carries the same version
	grep -qF "etcdfs ${lines[0]#etcdfs version }" "$MAN_PAGE"
}

@test "man etcdfs renders and names every option and variable --help lists" {
	local help man var

	run --separate-stderr env MANWIDTH=80 man -l "$MAN_PAGE"
	[ "$status" -eq 0 ]
	# no troff warnings (a table too wide, an unknown macro)
	[ -z "$stderr" ]
	for section in NAME SYNOPSIS DESCRIPTION "ETCDFS OPTIONS" \
		ENVIRONMENT NAMES "WRITES AND CONFLICTS" ERRORS "EXIT STATUS" \
		FILES EXAMPLES; do
		grep -qx "$section" <<<"$output"
	done
	help=$(help_options)
	man=$(man_options)
	echo "--help: $(echo $help)"
	echo "man:    $(echo $man)"
	[ "$(wc -l <<<"$help")" -ge 25 ]
	[ "$help" = "$man" ]
	# every variable --help names
	for var in $("$ETCDFS_INSTALLED" --help | grep -oE '\b(ETCDCTL|ETCDFS|NOTIFY)_[A-Z_]+' | sort -u); do
		grep -qw "$var" <<<"$output"
	done
	# the fstab and systemd examples
	grep -q 'fuse.etcdfs  _netdev,nofail' <<<"$output"
	grep -q 'Type=notify' <<<"$output"
}

@test "an fstab line mounts with mount -T FILE; umount ends the daemon" {
	local fstab=$BATS_TEST_TMPDIR/fstab hp=${ETCD_ENDPOINT#http://}

	put "$P/k" v
	link_etcdfs
	# what an operator writes, words for mount(8) and systemd included
	printf '# etcd\n%s %s fuse.etcdfs %s 0 0\n' "$hp" "$MNT" \
		"$(api_opt),prefix=$P,_netdev,nofail,noauto,defaults,comment=etcd,x-systemd.requires=etcd.service,x-systemd.automount,x-mount.mkdir,noatime" \
		>"$fstab"
	run --separate-stderr timeout 20 mount -T "$fstab" "$MNT" 3>&-
	echo "status $status: $output $stderr"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(cat "$MNT/k")" = v ]
	[ "$(findmnt -no FSTYPE "$MNT")" = fuse.etcdfs ]
	[ "$(findmnt -no SOURCE "$MNT")" = "etcdfs#$ETCD_ENDPOINT" ]
	findmnt -no OPTIONS "$MNT" | grep -qw noatime
	[ -n "$(etcdfs_pids "$MNT")" ]
	umount "$MNT"
	not_mounted "$MNT"
	wait_gone "$MNT"
}

@test "mount -t fuse.etcdfs HOST:PORT MNT -o ro: findmnt says ro" {
	local hp=${ETCD_ENDPOINT#http://}

	put "$P/k" v
	link_etcdfs
	run --separate-stderr timeout 20 mount -t fuse.etcdfs "$hp" "$MNT" \
		-o "ro,$(api_opt),prefix=$P" 3>&-
	echo "status $status: $output $stderr"
	[ "$status" -eq 0 ]
	[ "$(cat "$MNT/k")" = v ]
	findmnt -no OPTIONS "$MNT" | grep -qE '^ro,'
	run bash -c 'echo x >"$1/k"' _ "$MNT"
	[[ $output == *"Read-only file system"* ]]
	put "$P/k" changed
	for ((i = 0; i < 200; i++)); do
		[[ $(cat "$MNT/k") == changed ]] && break
		sleep 0.05
	done
	[ "$(cat "$MNT/k")" = changed ]
	umount "$MNT"
	wait_gone "$MNT"
}

@test "mount(8) reports why etcdfs could not mount, and mounts nothing" {
	link_etcdfs
	run --separate-stderr timeout 20 mount -t fuse.etcdfs 127.0.0.1:1 \
		"$MNT" -o "$(api_opt)" 3>&-
	echo "status $status: $output $stderr"
	[ "$status" -ne 0 ]
	[[ $stderr == *"etcdfs: cannot reach 'http://127.0.0.1:1': "* ]]
	not_mounted "$MNT"
	run --separate-stderr timeout 20 mount -t fuse.etcdfs h:1/x "$MNT" 3>&-
	[ "$status" -ne 0 ]
	[[ $stderr == *"etcdfs: bad endpoint 'h:1/x': a path is not allowed"* ]]
	not_mounted "$MNT"
}

@test "drop_privileges: mount.fuse3 mounts, etcdfs serves with no capabilities" {
	local hp=${ETCD_ENDPOINT#http://} pid d

	put "$P/k" v
	link_etcdfs
	run --separate-stderr timeout 20 mount -t fuse.etcdfs "$hp" "$MNT" \
		-o "drop_privileges,$(api_opt),prefix=$P" 3>&-
	echo "status $status: $output $stderr"
	[ "$status" -eq 0 ]
	[ "$(cat "$MNT/k")" = v ]
	# mount.fuse3 hands it /dev/fd/N: find it by its prefix
	for d in /proc/[0-9]*; do
		[[ $d/exe -ef $ETCDFS_INSTALLED ]] || continue
		tr '\0' ' ' <"$d/cmdline" | grep -q "prefix=$P\b" || continue
		pid=${d#/proc/}
	done
	[ -n "$pid" ]
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q ' /dev/fd/[0-9]* '
	grep -qE '^CapEff:\s+0+$' "/proc/$pid/status"
	grep -qE '^NoNewPrivs:\s+1$' "/proc/$pid/status"
	# writes go through
	echo new >"$MNT/w"
	[ "$(get_value "$P/w")" = new ]
	umount "$MNT"
	not_mounted "$MNT"
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	not_alive "$pid"
}

# listen_notify ADDRESS: a unix datagram socket (a path, or @name in the
# abstract namespace) that writes each datagram it gets as one line (its
# newlines as '|') to $NOTES.
listen_notify()
{
	local i

	NOTES=$BATS_TEST_TMPDIR/notes
	: >"$NOTES"
	rm -f "$NOTES.up"
	python3 -c '
import socket, sys
addr = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
with open(sys.argv[2] + ".up", "w"):
    pass
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(4096).decode().replace("\n", "|") + "\n")
        out.flush()
' "$1" "$NOTES" 3>&- &
	OTHER_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[[ -e $NOTES.up ]] && return 0
		sleep 0.05
	done
	return 1
}

# Waits up to 20 s for a line of $NOTES matching ERE @1.
wait_note()
{
	local i

	for ((i = 0; i < 400; i++)); do
		grep -qE "$1" "$NOTES" && return 0
		sleep 0.05
	done
	echo "no note matching '$1'; got:" >&2
	cat "$NOTES" >&2
	return 1
}

@test "READY=1 reaches NOTIFY_SOCKET once the mount is up and loaded" {
	local sock=$BATS_TEST_TMPDIR/notify pid

	put "$P/k" v
	listen_notify "$sock"
	NOTIFY_SOCKET=$sock start_daemon -o "prefix=$P" "$ETCD_ENDPOINT"
	wait_note '^READY=1\|'
	# by then it is mounted, with its keys
	is_mounted "$MNT"
	[ "$(cat "$MNT/k")" = v ]
	cat "$NOTES"
	# in order: connecting, loading, ready (with its pid)
	[ "$(sed -n 1p "$NOTES")" = "STATUS=connecting to $ETCD_ENDPOINT" ]
	[ "$(sed -n 2p "$NOTES")" = "STATUS=loading the keys under '$P/'" ]
	[ "$(sed -n 3p "$NOTES")" = "READY=1|STATUS=serving $ETCD_ENDPOINT at $MNT|MAINPID=$DAEMON_PID" ]
	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
	wait_note "^STOPPING=1\|STATUS=unmounting $MNT$"
	quiet_log

	# in the abstract namespace; in the background, MAINPID is the
	# daemon's, not the one that started it
	sock=@etcdfs-test-$$-$BATS_TEST_NUMBER
	listen_notify "$sock"
	NOTIFY_SOCKET=$sock run --separate-stderr timeout 20 "$ETCDFS" \
		"${API_ARGS[@]}" -o "prefix=$P" "$ETCD_ENDPOINT" "$MNT" 3>&-
	[ "$status" -eq 0 ]
	wait_note '^READY=1\|'
	pid=$(etcdfs_pids "$MNT")
	[ -n "$pid" ]
	grep -qxF "READY=1|STATUS=serving $ETCD_ENDPOINT at $MNT|MAINPID=$pid" "$NOTES"
	fusermount3 -u "$MNT"
	wait_gone "$MNT"
}

@test "no READY=1 when the mount fails" {
	local sock=$BATS_TEST_TMPDIR/notify

	listen_notify "$sock"
	NOTIFY_SOCKET=$sock expect_failure "^etcdfs: cannot reach 'http://127.0.0.1:1'" \
		127.0.0.1:1 "$MNT"
	wait_note '^STATUS=connecting to http://127.0.0.1:1$'
	sleep 0.2
	! grep -q READY "$NOTES" || false
	# a socket nobody listens on does not fail the mount
	put "$P/k" v
	NOTIFY_SOCKET=$BATS_TEST_TMPDIR/nobody start_daemon -o "prefix=$P" \
		"$ETCD_ENDPOINT"
	[ "$(cat "$MNT/k")" = v ]
	grep -q "^etcdfs: cannot notify systemd: " "$LOG"
	kill -TERM "$DAEMON_PID"
	wait_daemon
	[ "$EXIT_STATUS" -eq 0 ]
}
