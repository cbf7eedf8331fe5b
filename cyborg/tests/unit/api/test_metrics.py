"""The API's request metrics: route templates keep the labels bounded."""

import prometheus_client as prom
import webob

from cyborg.api.middleware import metrics as metrics_filter
from cyborg.tests import base

REQUESTS = 'cyborg_api_requests_total'


def count(**labels):
    return prom.REGISTRY.get_sample_value(REQUESTS, labels) or 0


class RouteTemplateTest(base.TestCase):

    def test_known_routes_are_templates(self):
        for path, template in (
                ('/', '/'), ('', '/'), ('/healthcheck', '/healthcheck'),
                ('/v2', '/v2'), ('/v2/', '/v2'), ('/v2.json', '/v2'),
                ('/v2/accelerator_requests', '/v2/accelerator_requests'),
                ('/v2/accelerator_requests/', '/v2/accelerator_requests'),
                ('/v2/device_profiles/0c1b2f4e-aaaa-bbbb-cccc-000000000000',
                 '/v2/device_profiles/{id}'),
                ('/v2/hosts/cmp-1/anything/more', '/v2/hosts/{id}/*'),
                ('/v1/accelerators/abc', '/v1/accelerators/{id}'),
                ('/v1', '/v1'), ('/devices', '/v2/devices'),
                ('/devices/d1', '/v2/devices/{id}')):
            self.assertEqual(template, metrics_filter.route_template(path),
                             path)

    def test_unknown_routes_are_one_value(self):
        for path in ('/etc/passwd', '/v2/no_such_resource',
                     '/v2/no_such_resource/x/y', '/v3/devices',
                     '/v1/devices', '/%s' % ('a' * 500)):
            self.assertEqual('other', metrics_filter.route_template(path),
                             path)


def app_answering(status, headers=()):
    def app(environ, start_response):
        start_response(status, list(headers))
        return [b'']
    return metrics_filter.Metrics(app)


class MetricsFilterTest(base.TestCase):

    def test_raw_paths_are_not_labels(self):
        app = app_answering('404 Not Found')
        before = count(route='other', method='GET', status='404',
                       microversion='')
        for n in range(3):
            webob.Request.blank('/random-%d' % n).get_response(app)
        self.assertEqual(3, count(route='other', method='GET', status='404',
                                  microversion='') - before)
        for n in range(3):
            self.assertIsNone(prom.REGISTRY.get_sample_value(
                REQUESTS, {'route': '/random-%d' % n, 'method': 'GET',
                           'status': '404', 'microversion': ''}))

    def test_status_method_and_microversion(self):
        app = app_answering('202 Accepted', [
            ('OpenStack-API-Version', 'accelerator 2.3')])
        labels = dict(route='/v2/accelerator_requests', method='PATCH',
                      status='202', microversion='2.3')
        before = count(**labels)
        webob.Request.blank('/v2/accelerator_requests',
                            method='PATCH').get_response(app)
        self.assertEqual(1, count(**labels) - before)

    def test_unknown_method_is_other(self):
        app = app_answering('405 Method Not Allowed')
        labels = dict(route='/v2/devices', method='other', status='405',
                      microversion='')
        before = count(**labels)
        webob.Request.blank('/v2/devices', method='BREW').get_response(app)
        self.assertEqual(1, count(**labels) - before)

    def test_an_app_that_raises_counts_a_500(self):
        def app(environ, start_response):
            raise RuntimeError('boom')
        labels = dict(route='/v2/devices', method='GET', status='500',
                      microversion='')
        before = count(**labels)
        self.assertRaises(RuntimeError, metrics_filter.Metrics(app),
                          webob.Request.blank('/v2/devices').environ,
                          lambda *args: None)
        self.assertEqual(1, count(**labels) - before)
