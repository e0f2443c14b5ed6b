#!/bin/bash
#
# tests/demo.sh - a private etcd with sample data, mounted at ./mnt
#
#   bash tests/demo.sh [MOUNTPOINT]
#
# Installs what is missing (tests/lib/deps.sh; as root on Debian 12),
# fetches Kubernetes' Go types (tests/lib/fetch-k8s-api.sh: Debian 13's
# golang-k8s-api-dev, from the machine's own Debian mirror), builds etcdfs
# and the k8s codec (tools/etcdfs-k8s) into build/ with meson if needed
# (-Dk8s_api), starts an etcd of its own on 127.0.0.1 (free ports, a
# temporary data dir), loads the sample data and mounts it at MOUNTPOINT
# (default: mnt in the repository) in the foreground.  Ctrl-C (SIGINT),
# SIGTERM or SIGHUP unmounts, stops that etcd by its pid and removes the
# temporary dir.
#
# The sample data: the /config/app keys of tests/demo/ (each file there is
# one key: tests/demo/config/app/replicas is the key /config/app/replicas),
# and a Kubernetes /registry of a few hundred objects made by
# tests/lib/k8s_registry.py and stored as protobuf, as the API server
# stores them (with tools/etcdfs-k8s), mounted with
# -o k8s,codec_prefix=/registry/ so that each reads as JSON
# (ETCDFS_K8S_FORMAT=yaml in the environment: -o k8s=yaml, as YAML) and a
# save stores protobuf again.  Where the codec is not built in
# (the fetch failed), it says so and loads the small JSON /registry of
# tests/demo/registry instead, with no codec.
#
# Set ETCDFS to an etcdfs binary to use it instead of building, and
# ETCDFS_K8S to an etcdfs-k8s (default: the one beside ETCDFS's build,
# tools/etcdfs-k8s, if there is one).  It never touches an etcd it did not
# start, and it cannot run without FUSE.

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

# The k8s_api option build/ was configured with ("" if none).
built_k8s_api()
{
	meson introspect --buildoptions "$root/build" 2>/dev/null |
		python3 -c 'import json, sys
print(next((o["value"] for o in json.load(sys.stdin)
            if o["name"] == "k8s_api"), ""))'
}

if [[ -z ${ETCDFS:-} ]]; then
	say "fetching Kubernetes' Go types (Debian 13's golang-k8s-api-dev)"
	if ! k8s_api=$(bash "$here/lib/fetch-k8s-api.sh"); then
		say "cannot fetch them: etcdfs is built without the k8s codec"
		k8s_api=
	fi
	if [[ ! -f $root/build/build.ninja ]]; then
		say "configuring build/"
		if ! meson setup "$root/build" "$root" -Dk8s_api="$k8s_api" \
			>"$root/build.log" 2>&1; then
			tail -n 20 "$root/build.log" >&2
			die "meson setup failed (see build.log)"
		fi
		rm -f "$root/build.log"
	elif [[ -n $k8s_api && $(built_k8s_api) != "$k8s_api" ]]; then
		say "configuring build/ with -Dk8s_api"
		meson configure "$root/build" -Dk8s_api="$k8s_api" >/dev/null ||
			die "meson configure failed"
	fi
	targets=(mount/etcdfs)
	if [[ -n $(built_k8s_api) ]]; then
		targets+=(tools/etcdfs-k8s)
	fi
	say "building ${targets[*]}"
	ninja -C "$root/build" "${targets[@]}" || die "the build failed"
	ETCDFS=$root/build/mount/etcdfs
fi
[[ -x $ETCDFS ]] || die "no etcdfs binary at '$ETCDFS'"
k8s=${ETCDFS_K8S:-$(dirname "$ETCDFS")/../tools/etcdfs-k8s}
if [[ -x $k8s ]] && "$k8s" --version >/dev/null 2>&1; then
	k8s=$(cd "$(dirname "$k8s")" && pwd)/$(basename "$k8s")
else
	[[ -n ${ETCDFS_K8S:-} ]] && die "no etcdfs-k8s at '$ETCDFS_K8S'"
	say "the k8s codec is not built in (meson -Dk8s_api): /registry" \
		"holds JSON samples"
	k8s=
fi
# -o codec= takes a path without blanks, and -o splits at commas
if [[ $k8s == *[\ ,]* ]]; then
	say "-o codec= cannot name '$k8s' (a blank or a comma; set" \
		"ETCDFS_K8S to a copy elsewhere): /registry holds JSON samples"
	k8s=
fi

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

# With the codec, tests/demo/registry (JSON) gives way to the protobuf one.
say "loading the sample data of tests/demo"
n=0
while IFS= read -r -d '' f; do
	[[ -n $k8s && $f == ./registry/* ]] && continue
	etcdctl put "/${f#./}" <"$here/demo/$f" >/dev/null ||
		die "cannot put /${f#./}"
	n=$((n + 1))
done < <(cd "$here/demo" && find . -type f -print0 | sort -z)
say "loaded $n keys"
codec_opts=
if [[ -n $k8s ]]; then
	say "loading a Kubernetes /registry in protobuf (tests/lib/k8s_registry.py)"
	python3 "$here/lib/k8s_registry.py" --codec "$k8s" \
		--endpoint "$endpoint" || die "cannot load the /registry"
	pod=$(python3 "$here/lib/k8s_registry.py" --list 2>/dev/null |
		grep -m 1 '^/registry/pods/shop/web-')
	codec_opts=",k8s,codec_prefix=/registry/"
	[[ ${ETCDFS_K8S_FORMAT:-} == yaml ]] &&
		codec_opts=",k8s=yaml,codec_prefix=/registry/"
fi

# In the background so that this script keeps the signals: a background
# job of a script ignores SIGINT, so Ctrl-C reaches only our trap, which
# unmounts in order.
"$ETCDFS" -f -o "endpoints=$endpoint$codec_opts" "$mnt" </dev/null &
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
if [[ -n $k8s ]]; then
	try="\
  ls $m/registry $m/registry/pods/shop
  cat $m${pod}
  cat $m/registry/services/specs/shop/web
  grep -l '\"nodeName\": \"kind-worker\"' -r $m/registry/pods
  getfattr -n user.k8s.kind $m${pod}
  vim $m/registry/configmaps/shop/app-config   (saved as protobuf)
  getfattr -d $m/config/app/replicas
  echo 5 > $m/config/app/replicas"
	side="\
  etcdctl get ${pod} --print-value-only | head -c 80 | od -c | head -n 3
  etcdctl get ${pod} --print-value-only | head -c -1 | $k8s decode --yaml"
else
	try="\
  ls $m/registry $m/registry/pods/shop
  cat $m/registry/services/specs/shop/web
  grep -r '\"image\"' $m/registry/pods
  getfattr -d $m/config/app/replicas
  getfattr -n user.k8s.kind $m/registry/pods/shop/postgres-0
  vim $m/config/app/log-level
  echo 5 > $m/config/app/replicas"
	side=
fi
cat <<EOF

etcd $endpoint (pid $(cat "$tmp/etcd/pid")) is mounted at $mnt.
In another terminal, try:

$try

and see it from etcd's side:

  export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$endpoint
  etcdctl get /config/app/replicas -w json
  etcdctl put /config/app/log-level debug; cat $m/config/app/log-level
${side:+$side
}
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
