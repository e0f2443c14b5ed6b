#!/usr/bin/env python3
#
# tests/lib/pin_pages.py - holds the kernel's pages of every file of a
# directory: maps each file shared and locks the map (mlock), so that
# neither reclaim (proactive reclaim too, with memory to spare) nor a drop
# of unused inodes elsewhere on the machine can take them while a test
# counts the reads they spare.
#
# Usage: pin_pages.py DIR READY
# Writes READY once every page is held, then holds them until it is
# killed.  Faulting a page in that the kernel does not hold reads it
# first, as any map would.  Needs CAP_IPC_LOCK (root) for more than
# RLIMIT_MEMLOCK.

import ctypes
import mmap
import os
import signal
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
MAP_FAILED = ctypes.c_void_p(-1).value


def pin(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr == MAP_FAILED:
            e = ctypes.get_errno()
            raise OSError(e, "mmap: " + os.strerror(e), path)
        if libc.mlock(addr, size) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "mlock: " + os.strerror(e), path)
    finally:
        os.close(fd)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pin_pages.py DIR READY")
    top, ready = sys.argv[1], sys.argv[2]
    n = 0
    for name in sorted(os.listdir(top)):
        path = os.path.join(top, name)
        if os.path.isfile(path):
            pin(path)
            n += 1
    with open(ready, "w") as f:
        f.write("%d\n" % n)
    signal.pause()


main()
