"""Nova, as cyborg sees it: a stand-in for the external events endpoint
and the server list of the stuck-ARQ check, and the calls Nova makes to
cyborg's API while it boots and deletes a server, exactly as Nova sends
them."""

import json
import threading
from urllib import parse
import time
import uuid

import requests

from cyborg.api import server as api_server

# Nova calls with the user's token and its own service token; the API
# sees the user's roles and the service token's roles.
USER_PROJECT = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
USER = {'X-User-Id': 'demo', 'X-Project-Id': USER_PROJECT,
        'X-Roles': 'member,reader'}
USER_AND_SERVICE = dict(USER, **{'X-Service-Roles': 'service'})
ARQS = '/v2/accelerator_requests'


class StandInNova:
    """``POST /v2.1/os-server-external-events``, recorded; answers
    ``status`` (200; 207 with ``event_code`` for every event; 404 as for
    instances that do not exist; 401 as for a token Nova refused). While
    ``gate`` is clear, a request is held (counted in ``held``) until it
    is set.

    ``GET /v2.1/servers/detail?uuid=...`` lists the servers of ``servers``
    ({uuid: status}) asked about, or answers ``servers_status`` when it
    is not 200; each request's uuids go to ``servers_asked``. While
    ``servers_gate`` is clear such a request is held (``servers_held``).
    """

    EVENTS = '/v2.1/os-server-external-events'
    SERVERS = '/v2.1/servers/detail'

    def __init__(self):
        self.events = []
        #: The events of each request, in order.
        self.requests = []
        #: Every request, as 'METHOD path'.
        self.calls = []
        self.held = 0
        self.status = 200
        self.servers = {}
        self.servers_status = 200
        self.servers_asked = []
        self.servers_held = 0
        self.servers_gate = threading.Event()
        self.servers_gate.set()
        self.event_code = 422
        self.gate = threading.Event()
        self.gate.set()
        self.lock = threading.Condition()
        self.server = api_server.WSGIServer(self, '127.0.0.1', 0, 4,
                                            name='stand-in-nova')

    def __call__(self, environ, start_response):
        if environ['PATH_INFO'] == self.SERVERS:
            return self._list_servers(environ, start_response)
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = json.loads(environ['wsgi.input'].read(length) or b'{}')
        with self.lock:
            self.calls.append('%s %s' % (environ['REQUEST_METHOD'],
                                         environ['PATH_INFO']))
            if environ['PATH_INFO'] == self.EVENTS:
                self.held += not self.gate.is_set()
                self.lock.notify_all()
        self.gate.wait(60)
        with self.lock:
            if environ['PATH_INFO'] == self.EVENTS:
                self.events.extend(body.get('events', []))
                self.requests.append(body.get('events', []))
            self.lock.notify_all()
        if self.status == 207:
            answer = {'events': [dict(e, code=self.event_code)
                                 for e in body.get('events', [])]}
        elif self.status == 404:
            answer = {'itemNotFound': {
                'code': 404, 'message': 'No instances found for any event'}}
        elif self.status == 401:
            answer = {'error': {'code': 401, 'message': 'Unauthorized'}}
        else:
            answer = body
        start_response('%d Status' % self.status,
                       [('Content-Type', 'application/json')])
        return [json.dumps(answer).encode()]

    def _list_servers(self, environ, start_response):
        query = parse.parse_qs(environ.get('QUERY_STRING', ''))
        asked = query.get('uuid', [])
        with self.lock:
            self.calls.append('GET %s' % self.SERVERS)
            self.servers_asked.append(asked)
            self.servers_held += not self.servers_gate.is_set()
            self.lock.notify_all()
        self.servers_gate.wait(60)
        if self.servers_status != 200:
            answer = {'computeFault': {'code': self.servers_status,
                                       'message': 'stand-in failure'}}
        elif query.get('all_tenants') != ['1']:
            answer = {'servers': []}
        else:
            answer = {'servers': [
                {'id': server, 'status': self.servers[server]}
                for server in asked if server in self.servers]}
        start_response('%d Status' % self.servers_status,
                       [('Content-Type', 'application/json')])
        return [json.dumps(answer).encode()]

    @property
    def endpoint(self):
        return 'http://127.0.0.1:%d/v2.1' % self.server.port

    def start(self, test):
        self.server.start()
        test.addCleanup(self.server.stop)
        test.addCleanup(self.gate.set)
        test.addCleanup(self.servers_gate.set)
        return self

    def config(self):
        """The ``[nova]`` options that send cyborg's events here."""
        return {'auth_type': 'admin_token', 'token': 'nova-token',
                'endpoint': self.endpoint}

    def events_of(self, instance):
        with self.lock:
            return [e for e in self.events if e['server_uuid'] == instance]

    def wait(self, predicate, timeout=30):
        """Wait until ``predicate()`` (called under the lock) is true;
        AssertionError after ``timeout`` seconds."""
        with self.lock:
            if not self.lock.wait_for(predicate, timeout):
                raise AssertionError('Nova: condition not met within %s s; '
                                     'requests: %s' % (timeout, self.calls))

    def wait_events(self, instance, count, timeout=30):
        """The events of ``instance``, once there are ``count``."""
        self.wait(lambda: len([e for e in self.events
                               if e['server_uuid'] == instance]) >= count,
                  timeout)
        return self.events_of(instance)


def _call(base, method, path, headers, body=None):
    return requests.request(
        method, base + path, headers=headers, timeout=30,
        data=None if body is None else json.dumps(body))


def boot_and_delete(test, base, profile_name, hostname, rp_uuid,
                    timeout=30, nova=None):
    """What nova-api, nova-conductor and nova-compute send, in order, with
    no microversion header, for one server; returns the instance uuid and
    the bound ARQs as the last poll showed them. With ``nova`` (a
    StandInNova) the server is deleted once Nova got its events."""
    # nova-api: the profile by name, exactly one.
    profiles = _call(base, 'GET', '/v2/device_profiles?name=%s'
                     % profile_name, USER_AND_SERVICE).json()
    test.assertEqual(1, len(profiles['device_profiles']), profiles)
    # nova-conductor: ARQs, then bind each to the provider Placement
    # picked for its group.
    response = _call(base, 'POST', ARQS, USER_AND_SERVICE,
                     {'device_profile_name': profile_name})
    test.assertEqual(201, response.status_code, response.text)
    arqs = response.json()['arqs']
    instance = str(uuid.uuid4())
    patch = {arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': hostname},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        for arq in arqs}
    response = _call(base, 'PATCH', ARQS, USER_AND_SERVICE, patch)
    test.assertEqual(202, response.status_code, response.text)
    # nova-compute: poll until resolved (423 until then).
    query = '%s?instance=%s&bind_state=resolved' % (ARQS, instance)
    deadline = time.monotonic() + timeout
    while True:
        response = _call(base, 'GET', query, USER_AND_SERVICE)
        if response.status_code != 423 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    test.assertEqual(200, response.status_code, response.text)
    bound = response.json()['arqs']
    test.assertEqual({'Bound'}, {arq['state'] for arq in bound})
    test.assertEqual({arq['uuid'] for arq in arqs},
                     {arq['uuid'] for arq in bound})
    if nova is not None:
        nova.wait_events(instance, len(arqs), timeout)
    # Another project does not see them.
    other = {'X-User-Id': 'eve', 'X-Project-Id': 'other',
             'X-Roles': 'member,reader'}
    response = _call(base, 'GET', '%s/%s' % (ARQS, arqs[0]['uuid']), other)
    test.assertEqual(404, response.status_code)
    # Server deleted: nova-compute deletes its ARQs.
    response = _call(base, 'DELETE', '%s?instance=%s' % (ARQS, instance),
                     USER_AND_SERVICE)
    test.assertEqual(204, response.status_code, response.text)
    response = _call(base, 'GET', '%s?instance=%s' % (ARQS, instance),
                     USER_AND_SERVICE)
    test.assertEqual([], response.json()['arqs'])
    return instance, bound
