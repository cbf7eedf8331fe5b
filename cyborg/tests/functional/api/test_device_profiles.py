"""``/v2/device_profiles`` through the API, a real conductor and a real
database (SQLite here; the same tests on MariaDB and PostgreSQL below)."""

from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests.functional.api import base

PATH = '/v2/device_profiles'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required',
         'accel:bitstream_id': 'a6a12670-7014-4cff-a563-cea949b57fb3'}


def profile(name='dp-1', groups=None, **extra):
    return dict({'name': name,
                 'groups': [GROUP] if groups is None else groups}, **extra)


class _DeviceProfileTests:

    def create(self, name='dp-1', groups=None, **extra):
        response = self.post(PATH, [profile(name, groups, **extra)])
        self.assertEqual(201, response.status_int, response.body)
        return response.json

    def test_create_show_list_delete(self):
        created = self.create(description='two FPGAs')
        self.assertEqual('dp-1', created['name'])
        self.assertEqual('two FPGAs', created['description'])
        self.assertEqual([GROUP], created['groups'])
        self.assertTrue(uuidutils.is_uuid_like(created['uuid']))
        self.assertEqual('http://localhost/v2/device_profiles/%s'
                         % created['uuid'], created['links'][0]['href'])
        response = self.get(PATH + '/' + created['uuid'])
        self.assertEqual(200, response.status_int)
        self.assertEqual(created, response.json['device_profile'])
        listed = self.get(PATH).json['device_profiles']
        self.assertEqual([created], listed)
        response = self.delete(PATH + '/' + created['uuid'])
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual([], self.get(PATH).json['device_profiles'])

    def test_whitespace_in_keys_is_stripped(self):
        created = self.create(groups=[{'resources: FPGA ': '2',
                                       'trait:  CUSTOM_X': 'forbidden'}])
        self.assertEqual([{'resources:FPGA': '2',
                           'trait:CUSTOM_X': 'forbidden'}],
                         created['groups'])

    def test_given_uuid_and_bare_object(self):
        wanted = uuidutils.generate_uuid()
        response = self.post(PATH, profile(uuid=wanted))
        self.assertEqual(201, response.status_int, response.body)
        self.assertEqual(wanted, response.json['uuid'])
        self.assertTrue(response.location.endswith(wanted))

    def test_list_by_names_as_nova_asks(self):
        self.create('a')
        self.create('b')
        self.create('c')
        response = self.get(PATH, headers=base.MEMBER, name='a,c')
        self.assertEqual(['a', 'c'], sorted(
            p['name'] for p in response.json['device_profiles']))
        response = self.get(PATH, headers=base.MEMBER, name='b')
        self.assertEqual(1, len(response.json['device_profiles']))

    def test_show_by_name_needs_2_2(self):
        self.create('by-name')
        response = self.get(PATH + '/by-name', version='2.2')
        self.assertEqual(200, response.status_int)
        self.assertEqual('by-name', response.json['device_profile']['name'])
        self.assert_error(self.get(PATH + '/by-name'), 406, '2.2')
        self.assert_error(self.get(PATH + '/no-such', version='2.2'), 404)
        self.assert_error(
            self.get(PATH + '/' + uuidutils.generate_uuid()), 404)

    def test_bad_bodies_are_400(self):
        bodies = [
            [], [profile('a'), profile('b')], 'text', [42],
            [{'groups': [GROUP]}],
            [profile('bad name')],
            [profile(groups=[])],
            [{'name': 'x', 'groups': 'nope'}],
            [profile(groups=[{}])],
            [profile(groups=[{'resources:FPGA': 'one'}])],
            [profile(groups=[{'resources:FPGA': '0'}])],
            [profile(groups=[{'resources:WIDGET': '1'}])],
            [profile(groups=[{'trait:HW_CPU_X86_AVX': 'required'}])],
            [profile(groups=[{'trait:CUSTOM_A': 'maybe'}])],
            [profile(groups=[{'colour': 'blue'}])],
            [profile(uuid='not-a-uuid')],
            [profile(extra='field')],
            [profile(description=7)],
        ]
        for body in bodies:
            self.assert_error(self.post(PATH, body), 400)
        self.assertEqual([], self.get(PATH).json['device_profiles'])

    def test_not_json_is_400(self):
        response = self.request('POST', PATH, headers=dict(
            base.ADMIN, **{'Content-Type': 'application/json'}))
        self.assertEqual(400, response.status_int)

    def test_name_longer_than_its_column_is_400(self):
        """Upstream's database refuses it with a 500."""
        self.create('n' * 255)
        self.assert_error(self.post(PATH, [profile('n' * 256)]), 400,
                          '255')

    def test_duplicate_name_is_409(self):
        """The message names the profile that has the name."""
        existing = self.create('twice')['uuid']
        self.assert_error(self.post(PATH, [profile('twice')]), 409,
                          'Device profile twice (uuid %s) already exists.'
                          % existing)

    def test_duplicate_uuid_is_409(self):
        existing = self.create('first')['uuid']
        self.assert_error(self.post(PATH, [dict(profile('second'),
                                                uuid=existing)]), 409,
                          'Device profile first (uuid %s) already exists.'
                          % existing)

    def test_delete_by_names_all_or_nothing(self):
        self.create('a')
        self.create('b')
        self.assert_error(self.delete(PATH, value='a,missing'), 404,
                          'missing')
        self.assertEqual(2, len(self.get(PATH).json['device_profiles']))
        response = self.delete(PATH, value='a,b')
        self.assertEqual(204, response.status_int)
        self.assertEqual([], self.get(PATH).json['device_profiles'])
        self.assert_error(self.delete(PATH), 400)

    def test_profile_in_use_is_409(self):
        created = self.create('used')
        self.create('free')
        with db_api.writer.using(self.context) as session:
            row = session.query(models.DeviceProfile).filter_by(
                uuid=created['uuid']).one()
            session.add(models.ExtendedAcceleratorRequest(
                uuid=uuidutils.generate_uuid(), device_profile_id=row.id,
                device_profile_group_id=0, state='Initial'))
        self.assert_error(self.delete(PATH, value='free,used'), 409, 'used')
        self.assertEqual(2, len(self.get(PATH).json['device_profiles']))

    def test_policies(self):
        created = self.create('p')
        self.assert_error(self.post(PATH, [profile('q')],
                                    headers=base.MEMBER), 403)
        self.assert_error(self.delete(PATH + '/' + created['uuid'],
                                      headers=base.MEMBER), 403)
        for who in (base.MEMBER, base.READER, base.OTHER):
            self.assertEqual(200, self.get(PATH, headers=who).status_int)
            self.assertEqual(200, self.get(PATH + '/' + created['uuid'],
                                           headers=who).status_int)
        anonymous = {'X-Roles': ''}
        self.assertEqual(403, self.get(PATH, headers=anonymous).status_int)

    def test_paging_at_2_4(self):
        for name in ('e', 'b', 'd', 'a', 'c'):
            self.create(name)
        response = self.get(PATH, version='2.4', limit=2, sort_key='name')
        page = response.json
        self.assertEqual(['a', 'b'], [p['name']
                                      for p in page['device_profiles']])
        names = [p['name'] for p in page['device_profiles']]
        while 'next' in page:
            url = page['next'].replace('http://localhost', '')
            page = self.get(url, version='2.4').json
            names += [p['name'] for p in page['device_profiles']]
        self.assertEqual(['a', 'b', 'c', 'd', 'e'], names)
        # Names and pages together.
        page = self.get(PATH, version='2.4', name='e,c,a,x', limit=2,
                        sort_key='name', sort_dir='desc').json
        names = [p['name'] for p in page['device_profiles']]
        self.assertEqual(['e', 'c'], names)
        page = self.get(page['next'].replace('http://localhost', ''),
                        version='2.4').json
        self.assertEqual(['a'], [p['name'] for p in page['device_profiles']])
        # Without a page, in the order they were created.
        self.assertEqual(['b', 'd'], [p['name'] for p in self.get(
            PATH, name='d,b').json['device_profiles']])
        # Below 2.4 the paging parameters are ignored, as upstream.
        everything = self.get(PATH, limit=2).json
        self.assertEqual(5, len(everything['device_profiles']))
        self.assertNotIn('next', everything)
        self.assert_error(self.get(PATH, version='2.4', sort_key='groups'),
                          400)

    def test_stored_as_upstream(self):
        created = self.create('stored')
        with db_api.reader.using(self.context) as session:
            row = session.query(models.DeviceProfile).filter_by(
                uuid=created['uuid']).one()
        self.assertEqual({'groups': [GROUP]},
                         jsonutils.loads(row.profile_json))


class SQLiteDeviceProfilesTest(_DeviceProfileTests,
                               base.APIResourceTestCase):
    backend = 'sqlite'


class MySQLDeviceProfilesTest(_DeviceProfileTests,
                              base.APIResourceTestCase):
    backend = 'mysql'


class PostgreSQLDeviceProfilesTest(_DeviceProfileTests,
                                   base.APIResourceTestCase):
    backend = 'postgresql'


class NoContentTest(base.APIResourceTestCase):
    """204 and 202 have no body, so kept-alive connections stay sane."""

    def test_delete_has_no_body(self):
        response = self.post(PATH, [profile('gone')])
        response = self.delete(PATH + '/' + response.json['uuid'])
        self.assertEqual(204, response.status_int)
        self.assertEqual(b'', response.body)
