#!/usr/bin/env bats
#
# tests/fs/editors.bats - editors and in-place tools save a key as exactly
# one new revision
#
# vim (with its defaults: swap file, the "4913" probe, writebackup), nano
# (driven under tmux as a person would), sed -i and perl -i.  After each
# edit the history of etcd since the edit began must be exactly one PUT of
# each edited key: no deletion of it at any moment, no temp, swap or backup
# key, ever; and the mount must show no leftover file either.
#
# The mountpoint is outside /tmp: vim makes no backup of files whose path
# matches its 'backupskip' (/tmp/* by default), and the backup is part of
# what is tested.

load ../lib/mount

setup()
{
	FS_MNT_BASE=$(mktemp -d /var/tmp/etcdfs-editors.XXXXXX)
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME"
	TMUX_SOCKET=etcdfs-test-$$-$BATS_TEST_NUMBER
	fs_setup
}

teardown()
{
	local rc=0

	tmux -L "$TMUX_SOCKET" kill-server 2>/dev/null
	fs_teardown || rc=1
	# Never rm -r here: it could be a mount still.
	if ! fs_is_mounted "$FS_MNT_BASE/mnt"; then
		rmdir "$FS_MNT_BASE/mnt" 2>/dev/null
		rmdir "$FS_MNT_BASE" || rc=1
	fi
	return $rc
}

APP_CONF='# app settings
name = demo
mode = old
replicas = 3
'

# Keys of the tests: the edited one and neighbours that must not change.
seed()
{
	printf '%s' "$APP_CONF" | kv_put /etc/app.conf
	kv_put /etc/other.conf 'mode = old'
	kv_put /etc/sub/x 1
	SEEDED=$(printf '/etc/app.conf\n/etc/other.conf\n/etc/sub/x')
}

# check_saved REV KEY WANT: since REV etcd saw exactly one PUT, of KEY; the
# key now holds exactly WANT, as its version 2; no other key appeared and
# the mount shows no leftover.
check_saved()
{
	local rev=$1 key=$2 want=$3

	run kv_history "$rev"
	echo "history since $rev:"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "PUT $key" ]
	[ "$(kv_get "$key" | hex)" = "$(printf '%s' "$want" | hex)" ]
	[ "$(kv_meta "$key" version)" -eq 2 ]
	[ "$(kv_keys)" = "$SEEDED" ]
	run ls -A "$MNT/etc"
	echo "in the mount: $output"
	[ "$output" = "$(printf 'app.conf\nother.conf\nsub')" ]
	[ "$(hex <"$MNT${key}")" = "$(printf '%s' "$want" | hex)" ]
}

vim_runtime()
{
	vim -es -Nu NONE -i NONE \
		-c 'call writefile([$VIMRUNTIME], "/dev/stdout")' -c 'qa!' \
		</dev/null
}

tmux_run()
{
	tmux -L "$TMUX_SOCKET" "$@"
}

# Starts a terminal of 100x30 running the command line $1.
tmux_start()
{
	tmux_run -f /dev/null new-session -d -s ed -x 100 -y 30 "$1" 3>&-
}

_screen_has()
{
	tmux_run capture-pane -p -t ed 2>/dev/null | grep -q -- "$1"
}

# wait_screen TEXT: waits until the screen shows TEXT (20 s at most, times
# $TEST_TIMEOUT_MULTIPLIER).  Each key is sent once the screen shows that
# the program waits for it: a key typed ahead may be read with the one
# before and dropped (vim's y/n prompt reads the terminal itself and keeps
# only the first key of what it read).
wait_screen()
{
	if ! wait_for 20 _screen_has "$1"; then
		echo "the screen never showed '$1'; it shows:"
		tmux_run capture-pane -p -t ed
		return 1
	fi
}

_tmux_gone()
{
	! tmux_run has-session -t ed 2>/dev/null || false
}

wait_exit()
{
	if ! wait_for 20 _tmux_gone; then
		echo "the editor did not exit; the screen shows:"
		tmux_run capture-pane -p -t ed
		return 1
	fi
}

@test "vim -es with defaults.vim saves one new revision" {
	local rt rev
	rt=$(vim_runtime)
	[ -f "$rt/defaults.vim" ]
	seed
	rev=$(kv_rev)

	run timeout 60 vim -Nu "$rt/defaults.vim" -i NONE -es \
		-c '%s/mode = old/mode = new/' -c wq "$MNT/etc/app.conf" </dev/null
	echo "$output"
	[ "$status" -eq 0 ]
	check_saved "$rev" /etc/app.conf "${APP_CONF/mode = old/mode = new}"
	kv_is /etc/other.conf 'mode = old'
}

@test "vim with the default setup, typed at in a terminal, saves one revision" {
	local rev
	seed
	rev=$(kv_rev)

	tmux_start "vim $(printf %q "$MNT/etc/app.conf")"
	wait_screen 'replicas = 3'
	tmux_run send-keys -t ed ':%s/mode = old/mode = typed/' Enter
	wait_screen 'mode = typed'
	tmux_run send-keys -t ed ':wq' Enter
	wait_exit
	check_saved "$rev" /etc/app.conf "${APP_CONF/mode = old/mode = typed}"
}

@test "vim warns and keeps the other client's value when the key changed" {
	local rev
	seed

	tmux_start "vim $(printf %q "$MNT/etc/app.conf")"
	wait_screen 'replicas = 3'
	kv_put /etc/app.conf 'changed by someone else'
	fs_wait_value "$MNT/etc/app.conf" 'changed by someone else'
	rev=$(kv_rev)
	tmux_run send-keys -t ed ':%s/mode = old/mode = mine/' Enter
	wait_screen 'mode = mine'
	tmux_run send-keys -t ed ':w' Enter
	wait_screen 'changed since reading it'
	wait_screen 'Do you really want to write to it'
	tmux_run send-keys -t ed n
	wait_screen 'Press ENTER or type command to continue'
	tmux_run send-keys -t ed ':q!' Enter
	wait_exit

	kv_is /etc/app.conf 'changed by someone else'
	[ "$(kv_rev)" -eq "$rev" ]
	[ "$(kv_keys)" = "$SEEDED" ]
	run ls -A "$MNT/etc"
	echo "$output"
	[ "$output" = "$(printf 'app.conf\nother.conf\nsub')" ]
}

@test "nano in a terminal saves one new revision" {
	local rev
	seed
	rev=$(kv_rev)

	tmux_start "nano $(printf %q "$MNT/etc/app.conf")"
	wait_screen 'replicas = 3'
	tmux_run send-keys -t ed '# edited by nano' Enter
	wait_screen '# edited by nano'
	tmux_run send-keys -t ed C-o
	wait_screen 'File Name to Write'
	tmux_run send-keys -t ed Enter
	wait_screen 'Wrote'
	tmux_run send-keys -t ed C-x
	wait_exit
	check_saved "$rev" /etc/app.conf "# edited by nano
$APP_CONF"
}

@test "sed -i over 100 keys: one new revision each, nothing else" {
	local i rev want
	puts_http '/cfg/k%03d' 100 $'id = %d\nmode = old\n'
	# the mount has them all before sed's glob lists them, and their
	# replays (inotify's events) are over before sed starts
	wait_for 10 eval '[ "$(ls -A "$MNT/cfg" 2>/dev/null | wc -l)" -eq 100 ]'
	wait_for 30 fs_echo_idle
	rev=$(kv_rev)

	run timeout 120 sed -i 's/mode = old/mode = new/' "$MNT"/cfg/*
	[ "$status" -eq 0 ]

	run kv_history "$rev"
	[ "$status" -eq 0 ]
	want=$(for ((i = 0; i < 100; i++)); do printf 'PUT /cfg/k%03d\n' "$i"; done)
	[ "$(LC_ALL=C sort <<<"$output")" = "$want" ]
	[ "$(kv_rev)" -eq $((rev + 100)) ]
	# each key's whole value and version, in one request each (kv_get
	# and kv_meta of 100 keys took most of the test's 2 minutes)
	want=$(for ((i = 0; i < 100; i++)); do
		printf '/cfg/k%03d id = %d\nmode = new\n\n' "$i" "$i"; done)
	[ "$(kv_dump)" = "$want" ]
	want=$(for ((i = 0; i < 100; i++)); do printf '/cfg/k%03d 2\n' "$i"; done)
	[ "$(kv_metas /cfg/ version)" = "$want" ]
	[ "$(kv_keys | wc -l)" -eq 100 ]
	[ "$(ls -A "$MNT/cfg" | wc -l)" -eq 100 ]
	[ "$(ls -A "$MNT/cfg" | LC_ALL=C sort)" = "$(for ((i = 0; i < 100; i++)); do printf 'k%03d\n' "$i"; done)" ]
}

@test "sed -i on one key saves one new revision" {
	local rev
	seed
	rev=$(kv_rev)

	sed -i 's/replicas = 3/replicas = 5/' "$MNT/etc/app.conf"
	check_saved "$rev" /etc/app.conf "${APP_CONF/replicas = 3/replicas = 5}"
}

@test "perl -i saves one new revision of each key" {
	local rev
	seed
	rev=$(kv_rev)

	perl -i -pe 's/mode = old/mode = perl/' "$MNT/etc/app.conf"
	check_saved "$rev" /etc/app.conf "${APP_CONF/mode = old/mode = perl}"

	kv_put /etc/sub/x 'old x'
	fs_wait_value "$MNT/etc/sub/x" 'old x'
	rev=$(kv_rev)
	perl -i -pe 's/old/perl/' "$MNT/etc/other.conf" "$MNT/etc/sub/x"
	run kv_history "$rev"
	echo "$output"
	[ "$(LC_ALL=C sort <<<"$output")" = "$(printf 'PUT /etc/other.conf\nPUT /etc/sub/x')" ]
	kv_is /etc/other.conf 'mode = perl'
	kv_is /etc/sub/x 'perl x'
	[ "$(kv_keys)" = "$SEEDED" ]
	run ls -A "$MNT/etc/sub"
	echo "in the mount: $output"
	[ "$output" = x ]
}

@test "an edit with no change by vim leaves etcd alone" {
	local rev rt
	rt=$(vim_runtime)
	seed
	rev=$(kv_rev)

	run timeout 60 vim -Nu "$rt/defaults.vim" -i NONE -es -c q \
		"$MNT/etc/app.conf" </dev/null
	[ "$status" -eq 0 ]
	[ "$(kv_rev)" -eq "$rev" ]
	[ "$(kv_keys)" = "$SEEDED" ]
	run ls -A "$MNT/etc"
	echo "$output"
	[ "$output" = "$(printf 'app.conf\nother.conf\nsub')" ]
}
