"""``/v2/devices`` through the API, against a real conductor, a real
database and a real Placement, with inventory from device reports."""

from urllib import parse
import uuid

from cyborg.db import models
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_deployables


class DevicesTest(test_deployables.Inventory, base.APIResourceTestCase):

    def setUp(self):
        super().setUp()
        self.host = self.seed()
        self.other_host = self.seed()
        self.fpga, _, self.gpu = self.rows(models.Device,
                                           hostname=self.host)

    def uuids_of(self, response):
        self.assertEqual(200, response.status_int, response.body)
        return [d['uuid'] for d in response.json['devices']]

    def test_show_every_field(self):
        row = self.gpu
        path = '/v2/devices/%s' % row.uuid
        expected = {
            'uuid': row.uuid, 'type': 'GPU', 'vendor': '10de',
            'model': 'A100', 'std_board_info': '{}',
            'vendor_board_info': 'fake', 'hostname': self.host,
            'created_at': row.created_at.isoformat() + '+00:00',
            'updated_at': None,
            'links': [{'href': 'http://localhost/v2/devices/%s' % row.uuid,
                       'rel': 'self'}]}
        self.assertEqual(expected, self.get(path).json)
        self.assertEqual(expected, self.get(path, version='2.2').json)
        self.assertEqual(dict(expected, status='enabled'),
                         self.get(path, version='2.3').json)

    def test_list_status_from_2_3(self):
        devices = self.get('/v2/devices', version='2.3').json['devices']
        self.assertEqual(6, len(devices))
        self.assertEqual({'enabled'}, {d['status'] for d in devices})
        devices = self.get('/v2/devices').json['devices']
        self.assertFalse([d for d in devices if 'status' in d])

    def test_query_filters(self):
        self.assertEqual(
            {self.fpga.uuid, self.gpu.uuid} | {
                r.uuid for r in self.rows(models.Device, hostname=self.host,
                                          type='FPGA')},
            set(self.uuids_of(self.get('/v2/devices', hostname=self.host))))
        self.assertEqual([self.gpu.uuid], self.uuids_of(self.get(
            '/v2/devices', hostname=self.host, type='GPU')))
        self.assertEqual(2, len(self.uuids_of(self.get(
            '/v2/devices', vendor='10de'))))
        self.assertEqual([], self.uuids_of(self.get('/v2/devices',
                                                    type='QAT')))
        # Other parameters are not filters, as upstream.
        self.assertEqual(6, len(self.uuids_of(self.get('/v2/devices',
                                                       color='red'))))

    def test_legacy_filters(self):
        path = ('/v2/devices?hostname=%s&filters.field=sort_key'
                '&filters.value=type&filters.field=sort_dir'
                '&filters.value=desc&filters.field=limit&filters.value=1'
                % self.host)
        self.assertEqual([self.gpu.uuid], self.uuids_of(self.get(path)))
        self.assert_error(self.get('/v2/devices', **{
            'filters.field': 'vendor', 'filters.value': 'x'}), 400,
            'vendor')
        self.assert_error(self.get('/v2/devices', **{
            'filters.field': 'sort_key', 'filters.value': 'secret'}), 400,
            'sort_key')

    def test_paging_at_2_4(self):
        seen, path = [], '/v2/devices?limit=4&sort_key=hostname'
        while path:
            response = self.get(path, version='2.4')
            seen += self.uuids_of(response)
            following = response.json.get('next')
            path = following and '/v2/devices?' + parse.urlsplit(
                following).query
        self.assertEqual(6, len(set(seen)))
        self.assertEqual(6, len(seen))
        self.assert_error(self.get('/v2/devices', version='2.4',
                                   limit='x'), 400, 'limit')

    def test_show_errors(self):
        self.assert_error(self.get('/v2/devices/bad'), 400, 'bad')
        missing = str(uuid.uuid4())
        self.assert_error(self.get('/v2/devices/%s' % missing), 404, missing)

    def test_enable_disable_errors(self):
        missing = str(uuid.uuid4())
        for action in ('enable', 'disable'):
            self.assert_error(self.post('/v2/devices/%s/%s' % (
                missing, action)), 404, missing)
            self.assert_error(self.post('/v2/devices/bad/%s' % action), 400,
                              'bad')
            self.assertEqual(405, self.get('/v2/devices/%s/%s' % (
                self.fpga.uuid, action)).status_int)

    def test_disable_and_enable(self):
        """Disable then enable: 204 each, the status follows."""
        path = '/v2/devices/%s/' % self.fpga.uuid
        response = self.post(path + 'disable')
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual(b'', response.body)
        self.assertEqual('maintaining', self.get(
            path, version='2.3').json['status'])
        response = self.post(path + 'enable')
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual('enabled', self.get(
            path, version='2.3').json['status'])

    def test_policy(self):
        one = '/v2/devices/%s' % self.fpga.uuid
        for who in (base.MEMBER, base.READER, base.OTHER):
            self.assert_error(self.get('/v2/devices', headers=who), 403,
                              'cyborg:device:get_all')
            self.assert_error(self.get(one, headers=who), 403,
                              'cyborg:device:get_one')
        self.assertEqual(200, self.get('/v2/devices',
                                       headers=base.MANAGER).status_int)
        self.assertEqual(200, self.get(one, headers=base.MANAGER).status_int)
        for action in ('enable', 'disable'):
            for who in (base.MANAGER, base.MEMBER):
                self.assert_error(
                    self.post('%s/%s' % (one, action), headers=who), 403,
                    'cyborg:device:%s' % action)


class DevicesMySQLTest(DevicesTest):
    backend = 'mysql'


class DevicesPostgreSQLTest(DevicesTest):
    backend = 'postgresql'
