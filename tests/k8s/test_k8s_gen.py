#!/usr/bin/env python3
#
# tests/k8s/test_k8s_gen.py - helper/k8s_gen.py on a small Go tree of its own
#
#   test_k8s_gen.py GEN
#
# Writes a tree shaped as Debian's gocode (k8s.io/api/demo/v1 and the bits
# of k8s.io/apimachinery it uses) into a temporary directory, runs the
# generator GEN on it and checks the tables it writes: Go's field order,
# field numbers, omitempty, inline, pointers, slices, maps, named types,
# the special types, a named []string with a message of its own, kinds
# (sorted, the meta kinds of metav1.AddToGroupVersion), and that a type
# it cannot read fails the generation, named.  Speaks TAP.

import os
import re
import subprocess
import sys
import tempfile

META = '''package v1

type TypeMeta struct {
	Kind string `json:"kind,omitempty" protobuf:"bytes,1,opt,name=kind"`
	APIVersion string `json:"apiVersion,omitempty" protobuf:"bytes,2,opt,name=apiVersion"`
}

type ObjectMeta struct {
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	CreationTimestamp Time `json:"creationTimestamp,omitempty" protobuf:"bytes,8,opt,name=creationTimestamp"`
}

type Time struct {
	Time int64 `protobuf:"-"`
}

type Status struct {
	TypeMeta `json:",inline"`
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
}

type ListOptions struct {
	TypeMeta `json:",inline"`
	Limit int64 `json:"limit,omitempty" protobuf:"varint,7,opt,name=limit"`
}

type WatchEvent struct {
	Type string `json:"type" protobuf:"bytes,1,opt,name=type"`
}
'''

META_REGISTER = '''package v1

var optionsTypes = []runtime.Object{
	&ListOptions{},
}

func AddToGroupVersion(scheme *runtime.Scheme, groupVersion schema.GroupVersion) {
	scheme.AddUnversionedTypes(Unversioned,
		&Status{},
	)
}
'''

DEMO = '''package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Widget is a kind.
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// comments are skipped
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec WidgetSpec `json:"spec" protobuf:"bytes,3,opt,name=spec"`
	Port intstr.IntOrString `json:"port" protobuf:"bytes,2,opt,name=port"`
}

type WidgetSpec struct {
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	Mode Mode `json:"mode" protobuf:"bytes,2,opt,name=mode,casttype=Mode"`
	Parts []Part `json:"parts,omitempty" protobuf:"bytes,3,rep,name=parts"`
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,4,rep,name=labels"`
	Extra map[string]ExtraValue `json:"extra,omitempty" protobuf:"bytes,5,rep,name=extra"`
	Data []byte `json:"data,omitempty" protobuf:"bytes,6,opt,name=data"`
	Handler `json:",inline" protobuf:"bytes,7,opt,name=handler"`
	internal string
}

type Mode string

type ExtraValue []string

type Part struct {
	On bool `json:"on" protobuf:"varint,1,opt,name=on"`
}

type Handler struct {
	Path string `json:"path,omitempty" protobuf:"bytes,1,opt,name=path"`
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	Items []Widget `json:"items" protobuf:"bytes,2,rep,name=items"`
}
'''

DEMO_PROTO = '''syntax = "proto2";
message ExtraValue {
  repeated string items = 1;
}
message Widget {
}
'''

DEMO_REGISTER = '''package v1

const GroupName = "demo.example.com"

var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&WidgetList{},
		&Widget{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
'''

INTSTR = '''package intstr

type IntOrString struct {
	Type int64 `protobuf:"varint,1,opt,name=type,casttype=Type"`
}
'''

n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    print('%sok %d - %s' % ('' if cond else 'not ', n, what))
    if not cond:
        failed += 1


def write(root, path, text):
    path = os.path.join(root, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def tree(root, demo=DEMO):
    write(root, 'k8s.io/apimachinery/pkg/apis/meta/v1/types.go', META)
    write(root, 'k8s.io/apimachinery/pkg/apis/meta/v1/register.go',
          META_REGISTER)
    write(root, 'k8s.io/apimachinery/pkg/util/intstr/intstr.go', INTSTR)
    write(root, 'k8s.io/api/demo/v1/types.go', demo)
    write(root, 'k8s.io/api/demo/v1/generated.proto', DEMO_PROTO)
    write(root, 'k8s.io/api/demo/v1/register.go', DEMO_REGISTER)


def generate(gen, root):
    out = os.path.join(root, 'out.c')
    r = subprocess.run([sys.executable, gen, root, out],
                       capture_output=True, text=True)
    text = ''
    if r.returncode == 0:
        with open(out) as f:
            text = f.read()
    return r, text


def messages(text):
    """{name: [field rows]} from the generated tables."""
    fields = re.findall(r'^\t\{ ("[^"]*", \d+, K8S_T_\w+, [^,]+, -?\d+) \},$',
                        text, re.M)
    msgs = {}
    for name, first, count, _, _ in re.findall(
            r'^\t\{ "([^"]+)", (\d+), (\d+), (\d+), (\d+) \},$', text, re.M):
        msgs[name] = fields[int(first):int(first) + int(count)]
    return msgs


def main(gen):
    with tempfile.TemporaryDirectory() as root:
        tree(root)
        r, text = generate(gen, root)
        ok(r.returncode == 0, 'generates from a small tree: ' + r.stderr.strip())
        msgs = messages(text)
        widget = msgs.get('k8s.io/api/demo/v1.Widget', [])
        ok([f.split(',')[0] for f in widget] ==
           ['"TypeMeta"', '"metadata"', '"spec"', '"port"'],
           "Widget's fields in Go's order: %s" % widget)
        ok(any(f.startswith('"TypeMeta", 0, K8S_T_MESSAGE, K8S_F_INLINE')
               for f in widget), 'TypeMeta: inline, not on the wire')
        ok('"metadata", 1, K8S_T_MESSAGE, K8S_F_OMITEMPTY' in ' '.join(widget),
           'an embedded struct with a JSON name is not inline')
        ok('"port", 2, K8S_T_INTSTR, 0, -1' in widget,
           'intstr.IntOrString is a special type')
        spec = msgs.get('k8s.io/api/demo/v1.WidgetSpec', [])
        want = [
            '"replicas", 1, K8S_T_INT32, K8S_F_OMITEMPTY | K8S_F_POINTER, -1',
            '"mode", 2, K8S_T_STRING, 0, -1',
            '"labels", 4, K8S_T_STRING, K8S_F_OMITEMPTY | K8S_F_MAP, -1',
            '"extra", 5, K8S_T_STRLIST, K8S_F_OMITEMPTY | K8S_F_MAP, -1',
            '"data", 6, K8S_T_BYTES, K8S_F_OMITEMPTY, -1',
        ]
        for w in want:
            ok(w in spec, 'WidgetSpec has %s' % w)
        ok(any(f.startswith('"parts", 3, K8S_T_MESSAGE, K8S_F_OMITEMPTY | '
                            'K8S_F_REPEATED') for f in spec),
           'a slice of structs')
        ok(any(f.startswith('"Handler", 7, K8S_T_MESSAGE, K8S_F_INLINE')
               for f in spec), 'an inline struct on the wire')
        ok(not any('internal' in f for f in spec),
           'unexported fields are left out')
        meta = msgs.get('k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta', [])
        ok('"creationTimestamp", 8, K8S_T_TIME, K8S_F_OMITEMPTY, -1' in meta,
           'metav1.Time is a special type')
        wire = re.search(r'k8s_wire_order\[\] = \{\n(.*?)\};', text, re.S)
        ok(wire is not None, 'a wire order table')
        kinds = re.findall(r'^\t\{ "([^"]+)", "([^"]+)", \d+ \},$', text, re.M)
        ok(kinds == sorted(kinds, key=lambda k: (k[0].encode(),
                                                 k[1].encode())),
           'kinds sorted for bsearch')
        ok(set(kinds) == {('demo.example.com/v1', 'Widget'),
                          ('demo.example.com/v1', 'WidgetList'),
                          ('demo.example.com/v1', 'WatchEvent'),
                          ('demo.example.com/v1', 'ListOptions'),
                          ('v1', 'Status')},
           'the kinds, and those of AddToGroupVersion: %s' % kinds)
    with tempfile.TemporaryDirectory() as root:
        tree(root, DEMO.replace('Port intstr.IntOrString',
                                'Port Unknown'))
        r, _ = generate(gen, root)
        ok(r.returncode != 0 and "unknown type 'Unknown'" in r.stderr,
           'an unknown type fails, named: ' + r.stderr.strip())
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
