"""The Placement client keeps enough connections open for concurrent
syncs (cyborg.common.clients.placement.connect)."""

import concurrent.futures
import http.server
import json
import threading
from unittest import mock

import fixtures
from keystoneauth1 import loading as ks_loading
import requests

from cyborg.common.clients import environment
from cyborg.common.clients import placement
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

# More requests in flight at once than requests' default pool (10) keeps.
IN_FLIGHT = 24


class _Counting(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.connections = 0
        self.paths = []
        self.lock = threading.Lock()
        # Every request of a round waits for the others: IN_FLIGHT
        # requests really are in flight together.
        self.together = threading.Barrier(IN_FLIGHT, timeout=30)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'  # keep-alive

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def do_GET(self):
        self.server.paths.append(self.path)
        if self.path.startswith('/resource_providers'):
            self.server.together.wait()
            body = b'{"resource_providers": []}'
        else:  # version discovery, as Placement answers it
            body = json.dumps({'versions': [{
                'id': 'v1.0', 'min_version': '1.0', 'max_version': '1.39',
                'status': 'CURRENT', 'links': [
                    {'rel': 'self', 'href': ''}]}]}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _ServerTest(base.TestCase):
    """[placement] points at a _Counting server of the test's own."""

    def setUp(self):
        super().setUp()
        self.server = _Counting()
        thread = threading.Thread(target=self.server.serve_forever,
                                  daemon=True)
        thread.start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='placement')
        self.flags(auth_type='admin_token', token='admin',
                   endpoint='http://127.0.0.1:%d' % self.server.server_port,
                   group='placement')

    def _round(self, client):
        with concurrent.futures.ThreadPoolExecutor(IN_FLIGHT) as pool:
            statuses = list(pool.map(
                lambda _: client.get('/resource_providers',
                                     microversion='1.0').status_code,
                range(IN_FLIGHT)))
        self.assertEqual([200] * IN_FLIGHT, statuses)


class ConnectionPoolTest(_ServerTest):

    def test_concurrent_requests_reuse_their_connections(self):
        client = placement.connect(self.conf)
        self._round(client)
        opened = self.server.connections
        self.assertGreaterEqual(opened, IN_FLIGHT)
        # A second storm finds every connection of the first still open.
        self._round(client)
        self.assertEqual(opened, self.server.connections)


class EnvironmentTest(_ServerTest):
    """requests reads proxies and CA bundles from the environment on
    every request unless told not to: the client reads a CA bundle once
    and tells it not to, except where a proxy is set, which still
    applies."""

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.NoHTTPEnvironment())

    def test_without_settings_the_environment_is_not_read(self):
        client = placement.connect(self.conf)
        self.assertEqual([], environment.settings())
        self.assertFalse(client.session.session.trust_env)
        with mock.patch('requests.utils.get_environ_proxies') as looked:
            self._round(client)
        looked.assert_not_called()

    def test_a_proxy_in_the_environment_is_used(self):
        # The server plays the proxy of a Placement that does not
        # resolve: it is asked for absolute URLs.
        self.flags(endpoint='http://placement.invalid:8778',
                   group='placement')
        self.useFixture(fixtures.EnvironmentVariable(
            'http_proxy', 'http://127.0.0.1:%d' % self.server.server_port))
        self.assertEqual(['http_proxy'], environment.settings())
        client = placement.connect(self.conf)
        self.assertTrue(client.session.session.trust_env)
        client.get('/', microversion='1.0')
        self.assertIn('http://placement.invalid:8778/', self.server.paths)

    def test_a_ca_bundle_in_the_environment_is_read_once(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'CURL_CA_BUNDLE', '/etc/ssl/certs/curl.crt'))
        self.useFixture(fixtures.EnvironmentVariable(
            'REQUESTS_CA_BUNDLE', '/etc/ssl/certs/ca-certificates.crt'))
        self.assertEqual(['REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE'],
                         environment.settings())
        client = placement.connect(self.conf)
        # What requests would have applied on each request: the first
        # of the two variables, in its order.
        self.assertEqual('/etc/ssl/certs/ca-certificates.crt',
                         client.session.verify)
        self.assertFalse(client.session.session.trust_env)
        sent = []
        send = requests.Session.send

        def recording(session, request, **kwargs):
            sent.append(kwargs.get('verify'))
            return send(session, request, **kwargs)

        with mock.patch('requests.utils.get_environ_proxies') as looked, \
                mock.patch.object(requests.Session, 'send', recording):
            client.get('/', microversion='1.0')
        looked.assert_not_called()
        self.assertEqual(['/etc/ssl/certs/ca-certificates.crt'], sent)

    def test_the_configured_ca_file_wins_over_the_environment(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'REQUESTS_CA_BUNDLE', '/etc/ssl/certs/ca-certificates.crt'))
        self.flags(cafile='/etc/cyborg/placement-ca.pem', group='placement')
        self.assertEqual('/etc/cyborg/placement-ca.pem',
                         placement.connect(self.conf).session.verify)
        self.flags(cafile=None, insecure=True, group='placement')
        self.assertFalse(placement.connect(self.conf).session.verify)
