"""nvidia_gpu_driver against captured-style sysfs trees."""

import errno
import json
import os
import uuid
from unittest import mock

import fixtures

from cyborg.accelerator.common import mdev
from cyborg.accelerator.common import pci
from cyborg.accelerator.common import privileged
from cyborg.accelerator import drivers
from cyborg.accelerator.drivers import base
from cyborg.accelerator.drivers.gpu import nvidia
from cyborg.conf import drivers as drivers_conf
from cyborg import privsep
from cyborg.tests.unit.accelerator import sysfs

PREFIX = 'cmp-1_example_org_'


class NvidiaGpuDriverTest(sysfs.SysfsTestCase):

    def vgpu(self, **addresses_by_type):
        self.flags(group='gpu_devices',
                   enabled_vgpu_types=sorted(addresses_by_type))
        for type_id, addresses in addresses_by_type.items():
            drivers_conf.register_vgpu_opts(self.conf, type_id)
            self.flags(group='vgpu_' + type_id, device_addresses=addresses)

    def discover(self):
        return nvidia.NvidiaGpuDriver(self.conf).discover()

    def test_whole_gpus(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('tesla_t4', '0000:5e:00.0', driver='vfio-pci')
        self.tree.add_card('a100', '0000:86:00.0', driver=None)
        self.tree.add_card('x710', '0000:18:00.0')       # not NVIDIA
        devices = self.discover()
        self.assertEqual(3, len(devices))
        deps = self.by_name(devices)
        self.assertEqual([PREFIX + '0000_3b_00_0', PREFIX + '0000_5e_00_0',
                          PREFIX + '0000_86_00_0'], sorted(deps))
        t4 = deps[PREFIX + '0000_3b_00_0']
        self.assertEqual('PGPU', self.rc(t4))
        self.assertEqual(['CUSTOM_NVIDIA_1EB8', 'OWNER_CYBORG'],
                         self.traits(t4))
        self.assertEqual((1, 'NVIDIA'), (t4.num_accelerators,
                                         t4.driver_name))
        [handle] = t4.attach_handle_list
        self.assertEqual('PCI', handle.attach_type)
        self.assertEqual('{"bus": "3b", "device": "00", "domain": "0000", '
                         '"function": "0"}', handle.attach_info)
        device = devices[0]
        # Named as lspci names it from pci.ids (Debian's, trimmed).
        self.assertEqual(('GPU', '10de',
                          'NVIDIA Corporation TU104GL [Tesla T4]'),
                         (device.type, device.vendor, device.model))
        self.assertEqual('PCI', device.controlpath_id.cpid_type)
        self.assertEqual(handle.attach_info, device.controlpath_id.cpid_info)
        self.assertEqual(['CUSTOM_NVIDIA_20B0', 'OWNER_CYBORG'],
                         self.traits(deps[PREFIX + '0000_86_00_0']))

    def test_fail_closed(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        # SR-IOV vGPU host: VFs enabled, not configured for any type.
        self.tree.add_card('a100', '0000:5e:00.0', vfs=4)
        # Already carved into mdevs.
        self.tree.add_card('tesla_t4', '0000:86:00.0')
        self.tree.add_mdev_type('0000:86:00.0', 'nvidia-222', 'GRID T4-1B',
                                15, devices=['2b0d3f4e'])
        # vGPU host driver offers types, nothing carved yet.
        self.tree.add_card('tesla_t4', '0000:af:00.0')
        self.tree.add_mdev_type('0000:af:00.0', 'nvidia-222', 'GRID T4-1B',
                                16)
        # Bound to the host's graphics driver.
        self.tree.add_card('tesla_t4', '0000:d8:00.0', driver='nouveau')
        devices = self.discover()
        self.assertEqual([PREFIX + '0000_3b_00_0'],
                         sorted(self.by_name(devices)))
        hardware = nvidia.NvidiaGpuDriver(self.conf).hardware()
        self.assertEqual(5, len(hardware))
        not_ready = {h['address']: h for h in hardware if not h['ready']}
        self.assertEqual(['0000:5e:00.0', '0000:86:00.0', '0000:af:00.0',
                          '0000:d8:00.0'], sorted(not_ready))
        self.assertTrue(all(h['setup_required'] and h['device'] is None
                            for h in not_ready.values()))
        self.assertIn('nouveau', not_ready['0000:d8:00.0']['reason'])
        ready = [h for h in hardware if h['ready']]
        self.assertEqual(devices[0].controlpath_id.cpid_info,
                         ready[0]['device'].controlpath_id.cpid_info)

    def test_vfs_are_never_whole_gpus(self):
        self.tree.add_card('a100', '0000:5e:00.0', vfs=2)
        self.tree.write('0000:5e:00.0', 'sriov_numvfs', '0\n')  # stale
        self.assertEqual([], self.discover())

    def test_classic_vgpu(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('tesla_t4', '0000:af:00.0')
        self.tree.add_mdev_type('0000:af:00.0', 'nvidia-222', 'GRID T4-1B',
                                14, devices=['u1', 'u2'])
        self.tree.add_mdev_type('0000:af:00.0', 'nvidia-223', 'GRID T4-2B',
                                7)
        self.vgpu(**{'nvidia-222': ['0000:af:00.0']})
        deps = self.by_name(self.discover())
        self.assertEqual('PGPU', self.rc(deps[PREFIX + '0000_3b_00_0']))
        vgpu = deps[PREFIX + '0000_af_00_0']
        self.assertEqual('VGPU', self.rc(vgpu))
        self.assertEqual(['CUSTOM_NVIDIA_1EB8_T4_1B', 'OWNER_CYBORG'],
                         self.traits(vgpu))
        self.assertEqual(16, vgpu.num_accelerators)
        infos = [json.loads(h.attach_info) for h in vgpu.attach_handle_list]
        self.assertEqual({'MDEV'}, {h.attach_type
                                    for h in vgpu.attach_handle_list})
        self.assertEqual({'asked_type': 'nvidia-222', 'bus': 'af',
                          'device': '00', 'domain': '0000', 'function': '0',
                          'vgpu_mark': 'nvidia-222_15'}, infos[-1])
        self.assertEqual(16, len({i['vgpu_mark'] for i in infos}))

    def test_sriov_vgpu_counts_the_vfs(self):
        vfs = self.tree.add_card('a100', '0000:5e:00.0', vfs=4)
        for index, vf in enumerate(vfs):
            self.tree.add_mdev_type(vf, 'nvidia-472', 'GRID A100-4C',
                                    0 if index == 0 else 1,
                                    devices=['u0'] if index == 0 else [])
        self.vgpu(**{'nvidia-472': ['0000:5e:00.0']})
        [device] = self.discover()
        [vgpu] = device.deployable_list
        self.assertEqual(PREFIX + '0000_5e_00_0', vgpu.name)
        self.assertEqual(4, vgpu.num_accelerators)
        self.assertEqual(['CUSTOM_NVIDIA_20B0_A100_4C', 'OWNER_CYBORG'],
                         self.traits(vgpu))
        self.assertEqual([str(vf) for vf in vfs],
                         ['0000:%(bus)s:%(device)s.%(function)s'
                          % json.loads(h.attach_info)
                          for h in vgpu.attach_handle_list])

    def test_bad_vgpu_config_fails_closed_and_others_go_on(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('tesla_t4', '0000:5e:00.0')
        self.tree.add_card('tesla_t4', '0000:86:00.0')
        for address in ('0000:5e:00.0', '0000:86:00.0'):
            self.tree.add_mdev_type(address, 'nvidia-222', 'GRID T4-1B', 16)
        self.vgpu(**{'nvidia-222': ['0000:5e:00.0', 'garbage'],
                     'nvidia-223': ['0000:5e:00.0', '0000:86:00.0']})
        deps = self.by_name(self.discover())
        # 5e is listed twice, 86 for a type it does not have.
        self.assertEqual([PREFIX + '0000_3b_00_0'], sorted(deps))
        self.assertIn('several vGPU types', self.logs.output)
        self.assertIn("'garbage'", self.logs.output)

    def test_half_written_files_skip_one_gpu(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('tesla_t4', '0000:5e:00.0')
        self.tree.write('0000:5e:00.0', 'class', '0x03')
        self.tree.add_card('tesla_t4', '0000:86:00.0')
        self.tree.add_mdev_type('0000:86:00.0', 'nvidia-222', 'GRID T4-1B',
                                16)
        self.tree.write('0000:86:00.0', 'mdev_supported_types/nvidia-222/'
                        'available_instances', '1')
        self.tree.write('0000:86:00.0', 'sriov_numvfs', '\x00')
        self.vgpu(**{'nvidia-222': ['0000:86:00.0']})
        deps = self.by_name(self.discover())
        self.assertEqual([PREFIX + '0000_3b_00_0'], sorted(deps))
        self.assertIn('Skipping PCI function 0000:5e:00.0', self.logs.output)

    def test_loads_as_plugin(self):
        loaded, statuses = drivers.load(['nvidia_gpu_driver'], self.conf)
        self.assertIsInstance(loaded['nvidia_gpu_driver'],
                              nvidia.NvidiaGpuDriver)
        self.assertEqual(('READY', 'GPU'),
                         (statuses[0].status, statuses[0].device_type))


class VendorInfoTest(sysfs.SysfsTestCase):
    """What NVIDIA's driver says of a GPU, in vendor_board_info."""

    # /proc/driver/nvidia/gpus/<address>/information of the captured H100
    # host (cyborg/tests/data/captures/h100-host.json).
    INFORMATION = ('Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 41\n'
                   'GPU UUID: \t GPU-0619416a-8689-93d0-30cc-496bc5dc4e74\n'
                   'Video BIOS: \t 96.00.a5.00.01\nBus Type: \t PCIe\n'
                   'Bus Location: \t 0000:00:06.0\nDevice Minor: \t 0\n'
                   'GPU Firmware: \t 580.159.04\nGPU Excluded:\t No\n')

    def board_info(self):
        [device] = nvidia.NvidiaGpuDriver(self.conf).discover()
        return json.loads(device.vendor_board_info)

    def test_identity(self):
        self.tree.add_card('tesla_t4', '0000:00:06.0')
        self.tree.write('0000:00:06.0', 'device', '0x2330\n')
        self.tree.write('0000:00:06.0', 'subsystem_vendor', '0x10de\n')
        self.tree.write('0000:00:06.0', 'subsystem_device', '0x16c1\n')
        self.assertEqual({'subsystem': '10de:16c1',
                          'subsystem_name': 'NVIDIA Corporation Device 16c1'},
                         self.board_info())
        self.write_proc('driver/nvidia/gpus/0000:00:06.0/information',
                        self.INFORMATION)
        info = self.board_info()
        self.assertEqual({'model': 'NVIDIA H100 80GB HBM3',
                          'gpu_uuid': 'GPU-0619416a-8689-93d0-30cc-'
                                      '496bc5dc4e74',
                          'vbios_version': '96.00.a5.00.01',
                          'firmware': '580.159.04', 'minor': '0',
                          'subsystem': '10de:16c1',
                          'subsystem_name': 'NVIDIA Corporation Device 16c1'},
                         info)
        # MIG on, two GPU instances: NVIDIA's capabilities in /proc.
        for gi in ('gi1', 'gi2'):
            self.write_proc('driver/nvidia/capabilities/gpu0/mig/%s/access'
                            % gi, '')
        self.assertEqual(2, self.board_info()['mig_gpu_instances'])

    def test_nothing_known(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        [device] = nvidia.NvidiaGpuDriver(self.conf).discover()
        self.assertIsNone(device.vendor_board_info)


class VendorVgpuTest(sysfs.SysfsTestCase):
    """Vendor-specific VFIO vGPU (Hopper): each VF carries one vGPU, set
    by number in its nvidia/current_vgpu_type; the driver carves the free
    VFs of a listed GPU (writes run in-process here)."""

    GPU = '0000:41:00.0'
    WHOLE = (1428, 'NVIDIA H200X-141C')
    MIG_1G = (1414, 'NVIDIA H200X-1-18C')
    MIG_2G = (1415, 'NVIDIA H200X-2-35C')

    def setUp(self):
        super().setUp()
        privsep.sys_admin_pctxt.set_client_mode(False)
        self.addCleanup(privsep.sys_admin_pctxt.set_client_mode, True)
        self.vfs = self.tree.add_card('h200_sxm', self.GPU, vfs=4)

    def configure(self, type_id='nvidia-1414'):
        self.flags(group='gpu_devices', enabled_vgpu_types=[type_id])
        drivers_conf.register_vgpu_opts(self.conf, type_id)
        self.flags(group='vgpu_' + type_id, device_addresses=[self.GPU])

    def current(self, vf):
        return self.tree.read(vf, 'nvidia/current_vgpu_type').strip()

    def discover(self):
        return nvidia.NvidiaGpuDriver(self.conf).discover()

    def handle_addresses(self, deployable):
        return ['0000:%(bus)s:%(device)s.%(function)s' % json.loads(
            h.attach_info) for h in deployable.attach_handle_list]

    def test_free_vfs_are_carved_until_the_gpu_is_full(self):
        vf0, vf1, vf2, vf3 = self.vfs
        sysfs.add_vendor_vgpu(self.tree, vf0, [], current=1414)
        sysfs.add_vendor_vgpu(self.tree, vf1, [self.MIG_1G, self.MIG_2G])
        # The kernel lists nothing more once the GPU is full.
        sysfs.add_vendor_vgpu(self.tree, vf2, [])
        sysfs.add_vendor_vgpu(self.tree, vf3, [], current=1415)
        self.configure()
        [device] = self.discover()
        # Debian 12's pci.ids predates the H200: lspci's name there.
        self.assertEqual('NVIDIA Corporation Device 2335', device.model)
        [vgpu] = device.deployable_list
        self.assertEqual(PREFIX + '0000_41_00_0', vgpu.name)
        self.assertEqual('VGPU', self.rc(vgpu))
        self.assertEqual(['CUSTOM_NVIDIA_2335_VGPU_1414', 'OWNER_CYBORG'],
                         self.traits(vgpu))
        self.assertEqual(2, vgpu.num_accelerators)
        self.assertEqual({'PCI'}, {h.attach_type
                                   for h in vgpu.attach_handle_list})
        self.assertEqual([str(vf0), str(vf1)], self.handle_addresses(vgpu))
        self.assertEqual(['1414', '1414', '0', '1415'],
                         [self.current(vf) for vf in self.vfs])
        self.assertIn('%s: a VF of GPU 0000:41:00.0 carrying vGPU type '
                      '1415, not the type 1414' % (vf3,), self.not_offered(
                          nvidia.NvidiaGpuDriver(self.conf)))
        self.assertNotIn(str(vf3), self.logs.output)

    def test_a_reboot_forgets_the_carving_and_discovery_restores_it(self):
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [self.WHOLE, self.MIG_1G])
        self.configure()
        first = self.discover()
        self.assertEqual(['1414'] * 4, [self.current(vf) for vf in self.vfs])
        # A carved GPU lists nothing creatable; the next scan changes
        # nothing.
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [], current=1414)
        self.assertEqual(first, self.discover())
        for vf in self.vfs:  # reboot
            sysfs.add_vendor_vgpu(self.tree, vf, [self.WHOLE, self.MIG_1G])
        again = self.discover()
        self.assertEqual(['1414'] * 4, [self.current(vf) for vf in self.vfs])
        self.assertEqual(
            [str(vf) for vf in self.vfs],
            self.handle_addresses(again[0].deployable_list[0]))
        self.assertEqual(first, again)

    def test_the_type_may_be_named_by_its_number(self):
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [self.WHOLE])
        self.configure('1428')
        [device] = self.discover()
        self.assertEqual(['CUSTOM_NVIDIA_2335_VGPU_1428', 'OWNER_CYBORG'],
                         self.traits(device.deployable_list[0]))

    def test_a_type_without_a_number_is_not_offered(self):
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [self.WHOLE])
        self.configure('grid-h200')
        self.assertEqual([], self.discover())
        self.assertIn('nvidia-<number>', self.not_offered(
            nvidia.NvidiaGpuDriver(self.conf)))
        self.assertEqual(['0'] * 4, [self.current(vf) for vf in self.vfs])

    def test_a_type_that_cannot_be_created_is_not_offered(self):
        # MIG mode is off: no MIG-backed type is creatable.
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [self.WHOLE])
        self.configure()
        self.assertEqual([], self.discover())
        [entry] = nvidia.NvidiaGpuDriver(self.conf).hardware()
        self.assertFalse(entry['ready'])
        self.assertIn('MIG mode', entry['reason'])
        self.assertEqual(['0'] * 4, [self.current(vf) for vf in self.vfs])

    def test_bad_vf_files_and_refused_writes_skip_only_those_vfs(self):
        vf0, vf1, vf2, vf3 = self.vfs
        sysfs.add_vendor_vgpu(self.tree, vf0, [self.MIG_1G])
        self.tree.write(vf0, 'nvidia/current_vgpu_type', '\x00')
        sysfs.add_vendor_vgpu(self.tree, vf1, [self.MIG_1G])
        sysfs.add_vendor_vgpu(self.tree, vf2, [self.MIG_1G])
        sysfs.add_vendor_vgpu(self.tree, vf3, [self.MIG_1G])
        real = privileged.set_vgpu_type

        def kernel(address, number):
            if address == str(vf1):  # busy, says the kernel
                raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))
            return real(address, number)

        self.useFixture(fixtures.MockPatchObject(
            privileged, 'set_vgpu_type', side_effect=kernel))
        self.configure()
        [device] = self.discover()
        self.assertEqual([str(vf2), str(vf3)], self.handle_addresses(
            device.deployable_list[0]))
        self.assertIn('%s: a VF of GPU 0000:41:00.0 whose vGPU state '
                      'cannot be read' % (vf0,), self.not_offered(
                          nvidia.NvidiaGpuDriver(self.conf)))
        self.assertIn('Could not give VF %s vGPU type 1414: [Errno 16]'
                      % (vf1,), self.logs.output)
        self.assertEqual('0', self.current(vf1))

    def record_writes(self):
        """The privileged vGPU type writes, still made in-process."""
        return self.useFixture(fixtures.MockPatchObject(
            privileged, 'set_vgpu_type',
            side_effect=privileged.set_vgpu_type)).mock

    def drop_iommu_group(self, address):
        os.unlink(os.path.join(self.tree.function_dir(address),
                               'iommu_group'))

    def test_no_write_on_a_host_without_an_iommu(self):
        for address in [self.GPU] + self.vfs:
            self.drop_iommu_group(address)
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [self.MIG_1G])
        writes = self.record_writes()
        self.configure()
        self.assertEqual([], self.discover())
        hardware = {h['address']: h for h in nvidia.NvidiaGpuDriver(
            self.conf).hardware()}
        self.assertEqual([], writes.call_args_list)
        self.assertEqual(['0'] * 4, [self.current(vf) for vf in self.vfs])
        gpu = hardware[self.GPU]
        self.assertFalse(gpu['ready'])
        self.assertIn('no VF was given vGPU type 1414: it has no IOMMU '
                      'group', gpu['reason'])
        self.assertIn('intel_iommu=on', gpu['action'])
        for vf in self.vfs:
            self.assertIn('no IOMMU group', hardware[str(vf)]['reason'])

    def test_only_the_vfs_a_vm_can_have_are_carved(self):
        vf0, vf1, vf2, vf3 = self.vfs
        self.drop_iommu_group(vf1)
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [self.MIG_1G])
        writes = self.record_writes()
        self.configure()
        [device] = self.discover()
        self.assertEqual([str(vf0), str(vf2), str(vf3)],
                         self.handle_addresses(device.deployable_list[0]))
        self.assertEqual([mock.call(str(vf), 1414) for vf in (vf0, vf2, vf3)],
                         writes.call_args_list)
        self.assertEqual(['1414', '0', '1414', '1414'],
                         [self.current(vf) for vf in self.vfs])

    def test_sriov_not_enabled_says_how_to_enable_it(self):
        self.tree.add_card('h200_sxm', '0000:c1:00.0')
        self.flags(group='gpu_devices', enabled_vgpu_types=['nvidia-1414'])
        drivers_conf.register_vgpu_opts(self.conf, 'nvidia-1414')
        self.flags(group='vgpu_nvidia-1414',
                   device_addresses=['0000:c1:00.0'])
        hardware = nvidia.NvidiaGpuDriver(self.conf).hardware()
        reasons = {h['address']: h['reason'] for h in hardware}
        self.assertIn('sriov-manage -e 0000:c1:00.0',
                      reasons['0000:c1:00.0'])

    def test_vfs_of_an_unlisted_gpu_are_left_alone(self):
        for vf in self.vfs:
            sysfs.add_vendor_vgpu(self.tree, vf, [self.MIG_1G])
        self.assertEqual([], self.discover())
        self.assertEqual(['0'] * 4, [self.current(vf) for vf in self.vfs])

    def test_privileged_write_stays_in_bounds(self):
        sysfs.add_vendor_vgpu(self.tree, self.vfs[0], [self.MIG_1G])
        for bad in ('1414', -1, None, True):
            self.assertRaises(ValueError, privileged.set_vgpu_type,
                              str(self.vfs[0]), bad)
        # A function without the file: nothing is created.
        self.assertRaises(OSError, privileged.set_vgpu_type, self.GPU, 1414)
        self.assertFalse(os.path.exists(os.path.join(
            self.tree.function_dir(self.GPU), 'nvidia')))
        privileged.set_vgpu_type(str(self.vfs[0]), 1414)
        self.assertEqual('1414', self.current(self.vfs[0]))


class MigOnMdevTest(sysfs.SysfsTestCase):
    """MIG-backed vGPU on Ampere: the types are mdev types of the VFs,
    creatable where a GPU instance is free."""

    def test_mig_backed_type_counts_free_gpu_instances(self):
        vfs = self.tree.add_card('a100', '0000:5e:00.0', vfs=8)
        for index, vf in enumerate(vfs):
            # Seven 1g.5gb instances; one is in use by an mdev on VF 0.
            self.tree.add_mdev_type(
                vf, 'nvidia-699', 'NVIDIA A100-1-5C',
                1 if 0 < index < 7 else 0,
                devices=['u0'] if index == 0 else [])
            self.tree.add_mdev_type(vf, 'nvidia-700', 'NVIDIA A100-2-10C',
                                    0)
        self.flags(group='gpu_devices', enabled_vgpu_types=['nvidia-699'])
        drivers_conf.register_vgpu_opts(self.conf, 'nvidia-699')
        self.flags(group='vgpu_nvidia-699', device_addresses=['5e:00.0'])
        [device] = nvidia.NvidiaGpuDriver(self.conf).discover()
        [vgpu] = device.deployable_list
        self.assertEqual(7, vgpu.num_accelerators)
        self.assertEqual(['CUSTOM_NVIDIA_20B0_A100_1_5C', 'OWNER_CYBORG'],
                         self.traits(vgpu))
        self.assertEqual({'MDEV'}, {h.attach_type
                                    for h in vgpu.attach_handle_list})


class MdevTest(sysfs.SysfsTestCase):
    """Creating and removing mdevs writes the kernel's sysfs files
    (through privsep, run in-process here)."""

    GPU = '0000:3b:00.0'
    TYPE = 'nvidia-222'
    MDEV = '5e6c1a2b-3d4e-4f50-8a61-72b8c9d0e1f2'

    def setUp(self):
        super().setUp()
        privsep.sys_admin_pctxt.set_client_mode(False)
        self.addCleanup(privsep.sys_admin_pctxt.set_client_mode, True)
        self.tree.add_card('tesla_t4', self.GPU)
        self.tree.add_mdev_type(self.GPU, self.TYPE, 'GRID T4-1B', 16)
        self.tree.write(self.GPU, 'mdev_supported_types/%s/create'
                        % self.TYPE, '')
        self.driver = nvidia.NvidiaGpuDriver(self.conf)

    def test_create_writes_the_uuid(self):
        self.driver.create_mdev(self.GPU, self.TYPE, self.MDEV)
        self.assertEqual(self.MDEV, self.tree.read(
            self.GPU, 'mdev_supported_types/%s/create' % self.TYPE))

    def test_libvirt_name(self):
        # What Nova 34 looks the mdev of a cyborg ARQ up by, and libvirt
        # names an mdev made through sysfs.
        expected = 'mdev_5e6c1a2b_3d4e_4f50_8a61_72b8c9d0e1f2_0000_3b_00_0'
        self.assertEqual(expected, mdev.libvirt_name(self.MDEV, self.GPU))
        self.assertEqual(expected, mdev.libvirt_name(
            self.MDEV, pci.PciAddress.parse('3b:00.0')))
        self.assertEqual(
            'mdev_5e6c1a2b_3d4e_4f50_8a61_72b8c9d0e1f2_0001_af_1f_7',
            mdev.libvirt_name(self.MDEV, '0001:af:1f.7'))
        self.assertRaises(ValueError, mdev.libvirt_name, 'nope', self.GPU)
        self.assertRaises(ValueError, mdev.libvirt_name, self.MDEV, 'x')

    def test_create_of_an_existing_mdev_does_nothing(self):
        self.tree.write(self.GPU, '%s/remove' % self.MDEV, '')
        self.driver.create_mdev(self.GPU, self.TYPE, self.MDEV)
        self.assertEqual('', self.tree.read(
            self.GPU, 'mdev_supported_types/%s/create' % self.TYPE))

    def test_create_of_an_unknown_type_fails(self):
        error = self.assertRaises(base.OperationFailed,
                                  self.driver.create_mdev, self.GPU,
                                  'nvidia-999', self.MDEV)
        self.assertIn('nvidia-999', str(error))

    def test_remove(self):
        self.tree.write(self.GPU, '%s/remove' % self.MDEV, '')
        self.driver.remove_mdev(self.GPU, self.TYPE, self.MDEV)
        self.assertEqual('1', self.tree.read(self.GPU,
                                             '%s/remove' % self.MDEV))
        # Gone already: nothing to do.
        self.driver.remove_mdev(self.GPU, self.TYPE, str(uuid.uuid4()))
