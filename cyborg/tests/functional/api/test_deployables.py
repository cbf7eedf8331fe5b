"""``/v2/deployables`` through the API, against a real conductor, a real
database and a real Placement. Inventory comes from device reports
reconciled by the conductor; FPGA programming meets a stand-in Glance
(a WSGI app on a loopback port) and a stand-in agent (an RPC endpoint on
the agent topic), which fake only the hardware side."""

import hashlib
import json
from urllib import parse
import uuid

import oslo_messaging as messaging
import sqlalchemy as sa
import webob

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import manager as agent_manager
from cyborg.agent import reporter as agent_reporter
from cyborg.common import exception
from cyborg.common import rpc
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional.api import base
from cyborg.tests.functional import glance
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_reporting

FUNCTION_ID = 'a1b2c3d4-0000-4000-8000-00000000f00d'
OLD_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_FAKEDRIVER_OLD'
NEW_TRAIT = ('CUSTOM_FPGA_FUNCTION_ID_FAKEDRIVER_'
             'A1B2C3D4_0000_4000_8000_00000000F00D')


def gpu_device(hostname):
    """A GPU like the fake FPGA of test_reporting, on PCI function 7."""
    device = test_reporting.get_test_device(hostname, function=7, num=1,
                                            rc='PGPU', traits=())
    device.type = 'GPU'
    device.vendor = '10de'
    device.model = 'A100'
    device.deployable_list[0].driver_name = 'NVIDIAGPUDRIVER'
    return device


class Inventory:
    """Seeds a host's devices the way an agent does: a report reconciled
    by the conductor into the database and Placement."""

    def seed_under_named_compute_node(self):
        """The fake device of host ``cmp-1``, whose agent names its
        compute node provider ``cmp-1.example.org`` (as Nova named it)."""
        self.flags(host='cmp-1')
        self.flags(resource_provider_name='cmp-1.example.org', group='agent')
        self.seed(fake_driver.FakeDriver(self.conf).discover(), 'cmp-1',
                  resource_provider_name='cmp-1.example.org')

    def seed(self, devices=None, hostname=None, resource_provider_name=None):
        """``resource_provider_name``: the compute node provider is named
        so (and removed after the test), as the agent says in its
        hello."""
        if not hasattr(self, 'placement'):
            self.placement = self.useFixture(
                placement_fixture.Placement(self.conf))
        hostname = hostname or 'host-%s' % uuid.uuid4().hex[:12]
        db_hosts.record_hello(self.context, hostname, hostname, '1', [],
                              resource_provider_name=resource_provider_name)
        self.compute_node = self.placement.create_compute_node(
            resource_provider_name or hostname,
            remove_after=bool(resource_provider_name))
        if devices is None:
            devices = [test_reporting.get_test_device(hostname),
                       test_reporting.get_test_device(hostname, function=1,
                                                      num=4),
                       gpu_device(hostname)]
        digest = agent_reporter.report_hash(devices)
        accepted = self.conductor.reporting.report(self.context, hostname,
                                                   devices, digest)
        self.assertEqual(digest, accepted)
        return hostname

    def rows(self, model, **filters):
        with db_api.reader.using(self.context) as session:
            return (session.query(model).filter_by(**filters)
                    .order_by(model.id).all())

    def deployable(self, name):
        [row] = self.rows(models.Deployable, name=name)
        return row


class FakeAgent:
    """The agent's ``fpga_program`` endpoint; the hardware is faked."""

    target = messaging.Target(version='1.1')

    def __init__(self):
        self.calls = []
        self.result = True

    def fpga_program(self, context, controlpath_id, image_uuid, driver_name):
        self.calls.append((controlpath_id, image_uuid, driver_name))
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


class ProgramStandIns:
    """A stand-in Glance that [glance] points at, and a stand-in agent
    on ``hostname``."""

    def start_glance(self):
        self.glance = glance.FakeGlance().start(self)

    def start_agent(self, hostname):
        self.agent = FakeAgent()
        cyborg_fixtures.start_rpc_service(self, self.agent, rpc.AGENT_TOPIC,
                                          hostname)

    def traits(self, deployable_name):
        rp_uuid = placement_sync.provider_uuid(deployable_name)
        _, body = self.placement.get('/resource_providers/%s/traits' %
                                     rp_uuid)
        return set(body['traits'])


def program_body(image_uuid):
    return [{'path': '/program', 'op': 'replace',
             'value': [{'image_uuid': image_uuid}]}]


class DeployablesTest(Inventory, base.APIResourceTestCase):

    def setUp(self):
        super().setUp()
        self.host = self.seed()
        self.fpga = self.deployable('%s_dev0' % self.host)
        self.names = sorted(row.name for row in self.rows(models.Deployable))

    def names_of(self, response):
        self.assertEqual(200, response.status_int, response.body)
        return [d['name'] for d in response.json['deployables']]

    def test_show_every_field(self):
        row = self.fpga
        body = self.get('/v2/deployables/%s' % row.uuid).json
        self.assertEqual({
            'uuid': row.uuid, 'parent_id': None, 'root_id': None,
            'name': row.name, 'num_accelerators': 16,
            'device_id': row.device_id,
            'attributes_list': json.dumps([{'rc': 'FPGA'},
                                           {'trait0': 'CUSTOM_FAKE_DEVICE'}]),
            'rp_uuid': placement_sync.provider_uuid(row.name),
            'driver_name': 'FAKEDRIVER', 'bitstream_id': None,
            'created_at': row.created_at.isoformat() + '+00:00',
            'updated_at': None,
            'links': [
                {'href': 'http://localhost/v2/deployables/%s' % row.uuid,
                 'rel': 'self'},
                {'href': 'http://localhost/deployables/%s' % row.uuid,
                 'rel': 'bookmark'}]}, body)

    def test_list_has_every_deployable_with_its_attributes(self):
        body = self.get('/v2/deployables').json
        self.assertEqual(self.names, sorted(d['name']
                                            for d in body['deployables']))
        self.assertNotIn('next', body)
        gpu = [d for d in body['deployables']
               if d['driver_name'] == 'NVIDIAGPUDRIVER'][0]
        self.assertEqual([{'rc': 'PGPU'}], json.loads(gpu['attributes_list']))

    def test_list_reads_attributes_in_one_query(self):
        statements = []
        sa.event.listen(self.db.engine, 'before_cursor_execute',
                        lambda *args: statements.append(args[2]))
        self.assertEqual(3, len(self.names_of(self.get('/v2/deployables'))))
        from_attributes = [s for s in statements
                           if 'FROM attributes' in s.replace('"', '')]
        self.assertEqual(1, len(from_attributes), from_attributes)

    def test_list_default_order_is_newest_first(self):
        names = self.names_of(self.get('/v2/deployables'))
        with db_api.reader.using(self.context) as session:
            expected = [r.name for r in session.query(models.Deployable)
                        .order_by(models.Deployable.created_at.desc(),
                                  models.Deployable.id.desc())]
        self.assertEqual(expected, names)

    def test_filter_by_name(self):
        response = self.get('/v2/deployables', **{
            'filters.field': 'name', 'filters.value': self.fpga.name})
        self.assertEqual([self.fpga.name], self.names_of(response))
        response = self.get('/v2/deployables', **{
            'filters.field': 'name', 'filters.value': 'nothing'})
        self.assertEqual([], self.names_of(response))

    def test_filters_limit_and_sort(self):
        path = ('/v2/deployables?filters.field=sort_key&filters.value=name'
                '&filters.field=sort_dir&filters.value=asc'
                '&filters.field=limit&filters.value=2')
        self.assertEqual(self.names[:2], self.names_of(self.get(path)))
        path = ('/v2/deployables?filters.field=sort_key&filters.value=name'
                '&filters.field=sort_dir&filters.value=desc')
        self.assertEqual(self.names[::-1], self.names_of(self.get(path)))

    def test_known_v1_filters_are_ignored(self):
        path = ('/v2/deployables?filters.field=board&filters.value=x'
                '&filters.field=instance_uuid&filters.value=y')
        self.assertEqual(3, len(self.names_of(self.get(path))))

    def test_bad_filters(self):
        for query, text in [
                ({'filters.field': 'color', 'filters.value': 'red'},
                 'color'),
                ({'filters.field': 'name'}, 'filters.value'),
                ({'filters.field': 'limit', 'filters.value': 'many'},
                 'limit'),
                ({'filters.field': 'limit', 'filters.value': '0'}, 'limit'),
                ({'filters.field': 'sort_key', 'filters.value': 'secret'},
                 'sort_key'),
                ({'filters.field': 'sort_dir', 'filters.value': 'up'},
                 'sort_dir')]:
            self.assert_error(self.get('/v2/deployables', **query), 400,
                              text)

    def test_paging_at_2_4(self):
        first = self.get('/v2/deployables', version='2.4', limit=2,
                         sort_key='name', sort_dir='asc')
        self.assertEqual(self.names[:2], self.names_of(first))
        following = parse.urlsplit(first.json['next'])
        second = self.get('/v2/deployables?' + following.query,
                          version='2.4')
        self.assertEqual(self.names[2:], self.names_of(second))
        self.assertNotIn('next', second.json)
        self.assert_error(self.get('/v2/deployables', version='2.4',
                                   marker='nope'), 400, 'marker')
        self.assert_error(self.get('/v2/deployables', version='2.4',
                                   marker=str(uuid.uuid4())), 400, 'marker')

    def test_paging_parameters_ignored_before_2_4(self):
        response = self.get('/v2/deployables', version='2.3', limit=1)
        self.assertEqual(3, len(self.names_of(response)))

    def test_show_errors(self):
        self.assert_error(self.get('/v2/deployables/not-a-uuid'), 400,
                          'not-a-uuid')
        missing = str(uuid.uuid4())
        self.assert_error(self.get('/v2/deployables/%s' % missing), 404,
                          missing)

    def test_methods_not_allowed(self):
        self.assertEqual(405, self.post('/v2/deployables', {}).status_int)
        self.assertEqual(405, self.delete(
            '/v2/deployables/%s' % self.fpga.uuid).status_int)
        self.assertEqual(405, self.get(
            '/v2/deployables/%s/program' % self.fpga.uuid).status_int)

    def test_policy(self):
        one = '/v2/deployables/%s' % self.fpga.uuid
        for who in (base.MEMBER, base.READER, base.OTHER):
            self.assert_error(self.get('/v2/deployables', headers=who), 403,
                              'cyborg:deployable:get_all')
            self.assert_error(self.get(one, headers=who), 403,
                              'cyborg:deployable:get_one')
        self.assertEqual(200, self.get('/v2/deployables',
                                       headers=base.MANAGER).status_int)
        self.assertEqual(200, self.get(one, headers=base.MANAGER).status_int)
        for who in (base.MANAGER, base.MEMBER):
            self.assert_error(
                self.patch(one + '/program', program_body(str(uuid.uuid4())),
                           headers=who), 403, 'cyborg:deployable:program')


class ProgramTest(Inventory, ProgramStandIns, base.APIResourceTestCase):

    def setUp(self):
        super().setUp()
        self.host = self.seed()
        self.fpga = self.deployable('%s_dev0' % self.host)
        self.gpu = self.deployable('%s_dev7' % self.host)
        self.start_glance()
        self.start_agent(self.host)
        self.image = self.glance.add(**{'accel:function_id': FUNCTION_ID})
        self.path = '/v2/deployables/%s/program' % self.fpga.uuid

    def test_program_records_bitstream_and_function_trait(self):
        response = self.patch(self.path, program_body(self.image['id']))
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(self.image['id'], response.json['bitstream_id'])
        self.assertEqual(self.fpga.uuid, response.json['uuid'])
        [cpid] = self.rows(models.ControlpathID,
                           device_id=self.fpga.device_id)
        self.assertEqual([({'cpid_type': 'PCI', 'cpid_info': cpid.cpid_info},
                           self.image['id'], 'FAKEDRIVER')],
                         self.agent.calls)
        self.assertEqual(self.image['id'],
                         self.deployable(self.fpga.name).bitstream_id)
        self.assertEqual({'CUSTOM_FAKE_DEVICE', 'OWNER_CYBORG', NEW_TRAIT},
                         self.traits(self.fpga.name))

    def test_reprogramming_replaces_the_function_trait(self):
        old = self.glance.add(**{'accel:function_id': 'old'})
        self.assertEqual(200, self.patch(
            self.path, program_body(old['id'])).status_int)
        self.assertIn(OLD_TRAIT, self.traits(self.fpga.name))
        self.assertEqual(200, self.patch(
            self.path, program_body(self.image['id'])).status_int)
        self.assertEqual({'CUSTOM_FAKE_DEVICE', 'OWNER_CYBORG', NEW_TRAIT},
                         self.traits(self.fpga.name))
        # An image without a function leaves no function trait.
        plain = self.glance.add()
        self.assertEqual(200, self.patch(
            self.path, program_body(plain['id'])).status_int)
        self.assertEqual({'CUSTOM_FAKE_DEVICE', 'OWNER_CYBORG'},
                         self.traits(self.fpga.name))

    def test_bad_bodies(self):
        good = program_body(self.image['id'])[0]
        for body in [None, {}, [], [good, good],
                     [dict(good, path='/bitstream')],
                     [dict(good, op='add')], [dict(good, value=[])],
                     [dict(good, value={'image_uuid': self.image['id']})],
                     [dict(good, value=[{'image': self.image['id']}])],
                     'program']:
            self.assert_error(self.patch(self.path, body), 400, '/program')
        self.assert_error(self.patch(self.path, program_body('nope')), 400,
                          'nope')
        self.assert_error(self.patch(self.path, program_body(5)), 400)
        response = self.request('PATCH', self.path, headers=dict(
            base.ADMIN, **{'Content-Type': 'application/json'}))
        self.assertEqual(400, response.status_int)
        self.assertEqual([], self.agent.calls)

    def test_invalid_json(self):
        request = webob.Request.blank(self.path, method='PATCH',
                                      headers=base.ADMIN,
                                      base_url='http://localhost')
        request.body = b'{not json'
        request.content_type = 'application/json'
        self.assert_error(request.get_response(self.app), 400, 'JSON')

    def test_the_path_openstacksdk_sends(self):
        """``.../{uuid}/program/{uuid}``, the same uuid twice."""
        response = self.patch('%s/%s' % (self.path, self.fpga.uuid),
                              program_body(self.image['id']))
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(self.image['id'], response.json['bitstream_id'])
        for other in (self.gpu.uuid, 'x'):
            self.assertEqual(404, self.patch(
                '%s/%s' % (self.path, other),
                program_body(self.image['id'])).status_int)
        self.assertEqual(1, len(self.agent.calls))

    def test_unknown_image_or_deployable(self):
        missing = str(uuid.uuid4())
        self.assert_error(self.patch(self.path, program_body(missing)), 400,
                          missing)
        self.assert_error(self.patch(
            '/v2/deployables/%s/program' % missing,
            program_body(self.image['id'])), 404, missing)
        self.assert_error(self.patch(
            '/v2/deployables/bad/program', program_body(self.image['id'])),
            400, 'bad')
        self.assertEqual([], self.agent.calls)

    def test_not_an_fpga(self):
        self.assert_error(self.patch(
            '/v2/deployables/%s/program' % self.gpu.uuid,
            program_body(self.image['id'])), 400, 'not an FPGA')

    def test_driver_failure_is_a_502_saying_what_failed(self):
        self.agent.result = False
        message = self.assert_error(
            self.patch(self.path, program_body(self.image['id'])), 502,
            'FAKEDRIVER driver reported a failure')
        self.assertIn(self.host, message)
        self.assertIsNone(self.deployable(self.fpga.name).bitstream_id)
        self.assertNotIn(NEW_TRAIT, self.traits(self.fpga.name))

    def test_agent_error_is_a_502_with_its_reason(self):
        self.agent.result = RuntimeError('fpgaconf exited with 1')
        self.assert_error(
            self.patch(self.path, program_body(self.image['id'])), 502,
            'fpgaconf exited with 1')
        self.agent.result = exception.DeployableNotProgrammable(
            deployable='x', reason='busy')
        self.assert_error(
            self.patch(self.path, program_body(self.image['id'])), 400,
            'busy')

    def test_glance_without_credentials(self):
        self.flags(auth_type=None, group='glance')
        self.assert_error(
            self.patch(self.path, program_body(self.image['id'])), 503,
            '[glance]')

    def test_glance_down(self):
        self.flags(endpoint='http://127.0.0.1:%d' %
                   placement_fixture._closed_port(), group='glance')
        self.assert_error(
            self.patch(self.path, program_body(self.image['id'])), 503,
            'Glance')


class ProgramForBindTest(Inventory, ProgramStandIns,
                         base.APIResourceTestCase):
    """``Inventory.program_for_bind``, as the ARQ binding calls it."""

    def setUp(self):
        super().setUp()
        self.host = self.seed()
        self.fpga = self.deployable('%s_dev0' % self.host)
        self.start_glance()
        self.start_agent(self.host)
        self.image = self.glance.add(**{'accel:function_id': FUNCTION_ID})
        self.inventory = self.conductor.inventory

    def bind(self, **properties):
        return self.inventory.program_for_bind(self.context, self.fpga.uuid,
                                               properties, self.host)

    def test_nothing_asked_nothing_done(self):
        self.assertIsNone(self.bind())
        self.assertEqual([], self.agent.calls)
        self.assertEqual([], self.glance.requests)

    def test_by_function_id(self):
        self.assertEqual(self.image['id'],
                         self.bind(**{'accel:function_id': FUNCTION_ID}))
        self.assertEqual(1, len(self.agent.calls))
        self.assertIn(NEW_TRAIT, self.traits(self.fpga.name))
        # Already running it: not programmed again.
        self.bind(**{'accel:function_id': FUNCTION_ID})
        self.assertEqual(1, len(self.agent.calls))

    def test_by_bitstream_id(self):
        self.assertEqual(self.image['id'],
                         self.bind(**{'accel:bitstream_id':
                                      self.image['id']}))
        self.assertEqual(self.image['id'],
                         self.deployable(self.fpga.name).bitstream_id)
        self.glance.requests.clear()
        self.bind(**{'accel:bitstream_id': self.image['id']})
        self.assertEqual(1, len(self.agent.calls))
        self.assertEqual([], self.glance.requests)

    def test_refusals(self):
        self.assertRaises(exception.InvalidParameterValue, self.bind, **{
            'accel:bitstream_id': self.image['id'],
            'accel:function_id': FUNCTION_ID})
        self.assertRaises(exception.ImageNotUnique, self.bind,
                          **{'accel:function_id': 'unknown'})
        self.glance.add(**{'accel:function_id': FUNCTION_ID})
        self.assertRaises(exception.ImageNotUnique, self.bind,
                          **{'accel:function_id': FUNCTION_ID})
        self.assertRaises(exception.ImageNotFound, self.bind,
                          **{'accel:bitstream_id': str(uuid.uuid4())})
        self.assertEqual([], self.agent.calls)


    def test_only_active_images_of_trusted_owners(self):
        tenant = 'a' * 32
        # A tenant's images: one claiming the function, one by id.
        self.glance.add(owner=tenant, **{'accel:function_id': FUNCTION_ID})
        theirs = self.glance.add(owner=tenant,
                                 **{'accel:function_id': 'other'})
        self.assertEqual(self.image['id'],
                         self.bind(**{'accel:function_id': FUNCTION_ID}))
        error = self.assertRaises(exception.ImageNotTrusted, self.bind, **{
            'accel:bitstream_id': theirs['id']})
        self.assertIn('owner %s is not a trusted image owner' % tenant,
                      str(error))
        # The operator's image is missing: the tenant's is not
        # taken instead.
        self.assertRaises(exception.ImageNotUnique, self.bind,
                          **{'accel:function_id': 'other'})
        queued = self.glance.add(status='queued',
                                 **{'accel:function_id': 'other'})
        self.assertRaises(exception.ImageNotUnique, self.bind,
                          **{'accel:function_id': 'other'})
        self.assertRaises(exception.ImageNotTrusted, self.bind,
                          **{'accel:bitstream_id': queued['id']})
        self.assertEqual(1, len(self.agent.calls))

    def test_two_trusted_images_for_one_function_are_named(self):
        second = self.glance.add(name='second',
                                 **{'accel:function_id': FUNCTION_ID})
        error = self.assertRaises(exception.ImageNotUnique, self.bind,
                                  **{'accel:function_id': FUNCTION_ID})
        self.assertIn('found 2', str(error))
        for image in (self.image, second):
            self.assertIn(image['id'], str(error))
        self.assertIn('second', str(error))
        self.assertEqual([], self.agent.calls)


class ProgramThroughAgentTest(Inventory, ProgramStandIns,
                              base.APIResourceTestCase):
    """``PATCH .../program`` down to a real agent with the fake driver,
    which downloads the bitstream from Glance and loads it."""

    def setUp(self):
        super().setUp()
        self.host = 'host-%s' % uuid.uuid4().hex[:12]
        self.flags(host=self.host)
        self.seed(fake_driver.FakeDriver(self.conf).discover(), self.host)
        [self.fpga] = self.rows(models.Deployable)
        self.start_glance()
        self.agent = agent_manager.AgentManager(self.host, self.conf)
        cyborg_fixtures.start_rpc_service(self, self.agent, rpc.AGENT_TOPIC,
                                          self.host)
        self.path = '/v2/deployables/%s/program' % self.fpga.uuid

    def test_bitstream_is_downloaded_and_loaded(self):
        data = b'\x00bitstream' * 1000
        image = self.glance.add(data=data,
                                **{'accel:function_id': FUNCTION_ID})
        response = self.patch(self.path, program_body(image['id']))
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual(image['id'], response.json['bitstream_id'])
        driver = self.agent.drivers['fake_driver']
        self.assertEqual([hashlib.sha256(data).hexdigest()],
                         list(driver.programmed.values()))
        self.assertIn(NEW_TRAIT, self.traits(self.fpga.name))

    def test_corrupt_download_is_refused(self):
        image = self.glance.add(data=b'bitstream', os_hash_algo='sha512',
                                os_hash_value='0' * 128)
        response = self.patch(self.path, program_body(image['id']))
        self.assert_error(response, 502, 'does not match')
        self.assertEqual({}, self.agent.drivers['fake_driver'].programmed)
        self.assertIsNone(self.deployable(self.fpga.name).bitstream_id)

    def test_images_over_the_size_cap_are_not_downloaded(self):
        self.flags(max_image_size=100, group='glance')
        image = self.glance.add(data=b'x' * 101)
        self.assert_error(self.patch(self.path, program_body(image['id'])),
                          400, 'max_image_size')
        # Glance says less than comes.
        image = self.glance.add(data=b'x' * 101, size=10)
        self.assert_error(self.patch(self.path, program_body(image['id'])),
                          400, 'larger than [glance] max_image_size')
        self.assertEqual({}, self.agent.drivers['fake_driver'].programmed)

    def test_image_without_data_is_refused(self):
        image = self.glance.add()
        self.assert_error(self.patch(self.path, program_body(image['id'])),
                          502, 'has no data')
        self.assertIsNone(self.deployable(self.fpga.name).bitstream_id)


class DeployablesMySQLTest(DeployablesTest):
    backend = 'mysql'


class DeployablesPostgreSQLTest(DeployablesTest):
    backend = 'postgresql'
