#!/usr/bin/env python3
#
# tests/lib/kv3.py - the etcd v3 side of the kv_* helpers of
# tests/lib/mount.bash, over etcdctl
#
#   kv3.py ETCDCTL get KEY | has KEY | absent KEY | meta KEY FIELD |
#                  metas PREFIX FIELD | keys [PREFIX] | keys_hex [PREFIX] |
#                  dump | rev | history FIRST LAST
#
# Runs the etcdctl binary ETCDCTL with `-w json` (a word, not an
# ETCDCTL_* variable: etcdctl warns of any it does not know), so that
# etcdctl's environment (ETCDCTL_ENDPOINTS, ETCDCTL_API=3, timeouts) picks the etcd,
# and prints what the kv_* helper of the same name documents.  Exits 1
# when the key is absent (get, has, meta) or present (absent), with
# etcdctl's status when etcdctl fails, and never reads the reply of an
# etcdctl that failed.  history waits 20 s at most for the events up to
# LAST.  It cannot write: kv_put and kv_del call etcdctl themselves.

import base64
import json
import subprocess
import sys
import time

ETCDCTL = "etcdctl"


def get_json(key, *opts):
    """etcdctl's JSON reply to `get KEY` with @opts; exits if it failed."""
    p = subprocess.run([ETCDCTL, "get", "-w", "json", *opts, "--", key],
                       stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        sys.exit(p.returncode)
    return json.loads(p.stdout)


def kvs_of(key, *opts):
    return get_json(key, *opts).get("kvs") or []


def show(key):
    """@key (bytes) as one printable line: \\xNN, newline as \\n."""
    s = key.decode("utf-8", "backslashreplace").replace("\n", "\\n")
    return "".join(c if c.isprintable() or c == "\\" else
                   "\\x%02x" % ord(c) for c in s)


def history(first, last):
    """Every event at revisions first..last as "PUT KEY" or "DELETE KEY"."""
    p = subprocess.Popen([ETCDCTL, "watch", "--prefix", "", "--rev",
                          str(first), "-w", "json"], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    seen = 0
    deadline = time.time() + 20
    try:
        while seen < last and time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            if not line.startswith(b"{"):
                continue
            for ev in json.loads(line).get("Events") or []:
                kv = ev["kv"]
                kind = "DELETE" if ev.get("type", 0) == 1 else "PUT"
                print(kind, show(base64.b64decode(kv["key"])))
                seen = max(seen, int(kv.get("mod_revision", 0)))
    finally:
        p.kill()
        p.wait()
    if seen < last:
        print("kv_history: saw events up to %d of %d" % (seen, last),
              file=sys.stderr)
        return 1
    return 0


def main(cmd, args):
    out = sys.stdout.buffer
    if cmd == "get":
        kvs = kvs_of(args[0])
        if not kvs:
            return 1
        out.write(base64.b64decode(kvs[0].get("value", "")))
    elif cmd == "has":
        return 0 if kvs_of(args[0]) else 1
    elif cmd == "absent":
        return 1 if kvs_of(args[0]) else 0
    elif cmd == "meta":
        kvs = kvs_of(args[0])
        if not kvs:
            return 1
        print(kvs[0].get(args[1], 0))
    elif cmd == "metas":
        for kv in kvs_of(args[0], "--prefix"):
            print(show(base64.b64decode(kv["key"])), kv.get(args[1], 0))
    elif cmd in ("keys", "keys_hex"):
        for kv in kvs_of(args[0] if args else "", "--prefix",
                         "--keys-only"):
            k = base64.b64decode(kv["key"])
            if cmd == "keys":
                out.write(k + b"\n")
            else:
                print(k.hex())
    elif cmd == "rev":
        r = get_json("", "--prefix", "--keys-only", "--limit=1")
        print(r["header"]["revision"])
    elif cmd == "dump":
        lines = [base64.b64decode(kv["key"]) + b" " +
                 base64.b64decode(kv.get("value", ""))
                 for kv in kvs_of("", "--prefix")]
        for line in sorted(lines):
            out.write(line + b"\n")
    elif cmd == "history":
        return history(int(args[0]), int(args[1]))
    else:
        sys.exit("kv3: no command %r" % cmd)
    return 0


if __name__ == "__main__":
    ETCDCTL = sys.argv[1]
    sys.exit(main(sys.argv[2], sys.argv[3:]))
