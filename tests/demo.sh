#!/bin/bash
#
# tests/demo.sh - a private etcd with sample data, mounted at ./mnt
#
#   bash tests/demo.sh [MOUNTPOINT]
#
# Installs what is missing (tests/lib/deps.sh; as root on Debian 12), builds
# etcdfs into build/ with meson if needed, starts an etcd of its own on
# 127.0.0.1 (free ports, a temporary data dir), loads the sample data of
# tests/demo/ (each file there is one key: tests/demo/registry/pods/shop/x
# is the key /registry/pods/shop/x; a small Kubernetes /registry tree and
# some /config/app keys), and mounts it at MOUNTPOINT (default: mnt in the
# repository) in the foreground.  Ctrl-C (SIGINT), SIGTERM or SIGHUP
# unmounts, stops that etcd by its pid and removes the temporary dir.
#
# Set ETCDFS to an etcdfs binary to use it instead of building.  It never
# touches an etcd it did not start, and it cannot run without FUSE.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
root=$(cd "$here/.." && pwd) || exit 1
mnt=${1:-$root/mnt}
tmp=
fs_pid=
mounted=
made_mnt=

# shellcheck source=tests/lib/etcd.sh
. "$here/lib/etcd.sh"

say()
{
	printf 'demo: %s\n' "$*" >&2
}

is_mounted()
{
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

cleanup()
{
	local i

	trap - EXIT INT TERM HUP
	trap '' INT
	if [[ -n $mounted ]] && is_mounted "$mnt"; then
		say "unmounting $mnt"
		if ! fusermount3 -u "$mnt" 2>/dev/null; then
			say "$mnt is busy: unmounting it lazily"
			fusermount3 -u -z "$mnt"
		fi
	fi
	if [[ -n $fs_pid ]]; then
		for ((i = 0; i < 100; i++)); do
			kill -0 "$fs_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$fs_pid" 2>/dev/null; then
			say "etcdfs $fs_pid did not exit: sending SIGTERM"
			kill -TERM "$fs_pid" 2>/dev/null
		fi
		wait "$fs_pid" 2>/dev/null
	fi
	if [[ -n $made_mnt ]] && ! is_mounted "$mnt"; then
		rmdir "$mnt" 2>/dev/null
	fi
	if [[ -n $tmp ]]; then
		say "stopping etcd"
		etcd_stop "$tmp/etcd"
		rm -rf "$tmp"
	fi
	say "done"
}

die()
{
	say "$*"
	exit 1
}

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

bash "$here/lib/deps.sh" || die "cannot install what the demo needs"

if [[ -z ${ETCDFS:-} ]]; then
	if [[ ! -f $root/build/build.ninja ]]; then
		say "configuring build/"
		if ! meson setup "$root/build" "$root" >"$root/build.log" 2>&1; then
			tail -n 20 "$root/build.log" >&2
			die "meson setup failed (see build.log)"
		fi
		rm -f "$root/build.log"
	fi
	say "building etcdfs"
	ninja -C "$root/build" mount/etcdfs || die "the build failed"
	ETCDFS=$root/build/mount/etcdfs
fi
[[ -x $ETCDFS ]] || die "no etcdfs binary at '$ETCDFS'"

if is_mounted "$mnt"; then
	die "$mnt is mounted already (fusermount3 -u $mnt)"
fi
if [[ ! -d $mnt ]]; then
	mkdir -p "$mnt" || die "cannot create $mnt"
	made_mnt=1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-demo.XXXXXX") || die "no temp dir"
say "starting etcd (data in $tmp/etcd)"
endpoint=$(etcd_start "$tmp/etcd") || die "cannot start etcd"
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$endpoint

say "loading the sample data of tests/demo"
n=0
while IFS= read -r -d '' f; do
	etcdctl put "/${f#./}" <"$here/demo/$f" >/dev/null ||
		die "cannot put /${f#./}"
	n=$((n + 1))
done < <(cd "$here/demo" && find . -type f -print0 | sort -z)
say "loaded $n keys"

# In the background so that this script keeps the signals: a background
# job of a script ignores SIGINT, so Ctrl-C reaches only our trap, which
# unmounts in order.
"$ETCDFS" -f -o "endpoints=$endpoint" "$mnt" </dev/null &
fs_pid=$!
for ((i = 0; i < 200; i++)); do
	is_mounted "$mnt" && break
	kill -0 "$fs_pid" 2>/dev/null || break
	sleep 0.1
done
if ! is_mounted "$mnt"; then
	die "etcdfs did not mount $mnt"
fi
mounted=1

if [[ $mnt == "$PWD"/* ]]; then
	m=${mnt#"$PWD"/}
else
	m=$mnt
fi
cat <<EOF

etcd $endpoint (pid $(cat "$tmp/etcd/pid")) is mounted at $mnt.
In another terminal, try:

  ls $m/registry $m/registry/pods/shop
  cat $m/registry/services/specs/shop/web
  grep -r '"image"' $m/registry/pods
  getfattr -d $m/config/app/replicas
  getfattr -n user.k8s.kind $m/registry/pods/shop/postgres-0
  vim $m/config/app/log-level
  echo 5 > $m/config/app/replicas

and see it from etcd's side:

  export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$endpoint
  etcdctl get /config/app/replicas -w json
  etcdctl put /config/app/log-level debug; cat $m/config/app/log-level

Press Ctrl-C here to unmount and stop etcd.
EOF

# wait returns early when a trapped signal arrives; the trap then exits.
rc=0
while kill -0 "$fs_pid" 2>/dev/null; do
	wait "$fs_pid"
	rc=$?
done
fs_pid=
say "etcdfs exited with status $rc"
exit "$rc"
