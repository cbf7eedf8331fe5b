"""The generic-driver operations of microversion 2.5 (``/v2/hosts``,
``/v2/drivers``, ``/v2/services``, ``/v2/discovery``,
``/v2/attachments``) through the API, against a real conductor, a real
agent with the fake driver, a real database and a real Placement."""

import json
import os
import uuid

import fixtures

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import admin as agent_admin
from cyborg.agent import manager as agent_manager
from cyborg.common import rpc
from cyborg.conductor import placement_sync
from cyborg.db import models
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_deployables

V = '2.5'
INSTANCE = '5c0e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f70'
PROFILE = [{'name': 'fake-fpga', 'groups': [
    {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]}]


class GenericDriverOpsTest(test_deployables.Inventory,
                           base.APIResourceTestCase):

    def setUp(self):
        super().setUp()
        self.state_dir = self.useFixture(
            cyborg_fixtures.fixtures.TempDir()).path
        self.flags(state_path=self.state_dir)
        self.host = 'host-%s' % uuid.uuid4().hex[:12]
        self.flags(host=self.host)
        self.flags(state_file=os.path.join(self.state_dir, 'agent.json'),
                   group='agent')
        self.seed(fake_driver.FakeDriver(self.conf).discover(), self.host)
        self.agent = agent_manager.AgentManager(self.host, self.conf)
        cyborg_fixtures.start_rpc_service(self, self.agent, rpc.AGENT_TOPIC,
                                          self.host)
        # The agent's own hello, so the host lists its drivers.
        self.agent.say_hello(self.context)

    def op(self, method, path, body=None, **kwargs):
        return self.request(method, path, body, version=V, **kwargs)

    def deployable_names(self):
        return [row.name for row in self.rows(models.Deployable)]

    # Below 2.5 the resources do not exist

    def test_not_there_before_2_5(self):
        for path in ('/v2/hosts', '/v2/drivers', '/v2/services'):
            self.assertEqual(404, self.get(path, version='2.4').status_int)
        self.assertEqual(404, self.post('/v2/discovery', {},
                                        version='2.4').status_int)

    # Hosts

    def test_hosts(self):
        response = self.op('GET', '/v2/hosts')
        self.assertEqual(200, response.status_int, response.body)
        [host] = response.json['hosts']
        self.assertEqual((self.host, 'up'), (host['hostname'],
                                             host['status']))
        self.assertTrue(host['last_seen_at'])
        self.assertEqual([{'name': 'fake_driver', 'status': 'READY',
                           'device_type': 'FPGA', 'version': '1.0',
                           'error': None}], host['drivers'])
        self.assertEqual(host, self.op('GET', '/v2/hosts/%s' %
                                       self.host).json)
        self.assert_error(self.op('GET', '/v2/hosts/nowhere'), 404,
                          'nowhere')

    # Drivers

    def test_install_update_uninstall(self):
        response = self.op('POST', '/v2/drivers', {'name': 'pci_driver',
                                                   'host': self.host})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual([{'host': self.host, 'name': 'pci_driver',
                           'status': 'READY', 'device_type': 'GENERIC',
                           'version': '1.0', 'error': None}],
                         response.json['drivers'])
        listed = self.op('GET', '/v2/drivers', host=self.host).json
        self.assertEqual(['fake_driver', 'pci_driver'],
                         sorted(d['name'] for d in listed['drivers']))
        with open(agent_admin.drivers_file(self.conf)) as f:
            self.assertEqual({'installed': ['pci_driver'],
                              'uninstalled': []}, json.load(f))
        # Installing again changes nothing.
        self.assertEqual(200, self.op('POST', '/v2/drivers', {
            'name': 'pci_driver'}).status_int)

        response = self.op('PATCH', '/v2/drivers/fake_driver', {})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual('READY', response.json['drivers'][0]['status'])

        self.assertEqual(['%s_FakeDevice' % self.host],
                         self.deployable_names())
        response = self.op('DELETE', '/v2/drivers/fake_driver')
        self.assertEqual(204, response.status_int, response.body)
        # The agent reported without the driver's devices before the
        # answer: gone from the database and from Placement.
        self.assertEqual([], self.deployable_names())
        status, _ = self.placement.get('/resource_providers/%s' %
                                       placement_sync.provider_uuid(
                                           '%s_FakeDevice' % self.host))
        self.assertEqual(404, status)
        self.assertEqual(['pci_driver'], [d['name'] for d in self.op(
            'GET', '/v2/drivers').json['drivers']])
        # A restarted agent keeps the operator's changes.
        self.assertEqual(['pci_driver'],
                         agent_admin.enabled_drivers(self.conf))
        self.assert_error(self.op('DELETE', '/v2/drivers/fake_driver'), 404,
                          'could not be found')
        self.assert_error(self.op('DELETE', '/v2/drivers/fake_driver',
                                  host=self.host), 404, 'not installed')

    def test_driver_errors(self):
        self.assert_error(self.op('POST', '/v2/drivers', {'name': 'nope'}),
                          400, 'fake_driver')
        self.assert_error(self.op('POST', '/v2/drivers', {}), 400, 'name')
        self.assert_error(self.op('POST', '/v2/drivers', {
            'name': 'pci_driver', 'color': 'red'}), 400, 'color')
        self.assert_error(self.op('POST', '/v2/drivers', {
            'name': 'pci_driver', 'host': 'nowhere'}), 404, 'nowhere')
        self.assert_error(self.op('PATCH', '/v2/drivers/pci_driver', {}),
                          404, 'could not be found')

    def test_uninstall_failing_on_the_agent_is_a_502(self):
        self.useFixture(fixtures.MockPatchObject(
            self.agent.admin, 'uninstall_driver',
            side_effect=OSError('No space left on device')))
        self.assert_error(self.op('DELETE', '/v2/drivers/fake_driver'), 502,
                          'Uninstalling driver fake_driver failed on host '
                          '%s' % self.host)
        self.assertEqual(['fake_driver'], [d['name'] for d in self.op(
            'GET', '/v2/drivers').json['drivers']])

    def test_uninstall_refused_while_in_use(self):
        response = self.post('/v1/accelerators', {'name': 'held'})
        self.assertEqual(201, response.status_int, response.body)
        location = response.headers['Location']
        self.assertEqual(200, self.request(
            'PUT', location, {'instance_uuid': INSTANCE}).status_int)
        self.assert_error(self.op('DELETE', '/v2/drivers/fake_driver'), 409,
                          'accelerator held')
        self.assertEqual(['fake_driver'], [d['name'] for d in self.op(
            'GET', '/v2/drivers').json['drivers']])
        self.assertEqual(204, self.delete(location).status_int)
        self.assertEqual(204, self.op('DELETE',
                                      '/v2/drivers/fake_driver').status_int)
        # The accelerator outlives its hardware, marked as such.
        accelerator = self.get(location).json
        self.assertEqual(('unavailable', None),
                         (accelerator['state'],
                          accelerator['deployable_uuid']))

    # Discovery and services

    def test_discovery(self):
        response = self.op('POST', '/v2/discovery', {'timeout': 30})
        self.assertEqual(200, response.status_int, response.body)
        self.assertEqual([{'hostname': self.host, 'status': 'reported',
                           'devices': 1, 'deployables': 1}],
                         response.json['hosts'])
        self.assertEqual(200, self.op('POST', '/v2/discovery', {
            'host': self.host}).status_int)
        self.assert_error(self.op('POST', '/v2/discovery', {
            'timeout': 'soon'}), 400, 'timeout')
        self.assert_error(self.op('POST', '/v2/discovery', {
            'host': 'nowhere'}), 404, 'nowhere')

    def test_services(self):
        [service] = self.op('GET', '/v2/services').json['services']
        [device] = self.rows(models.Device)
        self.assertEqual({'host': self.host, 'device_uuid': device.uuid,
                          'deployable_name': '%s_FakeDevice' % self.host,
                          'device_type': 'FPGA',
                          'driver_name': 'FAKEDRIVER', 'service': 'fpga',
                          'status': 'up'},
                         {k: v for k, v in service.items()
                          if k != 'deployable_uuid'})
        self.post('/v2/devices/%s/disable' % device.uuid)
        self.assertEqual(['disabled'], [s['status'] for s in self.op(
            'GET', '/v2/services', host=self.host).json['services']])
        self.assertEqual([], self.op('GET', '/v2/services',
                                     device_type='GPU').json['services'])

    # Attachments

    def allocations(self, consumer):
        _, body = self.placement.get('/allocations/%s' % consumer)
        return {rp: value['resources']
                for rp, value in body['allocations'].items()}

    def test_attach_and_detach_an_instance(self):
        self.assertEqual(201, self.post('/v2/device_profiles',
                                        PROFILE).status_int)
        response = self.op('POST', '/v2/attachments', {
            'instance_uuid': INSTANCE, 'device_profile_name': 'fake-fpga',
            'host': self.host})
        self.assertEqual(201, response.status_int, response.body)
        [arq] = response.json['arqs']
        rp_uuid = placement_sync.provider_uuid('%s_FakeDevice' % self.host)
        self.assertEqual(('Bound', INSTANCE, rp_uuid, self.host),
                         (arq['state'], arq['instance_uuid'],
                          arq['device_rp_uuid'], arq['hostname']))
        self.assertEqual({rp_uuid: {'FPGA': 1}}, self.allocations(INSTANCE))
        listed = self.get('/v2/accelerator_requests',
                          instance=INSTANCE).json['arqs']
        self.assertEqual([arq['uuid']], [a['uuid'] for a in listed])

        response = self.op('DELETE', '/v2/attachments/%s' % INSTANCE)
        self.assertEqual(204, response.status_int, response.body)
        self.assertEqual({}, self.allocations(INSTANCE))
        self.assertEqual([], self.get('/v2/accelerator_requests',
                                      instance=INSTANCE).json['arqs'])
        self.assert_error(self.op('DELETE', '/v2/attachments/%s' %
                                  INSTANCE), 404, 'no accelerators')

    def test_attach_errors(self):
        body = {'instance_uuid': INSTANCE, 'device_profile_name': 'none'}
        self.assert_error(self.op('POST', '/v2/attachments', body), 404,
                          'none')
        self.post('/v2/device_profiles', [{'name': 'too-many', 'groups': [
            {'resources:FPGA': '17'}]}])
        self.assert_error(self.op('POST', '/v2/attachments', dict(
            body, device_profile_name='too-many')), 409, 'no free')
        self.assertEqual({}, self.allocations(INSTANCE))
        self.post('/v2/device_profiles', PROFILE)
        self.assert_error(self.op('POST', '/v2/attachments', dict(
            body, device_profile_name='fake-fpga', host='nowhere')), 404,
            'nowhere')
        self.assert_error(self.op('POST', '/v2/attachments', {
            'instance_uuid': 'x', 'device_profile_name': 'fake-fpga'}),
            400, 'x')
        self.assert_error(self.op('POST', '/v2/attachments', {
            'device_profile_name': 'fake-fpga'}), 400, 'instance_uuid')

    def test_attach_to_a_provider_cyborg_does_not_know(self):
        # A provider with cyborg's trait that no deployable has (left
        # behind by another deployment, say): Placement offers it, the
        # bind refuses it, and nothing of the attachment stays.
        client = self.placement.client
        rp_uuid = str(uuid.uuid4())
        client.put('/traits/CUSTOM_STALE', microversion='1.6')
        client.post('/resource_providers', json={
            'name': 'stale-%s' % rp_uuid, 'uuid': rp_uuid,
            'parent_provider_uuid': self.compute_node['uuid']},
            microversion='1.20')
        self.addCleanup(client.delete, '/resource_providers/%s' % rp_uuid)
        client.put('/resource_providers/%s/inventories' % rp_uuid, json={
            'resource_provider_generation': 0,
            'inventories': {'FPGA': {'total': 1}}}, microversion='1.20')
        client.put('/resource_providers/%s/traits' % rp_uuid, json={
            'resource_provider_generation': 1,
            'traits': [placement_sync.OWNER_TRAIT, 'CUSTOM_STALE']},
            microversion='1.20')
        self.post('/v2/device_profiles', [{'name': 'stale', 'groups': [
            {'resources:FPGA': '1', 'trait:CUSTOM_STALE': 'required'}]}])
        self.assert_error(self.op('POST', '/v2/attachments', {
            'instance_uuid': INSTANCE, 'device_profile_name': 'stale',
            'host': self.host}), 400, rp_uuid)
        self.assertEqual([], self.get('/v2/accelerator_requests',
                                      instance=INSTANCE).json['arqs'])
        self.assertEqual([], self.rows(models.ExtendedAcceleratorRequest))
        self.assertEqual({}, self.allocations(INSTANCE))

    def test_policy(self):
        for method, path, body in (
                ('GET', '/v2/hosts', None), ('GET', '/v2/drivers', None),
                ('POST', '/v2/drivers', {'name': 'pci_driver'}),
                ('DELETE', '/v2/drivers/fake_driver', None),
                ('GET', '/v2/services', None),
                ('POST', '/v2/discovery', {}),
                ('POST', '/v2/attachments', {}),
                ('DELETE', '/v2/attachments/%s' % INSTANCE, None)):
            self.assert_error(self.op(method, path, body,
                                      headers=base.MANAGER), 403)


class AttachOnNamedComputeNodeTest(test_deployables.Inventory,
                                   base.APIResourceTestCase):
    """Nova named the compute node provider ``cmp-1.example.org``; the
    agent's host is ``cmp-1`` and names the provider in its hello."""

    def setUp(self):
        super().setUp()
        self.seed_under_named_compute_node()
        self.assertEqual(201, self.post('/v2/device_profiles',
                                        PROFILE).status_int)
        agent = agent_manager.AgentManager('cmp-1', self.conf)
        cyborg_fixtures.start_rpc_service(self, agent, rpc.AGENT_TOPIC,
                                          'cmp-1')

    def attach(self, host):
        return self.request('POST', '/v2/attachments', {
            'instance_uuid': INSTANCE, 'device_profile_name': 'fake-fpga',
            'host': host}, version=V)

    def test_host_by_its_name_or_its_provider_name(self):
        rp_uuid = placement_sync.provider_uuid('cmp-1_FakeDevice')
        for host in ('cmp-1', 'cmp-1.example.org'):
            response = self.attach(host)
            self.assertEqual(201, response.status_int, response.body)
            [arq] = response.json['arqs']
            self.assertEqual(('Bound', rp_uuid, 'cmp-1'), (
                arq['state'], arq['device_rp_uuid'], arq['hostname']))
            response = self.request('DELETE', '/v2/attachments/%s' %
                                    INSTANCE, version=V)
            self.assertEqual(204, response.status_int, response.body)
        self.assert_error(self.attach('cmp-2'), 404, 'cmp-2')
