#!/usr/bin/env python3
#
# tests/lib/fs_try.py - runs a test's Python code and names the errno it
# raised (fs_try in tests/lib/mount.bash)
#
#   fs_try.py CODE [ARG...]
#
# Runs CODE (dedented) as the body of this script, with `args` the ARGs,
# the modules os, sys, errno, time, json and base64 imported, and three
# helpers:
# kv_put(key, value) and kv_get(key) (bytes; None if absent) talk to the
# first of $ETCDCTL_ENDPOINTS over HTTP (v2's /v2/keys if ETCDCTL_API is
# 2, else v3's JSON gateway), and read_all(path) reads a whole file.
# Prints OK, or the errno's name (ESTALE, EEXIST...) of an OSError CODE
# raised, and then exits 1; any other exception is a traceback and exit 1.
#
# The helpers talk to etcd from this process itself: a fork while a file
# is open for writing would close the child's copy of it, which is a FUSE
# flush, which commits.
import base64, errno, json, os, sys, textwrap, time
import urllib.error, urllib.parse, urllib.request

args = sys.argv[2:]


def _kv(path, req):
    url = os.environ["ETCDCTL_ENDPOINTS"].split(",")[0] + "/v3/kv/" + path
    body = json.dumps(req).encode()
    with urllib.request.urlopen(url, body, timeout=20) as r:
        return json.load(r)


def _b64(b):
    return base64.b64encode(b).decode()


def _kv2(method, key, data=None):
    url = (os.environ["ETCDCTL_ENDPOINTS"].split(",")[0] + "/v2/keys" +
           urllib.parse.quote(key, safe="/") + "?quorum=true")
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def kv_put(key, value):
    if os.environ.get("ETCDCTL_API") == "2":
        _kv2("PUT", key.decode(), urllib.parse.urlencode(
            {"value": value.decode()}).encode())
        return
    _kv("put", {"key": _b64(key), "value": _b64(value)})


def kv_get(key):
    if os.environ.get("ETCDCTL_API") == "2":
        r = _kv2("GET", key.decode())
        return r["node"].get("value", "").encode() if r else None
    kvs = _kv("range", {"key": _b64(key)}).get("kvs")
    return base64.b64decode(kvs[0].get("value", "")) if kvs else None


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


if len(sys.argv) < 2:
    sys.exit("usage: fs_try.py CODE [ARG...]")
try:
    exec(compile(textwrap.dedent(sys.argv[1]), "fs_try", "exec"))
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(1)
print("OK")
