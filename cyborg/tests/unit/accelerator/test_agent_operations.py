"""The agent's device operations pick the enabled driver that can do
them, and report failures with the reason."""

import oslo_messaging as messaging

from cyborg.agent import manager as agent_manager
from cyborg.common import context
from cyborg.common import service
from cyborg.common import exception
from cyborg import privsep
from cyborg.tests.unit.accelerator import sysfs

GPU = '0000:3b:00.0'
TYPE = 'nvidia-222'
MDEV = '5e6c1a2b-3d4e-4f50-8a61-72b8c9d0e1f2'
CPID = {'cpid_type': 'PCI', 'cpid_info': '{"bus": "0c"}'}


class AgentOperationsTest(sysfs.SysfsTestCase):

    def setUp(self):
        super().setUp()
        privsep.sys_admin_pctxt.set_client_mode(False)
        self.addCleanup(privsep.sys_admin_pctxt.set_client_mode, True)
        self.ctx = context.get_admin_context()
        self.tree.add_card('tesla_t4', GPU)
        self.tree.add_mdev_type(GPU, TYPE, 'GRID T4-1B', 16)
        self.tree.write(GPU, 'mdev_supported_types/%s/create' % TYPE, '')

    def agent(self, *drivers):
        self.flags(enabled_drivers=list(drivers), group='agent')
        return agent_manager.AgentManager(self.HOST, self.conf)

    def assert_fails(self, function, *args):
        """The DriverOperationFailed ``function`` raises, declared as an
        expected exception (oslo.messaging logs no traceback for it)."""
        wrapped = self.assertRaises(messaging.ExpectedException, function,
                                    *args)
        error = wrapped.exc_info[1]
        self.assertIsInstance(error, exception.DriverOperationFailed)
        return error

    def test_one_server_serves_both_endpoint_objects(self):
        agent = self.agent('fake_driver')
        self.assertEqual([agent, agent.admin], service.endpoints(agent))
        self.assertIs(agent.drivers, agent.admin.agent.drivers)

    def test_mdevs_go_to_the_gpu_driver(self):
        agent = self.agent('fake_driver', 'nvidia_gpu_driver')
        agent.create_mdev(self.ctx, GPU, TYPE, MDEV)
        self.assertEqual(MDEV, self.tree.read(
            GPU, 'mdev_supported_types/%s/create' % TYPE))
        self.tree.write(GPU, '%s/remove' % MDEV, '')
        agent.remove_mdev(self.ctx, GPU, TYPE, MDEV)
        self.assertEqual('1', self.tree.read(GPU, '%s/remove' % MDEV))

    def test_no_capable_driver(self):
        agent = self.agent('fake_driver')
        error = self.assert_fails(agent.create_mdev, self.ctx, GPU, TYPE,
                                  MDEV)
        self.assertIn('no enabled driver can do it (enabled: fake_driver)',
                      str(error))
        error = self.assert_fails(agent.fpga_program, self.ctx, CPID,
                                  MDEV, 'NVIDIA')
        self.assertIn('no enabled driver NVIDIA can do it', str(error))

    def test_driver_failure_carries_the_reason(self):
        agent = self.agent('nvidia_gpu_driver')
        # The type is there, its "create" file is not (nor is it made).
        self.tree.add_mdev_type(GPU, 'nvidia-223', 'GRID T4-2B', 8)
        error = self.assert_fails(agent.create_mdev, self.ctx, GPU,
                                  'nvidia-223', MDEV)
        self.assertIn('No such file or directory', str(error))
        self.assertIn(self.HOST, str(error))

    def assert_refused(self, function, *args):
        wrapped = self.assertRaises(messaging.ExpectedException, function,
                                    *args)
        error = wrapped.exc_info[1]
        self.assertIsInstance(error, exception.RefusedDeviceArgument)
        self.assertEqual(400, error.code)
        return str(error)

    def test_arguments_are_parsed_before_any_driver_sees_them(self):
        agent = self.agent('nvidia_gpu_driver')
        self.tree.write(GPU, '%s/remove' % MDEV, '')
        for address, mdev_type, uuid in [
                ('0000:00:1f.0/..', TYPE, MDEV), (None, TYPE, MDEV),
                (GPU, '..', MDEV), (GPU, TYPE + '/../..', MDEV),
                (GPU, TYPE, '.'), (GPU, TYPE, '..'), (GPU, TYPE, '/etc'),
                (GPU, TYPE, '../../mdev/devices'), (GPU, TYPE, 7)]:
            self.assertIn('refused', self.assert_refused(
                agent.create_mdev, self.ctx, address, mdev_type, uuid))
            self.assert_refused(agent.remove_mdev, self.ctx, address,
                                mdev_type, uuid)
        self.assertEqual('', self.tree.read(GPU, '%s/remove' % MDEV))
        self.assertEqual('', self.tree.read(
            GPU, 'mdev_supported_types/%s/create' % TYPE))

    def test_the_type_must_be_one_the_function_offers(self):
        agent = self.agent('nvidia_gpu_driver')
        message = self.assert_refused(agent.create_mdev, self.ctx, GPU,
                                      'nvidia-999', MDEV)
        self.assertIn('PCI function 0000:3b:00.0 has no mdev type '
                      'nvidia-999', message)
        self.assert_refused(agent.create_mdev, self.ctx, '0000:00:1f.0',
                            TYPE, MDEV)
        # ensure_mdevs skips what it refuses and does the rest.
        self.assertEqual(1, agent.ensure_mdevs(self.ctx, [
            {'pci_address': GPU, 'mdev_type': '..', 'mdev_uuid': MDEV},
            'junk',
            {'pci_address': GPU, 'mdev_type': TYPE, 'mdev_uuid': MDEV}]))
        self.assertEqual(MDEV, self.tree.read(
            GPU, 'mdev_supported_types/%s/create' % TYPE))
        self.assertIn("Restoring mdev '%s' of type '..'" % MDEV,
                      self.logs.output)

    def test_fpga_program_needs_an_image_uuid(self):
        agent = self.agent('fake_driver')
        self.assert_refused(agent.fpga_program, self.ctx, CPID,
                            '../../etc/passwd', 'fake')
        self.assert_refused(agent.fpga_program, self.ctx, 'junk', MDEV,
                            'fake')
