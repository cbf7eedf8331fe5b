"""Passthrough readiness: every driver offers only what a VM can have."""

import json

from cyborg.accelerator.drivers.fpga import intel as intel_fpga
from cyborg.accelerator.drivers.fpga import xilinx
from cyborg.accelerator.drivers.gpu import nvidia
from cyborg.accelerator.drivers.nic import intel as intel_nic
from cyborg.accelerator.drivers.pci import driver as pci_driver
from cyborg.tests.unit.accelerator import sysfs

GPU = '0000:3b:00.0'
AUDIO = '0000:3b:00.1'
NVME = '0000:d8:00.0'
NVME_SPEC = {'vendor_id': '144d', 'product_id': 'a808'}


class ReadinessTest(sysfs.SysfsTestCase):

    def hardware(self, driver):
        return {h['address']: h for h in driver.hardware()}

    def nvidia(self):
        return nvidia.NvidiaGpuDriver(self.conf)

    def whitelist(self, *specs):
        self.flags(device_spec=[json.dumps(list(specs))], group='pci')
        return pci_driver.PciDriver(self.conf)

    def test_no_iommu_group(self):
        self.tree.add_card('tesla_t4', GPU, driver='vfio-pci')
        self.tree.remove(GPU, 'iommu_group')
        self.assertEqual([], self.nvidia().discover())
        gpu = self.hardware(self.nvidia())[GPU]
        self.assertFalse(gpu['ready'])
        self.assertIn('no IOMMU group', gpu['reason'])
        self.assertIn('intel_iommu=on', gpu['action'])
        self.assertIn('allow_no_iommu_group', gpu['action'])
        # Containers need no IOMMU: the operator says so.
        self.flags(allow_no_iommu_group=True, group='agent')
        [device] = self.nvidia().discover()
        self.assertEqual('PGPU', self.rc(device.deployable_list[0]))

    def test_group_shared_with_a_host_function(self):
        self.tree.add_card('tesla_t4', GPU, driver='vfio-pci')
        self.tree.remove(GPU, 'iommu_group')
        self.tree.add_function(GPU, '10de', '1eb8', '030200', 'vfio-pci',
                               iommu_group=40)
        self.tree.add_function(AUDIO, '10de', '10f8', '040300',
                               'snd_hda_intel', iommu_group=40)
        self.assertEqual([], self.nvidia().discover())
        gpu = self.hardware(self.nvidia())[GPU]
        self.assertEqual('it shares IOMMU group 40 with %s (kernel driver '
                         'snd_hda_intel), which stays with the host' % AUDIO,
                         gpu['reason'])
        self.assertIn('bind %s to vfio-pci' % AUDIO, gpu['action'])
        # Given to VFIO as well, it goes with the GPU.
        self.tree.bind(AUDIO, 'vfio-pci')
        [device] = self.nvidia().discover()
        self.assertEqual(1, device.deployable_list[0].num_accelerators)

    def test_bridges_and_free_functions_do_not_count(self):
        self.tree.add_function(GPU, '10de', '1eb8', '030200', 'vfio-pci',
                               iommu_group=41)
        self.tree.add_function('0000:3a:00.0', '8086', '2030', '060400',
                               'pcieport', iommu_group=41)
        self.tree.add_function(AUDIO, '10de', '10f8', '040300', None,
                               iommu_group=41)
        self.tree.add_function('0000:3b:00.2', '10de', '1ad8', '0c0330',
                               'pci-stub', iommu_group=41)
        [device] = self.nvidia().discover()
        self.assertEqual(1, len(device.deployable_list))

    def test_functions_handed_out_together_share_a_group(self):
        mgmt, user = sysfs.add_alveo(self.tree, '0000:86:00')
        for address in (mgmt, user):
            self.tree.remove(address, 'iommu_group')
            self.tree.add_function(address, '10ee', '%04x' % (
                0x5000 + address.function), '120000',
                ('xclmgmt', 'xocl')[address.function], iommu_group=42)
        [device] = xilinx.XilinxFpgaDriver(self.conf).discover()
        self.assertEqual(2, len(device.deployable_list[0].attach_handle_list))
        # Without a group, the card goes whole: its handles go together.
        self.tree.remove(user, 'iommu_group')
        driver = xilinx.XilinxFpgaDriver(self.conf)
        self.assertEqual([], driver.discover())
        self.assertIn('no IOMMU group',
                      self.hardware(driver)[str(user)]['reason'])

    def test_one_vf_without_a_group(self):
        self.flags(group='nic_devices', enabled_nic_types=[])
        vfs = self.tree.add_card('x710', '0000:18:00.0', vfs=3)
        sysfs.add_netdev(self.tree, '0000:18:00.0', 'ens1f0')
        self.tree.remove(vfs[1], 'iommu_group')
        driver = intel_nic.IntelNicDriver(self.conf)
        [device] = driver.discover()
        self.assertEqual([self.tree_name(vfs[0]), self.tree_name(vfs[2])],
                         [d.name for d in device.deployable_list])
        hardware = self.hardware(driver)
        self.assertIn('no IOMMU group', hardware[str(vfs[1])]['reason'])
        self.assertTrue(hardware['0000:18:00.0']['ready'])

    def test_fpga_vfs_of_one_region(self):
        vfs = self.tree.add_card('pac_arria10', '0000:3b:00.0', vfs=1)
        vfs += self.tree.add_vfs('0000:3b:00.0', 2, '09c5', 'vfio-pci')[1:]
        sysfs.add_opae(self.tree, '0000:3b:00.0', 'ab' * 16)
        self.tree.remove(vfs[0], 'iommu_group')
        driver = intel_fpga.IntelFpgaDriver(self.conf)
        [device] = driver.discover()
        [region] = device.deployable_list
        self.assertEqual(1, region.num_accelerators)
        self.assertEqual(1, len(region.attach_handle_list))
        self.assertIn('no IOMMU group',
                      self.hardware(driver)[str(vfs[0])]['reason'])

    def tree_name(self, address):
        return 'cmp-1_example_org_' + str(address).replace(
            ':', '_').replace('.', '_')


class HostUseTest(sysfs.SysfsTestCase):

    def not_offered_reason(self, address, *specs):
        self.flags(device_spec=[json.dumps(list(specs))], group='pci')
        driver = pci_driver.PciDriver(self.conf)
        entries = {h['address']: h for h in driver.hardware()}
        self.assertFalse(entries[address]['ready'], entries[address])
        return entries[address]['reason']

    def nvme(self, driver='nvme'):
        self.tree.add_function(NVME, '144d', 'a808', '010802', driver)
        self.tree.write(NVME, 'nvme/nvme0/nvme0n1/dev', '259:0\n')
        self.tree.write(NVME, 'nvme/nvme0/nvme0n1/nvme0n1p1/dev', '259:1\n')
        self.tree.write(NVME, 'nvme/nvme0/nvme0n1/nvme0n1p1/partition',
                        '1\n')
        self.tree.write(NVME, 'nvme/nvme0/nvme0n1/nvme0n1p2/dev', '259:2\n')
        self.tree.write(NVME, 'nvme/nvme0/nvme0n1/nvme0n1p2/partition',
                        '2\n')

    def test_an_idle_disk_is_offered(self):
        self.nvme()
        self.write_proc('self/mountinfo', '22 1 0:21 / /proc rw - proc '
                        'proc rw\n')
        self.flags(device_spec=[json.dumps(NVME_SPEC)], group='pci')
        [device] = pci_driver.PciDriver(self.conf).discover()
        self.assertEqual('Samsung Electronics Co Ltd NVMe SSD Controller '
                         'SM981/PM981/PM983', device.model)

    def test_mounted_partition_by_number(self):
        self.nvme()
        # /dev/root: the kernel's name when it mounted the root itself.
        self.write_proc('self/mountinfo',
                        '1 0 259:1 / / rw,relatime - ext4 /dev/root rw\n')
        self.assertEqual('the host uses it: its disk nvme0n1p1 holds the '
                         'filesystem mounted on /',
                         self.not_offered_reason(NVME, NVME_SPEC))

    def test_mounted_by_name_swap_and_holders(self):
        self.nvme()
        self.write_proc('self/mountinfo', '30 1 0:40 / /srv rw shared:1 - '
                        'btrfs /dev/nvme0n1p2 rw\n')
        self.assertIn('nvme0n1p2 holds the filesystem mounted on /srv',
                      self.not_offered_reason(NVME, NVME_SPEC))
        self.write_proc('self/mountinfo', '')
        self.write_proc('swaps', 'Filename Type Size Used Priority\n'
                        '/dev/nvme0n1p1 partition 100 0 -2\n')
        self.assertIn('nvme0n1p1 holds swap',
                      self.not_offered_reason(NVME, NVME_SPEC))
        self.write_proc('swaps', 'Filename Type Size Used Priority\n')
        self.tree.write(NVME, 'nvme/nvme0/nvme0n1/holders/dm-0/x', '')
        self.assertIn('nvme0n1 is held by dm-0',
                      self.not_offered_reason(NVME, NVME_SPEC))

    def test_network_interfaces(self):
        nic = '0000:00:03.0'
        spec = {'vendor_id': '1af4'}
        self.tree.add_function(nic, '1af4', '1041', '020000', 'virtio-pci')
        path = sysfs.add_netdev(self.tree, nic, 'eth0', up=False)
        self.flags(device_spec=[json.dumps(spec)], group='pci')
        self.assertEqual(1, len(pci_driver.PciDriver(self.conf).discover()))
        self.tree.write(nic, 'net/eth0/flags', '0x1003\n')
        self.assertIn('its network interface eth0 is up',
                      self.not_offered_reason(nic, spec))
        self.tree.write(nic, 'net/eth0/flags', '0x1002\n')
        self.write_proc('net/if_inet6', '2001%s 02 40 00 80 eth0\n'
                        % ('0' * 28))
        self.assertIn('eth0 has addresses',
                      self.not_offered_reason(nic, spec))
        self.write_proc('net/if_inet6', '')
        self.write_proc('net/route', 'Iface\tDestination\n'
                        'eth0\t0000000A\n')
        self.assertIn('eth0 has addresses',
                      self.not_offered_reason(nic, spec))
        self.write_proc('net/route', 'Iface\tDestination\n')
        self.tree._link(self.tree.root, path + '/master')
        self.assertIn('eth0 is part of',
                      self.not_offered_reason(nic, spec))

    def test_console(self):
        self.tree.add_card('tesla_t4', GPU, driver='vfio-pci')
        self.tree.write(GPU, 'boot_vga', '1\n')
        driver = nvidia.NvidiaGpuDriver(self.conf)
        self.assertEqual([], driver.discover())
        [entry] = driver.hardware()
        self.assertEqual('the host uses it: it drives the host\'s console '
                         '(boot_vga)', entry['reason'])

    def test_a_group_shared_with_a_used_function_keeps_both_out(self):
        nic = '0000:d8:00.1'
        self.tree.add_function(NVME, '144d', 'a808', '010802', 'vfio-pci',
                               iommu_group=50)
        self.tree.add_function(nic, '1af4', '1041', '020000', 'virtio-pci',
                               iommu_group=50)
        sysfs.add_netdev(self.tree, nic, 'eth0')
        spec = {'vendor_id': '1af4'}
        self.assertIn('shares IOMMU group 50 with %s (kernel driver '
                      'virtio-pci)' % nic,
                      self.not_offered_reason(NVME, NVME_SPEC, spec))
        self.assertIn('eth0 is up',
                      self.not_offered_reason(nic, NVME_SPEC, spec))
