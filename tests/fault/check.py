#!/usr/bin/env python3
#
# tests/fault/check.py - checkers for the fault campaign's histories
#
# A library (check(history) -> (anomalies, notes)) and a command:
#
#     check.py HISTORY.jsonl
#
# prints one line per anomaly and exits 1 if there is any, 0 if none.
#
# History format: one JSON object a line, in any order (the checkers sort
# by time).  Times are CLOCK_MONOTONIC nanoseconds, the same clock for every
# process of one run.  Values are unique strings: no two writes in one run
# write the same value, so each value read names the one write that made it.
#
#   {"op": "seed", "seed": S, ...}          the campaign's seed and options
#   {"op": "init", "key": K, "value": V}    K's value before the run (null:
#                                           absent); a key with no init line
#                                           starts absent
#   {"op": OP, "client": C, "mount": M, "key": K, "value": V,
#    "start": T0, "end": T1, "outcome": "ok"|"fail"|"unknown",
#    "errno": "ENOENT"|... (absent or null when ok), ...}
#       one operation of a client, with OP one of
#       "read"    open/read/close; "value" is what was read (a read that
#                 fails with ENOENT read "absent": the key was not there)
#       "write"   open(O_CREAT|O_TRUNC)/write/close of the unique "value";
#                 ok once close (or fsync) returned 0
#       "cas"     pinned read-modify-write: the file was read as "expect"
#                 (at "rev"), pinned to that revision, then written with
#                 "value"; ESTALE (outcome fail) says the key had changed
#       "create"  open(O_CREAT|O_EXCL); fail with EEXIST says it existed
#       "unlink"  unlink(2); fail with ENOENT says it was absent
#       "rename"  rename(2) of "key" to "to"; moves a value between keys
#       "outcome": ok (the call returned success), fail (the errno says
#       nothing was applied), unknown (the errno says it may have been
#       applied, e.g. ETIMEDOUT, or the call was in flight when a daemon
#       was killed); "end" of an unknown operation is when the client
#       gave up on it: it may take effect at any time after "start".
#   {"op": "event", "client": W, "mount": M, "key": K, "mask": "MODIFY"|
#    "CLOSE_WRITE"|"CREATE"|"DELETE"|"MOVED_FROM"|"MOVED_TO"|...,
#    "end": T, "value": V, "rev": R}
#       an inotify event seen by watcher W on mount M, with the file's
#       content and user.etcd.resourceVersion read right after it (value
#       and rev null when the file was gone)
#   {"op": "watch", "client": W, "mount": M, "start": T}
#       watcher W started watching at T
#   {"op": "watch_end", "client": W, "mount": M, "time": T}
#       watcher W stopped early (its mount's daemon was killed): its
#       events are checked for order only, not for the last change; with
#       "reason": "behind" it was still behind its events long after the
#       faults stopped, an anomaly
#   {"op": "crash", "what": "etcdfs"|"etcd", "mount": M, "member": N,
#    "time": T}
#       a daemon was SIGKILLed at T
#   {"op": "hang", "what": "etcdfs", "mount": M, "time": T, "detail": D}
#       a daemon still there 5 s after its SIGKILL (an anomaly: its mount
#       hangs its callers)
#   {"op": "manifest", "time": T, "state": {K: V, ...}}
#       every key's value read from etcd directly (the control client)
#       at T, after a crash and before the next fault
#   {"op": "converge", "mount": M, "key": K, "value": V}
#       what the mount shows for K once the faults stopped and the mount
#       caught up
#   {"op": "final", "key": K, "value": V, "rev": R}
#       etcd's final state of K (value null: absent; rev: mod_revision)
#
# Checkers (each returns a list of anomaly strings):
#   register     each key's operations are linearizable as a register
#                (keys touched by a rename are left to the next two)
#   lost_writes  every acknowledged write is the final value (of some key)
#                or was overwritten by an operation that may come after it
#   failed_seen  no value of a failed write is ever seen
#   manifest     after each crash, every write acknowledged before it is in
#                etcd's manifest (or overwritten as above)
#   watchers     per watcher and key, revisions never go back; the last
#                event of every key shows its final revision (a delete for
#                a deleted key); every mount converges to etcd's content
#   hangs        no daemon outlives its SIGKILL

import json
import sys

INF = float("inf")
ABSENT = None


def load(path):
    hist = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                hist.append(json.loads(line))
            except ValueError as e:
                raise SystemExit("%s:%d: %s" % (path, n, e))
    return hist


def _ops(hist):
    return [h for h in hist if h.get("op") in
            ("read", "write", "cas", "create", "unlink", "rename")]


def _desc(o):
    s = "%s %s" % (o.get("op"), o.get("key"))
    if o.get("op") == "rename":
        s += " -> %s" % o.get("to")
    if "value" in o:
        s += " %r" % (o.get("value"),)
    s += " [%s %s, %s..%s %s%s]" % (
        o.get("client"), o.get("mount"), o.get("start"), o.get("end"),
        o.get("outcome"), (" " + o["errno"]) if o.get("errno") else "")
    return s


# ---------------------------------------------------------------- register

class _Op:
    __slots__ = ("call", "ret", "required", "kind", "value", "expect",
                 "src")

    def __init__(self, src, kind, required, value=None, expect=None):
        self.src = src
        self.call = src["start"]
        self.ret = src["end"] if required else INF
        self.required = required
        self.kind = kind
        self.value = value
        self.expect = expect


def _step(op, state):
    """The state after op from state, or a marker that op cannot apply."""
    k = op.kind
    if k == "read":
        return state if state == op.value else _NO
    if k == "write":
        return op.value
    if k == "cas":
        return op.value if state == op.expect else _NO
    if k == "cas-fail":
        return state if state != op.expect else _NO
    if k == "create":
        return op.value if state is ABSENT else _NO
    if k == "exists":
        return state if state is not ABSENT else _NO
    if k == "unlink":
        return ABSENT if state is not ABSENT else _NO
    raise AssertionError(k)


_NO = object()


def _register_ops(ops):
    """Turns a key's history into register operations (failed ones that
    say nothing are dropped)."""
    out = []
    for o in ops:
        op, oc, err = o["op"], o.get("outcome"), o.get("errno")
        if oc not in ("ok", "fail", "unknown"):
            continue
        req = oc == "ok"
        if op == "read":
            if oc == "ok":
                out.append(_Op(o, "read", True, value=o.get("value")))
            elif err == "ENOENT":
                out.append(_Op(o, "read", True, value=ABSENT))
        elif op == "write":
            if oc != "fail":
                out.append(_Op(o, "write", req, value=o["value"]))
        elif op == "cas":
            if oc != "fail":
                out.append(_Op(o, "cas", req, value=o["value"],
                               expect=o.get("expect")))
            elif err == "ESTALE":
                out.append(_Op(o, "cas-fail", True, expect=o.get("expect")))
        elif op == "create":
            if oc != "fail":
                out.append(_Op(o, "create", req, value=o["value"]))
            elif err == "EEXIST":
                out.append(_Op(o, "exists", True))
        elif op == "unlink":
            if oc != "fail":
                out.append(_Op(o, "unlink", req))
            elif err == "ENOENT":
                out.append(_Op(o, "read", True, value=ABSENT))
    return out


def linearizable(ops, init=ABSENT, budget=2000000):
    """WGL search (as porcupine's): True, False, or None when the search
    ran out of budget.  Unknown operations have no return time and need
    not be linearized at all."""
    ops = sorted(ops, key=lambda o: o.call)
    n = len(ops)
    need = 0
    for i, o in enumerate(ops):
        if o.required:
            need |= 1 << i
    seen = set()
    # Stack of (mask, state, candidates, next candidate index).
    def candidates(mask):
        r = INF
        for i in range(n):
            if not mask >> i & 1 and ops[i].ret < r:
                r = ops[i].ret
        c = []
        for i in range(n):
            if ops[i].call > r:
                break
            if not mask >> i & 1:
                c.append(i)
        return c

    if need == 0:
        return True
    stack = [(0, init, candidates(0), 0)]
    seen.add((0, init))
    steps = 0
    while stack:
        mask, state, cands, j = stack[-1]
        if j >= len(cands):
            stack.pop()
            continue
        stack[-1] = (mask, state, cands, j + 1)
        steps += 1
        if steps > budget:
            return None
        o = ops[cands[j]]
        nxt = _step(o, state)
        if nxt is _NO:
            continue
        m2 = mask | 1 << cands[j]
        if m2 & need == need:
            return True
        if (m2, nxt) in seen:
            continue
        seen.add((m2, nxt))
        stack.append((m2, nxt, candidates(m2), 0))
    return False


def _observed(hist):
    vals = set()
    for h in hist:
        op = h.get("op")
        if op in ("read", "event", "converge", "final") and \
                h.get("value") is not None:
            vals.add(h["value"])
        if op == "cas" and h.get("expect") is not None:
            vals.add(h["expect"])
        if op == "manifest":
            vals.update(v for v in h.get("state", {}).values()
                        if v is not None)
    return vals


def check_register(hist, notes=None):
    anomalies = []
    ops = _ops(hist)
    renamed = set()
    for o in ops:
        if o["op"] == "rename":
            renamed.add(o["key"])
            renamed.add(o.get("to"))
    init = {h["key"]: h.get("value") for h in hist if h.get("op") == "init"}
    observed = _observed(hist)
    bykey = {}
    for o in ops:
        if o["op"] != "rename" and o["key"] not in renamed:
            bykey.setdefault(o["key"], []).append(o)
    for key in sorted(bykey):
        kops = _register_ops(bykey[key])
        # Unique values: a read of a value no write of the key made, or made
        # only after the read returned, is an anomaly on its face.
        writers = {o.value: o for o in kops
                   if o.kind in ("write", "cas", "create")}
        bad = False
        for o in kops:
            if o.kind == "read" and o.value is not ABSENT and \
                    o.value != init.get(key):
                w = writers.get(o.value)
                if w is None:
                    anomalies.append("register %s: read of a value no write "
                                     "made: %s%s" % (key, _desc(o.src),
                                                     _dirty(bykey[key],
                                                            o.src)))
                    bad = True
                elif w.call > o.ret:
                    anomalies.append("register %s: read of a value written "
                                     "only after it: %s (written by %s)" %
                                     (key, _desc(o.src), _desc(w.src)))
                    bad = True
        if bad:
            continue
        # First without the unknown writes nobody saw (fewer choices); a
        # success there is a success; else the whole search decides.
        slim = [o for o in kops if o.required or o.kind == "unlink" or
                o.value in observed]
        r = linearizable(slim, init.get(key))
        if r is not True and len(slim) != len(kops):
            r = linearizable(kops, init.get(key))
        if r is None:
            if notes is not None:
                notes.append("register %s: search budget exhausted "
                             "(%d operations): not decided" %
                             (key, len(kops)))
        elif not r:
            anomalies.append("register %s: not linearizable (%d operations)%s"
                             % (key, len(kops), _explain(kops,
                                                         init.get(key))))
    return anomalies


def _dirty(ops, r):
    """Names the writes of the same mount in flight during read r: a read
    of a value nobody wrote may be such a write's buffer, not yet
    committed (an O_TRUNC open's empty file, say)."""
    w = [o for o in ops if o["op"] in ("write", "cas", "create") and
         o.get("mount") == r.get("mount") and o["start"] <= r["end"] and
         o["end"] >= r["start"]]
    if not w:
        return ""
    return " (a dirty read? in flight on the same mount: %s)" % \
        "; ".join(_desc(o) for o in w)


def _explain(kops, init):
    """Names the shortest prefix (by return time) that is not
    linearizable, and its last operation."""
    req = sorted([o for o in kops if o.required], key=lambda o: o.ret)
    lo, hi = 1, len(req)
    while lo < hi:
        mid = (lo + hi) // 2
        cut = req[mid - 1].ret
        sub = [o for o in kops if o.call <= cut and
               (not o.required or o.ret <= cut)]
        if linearizable(sub, init, budget=200000) is False:
            hi = mid
        else:
            lo = mid + 1
    if hi <= len(req):
        return ": first fails at " + _desc(req[hi - 1].src)
    return ""


# ------------------------------------------------------------- lost writes

def _before(a, b):
    """a ended before b started (real-time order)."""
    return a.get("end") is not None and a.get("outcome") != "unknown" and \
        a["end"] < b["start"]


def _lost(ops, w, state, until=None):
    """Whether acknowledged write w is missing from state {key: value}
    (a snapshot of etcd taken at time until, or the end)."""
    v = w["value"]
    if v in state.values():
        return False
    key = w["key"]
    # Something that may come after w must have changed the key: a write,
    # create, cas or unlink of it, or a rename from or to it, that did not
    # fail and did not end before w started (nor start after the snapshot).
    for o in ops:
        if o is w or o.get("outcome") == "fail":
            continue
        if until is not None and o["start"] > until:
            continue
        if o["op"] == "read":
            continue
        if o["key"] != key and o.get("to") != key:
            continue
        if not _before(o, w):
            return False
    return True


def _acked_writes(ops):
    return [o for o in ops if o["op"] in ("write", "cas", "create") and
            o.get("outcome") == "ok"]


def check_lost_writes(hist):
    final = {h["key"]: h.get("value") for h in hist if h.get("op") == "final"}
    if not final:
        return ["lost_writes: no final state in the history"]
    ops = _ops(hist)
    out = []
    for w in _acked_writes(ops):
        if _lost(ops, w, final):
            out.append("lost write: %s is not in etcd at the end (%s holds "
                       "%r) and nothing after it changed the key" %
                       (_desc(w), w["key"], final.get(w["key"])))
    return out


def check_failed_seen(hist):
    ops = _ops(hist)
    failed = {o["value"]: o for o in ops
              if o["op"] in ("write", "cas", "create") and
              o.get("outcome") == "fail" and o.get("value") is not None}
    out = []
    for h in hist:
        op = h.get("op")
        vals = []
        if op in ("read", "event", "converge", "final"):
            vals = [h.get("value")]
        elif op == "manifest":
            vals = list(h.get("state", {}).values())
        for v in vals:
            if v in failed:
                out.append("failed write seen: %s, by %s" %
                           (_desc(failed[v]),
                            _desc(h) if op in ("read", "event") else
                            "%s %s" % (op, h.get("key", ""))))
    return out


def check_manifests(hist):
    ops = _ops(hist)
    crashes = sorted((h for h in hist if h.get("op") == "crash"),
                     key=lambda h: h["time"])
    manifests = sorted((h for h in hist if h.get("op") == "manifest"),
                       key=lambda h: h["time"])
    out = []
    for c in crashes:
        m = next((m for m in manifests if m["time"] >= c["time"]), None)
        if m is None:
            out.append("crash at %s: no manifest after it" % c["time"])
            continue
        for w in _acked_writes(ops):
            if w["end"] < c["time"] and _lost(ops, w, m["state"], m["time"]):
                out.append("write lost in the crash of %s at %s: %s (the "
                           "manifest has %r)" %
                           (c.get("what"), c["time"], _desc(w),
                            m["state"].get(w["key"])))
    return out


# ----------------------------------------------------------------- watchers

_GONE = ("DELETE", "MOVED_FROM", "DELETE_SELF")


def check_watchers(hist):
    out = []
    final = {h["key"]: h for h in hist if h.get("op") == "final"}
    ops = _ops(hist)
    writer = {o["value"]: o for o in ops
              if o["op"] in ("write", "cas", "create") and
              o.get("value") is not None}
    watches = {(h["client"], h.get("mount")): h for h in hist
               if h.get("op") == "watch"}
    events = {}
    for h in sorted((h for h in hist if h.get("op") == "event"),
                    key=lambda h: h["end"]):
        events.setdefault((h["client"], h.get("mount")), {}) \
            .setdefault(h["key"], []).append(h)
        watches.setdefault((h["client"], h.get("mount")),
                           {"start": None})
    ended = {(h["client"], h.get("mount")) for h in hist
             if h.get("op") == "watch_end"}
    for h in hist:
        if h.get("op") == "watch_end" and h.get("reason") == "behind":
            out.append("watcher %s on %s: still behind its events 60 s after "
                       "the faults stopped" % (h["client"], h.get("mount")))
    for (wid, mnt), wh in sorted(watches.items(), key=lambda x: str(x[0])):
        evs = events.get((wid, mnt), {})
        for key, es in sorted(evs.items()):
            hi = None
            for e in es:
                r = e.get("rev")
                if r is None:
                    continue
                if hi is not None and r < hi["rev"]:
                    out.append("watcher %s on %s: %s went back from revision "
                               "%s to %s (%s event at %s after %s at %s)" %
                               (wid, mnt, key, hi["rev"], r, e.get("mask"),
                                e["end"], hi.get("mask"), hi["end"]))
                if hi is None or r > hi["rev"]:
                    hi = e
        if (wid, mnt) in ended:
            continue    # cut short by its mount's daemon being killed
        for key, f in sorted(final.items()):
            es = evs.get(key, [])
            last = es[-1] if es else None
            if f.get("value") is None:
                if last is not None and not any(
                        g in (last.get("mask") or "") for g in _GONE):
                    out.append("watcher %s on %s: %s is deleted, but its "
                               "last event is %s (at revision %s)" %
                               (wid, mnt, key, last.get("mask"),
                                last.get("rev")))
                continue
            w = writer.get(f["value"])
            late = wh.get("start") is not None and w is not None and \
                w["start"] > wh["start"]
            if last is None:
                if late:
                    out.append("watcher %s on %s: no event for %s, written "
                               "after the watch began (final revision %s)" %
                               (wid, mnt, key, f.get("rev")))
                continue
            if f.get("rev") is not None and last.get("rev") != f["rev"] and \
                    (late or last.get("rev") is not None):
                out.append("watcher %s on %s: the last event of %s shows "
                           "revision %s, etcd's is %s" %
                           (wid, mnt, key, last.get("rev"), f["rev"]))
    for h in hist:
        if h.get("op") == "converge":
            f = final.get(h["key"])
            fv = f.get("value") if f else None
            if h.get("value") != fv:
                out.append("mount %s: %s shows %r, etcd has %r" %
                           (h.get("mount"), h["key"], h.get("value"), fv))
    return out


def check_hangs(hist):
    return ["%s of mount %s hung: %s" % (h.get("what"), h.get("mount"),
                                         h.get("detail"))
            for h in hist if h.get("op") == "hang"]


# -------------------------------------------------------------------- all

CHECKERS = [("register", check_register), ("lost_writes", check_lost_writes),
            ("failed_seen", check_failed_seen),
            ("manifest", check_manifests), ("watchers", check_watchers),
            ("hangs", check_hangs)]


def check(hist):
    anomalies, notes = [], []
    for name, fn in CHECKERS:
        if fn is check_register:
            anomalies += fn(hist, notes)
        else:
            anomalies += fn(hist)
    return anomalies, notes


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: check.py HISTORY.jsonl\n")
        return 2
    hist = load(argv[1])
    anomalies, notes = check(hist)
    for n in notes:
        print("note: " + n)
    for a in anomalies:
        print(a)
    nops = len(_ops(hist))
    print("%d operations checked, %d anomalies" % (nops, len(anomalies)))
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
