#!/usr/bin/env python3
#
# tests/fault/workload.py - the fault campaign's clients (tests/fault/run.sh)
#
#   workload.py client  ID MOUNT DIR STATE SEED SECONDS OUT
#       real file operations on DIR (a directory of a mount): reads, writes
#       of unique values, pinned read-modify-writes, O_EXCL creates,
#       unlinks and renames over a few keys, until SECONDS have passed
#   workload.py control ID ENDPOINTS PREFIX SEED SECONDS OUT
#       the same keys written and read directly through etcd's JSON gateway
#   workload.py watch   ID MOUNT DIR STATE OUT
#       inotifywait on DIR; after each event reads the file and its
#       user.etcd.resourceVersion; until sent SIGTERM
#   workload.py snapshot KIND ENDPOINTS PREFIX OUT
#       appends etcd's state of the keys: "final" lines, or one "manifest"
#   workload.py converge MOUNT DIR ENDPOINTS PREFIX SECONDS OUT
#       waits (up to SECONDS) until DIR shows etcd's content, and appends
#       what it shows, one "converge" line a key
#
# Every line appended is one of tests/fault/check.py's history format.
# STATE is a file run.sh rewrites around a daemon's kill and remount:
# "GENERATION up|down".  A client does not start an operation while its
# mount is down; an operation during which the generation changed was in
# flight across the kill: its error says nothing (outcome unknown, or a
# read that says nothing).

import base64
import errno
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
import urllib.request

REGISTER_KEYS = ["d/k0", "d/k1", "d/k2", "d/k3"]
RENAME_KEYS = ["d/r0", "d/r1", "d/r2"]
KEYS = REGISTER_KEYS + RENAME_KEYS

# errnos that say nothing was applied (docs/semantics.md, Errors);
# ENOTCONN from a live daemon: the cluster was unreachable, nothing sent
NOT_APPLIED = {"ESTALE", "EEXIST", "ENOENT", "ENOTCONN", "EACCES", "EFBIG",
               "EROFS", "EINVAL", "ENOSPC", "ENOTSUP", "EXDEV"}

now = time.monotonic_ns


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, **h):
        self.f.write(json.dumps(h, sort_keys=True) + "\n")


def state(path):
    try:
        with open(path) as f:
            g, s = f.read().split()
            return int(g), s
    except (OSError, ValueError):
        return -1, "down"


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def read_file(path):
    with open(path, "rb") as f:
        return f.read().decode()


def read_rev(path):
    """The content and the revision of one open: a file open for reading
    keeps the content it opened with, and its xattr names that revision."""
    with open(path, "rb") as f:
        v = f.read().decode()
        return v, int(os.getxattr(f.fileno(), "user.etcd.resourceVersion"))


def write_file(path, value, flags):
    fd = os.open(path, os.O_WRONLY | flags, 0o644)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)   # the commit: its error is the write's


def client(cid, mount, d, stfile, seed, seconds, out):
    log = Log(out)
    rnd = random.Random("%s-%s" % (seed, cid))
    deadline = now() + int(float(seconds) * 1e9)
    n = 0
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    while now() < deadline:
        g0, s0 = state(stfile)
        if s0 != "up":
            time.sleep(0.05)
            continue
        r = rnd.random()
        key = rnd.choice(REGISTER_KEYS if r < 0.85 else RENAME_KEYS)
        path = os.path.join(d, os.path.basename(key))
        n += 1
        value = "%s-%d" % (cid, n)
        h = {"client": cid, "mount": mount, "key": key}
        if r < 0.35:
            kind = "read"
        elif r < 0.6:
            kind = "write"
        elif r < 0.72:
            kind = "cas"
        elif r < 0.8:
            kind = "create"
        elif r < 0.85:
            kind = "unlink"
        else:
            kind = rnd.choice(["read", "write", "rename", "rename", "unlink",
                               "create"])
        if kind == "cas":
            # pinned read-modify-write: read value and revision, pin, write
            t0 = now()
            try:
                old, rev = read_rev(path)
                oc, err = "ok", None
            except OSError as e:
                old, rev, oc, err = None, None, "fail", ename(e)
            g1, _ = state(stfile)
            if g1 != g0 and oc != "ok":
                err = "EDAEMON"
            log(op="read", start=t0, end=now(), outcome=oc, errno=err,
                value=old, **h)
            if oc != "ok":
                continue
            # setfattr, a child: the pin is this client's (its parent's)
            p = subprocess.run(["setfattr", "-n", "user.etcd.pin", "-v",
                                str(rev), path], capture_output=True)
            if p.returncode != 0:
                continue
            h.update(expect=old, rev=rev)
            kind, flags = "cas", os.O_TRUNC
        t0 = now()
        try:
            if kind == "read":
                h["value"] = read_file(path)
            elif kind == "write":
                h["value"] = value
                write_file(path, value, os.O_CREAT | os.O_TRUNC)
            elif kind == "cas":
                h["value"] = value
                write_file(path, value, flags)
            elif kind == "create":
                h["value"] = value
                write_file(path, value, os.O_CREAT | os.O_EXCL)
            elif kind == "unlink":
                os.unlink(path)
            elif kind == "rename":
                to = rnd.choice([k for k in RENAME_KEYS if k != key])
                h["to"] = to
                os.rename(path, os.path.join(d, os.path.basename(to)))
            oc, err = "ok", None
        except OSError as e:
            err = ename(e)
            oc = "fail" if err in NOT_APPLIED else "unknown"
        t1 = now()
        g1, _ = state(stfile)
        if g1 != g0 and oc != "ok":
            # in flight across a daemon's kill: says nothing
            oc = "unknown" if kind != "read" else "fail"
            err = "EDAEMON"
        if g1 != g0 and kind == "cas":
            # the pin was the killed daemon's: the write was not pinned
            kind = "write"
            h.pop("expect", None)
            h.pop("rev", None)
        if kind == "read" and oc != "ok":
            h.pop("value", None)
            if err == "ENOENT":
                h["value"] = None
            oc = "fail"
        log(op=kind, start=t0, end=t1, outcome=oc, errno=err, **h)
        time.sleep(rnd.uniform(0, 0.03))


# ------------------------------------------------------------ etcd directly

def _b64(s):
    return base64.b64encode(s.encode()).decode()


def _unb64(s):
    return base64.b64decode(s).decode()


def gateway(endpoints, path, body, timeout=2.0):
    last = None
    for ep in endpoints.split(","):
        try:
            req = urllib.request.Request(ep + path,
                                         data=json.dumps(body).encode())
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read())
        except Exception as e:  # noqa: BLE001 - the next member
            last = e
            if path == "/v3/kv/put":
                raise   # may have been applied: the caller says unknown
    raise last


def etcd_state(endpoints, prefix):
    p = prefix.rstrip("/") + "/"
    end = p[:-1] + chr(ord(p[-1]) + 1)
    r = gateway(endpoints, "/v3/kv/range",
                {"key": _b64(p), "range_end": _b64(end)})
    st = {k: (None, None) for k in KEYS}
    for kv in r.get("kvs", []):
        k = _unb64(kv["key"])[len(p):]
        if k in st:
            st[k] = (_unb64(kv.get("value", "")), int(kv["mod_revision"]))
    return st


def control(cid, endpoints, prefix, seed, seconds, out):
    log = Log(out)
    rnd = random.Random("%s-%s" % (seed, cid))
    deadline = now() + int(float(seconds) * 1e9)
    n = 0
    p = prefix.rstrip("/") + "/"
    while now() < deadline:
        key = rnd.choice(REGISTER_KEYS)
        h = {"client": cid, "mount": "etcd", "key": key}
        t0 = now()
        if rnd.random() < 0.5:
            try:
                r = gateway(endpoints, "/v3/kv/range", {"key": _b64(p + key)})
                kvs = r.get("kvs", [])
                h["value"] = _unb64(kvs[0].get("value", "")) if kvs else None
                log(op="read", start=t0, end=now(), outcome="ok", **h)
            except Exception as e:  # noqa: BLE001
                log(op="read", start=t0, end=now(), outcome="fail",
                    errno=type(e).__name__, **h)
        else:
            n += 1
            h["value"] = "%s-%d" % (cid, n)
            try:
                gateway(endpoints, "/v3/kv/put",
                        {"key": _b64(p + key), "value": _b64(h["value"])})
                oc, err = "ok", None
            except Exception as e:  # noqa: BLE001
                oc, err = "unknown", type(e).__name__
            log(op="write", start=t0, end=now(), outcome=oc, errno=err, **h)
        time.sleep(rnd.uniform(0.05, 0.3))


def snapshot(kind, endpoints, prefix, out):
    log = Log(out)
    for _ in range(50):
        try:
            t = now()
            st = etcd_state(endpoints, prefix)
            break
        except Exception:  # noqa: BLE001 - a member is down: again
            time.sleep(0.2)
    else:
        sys.exit("snapshot: etcd does not answer")
    if kind == "final":
        for k, (v, r) in sorted(st.items()):
            log(op="final", key=k, value=v, rev=r)
    else:
        log(op="manifest", time=t,
            state={k: v for k, (v, _) in st.items()})


def converge(mount, d, endpoints, prefix, seconds, out):
    log = Log(out)
    st = etcd_state(endpoints, prefix)
    deadline = time.monotonic() + float(seconds)
    while True:
        seen = {}
        for k in KEYS:
            try:
                seen[k] = read_file(os.path.join(d, os.path.basename(k)))
            except OSError:
                seen[k] = None
        if all(seen[k] == st[k][0] for k in KEYS) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for k in KEYS:
        log(op="converge", mount=mount, key=k, value=seen[k])


# ------------------------------------------------------------------ watchers

def watch(wid, mount, d, stfile, out):
    log = Log(out)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    inst = 0
    while not stop:
        g0, s0 = state(stfile)
        if s0 != "up":
            time.sleep(0.05)
            continue
        inst += 1
        me = "%s.%d" % (wid, inst)
        # not OPEN, ACCESS nor CLOSE_NOWRITE: its own reads raise those
        p = subprocess.Popen(["inotifywait", "-m", "-q", "-e", "create",
                              "-e", "modify", "-e", "close_write", "-e",
                              "delete", "-e", "moved_from", "-e",
                              "moved_to", "--format", "%e|%f", d], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, bufsize=0)
        fd = p.stdout.fileno()
        buf = b""
        lines = []
        t0 = now()
        log(op="watch", client=me, mount=mount, start=t0)
        ended = False
        quiet = None
        while True:
            # lines already read come first: select sees only the pipe
            r = [fd] if lines else select.select([fd], [], [], 0.1)[0]
            if state(stfile)[0] != g0:
                ended = True
                break
            if stop:
                # asked to stop: drain until 2 s pass without an event
                # (60 s at most)
                t = time.monotonic()
                if quiet is None:
                    quiet, limit = t, t + 60
                if t - quiet > 2:
                    break
                if t > limit:
                    log(op="watch_end", client=me, mount=mount, time=now(),
                        reason="behind")
                    break
                if r:
                    quiet = t
            if not r:
                continue
            if not lines:
                chunk = os.read(fd, 65536)
                if not chunk:
                    ended = True
                    break
                buf += chunk
                *done, buf = buf.split(b"\n")
                lines.extend(x.decode(errors="replace") for x in done)
                if not lines:
                    continue
            # the events at hand as one batch: each file of it read once,
            # after all of them (a read through a quorum mount costs a
            # barrier: one per event would leave the watcher far behind)
            batch, lines = lines, []
            seen = {}
            for line in batch:
                mask, _, name = line.partition("|")
                if name and name not in seen:
                    seen[name] = None
            for name in seen:
                try:
                    seen[name] = read_rev(os.path.join(d, name))
                except (OSError, ValueError):
                    seen[name] = (None, None)
            t = now()
            for line in batch:
                mask, _, name = line.partition("|")
                if name:
                    v, rev = seen[name]
                    log(op="event", client=me, mount=mount, key="d/" + name,
                        mask=mask, end=t, value=v, rev=rev)
        p.terminate()
        p.wait()
        if ended:
            log(op="watch_end", client=me, mount=mount, time=now())


def main(a):
    cmd = a[1] if len(a) > 1 else ""
    if cmd == "client" and len(a) == 9:
        client(*a[2:])
    elif cmd == "control" and len(a) == 8:
        control(*a[2:])
    elif cmd == "watch" and len(a) == 7:
        watch(*a[2:])
    elif cmd == "snapshot" and len(a) == 6:
        snapshot(*a[2:])
    elif cmd == "converge" and len(a) == 8:
        converge(*a[2:])
    else:
        sys.exit(__doc__ if __doc__ else "usage: see the header")


if __name__ == "__main__":
    main(sys.argv)
