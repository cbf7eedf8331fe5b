"""A simulated Nova: the API a conductor sends its external events to.

:class:`FakeNova` serves Nova's ``os-server-external-events`` API (and
its version documents) on a loopback port, in the process that creates
it, and records every event, so that a benchmark or a test can wait for
an instance's events and count them.
"""

import collections
import json
import threading
import time

from cyborg.api import server as api_server


class FakeNova:
    """Nova's ``os-server-external-events`` API on a loopback port, in the
    process that creates it: it answers as Nova does (the version
    documents a client discovers, 200 with a code for every event) and
    records every request and event it got, so that a benchmark can wait
    for an instance's events and count them."""

    EVENTS = '/v2.1/os-server-external-events'

    def __init__(self, port=0, threads=8):
        self.events = collections.defaultdict(list)
        self.requests = collections.Counter()
        self.received = 0
        self._cond = threading.Condition()
        self.server = api_server.WSGIServer(self, '127.0.0.1', port,
                                            threads, name='fake-nova')

    @property
    def endpoint(self):
        return 'http://127.0.0.1:%d/v2.1' % self.server.port

    def start(self):
        self.server.start()
        return self

    def stop(self):
        self.server.stop()

    def _version(self, environ):
        return {'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                'min_version': '2.1', 'updated': '2013-07-23T11:33:21Z',
                'links': [{'rel': 'self', 'href': 'http://%s/v2.1/' %
                           environ.get('HTTP_HOST', '127.0.0.1')}]}

    def __call__(self, environ, start_response):
        method, path = environ['REQUEST_METHOD'], environ['PATH_INFO']
        with self._cond:
            self.requests['%s %s' % (method, path)] += 1
        status, body = '404 Not Found', {'itemNotFound': {
            'code': 404, 'message': 'Not found'}}
        if method == 'GET' and path in ('', '/'):
            status, body = '200 OK', {'versions': [self._version(environ)]}
        elif method == 'GET' and path.rstrip('/') == '/v2.1':
            status, body = '200 OK', {'version': self._version(environ)}
        elif method == 'POST' and path == self.EVENTS:
            length = int(environ.get('CONTENT_LENGTH') or 0)
            events = json.loads(environ['wsgi.input'].read(length))['events']
            self._record(events)
            status, body = '200 OK', {'events': [dict(e, code=200)
                                                 for e in events]}
        start_response(status, [('Content-Type', 'application/json'),
                                ('OpenStack-API-Version', 'compute 2.82')])
        return [json.dumps(body).encode()]

    def _record(self, events):
        with self._cond:
            for event in events:
                self.events[event['server_uuid']].append(event)
            self.received += len(events)
            self._cond.notify_all()

    def wait_for(self, instance, count, timeout):
        """The events of ``instance`` once there are ``count``; None
        after ``timeout`` seconds without them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.events[instance]) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return list(self.events[instance])

    def event_posts(self):
        with self._cond:
            return self.requests['POST %s' % self.EVENTS]
