#!/usr/bin/env python3
#
# tests/fault/test_check.py - the fault campaign's checkers on hand-made
# histories, in TAP: each bad history must be caught by the checker named
# for it, and each good one (unknown outcomes that did and did not apply
# among them) must pass every checker.

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402


def op(kind, key, value=None, start=0, end=0, outcome="ok", errno=None,
       client="c1", mount="a", **kw):
    h = {"op": kind, "client": client, "mount": mount, "key": key,
         "start": start, "end": end, "outcome": outcome, "errno": errno}
    if value is not None or kind == "read":
        h["value"] = value
    h.update(kw)
    return h


def final(key, value, rev=None):
    return {"op": "final", "key": key, "value": value, "rev": rev}


def ev(key, mask, end, value, rev, client="w1", mount="a"):
    return {"op": "event", "client": client, "mount": mount, "key": key,
            "mask": mask, "end": end, "value": value, "rev": rev}


W = "write"
R = "read"

# Each bad history names the checker that must catch it.
BAD = [
    ("a lost write", "lost_writes", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 20, 30, client="c2"),
        final("k", "A", 2)]),
    ("a stale read", "register", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 20, 30, client="c2"),
        op(R, "k", "A", 40, 50, client="c3"), final("k", "B", 3)]),
    ("a write seen after a newer one", "register", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 0, 10, client="c2"),
        op(R, "k", "B", 20, 25, client="c3"),
        op(R, "k", "A", 30, 35, client="c3"), final("k", "B", 3)]),
    ("a read of the key before its creation", "register", [
        op(W, "k", "A", 20, 30), op(R, "k", "A", 0, 10, client="c2"),
        final("k", "A", 2)]),
    ("a read of a value nobody wrote", "register", [
        op(W, "k", "A", 0, 10), op(R, "k", "Z", 20, 30, client="c2"),
        final("k", "A", 2)]),
    ("a deleted key read again", "register", [
        op(W, "k", "A", 0, 10), op("unlink", "k", None, 20, 30),
        op(R, "k", "A", 40, 50, client="c2"), final("k", None)]),
    ("a pinned write over a newer value", "register", [
        op(W, "k", "A", 0, 10), op(R, "k", "A", 12, 14),
        op(W, "k", "B", 20, 30, client="c2"),
        op("cas", "k", "C", 40, 50, expect="A", rev=2), final("k", "C", 4)]),
    ("a pin refused with nothing changed", "register", [
        op(W, "k", "A", 0, 10), op("cas", "k", "C", 40, 50, outcome="fail",
                                   errno="ESTALE", expect="A", rev=2),
        op(R, "k", "A", 60, 70), final("k", "A", 2)]),
    ("O_EXCL creating an existing key", "register", [
        op(W, "k", "A", 0, 10), op("create", "k", "B", 20, 30,
                                   client="c2"), final("k", "B", 3)]),
    ("a failed write became visible", "failed_seen", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 20, 30, outcome="fail",
                                   errno="EIO", client="c2"),
        op(R, "k", "B", 40, 50, client="c3"), final("k", "B", 3)]),
    ("an acknowledged write lost in a crash", "manifest", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 20, 30),
        {"op": "crash", "what": "etcdfs", "mount": "a", "time": 35},
        {"op": "manifest", "time": 40, "state": {"k": "A"}},
        op(W, "k", "C", 50, 60), final("k", "C", 4)]),
    ("an event out of order", "watchers", [
        op(W, "k", "A", 0, 10, client="c2", mount="b"),
        op(W, "k", "B", 20, 30, client="c2", mount="b"),
        {"op": "watch", "client": "w1", "mount": "a", "start": -5},
        ev("k", "MODIFY", 35, "B", 3), ev("k", "MODIFY", 36, "A", 2),
        ev("k", "MODIFY", 37, "B", 3), final("k", "B", 3)]),
    ("a missing delete event", "watchers", [
        op(W, "k", "A", 0, 10, mount="b"),
        op("unlink", "k", None, 20, 30, mount="b"),
        {"op": "watch", "client": "w1", "mount": "a", "start": -5},
        ev("k", "MODIFY", 15, "A", 2), final("k", None)]),
    ("a missed last change", "watchers", [
        op(W, "k", "A", 0, 10, mount="b"), op(W, "k", "B", 20, 30,
                                              mount="b"),
        {"op": "watch", "client": "w1", "mount": "a", "start": -5},
        ev("k", "MODIFY", 15, "A", 2), final("k", "B", 3)]),
    ("no event at all for a change", "watchers", [
        {"op": "watch", "client": "w1", "mount": "a", "start": -5},
        op(W, "k", "A", 0, 10, mount="b"), final("k", "A", 2)]),
    ("a daemon that outlived its SIGKILL", "hangs", [
        op(W, "k", "A", 0, 10),
        {"op": "hang", "what": "etcdfs", "mount": "a", "time": 20,
         "detail": "alive 5 s after SIGKILL"}, final("k", "A", 2)]),
    ("a mount that does not converge", "watchers", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 20, 30, mount="b"),
        {"op": "converge", "mount": "a", "key": "k", "value": "A"},
        final("k", "B", 3)]),
]

GOOD = [
    ("concurrent writes read in either order", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 0, 10, client="c2"),
        op(R, "k", "A", 5, 8, client="c3"),
        op(R, "k", "B", 20, 25, client="c3"), final("k", "B", 3)]),
    ("an unknown write that applied", [
        op(W, "k", "A", 0, 10),
        op(W, "k", "B", 20, 30, outcome="unknown", errno="ETIMEDOUT"),
        op(R, "k", "B", 40, 50, client="c2"), final("k", "B", 3)]),
    ("an unknown write that did not apply", [
        op(W, "k", "A", 0, 10),
        op(W, "k", "B", 20, 30, outcome="unknown", errno="ETIMEDOUT"),
        op(R, "k", "A", 40, 50, client="c2"), final("k", "A", 2)]),
    ("an unknown write that applied late", [
        op(W, "k", "A", 0, 10),
        op(W, "k", "B", 20, 30, outcome="unknown", errno="ENOTCONN"),
        op(R, "k", "A", 40, 50, client="c2"),
        op(R, "k", "B", 60, 70, client="c2"), final("k", "B", 3)]),
    ("an unknown unlink that applied and one that did not", [
        op(W, "k", "A", 0, 10),
        op("unlink", "k", None, 20, 30, outcome="unknown", errno="EIO"),
        op(R, "k", None, 40, 50, client="c2", outcome="fail",
           errno="ENOENT"),
        op("create", "k", "B", 60, 70),
        op("unlink", "k", None, 80, 90, outcome="unknown", errno="EIO"),
        op(R, "k", "B", 100, 110, client="c2"), final("k", "B", 3)]),
    ("create, EEXIST, unlink, ENOENT", [
        op("create", "k", "A", 0, 10),
        op("create", "k", "B", 20, 30, outcome="fail", errno="EEXIST",
           client="c2"),
        op("unlink", "k", None, 40, 50),
        op("unlink", "k", None, 60, 70, outcome="fail", errno="ENOENT",
           client="c2"),
        op(W, "k", "C", 80, 90), final("k", "C", 4)]),
    ("a pinned write and a refused one", [
        op(W, "k", "A", 0, 10), op(R, "k", "A", 12, 14),
        op("cas", "k", "B", 20, 30, expect="A", rev=2),
        op("cas", "k", "C", 20, 40, outcome="fail", errno="ESTALE",
           expect="A", rev=2, client="c2"),
        op(R, "k", "B", 50, 60, client="c3"), final("k", "B", 3)]),
    ("a failed write never seen", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 20, 30, outcome="fail",
                                   errno="ESTALE"),
        op(R, "k", "A", 40, 50, client="c2"), final("k", "A", 2)]),
    ("a rename moves a value, then the source is written", [
        op(W, "r1", "A", 0, 10), op("rename", "r1", None, 20, 30, to="r2"),
        op(R, "r2", "A", 40, 50, client="c2"),
        op(W, "r1", "B", 60, 70), final("r1", "B", 5), final("r2", "A", 4)]),
    ("a crash that kept every acknowledged write", [
        op(W, "k", "A", 0, 10), op(W, "k", "B", 20, 30),
        op(W, "k", "C", 32, 50, outcome="unknown", errno="ENOTCONN"),
        {"op": "crash", "what": "etcdfs", "mount": "a", "time": 35},
        {"op": "manifest", "time": 40, "state": {"k": "B"}},
        op(W, "k", "D", 60, 70), final("k", "D", 5)]),
    ("watchers that see every change in order", [
        {"op": "watch", "client": "w1", "mount": "a", "start": -5},
        {"op": "watch", "client": "w2", "mount": "b", "start": -5},
        op(W, "k", "A", 0, 10, mount="b"), op(W, "k", "B", 20, 30,
                                              mount="b"),
        op(W, "j", "X", 0, 10, mount="a"),
        op("unlink", "j", None, 40, 50, mount="a"),
        ev("k", "CREATE", 11, "A", 2), ev("k", "MODIFY", 12, "B", 3),
        ev("k", "CLOSE_WRITE", 32, "B", 3),
        ev("j", "CREATE", 11, "X", 4, client="w2", mount="b"),
        ev("j", "DELETE", 52, None, None, client="w2", mount="b"),
        ev("k", "CLOSE_WRITE", 31, "B", 3, client="w2", mount="b"),
        {"op": "converge", "mount": "a", "key": "k", "value": "B"},
        {"op": "converge", "mount": "b", "key": "j", "value": None},
        final("k", "B", 3), final("j", None)]),
]


def random_history(seed, nops=400, keys=2, clients=5):
    """A linearizable history: each operation takes effect at a point
    inside its interval, in the order of those points."""
    rnd = random.Random(seed)
    ops, state, free = [], {}, [0] * clients
    pts = []
    for i in range(nops):
        c = rnd.randrange(clients)
        s = free[c] + rnd.randrange(1, 20)
        e = s + rnd.randrange(1, 60)
        free[c] = e
        pts.append((rnd.uniform(s, e), i, c, s, e))
    pts.sort()
    n = 0
    for p, i, c, s, e in pts:
        k = "k%d" % rnd.randrange(keys)
        r = rnd.random()
        cl = "c%d" % c
        if r < 0.4:
            ops.append(op(R, k, state.get(k), s, e, client=cl))
        elif r < 0.8:
            n += 1
            v = "v%d" % n
            unk = rnd.random() < 0.1
            applied = not unk or rnd.random() < 0.5
            if applied:
                state[k] = v
            ops.append(op(W, k, v, s, e, client=cl,
                          outcome="unknown" if unk else "ok",
                          errno="ETIMEDOUT" if unk else None))
        elif r < 0.9:
            ops.append(op("unlink", k, None, s, e, client=cl,
                          outcome="ok" if state.get(k) else "fail",
                          errno=None if state.get(k) else "ENOENT"))
            state[k] = None
        else:
            n += 1
            v = "v%d" % n
            ok = state.get(k) is None
            ops.append(op("create", k, v, s, e, client=cl,
                          outcome="ok" if ok else "fail",
                          errno=None if ok else "EEXIST"))
            if ok:
                state[k] = v
    for i in range(keys):
        k = "k%d" % i
        ops.append(final(k, state.get(k)))
    return ops


def main():
    tests = []
    for name, checker, hist in BAD:
        def t(name=name, checker=checker, hist=hist):
            fn = dict(check.CHECKERS)[checker]
            found = fn(hist)
            if not found:
                return "%s found nothing" % checker
            return None
        tests.append(("caught: " + name, t))
    for name, hist in GOOD:
        def t(hist=hist):
            a, notes = check.check(hist)
            return "; ".join(a + notes) or None
        tests.append(("passes: " + name, t))
    for seed in (1, 2, 3):
        def t(seed=seed):
            a, notes = check.check(random_history(seed))
            return "; ".join(a[:3] + notes) or None
        tests.append(("passes: random linearizable history, seed %d" % seed,
                      t))

    def t():
        # The same random history with one read moved after a newer write
        # of its key is caught.
        h = random_history(4)
        reads = [o for o in h if o.get("op") == "read" and o["value"]]
        o = reads[len(reads) // 2]
        later = [w for w in h if w.get("op") == "write" and
                 w["key"] == o["key"] and w["outcome"] == "ok" and
                 w["start"] > o["end"] and w["value"] != o["value"]]
        o["start"] = later[0]["end"] + 1
        o["end"] = o["start"] + 1
        return None if check.check_register(h) else "not caught"
    tests.append(("caught: a random history with one stale read", t))

    print("1..%d" % len(tests))
    failed = 0
    for i, (name, fn) in enumerate(tests, 1):
        try:
            err = fn()
        except Exception as e:  # a crash of a checker fails its test
            err = "%s: %s" % (type(e).__name__, e)
        if err:
            failed += 1
            print("not ok %d - %s" % (i, name))
            print("# " + err)
        else:
            print("ok %d - %s" % (i, name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
