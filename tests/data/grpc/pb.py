#!/usr/bin/env python3
#
# tests/data/grpc/pb.py - encodes the few etcd gRPC requests that
# tests/data/grpc/capture.sh sends, as gRPC frames on stdout
#
#   pb.py KIND [NAME=VALUE...]
#
# A protobuf encoder of the wire format alone (varints, length-delimited
# fields), with etcd's field numbers from helper/proto/rpc.proto; values
# are Python literals where a field is not a string ("limit=1",
# "count_only=True", "value=b'\\x00'").  It cannot decode anything.

import ast
import struct
import sys


def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, value):
    """One field: ints and bools as varints, bytes/str/messages by length."""
    if isinstance(value, bool):
        return varint(num << 3) + varint(int(value)) if value else b""
    if isinstance(value, int):
        return varint(num << 3) + varint(value) if value else b""
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value


def msg(*fields):
    return b"".join(field(n, v) for n, v in fields if v is not None)


def b(x):
    """A bytes field: numbers given on the command line are text too."""
    return str(x) if isinstance(x, int) and not isinstance(x, bool) else x


def rng(a):
    return msg((1, b(a.get("key"))), (2, b(a.get("range_end"))),
               (3, a.get("limit", 0)), (4, a.get("revision", 0)),
               (7, a.get("serializable", False)),
               (8, a.get("keys_only", False)),
               (9, a.get("count_only", False)))


def put(a):
    value = b(a.get("value", b""))
    if "value_size" in a:
        value = b"x" * a["value_size"]
    return msg((1, b(a.get("key"))), (2, value),
               (3, a.get("lease", 0)), (4, a.get("prev_kv", False)),
               (6, a.get("ignore_lease", False)))


def delete(a):
    return msg((1, a.get("key")), (2, a.get("range_end")),
               (3, a.get("prev_kv", False)))


def compare(key, target, rev):
    # result EQUAL (0); target MOD (2) or CREATE (1); mod_revision 6,
    # create_revision 5; a zero revision must still be sent
    num = 6 if target == 2 else 5
    return msg((2, target), (3, key)) + varint(num << 3) + varint(rev)


def txn(a):
    """cmp=[(key, 'MOD'|'CREATE', rev)], ok/ko=[('put'|'del'|'range', {..})]"""
    ops = {"range": (1, rng), "put": (2, put), "del": (3, delete)}
    out = b""
    for key, target, rev in a.get("cmp", []):
        out += field(1, compare(key, 2 if target == "MOD" else 1, rev))
    for branch, num in (("ok", 2), ("ko", 3)):
        for kind, args in a.get(branch, []):
            f, enc = ops[kind]
            out += field(num, field(f, enc(args)))
    return out


def watch(a):
    if a.get("progress"):
        return field(3, b"")
    if "cancel" in a:
        return field(2, msg((1, a["cancel"])))
    return field(1, msg((1, a.get("key")), (2, a.get("range_end")),
                        (3, a.get("start_revision", 0)),
                        (4, a.get("progress_notify", False)),
                        (6, a.get("prev_kv", False))))


KINDS = {
    "range": rng,
    "put": put,
    "delete": delete,
    "txn": txn,
    "watch": watch,
    "lease_grant": lambda a: msg((1, a.get("ttl", 0))),
    "lease_id": lambda a: msg((1, a.get("id", 0))),
    "members": lambda a: msg((1, a.get("linearizable", False))),
    "empty": lambda a: b"",
    "auth": lambda a: msg((1, a.get("name")), (2, a.get("password"))),
}


def main():
    args = {}
    for kv in sys.argv[2:]:
        name, _, value = kv.partition("=")
        try:
            args[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            args[name] = value
    body = KINDS[sys.argv[1]](args)
    sys.stdout.buffer.write(b"\0" + struct.pack(">I", len(body)) + body)


if __name__ == "__main__":
    main()
