#!/usr/bin/env python3
#
# tests/lib/kv2.py - the etcd v2 side of the kv_* helpers of
# tests/lib/mount.bash, over /v2/keys
#
#   kv2.py put [--ttl SECS] KEY [VALUE] | get KEY | has KEY | absent KEY |
#          meta KEY FIELD | metas PREFIX FIELD | keys [PREFIX] |
#          keys_hex [PREFIX] | dump |
#          rev | del [--prefix] KEY | history FIRST LAST
#
# Talks to the first of $ETCDCTL_ENDPOINTS.  Each command prints what the
# kv_* helper of the same name documents and exits 0, or exits 1 when the
# key is absent (get, has, meta) or present (absent), or with a message
# when etcd refuses.  v3's words map onto v2's as mount.bash says; version
# is counted from etcd's event history, so a key created more than 1,000
# events ago has none.  It cannot speak TLS or authenticate.
import json, os, sys, urllib.error, urllib.parse, urllib.request

EP = os.environ["ETCDCTL_ENDPOINTS"].split(",")[0]


def call(method, key, query=None, form=None):
    """(reply JSON, etcd index) of a /v2/keys request; errors too."""
    url = EP + "/v2/keys" + urllib.parse.quote(key, safe="/")
    if query:
        url += "?" + urllib.parse.urlencode(query)
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return json.load(r), int(r.headers.get("X-Etcd-Index", 0))
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            j = json.loads(body)
        except ValueError:
            sys.exit("v2 %s %s: HTTP %d %r" % (method, key, e.code, body))
        return j, int(e.headers.get("X-Etcd-Index") or j.get("index", 0))


def fail(j):
    sys.exit("etcd v2: %s (%s)" % (j.get("message"), j.get("cause")))


def node(key):
    """The node of @key, None if there is none."""
    j, _ = call("GET", key, {"quorum": "true"})
    if j.get("errorCode") == 100:
        return None
    if "errorCode" in j:
        fail(j)
    return j["node"]


def rev():
    # the index of a quorum read, as in the mount's probe: a not-found
    # error of an absent key carries it
    j, index = call("GET", "/_kv2_no_such_key", {"quorum": "true"})
    return index


def leaves(n, out):
    if n.get("dir"):
        for c in n.get("nodes") or []:
            leaves(c, out)
    else:
        out.append(n)


def under(prefix):
    """The keys (leaf nodes) whose name starts with @prefix, sorted."""
    d = prefix[:prefix.rfind("/") + 1] if "/" in prefix else "/"
    j, _ = call("GET", d, {"recursive": "true", "quorum": "true"})
    if j.get("errorCode") in (100, 104):
        return []
    if "errorCode" in j:
        fail(j)
    out = []
    leaves(j["node"], out)
    return sorted((n for n in out if n["key"].startswith(prefix)),
                  key=lambda n: n["key"].encode())


def events(key, first, last, recursive):
    """Every event on @key (and below it if @recursive) at indexes
    first..last, by waiting on each in turn."""
    i = first
    while i <= last:
        q = {"wait": "true", "waitIndex": str(i)}
        if recursive:
            q["recursive"] = "true"
        j, _ = call("GET", key, q)
        if "errorCode" in j:
            fail(j)
        # an expiry or a delete carries the node without a value
        at = j["node"]["modifiedIndex"]
        if at > last:
            return
        yield j
        i = at + 1


def version(key):
    """How many writes @key had since it was last created, from etcd's
    event history, as v3's version."""
    n = node(key)
    if n is None or n.get("dir"):
        return None
    last = n["modifiedIndex"]
    first = max(1, rev() - 999)
    v = 0 if first == 1 else None
    for e in events(key, first, last, False):
        if e["action"] in ("delete", "compareAndDelete", "expire"):
            v = 0
        elif e["node"]["key"] != key:
            continue
        elif "prevNode" not in e or e["prevNode"].get("dir"):
            v = 1
        elif v is not None:
            v += 1
    if v is None:
        sys.exit("kv2: the creation of %s is older than etcd's history"
                 % key)
    return v


def meta(key, field):
    """kv_meta's FIELD of @key, None if there is no such key."""
    if field == "version":
        return version(key)
    n = node(key)
    return None if n is None else {
        "mod_revision": n["modifiedIndex"],
        "create_revision": n["createdIndex"],
        "lease": 0, "ttl": n.get("ttl", 0)}[field]


def show(key):
    s = key.replace("\n", "\\n")
    return "".join(c if c.isprintable() or c == "\\" else
                   "\\x%02x" % ord(c) for c in s)


def value_arg(args):
    if len(args) >= 2:
        return args[1]
    return sys.stdin.buffer.read().decode("utf-8")


def main(cmd, args):
    if cmd == "put":
        # [--ttl SECS] KEY [VALUE]
        form = {}
        if args[0] == "--ttl":
            form["ttl"] = args[1]
            args = args[2:]
        form["value"] = value_arg(args)
        j, index = call("PUT", args[0], None, form)
        if "errorCode" in j:
            fail(j)
        print(json.dumps({"revision": index}, separators=(",", ":")))
    elif cmd == "get":
        n = node(args[0])
        if n is None or n.get("dir"):
            return 1
        sys.stdout.buffer.write(n.get("value", "").encode())
    elif cmd == "has":
        n = node(args[0])
        return 0 if n is not None and not n.get("dir") else 1
    elif cmd == "absent":
        return 0 if node(args[0]) is None else 1
    elif cmd == "meta":
        v = meta(*args)
        if v is None:
            return 1
        print(v)
    elif cmd == "metas":
        for n in under(args[0]):
            print(show(n["key"]), meta(n["key"], args[1]))
    elif cmd in ("keys", "keys_hex"):
        for n in under(args[0] if args else ""):
            k = n["key"].encode()
            print(k.hex() if cmd == "keys_hex" else k.decode())
    elif cmd == "dump":
        for n in under(""):
            sys.stdout.buffer.write(n["key"].encode() + b" " +
                                    n.get("value", "").encode() + b"\n")
    elif cmd == "rev":
        print(rev())
    elif cmd == "del":
        if args[0] == "--prefix":
            prefix = args[1]
            if not prefix.endswith("/"):
                sys.exit("kv2: del --prefix takes a directory, not %r"
                         % prefix)
            count = len(under(prefix))
            j, index = call("DELETE", prefix.rstrip("/") or "/",
                            {"recursive": "true"})
            if j.get("errorCode") == 100:
                count = 0
            elif "errorCode" in j:
                fail(j)
        else:
            j, index = call("DELETE", args[0])
            count = 1
            if j.get("errorCode") == 100:
                count = 0
            elif "errorCode" in j:
                fail(j)
        # the count, then the index for kv_del to wait for
        print(count)
        print(json.dumps({"revision": index}, separators=(",", ":")))
    elif cmd == "history":
        first, last = int(args[0]), int(args[1])
        for e in events("/", first, last, True):
            n = e["node"]
            if e["action"] in ("delete", "compareAndDelete", "expire"):
                kind = "RMDIR" if n.get("dir") else "DELETE"
            else:
                kind = "MKDIR" if n.get("dir") else "PUT"
            print(kind, show(n["key"]))
    else:
        sys.exit("kv2: no command %r" % cmd)
    return 0


sys.exit(main(sys.argv[1], sys.argv[2:]))
