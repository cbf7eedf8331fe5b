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
    token's headers added."""

    def __init__(self, target):
        self.target = target

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
            headers=dict(headers, **SERVICE_HEADERS), allow_redirects=False)
        start_response('%d %s' % (response.status_code, response.reason),
                       [(k, v) for k, v in response.headers.items()
                        if k.lower() not in _HOP_BY_HOP])
        return [response.content]


def _serve(fixture, app, name):
    server = api_server.WSGIServer(app, '127.0.0.1', 0, 4, name=name)
    server.start()
    fixture.addCleanup(server.stop)
    return 'http://127.0.0.1:%d' % server.port


class AllInOne(fixtures.Fixture):
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

    def wait_for_deployables(self, timeout=60):
        """The all-in-one's own agent reports its fake card at start."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.api('GET', '/v2/deployables')
            if found.status_code == 200 and found.json()['deployables']:
                return found.json()['deployables']
            time.sleep(0.2)
        raise AssertionError('the agent never reported its devices:\n%s'
                             % self.daemon.output())

    def api(self, method, path, version=None, **kwargs):
        """A request straight to the API as the admin, to check what a
        client did."""
        headers = {'X-Auth-Token': 'admin'}
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
