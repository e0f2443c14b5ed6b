#!/usr/bin/env python3
"""tests/lib/layers.py - checks that calls between source files go down

Usage: layers.py SRCDIR [--ctags PATH] [--graph]

Lists each file's functions with universal-ctags, finds which other files
name them (a call, or a function pointer taken), and checks, for fs/,
helper/ and mount/:

  - every .c file has a place in LAYERS below;
  - no file names a function of a file of a higher layer (a row further
    down the table), unless KNOWN lists that call as one still to undo;
  - no files of one row call each other in a circle;
  - only the files of REPLIERS answer the kernel (fuse_reply_*);
  - no file is over MAX_LINES lines, no function over MAX_FUNC lines.

A KNOWN entry that no longer happens fails too, so that the list only
shrinks.  Speaks TAP, one case per check.  What it cannot see: calls
through macros that paste names, and a static function of one file that
shares its name with another file's (ctags' file-local ones are skipped).
With --graph it prints every edge between files, lowest layer first.
"""

import os
import re
import subprocess
import sys

CTAGS = 'ctags'
MAX_LINES = 1000
MAX_FUNC = 120

# Bottom first.  Each row is a layer; a file may call the files of the
# rows above it in the list (lower layers) and, without a circle, those of
# its own row.
LAYERS = {
    'helper': [
        ['errors', 'kv', 'thread'],
        # the Kubernetes codec, which knows no store
        ['k8s_buf'],
        ['k8s_pb', 'k8s_time', 'k8s_quantity', 'k8s_json'],
        ['k8s_pb_dec', 'k8s_pb_enc', 'k8s_yaml'],
        ['k8s_codec'],
        ['transport_xfer'],
        ['transport'],
        ['grpc_frame', 'etcd3_pb', 'etcd3_pb_req', 'bbolt'],
        ['snapshot'],
        ['grpc_transport'],
        ['grpc_call'],
        ['grpc_stream'],
        ['endpoint', 'object', 'store_split', 'store_stats'],
        ['store_members'],
        ['store'],
        ['store_settle'],
        ['store_txn', 'store_update', 'store_list', 'store_lease',
         'store_history'],
        ['etcd2_codec'],
        ['etcd3_grpc_watch', 'etcd2_watch'],
        ['etcd3_grpc', 'etcd2', 'store_snapshot'],
    ],
    'fs': [
        ['names', 'temp', 'codec_run', 'echo_proc', 'errno_map', 'inval'],
        ['tree', 'node_times'],
        ['kernel'],
        ['seen', 'inflight'],
        ['live'],
        ['echo_plan'],
        ['echo'],
        ['pins', 'codec', 'dirmove'],
        ['commit'],
        ['handle'],
        ['quorum'],
        ['gate'],
        ['connect'],
        ['attr', 'dir', 'file', 'move', 'ttl', 'history', 'stats'],
        ['xattr', 'statfs'],
        ['fs'],
    ],
    'mount': [
        ['log', 'notify'],
        ['opts', 'codec_opts'],
        ['setup'],
        ['main'],
    ],
}

# Calls that still go up, to undo (issue 23): (caller file, function).
KNOWN = set()

# The files that may call fuse_reply_*: the FUSE operations, and gate.c,
# which wraps their table (its refusals, and the __wrap_ replies).
REPLIERS = {
    'fs': {'gate', 'attr', 'dir', 'file', 'move', 'ttl', 'history', 'stats',
           'xattr', 'statfs', 'fs'},
}


def strip_c(text):
    """The text without comments, strings and character constants."""
    pat = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'
                     r"'(?:\\.|[^'\\\n])*'", re.S)
    return pat.sub(lambda m: '\n' * m.group(0).count('\n') if
                   m.group(0)[0] == '/' else '""', text)


def functions(path):
    """{name: (first line, last line)} of @path's external functions."""
    out = subprocess.run([CTAGS, '--output-format=u-ctags',
                          '--fields=+neKZ', '--kinds-C=f', '-f', '-', path],
                         check=True, capture_output=True, text=True).stdout
    funcs = {}
    for line in out.splitlines():
        if line.startswith('!'):
            continue
        cols = line.split('\t')
        fields = dict(c.split(':', 1) for c in cols[3:] if ':' in c)
        if 'file' in fields:    # static
            continue
        if 'line' in fields and 'end' in fields:
            funcs[cols[0]] = (int(fields['line']), int(fields['end']))
    return funcs


def long_functions(path):
    """[(name, lines)] of every function of @path over MAX_FUNC lines."""
    out = subprocess.run([CTAGS, '--output-format=u-ctags',
                          '--fields=+neKZ', '--kinds-C=f', '-f', '-', path],
                         check=True, capture_output=True, text=True).stdout
    long = []
    for line in out.splitlines():
        cols = line.split('\t')
        fields = dict(c.split(':', 1) for c in cols[3:] if ':' in c)
        if 'line' in fields and 'end' in fields:
            n = int(fields['end']) - int(fields['line']) + 1
            if n > MAX_FUNC:
                long.append((cols[0], n))
    return long


def circles(nodes, edges):
    """The strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    global CTAGS
    src = sys.argv[1]
    graph = '--graph' in sys.argv[2:]
    if '--ctags' in sys.argv[2:]:
        CTAGS = sys.argv[sys.argv.index('--ctags') + 1]
    results = []
    used_known = set()
    all_edges = []

    for d, rows in LAYERS.items():
        rank = {}
        for i, row in enumerate(rows):
            for stem in row:
                rank[stem] = i
        files = sorted(f[:-2] for f in os.listdir(os.path.join(src, d))
                       if f.endswith('.c'))
        missing = [f for f in files if f not in rank]
        results.append((not missing, '%s/: every file has a layer%s' %
                        (d, ': not ' + ', '.join(missing) if missing else '')))
        gone = [s for s in rank if s not in files]
        results.append((not gone, '%s/: every layer file exists%s' %
                        (d, ': not ' + ', '.join(gone) if gone else '')))

        owner = {}
        for f in files:
            for name in functions(os.path.join(src, d, f + '.c')):
                owner[name] = f
        up, same, replies = [], {}, []
        for f in files:
            path = os.path.join(src, d, f + '.c')
            with open(path, encoding='utf-8', errors='replace') as fp:
                text = strip_c(fp.read())
            if (f not in REPLIERS.get(d, ()) and
                    re.search(r'\bfuse_reply_\w+\s*\(', text)):
                replies.append(f)
            called = {}
            # not a struct's tag nor a member's name
            for m in re.finditer(r'(?<!struct )(?<!union )(?<!enum )'
                                 r'(?<!\.)(?<!->)\b[A-Za-z_]\w*\b', text):
                g = owner.get(m.group(0))
                if g is None or g == f:
                    continue
                called.setdefault(g, set()).add(m.group(0))
            for g, names in sorted(called.items()):
                rf, rg = rank.get(f, -1), rank.get(g, -1)
                all_edges.append((d, rf, f, g, sorted(names)))
                if rf < 0 or rg < 0:
                    continue
                if rg > rf:
                    for n in sorted(names):
                        if (d + '/' + f, n) in KNOWN:
                            used_known.add((d + '/' + f, n))
                        else:
                            up.append('%s -> %s (%s)' % (f, g, n))
                elif rg == rf:
                    same.setdefault(f, set()).add(g)
        results.append((not up, '%s/: no call goes up a layer%s' %
                        (d, ''.join('\n#   ' + u for u in up))))
        results.append((not replies, '%s/: only the operations reply%s' %
                        (d, ': not ' + ', '.join(replies) if replies
                         else '')))
        circ = circles(files, same)
        results.append((not circ, '%s/: no circle of files in a layer%s' %
                        (d, ''.join('\n#   ' + ' '.join(c) for c in circ))))

        big, longf = [], []
        for f in sorted(os.listdir(os.path.join(src, d))):
            if not f.endswith(('.c', '.h')):
                continue
            path = os.path.join(src, d, f)
            with open(path, encoding='utf-8', errors='replace') as fp:
                n = sum(1 for _ in fp)
            if n > MAX_LINES:
                big.append('%s: %d lines' % (f, n))
            if f.endswith('.c'):
                longf += ['%s: %s, %d lines' % (f, name, k)
                          for name, k in long_functions(path)]
        results.append((not big, '%s/: no file over %d lines%s' %
                        (d, MAX_LINES, ''.join('\n#   ' + b for b in big))))
        results.append((not longf, '%s/: no function over %d lines%s' %
                        (d, MAX_FUNC, ''.join('\n#   ' + b for b in longf))))

    stale = sorted(KNOWN - used_known)
    results.append((not stale, 'every known upward call still happens%s' %
                    ''.join('\n#   %s: %s (remove it from KNOWN)' % s
                            for s in stale)))

    if graph:
        for d, rf, f, g, names in sorted(all_edges):
            print('# %s/%s -> %s: %s' % (d, f, g, ' '.join(names)))
    print('1..%d' % len(results))
    failed = 0
    for i, (ok, what) in enumerate(results, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
        failed += not ok
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
