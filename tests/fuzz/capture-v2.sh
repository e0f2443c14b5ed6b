#!/bin/bash
#
# tests/fuzz/capture-v2.sh - captures the seed corpus of fuzz-codec-v2 from
# a real etcd 3.4
#
#   tests/fuzz/capture-v2.sh
#
# Starts a private etcd with --enable-v2=true on loopback
# (tests/lib/etcd.sh), and a three-member one (tests/lib/cluster.sh), runs
# a fixed sequence of v2 requests with curl and writes each reply body,
# as it came, to tests/fuzz/corpus/codec-v2/NAME; then stops every etcd
# by pid.  The fixtures of tests/data/v2 are seeds too (run-fuzzer gets
# both directories), so this adds what they lack: a three-member cluster's
# members, a member added but not started (no name, no client URL), a
# member list after a member was removed, a long-poll answered by a later
# write, a deep listing, and the errors again from another history.
#
# Ports and ids change on every run; nothing checks the exact bytes, so a
# new capture only adds or replaces seeds.

set -eu

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$here/corpus/codec-v2
. "$here/../lib/cluster.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-capture.XXXXXX")
cleanup()
{
	etcd_stop "$tmp/one" || true
	cluster_stop "$tmp/three" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$out"

ep=$(etcd_start "$tmp/one" --enable-v2=true)

# save NAME METHOD PATH [curl args...]: one request, its reply kept
save()
{
	local name=$1 method=$2 path=$3 status

	shift 3
	status=$(curl -s -o "$out/$name" -w '%{http_code}' -X "$method" \
		"$ep$path" "$@")
	printf '%-28s %s\n' "$name" "$status" >&2
}

run()
{
	local method=$1 path=$2

	shift 2
	curl -s -o /dev/null -X "$method" "$ep$path" "$@"
}

save set PUT /v2/keys/a/b -d value=one
save set-prev PUT /v2/keys/a/b -d value=two
run PUT /v2/keys/a/c/d/e -d value=deep
run PUT '/v2/keys/a/%E2%82%AC' --data-urlencode 'value=€ "q" \ x'
run PUT '/v2/keys/a/t?ttl=300' -d value=t
run PUT /v2/keys/a/b -d value=three
save get GET /v2/keys/a/b
save get-dir GET /v2/keys/a
save list-deep GET '/v2/keys/?recursive=true&sorted=true'
save list-a GET '/v2/keys/a?recursive=true'
save error-100 GET /v2/keys/a/none
save error-101 PUT '/v2/keys/a/b?prevValue=nope' -d value=x
save error-105 PUT '/v2/keys/a/b?prevExist=false' -d value=x
save error-102 PUT '/v2/keys/a' -d value=x
save error-108 DELETE '/v2/keys/a?dir=true'
save cad DELETE '/v2/keys/a/c/d/e?prevValue=deep'
save rmdir-recursive DELETE '/v2/keys/a/c?dir=true&recursive=true'
save event-past GET '/v2/keys/a/b?wait=true&waitIndex=1'
save event-recursive GET '/v2/keys/a?wait=true&recursive=true&waitIndex=8'

# a long poll that a later write answers
curl -s -o "$out/event-wait" "$ep/v2/keys/a/w?wait=true" &
poll=$!
sleep 0.5
run PUT /v2/keys/a/w -d value=woken
wait "$poll"
echo "event-wait"

for ((i = 0; i < 1010; i++)); do
	printf 'url = "%s/v2/keys/churn"\nrequest = "PUT"\ndata = "value=%d"\n' \
		"$ep" "$i"
	printf 'output = "/dev/null"\n'
done >"$tmp/churn.curl"
curl -s -K "$tmp/churn.curl"
save error-401 GET '/v2/keys/a/b?wait=true&waitIndex=2'
save members-one GET /v2/members

eps=$(cluster_start "$tmp/three" 3 --enable-v2=true)
ep=${eps%%,*}
save members-three GET /v2/members
# a member added and not started: no name, no client URL yet
# (etcd refuses to add one until every member has been up a few seconds)
for ((i = 0; ; i++)); do
	ETCDCTL_API=3 etcdctl --endpoints="$ep" member add m4 \
		--peer-urls=http://127.0.0.1:9 >/dev/null 2>&1 && break
	((i < 40)) || { echo "cannot add a member" >&2; exit 1; }
	sleep 0.5
done
save members-unstarted GET /v2/members
id=$(python3 -c '
import json, sys
for m in json.load(sys.stdin)["members"]:
    if not m["clientURLs"]:
        print(m["id"])
' <"$out/members-unstarted")
ETCDCTL_API=3 etcdctl --endpoints="$ep" member remove "$id" >/dev/null
save members-after-remove GET /v2/members
save leader GET /v2/members/leader
