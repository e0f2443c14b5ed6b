#!/usr/bin/env python3
#
# tests/lib/mount_dump.py - every file under a directory as "KEY VALUE"
#
#   mount_dump.py ROOT
#
# Walks ROOT (a mount with no prefix) and prints one line per file,
# sorted by bytes: "/" and the file's path under ROOT, a space, and the
# file's content, as kv_dump prints etcd's keys (tests/lib/mount.bash
# compares the two).  A file whose content has a newline makes more than
# one line, as in kv_dump.  It reads every file, so it must not run while
# the mount's daemon is stopped.
import os, sys

root = sys.argv[1]
out = []
for d, dirs, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        with open(p, "rb") as fh:
            v = fh.read()
        out.append(b"/" + os.path.relpath(p, root).encode() + b" " + v)
for line in sorted(out):
    sys.stdout.buffer.write(line + b"\n")
