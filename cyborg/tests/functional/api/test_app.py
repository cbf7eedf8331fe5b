"""The whole API pipeline, in process: version documents, links,
microversion headers, routing, errors, healthcheck, request ids, CORS,
and keystone mode without a keystone."""

import collections
import json
import logging

from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
import webob

from cyborg.api import app as api_app
from cyborg.api.controllers import root
from cyborg.api.controllers import v2
from cyborg.api import microversion
from cyborg.api.middleware import access_log
from cyborg.common import context as cyborg_context
from cyborg.tests import base
from cyborg.tests.functional.api import routes

V2_HEADERS = ('OpenStack-API-Minimum-Version',
              'OpenStack-API-Maximum-Version')


def fault_of(response):
    assert response.content_type == 'application/json', response.headers
    return json.loads(response.json['error_message'])


class APITestCase(base.TestCase):
    """Requests against ``setup_app`` in noauth mode."""

    auth_strategy = 'noauth'

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy=self.auth_strategy)
        # The middleware register their options when built; register
        # them now so that tests can set them before.
        self.conf.register_opts(cors.OPTS, group='cors')
        self.conf.register_opts(http_proxy_to_wsgi.OPTS,
                                group='oslo_middleware')
        self._app = None

    @property
    def app(self):
        """Built on first use, so tests can set flags first."""
        if self._app is None:
            self._app = api_app.setup_app(self.conf)
        return self._app

    def request(self, path, method='GET', headers=None,
                base_url='http://localhost'):
        return webob.Request.blank(path, method=method, headers=headers or {},
                                   base_url=base_url).get_response(self.app)

    def assert_v2_headers(self, response, version):
        self.assertEqual('2.0', response.headers[V2_HEADERS[0]])
        self.assertEqual('2.6', response.headers[V2_HEADERS[1]])
        self.assertIn('OpenStack-API-Version', response.vary)
        if version is None:
            self.assertNotIn('OpenStack-API-Version', response.headers)
        else:
            self.assertEqual('accelerator %s' % version,
                             response.headers['OpenStack-API-Version'])


class VersionDocumentTest(APITestCase):

    def _v2_summary(self, href):
        return {'id': 'v2', 'status': 'CURRENT', 'max_version': '2.6',
                'min_version': '2.0',
                'links': [{'href': href, 'rel': 'self'}]}

    def test_root(self):
        response = self.request('/')
        self.assertEqual(200, response.status_int)
        body = response.json
        self.assertEqual({'name', 'description', 'versions',
                          'default_version'}, set(body))
        self.assertEqual('OpenStack Cyborg API', body['name'])
        v2 = self._v2_summary('http://localhost/v2')
        v1 = {'id': 'v1', 'status': 'SUPPORTED',
              'links': [{'href': 'http://localhost/v1', 'rel': 'self'}]}
        self.assertEqual([v2, v1], body['versions'])
        self.assertEqual(v2, body['default_version'])
        self.assertNotIn(V2_HEADERS[0], response.headers)

    def test_v2(self):
        response = self.request('/v2')
        self.assertEqual(200, response.status_int)
        self.assertEqual(
            {'id': 'v2.0', 'status': 'CURRENT', 'min_version': '2.0',
             'max_version': '2.6',
             'links': [{'href': 'http://localhost/v2/', 'rel': 'self'}]},
            response.json)
        self.assert_v2_headers(response, '2.0')

    def test_v2_spellings(self):
        expected = self.request('/v2').json
        for path in ('/v2/', '/v2.json'):
            self.assertEqual(expected, self.request(path).json, path)

    def test_links_follow_the_mount_prefix(self):
        base_url = 'http://cloud.example.com/accelerator'
        root = self.request('/', base_url=base_url).json
        self.assertEqual('http://cloud.example.com/accelerator/v2',
                         root['versions'][0]['links'][0]['href'])
        v2 = self.request('/v2', base_url=base_url).json
        self.assertEqual('http://cloud.example.com/accelerator/v2/',
                         v2['links'][0]['href'])

    def test_links_use_the_public_endpoint(self):
        self.flags(public_endpoint='https://api.example.org/acc/',
                   group='api')
        root = self.request('/', base_url='http://10.0.0.5:6666').json
        self.assertEqual('https://api.example.org/acc/v2',
                         root['default_version']['links'][0]['href'])
        v2 = self.request('/v2').json
        self.assertEqual('https://api.example.org/acc/v2/',
                         v2['links'][0]['href'])

    def test_links_behind_a_proxy(self):
        self.flags(enable_proxy_headers_parsing=True,
                   group='oslo_middleware')
        v2 = self.request('/v2', headers={
            'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'cloud',
            'X-Forwarded-Prefix': '/accelerator'}).json
        self.assertEqual('https://cloud/accelerator/v2/',
                         v2['links'][0]['href'])

    def test_only_get(self):
        response = self.request('/', method='POST')
        self.assertEqual(405, response.status_int)
        self.assertEqual('GET', response.headers['Allow'])
        self.assertEqual('Client', fault_of(response)['faultcode'])
        self.assertEqual(405, self.request('/v2', method='DELETE').status_int)


class MethodNotAllowedTest(APITestCase):
    """Every path of the controller tree answers a method it does not
    serve with 405, the error envelope and ``Allow`` naming the methods
    it serves, before any policy, microversion or body check."""

    METHODS = ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')
    SOME_ID = '0b7d3e52-7c4f-4d7e-9a61-3f1d2c5b8e90'

    def served(self):
        """{path: the methods it serves} of every route."""
        served = collections.defaultdict(set)
        for route in routes.all_routes():
            served[route.path].add(route.method)
        return served

    def test_other_methods_are_405_with_allow(self):
        served = self.served()
        self.assertEqual({'POST'}, served['/v2/devices/{id}/enable'])
        self.assertEqual({'GET', 'PATCH', 'DELETE'},
                         served['/v2/accelerator_requests/{id}'])
        for path, methods in served.items():
            url = path.replace(routes.PLACEHOLDER, self.SOME_ID)
            for method in sorted(set(self.METHODS) - methods):
                response = self.request(url, method=method, headers={
                    'OpenStack-API-Version': 'accelerator latest'})
                where = '%s %s' % (method, url)
                self.assertEqual(405, response.status_int, where)
                self.assertEqual(', '.join(sorted(methods)),
                                 response.headers['Allow'], where)
                fault = fault_of(response)
                self.assertEqual(('Client', 'Method Not Allowed'),
                                 (fault['faultcode'], fault['faultstring']),
                                 where)


class MicroversionTest(APITestCase):

    def _get(self, value, path='/v2'):
        return self.request(path, headers={'OpenStack-API-Version': value})

    def test_requested_version_is_served(self):
        self.assert_v2_headers(self._get('accelerator 2.2'), '2.2')
        self.assert_v2_headers(self._get('accelerator latest'), '2.6')
        self.assert_v2_headers(self._get('latest'), '2.6')
        self.assert_v2_headers(self._get('2.1'), '2.1')

    def test_unacceptable_versions(self):
        for value in ('accelerator 2.99', 'accelerator 1.0', 'accelerator x',
                      'nonsense'):
            response = self._get(value)
            self.assertEqual(406, response.status_int, value)
            self.assert_v2_headers(response, None)
            self.assertEqual('Client', fault_of(response)['faultcode'])

    def test_unacceptable_version_on_unversioned_path(self):
        response = self._get('accelerator 9.9', path='/devices')
        self.assertEqual(406, response.status_int)

    def test_vary_is_added_to(self):
        response = self.request('/v2/')
        self.assertEqual(['OpenStack-API-Version'], list(response.vary))


class RoutingTest(APITestCase):

    def test_unknown_v2_resource(self):
        response = self.request('/v2/no_such_resource')
        self.assertEqual(404, response.status_int)
        self.assert_v2_headers(response, '2.0')
        self.assertEqual({'faultcode': 'Client',
                          'faultstring': 'The resource could not be found.',
                          'debuginfo': None}, fault_of(response))

    def test_unversioned_path_is_served_by_v2(self):
        versioned = self.request('/v2/device_profiles/abc',
                                 headers={'X-Auth-Token': 'admin'})
        unversioned = self.request('/device_profiles/abc',
                                   headers={'X-Auth-Token': 'admin'})
        self.assertEqual(versioned.status_int, unversioned.status_int)
        self.assertEqual(versioned.json, unversioned.json)
        self.assert_v2_headers(unversioned, '2.0')

    def test_resource_below_its_microversion_names_it(self):
        """Every route of a resource a later microversion added (read
        from the controller tree, so a new one is covered) answers a
        request below that version, with any method, with a 404 in the
        envelope that names the version and the header to send."""
        since = v2.MIN_VERSIONS
        self.assertEqual('2.6', since['hardware'])
        self.assertEqual('2.5', since['hosts'])
        versions = [number for number, _note in microversion.VERSIONS]
        checked = set()
        for route in routes.all_routes():
            resource = root.v2_resource(route.path)
            if resource not in since:
                continue
            below = versions[versions.index(since[resource]) - 1]
            url = route.path.replace(routes.PLACEHOLDER, 'x')
            for prefix, header in (('', None), ('/v2', below)):
                path = url.replace('/v2', prefix, 1)
                response = self.request(path, method=route.method, headers={
                    'X-Auth-Token': 'admin',
                    'OpenStack-API-Version': 'accelerator %s' % (
                        header or '2.0')})
                where = '%s %s' % (route.method, path)
                self.assertEqual(404, response.status_int, where)
                fault = fault_of(response)
                self.assertEqual('Client', fault['faultcode'], where)
                self.assertIn(
                    '/v2/%s is served from microversion %s' % (
                        resource, since[resource]), fault['faultstring'])
                self.assertIn('"OpenStack-API-Version: accelerator %s"' %
                              since[resource], fault['faultstring'])
                self.assert_v2_headers(response, header or '2.0')
            checked.add(resource)
        self.assertEqual(set(since), checked)

    def test_resource_at_its_microversion_is_routed(self):
        response = self.request('/v2/hosts', headers={
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'accelerator 2.5'})
        self.assertNotEqual(404, response.status_int)
        self.assertNotIn('microversion', response.text)

    def test_unknown_version_is_not_v2(self):
        for path in ('/v3', '/v0/accelerators', '/v2.1'):
            response = self.request(path)
            self.assertEqual(404, response.status_int, path)
            self.assertNotIn(V2_HEADERS[0], response.headers)
            fault_of(response)


class _Records(logging.Handler):
    """Keeps the records of one logger."""

    def __init__(self, test, name):
        super().__init__(logging.INFO)
        self.records = []
        logger = logging.getLogger(name)
        old_level = logger.level
        logger.setLevel(logging.INFO)
        logger.addHandler(self)
        test.addCleanup(logger.setLevel, old_level)
        test.addCleanup(logger.removeHandler, self)

    def emit(self, record):
        self.records.append(record)


class AccessLogTest(APITestCase):
    """One INFO line per request, with the request's context."""

    GLOBAL_ID = 'req-6a1d0c5e-7a55-4c5b-9d0e-2f1c6c3b4a21'

    def setUp(self):
        super().setUp()
        self.log = _Records(self, access_log.__name__)

    def _line(self, path, method='GET', token='admin', body=None,
              version=None):
        headers = {'X-Auth-Token': token,
                   'X-OpenStack-Request-ID': self.GLOBAL_ID,
                   'OpenStack-API-Version': 'accelerator %s' % (
                       version or '2.0')}
        request = webob.Request.blank(path, method=method, headers=headers,
                                      base_url='http://localhost')
        request.environ['REMOTE_ADDR'] = '192.0.2.7'
        if body is not None:
            request.body = body
            request.content_type = 'application/json'
        response = request.get_response(self.app)
        self.environ_context = request.environ.get(
            cyborg_context.ENVIRON_KEY)
        # The server reads the body, then closes it.
        self.assertIsInstance(response.body, bytes)
        [record] = self.log.records
        del self.log.records[:]
        self.context = record.context
        self.assertEqual(logging.INFO, record.levelno)
        self.assertEqual(self.GLOBAL_ID, record.context.global_request_id)
        self.assertEqual(response.headers['x-openstack-request-id'],
                         record.context.request_id)
        return response, record.getMessage()

    def assert_line(self, line, request_line, status, length):
        prefix = '192.0.2.7 "%s HTTP/1.0" status: %d len: %d time: ' % (
            request_line, status, length)
        self.assertTrue(line.startswith(prefix), (line, prefix))
        self.assertGreater(float(line[len(prefix):]), 0)

    def test_200_400_403_404(self):
        response, line = self._line('/v2?a=b')
        self.assertEqual(200, response.status_int)
        self.assert_line(line, 'GET /v2?a=b', 200, len(response.body))
        response, line = self._line('/v2/accelerator_requests',
                                    method='POST', body=b'{"x": 1}')
        self.assertEqual(400, response.status_int)
        self.assert_line(line, 'POST /v2/accelerator_requests', 400,
                         len(response.body))
        response, line = self._line('/v2/hosts', token='bob:p1',
                                    version='2.5')
        self.assertEqual(403, response.status_int)
        self.assert_line(line, 'GET /v2/hosts', 403, len(response.body))
        response, line = self._line('/v2/nothing')
        self.assertEqual(404, response.status_int)
        self.assert_line(line, 'GET /v2/nothing', 404, len(response.body))

    def test_context_names_the_caller(self):
        self._line('/v2', token='bob:p1')
        self.assertEqual(('bob', 'p1'), (self.context.user_id,
                                         self.context.project_id))

    def test_it_logs_with_the_context_the_api_made(self):
        # The API's context (its is_admin from the roles), not another
        # made again from the headers.
        response, _line = self._line('/v2')
        self.assertEqual(200, response.status_int)
        self.assertTrue(self.context.is_admin)
        self.assertIs(self.context, self.environ_context)

    def test_path_cannot_forge_a_line(self):
        response, line = self._line('/v2/x%0a1.2.3.4%20%22GET')
        self.assertEqual(400, response.status_int)  # URLCheck
        self.assertNotIn('\n', line)
        self.assert_line(line, 'GET /v2/x%0A1.2.3.4%20%22GET', 400,
                         len(response.body))

    def test_can_be_turned_off(self):
        self.flags(access_log=False, group='api')
        response = self.request('/v2')
        self.assertEqual(200, response.status_int)
        self.assertEqual([], self.log.records)


class MiddlewareTest(APITestCase):

    def test_healthcheck(self):
        response = self.request('/healthcheck')
        self.assertEqual(200, response.status_int)
        self.assertIn('x-openstack-request-id', response.headers)

    def test_request_id_on_every_response(self):
        for path in ('/', '/v2', '/v2/missing', '/v9'):
            request_id = self.request(path).headers['x-openstack-request-id']
            self.assertTrue(request_id.startswith('req-'), path)

    def test_cors_preflight(self):
        self.flags(allowed_origin=['https://dashboard.example.com'],
                   group='cors')
        response = self.request('/v2', method='OPTIONS', headers={
            'Origin': 'https://dashboard.example.com',
            'Access-Control-Request-Method': 'GET',
            'Access-Control-Request-Headers': 'OpenStack-API-Version'})
        self.assertEqual(200, response.status_int)
        self.assertEqual('https://dashboard.example.com',
                         response.headers['Access-Control-Allow-Origin'])
        self.assertIn('GET', response.headers['Access-Control-Allow-Methods'])

    def test_cors_other_origin(self):
        self.flags(allowed_origin=['https://dashboard.example.com'],
                   group='cors')
        response = self.request('/v2', headers={
            'Origin': 'https://evil.example.com'})
        self.assertNotIn('Access-Control-Allow-Origin', response.headers)


class KeystoneModeTest(APITestCase):
    """keystonemiddleware with no keystone anywhere: a request without a
    token must be refused without contacting it, public paths served."""

    auth_strategy = 'keystone'
    IDENTITY = 'http://127.0.0.1:9/identity'

    def setUp(self):
        super().setUp()
        self.flags(www_authenticate_uri=self.IDENTITY,
                   delay_auth_decision=False, group='keystone_authtoken')

    def test_protected_path_needs_a_token(self):
        for path in ('/v2/devices', '/devices'):
            response = self.request(path)
            self.assertEqual(401, response.status_int, path)
            self.assertEqual('Keystone uri="%s"' % self.IDENTITY,
                             response.headers['WWW-Authenticate'])
            self.assertEqual('Client', fault_of(response)['faultcode'])

    def test_public_paths(self):
        for path in ('/', '/v2', '/v2/', '/v2.json', '/healthcheck'):
            self.assertEqual(200, self.request(path).status_int, path)

    def test_identity_headers_do_not_authenticate(self):
        response = self.request('/v2/devices', headers={
            'X-Identity-Status': 'Confirmed', 'X-User-Id': 'admin',
            'X-Roles': 'admin'})
        self.assertEqual(401, response.status_int)
