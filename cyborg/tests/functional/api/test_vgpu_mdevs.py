"""A vGPU bound through the API: the real conductor asks the real agent
(on a captured sysfs tree, with the NVIDIA driver) to create the mdev, and
when the host comes back from a reboot, which the kernel forgets mdevs
across, the agent's hello gets the mdevs of bound ARQs created again."""

import json
import os
import uuid as uuidlib

import fixtures
from keystoneauth1 import loading as ks_loading
from oslo_utils import uuidutils

from cyborg.accelerator.common import mdev as mdev_names
from cyborg.accelerator.common import pci
from cyborg.agent import manager as agent_manager
from cyborg.common import rpc
from cyborg.common import states
from cyborg.conf import drivers as drivers_conf
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg import privsep
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional.api import base
from cyborg.tests.functional.api import test_deployables
from cyborg.tests.functional import nova
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

GPU = '0000:3b:00.0'
TYPE = 'nvidia-222'
PATH = '/v2/accelerator_requests'
CREATE = 'mdev_supported_types/%s/create' % TYPE


class VgpuMdevTest(test_deployables.Inventory, base.APIResourceTestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(level='INFO'))
        # Writes to the captured tree in this process, not through a
        # privsep daemon.
        privsep.sys_admin_pctxt.set_client_mode(False)
        self.addCleanup(privsep.sys_admin_pctxt.set_client_mode, True)
        self.nova = nova.StandInNova().start(self)
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='nova')
        self.flags(group='nova', **self.nova.config())
        self.placement = self.useFixture(
            placement_fixture.Placement(self.conf))

        self.tree = sysfs.SysfsTree(os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'sys'))
        self.tree.add_card('tesla_t4', GPU)
        self.tree.add_mdev_type(GPU, TYPE, 'GRID T4-1B', 4)
        self.tree.write(GPU, CREATE, '')
        self.flags(group='gpu_devices', enabled_vgpu_types=[TYPE])
        drivers_conf.register_vgpu_opts(self.conf, TYPE)
        self.flags(group='vgpu_' + TYPE, device_addresses=[GPU])
        self.flags(sysfs_root=self.tree.root,
                   enabled_drivers=['nvidia_gpu_driver'], group='agent')
        self.flags(state_path=self.useFixture(
            fixtures.TempDir()).path)

        self.host = 'gpu-%s' % uuidlib.uuid4().hex[:10]
        self.flags(host=self.host)
        self.placement.create_compute_node(self.host)
        self.agent = agent_manager.AgentManager(self.host, self.conf)
        cyborg_fixtures.start_rpc_service(self, self.agent, rpc.AGENT_TOPIC,
                                          self.host)
        self.agent.reporter.keep_alive()
        [self.vgpu] = self.rows(models.Deployable)
        response = self.post('/v2/device_profiles', [{
            'name': 'vgpu-t4', 'groups': [{'resources:VGPU': '1'}]}])
        self.assertEqual(201, response.status_int, response.body)

    def bound_mdev(self):
        """Bind an ARQ for a vGPU; returns its mdev uuid."""
        response = self.post(PATH, {'device_profile_name': 'vgpu-t4'},
                             headers=base.MEMBER)
        self.assertEqual(201, response.status_int, response.body)
        [arq] = response.json['arqs']
        patch = {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': self.host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': self.vgpu.rp_uuid},
            {'op': 'add', 'path': '/instance_uuid',
             'value': uuidutils.generate_uuid()}]}
        response = self.patch(PATH, patch, headers=base.MEMBER, service=True)
        self.assertEqual(202, response.status_int, response.body)
        arq = self.get(PATH + '/' + arq['uuid'], headers=base.MEMBER).json
        self.assertEqual(states.BOUND, arq['state'])
        self.assertEqual('MDEV', arq['attach_handle_type'])
        # What Nova 34's libvirt driver reads of an MDEV ARQ, besides
        # the top-level attach_handle_uuid (the mdev's).
        info = arq['attach_handle_info']
        self.assertEqual(
            {'domain': '0000', 'bus': '3b', 'device': '00', 'function': '0',
             'asked_type': TYPE},
            {key: info.get(key) for key in ('domain', 'bus', 'device',
                                            'function', 'asked_type')})
        return arq['attach_handle_uuid']

    def test_bind_creates_the_mdev_and_a_reboot_gets_it_back(self):
        mdev = self.bound_mdev()
        self.assertEqual(mdev, self.tree.read(GPU, CREATE))
        # The name Nova 34 looks it up by in libvirt.
        self.assertIn('(libvirt node device %s)' % mdev_names.libvirt_name(
            mdev, GPU), self.logs.output)
        # The kernel made it; an agent restart without a reboot finds it
        # and leaves it alone.
        self.tree.write(GPU, '%s/remove' % mdev, '')
        self.tree.write(GPU, CREATE, '')
        self.agent.say_hello(self.context)
        self.assertEqual(0, self.agent.ensure_mdevs(self.context, [{
            'pci_address': GPU, 'mdev_type': TYPE, 'mdev_uuid': mdev}]))
        self.assertEqual('', self.tree.read(GPU, CREATE))

        # A reboot: the mdev is gone; the hello brings it back.
        self.tree.remove(GPU, '%s/remove' % mdev)
        os.rmdir(os.path.join(self.tree.function_dir(GPU), mdev))
        self.agent.say_hello(self.context)
        wait_for(lambda: self.tree.read(GPU, CREATE) == mdev, timeout=10)
        self.assertIn('Restored 1 mdevs of bound ARQs', self.logs.output)

    def test_stored_attach_info_is_checked_before_it_goes_to_the_agent(self):
        # A row stored before reports were checked, pointing elsewhere.
        with db_api.writer.using(self.context) as session:
            session.query(models.AttachHandle).update({
                'attach_info': json.dumps(dict(
                    pci.PciAddress.parse(GPU).as_dict(),
                    asked_type='../../mdev/devices'))})
        response = self.post(PATH, {'device_profile_name': 'vgpu-t4'},
                             headers=base.MEMBER)
        [arq] = response.json['arqs']
        response = self.patch(PATH, {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': self.host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': self.vgpu.rp_uuid},
            {'op': 'add', 'path': '/instance_uuid',
             'value': uuidutils.generate_uuid()}]}, headers=base.MEMBER,
            service=True)
        self.assertEqual(202, response.status_int, response.body)
        arq = self.get(PATH + '/' + arq['uuid'], headers=base.MEMBER).json
        self.assertEqual(states.BIND_FAILED, arq['state'])
        self.assertIn('is not the attach info of an mdev', self.logs.output)
        self.assertNotIn('Creating mdev', self.logs.output)
        self.assertEqual('', self.tree.read(GPU, CREATE))

    def test_unbound_arqs_are_not_restored(self):
        mdev = self.bound_mdev()
        response = self.delete(PATH, headers=base.MEMBER, service=True,
                               arqs=self.rows(
                                   models.ExtendedAcceleratorRequest)[0].uuid)
        self.assertEqual(204, response.status_int, response.body)
        self.tree.write(GPU, CREATE, '')
        self.agent.say_hello(self.context)
        self.assertNotIn('Restoring', self.logs.output)
        self.assertEqual('', self.tree.read(GPU, CREATE))
        self.assertNotEqual('', mdev)

    def test_gone_gpu_is_kept_while_bound_and_removed_after(self):
        self.bound_mdev()
        self.tree.remove(GPU)
        self.agent.reporter.rescan()
        # In use: kept, in the database and in Placement.
        [kept] = self.rows(models.Deployable)
        self.assertEqual(self.vgpu.name, kept.name)
        self.assertEqual(200, self.placement.get(
            '/resource_providers/%s' % kept.rp_uuid)[0])
        [arq] = self.rows(models.ExtendedAcceleratorRequest)
        response = self.delete(PATH, headers=base.MEMBER, service=True,
                               arqs=arq.uuid)
        self.assertEqual(204, response.status_int, response.body)
        # The release asked the agent for its report: the GPU is gone.
        wait_for(lambda: self.rows(models.Deployable) == [], timeout=10)
        wait_for(lambda: self.placement.get(
            '/resource_providers/%s' % kept.rp_uuid)[0] == 404, timeout=10)
