#!/bin/bash
#
# tests/data/v2/capture.sh - captures the etcd v2 reply fixtures of
# tests/unit/test_codec_v2.c from a real etcd 3.4
#
#   tests/data/v2/capture.sh
#
# Starts a private etcd with --enable-v2=true on loopback (tests/lib/etcd.sh),
# runs a fixed sequence of /v2/keys requests with curl, and writes each
# reply into tests/data/v2/CASE/input, its HTTP status into CASE/status.
# The sequence starts on an empty store, so the indexes come out the same
# on every run; the member fixture holds ports that change.  It then
# starts a second etcd without --enable-v2 for the "v2 is off" answer, and
# stops both by pid.
#
# It writes neither CASE/expected (what the parser must make of the reply,
# checked by hand) nor CASE/args (what the test asks of the reply), nor the
# malformed cases (*-bad-*), which are written by hand from real replies.
# Capturing again overwrites input and status only: diff them before
# committing, since the expected files follow the committed inputs.

set -eu

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../lib/etcd.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/etcdfs-capture.XXXXXX")
cleanup()
{
	etcd_stop "$tmp/v2" || true
	etcd_stop "$tmp/v3only" || true
	rm -rf "$tmp"
}
trap cleanup EXIT

ep=$(etcd_start "$tmp/v2" --enable-v2=true)

# save CASE METHOD PATH [curl args...]: one request, its reply kept
save()
{
	local name=$1 method=$2 path=$3 status

	shift 3
	mkdir -p "$here/$name"
	status=$(curl -s -o "$here/$name/input" -w '%{http_code}' \
		-X "$method" "$ep$path" "$@")
	printf '%s\n' "$status" >"$here/$name/status"
	printf '%-28s %s\n' "$name" "$status"
}

# run METHOD PATH [curl args...]: a request whose reply is not kept
run()
{
	local method=$1 path=$2

	shift 2
	curl -s -o /dev/null -X "$method" "$ep$path" "$@"
}

# writes, kept as write- cases
save write-set-new PUT /v2/keys/foo -d value=bar
save write-set-replace PUT /v2/keys/foo -d value=baz
save write-create PUT '/v2/keys/new?prevExist=false' -d value=n
save write-cas PUT '/v2/keys/foo?prevIndex=5' --data-urlencode 'value=v%&=+ x'
save write-update PUT '/v2/keys/foo?prevExist=true' -d value=upd
run PUT /v2/keys/dir/a -d value=1
run PUT /v2/keys/dir/sub/b -d value=2
run PUT /v2/keys/dir/sub/c -d value=
save write-mkdir PUT '/v2/keys/empty?dir=true&prevExist=false'
run PUT /v2/keys/dir/sub-x -d value=3
run PUT '/v2/keys/n%00ul' -d value=a%00b
run PUT '/v2/keys/uni%C3%A9' -d value=%C3%A9t%C3%A9
run PUT /v2/keys/_hidden -d value=h
run PUT '/v2/keys/ttl?ttl=600' -d value=t

# reads
save get-file GET /v2/keys/foo
save get-file-quorum GET '/v2/keys/foo?quorum=true'
save get-dir GET /v2/keys/dir
save get-nul-key GET '/v2/keys/n%00ul'
save get-unicode GET '/v2/keys/uni%C3%A9'
save get-ttl GET /v2/keys/ttl
save list-root GET '/v2/keys/?recursive=true&quorum=true'
save list-dir GET '/v2/keys/dir?recursive=true'
save list-dir-part GET '/v2/keys/dir?recursive=true'
save list-file GET '/v2/keys/foo?recursive=true'
save list-empty-dir GET '/v2/keys/empty?recursive=true'

# errors
save error-100-not-found GET /v2/keys/nothere
save error-101-compare PUT '/v2/keys/foo?prevIndex=1' -d value=x
save error-102-not-file PUT /v2/keys/dir -d value=x
save error-104-not-dir PUT /v2/keys/foo/x -d value=x
save error-105-exists PUT '/v2/keys/foo?prevExist=false' -d value=x
save error-107-root DELETE /v2/keys/
save error-108-not-empty DELETE '/v2/keys/dir?dir=true'
save error-203-index-nan PUT '/v2/keys/foo?prevIndex=abc' -d value=x
save error-100-cas-absent PUT '/v2/keys/nothere?prevIndex=3' -d value=x
save error-101-delete DELETE '/v2/keys/foo?prevIndex=1'

# deletes
save write-cad DELETE '/v2/keys/new?prevIndex=6'
save write-delete DELETE /v2/keys/dir/sub-x
save write-rmdir DELETE '/v2/keys/empty?dir=true'

# watch replies: one event per long poll, from a past index
save event-set GET '/v2/keys/foo?wait=true&waitIndex=4'
save event-set-replace GET '/v2/keys/foo?wait=true&waitIndex=5'
save event-create GET '/v2/keys/new?wait=true&waitIndex=1'
save event-cas GET '/v2/keys/foo?wait=true&waitIndex=7'
save event-update GET '/v2/keys/foo?wait=true&waitIndex=8'
save event-mkdir GET '/v2/keys/?wait=true&recursive=true&waitIndex=12'
save event-cad GET '/v2/keys/new?wait=true&waitIndex=7'
save event-delete GET '/v2/keys/dir?wait=true&recursive=true&waitIndex=14'
run PUT '/v2/keys/short?ttl=1' -d value=s
sleep 3
save event-expire GET '/v2/keys/short?wait=true&waitIndex=22'
run DELETE '/v2/keys/dir?dir=true&recursive=true'
save event-rmdir-recursive GET '/v2/keys/dir?wait=true&recursive=true&waitIndex=23'
save event-rmdir-for-child GET '/v2/keys/dir/sub/b?wait=true&waitIndex=23'

# v2 auth: a wrong password
run PUT /v2/auth/users/root -H 'Content-Type: application/json' \
	-d '{"user":"root","password":"pw"}'
run PUT /v2/auth/enable
save error-110-unauthorized GET /v2/keys/foo -u root:wrong
run DELETE /v2/auth/enable -u root:pw

# 1,100 writes push the first events out of the history of 1,000
for ((i = 0; i < 1100; i++)); do
	printf 'url = "%s/v2/keys/churn"\nrequest = "PUT"\ndata = "value=%d"\n' \
		"$ep" "$i"
	printf 'output = "/dev/null"\n'
done >"$tmp/churn.curl"
curl -s -K "$tmp/churn.curl"
save error-401-cleared GET '/v2/keys/foo?wait=true&waitIndex=4'

save members-one GET /v2/members

ep=$(etcd_start "$tmp/v3only")
save error-v2-off GET /v2/keys/foo
