#!/bin/bash
#
# tests/lib/fetch-k8s-api.sh - Kubernetes' Go types and fixtures, Debian 13's
#
#   tests/lib/fetch-k8s-api.sh [CACHE]
#
# Fetches Debian 13 (trixie)'s golang-k8s-api-dev and
# golang-k8s-apimachinery-dev, pinned at trixie's 0.32.3 (Debian revisions
# 0.32.3-1 and 0.32.3-2; K8S_API_VERSION and K8S_APIMACHINERY_VERSION
# override the pins), into CACHE (default: $K8S_API_CACHE, else tests/.cache/k8s-api
# in the source tree) with tests/lib/fetch-trixie.sh, never installed, and
# prints the Go source tree that the build's option k8s_api names:
#
#   meson setup build -Dk8s_api="$(tests/lib/fetch-k8s-api.sh)"

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
cache=${1:-${K8S_API_CACHE:-$here/../.cache/k8s-api}}
api=${K8S_API_VERSION:-0.32.3-1}
machinery=${K8S_APIMACHINERY_VERSION:-0.32.3-2}

root=$("$here/fetch-trixie.sh" "$cache" \
	"golang-k8s-api-dev=$api" \
	"golang-k8s-apimachinery-dev=$machinery") || exit 1
src=$root/usr/share/gocode/src
if [[ ! -d $src/k8s.io/api/testdata/HEAD ||
      ! -d $src/k8s.io/apimachinery/pkg/apis/meta/v1 ]]; then
	echo "fetch-k8s-api.sh: '$src' holds no k8s.io/api and k8s.io/apimachinery" >&2
	exit 1
fi
echo "$src"
