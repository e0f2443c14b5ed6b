#!/usr/bin/env python3
#
# tests/lib/slow_follower.py - a recursive inotify watcher that is slow to
# follow new directories (tests/fs/visible.bats)
#
#   slow_follower.py DIR DELAY OUT
#
# Watches DIR with inotify and, like `inotifywait -r` (inotify-tools),
# follows every new directory: it lists it (opendir, readdir, closedir)
# and only then watches it.  Unlike inotifywait it sleeps DELAY seconds
# before each such walk, as a watcher on a loaded machine may, so that a
# directory made in a new one before its walk is not seen unless the
# maker waits for the walk.  Each event goes to OUT as a line "EVENTS
# PATH" in inotifywait's --format '%e %w%f' (CREATE,ISDIR /mnt/a); the
# line "READY" first, once DIR is watched.  Ends on SIGTERM.
import ctypes
import ctypes.util
import os
import struct
import sys
import time

IN_MODIFY = 0x2
IN_CLOSE_WRITE = 0x8
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_ISDIR = 0x40000000
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE
NAMES = [(IN_MODIFY, "MODIFY"), (IN_CLOSE_WRITE, "CLOSE_WRITE,CLOSE"),
         (IN_CREATE, "CREATE"), (IN_DELETE, "DELETE")]

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def add_watch(fd, path):
    wd = libc.inotify_add_watch(fd, os.fsencode(path), MASK)
    if wd < 0:
        raise OSError(ctypes.get_errno(), "inotify_add_watch", path)
    return wd


def main():
    root, delay, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    fd = libc.inotify_init()
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init")
    paths = {add_watch(fd, root): root}
    log = open(out, "w", buffering=1)
    log.write("READY\n")
    while True:
        buf = os.read(fd, 65536)
        off = 0
        while off < len(buf):
            wd, mask, _, nlen = struct.unpack_from("iIII", buf, off)
            name = buf[off + 16:off + 16 + nlen].rstrip(b"\0").decode()
            off += 16 + nlen
            path = os.path.join(paths.get(wd, "?"), name)
            ev = ",".join(n for bit, n in NAMES if mask & bit)
            if not ev:
                continue
            if mask & IN_ISDIR:
                ev += ",ISDIR"
            log.write("%s %s\n" % (ev, path))
            if mask & IN_CREATE and mask & IN_ISDIR:
                time.sleep(delay)
                os.listdir(path)
                paths[add_watch(fd, path)] = path


if __name__ == "__main__":
    main()
