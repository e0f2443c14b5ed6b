#
# tests/lib/garbage_main.py - the command line and the accept loop that
# tests/lib/garbage-server.py (HTTP/1) and grpc-garbage-server.py (HTTP/2)
# share
#
#   garbage_main.run(description, modes, serve)
#
# Parses "MODE [--size N] [--lifetime S]", ends the process on SIGTERM,
# SIGINT or after --lifetime seconds, listens on 127.0.0.1 on a free port,
# prints the port on a line of its own and calls serve(conn, mode, size)
# on a thread of its own for each connection; mode "close" closes each
# connection at once instead.  serve owns conn.
#
# What it cannot do: listen on anything but loopback, or stop a serve()
# before the process ends.

import argparse
import os
import signal
import socket
import threading


def run(description, modes, serve):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument('mode', choices=modes)
    ap.add_argument('--size', type=int, default=1 << 20)
    ap.add_argument('--lifetime', type=float, default=900)
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    signal.signal(signal.SIGINT, lambda *a: os._exit(0))
    timer = threading.Timer(args.lifetime, lambda: os._exit(0))
    timer.daemon = True
    timer.start()

    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('127.0.0.1', 0))
    srv.listen(64)
    print(srv.getsockname()[1], flush=True)

    while True:
        conn, _ = srv.accept()
        if args.mode == 'close':
            conn.close()
            continue
        threading.Thread(target=serve, args=(conn, args.mode, args.size),
                         daemon=True).start()
