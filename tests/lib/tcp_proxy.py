#!/usr/bin/env python3
#
# tests/lib/tcp_proxy.py - a TCP proxy on 127.0.0.1 that a test can cut,
# or make lose one request's answer
#
#   tcp_proxy.py PORT TARGET_PORT
#
# Listens on PORT (0: any free one), prints the port it listens on, and
# pumps each connection to 127.0.0.1:TARGET_PORT both ways.  Killing the
# process cuts every connection through it at once, which is how
# tests/integration/test_store_v2_watch.c loses a watch's connection; it
# can then be started again on the same port.  A connection the target
# refuses (it is down) is closed at once, and the proxy goes on.
#
# It also takes commands on its standard input, one a line, and answers
# each on its standard output, so that a test can lose the answer of one
# request of its choice (tests/integration/util.h, util_proxy_*):
#
#   lose [START]     the next request (the first bytes a client sends
#                    after this, on a connection; with START, the first
#                    such bytes that start with START, as "PUT" for an
#                    HTTP/1 request) goes to the server, and nothing the
#                    server answers on that connection comes back: once
#                    the answer is complete (HTTP/1: its first bytes;
#                    HTTP/2: a HEADERS frame that ends a stream) it says
#                    "answered" and holds the connection
#   swallow [START]  the next request never reaches the server: once it
#                    has taken it in whole (HTTP/1: its first bytes;
#                    HTTP/2: a frame that ends a stream, so that the
#                    client has handed over the whole message) it says
#                    "swallowed" and holds the connection
#   cut              closes both sides of the held connection: "cut"
#   reset            the same, but the client's side is closed with a TCP
#                    reset (RST) where "cut" sends a FIN: "reset"
#
# "lose" and "swallow" say "armed" once read.  A client then sees its
# connection closed after its request went out: a lost answer, applied by
# the server (lose) or not (swallow).  The two ends differ to libcurl
# (7.88) on HTTP/2: at a FIN it gives up on the call ("stream N was not
# closed cleanly"), at a reset of a connection it had reused it sends the
# call again by itself on a fresh one, if it can rewind the request's body
# ("Connection died, retrying a fresh connect").  On HTTP/1 it does so at
# either.
#
# What it cannot do: delay or alter bytes; hold more than one connection
# at a time; reach anything but loopback.

import socket
import struct
import sys
import threading

lock = threading.Lock()
armed = None            # 'lose' or 'swallow', for the next request
start = b''             # what the request's first bytes start with
held = None             # the connection that took it


def say(msg):
    print(msg, flush=True)


def end_of_stream(buf, types):
    """Reads the whole HTTP/2 frames at the start of @buf: (the rest,
    whether one of them is of one of @types and ends a stream).  The
    client's preface, if it is there, goes first."""
    done = False
    if buf.startswith(b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'):
        buf = buf[24:]
    while len(buf) >= 9:
        length = int.from_bytes(buf[0:3], 'big')
        ftype, flags = buf[3], buf[4]
        stream = struct.unpack('>I', buf[5:9])[0] & 0x7fffffff
        if len(buf) < 9 + length:
            break
        buf = buf[9 + length:]
        # DATA or HEADERS with END_STREAM: a request's last frame, or a
        # response's trailers
        if ftype in types and flags & 1 and stream:
            done = True
    return buf, done


class Conn:
    def __init__(self, client, server):
        self.client = client
        self.server = server
        self.mode = None    # what it was armed with
        self.h2 = None      # HTTP/2 (the client preface), once known
        self.frames = b''   # the server's bytes not framed yet (HTTP/2)
        self.taken = b''    # the swallowed bytes not framed yet (HTTP/2)
        self.told = False   # "answered" or "swallowed" said
        self.reset = False  # the client's side ends with an RST

    def ended(self, data):
        """Whether @data, from the server, ends a response."""
        if not self.h2:
            return True
        self.frames, done = end_of_stream(self.frames + data, (1,))
        return done

    def swallowed(self, data):
        """Whether @data, from the client, ends the request taken."""
        if not self.h2:
            return True
        self.taken, done = end_of_stream(self.taken + data, (0, 1))
        return done

    def cut(self):
        for s in (self.client, self.server):
            try:
                if s is self.client and self.reset:
                    # a close with a zero linger sends an RST
                    s.close()
                else:
                    s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def abort(self):
        """Ends the client's side with an RST, and the server's."""
        self.reset = True
        self.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                               struct.pack('ii', 1, 0))
        # wakes the thread reading the client, which then closes it: a
        # close here would neither wake it nor free the socket, which
        # that read holds until it returns
        try:
            self.client.shutdown(socket.SHUT_RD)
        except OSError:
            pass


def upstream(conn):
    global armed, held
    try:
        while True:
            d = conn.client.recv(65536)
            if not d:
                break
            with lock:
                if conn.h2 is None:
                    conn.h2 = d.startswith(b'PRI * HTTP/2.0')
                if conn.mode is None and armed and held is None and \
                        d.startswith(start):
                    conn.mode, armed, held = armed, None, conn
                if conn.mode == 'swallow':
                    if not conn.told and conn.swallowed(d):
                        conn.told = True
                        say('swallowed')
                    continue
            conn.server.sendall(d)
    except OSError:
        pass
    conn.cut()


def downstream(conn):
    try:
        while True:
            d = conn.server.recv(65536)
            if not d:
                break
            with lock:
                # HTTP/2 frames are followed from the start
                ended = conn.ended(d) if conn.h2 else True
                if conn.mode == 'lose':
                    if ended and not conn.told:
                        conn.told = True
                        say('answered')
                    continue
            conn.client.sendall(d)
    except OSError:
        pass
    conn.cut()


def commands():
    global armed, held, start
    for line in sys.stdin:
        words = line.split()
        cmd = words[0] if words else ''
        with lock:
            if cmd in ('lose', 'swallow') and len(words) <= 2:
                armed = cmd
                start = words[1].encode() if len(words) == 2 else b''
                say('armed')
            elif cmd in ('cut', 'reset'):
                if held and cmd == 'reset':
                    held.abort()
                elif held:
                    held.cut()
                held = None
                say(cmd)
            else:
                say('unknown command ' + repr(line.strip()))


def main():
    port, target = int(sys.argv[1]), int(sys.argv[2])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('127.0.0.1', port))
    ls.listen(16)
    print(ls.getsockname()[1], flush=True)
    threading.Thread(target=commands, daemon=True).start()
    while True:
        c, _ = ls.accept()
        try:
            u = socket.create_connection(('127.0.0.1', target))
        except OSError:
            c.close()
            continue
        conn = Conn(c, u)
        threading.Thread(target=upstream, args=(conn,), daemon=True).start()
        threading.Thread(target=downstream, args=(conn,),
                         daemon=True).start()


if __name__ == '__main__':
    main()
