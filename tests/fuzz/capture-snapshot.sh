#!/bin/bash
#
# tests/fuzz/capture-snapshot.sh - makes the seed corpus of fuzz-snapshot
# with the real `etcdctl snapshot save` of etcd 3.4 and 3.5
#
#   tests/fuzz/capture-snapshot.sh
#
# For each version, starts a private etcd on loopback (tests/lib/etcd.sh),
# writes a small history (puts, enough for bucket "key" to have a
# page of its own, an overwrite, a delete, binary bytes, a
# key with a lease, a compaction, a write after it), saves a snapshot to
# tests/fuzz/corpus/snapshot/etcd-VERSION.db (with its sha256 trailer),
# and stops the etcd by pid.  Each file is a few pages (about 25 KB), so
# that libFuzzer's mutations reach every page.  Ids and times change on
# every run; nothing checks the exact bytes, so a new capture only
# replaces the seeds.

set -eu

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$here/corpus/snapshot
tmp=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-capture.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

for version in 3.4 3.5; do
	(
		export ETCDFS_ETCD_VERSION=$version
		. "$here/../lib/etcd.sh"
		dir=$tmp/etcd-$version
		ep=$(etcd_start "$dir")
		trap 'etcd_stop "$dir"' EXIT
		ctl()
		{
			ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" "$@" \
				>/dev/null
		}
		ctl put /a/one 1
		ctl put /a/two 2
		ctl put /a/one 1b
		printf 'bin\000\377' | ctl put "$(printf '/b/\001\377')"
		ctl del /a/two
		for i in $(seq -w 1 20); do
			ctl put "/m/$i" "value $i"
		done
		id=$(ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" \
			lease grant 600 | awk '{print $2}')
		ctl put --lease="$id" /l/k leased
		rev=$(ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" \
			endpoint status -w json |
			sed 's/.*"revision":\([0-9]*\).*/\1/')
		ctl compact "$((rev - 1))"
		ctl put /a/three 3
		ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints="$ep" snapshot save \
			"$out/etcd-$version.db" >/dev/null 2>&1
	)
done
ls -l "$out"
