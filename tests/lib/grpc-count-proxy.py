#!/usr/bin/python3
#
# tests/lib/grpc-count-proxy.py - a proxy on 127.0.0.1 that writes down
# what etcd answered to each range and txn going through it
#
#   grpc-count-proxy.py TARGET_PORT LOG
#
# Listens on a free port of 127.0.0.1, prints the port on a line of its
# own on stdout, and relays each connection to 127.0.0.1:TARGET_PORT
# unchanged: HTTP/2 without TLS, as etcdfs's gRPC transport opens it
# ("prior knowledge").  On the way it reads the frames: the client's
# header blocks (HPACK, Debian's python3-hpack, hence /usr/bin/python3)
# for each stream's path, and the server's DATA for the first gRPC message
# of each reply.  For each reply of etcd's KV service it appends to LOG,
# before the last byte of the reply goes on to the client:
#
#   range COUNT KVS MORE     a RangeResponse: its count, keys and more
#   txn RANGES COUNT KVS     a TxnResponse: its range responses, the sum
#                            of their counts and of their keys
#   other PATH               any other call of the KV service
#   error WHAT               a reply it could not read
#
# etcd's count of a range is the number of keys it walked to answer it
# (every key of the range, whatever the limit), so the log tells what each
# request cost etcd without asking the client.  The log is the client's
# to read once its calls returned; the proxy never writes to stderr.
# Stops on SIGTERM or SIGINT, and by itself after --lifetime seconds
# (default 900).
#
# What it cannot do: TLS, compressed messages (it writes "error"), or a
# reply split over several gRPC messages (only the first is read: etcd's
# unary replies have one).

import signal
import socket
import struct
import sys
import threading

import hpack

PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
DATA, HEADERS, CONTINUATION = 0, 1, 9
END_STREAM, END_HEADERS, PADDED, PRIORITY = 0x1, 0x4, 0x8, 0x20
KV = '/etcdserverpb.KV/'


class BadReply(Exception):
    pass


def varint(b, i):
    n = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise BadReply('truncated varint')
        c = b[i]
        i += 1
        n |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def fields(b):
    """(number, value) of each field of the protobuf message @b: an int
    for varints, a memoryview for length-delimited fields."""
    i = 0
    while i < len(b):
        tag, i = varint(b, i)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                raise BadReply('truncated field %d' % num)
            v, i = b[i:i + n], i + n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
            v = None
        else:
            raise BadReply('wire type %d' % wire)
        yield num, v


def range_response(b):
    """(count, keys, more) of a RangeResponse."""
    count = kvs = more = 0
    for num, v in fields(b):
        if num == 2:
            kvs += 1
        elif num == 3 and isinstance(v, int):
            more = v
        elif num == 4 and isinstance(v, int):
            count = v
    return count, kvs, more


def txn_response(b):
    """(ranges, count, keys) of a TxnResponse's range responses."""
    ranges = count = kvs = 0
    for num, v in fields(b):
        if num != 3 or isinstance(v, int):
            continue
        for onum, ov in fields(v):
            if onum == 1 and not isinstance(ov, int):
                c, k, _ = range_response(ov)
                ranges += 1
                count += c
                kvs += k
    return ranges, count, kvs


class Log:
    def __init__(self, path):
        self.f = open(path, 'a', encoding='ascii')
        self.lock = threading.Lock()

    def write(self, line):
        with self.lock:
            self.f.write(line + '\n')
            self.f.flush()


class Conn:
    """One relayed connection: the paths of its streams."""

    def __init__(self, log):
        self.log = log
        self.paths = {}
        self.lock = threading.Lock()
        self.dec = hpack.Decoder()
        # the server's SETTINGS may allow the client more than the default
        self.dec.max_allowed_table_size = 1 << 20


def frames(buf, skip_preface):
    """Complete frames at the start of @buf, removed from it."""
    out = []
    if skip_preface[0]:
        if len(buf) < len(PREFACE):
            return out
        del buf[:len(PREFACE)]
        skip_preface[0] = False
    while len(buf) >= 9:
        length = int.from_bytes(buf[0:3], 'big')
        if len(buf) < 9 + length:
            break
        ftype, flags = buf[3], buf[4]
        sid = struct.unpack('>I', bytes(buf[5:9]))[0] & 0x7fffffff
        out.append((ftype, flags, sid, bytes(buf[9:9 + length])))
        del buf[:9 + length]
    return out


def unpad(flags, payload, prio):
    if flags & PADDED:
        pad = payload[0]
        payload = payload[1:len(payload) - pad]
    if prio and flags & PRIORITY:
        payload = payload[5:]
    return payload


def client_side(conn, frame, state):
    """The client's frames: the path of each stream it opens."""
    ftype, flags, sid, payload = frame
    if ftype == HEADERS:
        state['sid'] = sid
        state['block'] = unpad(flags, payload, True)
    elif ftype == CONTINUATION and state.get('sid') == sid:
        state['block'] += payload
    else:
        return
    if not flags & END_HEADERS:
        return
    path = ''
    for name, value in conn.dec.decode(state.pop('block')):
        if name == ':path':
            path = value
    state.pop('sid')
    if path:
        with conn.lock:
            conn.paths[sid] = [path, bytearray(), False]


def reply_line(path, msg):
    if path == KV + 'Range':
        return 'range %d %d %d' % range_response(msg)
    if path == KV + 'Txn':
        return 'txn %d %d %d' % txn_response(msg)
    return 'other ' + path


def server_side(conn, frame):
    """The server's DATA: the first gRPC message of each reply."""
    ftype, flags, sid, payload = frame
    with conn.lock:
        st = conn.paths.get(sid)
        if st and flags & END_STREAM:
            del conn.paths[sid]
    if ftype != DATA or not st or st[2] or not st[0].startswith(KV):
        return
    buf = st[1]
    buf += unpad(flags, payload, False)
    if len(buf) < 5:
        return
    if buf[0] != 0:
        st[2] = True
        conn.log.write('error compressed reply of ' + st[0])
        return
    n = int.from_bytes(buf[1:5], 'big')
    if len(buf) < 5 + n:
        return
    st[2] = True
    try:
        line = reply_line(st[0], memoryview(buf)[5:5 + n])
    except BadReply as e:
        line = 'error %s: %s' % (st[0], e)
    conn.log.write(line)
    st[1] = bytearray()


def pump(src, dst, conn, to_server):
    buf = bytearray()
    preface = [to_server]
    state = {}
    try:
        while True:
            d = src.recv(1 << 16)
            if not d:
                break
            buf += d
            # read before relaying: the path is known before the server
            # can answer, the line written before the client has it all
            for f in frames(buf, preface):
                if to_server:
                    client_side(conn, f, state)
                else:
                    server_side(conn, f)
            dst.sendall(d)
    except (OSError, hpack.HPACKError) as e:
        if not isinstance(e, OSError):
            conn.log.write('error header block: %s' % e)
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    if len(sys.argv) < 3:
        sys.exit('usage: grpc-count-proxy.py TARGET_PORT LOG '
                 '[--lifetime SECONDS]')
    target, log = int(sys.argv[1]), Log(sys.argv[2])
    lifetime = 900
    if len(sys.argv) == 5 and sys.argv[3] == '--lifetime':
        lifetime = int(sys.argv[4])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGALRM, lambda *_: sys.exit(0))
    signal.alarm(lifetime)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('127.0.0.1', 0))
    ls.listen(16)
    print(ls.getsockname()[1], flush=True)
    while True:
        c, _ = ls.accept()
        u = socket.create_connection(('127.0.0.1', target))
        for s in (c, u):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Conn(log)
        for a, b, up in ((c, u, True), (u, c, False)):
            threading.Thread(target=pump, args=(a, b, conn, up),
                             daemon=True).start()


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:
        pass
