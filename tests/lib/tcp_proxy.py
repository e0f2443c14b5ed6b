#!/usr/bin/env python3
#
# tests/lib/tcp_proxy.py - a TCP proxy on 127.0.0.1 that a test can cut
#
#   tcp_proxy.py PORT TARGET_PORT
#
# Listens on PORT (0: any free one), prints the port it listens on, and
# pumps each connection to 127.0.0.1:TARGET_PORT both ways.  Killing the
# process cuts every connection through it at once, which is how
# tests/integration/test_store_v2_watch.c loses a watch's connection; it
# can then be started again on the same port.
#
# What it cannot do: delay, drop or alter bytes; reach anything but
# loopback.

import socket
import sys
import threading


def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    port, target = int(sys.argv[1]), int(sys.argv[2])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('127.0.0.1', port))
    ls.listen(16)
    print(ls.getsockname()[1], flush=True)
    while True:
        c, _ = ls.accept()
        u = socket.create_connection(('127.0.0.1', target))
        for a, b in ((c, u), (u, c)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


if __name__ == '__main__':
    main()
