"""What the tests of the real clients share: ``cyborg-aio`` with a
stand-in Glance and a ``clouds.yaml`` naming the roles a real user has.

Roles (noauth identities, see ``cyborg.api.middleware.auth``):

* ``admin``: the cloud administrator.
* ``member``: a member (and reader) of ``PROJECT``.
* ``other``: a member of ``OTHER_PROJECT``.
* ``nova``: what Nova sends on behalf of a member of ``PROJECT``: the
  member's token plus a service token. No client sends a service token
  from a ``clouds.yaml``, so this cloud's endpoint is a loopback proxy
  that adds one to every request, as Nova's ``[service_user]`` does.
* ``nova-admin``: the same for an administrator of ``PROJECT``.
"""

import json
import os
import time
from urllib import parse
import uuid

import fixtures
import openstack
from openstack import config as os_config
import requests
import yaml

from cyborg.api import server as api_server
from cyborg.tests.functional import daemons
from cyborg.tests.functional import glance

PROJECT = 'b8d3f5ae4b204c1c9a3f1e0d7c6b5a49'
OTHER_PROJECT = 'f1e2d3c4b5a647389201a2b3c4d5e6f7'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
# Headers a validated service token gives (noauth honours them).
SERVICE_HEADERS = {'X-Service-Token': 'nova-service-token',
                   'X-Service-Roles': 'service'}
TOKENS = {'admin': 'admin', 'member': 'alice:' + PROJECT,
          'other': 'bob:' + OTHER_PROJECT, 'nova': 'alice:' + PROJECT,
          'nova-admin': 'admin:' + PROJECT}
BEHIND_PROXY = ('nova', 'nova-admin')
_HOP_BY_HOP = {'connection', 'keep-alive', 'transfer-encoding',
               'content-length', 'content-encoding'}


class ServiceTokenProxy:
    """A WSGI app forwarding every request to ``target`` with a service
    token's headers added (``headers``: noauth's by default)."""

    def __init__(self, target, headers=None):
        self.target = target
        self.headers = SERVICE_HEADERS if headers is None else headers

    def __call__(self, environ, start_response):
        url = self.target + parse.quote(environ.get('PATH_INFO', ''))
        if environ.get('QUERY_STRING'):
            url += '?' + environ['QUERY_STRING']
        headers = {key[5:].replace('_', '-'): value
                   for key, value in environ.items()
                   if key.startswith('HTTP_') and key != 'HTTP_HOST'}
        if environ.get('CONTENT_TYPE'):
            headers['Content-Type'] = environ['CONTENT_TYPE']
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(length) if length else None
        response = requests.request(
            environ['REQUEST_METHOD'], url, data=body, timeout=120,
            headers=dict(headers, **self.headers), allow_redirects=False)
        start_response('%d %s' % (response.status_code, response.reason),
                       [(k, v) for k, v in response.headers.items()
                        if k.lower() not in _HOP_BY_HOP])
        return [response.content]


def _serve(fixture, app, name):
    server = api_server.WSGIServer(app, '127.0.0.1', 0, 4, name=name)
    server.start()
    fixture.addCleanup(server.stop)
    return 'http://127.0.0.1:%d' % server.port


class _Cloud(fixtures.Fixture):
    """What the tests ask of a cyborg, wherever it runs: ``base``,
    ``hostname`` (its agent's host), ``project`` (the member's),
    ``image`` (a Glance image its conductor may program), ``deployables``
    (its one card), ``api()`` and ``sdk()``."""

    admin_token = 'admin'
    project = PROJECT

    def wait_for_deployables(self, timeout=60):
        """The agent reports its fake card at start."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.api('GET', '/v2/deployables')
            if found.status_code == 200 and found.json()['deployables']:
                return found.json()['deployables']
            time.sleep(0.2)
        raise AssertionError('the agent never reported its devices:\n%s'
                             % self.problem())

    def problem(self):
        return ''

    def api(self, method, path, version=None, **kwargs):
        """A request straight to the API as the admin, to check what a
        client did."""
        headers = {'X-Auth-Token': self.admin_token}
        if version:
            headers['OpenStack-API-Version'] = 'accelerator ' + version
        return requests.request(method, self.base + path, headers=headers,
                                timeout=60, **kwargs)

    def sdk(self, cloud, version=None):
        """An openstacksdk connection from ``cloud`` of the clouds.yaml,
        at ``version`` (the SDK's default microversion if None)."""
        extra = {'accelerator_api_version': version} if version else {}
        region = os_config.OpenStackConfig(
            config_files=[self.clouds_yaml]).get_one(cloud=cloud, **extra)
        return openstack.connection.Connection(config=region)


class AllInOne(_Cloud):
    """``cyborg-aio`` on a free port with a stand-in Glance that holds
    one FPGA image, a service-token proxy in front of it, and a
    ``clouds.yaml`` with one cloud per role; until the test ends."""

    def __init__(self, test):
        super().__init__()
        self.test = test

    def _setUp(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.glance = glance.FakeGlance()
        self.image = self.glance.add(data=b'bitstream',
                                     **{'accel:function_id': 'f00d'})
        glance_url = _serve(self, self.glance, 'test-glance')
        port = daemons.free_port()
        self.hostname = 'clients-%s' % uuid.uuid4().hex[:8]
        self.base = 'http://127.0.0.1:%d' % port
        config = daemons.write_config(os.path.join(tmp, 'aio.conf'), {
            'DEFAULT': {'host': self.hostname},
            'glance': {'auth_type': 'admin_token', 'token': 'admin',
                       'endpoint': glance_url,
                       'trusted_image_owners': glance.FakeGlance.OWNER}})
        self.daemon = daemons.Daemon(
            self.test, 'aio', ['--port', str(port), '--state-dir',
                               os.path.join(tmp, 'state'), '--config-file',
                               config], os.path.join(tmp, 'aio.log'))
        daemons.wait_for_http(self.base + '/v2', daemon=self.daemon)
        proxy = _serve(self, ServiceTokenProxy(self.base), 'test-proxy')
        self.clouds_yaml = os.path.join(tmp, 'clouds.yaml')
        with open(self.clouds_yaml, 'w') as f:
            yaml.safe_dump({'clouds': {
                name: {'auth_type': 'admin_token',
                       'auth': {'token': token,
                                'endpoint': proxy if name in BEHIND_PROXY
                                else self.base},
                       'image_endpoint_override': glance_url}
                for name, token in TOKENS.items()}}, f)
        self.deployables = self.wait_for_deployables()

    def problem(self):
        return self.daemon.output()


class Deployed(_Cloud):
    """A cyborg started elsewhere, in keystone mode, as the JSON file
    ``path`` describes it (the peer suite writes one: tools/peer/run.py
    --api haproxy): ``base``, ``hostname``, ``project``, ``image`` (its
    id), ``admin_token``, ``service_token`` (a token with the role
    ``service``, which the ``nova`` cloud's proxy adds, as Nova's
    ``[service_user]`` does), ``auth_url``, ``region`` and ``users``
    ({cloud: [user, password, project]} for the roles of the module
    doc but ``nova``, which is ``member`` behind the proxy)."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def _setUp(self):
        with open(self.path) as f:
            target = json.load(f)
        tmp = self.useFixture(fixtures.TempDir()).path
        self.base = target['base']
        self.hostname = target['hostname']
        self.project = target['project']
        self.image = {'id': target['image']}
        self.admin_token = target['admin_token']
        proxy = _serve(self, ServiceTokenProxy(
            self.base, {'X-Service-Token': target['service_token']}),
            'test-proxy')
        users = dict(target['users'], nova=target['users']['member'])
        clouds = {}
        for name, (user, password, project) in users.items():
            clouds[name] = {
                'auth_type': 'password', 'region_name': target['region'],
                'auth': {'auth_url': target['auth_url'], 'username': user,
                         'password': password, 'project_name': project,
                         'user_domain_name': 'Default',
                         'project_domain_name': 'Default'}}
            if name in BEHIND_PROXY:
                clouds[name]['accelerator_endpoint_override'] = proxy
        self.clouds_yaml = os.path.join(tmp, 'clouds.yaml')
        with open(self.clouds_yaml, 'w') as f:
            yaml.safe_dump({'clouds': clouds}, f)
        self.deployables = self.wait_for_deployables()


#: The JSON file of a cyborg deployed elsewhere (``Deployed``) that the
#: tests of the clients run against instead of a cyborg-aio of their
#: own, where set.
TARGET_ENV = 'CYBORG_TEST_ACCELERATOR_TARGET'


def cloud(test):
    """The cyborg ``test`` talks to, until it ends: the one
    $CYBORG_TEST_ACCELERATOR_TARGET describes, else a cyborg-aio of its
    own."""
    path = os.environ.get(TARGET_ENV)
    return test.useFixture(Deployed(path) if path else AllInOne(test))
