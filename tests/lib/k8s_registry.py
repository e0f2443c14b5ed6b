#!/usr/bin/env python3
#
# tests/lib/k8s_registry.py - a cluster's worth of Kubernetes objects, as
# the API server keeps them in etcd
#
#   k8s_registry.py [--scale S] [--seed N] [--codec PROG] [--check]
#                   [--endpoint URL | --out DIR | --list]
#
# Makes namespaces, nodes (/registry/minions/NAME), their leases, service
# accounts, config maps, secrets, deployments with their replica sets and
# pods (owner references, managed fields), services
# (/registry/services/specs/NS/NAME), endpoint slices, leases and events,
# each as the JSON Kubernetes' Go types write (two spaces of indent, Go's
# field order), with the fields the API server defaults set as it sets
# them, and with what etcd holds of the metadata: a uid and a
# creationTimestamp, a generation where the API server keeps one, no
# resourceVersion (the API server never stores it).  --scale S (default
# 1: about 300 objects) multiplies the nodes and the application
# namespaces; --seed N (default 1) picks names, images and times, so that
# a scale and a seed always make the same bytes.
#
# With --codec PROG (tools/etcdfs-k8s), every object is encoded in one run
# of `PROG encode-batch` into the protobuf value the API server writes;
# --check then decodes them all in one run of `PROG decode-batch` and
# fails, showing the first difference, unless each gives back its JSON
# byte for byte.  Without --codec the values are the JSON text.
#
# Where they go: --endpoint URL puts each key to that etcd over one HTTP
# connection (tests/lib/fs_put.py); --out DIR writes DIR/registry/...,
# one file a key; --list prints the keys.  It prints the number of
# objects on stderr.  It cannot make custom resources, and its objects'
# status is a snapshot that no controller keeps up to date.
import argparse
import base64
import datetime
import difflib
import http.client
import json
import os
import random
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fs_put import put  # noqa: E402

EPOCH = datetime.datetime(2025, 3, 1, 8, 0, 0, tzinfo=datetime.timezone.utc)
IMAGES = ['nginx:1.27', 'redis:7.2', 'postgres:16', 'ghcr.io/shop/web:2.4.1',
          'ghcr.io/shop/cart:1.9.0', 'ghcr.io/shop/worker:0.14.2',
          'registry.k8s.io/pause:3.10', 'busybox:1.36']
WORDS = ['web', 'cart', 'api', 'worker', 'search', 'auth', 'billing',
         'mailer', 'cache', 'front', 'orders', 'stock']
ALNUM = 'bcdfghjklmnpqrstvwxz2456789'


def gomap(d):
    """A Go map: encoding/json writes its keys sorted, a struct's not."""
    return dict(sorted(d.items()))


def go_json(obj, indent=2):
    """The text Go's encoding/json writes (MarshalIndent with "  ")."""
    s = json.dumps(obj, indent=indent, ensure_ascii=False,
                   separators=(',', ': ') if indent else (',', ':'))
    for c, e in (('&', '\\u0026'), ('<', '\\u003c'), ('>', '\\u003e'),
                 ('\u2028', '\\u2028'), ('\u2029', '\\u2029')):
        s = s.replace(c, e)
    return s


class Cluster:
    def __init__(self, seed, scale):
        self.rng = random.Random(seed)
        self.scale = scale
        self.objects = []        # (key, dict)
        self.clock = 0

    # -- values ----------------------------------------------------------
    def uid(self):
        r = self.rng.getrandbits(128)
        h = '%032x' % r
        return '%s-%s-4%s-%s%s-%s' % (h[:8], h[8:12], h[13:16],
                                       '89ab'[r & 3], h[17:20], h[20:])

    def time(self, step=37, micro=False):
        self.clock += self.rng.randint(1, step)
        t = EPOCH + datetime.timedelta(seconds=self.clock)
        if micro:
            t += datetime.timedelta(microseconds=self.rng.randint(0, 999999))
            return t.strftime('%Y-%m-%dT%H:%M:%S.%fZ')
        return t.strftime('%Y-%m-%dT%H:%M:%SZ')

    def suffix(self, n):
        return ''.join(self.rng.choice(ALNUM) for _ in range(n))

    def add(self, key, obj):
        self.objects.append((key, obj))
        return obj

    # -- metadata --------------------------------------------------------
    def meta(self, name, ns=None, labels=None, annotations=None, owner=None,
             generation=None, managers=(), created=None, gen_name=None):
        m = {'name': name}
        if gen_name:
            m['generateName'] = gen_name
        if ns:
            m['namespace'] = ns
        m['uid'] = self.uid()
        if generation is not None:
            m['generation'] = generation
        m['creationTimestamp'] = created or self.time()
        if labels:
            m['labels'] = gomap(labels)
        if annotations:
            m['annotations'] = gomap(annotations)
        if owner:
            m['ownerReferences'] = [{
                'apiVersion': owner['apiVersion'], 'kind': owner['kind'],
                'name': owner['metadata']['name'],
                'uid': owner['metadata']['uid'],
                'controller': True, 'blockOwnerDeletion': True}]
        mf = []
        for manager, op, api, fields, sub in managers:
            e = {'manager': manager, 'operation': op, 'apiVersion': api,
                 'time': m['creationTimestamp'], 'fieldsType': 'FieldsV1',
                 'fieldsV1': fields}
            if sub:
                e['subresource'] = sub
            mf.append(e)
        if mf:
            m['managedFields'] = mf
        return m

    @staticmethod
    def fields_meta(labels=(), annotations=(), owner=False):
        f = {}
        if annotations:
            f['f:annotations'] = {'.': {}}
            f['f:annotations'].update({'f:' + a: {} for a in annotations})
        if labels:
            f['f:labels'] = {'.': {}}
            f['f:labels'].update({'f:' + k: {} for k in labels})
        if owner:
            f['f:ownerReferences'] = {'.': {}, 'k:{"uid":"%s"}' % owner: {}}
        return {'f:metadata': f}

    # -- kinds -----------------------------------------------------------
    def namespace(self, name):
        labels = {'kubernetes.io/metadata.name': name}
        fields = self.fields_meta(labels)
        return self.add('/registry/namespaces/' + name, {
            'kind': 'Namespace', 'apiVersion': 'v1',
            'metadata': self.meta(name, labels=labels, managers=[
                ('kubectl-create', 'Update', 'v1', fields, None)]),
            'spec': {'finalizers': ['kubernetes']},
            'status': {'phase': 'Active'}})

    def service_account(self, ns, name='default'):
        return self.add('/registry/serviceaccounts/%s/%s' % (ns, name), {
            'kind': 'ServiceAccount', 'apiVersion': 'v1',
            'metadata': self.meta(name, ns)})

    def node(self, name, zone):
        labels = {'beta.kubernetes.io/arch': 'amd64',
                  'beta.kubernetes.io/os': 'linux',
                  'kubernetes.io/arch': 'amd64',
                  'kubernetes.io/hostname': name,
                  'kubernetes.io/os': 'linux',
                  'topology.kubernetes.io/zone': zone}
        annotations = {
            'node.alpha.kubernetes.io/ttl': '0',
            'volumes.kubernetes.io/controller-managed-attach-detach': 'true'}
        fields = self.fields_meta(labels, annotations)
        ip = '10.0.%d.%d' % (self.rng.randint(0, 3), self.rng.randint(2, 250))
        created = self.time()
        t = self.time()
        cond = lambda typ, status, reason, msg: {  # noqa: E731
            'type': typ, 'status': status, 'lastHeartbeatTime': t,
            'lastTransitionTime': created, 'reason': reason, 'message': msg}
        cap = {'cpu': '4', 'ephemeral-storage': '101430960Ki',
               'hugepages-2Mi': '0', 'memory': '16374584Ki', 'pods': '110'}
        alloc = dict(cap, memory='16272184Ki',
                     **{'ephemeral-storage': '93478772582'})
        return self.add('/registry/minions/' + name, {
            'kind': 'Node', 'apiVersion': 'v1',
            'metadata': self.meta(name, labels=labels,
                                  annotations=annotations, created=created,
                                  managers=[('kubelet', 'Update', 'v1',
                                             fields, None)]),
            'spec': {'podCIDR': '10.244.%d.0/24' % self.rng.randint(0, 255),
                     'podCIDRs': ['10.244.%d.0/24' %
                                  self.rng.randint(0, 255)],
                     'providerID': 'kind://docker/kind/' + name},
            'status': {
                'capacity': gomap(cap), 'allocatable': gomap(alloc),
                'conditions': [
                    cond('MemoryPressure', 'False',
                         'KubeletHasSufficientMemory',
                         'kubelet has sufficient memory available'),
                    cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure',
                         'kubelet has no disk pressure'),
                    cond('PIDPressure', 'False', 'KubeletHasSufficientPID',
                         'kubelet has sufficient PID available'),
                    cond('Ready', 'True', 'KubeletReady',
                         'kubelet is posting ready status')],
                'addresses': [{'type': 'InternalIP', 'address': ip},
                              {'type': 'Hostname', 'address': name}],
                'daemonEndpoints': {'kubeletEndpoint': {'Port': 10250}},
                'nodeInfo': {
                    'machineID': '%032x' % self.rng.getrandbits(128),
                    'systemUUID': self.uid(),
                    'bootID': self.uid(),
                    'kernelVersion': '6.1.0-31-amd64',
                    'osImage': 'Debian GNU/Linux 12 (bookworm)',
                    'containerRuntimeVersion': 'containerd://1.7.24',
                    'kubeletVersion': 'v1.32.3',
                    'kubeProxyVersion': 'v1.32.3',
                    'operatingSystem': 'linux',
                    'architecture': 'amd64'},
                'images': [{'names': [i], 'sizeBytes':
                            self.rng.randint(10 ** 6, 10 ** 8)}
                           for i in sorted(self.rng.sample(IMAGES, 3))]}})

    def lease(self, ns, name, holder, duration, created=None):
        return self.add('/registry/leases/%s/%s' % (ns, name), {
            'kind': 'Lease', 'apiVersion': 'coordination.k8s.io/v1',
            'metadata': self.meta(name, ns, created=created),
            'spec': {'holderIdentity': holder,
                     'leaseDurationSeconds': duration,
                     'acquireTime': self.time(micro=True),
                     'renewTime': self.time(micro=True),
                     'leaseTransitions': self.rng.randint(0, 3)}})

    def configmap(self, ns, name, data):
        return self.add('/registry/configmaps/%s/%s' % (ns, name), {
            'kind': 'ConfigMap', 'apiVersion': 'v1',
            'metadata': self.meta(name, ns, managers=[
                ('kubectl-client-side-apply', 'Update', 'v1',
                 {'f:data': {'.': {}, **{'f:' + k: {} for k in data}}},
                 None)]),
            'data': gomap(data)})

    def secret(self, ns, name, data, typ='Opaque'):
        return self.add('/registry/secrets/%s/%s' % (ns, name), {
            'kind': 'Secret', 'apiVersion': 'v1',
            'metadata': self.meta(name, ns),
            'data': {k: base64.b64encode(v).decode()
                     for k, v in sorted(data.items())},
            'type': typ})

    def container(self, name, image, port):
        c = {'name': name, 'image': image}
        if port:
            c['ports'] = [{'name': 'http', 'containerPort': port,
                           'protocol': 'TCP'}]
        c['env'] = [{'name': 'LOG_LEVEL', 'value': 'info'}]
        c['resources'] = {'limits': {'memory': '256Mi'},
                          'requests': {'cpu': '100m', 'memory': '128Mi'}}
        if port:
            c['readinessProbe'] = {
                'httpGet': {'path': '/healthz', 'port': port,
                            'scheme': 'HTTP'},
                'timeoutSeconds': 1, 'periodSeconds': 10,
                'successThreshold': 1, 'failureThreshold': 3}
        c['terminationMessagePath'] = '/dev/termination-log'
        c['terminationMessagePolicy'] = 'File'
        c['imagePullPolicy'] = 'Always' if image.endswith(':latest') \
            else 'IfNotPresent'
        return c

    def pod_spec(self, app, image, port, node=None):
        s = {'containers': [self.container(app, image, port)],
             'restartPolicy': 'Always',
             'terminationGracePeriodSeconds': 30,
             'dnsPolicy': 'ClusterFirst'}
        if node:
            s['serviceAccountName'] = 'default'
            s['serviceAccount'] = 'default'
            s['nodeName'] = node
        s['securityContext'] = {}
        s['schedulerName'] = 'default-scheduler'
        if node:
            s['tolerations'] = [
                {'key': 'node.kubernetes.io/not-ready',
                 'operator': 'Exists', 'effect': 'NoExecute',
                 'tolerationSeconds': 300},
                {'key': 'node.kubernetes.io/unreachable',
                 'operator': 'Exists', 'effect': 'NoExecute',
                 'tolerationSeconds': 300}]
            s['priority'] = 0
            s['enableServiceLinks'] = True
            s['preemptionPolicy'] = 'PreemptLowerPriority'
        return s

    def deployment(self, ns, app, nodes):
        image = self.rng.choice(IMAGES)
        port = self.rng.choice([80, 8080, 6379, 5432])
        replicas = self.rng.randint(1, 3)
        labels = {'app': app}
        tmpl = {'metadata': {'creationTimestamp': None,
                             'labels': gomap(labels)},
                'spec': self.pod_spec(app, image, port)}
        gen = self.rng.randint(1, 4)
        apply_fields = {'f:spec': {'f:replicas': {}, 'f:selector': {},
                                   'f:template': {'f:metadata': {
                                       'f:labels': {'.': {}, 'f:app': {}}}}}}
        d = self.add('/registry/deployments/%s/%s' % (ns, app), {
            'kind': 'Deployment', 'apiVersion': 'apps/v1',
            'metadata': self.meta(app, ns, labels=labels, generation=gen,
                                  annotations={
                                      'deployment.kubernetes.io/revision':
                                      str(gen)},
                                  managers=[
                ('kubectl-client-side-apply', 'Update', 'apps/v1',
                 apply_fields, None),
                ('kube-controller-manager', 'Update', 'apps/v1',
                 {'f:status': {'f:availableReplicas': {},
                               'f:replicas': {}}}, 'status')]),
            'spec': {
                'replicas': replicas,
                'selector': {'matchLabels': gomap(labels)},
                'template': tmpl,
                'strategy': {'type': 'RollingUpdate', 'rollingUpdate': {
                    'maxUnavailable': '25%', 'maxSurge': '25%'}},
                'revisionHistoryLimit': 10,
                'progressDeadlineSeconds': 600},
            'status': {
                'observedGeneration': gen, 'replicas': replicas,
                'updatedReplicas': replicas, 'readyReplicas': replicas,
                'availableReplicas': replicas,
                'conditions': [
                    {'type': 'Available', 'status': 'True',
                     'lastUpdateTime': self.time(),
                     'lastTransitionTime': self.time(),
                     'reason': 'MinimumReplicasAvailable',
                     'message': 'Deployment has minimum availability.'}]}})
        pth = self.suffix(10)
        rs_name = '%s-%s' % (app, pth)
        rs_labels = {'app': app, 'pod-template-hash': pth}
        rs_tmpl = {'metadata': {'creationTimestamp': None,
                                'labels': gomap(rs_labels)},
                   'spec': tmpl['spec']}
        rs = self.add('/registry/replicasets/%s/%s' % (ns, rs_name), {
            'kind': 'ReplicaSet', 'apiVersion': 'apps/v1',
            'metadata': self.meta(
                rs_name, ns, labels=rs_labels, owner=d, generation=1,
                annotations={'deployment.kubernetes.io/desired-replicas':
                             str(replicas),
                             'deployment.kubernetes.io/max-replicas':
                             str(replicas + 1),
                             'deployment.kubernetes.io/revision': str(gen)},
                managers=[('kube-controller-manager', 'Update', 'apps/v1',
                           self.fields_meta(rs_labels,
                                            owner=d['metadata']['uid']),
                           None)]),
            'spec': {'replicas': replicas,
                     'selector': {'matchLabels': gomap(rs_labels)},
                     'template': rs_tmpl},
            'status': {'replicas': replicas, 'fullyLabeledReplicas': replicas,
                       'readyReplicas': replicas,
                       'availableReplicas': replicas,
                       'observedGeneration': 1}})
        pods = []
        for _ in range(replicas):
            name = '%s-%s' % (rs_name, self.suffix(5))
            node = self.rng.choice(nodes)
            p = self.pod(ns, name, rs, rs_labels, app, image, port, node)
            pods.append(p)
        self.service(ns, app, port, labels, pods)
        return d, rs

    def pod(self, ns, name, owner, labels, app, image, port, node):
        created = self.time()
        started = self.time()
        ip = '10.244.%d.%d' % (self.rng.randint(0, 255),
                               self.rng.randint(2, 250))
        host_ip = '10.0.0.%d' % self.rng.randint(2, 250)
        cond = lambda typ: {'type': typ, 'status': 'True',  # noqa: E731
                            'lastProbeTime': None,
                            'lastTransitionTime': started}
        return self.add('/registry/pods/%s/%s' % (ns, name), {
            'kind': 'Pod', 'apiVersion': 'v1',
            'metadata': self.meta(
                name, ns, labels=labels, owner=owner, created=created,
                gen_name=owner['metadata']['name'] + '-',
                managers=[
                    ('kube-controller-manager', 'Update', 'v1',
                     self.fields_meta(labels,
                                      owner=owner['metadata']['uid']), None),
                    ('kubelet', 'Update', 'v1',
                     {'f:status': {'f:conditions': {}, 'f:podIP': {},
                                   'f:startTime': {}}}, 'status')]),
            'spec': self.pod_spec(app, image, port, node),
            'status': {
                'phase': 'Running',
                'conditions': [cond(t) for t in (
                    'PodReadyToStartContainers', 'Initialized', 'Ready',
                    'ContainersReady', 'PodScheduled')],
                'hostIP': host_ip, 'hostIPs': [{'ip': host_ip}],
                'podIP': ip, 'podIPs': [{'ip': ip}],
                'startTime': started,
                'containerStatuses': [{
                    'name': app,
                    'state': {'running': {'startedAt': started}},
                    'lastState': {},
                    'ready': True, 'restartCount': 0,
                    'image': image,
                    'imageID': image.split(':')[0] + '@sha256:' +
                    '%064x' % self.rng.getrandbits(256),
                    'containerID': 'containerd://' +
                    '%064x' % self.rng.getrandbits(256),
                    'started': True}],
                'qosClass': 'Burstable'}})

    def service(self, ns, app, port, labels, pods):
        ip = '10.96.%d.%d' % (self.rng.randint(0, 255),
                              self.rng.randint(2, 250))
        self.add('/registry/services/specs/%s/%s' % (ns, app), {
            'kind': 'Service', 'apiVersion': 'v1',
            'metadata': self.meta(app, ns, labels=labels),
            'spec': {
                'ports': [{'name': 'http', 'protocol': 'TCP', 'port': port,
                           'targetPort': port}],
                'selector': gomap(labels), 'clusterIP': ip, 'clusterIPs': [ip],
                'type': 'ClusterIP', 'sessionAffinity': 'None',
                'ipFamilies': ['IPv4'], 'ipFamilyPolicy': 'SingleStack',
                'internalTrafficPolicy': 'Cluster'},
            'status': {'loadBalancer': {}}})
        name = '%s-%s' % (app, self.suffix(5))
        eps = [{'addresses': [p['status']['podIP']],
                'conditions': {'ready': True, 'serving': True,
                               'terminating': False},
                'targetRef': {'kind': 'Pod', 'namespace': ns,
                              'name': p['metadata']['name'],
                              'uid': p['metadata']['uid']},
                'nodeName': p['spec']['nodeName']} for p in pods]
        self.add('/registry/endpointslices/%s/%s' % (ns, name), {
            'kind': 'EndpointSlice', 'apiVersion': 'discovery.k8s.io/v1',
            'metadata': self.meta(
                name, ns, generation=1, gen_name=app + '-',
                labels={'endpointslice.kubernetes.io/managed-by':
                        'endpointslice-controller.k8s.io',
                        'kubernetes.io/service-name': app}),
            'addressType': 'IPv4',
            'endpoints': eps,
            'ports': [{'name': 'http', 'protocol': 'TCP', 'port': port}]})

    def event(self, ns, obj, reason, message, component='kubelet'):
        name = '%s.%016x' % (obj['metadata']['name'],
                             self.rng.getrandbits(64))
        t = self.time()
        host = obj['spec'].get('nodeName', '')
        source = {'component': component}
        if host:
            source['host'] = host
        self.add('/registry/events/%s/%s' % (ns, name), {
            'kind': 'Event', 'apiVersion': 'v1',
            'metadata': self.meta(name, ns, created=t),
            'involvedObject': {'kind': obj['kind'], 'namespace': ns,
                               'name': obj['metadata']['name'],
                               'uid': obj['metadata']['uid'],
                               'apiVersion': obj['apiVersion']},
            'reason': reason, 'message': message,
            'source': source,
            'firstTimestamp': t, 'lastTimestamp': t, 'count': 1,
            'type': 'Normal', 'eventTime': None,
            'reportingComponent': component,
            'reportingInstance': host})

    # -- the cluster -----------------------------------------------------
    def build(self):
        system = ['default', 'kube-system', 'kube-public', 'kube-node-lease']
        apps = ['shop'] + ['%s-%d' % (self.rng.choice(WORDS), i)
                           for i in range(1, 5 * self.scale)]
        for ns in system + apps:
            self.namespace(ns)
            self.service_account(ns)
            self.configmap(ns, 'kube-root-ca.crt', {
                'ca.crt': '-----BEGIN CERTIFICATE-----\n' +
                base64.b64encode(self.rng.randbytes(48)).decode() +
                '\n-----END CERTIFICATE-----\n'})
        nodes = ['kind-control-plane'] + [
            'kind-worker%s' % ('' if i == 1 else i)
            for i in range(1, 1 + 3 * self.scale)]
        for i, n in enumerate(nodes):
            node = self.node(n, 'zone-%s' % 'abc'[i % 3])
            self.lease('kube-node-lease', n, n, 40,
                       created=node['metadata']['creationTimestamp'])
        for comp in ('kube-controller-manager', 'kube-scheduler'):
            self.lease('kube-system', comp,
                       'kind-control-plane_' + self.uid(), 15)
        for ns in apps:
            self.configmap(ns, 'app-config', {
                'LOG_LEVEL': 'info', 'FEATURES': 'checkout,search',
                'config.yaml': 'replicas: 3\ncache: redis:6379\n'})
            self.secret(ns, 'db-credentials', {
                'username': b'app', 'password': self.suffix(16).encode()})
            # shop's are fixed, for the demo's examples (tests/demo.sh)
            for app in (['web', 'cart', 'orders', 'search'] if ns == 'shop'
                        else self.rng.sample(WORDS, 4)):
                d, rs = self.deployment(ns, app, nodes)
                self.event(ns, d, 'ScalingReplicaSet',
                           'Scaled up replica set %s from 0 to %d' % (
                               rs['metadata']['name'],
                               d['spec']['replicas']),
                           'deployment-controller')
            for key, obj in list(self.objects):
                if obj['kind'] == 'Pod' and key.split('/')[3] == ns:
                    self.event(ns, obj, 'Pulled',
                               'Container image "%s" already present on '
                               'machine' % obj['spec']['containers'][0]
                               ['image'])
                    self.event(ns, obj, 'Started', 'Started container %s'
                               % obj['spec']['containers'][0]['name'])
        return [(k, go_json(o) + '\n') for k, o in self.objects]


def records(items):
    return b''.join(b'%d\n%s' % (len(i), i) for i in items)


def unrecords(data):
    out, i = [], 0
    while i < len(data):
        nl = data.index(b'\n', i)
        n = int(data[i:nl])
        out.append(data[nl + 1:nl + 1 + n])
        i = nl + 1 + n
    return out


def run_codec(codec, verb, items):
    r = subprocess.run([codec, verb], input=records(items),
                       stdout=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit('k8s_registry: %s %s failed with status %d'
                 % (codec, verb, r.returncode))
    out = unrecords(r.stdout)
    if len(out) != len(items):
        sys.exit('k8s_registry: %s %s gave %d records for %d'
                 % (codec, verb, len(out), len(items)))
    return out


def main():
    ap = argparse.ArgumentParser(description='a Kubernetes /registry')
    ap.add_argument('--scale', type=int, default=1)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--codec', help='etcdfs-k8s, to store protobuf')
    ap.add_argument('--check', action='store_true',
                    help='decode each value back and compare its JSON')
    where = ap.add_mutually_exclusive_group()
    where.add_argument('--endpoint', help='an etcd to put the keys to')
    where.add_argument('--out', help='a directory to write the keys to')
    where.add_argument('--list', action='store_true',
                       help='print the keys')
    a = ap.parse_args()
    if a.scale < 1:
        ap.error('--scale must be 1 or more')
    if a.check and not a.codec:
        ap.error('--check needs --codec')

    objs = Cluster(a.seed, a.scale).build()
    texts = [t.encode() for _, t in objs]
    values = run_codec(a.codec, 'encode-batch', texts) if a.codec else texts
    if a.check:
        back = run_codec(a.codec, 'decode-batch', values)
        for (key, _), want, got in zip(objs, texts, back):
            if want != got:
                sys.stderr.writelines(difflib.unified_diff(
                    want.decode().splitlines(True),
                    got.decode(errors='replace').splitlines(True),
                    key + ' (generated)', key + ' (decoded)'))
                sys.exit('k8s_registry: %s does not decode to its JSON'
                         % key)
    if a.endpoint:
        u = urllib.parse.urlparse(a.endpoint)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        for (key, _), v in zip(objs, values):
            put(c, 'v3', key, v)
        c.close()
    elif a.out:
        for (key, _), v in zip(objs, values):
            path = os.path.join(a.out, key.lstrip('/'))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'wb') as f:
                f.write(v)
    elif a.list:
        for key, _ in objs:
            print(key)
    print('k8s_registry: %d objects%s' % (
        len(objs), ', checked' if a.check else ''), file=sys.stderr)


if __name__ == '__main__':
    main()
