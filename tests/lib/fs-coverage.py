#!/usr/bin/env python3
#
# tests/lib/fs-coverage.py - which lines of fs/, helper/ and mount/ each
# filesystem test reaches, and a small set of tests that reaches them all
#
#   meson setup build-cov -Db_coverage=true && ninja -C build-cov
#   tests/lib/fs-coverage.py [-j N] [--suite fs] [--only NAME,...] build-cov
#
# Runs every test of the suite (as `meson test` would: its command and
# environment from meson's introspection), N at a time (default 3), each
# with GCOV_PREFIX pointing at a directory of its own, so that the
# daemon's coverage counts (written when it exits) stay apart; then runs
# gcov on each test's counts and prints, per test, its time, its TAP
# result and the lines it reaches (of fs/, helper/, mount/), the lines
# only it reaches, and a cover: the tests that together reach every line
# of the --cover areas (default fs/ and mount/) that any test reaches,
# picked greedily by new lines per second, then without the ones the
# others make redundant (longest first).  This is how the suite asan
# of tests/meson.build (fs_sanitize) was chosen; run it again when fs/
# changes.
#
# It cannot count a daemon that was killed (SIGKILL) or that hangs: its
# counts are lost.  Tests run in parallel, so a timing-sensitive test may
# fail here; its lines still count.  The work dir (default a new temporary
# dir) keeps each test's TAP output and counts.
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

AREAS = ("fs/", "helper/", "mount/")


def load_tests(build, suite, only):
    with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
        tests = json.load(f)
    out = []
    for t in tests:
        suites = [s.split(":")[-1] for s in t.get("suite", [])]
        if suite not in suites:
            continue
        if only and t["name"] not in only:
            continue
        out.append(t)
    return out


def run_test(t, work, build):
    """Runs @t with its own GCOV_PREFIX; (name, seconds, ok, not ok)."""
    d = os.path.join(work, t["name"])
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ)
    env.update(t.get("env") or {})
    env["GCOV_PREFIX"] = os.path.join(d, "gcda")
    env["GCOV_PREFIX_STRIP"] = "0"
    start = time.time()
    with open(os.path.join(d, "tap"), "wb") as out:
        p = subprocess.run(t["cmd"], env=env, stdout=out,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           cwd=t.get("workdir") or build,
                           timeout=t.get("timeout") or 900)
    secs = time.time() - start
    ok = bad = 0
    with open(os.path.join(d, "tap"), "rb") as f:
        for line in f:
            if line.startswith(b"ok "):
                ok += 1
            elif line.startswith(b"not ok "):
                bad += 1
    if p.returncode and not bad:
        bad = 1
    return t["name"], secs, ok, bad


def gcov_lines(build, gcda_root):
    """{(source, line): count > 0} and every instrumented (source, line)."""
    hit, all_lines = set(), set()
    build = os.path.realpath(build)
    for root, _, files in os.walk(gcda_root):
        for f in files:
            if not f.endswith(".gcda"):
                continue
            gcda = os.path.join(root, f)
            # the object dir this file belongs to, under the prefix
            rel = os.path.relpath(root, gcda_root)
            objdir = os.path.join("/", rel)
            gcno = os.path.join(objdir, f[:-5] + ".gcno")
            if not os.path.exists(gcno):
                continue
            shutil.copy(gcno, root)
            p = subprocess.run(["gcov", "--json-format", "--stdout", gcda],
                               cwd=build, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
            for doc in p.stdout.splitlines():
                if not doc.strip():
                    continue
                for sf in json.loads(doc)["files"]:
                    src = os.path.normpath(sf["file"]).lstrip("./")
                    if not src.startswith(AREAS):
                        continue
                    for ln in sf["lines"]:
                        key = (src, ln["line_number"])
                        all_lines.add(key)
                        if ln["count"] > 0:
                            hit.add(key)
    return hit, all_lines


def cover(hits, secs, areas):
    """Tests whose lines of @areas add up to all of theirs: a greedy pick
    by new lines per second, then each made redundant by the others
    dropped, the longest first."""
    def mine(n):
        return {k for k in hits[n] if k[0].startswith(areas)}

    left = set().union(*(mine(n) for n in hits))
    pick = []
    while left:
        best = max(hits, key=lambda n: len(mine(n) & left) /
                   max(secs[n], 1.0))
        if not mine(best) & left:
            break
        pick.append(best)
        left -= mine(best)
    for n in sorted(pick, key=lambda n: -secs[n]):
        rest = set().union(*(mine(m) for m in pick if m != n))
        if mine(n) <= rest:
            pick.remove(n)
    return sorted(pick)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("-j", type=int, default=3)
    ap.add_argument("--suite", default="fs")
    ap.add_argument("--only", default="")
    ap.add_argument("--work")
    ap.add_argument("--cover", default="fs/,mount/")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    tests = load_tests(a.build, a.suite, only)
    if not tests:
        sys.exit("fs-coverage: no tests in suite %r" % a.suite)
    work = a.work or tempfile.mkdtemp(prefix="etcdfs-cov.")
    print("fs-coverage: %d tests, %d at a time, in %s" %
          (len(tests), a.j, work), file=sys.stderr)
    results = {}
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        for name, secs, ok, bad in ex.map(
                lambda t: run_test(t, work, a.build), tests):
            results[name] = (secs, ok, bad)
            print("fs-coverage: %-22s %6.1f s  %d ok, %d not ok" %
                  (name, secs, ok, bad), file=sys.stderr)
    hits, universe = {}, set()
    for t in tests:
        h, u = gcov_lines(a.build, os.path.join(work, t["name"], "gcda"))
        hits[t["name"]] = h
        universe |= u
    union = set().union(*hits.values())

    def fs_only(s):
        return {k for k in s if k[0].startswith("fs/")}

    n_fs = len(fs_only(universe))
    print("lines instrumented: fs/ %d, all %d; reached by some test: "
          "fs/ %d, all %d" % (n_fs, len(universe), len(fs_only(union)),
                              len(union)))
    print("%-22s %7s %6s %7s %7s %9s" % ("test", "secs", "result", "fs/",
                                        "all", "only-it"))
    for t in tests:
        n = t["name"]
        others = set().union(*(hits[m] for m in hits if m != n))
        secs, ok, bad = results[n]
        print("%-22s %7.1f %6s %7d %7d %9d" % (
            n, secs, "ok" if not bad else "FAIL", len(fs_only(hits[n])),
            len(hits[n]), len(fs_only(hits[n] - others))))
    areas = tuple(filter(None, a.cover.split(",")))
    pick = cover(hits, {n: results[n][0] for n in results}, areas)
    print("cover of the %s lines (seconds, serial, in this run):" %
          " ".join(areas))
    total = 0.0
    for n in pick:
        total += results[n][0]
        print("  %-22s %7.1f" % (n, results[n][0]))
    print("  %-22s %7.1f" % ("total", total))
    with open(os.path.join(work, "lines.json"), "w") as f:
        json.dump({n: sorted("%s:%d" % k for k in hits[n]) for n in hits},
                  f)


if __name__ == "__main__":
    main()
