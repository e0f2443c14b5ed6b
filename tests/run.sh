#!/bin/bash
#
# tests/run.sh - builds etcdfs and runs the test suite, in one of three tiers
#
#   bash tests/run.sh [quick|ci|soak]
#
# The tier (default ci, which is what .ci/run runs) picks the tests;
# tests/meson.build puts each test in its tiers (the suites quick, ci and
# asan; soak is every test a build defines):
#
#   quick  (5 minutes)  the main pass alone: unit tests, the fuzz targets'
#          seeds, integration tests on v3, the core fs files on v3
#          (fs_quick).
#   ci     (under 30 minutes on 2 cores)  the main pass: every fs file on
#          v3 over etcd 3.4, v2 and etcd 3.5 for the files whose subject
#          is etcd's answers, every integration test on both versions; the
#          sanitizer pass without the serial campaigns; the fuzz pass.
#   soak   (up to 2 hours; docs/testing.md records the last run)  every
#          test of every backend and version, the sanitizer pass over
#          every fs file, each fuzz target for $FUZZ_SECONDS (default 180),
#          and TEST_TIER=soak in the environment, which the long campaigns
#          read (the leader's and the daemon's kill loops at full length,
#          load.bats for minutes: tests/lib/tier.bash).
#
# 1. tests/lib/deps.sh: the Debian packages (installed as root if missing)
#    and /dev/fuse.
# 2. main, build/: warnings as errors; the tier's tests, $RUN_JOBS at a
#    time, the etcd 3.5 runs (NAME-3.5, tests/meson.build) in the same
#    meson test as the 3.4 ones, so that they fill the slots beside them.
#    etcd 3.5 is fetched first, once (tests/lib/etcd.sh with
#    ETCDFS_ETCD_VERSION=3.5); if that gives no 3.5, that is one failure
#    and the pass runs without the suite etcd35.
# 3. asan, build-asan/: -Db_sanitize=address,undefined, timeouts times 3
#    (meson's and bats' per case, TEST_TIMEOUT_MULTIPLIER); ci: the suite
#    asan (unit with each fuzz target's replay of its seeds, the
#    integration tests that need no 3-member cluster, and the fs files
#    of fs_sanitize: a subset that reaches every line of fs/ and mount/
#    the whole fs suite reaches); soak: unit, integration and every fs
#    file.
# 4. fuzz, build-fuzz/ (clang, -Dfuzzers=true): the fuzz suite
#    ($FUZZ_SECONDS per target: 20 in ci, 180 in soak).
# 5. etcd35 (only when named in RUN_PASSES): the tier's etcd 3.5 runs
#    alone, in build/ (the main pass runs them too).
#
# Tests run in parallel, as meson schedules them: each starts its own etcd
# on free ports and its own mount in its own temporary dir; the timing-
# sensitive ones (tests/meson.build: is_parallel false: load.bats, the
# 3-member clusters, daemon.bats' kills) run alone, first.  Every pass prints its build and
# test times, every test's time and its ten longest cases (bats --timing).
#
# Every test case of every pass is counted from the tests' TAP output in
# the pass's meson test log (tests/lib/testlog.py; a test that is not TAP
# counts as one case, by its result).  A skipped case counts as failed,
# and so does a build that fails (one case), a test that crashed or timed
# out after its last TAP line, or a missing tool.  The last line is always
# "N passed, M failed"; the exit status is 0 only if M is 0.
#
# Environment: ETCDFS_BUILD_DIR (default "build") names the build dirs
# (NAME, NAME-asan, NAME-fuzz, and NAME-bin: a link to Debian's python3,
# first in PATH when another python3 comes first); RUN_PASSES (default
# "main" in quick, "main asan fuzz" otherwise) picks passes within the
# tier; RUN_JOBS (default 4 on 2 cores: most of a filesystem
# test's time is waiting) is meson test's --num-processes; ASAN_FS_TESTS
# replaces the sanitizer pass's fs subset by the tests it names ("all":
# every fs test); MESON_TEST_ARGS is added to every meson test.  The
# benchmarks themselves (tests/bench/run.sh) are not part of the suite.

set -u
set -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || {
	echo "0 passed, 1 failed"
	exit 1
}
tier=${1:-ci}
case $tier in
quick)
	passes=${RUN_PASSES:-main}
	main_suites="quick"
	;;
ci)
	passes=${RUN_PASSES:-main asan fuzz}
	main_suites="ci"
	export FUZZ_SECONDS=${FUZZ_SECONDS:-20}
	;;
soak)
	passes=${RUN_PASSES:-main asan fuzz}
	# every test of the build ('*': tests/lib/testlog.py select)
	main_suites="*"
	export FUZZ_SECONDS=${FUZZ_SECONDS:-180}
	export TEST_TIER=soak
	;;
*)
	echo "usage: bash tests/run.sh [quick|ci|soak]" >&2
	echo "0 passed, 1 failed"
	exit 2
	;;
esac
base=${ETCDFS_BUILD_DIR:-build}
jobs=${RUN_JOBS:-$(($(nproc 2>/dev/null || echo 2) * 2))}

# The sanitizer pass: the suite asan (ci), or unit, integration and every
# fs test (soak); ASAN_FS_TESTS names the fs tests instead ("all": every
# one).
asan_suites="asan"
asan_names=
if [[ $tier == soak ]]; then
	asan_suites="unit integration"
	asan_names=all
fi
if [[ -n ${ASAN_FS_TESTS:-} ]]; then
	asan_suites="unit integration"
	asan_names=$ASAN_FS_TESTS
fi

passed=0
failed=0
summary=()
times=()
t_start=$SECONDS

say()
{
	echo "run.sh: $*"
}

fail_case()
{
	failed=$((failed + 1))
	summary+=("FAIL $*")
	say "FAIL: $*"
}

# count_log PASS LOG: adds the cases in the meson test log LOG to the
# totals, lists the failed ones, prints every test's time (longest first)
# and the ten longest cases (tests/lib/testlog.py count).
count_log()
{
	local pass=$1 log=$2 out p f line

	if [[ ! -s $log ]]; then
		fail_case "$pass: no test log '$log'"
		return
	fi
	out=$(python3 tests/lib/testlog.py count "$log" "$pass") || {
		fail_case "$pass: cannot read '$log'"
		return
	}
	read -r p f <<<"$(head -n 1 <<<"$out")"
	passed=$((passed + p))
	failed=$((failed + f))
	say "$pass: every test's time, longest first"
	while IFS= read -r line; do
		case $line in
		FAIL\ *) summary+=("$line") ;;
		DIAG\ *) summary+=("    ${line#DIAG }") ;;
		TIME\ *) echo "  ${line#TIME }" ;;
		esac
	done < <(tail -n +2 <<<"$out")
	if grep -q '^SLOW ' <<<"$out"; then
		say "$pass: the longest test cases"
		sed -n 's/^SLOW /  /p' <<<"$out"
	fi
	say "$pass: $p passed, $f failed"
}

# setup DIR [meson args...]: configures DIR, or reconfigures it.
setup()
{
	local dir=$1

	shift
	if [[ -f $dir/build.ninja ]]; then
		meson setup --reconfigure "$dir" "$@" ||
			meson setup --wipe "$dir" "$@"
	else
		rm -rf "$dir"
		meson setup "$dir" "$@"
	fi
}

# tests_in DIR SUITES NAMES: the tests DIR defines that are in one of the
# SUITES ("*": every test) or named in NAMES ("all" in NAMES: every fs
# test), and in the suite $only if set, and not in the suite $exclude if
# set, one a line, in meson's order (tests/lib/testlog.py select).
only=
exclude=
tests_in()
{
	python3 tests/lib/testlog.py select "$1" "$2" "$3" "$only" "$exclude"
}

# build_pass NAME DIR [meson setup args...]: configures and builds DIR.
build_pass()
{
	local name=$1 dir=$2 t0=$SECONDS

	shift 2
	say "=== $name: configuring $dir"
	if ! setup "$dir" "$@"; then
		fail_case "$name: meson setup of '$dir'"
		return 1
	fi
	say "=== $name: building"
	if ! ninja -C "$dir"; then
		fail_case "$name: build in '$dir'"
		return 1
	fi
	say "=== $name: built in $((SECONDS - t0)) s"
	times+=("$name: build $((SECONDS - t0)) s")
}

# test_pass NAME DIR "SUITES" "NAMES" [meson test args...]: runs the tests
# of DIR in SUITES or named in NAMES, counts them, says how long it took.
test_pass()
{
	local name=$1 dir=$2 suites=$3 names=$4 t0=$SECONDS
	local log=$dir/meson-logs/testlog-$1.json
	local -a tests

	shift 4
	mapfile -t tests < <(tests_in "$dir" "$suites" "$names")
	if ((${#tests[@]} == 0)); then
		fail_case "$name: no tests in suites '$suites' or '$names'"
		return
	fi
	say "=== $name: meson test, ${#tests[@]} tests, $jobs at a time"
	rm -f "$log"
	# shellcheck disable=SC2086 # MESON_TEST_ARGS is a list of words
	meson test -C "$dir" --no-rebuild --print-errorlogs \
		--num-processes "$jobs" --logbase "testlog-$name" "$@" \
		${MESON_TEST_ARGS:-} "${tests[@]}" </dev/null
	count_log "$name" "$log"
	say "=== $name: tests took $((SECONDS - t0)) s"
	times+=("$name: tests $((SECONDS - t0)) s")
}

# etcd35_ready PASS: true if the etcd tests/lib/etcd.sh picks for
# ETCDFS_ETCD_VERSION=3.5 says it is 3.5 (fetching it on first use, here,
# once, rather than in every test at the same time); else one failure.
etcd35_ready()
{
	local v

	v=$(ETCDFS_ETCD_VERSION=3.5 bash -c \
		'. tests/lib/etcd.sh && "$ETCD_BIN" --version' 2>&1 |
		head -n 1)
	say "$1: ${v:-no etcd}"
	if [[ $v != *" 3.5."* ]]; then
		fail_case "$1: tests/lib/etcd.sh gives no etcd 3.5 for ETCDFS_ETCD_VERSION=3.5 (got '${v:-nothing}')"
		return 1
	fi
}

# etcd35_pass: the suite etcd35 in $base (built as the main pass builds
# it, if it is not yet).
etcd35_pass()
{
	if [[ ! -f $base/build.ninja ]]; then
		build_pass main "$base" -Dwerror=true "${k8s_args[@]}" ||
			return
	fi
	etcd35_ready etcd35 || return
	only=etcd35
	test_pass etcd35 "$base" "$main_suites" ""
	only=
}

say "=== dependencies"
if ! bash tests/lib/deps.sh; then
	fail_case "dependencies (tests/lib/deps.sh)"
	echo "$passed passed, $failed failed"
	exit 1
fi
say "tier $tier: $(nproc) cpus, $jobs tests at a time, passes: $passes"

# Debian's python3 for every test: the one deps.sh gives its modules
# (python3-h2).  A python3 found first in PATH may be a version manager's
# shim, a shell script that finds the interpreter on each call: pyenv's
# costs 0.37 s of CPU a call against Debian's 0.03 s, and the tests call
# python3 thousands of times (names.bats: 87 s with it, 68 s without).
py=$(command -v python3)
if [[ -x /usr/bin/python3 && $py != /usr/bin/python3 ]]; then
	mkdir -p "$base-bin" &&
		ln -sfn /usr/bin/python3 "$base-bin/python3" &&
		export PATH=$PWD/$base-bin:$PATH &&
		say "python3: Debian's, $base-bin/python3, before '$py'"
fi

# Kubernetes' Go types for the k8s codec (tests/lib/fetch-k8s-api.sh:
# Debian 13's, fetched once into tests/.cache): every build of the tier
# has the codec and its tests.  Without them that is one failure, and the
# builds go on without the codec.
k8s_args=()
if k8s_api=$(bash tests/lib/fetch-k8s-api.sh); then
	k8s_args=(-Dk8s_api="$k8s_api")
	say "k8s codec: Kubernetes' types from $k8s_api"
else
	fail_case "k8s: tests/lib/fetch-k8s-api.sh gives no Kubernetes' types"
fi

for pass in $passes; do
	case $pass in
	main)
		# without a 3.5 the tier's etcd 3.5 runs are left out (quick
		# has none)
		[[ $tier == quick ]] || etcd35_ready main || exclude=etcd35
		build_pass main "$base" -Dwerror=true "${k8s_args[@]}" &&
			test_pass main "$base" "$main_suites" ""
		exclude=
		;;
	asan)
		# halt at the first report so that it fails the test
		export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:print_summary=1}
		export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:print_summary=1}
		build_pass asan "$base-asan" -Dwerror=true "${k8s_args[@]}" \
			-Db_sanitize=address,undefined -Db_lundef=false &&
			TEST_TIMEOUT_MULTIPLIER=3 test_pass asan \
				"$base-asan" "$asan_suites" "$asan_names" \
				--timeout-multiplier=3
		unset ASAN_OPTIONS UBSAN_OPTIONS
		;;
	fuzz)
		if ! command -v clang >/dev/null; then
			fail_case "fuzz: clang not found"
			continue
		fi
		CC=clang build_pass fuzz "$base-fuzz" -Dwerror=true \
			"${k8s_args[@]}" -Dfuzzers=true &&
			test_pass fuzz "$base-fuzz" "fuzz" ""
		;;
	etcd35)
		etcd35_pass
		;;
	*)
		fail_case "unknown pass '$pass'"
		;;
	esac
done

if ((${#summary[@]})); then
	say "=== failures"
	printf '  %s\n' "${summary[@]}"
fi
if ((${#times[@]})); then
	say "=== times"
	printf '  %s\n' "${times[@]}"
fi
say "=== tier $tier: total time $((SECONDS - t_start)) s"
echo "$passed passed, $failed failed"
((failed == 0))
