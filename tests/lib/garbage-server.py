#!/usr/bin/env python3
#
# tests/lib/garbage-server.py - a hostile HTTP server for the store tests
#
#   garbage-server.py MODE [--size BYTES] [--lifetime SECONDS]
#
# Listens on a free port of 127.0.0.1, prints the port on a line of its
# own on stdout, and answers every request on every path the way MODE says,
# so a test can check that the store reports a clear error instead of
# crashing or hanging.  Stops on SIGTERM or SIGINT, and by itself after
# --lifetime seconds (default 900) so that a test that dies cannot leave it
# behind for long.  It does not speak TLS and does not stream.
#
# Modes:
#   notjson      200 with a body that is not JSON
#   truncated    200 with JSON cut in the middle (Content-Length matches)
#   short        200 whose Content-Length promises more than is sent,
#                then the connection is closed
#   badrevision  a range reply with header.revision an object
#   badkvs       a range reply with kvs a string
#   badbase64    a range reply whose key and value are not base64
#   badcount     a range reply with count and mod_revision not numbers
#   oversized    a well-formed range reply of --size bytes (default 1 MiB)
#   error500     500 with an HTML body
#   nothttp      a line that is not HTTP at all, once the client has
#                sent all it had (so the client reads it: a peer that
#                closes while a request is still being written is the
#                'close' mode's case, whose outcome the client cannot know)
#   silent       reads the request and never answers
#   close        closes each connection as soon as it is accepted

import sys
import threading

import garbage_main

HEADER = '{"header":{"cluster_id":"1","member_id":"2","revision":"5",' \
         '"raft_term":"2"}'

KV = '{"key":"YQ==","create_revision":"2","mod_revision":"5",' \
     '"version":"3","value":"dg=="}'

BODIES = {
    'notjson': b'this is not json, not even close\n',
    'truncated': (HEADER + ',"kvs":[{"key":"YQ==","create_revision":"2",'
                  '"mod_rev').encode(),
    'badrevision': ('{"header":{"cluster_id":"1","revision":{"x":1}},'
                    '"kvs":[' + KV + '],"count":"1"}').encode(),
    'badkvs': (HEADER + ',"kvs":"not a list","count":"1"}').encode(),
    'badbase64': (HEADER + ',"kvs":[{"key":"!!!not base64!!!",'
                  '"create_revision":"2","mod_revision":"5","version":"3",'
                  '"value":"@@@@"}],"count":"1"}').encode(),
    'badcount': (HEADER + ',"kvs":[{"key":"YQ==","create_revision":[1],'
                 '"mod_revision":"five","version":"3","value":"dg=="}],'
                 '"count":{"n":1}}').encode(),
}

MODES = sorted(list(BODIES) + ['short', 'oversized', 'error500', 'nothttp',
                               'silent', 'close'])


def read_request(conn, buf):
    """Reads one request (headers and body); returns (rest, expect_100)
    or None when the peer closed."""
    while b'\r\n\r\n' not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = buf.partition(b'\r\n\r\n')
    length = 0
    expect = False
    for line in head.split(b'\r\n')[1:]:
        name, _, value = line.partition(b':')
        name = name.strip().lower()
        if name == b'content-length':
            length = int(value.strip() or b'0')
        elif name == b'expect' and b'100' in value:
            expect = True
    if expect:
        conn.sendall(b'HTTP/1.1 100 Continue\r\n\r\n')
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None
        rest += data
    return rest[length:]


def drain(conn, idle=0.2):
    """Reads what the peer sends until it has been idle for @idle s."""
    conn.settimeout(idle)
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass
    conn.settimeout(None)


def reply(conn, status, body, ctype=b'application/json', length=None):
    if length is None:
        length = len(body)
    conn.sendall(b'HTTP/1.1 ' + status + b'\r\n'
                 b'Content-Type: ' + ctype + b'\r\n'
                 b'Content-Length: ' + str(length).encode() + b'\r\n'
                 b'\r\n' + body)


def oversized_body(size):
    # A valid range reply whose value makes the whole body about @size.
    import base64
    raw = b'x' * max(1, (size * 3) // 4)
    value = base64.b64encode(raw).decode()
    return (HEADER + ',"kvs":[{"key":"YQ==","create_revision":"2",'
            '"mod_revision":"5","version":"3","value":"' + value +
            '"}],"count":"1"}').encode()


def serve(conn, mode, size, stop):
    try:
        if mode == 'close':
            return
        buf = b''
        while True:
            rest = read_request(conn, buf)
            if rest is None:
                return
            buf = rest
            if mode == 'silent':
                # Hold the connection open and say nothing.
                stop.wait()
                return
            if mode in BODIES:
                reply(conn, b'200 OK', BODIES[mode])
            elif mode == 'short':
                body = (HEADER + ',"kvs":[').encode()
                reply(conn, b'200 OK', body, length=len(body) + 1000)
                return
            elif mode == 'oversized':
                reply(conn, b'200 OK', oversized_body(size))
            elif mode == 'error500':
                reply(conn, b'500 Internal Server Error',
                      b'<html><body><h1>oops</h1></body></html>\n',
                      ctype=b'text/html')
            elif mode == 'nothttp':
                drain(conn)
                conn.sendall(b'SSH-2.0-OpenSSH_9.2 garbage\r\n')
                return
    except OSError:
        return
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    stop = threading.Event()     # never set: a silent serve() waits on it

    garbage_main.run('a hostile HTTP server', MODES,
                     lambda conn, mode, size: serve(conn, mode, size, stop))


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
