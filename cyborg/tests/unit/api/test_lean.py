"""cyborg.api.middleware.lean answers as oslo.middleware's RequestId, CORS
and HTTPProxyToWSGI answer: the same requests through both, compared."""

import itertools

from oslo_config import cfg
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import testtools
import webob

from cyborg.api.middleware import lean

ORIGIN = 'https://dashboard.example.com'
GLOBAL_ID = 'req-12345678-1234-1234-1234-123456789012'


def inner(environ, start_response):
    """Says what it saw; sets its own request id header when asked."""
    headers = [('Content-Type', 'text/plain')]
    if environ.get('HTTP_X_SET_ID'):
        headers.append(('X-OpenStack-Request-Id', 'inner'))
    status = '404 Not Found' if environ['PATH_INFO'] == '/gone' else '200 OK'
    start_response(status, headers)
    seen = '%s %s %s %s' % (
        environ.get('openstack.global_request_id'),
        environ['openstack.request_id'][:4], environ['wsgi.url_scheme'],
        environ.get('HTTP_HOST'))
    return [seen.encode()]


def conf(proxy_headers):
    opts = cfg.ConfigOpts()
    opts.register_opts(http_proxy_to_wsgi.OPTS, group='oslo_middleware')
    opts.register_opts(cors.CORS_OPTS, group='cors')
    opts.set_override('enable_proxy_headers_parsing', proxy_headers,
                      group='oslo_middleware')
    opts.set_override('allowed_origin', [ORIGIN], group='cors')
    opts([], project='cyborg-test-lean')
    return opts


def oslo_stack(config):
    app = cors.CORS(inner, config)
    app = request_id.RequestId(app, config)
    return http_proxy_to_wsgi.HTTPProxyToWSGI(app, config)


def lean_stack(config):
    app = lean.CORS(inner, config)
    app = lean.RequestId(app)
    return lean.ProxyHeaders(app, config)


def answer(app, method, path, headers):
    request = webob.Request.blank(path, method=method, headers=headers)
    response = request.get_response(app)
    found = dict(response.headers)
    request_ids = response.headers.getall('x-openstack-request-id')
    found.pop('x-openstack-request-id', None)
    return response.status, found, response.body, [
        value if value == 'inner' else value[:4] for value in request_ids]


class LeanTest(testtools.TestCase):

    def test_same_answers_as_oslo_middleware(self):
        header_sets = [
            {}, {'Origin': ORIGIN}, {'Origin': 'https://evil.example.com'},
            {'Origin': ORIGIN, 'Access-Control-Request-Method': 'GET'},
            {'X-Openstack-Request-Id': GLOBAL_ID},
            {'X-Openstack-Request-Id': 'req-bogus'},
            {'X-Set-Id': '1'},
            {'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'api.example'},
        ]
        for proxy_headers in (False, True):
            config = conf(proxy_headers)
            ours, theirs = lean_stack(config), oslo_stack(config)
            for method, path, headers in itertools.product(
                    ('GET', 'HEAD', 'OPTIONS', 'POST'), ('/', '/gone'),
                    header_sets):
                with self.subTest(method=method, path=path, headers=headers,
                                  proxy_headers=proxy_headers):
                    self.assertEqual(answer(theirs, method, path, headers),
                                     answer(ours, method, path, headers))

    def test_proxy_headers_option_is_read_per_request(self):
        config = conf(False)
        app = lean_stack(config)
        headers = {'X-Forwarded-Proto': 'https'}
        self.assertIn(b' http ', answer(app, 'GET', '/', headers)[2])
        config.set_override('enable_proxy_headers_parsing', True,
                            group='oslo_middleware')
        self.assertIn(b' https ', answer(app, 'GET', '/', headers)[2])

    def test_request_id_and_global_id(self):
        app = lean_stack(conf(False))
        request = webob.Request.blank('/', headers={
            'X-Openstack-Request-Id': GLOBAL_ID})
        response = request.get_response(app)
        self.assertTrue(response.body.startswith(GLOBAL_ID.encode()))
        self.assertRegex(response.headers['x-openstack-request-id'],
                         request_id.ID_FORMAT)
