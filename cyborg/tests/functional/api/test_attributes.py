"""``/v2/attributes`` through the API, against a real conductor, a real
database and a real Placement, with inventory from device reports."""

import uuid

from cyborg.db import models
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_deployables


class AttributesTest(test_deployables.Inventory, base.APIResourceTestCase):

    def setUp(self):
        super().setUp()
        self.host = self.seed()
        self.fpga = self.deployable('%s_dev0' % self.host)
        self.rc = self.rows(models.Attribute, deployable_id=self.fpga.id,
                            key='rc')[0]

    def keys_of(self, response):
        self.assertEqual(200, response.status_int, response.body)
        return [(a['deployable_id'], a['key'])
                for a in response.json['attributes']]

    def create(self, key='owner', value='team-a', **kwargs):
        body = {'deployable_id': self.fpga.id, 'key': key, 'value': value}
        return self.post('/v2/attributes', body, **kwargs)

    def test_show_every_field(self):
        row = self.rc
        self.assertEqual({
            'uuid': row.uuid, 'deployable_id': self.fpga.id, 'key': 'rc',
            'value': 'FPGA',
            'created_at': row.created_at.isoformat() + '+00:00',
            'updated_at': None,
            'links': [{'href': 'http://localhost/v2/attributes/%s' %
                       row.uuid, 'rel': 'self'}]},
            self.get('/v2/attributes/%s' % row.uuid).json)

    def test_list_and_filters(self):
        everything = self.keys_of(self.get('/v2/attributes'))
        self.assertEqual(len(self.rows(models.Attribute)), len(everything))
        self.assertEqual([(self.fpga.id, 'rc'), (self.fpga.id, 'trait0')],
                         self.keys_of(self.get(
                             '/v2/attributes', deployable_id=self.fpga.id)))
        self.assertEqual(3, len(self.keys_of(self.get('/v2/attributes',
                                                      key='rc'))))
        self.assertEqual([(self.fpga.id, 'rc')], self.keys_of(self.get(
            '/v2/attributes', deployable_id=self.fpga.id, key='rc')))
        self.assertEqual([], self.keys_of(self.get('/v2/attributes',
                                                   deployable_id=99999)))
        for bad in ('one', '1.5', ''):
            self.assert_error(self.get('/v2/attributes', deployable_id=bad),
                              400, 'deployable_id')

    def test_paging_at_2_4(self):
        first = self.get('/v2/attributes', version='2.4', limit=2)
        self.assertEqual(2, len(self.keys_of(first)))
        self.assertIn('next', first.json)

    def test_create_show_delete(self):
        response = self.create()
        self.assertEqual(201, response.status_int, response.body)
        body = response.json
        self.assertEqual((self.fpga.id, 'owner', 'team-a'),
                         (body['deployable_id'], body['key'], body['value']))
        path = '/v2/attributes/%s' % body['uuid']
        self.assertEqual(body, self.get(path).json)
        response = self.delete(path)
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual(b'', response.body)
        self.assert_error(self.get(path), 404, body['uuid'])
        self.assert_error(self.delete(path), 404, body['uuid'])

    def test_deployable_id_as_a_string(self):
        """What ``openstack accelerator device attribute create`` sends;
        upstream takes it too."""
        response = self.post('/v2/attributes', {
            'deployable_id': str(self.fpga.id), 'key': 'k', 'value': 'v'})
        self.assertEqual(201, response.status_int, response.body)
        self.assertEqual(self.fpga.id, response.json['deployable_id'])

    def test_deployable_named_by_its_uuid(self):
        """The id users see on a deployable (``openstack accelerator
        deployable list``) names it too; the answer has its integer
        id."""
        response = self.post('/v2/attributes', {'attribute': {
            'deployable_id': self.fpga.uuid, 'key': 'k', 'value': 'v'}})
        self.assertEqual(201, response.status_int, response.body)
        self.assertEqual(self.fpga.id, response.json['deployable_id'])
        missing = str(uuid.uuid4())
        self.assert_error(self.post('/v2/attributes', {
            'deployable_id': missing, 'key': 'k', 'value': 'v'}), 404,
            missing)

    def test_body_wrapped_as_openstacksdk_sends_it(self):
        """openstacksdk sends ``{"attribute": {...}}``; upstream fails it
        with a 500."""
        response = self.post('/v2/attributes', {'attribute': {
            'deployable_id': self.fpga.id, 'key': 'k', 'value': 'v'}})
        self.assertEqual(201, response.status_int, response.body)
        self.assertEqual('k', response.json['key'])
        for body in ({'attribute': {'key': 'k', 'value': 'v'}},
                     {'attribute': 'k'},
                     {'attribute': {'deployable_id': self.fpga.id,
                                    'key': 'k2', 'value': 'v'}, 'key': 'k'}):
            self.assert_error(self.post('/v2/attributes', body), 400)

    def test_create_refusals(self):
        self.assertEqual(201, self.create().status_int)
        self.assert_error(self.create(), 409, 'owner')
        self.assert_error(self.create(key='rc'), 409, 'rc')
        missing = {'deployable_id': 99999, 'key': 'k', 'value': 'v'}
        self.assert_error(self.post('/v2/attributes', missing), 404, '99999')
        good = {'deployable_id': self.fpga.id, 'key': 'k', 'value': 'v'}
        for body, text in [
                (None, 'deployable_id'), ([], 'deployable_id'),
                ({'key': 'k', 'value': 'v'}, 'deployable_id'),
                (dict(good, color='red'), 'color'),
                (dict(good, deployable_id='x1'), 'deployable_id'),
                (dict(good, deployable_id=1.5), 'deployable_id'),
                (dict(good, deployable_id=True), 'deployable_id'),
                (dict(good, key=''), 'key'),
                (dict(good, key='k' * 256), 'key'),
                (dict(good, key=5), 'key'), (dict(good, value=5), 'value')]:
            self.assert_error(self.post('/v2/attributes', body), 400, text)

    def test_show_errors(self):
        self.assert_error(self.get('/v2/attributes/bad'), 400, 'bad')
        self.assert_error(self.delete('/v2/attributes/bad'), 400, 'bad')
        missing = str(uuid.uuid4())
        self.assert_error(self.get('/v2/attributes/%s' % missing), 404,
                          missing)
        self.assertEqual(405, self.request('PUT', '/v2/attributes').status_int)

    def test_policy(self):
        one = '/v2/attributes/%s' % self.rc.uuid
        for who in (base.MEMBER, base.READER, base.OTHER):
            self.assert_error(self.get('/v2/attributes', headers=who), 403,
                              'cyborg:attribute:get_all')
            self.assert_error(self.get(one, headers=who), 403,
                              'cyborg:attribute:get_one')
        self.assertEqual(200, self.get('/v2/attributes',
                                       headers=base.MANAGER).status_int)
        self.assertEqual(200, self.get(one, headers=base.MANAGER).status_int)
        for who in (base.MANAGER, base.MEMBER):
            self.assert_error(self.create(headers=who), 403,
                              'cyborg:attribute:create')
            self.assert_error(self.delete(one, headers=who), 403,
                              'cyborg:attribute:delete')


class AttributesMySQLTest(AttributesTest):
    backend = 'mysql'


class AttributesPostgreSQLTest(AttributesTest):
    backend = 'postgresql'
