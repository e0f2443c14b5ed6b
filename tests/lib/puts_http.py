#!/usr/bin/env python3
#
# tests/lib/puts_http.py - N puts over one HTTP connection to etcd
#
#   puts_http.py ENDPOINT API PREFIX N [VALUE]
#
# Puts PREFIX0000, PREFIX0001... (N keys) with the values v0000, v0001...
# (or each VALUE, text), one after the other over one connection to
# ENDPOINT (http://HOST:PORT), with tests/lib/fs_put.py (API v3 or v2).
# A PREFIX or a VALUE with a % in it is a Python format of the key's
# number instead: '/k%03d' makes /k000, /k001...  Stops at the first put
# etcd refuses, with a message.  Much faster than N etcdctl runs; it
# cannot speak TLS.
import http.client, sys, urllib.parse

from fs_put import put

u = urllib.parse.urlparse(sys.argv[1])
api, prefix, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
value = sys.argv[5] if len(sys.argv) > 5 else None
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
for i in range(n):
    key = prefix % i if "%" in prefix else "%s%04d" % (prefix, i)
    v = "v%04d" % i if value is None else value % i if "%" in value else value
    put(c, api, key, v)
