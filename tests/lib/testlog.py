#!/usr/bin/env python3
#
# tests/lib/testlog.py - tests/run.sh's view of meson's tests: which to run,
# and what a pass's test log says
#
#   testlog.py select BUILDDIR "SUITES" "NAMES" ["ONLY" ["EXCLUDE"]]
#       Prints the names of the tests BUILDDIR defines that are in one of
#       SUITES ("*": every test) or named in NAMES ("all" in NAMES: every
#       test of the suite fs), and, if given, in the suite ONLY and not in
#       the suite EXCLUDE, one a line, in meson's order (highest priority
#       first), since `meson test NAME...` runs its tests in the order it
#       is given them.
#
#   testlog.py count LOG PASS
#       Counts the TAP cases in LOG, a meson test log (JSON, one test a
#       line).  Prints "PASSED FAILED", then "FAIL PASS: TEST: LINE" for
#       each failed case, "TIME ..." for each test (longest first) and
#       "SLOW ..." for the ten longest cases that say their time (bats
#       --timing: "ok 3 name in 1234ms").  Each FAIL line is followed by
#       up to DIAG_LINES "DIAG ..." lines: the TAP comments ("# ...") the
#       case printed, its last ones (where a bats test failed, and why),
#       so that a CI log says why without the test's own log.
#
# A case is one "ok" or "not ok" line; "not ok" and a skipped case
# ("# skip") fail.  A test whose result is not OK and that has no failed
# case is one more failure (it crashed or timed out after its last line, or
# its plan does not add up); a test that prints no case (not TAP) is one
# case, by its result.  It cannot count the cases a test never reached.
import json
import re
import subprocess
import sys

CASE_RE = re.compile(r"^(not )?ok\b(.*)$")
SKIP_RE = re.compile(r"#\s*skip", re.I)
DIAG_LINES = 12
MS_RE = re.compile(r"\bin (\d+)ms\b")


def select(build, suites, names, only="", exclude=""):
    out = subprocess.run(["meson", "introspect", "--tests", build],
                         check=True, stdout=subprocess.PIPE).stdout
    suites, names = set(suites.split()), set(names.split())
    tests = json.loads(out)
    # stable, as meson's own sort of its test list
    tests.sort(key=lambda t: -(t.get("priority") or 0))
    for t in tests:
        mine = {s.split(":")[-1] for s in t.get("suite", [])}
        if only and only not in mine or exclude and exclude in mine:
            continue
        if ("*" in suites or mine & suites or t["name"] in names or
                ("all" in names and "fs" in mine)):
            print(t["name"])


def diag(lines, i):
    """The last DIAG_LINES comments around case line @i: bats prints a
    failed case's output after its "not ok" line, a C TAP test before."""
    after, before = [], []
    for l in lines[i + 1:]:
        if CASE_RE.match(l.strip()):
            break
        if l.startswith("#"):
            after.append(l)
    if not after:
        for l in reversed(lines[:i]):
            if CASE_RE.match(l.strip()):
                break
            if l.startswith("#"):
                before.insert(0, l)
    got = after or before
    return ["DIAG " + l[:200] for l in got[-DIAG_LINES:]]


def count(path, pass_name):
    passed = failed = 0
    bad, rows, cases = [], [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            name = t.get("name", "?")
            short = name.split(" / ")[-1]
            result = t.get("result", "ERROR")
            p = n = 0
            lines = (t.get("stdout") or "").splitlines()
            for i, l in enumerate(lines):
                m = CASE_RE.match(l.strip())
                if not m:
                    continue
                if m.group(1) or SKIP_RE.search(m.group(2)):
                    n += 1
                    bad.append("%s: %s: %s" % (pass_name, name, l.strip()))
                    bad.extend(diag(lines, i))
                else:
                    p += 1
                ms = MS_RE.search(m.group(2))
                if ms:
                    cases.append((int(ms.group(1)), short, l.strip()))
            if result not in ("OK", "EXPECTEDFAIL") and n == 0:
                n += 1
                bad.append("%s: %s: %s" % (pass_name, name, result))
            elif p == 0 and n == 0:
                p = 1
            passed += p
            failed += n
            rows.append((t.get("duration") or 0.0, short, result, p + n))
    print(passed, failed)
    for b in bad:
        print(b if b.startswith("DIAG ") else "FAIL " + b)
    for d, name, result, k in sorted(rows, reverse=True):
        print("TIME %7.1f s  %-7s %-18s %4d cases" % (d, result, name, k))
    for ms, name, line in sorted(cases, reverse=True)[:10]:
        print("SLOW %7.1f s  %-18s %s" % (ms / 1000.0, name, line[:80]))


def main():
    if 5 <= len(sys.argv) <= 7 and sys.argv[1] == "select":
        select(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "count":
        count(*sys.argv[2:])
    else:
        sys.exit("usage: testlog.py select BUILDDIR SUITES NAMES | "
                 "count LOG PASS")


if __name__ == "__main__":
    main()
