#!/bin/bash
#
# tests/lib/fetch-trixie.sh - Debian 13 packages unpacked, never installed
#
#   tests/lib/fetch-trixie.sh CACHE PACKAGE[=VERSION]...
#
# Downloads the named packages of Debian 13 (trixie) with apt-get into
# CACHE, unpacks each with dpkg-deb -x into CACHE/root and prints CACHE/root.
# Nothing is installed on the system: apt runs on a private configuration
# (its own sources file, package lists, archive cache and an empty dpkg
# status), made from the system's own Debian sources entry with the suite
# changed to trixie, so the mirror and the keyring are the ones this
# machine already trusts.  A VERSION pins the package (apt-get download
# PACKAGE=VERSION); without one, trixie's current version is taken.
#
# Idempotent: CACHE/root/.packages lists what the tree was unpacked from;
# when it names exactly the packages asked for, the tree is reused without
# asking the network.  Callers that start at the same time take turns on a
# lock file in CACHE, so one of them fetches and the others wait for it and
# reuse its tree.  It cannot work without a Debian mirror in the system's
# sources, nor on a machine whose apt has no trixie keys in its keyring
# (bookworm's debian-archive-keyring has them).

set -u

die()
{
	echo "fetch-trixie.sh: $*" >&2
	exit 1
}

(($# >= 2)) || die "usage: fetch-trixie.sh CACHE PACKAGE[=VERSION]..."
cache=$1
shift
want=$(printf '%s\n' "$@")

mkdir -p "$cache" || die "cannot create '$cache'"
cache=$(cd "$cache" && pwd) || exit 1
root=$cache/root

have()
{
	[[ -r $root/.packages && $(<"$root/.packages") == "$want" ]]
}

if have; then
	echo "$root"
	exit 0
fi
exec 9>"$cache/lock" || die "cannot open '$cache/lock'"
flock 9 || die "cannot lock '$cache/lock'"
if have; then
	echo "$root"
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
debs=$cache/debs
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" \
	"$apt/sources.list.d" "$apt/preferences.d" "$debs" ||
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
rm -f "$debs"/*.deb
(
	cd "$debs" &&
	apt-get "${opts[@]}" -q download "$@" </dev/null
) >"$apt/download.log" 2>&1 ||
	die "apt-get download of $* failed (see '$apt/download.log')"

rm -rf "$root.new"
for p in "$@"; do
	name=${p%%=*}
	debs_of=("$debs/${name}_"*.deb)
	[[ -r ${debs_of[0]} ]] || die "'$name' was not downloaded"
	dpkg-deb -x "${debs_of[0]}" "$root.new" ||
		die "cannot unpack '${debs_of[0]}'"
done
printf '%s\n' "$want" >"$root.new/.packages" ||
	die "cannot write '$root.new/.packages'"
rm -rf "$root"
mv "$root.new" "$root" || die "cannot move the unpacked tree"
echo "$root"
