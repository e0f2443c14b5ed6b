#!/bin/bash
#
# tests/lib/deps.sh - installs what building and testing etcdfs needs
#
# Checks with dpkg-query which of the Debian (12) packages below are
# missing and installs them with apt-get, as root.  When not root and
# something is missing it names the packages and fails.  Then checks that
# /dev/fuse exists: without it the filesystem tests cannot run, and that is
# a failure, not a skip.  It cannot install on anything but Debian and its
# derivatives.

set -u

packages=(
	build-essential pkg-config meson ninja-build
	libfuse3-dev fuse3 libcurl4-openssl-dev libjansson-dev
	etcd-server etcd-client
	inotify-tools attr bats vim nano tmux perl python3 openssl curl
	rsync sqlite3 git universal-ctags
	clang libclang-rt-14-dev gnuplot-nox man-db
	libprotobuf-c-dev protobuf-c-compiler python3-h2 libyaml-dev libssl-dev
)

if [[ ${1:-} == --list ]]; then
	echo "${packages[@]}"
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
	if [[ $status != "install ok installed" ]]; then
		missing+=("$p")
	fi
done

if ((${#missing[@]})); then
	if ((EUID != 0)); then
		echo "deps.sh: missing packages: ${missing[*]}" >&2
		echo "deps.sh: as root, run: apt-get install ${missing[*]}" >&2
		exit 1
	fi
	echo "deps.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get update </dev/null; then
		echo "deps.sh: apt-get update failed" >&2
		exit 1
	fi
	if ! apt-get install -y "${missing[@]}" </dev/null; then
		echo "deps.sh: cannot install: ${missing[*]}" >&2
		exit 1
	fi
fi

if [[ ! -c /dev/fuse ]]; then
	echo "deps.sh: /dev/fuse is missing: the filesystem tests need FUSE" \
		"(load the fuse module, or give the container --device /dev/fuse)" >&2
	exit 1
fi

exit 0
