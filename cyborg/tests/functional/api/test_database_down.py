"""The API while its database does not answer: every request that needs
the database is a 503 with ``Retry-After``, whether the API reads it or
the conductor writes it over RPC, and the first request after it returns
is served."""

from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import routes

SOME_UUID = '9a3f3a5e-6c1d-4b8a-9f3e-2d6c5b4a3f21'
READS = ('/v2/device_profiles', '/v2/deployables', '/v2/devices',
         '/v2/accelerator_requests', '/v2/attributes', '/v1/accelerators',
         '/v2/device_profiles/%s' % SOME_UUID)


class _DatabaseDown:

    gated_database = True

    def setUp(self):
        super().setUp()
        self.gate = self.db.gate

    def assert_unavailable(self, response):
        self.assert_error(response, 503, 'database is unavailable')
        self.assertEqual('5', response.headers.get('Retry-After'))

    def profile(self, name):
        return [{'name': name, 'groups': [{'resources:FPGA': '1'}]}]

    def test_reads_and_writes_are_503_then_served_at_once(self):
        self.assertEqual(201, self.post('/v2/device_profiles',
                                        self.profile('before')).status_int)
        self.gate.close()
        for path in READS:
            self.assert_unavailable(self.get(path))
        # A write fails in the conductor and comes back over RPC.
        self.assert_unavailable(self.post('/v2/device_profiles',
                                          self.profile('during')))
        self.gate.open()
        response = self.get('/v2/device_profiles')
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(201, self.post('/v2/device_profiles',
                                        self.profile('after')).status_int)
        self.assertEqual(['after', 'before'], sorted(
            p['name'] for p in self.get(
                '/v2/device_profiles').json['device_profiles']))

    def test_no_route_is_a_500(self):
        self.gate.close()
        for route in routes.all_routes():
            path = route.path.replace(routes.PLACEHOLDER, SOME_UUID)
            method = 'GET' if route.method == '*' else route.method
            response = self.request(method, path, service=True)
            self.assertNotEqual(500, response.status_int,
                                '%s %s' % (method, path))
            if response.status_int == 503:
                self.assert_unavailable(response)


class DatabaseDownMySQLTest(_DatabaseDown, base.APIResourceTestCase):
    backend = 'mysql'


class DatabaseDownPostgreSQLTest(_DatabaseDown, base.APIResourceTestCase):
    backend = 'postgresql'
