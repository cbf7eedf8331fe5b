"""A bind traced end to end, as Nova traces a boot with ``--os-profile``:
cyborg-api, cyborg-conductor and cyborg-agent as processes (RabbitMQ,
MariaDB, the real Placement), each exporting its spans with osprofiler's
OpenTelemetry driver (``otlp://``) to a collector the test runs; the
spans form one tree under the caller's.

Why a collector and not an in-memory exporter: the daemons are separate
processes, so an exporter in the test's memory sees none of their spans.
The driver's own exporter (OTLP over HTTP) sends them to the test
instead, which decodes them with OpenTelemetry's protobuf classes: what
runs is what production runs, up to the wire."""

import collections
import gzip
import http.server
import json
import threading
import time
import uuid

import fixtures
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from osprofiler import profiler as osp
from osprofiler import web
import requests

from cyborg.tests import base
from cyborg.tests.functional import daemons
from cyborg.tests.functional import nova
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for

#: What the daemons are configured with, as Nova would be (a key shared
#: by the services a trace may cross).
KEY = 'trace-key-of-this-cloud'

Span = collections.namedtuple(
    'Span', 'service name trace_id span_id parent_id attributes')


def _value(any_value):
    kind = any_value.WhichOneof('value')
    return getattr(any_value, kind) if kind else None


def _spans(body):
    """The spans of an OTLP/HTTP export request (protobuf)."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value)
                    for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(Span(
                    resource.get('service.name'), span.name,
                    int.from_bytes(span.trace_id, 'big'),
                    int.from_bytes(span.span_id, 'big'),
                    (int.from_bytes(span.parent_span_id, 'big')
                     if span.parent_span_id else None),
                    {a.key: _value(a.value) for a in span.attributes}))
    return found


class Collector:
    """An OpenTelemetry collector's OTLP/HTTP trace endpoint
    (``POST /v1/traces``) on a loopback port, keeping what it gets."""

    def __init__(self, test):
        self.spans = []
        self.lock = threading.Lock()
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers['Content-Length']))
                if self.headers.get('Content-Encoding') == 'gzip':
                    body = gzip.decompress(body)
                if self.path == '/v1/traces':
                    with collector.lock:
                        collector.spans.extend(_spans(body))
                    self.send_response(200)
                else:
                    self.send_response(404)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.port = daemons.free_port()
        self.server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', self.port), Handler)
        thread = threading.Thread(target=self.server.serve_forever,
                                  daemon=True)
        thread.start()
        test.addCleanup(self.server.server_close)
        test.addCleanup(self.server.shutdown)

    def of_trace(self, trace_id):
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]


def trace_headers(key, base_id, parent_id):
    """The headers ``openstack --os-profile KEY`` (or Nova, tracing a
    boot) sends: the trace's ids, signed with ``key``."""
    osp.clean()
    try:
        osp.init(key, base_id=base_id, parent_id=parent_id)
        return {name: value.decode() if isinstance(value, bytes) else value
                for name, value in web.get_trace_id_headers().items()}
    finally:
        osp.clean()


def short_id(uuid_text):
    """The OpenTelemetry span id osprofiler gives the trace element
    ``uuid_text``."""
    osp.clean()
    try:
        return int(osp.init(None).get_shorten_id(uuid_text), 16)
    finally:
        osp.clean()


class TracedBindTest(test_daemons.NovaStack, base.TestCase):

    def setUp(self):
        super().setUp()
        self.collector = Collector(self)
        # The driver's batches leave every 0.1 s instead of 5 s.
        self.useFixture(fixtures.EnvironmentVariable(
            'OTEL_BSP_SCHEDULE_DELAY', '100'))

    def config(self, name, host, **sections):
        # Statements and HTTP requests are traced by cyborg's defaults.
        sections.setdefault('profiler', {
            'enabled': True, 'hmac_keys': KEY,
            'connection_string': 'otlp://127.0.0.1:%d' % self.collector.port})
        return super().config(name, host, **sections)

    def settled(self, trace_id):
        """The trace's spans once no more came for half a second (the
        last batches may still be under way)."""
        seen = -1
        deadline = time.monotonic() + 10
        while True:
            spans = self.collector.of_trace(trace_id)
            if len(spans) == seen or time.monotonic() > deadline:
                return spans
            seen = len(spans)
            time.sleep(0.5)

    def call(self, method, path, headers, body=None):
        return requests.request(
            method, self.base + path, headers=headers, timeout=30,
            data=None if body is None else json.dumps(body))

    def test_a_traced_bind_is_one_tree_under_the_callers_span(self):
        rp_uuid, profile = self.start_stack()
        base_id, nova_span = str(uuid.uuid4()), str(uuid.uuid4())
        traced = trace_headers(KEY, base_id, nova_span)
        # Signed with another key: served, never traced.
        forged_id = str(uuid.uuid4())
        forged = trace_headers('not-' + KEY, forged_id, forged_id)
        response = self.call('GET', '/v2/device_profiles?name=' + profile,
                             dict(nova.USER_AND_SERVICE, **forged))
        self.assertEqual(200, response.status_code, response.text)

        # Nova's conductor, in its traced boot: ARQs, then the bind.
        user = dict(nova.USER_AND_SERVICE, **traced)
        response = self.call('POST', nova.ARQS, user,
                             {'device_profile_name': profile})
        self.assertEqual(201, response.status_code, response.text)
        arq = response.json()['arqs'][0]['uuid']
        instance = str(uuid.uuid4())
        response = self.call('PATCH', nova.ARQS, user, {arq: [
            {'op': 'add', 'path': '/hostname', 'value': self.hostname},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]})
        self.assertEqual(202, response.status_code, response.text)
        wait_for(lambda: self.call(
            'GET', '%s/%s' % (nova.ARQS, arq), nova.USER_AND_SERVICE,
        ).json()['state'] == 'Bound', timeout=30)
        # An operator's traced request that reaches Placement: a device
        # taken out of service (its inventory reserved there).
        admin = {'X-Auth-Token': 'admin'}
        device = self.call('GET', '/v2/devices?hostname=' + self.hostname,
                           admin).json()['devices'][0]['uuid']
        response = self.call('POST', '/v2/devices/%s/disable' % device,
                             dict(admin, **traced))
        self.assertEqual(204, response.status_code, response.text)

        trace_id = uuid.UUID(base_id).int
        routes = ('WSGI_POST_%s' % nova.ARQS, 'WSGI_PATCH_%s' % nova.ARQS,
                  'WSGI_POST_/v2/devices/%s/disable' % device)
        methods = ('arq_create', 'arq_apply_patch', 'device_set_status')

        def complete():
            spans = self.collector.of_trace(trace_id)
            names = {(s.service, s.name, s.attributes.get('name'))
                     for s in spans}
            wanted = ({('cyborg-api', r, None) for r in routes}
                      | {('cyborg-conductor', 'rpc', m) for m in methods})
            placement = [s for s in spans
                         if s.name.startswith('REQUESTS_')]
            return wanted <= names and placement and spans
        wait_for(complete, timeout=30)
        spans = self.settled(trace_id)
        by_id = {s.span_id: s for s in spans}
        self.assertEqual(len(spans), len(by_id))

        # One tree: every span's parent is another span of it, or the
        # caller's span (Nova's).
        caller = short_id(nova_span)
        for span in spans:
            self.assertTrue(span.parent_id in by_id or
                            span.parent_id == caller, span)

        def children(parent, service=None):
            return [s for s in spans if s.parent_id == parent.span_id and
                    (service is None or s.service == service)]

        for route, method in zip(routes, methods, strict=True):
            api, = [s for s in spans if s.name == route]
            self.assertEqual(('cyborg-api', caller),
                             (api.service, api.parent_id))
            # The conductor's RPC span, under the API's.
            rpc, = [s for s in children(api, 'cyborg-conductor')
                    if s.attributes.get('name') == method]
            self.assertEqual('rpc', rpc.name)
            # Its statements under it.
            statements = [s for s in children(rpc)
                          if s.name.startswith('SQL_')]
            self.assertTrue(statements, method)
            self.assertEqual({'cyborg-conductor'},
                             {s.service for s in statements})
            for span in statements:
                self.assertIn('db.statement', span.attributes)
            # The API's own reads, under its request.
            for span in children(api, 'cyborg-api'):
                self.assertTrue(span.name.startswith('SQL_SELECT'), span)
            if method == 'arq_apply_patch':
                self.assertIn('SQL_UPDATE', {s.name for s in statements})
            if method == 'device_set_status':
                # Placement, called by the conductor in that request.
                placement = [s for s in children(rpc)
                             if s.name.startswith('REQUESTS_')]
                self.assertTrue(placement)
                port = int(self.placement.endpoint.rsplit(':', 1)[1])
                for span in placement:
                    self.assertEqual(port, span.attributes['http.port'])
                    self.assertLess(span.attributes['status_code'], 400)
        # The request signed with another key left no span.
        self.assertEqual([], self.collector.of_trace(
            uuid.UUID(forged_id).int))
        # Nothing of the trace's key reached a span.
        self.assertNotIn(KEY, repr(spans))
        self.assertEqual(set(), {s.trace_id for s in spans} - {trace_id})
