#!/bin/bash
#
# tests/lib/fetch-etcd35.sh - etcd 3.5 for the tests, from Debian 13
#
#   tests/lib/fetch-etcd35.sh [CACHE]
#
# Downloads Debian 13 (trixie)'s etcd-server and etcd-client packages with
# apt-get into CACHE (default: $ETCD35_CACHE, else tests/.cache/etcd35 in
# the source tree), unpacks them there with dpkg-deb -x and prints the
# directory holding etcd and etcdctl.  Nothing is installed on the system:
# apt runs on a private configuration (its own sources file, package lists,
# archive cache and an empty dpkg status), made from the system's own
# Debian sources entry with the suite changed to trixie, so the mirror and
# the keyring are the ones this machine already trusts.
#
# Idempotent: a cache that already holds both binaries is reused without
# asking the network.  Tests that start at the same time (meson test runs
# the suite etcd35 in parallel) take turns on a lock file in CACHE, so
# one of them fetches and the others wait for it and reuse its tree.  It cannot work without a Debian mirror in the
# system's sources, nor on a machine whose apt has no trixie keys in its
# keyring (bookworm's debian-archive-keyring has them).

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
exec 9>"$cache/lock" || die "cannot open '$cache/lock'"
flock 9 || die "cannot lock '$cache/lock'"
if [[ -x $bin/etcd && -x $bin/etcdctl ]]; then
	echo "$bin"
	exit 0
fi

# The system's Debian mirror: the first URIs of a deb822 entry for a Debian
# archive (not its security one), else the first deb line of sources.list.
mirror=
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
	mirror=$(awk '
		/^URIs:/ { for (i = 2; i <= NF; i++)
				if ($i !~ /security/) { print $i; exit } }
	' /etc/apt/sources.list.d/debian.sources)
	k=$(awk '/^Signed-By:/ { print $2; exit }' \
		/etc/apt/sources.list.d/debian.sources)
	[[ -n $k && -r $k ]] && keyring=$k
fi
if [[ -z $mirror && -r /etc/apt/sources.list ]]; then
	mirror=$(awk '
		$1 == "deb" {
			for (i = 2; i <= NF; i++) {
				if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; continue }
				if ($i !~ /security/) { print $i; exit }
				break
			}
		}' /etc/apt/sources.list)
fi
[[ -n $mirror ]] || die "no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
[[ -r $keyring ]] || die "no keyring '$keyring'"

apt=$cache/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" \
	"$apt/sources.list.d" "$apt/preferences.d" "$cache/debs" ||
	die "cannot create '$apt'"
: >"$apt/status"
cat >"$apt/sources.list.d/trixie.sources" <<EOF
Types: deb
URIs: $mirror
Suites: trixie
Components: main
Signed-By: $keyring
EOF

opts=(
	-o "Dir::Etc::SourceList=/dev/null"
	-o "Dir::Etc::SourceParts=$apt/sources.list.d"
	-o "Dir::Etc::Preferences=/dev/null"
	-o "Dir::Etc::PreferencesParts=$apt/preferences.d"
	-o "Dir::State::Lists=$apt/lists"
	-o "Dir::State::status=$apt/status"
	-o "Dir::Cache=$apt/cache"
	-o "APT::Architecture=$(dpkg --print-architecture)"
	-o "Acquire::Languages=none"
	-o "Debug::NoLocking=1"
)

apt-get "${opts[@]}" -q update </dev/null >"$apt/update.log" 2>&1 ||
	die "apt-get update of trixie failed (see '$apt/update.log')"
(
	cd "$cache/debs" &&
	apt-get "${opts[@]}" -q download etcd-server etcd-client </dev/null
) >"$apt/download.log" 2>&1 ||
	die "apt-get download failed (see '$apt/download.log')"

rm -rf "$cache/root.new"
for deb in "$cache"/debs/etcd-server_*.deb "$cache"/debs/etcd-client_*.deb; do
	[[ -r $deb ]] || die "'$deb' was not downloaded"
	dpkg-deb -x "$deb" "$cache/root.new" || die "cannot unpack '$deb'"
done
[[ -x $cache/root.new/usr/bin/etcd && -x $cache/root.new/usr/bin/etcdctl ]] ||
	die "the packages hold no usr/bin/etcd and usr/bin/etcdctl"
rm -rf "$cache/root"
mv "$cache/root.new" "$cache/root" || die "cannot move the unpacked tree"
echo "$bin"
