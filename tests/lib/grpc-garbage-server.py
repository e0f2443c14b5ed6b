#!/usr/bin/python3
#
# tests/lib/grpc-garbage-server.py - a hostile gRPC server for the store
# tests
#
#   grpc-garbage-server.py MODE [--size BYTES] [--lifetime SECONDS]
#
# Listens on a free port of 127.0.0.1, prints the port on a line of its
# own on stdout, speaks HTTP/2 without TLS (what etcdfs's gRPC transport
# opens with "prior knowledge") and answers the first gRPC message of
# every stream, whatever its path, the way MODE says, so a test can check
# that the store reports a clear error instead of crashing, hanging or
# calling a write's outcome unknown.  Stops on SIGTERM or SIGINT, and by
# itself after --lifetime seconds (default 900).  It does not speak TLS.
# It needs Debian's python3-h2 (hence /usr/bin/python3, not the first
# python3 of PATH).
#
# Modes (a "reply" is a RangeResponse unless said otherwise):
#   notproto     one message that is not protobuf, grpc-status 0
#   truncated    a reply cut inside a key-value, in a frame of that size
#   shortframe   a frame whose length prefix promises more than is sent,
#                then grpc-status 0
#   wiretype     a reply whose header (field 1) is a varint
#   badkvs       a reply whose kvs (field 2) is a varint
#   badrevision  a reply whose header.revision is length-delimited
#   oversized    a well-formed reply of --size bytes (default 1 MiB)
#   notrailers   a well-formed reply, then the end of the stream without
#                grpc-status
#   error500     HTTP/2 status 500 with an HTML body, no gRPC at all
#   silent       takes the request and never answers it
#   drop         takes the request, then closes the connection (a server
#                that died after it may have applied it)
#   close        closes each connection as soon as it is accepted

import struct
import sys

import h2.config
import h2.connection
import h2.events

import garbage_main


def varint(n):
    out = b''
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    """One protobuf field: @payload an int for varints, bytes else."""
    tag = varint(num << 3 | wire)
    if wire == 0:
        return tag + varint(payload)
    return tag + varint(len(payload)) + payload


# ResponseHeader: cluster_id 1, member_id 2, revision 3, raft_term 4
HEADER = field(1, 0, 1) + field(2, 0, 2) + field(3, 0, 5) + field(4, 0, 2)


def kv(value=b'v'):
    # mvccpb.KeyValue: key 1, create_revision 2, mod_revision 3,
    # version 4, value 5
    return (field(1, 2, b'a') + field(2, 0, 2) + field(3, 0, 5) +
            field(4, 0, 3) + field(5, 2, value))


def range_reply(value=b'v'):
    # RangeResponse: header 1, kvs 2, more 3, count 4
    return field(1, 2, HEADER) + field(2, 2, kv(value)) + field(4, 0, 1)


def frame(msg):
    return b'\0' + struct.pack('>I', len(msg)) + msg


def reply_for(mode, size):
    """(body bytes, trailers or None) of a gRPC reply in @mode."""
    ok = [('grpc-status', '0')]
    if mode == 'notproto':
        return frame(b'\xff\xff\xff\xff this is not protobuf'), ok
    if mode == 'truncated':
        whole = range_reply()
        return frame(whole[:len(whole) - 6]), ok
    if mode == 'shortframe':
        whole = range_reply()
        return b'\0' + struct.pack('>I', len(whole) + 1000) + whole, ok
    if mode == 'wiretype':
        return frame(field(1, 0, 7) + field(2, 2, kv())), ok
    if mode == 'badkvs':
        return frame(field(1, 2, HEADER) + field(2, 0, 1)), ok
    if mode == 'badrevision':
        bad = field(1, 0, 1) + field(3, 2, b'five')
        return frame(field(1, 2, bad) + field(2, 2, kv())), ok
    if mode == 'oversized':
        return frame(range_reply(b'x' * max(1, size))), ok
    if mode == 'notrailers':
        return frame(range_reply()), None
    raise ValueError(mode)


MODES = ['notproto', 'truncated', 'shortframe', 'wiretype', 'badkvs',
         'badrevision', 'oversized', 'notrailers', 'error500', 'silent',
         'drop', 'close']


class Conn:
    def __init__(self, sock, mode, size):
        self.sock = sock
        self.mode = mode
        self.size = size
        cfg = h2.config.H2Configuration(client_side=False,
                                        header_encoding='utf-8')
        self.h2 = h2.connection.H2Connection(config=cfg)
        self.got = {}           # stream id -> request bytes so far
        self.answered = set()
        self.pending = {}       # stream id -> body bytes not yet sent

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def send_body(self, sid):
        """Sends what flow control allows of @sid's pending body."""
        body, trailers = self.pending[sid]
        while body:
            room = min(self.h2.local_flow_control_window(sid),
                       self.h2.max_outbound_frame_size)
            if room <= 0:
                self.pending[sid] = (body, trailers)
                return
            self.h2.send_data(sid, body[:room])
            body = body[room:]
        del self.pending[sid]
        if trailers is None:
            self.h2.end_stream(sid)
        else:
            self.h2.send_headers(sid, trailers, end_stream=True)

    def answer(self, sid):
        self.answered.add(sid)
        if self.mode == 'silent':
            return
        if self.mode == 'drop':
            raise ConnectionAbortedError('dropped')
        if self.mode == 'error500':
            html = b'<html><body><h1>oops</h1></body></html>\n'
            self.h2.send_headers(sid, [(':status', '500'),
                                       ('content-type', 'text/html')])
            self.h2.send_data(sid, html, end_stream=True)
            return
        self.h2.send_headers(sid, [(':status', '200'),
                                   ('content-type', 'application/grpc')])
        self.pending[sid] = reply_for(self.mode, self.size)
        self.send_body(sid)

    def on_data(self, ev):
        self.h2.acknowledge_received_data(ev.flow_controlled_length,
                                          ev.stream_id)
        if ev.stream_id in self.answered:
            return
        buf = self.got.get(ev.stream_id, b'') + ev.data
        self.got[ev.stream_id] = buf
        if len(buf) >= 5 and len(buf) >= 5 + struct.unpack('>I',
                                                           buf[1:5])[0]:
            self.answer(ev.stream_id)

    def run(self):
        self.h2.initiate_connection()
        self.flush()
        while True:
            data = self.sock.recv(65536)
            if not data:
                return
            for ev in self.h2.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    self.on_data(ev)
                elif isinstance(ev, h2.events.WindowUpdated):
                    for sid in list(self.pending):
                        self.send_body(sid)
                elif isinstance(ev, h2.events.StreamReset):
                    self.pending.pop(ev.stream_id, None)
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    self.flush()
                    return
            self.flush()


def serve(sock, mode, size):
    try:
        Conn(sock, mode, size).run()
    except Exception:       # a hostile server does not care why
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


def main():
    garbage_main.run('a hostile gRPC server', MODES, serve)


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
