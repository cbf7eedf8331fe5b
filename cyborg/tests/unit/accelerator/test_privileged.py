"""The privsep entry points play the attacker's victim: whatever a caller
sends, they write only existing ``create``/``remove`` files of valid PCI
functions under the daemon's own sysfs root (run in-process here)."""

import os

import fixtures

from cyborg.accelerator.common import privileged
from cyborg import privsep
from cyborg.tests.unit.accelerator import sysfs

GPU = '0000:3b:00.0'
NIC = '0000:00:1f.0'
TYPE = 'nvidia-222'
MDEV = '5e6c1a2b-3d4e-4f50-8a61-72b8c9d0e1f2'
OTHER = '9b1d2c3e-4f50-4a61-8b72-c3d4e5f60718'


class PrivilegedEdgeTest(sysfs.SysfsTestCase):

    def setUp(self):
        super().setUp()
        privsep.sys_admin_pctxt.set_client_mode(False)
        self.addCleanup(privsep.sys_admin_pctxt.set_client_mode, True)
        self.tree.add_card('tesla_t4', GPU)
        self.tree.add_mdev_type(GPU, TYPE, 'GRID T4-1B', 16)
        self.tree.write(GPU, 'mdev_supported_types/%s/create' % TYPE, '')
        self.tree.write(GPU, '%s/remove' % MDEV, '')
        # A NIC, whose own "remove" hot-unplugs it.
        self.tree.add_function(NIC, '8086', '1572', '020000', 'i40e')
        self.tree.write(NIC, 'remove', '')
        self.outside = self.useFixture(fixtures.TempDir()).path

    def untouched(self, address, name):
        self.assertEqual('', self.tree.read(address, name))

    def test_create_and_remove_write_the_kernel_files(self):
        privileged.create_mdev(GPU, TYPE, MDEV.upper())
        self.assertEqual(MDEV, self.tree.read(
            GPU, 'mdev_supported_types/%s/create' % TYPE))
        privileged.remove_mdev(GPU, MDEV)
        self.assertEqual('1', self.tree.read(GPU, '%s/remove' % MDEV))

    def test_uuids_that_are_paths_are_refused(self):
        for bad in ('.', '..', '/', self.outside, '../../mdev/devices',
                    '%s/../..' % MDEV, '', None, 7):
            self.assertRaises(ValueError, privileged.remove_mdev, NIC, bad)
            self.assertRaises(ValueError, privileged.create_mdev, GPU, TYPE,
                              bad)
        self.untouched(NIC, 'remove')
        self.untouched(GPU, 'mdev_supported_types/%s/create' % TYPE)

    def test_types_that_are_paths_are_refused(self):
        os.makedirs(os.path.join(self.outside, 'x'))
        open(os.path.join(self.outside, 'x', 'create'), 'w').close()
        for bad in ('.', '..', '../..', self.outside, TYPE + '/../..',
                    '../../../%s/x' % self.outside.lstrip('/'), None):
            self.assertRaises(ValueError, privileged.create_mdev, GPU, bad,
                              MDEV)
        self.assertEqual('', open(os.path.join(self.outside, 'x',
                                               'create')).read())

    def test_addresses_must_be_pci_addresses(self):
        for bad in ('0000:00:1f.0/..', '../0000:00:1f.0', self.outside,
                    '.', '', None, 1):
            self.assertRaises(ValueError, privileged.remove_mdev, bad, MDEV)
        self.untouched(GPU, '%s/remove' % MDEV)

    def test_symlinks_out_of_the_function_are_refused(self):
        victim = os.path.join(self.outside, 'remove')
        open(victim, 'w').close()
        # An mdev directory that points elsewhere, a "remove" that does.
        os.symlink(self.outside, os.path.join(
            self.tree.function_dir(GPU), OTHER))
        self.assertRaises(ValueError, privileged.remove_mdev, GPU, OTHER)
        mdev_dir = os.path.join(self.tree.function_dir(NIC), MDEV)
        os.makedirs(mdev_dir)
        os.symlink(victim, os.path.join(mdev_dir, 'remove'))
        self.assertRaises(ValueError, privileged.remove_mdev, NIC, MDEV)
        self.assertEqual('', open(victim).read())
        self.untouched(NIC, 'remove')

    def test_a_function_linked_out_of_the_root_is_refused(self):
        os.makedirs(os.path.join(self.outside, MDEV))
        open(os.path.join(self.outside, MDEV, 'remove'), 'w').close()
        os.symlink(self.outside, os.path.join(
            self.conf.agent.sysfs_root, 'bus', 'pci', 'devices',
            '0000:66:00.0'))
        self.assertRaises(ValueError, privileged.remove_mdev,
                          '0000:66:00.0', MDEV)
        self.assertEqual('', open(os.path.join(self.outside, MDEV,
                                               'remove')).read())

    def test_the_caller_cannot_choose_the_root(self):
        # The root is not a parameter: the daemon reads its own.
        other = sysfs.SysfsTree(self.outside)
        other.add_card('tesla_t4', GPU)
        other.write(GPU, '%s/remove' % OTHER, '')
        self.assertRaises(TypeError, privileged.remove_mdev, self.outside,
                          GPU, OTHER)
        self.assertRaises(TypeError, privileged.remove_mdev, GPU, OTHER,
                          root=self.outside)
        self.assertRaises(FileNotFoundError, privileged.remove_mdev, GPU,
                          OTHER)
        self.assertEqual('', other.read(GPU, '%s/remove' % OTHER))

    def test_missing_files_are_not_created(self):
        self.assertRaises(FileNotFoundError, privileged.remove_mdev, GPU,
                          OTHER)
        self.assertFalse(os.path.lexists(os.path.join(
            self.tree.function_dir(GPU), OTHER)))
        os.makedirs(os.path.join(self.tree.function_dir(GPU), OTHER))
        self.assertRaises(FileNotFoundError, privileged.remove_mdev, GPU,
                          OTHER)
        self.assertFalse(os.path.lexists(os.path.join(
            self.tree.function_dir(GPU), OTHER, 'remove')))
        self.tree.add_mdev_type(GPU, 'nvidia-223', 'GRID T4-2B', 8)
        self.assertRaises(FileNotFoundError, privileged.create_mdev, GPU,
                          'nvidia-223', MDEV)
        self.assertFalse(os.path.lexists(os.path.join(
            self.tree.function_dir(GPU), 'mdev_supported_types',
            'nvidia-223', 'create')))

    def test_vgpu_type_goes_only_to_the_functions_file(self):
        self.assertRaises(FileNotFoundError, privileged.set_vgpu_type, NIC,
                          1414)
        self.assertFalse(os.path.lexists(os.path.join(
            self.tree.function_dir(NIC), 'nvidia')))
        self.assertRaises(ValueError, privileged.set_vgpu_type,
                          '../..', 1414)
