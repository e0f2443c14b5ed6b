#!/bin/bash
#
# tests/lib/fetch-etcd35.sh - etcd 3.5 for the tests, from Debian 13
#
#   tests/lib/fetch-etcd35.sh [CACHE]
#
# Fetches Debian 13 (trixie)'s etcd-server and etcd-client packages into
# CACHE (default: $ETCD35_CACHE, else tests/.cache/etcd35 in the source
# tree) with tests/lib/fetch-trixie.sh, never installed, and prints the
# directory holding etcd and etcdctl.
#
# Idempotent: a cache that already holds both binaries is reused without
# asking the network.  Tests that start at the same time (meson test runs
# the suite etcd35 in parallel) take turns on fetch-trixie.sh's lock file
# in CACHE, so one of them fetches and the others wait for it and reuse
# its tree.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
cache=${1:-${ETCD35_CACHE:-$here/../.cache/etcd35}}

die()
{
	echo "fetch-etcd35.sh: $*" >&2
	exit 1
}

mkdir -p "$cache" || die "cannot create '$cache'"
cache=$(cd "$cache" && pwd) || exit 1
bin=$cache/root/usr/bin

if [[ -x $bin/etcd && -x $bin/etcdctl ]]; then
	echo "$bin"
	exit 0
fi

root=$("$here/fetch-trixie.sh" "$cache" etcd-server etcd-client) || exit 1
[[ -x $root/usr/bin/etcd && -x $root/usr/bin/etcdctl ]] ||
	die "the packages hold no usr/bin/etcd and usr/bin/etcdctl"
echo "$bin"
