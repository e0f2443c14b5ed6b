#!/bin/bash
#
# tests/run.sh - builds etcdfs and runs the whole test suite
#
#   bash tests/run.sh
#
# 1. tests/lib/deps.sh: the Debian packages (installed as root if missing)
#    and /dev/fuse.
# 2. build/: warnings as errors; every suite (unit, integration, fs).
# 3. build-asan/: -Db_sanitize=address,undefined; unit, integration, fs.
# 4. build-fuzz/ (clang, -Dfuzzers=true): the fuzz suite, briefly
#    ($FUZZ_SECONDS per target, default 20).
#
# Every test case of every pass is counted from the tests' TAP output in
# meson-logs/testlog.json (a test that is not TAP counts as one case, by
# its result).  A skipped case counts as failed, and so does a build that
# fails (one case), a test that crashed or timed out after its last TAP
# line, or a missing tool.  The last line is always "N passed, M failed";
# the exit status is 0 only if M is 0.
#
# Environment: ETCDFS_BUILD_DIR (default "build") names the build dirs
# (NAME, NAME-asan, NAME-fuzz); RUN_PASSES (default "main asan fuzz")
# picks passes; MESON_TEST_ARGS is added to every meson test.  It cannot
# run the benchmarks; they are not part of the suite.

set -u
set -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || {
	echo "0 passed, 1 failed"
	exit 1
}
base=${ETCDFS_BUILD_DIR:-build}
passes=${RUN_PASSES:-main asan fuzz}
export FUZZ_SECONDS=${FUZZ_SECONDS:-20}

passed=0
failed=0
summary=()
test_args=()
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

# count_log PASS BUILDDIR: adds the cases in BUILDDIR's testlog.json to the
# totals and lists the failed ones.
count_log()
{
	local pass=$1 dir=$2 out p f

	if [[ ! -s $dir/meson-logs/testlog.json ]]; then
		fail_case "$pass: no test log in '$dir'"
		return
	fi
	out=$(python3 - "$dir/meson-logs/testlog.json" "$pass" <<'EOF'
import json, re, sys

path, pass_name = sys.argv[1], sys.argv[2]
passed = failed = 0
bad = []
case_re = re.compile(r'^(not )?ok\b(.*)$')
skip_re = re.compile(r'#\s*skip', re.I)
with open(path, encoding='utf-8', errors='replace') as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        t = json.loads(line)
        name = t.get('name', '?')
        result = t.get('result', 'ERROR')
        text = t.get('stdout') or ''
        p = n = 0
        for l in text.splitlines():
            m = case_re.match(l.strip())
            if not m:
                continue
            if m.group(1) or skip_re.search(m.group(2)):
                n += 1
                bad.append('%s: %s: %s' % (pass_name, name, l.strip()))
            else:
                p += 1
        if result not in ('OK', 'EXPECTEDFAIL') and n == 0:
            # crashed, timed out, skipped whole, or a plan that does not
            # add up: one more failure, or the only case it has
            n += 1
            bad.append('%s: %s: %s' % (pass_name, name, result))
        elif p == 0 and n == 0:
            p = 1
        passed += p
        failed += n
print(passed, failed)
for b in bad:
    print(b)
EOF
	) || {
		fail_case "$pass: cannot read '$dir/meson-logs/testlog.json'"
		return
	}
	read -r p f <<<"$(head -n 1 <<<"$out")"
	passed=$((passed + p))
	failed=$((failed + f))
	while IFS= read -r line; do
		[[ -n $line ]] && summary+=("FAIL $line")
	done < <(tail -n +2 <<<"$out")
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

# The suites DIR defines, among the ones named.
suites_in()
{
	local dir=$1

	shift
	meson introspect --tests "$dir" | python3 -c '
import json, sys
want = sys.argv[1:]
have = set()
for t in json.load(sys.stdin):
    for s in t.get("suite", []):
        have.add(s.split(":")[-1])
print(" ".join(s for s in want if s in have))
' "$@"
}

# run_pass NAME DIR "SUITES" [meson setup args...]
run_pass()
{
	local name=$1 dir=$2 want=$3 t0=$SECONDS suites s
	local -a suite_args=()

	shift 3
	say "=== $name: configuring $dir"
	if ! setup "$dir" "$@"; then
		fail_case "$name: meson setup of '$dir'"
		return
	fi
	say "=== $name: building"
	if ! ninja -C "$dir"; then
		fail_case "$name: build in '$dir'"
		return
	fi
	# shellcheck disable=SC2086 # $want is a list of words
	suites=$(suites_in "$dir" $want) || suites=
	if [[ -z $suites ]]; then
		fail_case "$name: no tests in suites '$want'"
		return
	fi
	for s in $suites; do
		suite_args+=(--suite "$s")
	done
	say "=== $name: meson test ${suite_args[*]}"
	rm -f "$dir/meson-logs/testlog.json"
	# shellcheck disable=SC2086
	meson test -C "$dir" --print-errorlogs "${suite_args[@]}" \
		"${test_args[@]}" ${MESON_TEST_ARGS:-} </dev/null
	count_log "$name" "$dir"
	say "=== $name: took $((SECONDS - t0)) s"
}

say "=== dependencies"
if ! bash tests/lib/deps.sh; then
	fail_case "dependencies (tests/lib/deps.sh)"
	echo "$passed passed, $failed failed"
	exit 1
fi

for pass in $passes; do
	case $pass in
	main)
		run_pass main "$base" "unit integration fs bench" -Dwerror=true
		;;
	asan)
		# halt at the first report so that it fails the test
		export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:print_summary=1}
		export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:print_summary=1}
		test_args=(--timeout-multiplier=3)
		run_pass asan "$base-asan" "unit integration fs" \
			-Dwerror=true -Db_sanitize=address,undefined \
			-Db_lundef=false
		test_args=()
		unset ASAN_OPTIONS UBSAN_OPTIONS
		;;
	fuzz)
		if ! command -v clang >/dev/null; then
			fail_case "fuzz: clang not found"
			continue
		fi
		CC=clang run_pass fuzz "$base-fuzz" "fuzz" -Dwerror=true \
			-Dfuzzers=true
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
say "=== total time $((SECONDS - t_start)) s"
echo "$passed passed, $failed failed"
((failed == 0))
