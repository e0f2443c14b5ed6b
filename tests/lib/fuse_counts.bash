# tests/lib/fuse_counts.bash - the kernel's requests to the daemon, counted
# by the daemon itself (the fuse_ lines of the root's user.etcd.stats),
# and a directory of keys to read
#
# Loaded by tests/fs/readpath.bats and evict.bats with
# `load ../lib/fuse_counts`, after tests/lib/mount.bash; a test that pins
# pages calls unpin_pages in its teardown, before fs_teardown.

# stat_of NAME: the counter fuse_NAME of the root's user.etcd.stats (one
# "name value" a line: fs/stats.c)
stat_of()
{
	local value

	value=$(fs_stat "fuse_$1")
	if [[ -z $value ]]; then
		echo "no counter 'fuse_$1' in user.etcd.stats" >&2
		return 1
	fi
	echo "$value"
}

# snap: every fuse_ counter into the array SNAP (NAME -> value)
snap()
{
	local name value

	declare -gA SNAP=()
	while read -r name value; do
		if [[ $name == fuse_* ]]; then
			SNAP[${name#fuse_}]=$value
		fi
	done < <(getfattr --absolute-names --only-values -n user.etcd.stats "$MNT")
}

# delta NAME: how much NAME grew since snap
delta()
{
	echo $(($(stat_of "$1") - SNAP[$1]))
}

# put_dir N: keys /d/k0000.. (values v0000..: tests/lib/puts_http.py),
# more than one READDIRPLUS carries, then a fresh mount of them; their
# values, as `cat` of them all prints them, in $BATS_TEST_TMPDIR/want
put_dir()
{
	local i

	puts_http /d/k "$1"
	for ((i = 0; i < $1; i++)); do
		printf 'v%04d' "$i"
	done >"$BATS_TEST_TMPDIR/want"
	fs_unmount
	fs_mount
}

# pin_pages DIR: holds the kernel's pages of every file of DIR until
# unpin_pages (tests/lib/pin_pages.py): a warm read's count of READs is
# then the daemon's doing alone, not the machine's reclaim (proactive
# reclaim takes clean pages even with memory to spare) nor another
# test's drop of unused inodes.  Pin before the reads counted, and
# before the first read() whose effect on atime they count
pin_pages()
{
	local ready=$BATS_TEST_TMPDIR/pinned

	rm -f "$ready"
	"$FS_PYTHON" "$TESTS_DIR/lib/pin_pages.py" "$1" "$ready" \
		</dev/null 3>&- &
	PIN_PID=$!
	wait_for 30 test -s "$ready" || {
		echo "pin_pages: no pages held of $1" >&2
		return 1
	}
	echo "pinned the pages of $(cat "$ready") files"
}

unpin_pages()
{
	if [[ -n ${PIN_PID:-} ]]; then
		kill "$PIN_PID" 2>/dev/null
		wait "$PIN_PID" 2>/dev/null || true
		PIN_PID=
	fi
}
