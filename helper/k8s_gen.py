#!/usr/bin/env python3
#
# helper/k8s_gen.py - the k8s codec's schema, from Kubernetes' own Go types
#
#   k8s_gen.py SRC OUT.c
#
# SRC is a Go source tree holding k8s.io/api and k8s.io/apimachinery (the
# tree Debian's golang-k8s-api-dev and golang-k8s-apimachinery-dev unpack
# under usr/share/gocode/src).  For every package of k8s.io/api that
# registers kinds (register.go's addKnownTypes), it reads the structs of the
# package, and those they use, from their Go source: each field's struct
# tags (protobuf: wire type and number; json: name, omitempty, inline) and
# its Go type (pointer, slice, map, the element's type).  It writes the
# tables of helper/k8s_schema.h to OUT.c.
#
# What it cannot do: read Go in general.  It knows the shapes the API types
# are written in (one field a line, struct tags in backquotes, named types
# of one line) and fails, naming the type, on anything else.  The types
# whose encodings Kubernetes writes by hand (metav1.Time and the others of
# SPECIAL) are named here, not read.

import os
import re
import sys

SPECIAL = {
    'k8s.io/apimachinery/pkg/apis/meta/v1.Time': 'K8S_T_TIME',
    'k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime': 'K8S_T_MICROTIME',
    'k8s.io/apimachinery/pkg/apis/meta/v1.Duration': 'K8S_T_DURATION',
    'k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1': 'K8S_T_FIELDSV1',
    'k8s.io/apimachinery/pkg/api/resource.Quantity': 'K8S_T_QUANTITY',
    'k8s.io/apimachinery/pkg/util/intstr.IntOrString': 'K8S_T_INTSTR',
    'k8s.io/apimachinery/pkg/runtime.RawExtension': 'K8S_T_RAWEXT',
}
SCALAR = {
    'string': 'K8S_T_STRING',
    'bool': 'K8S_T_BOOL',
    'int32': 'K8S_T_INT32',
    'int64': 'K8S_T_INT64',
}


class GenError(Exception):
    pass


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    out = []
    for line in text.split('\n'):
        # a comment starts at // outside a backquoted tag or a string
        q = None
        for i, c in enumerate(line):
            if q:
                if c == q:
                    q = None
            elif c in '`"':
                q = c
            elif line.startswith('//', i):
                line = line[:i]
                break
        out.append(line)
    return '\n'.join(out)


class Package:
    def __init__(self, src, path):
        self.path = path
        self.dir = os.path.join(src, path)
        self.imports = {}
        self.structs = {}   # name -> [field lines]
        self.named = {}     # name -> type expression
        self.proto_messages = set()
        if not os.path.isdir(self.dir):
            raise GenError("no package '%s'" % path)
        for name in sorted(os.listdir(self.dir)):
            if (not name.endswith('.go') or name.endswith('_test.go') or
                    name.startswith('zz_generated') or
                    name == 'generated.pb.go'):
                continue
            with open(os.path.join(self.dir, name)) as f:
                self.read(strip_comments(f.read()))
        proto = os.path.join(self.dir, 'generated.proto')
        if os.path.exists(proto):
            with open(proto) as f:
                self.proto_messages = set(
                    re.findall(r'^message (\w+) \{', f.read(), re.M))

    def read(self, text):
        for m in re.finditer(r'^import\s*\((.*?)\)', text, re.M | re.S):
            for line in m.group(1).split('\n'):
                self.add_import(line)
        for m in re.finditer(r'^import\s+([^(\n].*)$', text, re.M):
            self.add_import(m.group(1))
        lines = text.split('\n')
        i = 0
        group = False
        while i < len(lines):
            line = lines[i].strip()
            i += 1
            if line == 'type (':
                group = True
                continue
            if group and line == ')':
                group = False
                continue
            if group and line and not line.startswith('type '):
                line = 'type ' + line
            m = re.match(r'type (\w+) struct\s*\{\s*(\}?)$', line)
            if m:
                body = []
                if not m.group(2):
                    while lines[i].strip() != '}':
                        if lines[i].strip():
                            body.append(lines[i].strip())
                        i += 1
                    i += 1
                self.structs[m.group(1)] = body
                continue
            m = re.match(r'type (\w+)\s+(=\s*)?([\w.\[\]*]+)$', line)
            if m:
                self.named[m.group(1)] = m.group(3)

    def add_import(self, line):
        m = re.match(r'\s*(\w+\s+)?"([^"]+)"', line)
        if not m:
            return
        path = m.group(2)
        alias = m.group(1).strip() if m.group(1) else path.split('/')[-1]
        self.imports[alias] = path


def parse_tag(tag, key):
    m = re.search(key + r':"([^"]*)"', tag)
    return m.group(1) if m else None


class Schema:
    def __init__(self, src):
        self.src = src
        self.packages = {}
        self.messages = []      # [qualified name, fields]
        self.index = {}         # qualified name -> message index
        self.kinds = []         # (apiVersion, kind, message index)

    def package(self, path):
        if path not in self.packages:
            self.packages[path] = Package(self.src, path)
        return self.packages[path]

    def resolve(self, pkg, expr, where):
        """A Go type expression as (kind C name, message index or -1,
        shape) where shape lists 'pointer', 'repeated', 'map'."""
        if expr.startswith('*'):
            t = self.resolve(pkg, expr[1:], where)
            if t[2]:
                raise GenError("%s: pointer to %s" % (where, expr))
            return (t[0], t[1], ['pointer'])
        if expr == '[]byte':
            return ('K8S_T_BYTES', -1, [])
        if expr.startswith('[]'):
            t = self.resolve(pkg, expr[2:], where)
            if t[2]:
                raise GenError("%s: slice of %s" % (where, expr))
            return (t[0], t[1], ['repeated'])
        m = re.match(r'map\[([\w.]+)\](.+)$', expr)
        if m:
            k = self.resolve(pkg, m.group(1), where)
            if k[0] != 'K8S_T_STRING' or k[2]:
                raise GenError("%s: map key %s" % (where, m.group(1)))
            t = self.resolve(pkg, m.group(2), where)
            if t[2] and t[2] != ['repeated'] or t[0] == 'K8S_T_BYTES' and t[2]:
                raise GenError("%s: map value %s" % (where, m.group(2)))
            if t[2]:
                raise GenError("%s: map of slices %s" % (where, expr))
            return (t[0], t[1], ['map'])
        if expr in SCALAR:
            return (SCALAR[expr], -1, [])
        if '.' in expr:
            alias, name = expr.split('.', 1)
            if alias not in pkg.imports:
                raise GenError("%s: unknown package '%s'" % (where, alias))
            return self.resolve(self.package(pkg.imports[alias]), name,
                                where)
        qual = pkg.path + '.' + expr
        if qual in SPECIAL:
            return (SPECIAL[qual], -1, [])
        if expr in pkg.structs:
            return ('K8S_T_MESSAGE', self.message(pkg, expr), [])
        if expr in pkg.named:
            under = pkg.named[expr]
            if expr in pkg.proto_messages and under == '[]string':
                return ('K8S_T_STRLIST', -1, [])
            return self.resolve(pkg, under, where)
        raise GenError("%s: unknown type '%s' in '%s'" % (where, expr,
                                                          pkg.path))

    def message(self, pkg, name):
        qual = pkg.path + '.' + name
        if qual in self.index:
            return self.index[qual]
        idx = len(self.messages)
        self.index[qual] = idx
        entry = [qual, None]
        self.messages.append(entry)
        fields = []
        for line in pkg.structs[name]:
            m = re.match(r'^(\w+\s+)?([\w.\[\]*]+)\s*(`[^`]*`)?$', line)
            if not m or ',' in line.split('`')[0]:
                raise GenError("%s: cannot read field '%s'" % (qual, line))
            goname = m.group(1).strip() if m.group(1) else None
            expr = m.group(2)
            tag = m.group(3) or ''
            where = qual + '.' + (goname or expr)
            if goname is None:
                goname = expr.lstrip('*').split('.')[-1]
                anonymous = True
            else:
                anonymous = False
            if not goname[0].isupper():
                continue
            js = parse_tag(tag, 'json')
            if js == '-':
                continue
            jparts = (js or '').split(',')
            jname = jparts[0]
            opts = jparts[1:]
            inline = anonymous and jname == ''
            if not jname:
                jname = goname
            pb = parse_tag(tag, 'protobuf')
            number = 0
            if pb and pb != '-':
                p = pb.split(',')
                number = int(p[1])
            kind, msg, shape = self.resolve(pkg, expr, where)
            flags = []
            if 'omitempty' in opts:
                flags.append('K8S_F_OMITEMPTY')
            if inline:
                if kind != 'K8S_T_MESSAGE' or shape:
                    raise GenError("%s: inline %s" % (where, expr))
                flags.append('K8S_F_INLINE')
            for s in shape:
                flags.append({'pointer': 'K8S_F_POINTER',
                              'repeated': 'K8S_F_REPEATED',
                              'map': 'K8S_F_MAP'}[s])
            fields.append({'json': jname, 'number': number, 'kind': kind,
                           'msg': msg, 'flags': flags, 'go': goname})
        entry[1] = fields
        return idx

    def kinds_of(self, path):
        pkg = self.package(path)
        with open(os.path.join(pkg.dir, 'register.go')) as f:
            text = strip_comments(f.read())
        g = re.search(r'GroupName\s*=\s*"([^"]*)"', text)
        v = re.search(r'SchemeGroupVersion\s*=\s*schema.GroupVersion\{'
                      r'Group:\s*GroupName,\s*Version:\s*"([^"]+)"', text)
        k = re.search(r'func addKnownTypes\(.*?\n\}', text, re.S)
        if not g or not v or not k:
            raise GenError("%s/register.go: no group, version or kinds" %
                           path)
        api_version = (g.group(1) + '/' if g.group(1) else '') + v.group(1)
        for expr in re.findall(r'&([\w.]+)\{\}', k.group(0)):
            self.add_kind(pkg, api_version, expr)
        if re.search(r'metav1\.AddToGroupVersion\(\w+,\s*SchemeGroupVersion\)',
                     k.group(0)):
            self.meta_kinds(pkg, api_version)

    def add_kind(self, pkg, api_version, expr):
        t = self.resolve(pkg, expr, pkg.path + '.' + expr)
        if t[0] != 'K8S_T_MESSAGE' or t[2]:
            raise GenError("%s.%s: a kind that is no struct" %
                           (pkg.path, expr))
        kind = (api_version, expr.split('.')[-1], t[1])
        if kind not in self.kinds:
            self.kinds.append(kind)

    def meta_kinds(self, pkg, api_version):
        """What metav1.AddToGroupVersion registers: WatchEvent and the
        options in the group version, the unversioned kinds in v1."""
        meta = self.package('k8s.io/apimachinery/pkg/apis/meta/v1')
        with open(os.path.join(meta.dir, 'register.go')) as f:
            text = strip_comments(f.read())
        opts = re.search(r'optionsTypes = \[\]runtime\.Object\{(.*?)\}\n',
                         text, re.S)
        unv = re.search(r'AddUnversionedTypes\(Unversioned,(.*?)\)\n', text,
                        re.S)
        if not opts or not unv:
            raise GenError("%s/register.go: no optionsTypes or unversioned "
                           "types" % meta.path)
        self.add_kind(meta, api_version, 'WatchEvent')
        for expr in re.findall(r'&(\w+)\{\}', opts.group(1)):
            self.add_kind(meta, api_version, expr)
        for expr in re.findall(r'&(\w+)\{\}', unv.group(1)):
            self.add_kind(meta, 'v1', expr)


def c_str(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def write(schema, out):
    o = []
    o.append('/* generated by helper/k8s_gen.py: do not edit */')
    o.append('#include "k8s_schema.h"\n')
    fields = []
    firsts = []
    for qual, fl in schema.messages:
        firsts.append(len(fields))
        fields.extend(fl)
    o.append('const struct k8s_field k8s_fields[] = {')
    for f in fields:
        o.append('\t{ %s, %d, %s, %s, %d },' % (
            c_str(f['json']), f['number'], f['kind'],
            ' | '.join(f['flags']) or '0', f['msg']))
    o.append('};\n')
    order = []
    o.append('const struct k8s_message k8s_messages[] = {')
    for i, (qual, fl) in enumerate(schema.messages):
        # the wire order: by field number, fields not on the wire left out
        wire = sorted((f['number'], j) for j, f in enumerate(fl)
                      if f['number'])
        nums = [n for n, _ in wire]
        if len(set(nums)) != len(nums):
            raise GenError("%s: a field number twice" % qual)
        o.append('\t{ %s, %d, %d, %d, %d },' % (c_str(qual), firsts[i],
                                                len(fl), len(order),
                                                len(wire)))
        order.extend(j for _, j in wire)
    o.append('};\n')
    o.append('const uint16_t k8s_wire_order[] = {')
    for i in range(0, len(order), 16):
        o.append('\t' + ', '.join(str(x) for x in order[i:i + 16]) + ',')
    o.append('};\n')
    o.append('const struct k8s_kind k8s_kinds[] = {')
    # sorted as strcmp() sorts, for bsearch()
    for av, kind, msg in sorted(schema.kinds,
                                key=lambda k: (k[0].encode(), k[1].encode())):
        o.append('\t{ %s, %s, %d },' % (c_str(av), c_str(kind), msg))
    o.append('};\n')
    o.append('const size_t k8s_nkinds = %d;' % len(schema.kinds))
    o.append('const size_t k8s_nmessages = %d;' % len(schema.messages))
    out.write('\n'.join(o) + '\n')


def release(src):
    """The release of k8s.io/api in SRC, from Debian's changelog beside
    it (SRC is usr/share/gocode/src), else None."""
    import gzip
    log = os.path.join(src, '../../doc/golang-k8s-api-dev/changelog.Debian.gz')
    try:
        with gzip.open(log, 'rt') as f:
            m = re.match(r'\S+ \((?:\d+:)?([\d.]+)', f.readline())
    except OSError:
        return None
    return m.group(1) if m else None


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: k8s_gen.py SRC OUT.c\n')
        return 2
    src = argv[1]
    schema = Schema(src)
    api = os.path.join(src, 'k8s.io/api')
    version = release(src)
    try:
        if version and tuple(int(x) for x in version.split('.')[:2]) < (0, 32):
            raise GenError("k8s.io/api %s: 0.32 or later is needed" % version)
        for root, dirs, files in sorted(os.walk(api)):
            dirs.sort()
            if 'register.go' in files and 'testdata' not in root:
                schema.kinds_of(os.path.relpath(root, src))
        if not schema.kinds:
            raise GenError("no kinds under '%s'" % api)
    except (GenError, OSError) as e:
        sys.stderr.write('k8s_gen.py: %s\n' % e)
        return 1
    with open(argv[2] + '.tmp', 'w') as out:
        write(schema, out)
        out.write('const char k8s_schema_release[] = %s;\n' %
                  c_str(version or 'unknown'))
    os.replace(argv[2] + '.tmp', argv[2])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
