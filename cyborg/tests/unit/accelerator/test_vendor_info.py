"""vendor_board_info: what the vendor exposes, for every driver."""

import json

import testtools

from cyborg.accelerator.common import vendor_info
from cyborg.accelerator.drivers.fpga import intel as intel_fpga
from cyborg.accelerator.drivers.nic import intel as intel_nic
from cyborg.tests.unit.accelerator import sysfs

FPGA = '0000:3b:00.0'
NIC = '0000:18:00.0'


class MergedTest(testtools.TestCase):

    def test_merged(self):
        self.assertIsNone(vendor_info.merged(None, {}))
        self.assertEqual('{"a": 1}', vendor_info.merged(None, {'a': 1}))
        # The driver's own keys win.
        self.assertEqual({'a': 2, 'b': 1}, json.loads(
            vendor_info.merged('{"a": 2}', {'a': 1, 'b': 1})))
        self.assertEqual('fake_vendor_info',
                         vendor_info.merged('fake_vendor_info', {'a': 1}))
        self.assertEqual('[1]', vendor_info.merged('[1]', {'a': 1}))


class DriversTest(sysfs.SysfsTestCase):

    def test_intel_fpga_bitstream(self):
        self.tree.add_card('pac_arria10', FPGA)
        sysfs.add_opae(self.tree, FPGA, 'ab' * 16, 'cd' * 16)
        n = 0x3b * 256
        fme = 'fpga_region/region%d/dfl-fme.%d' % (2 * n, n)
        self.tree.write(FPGA, fme + '/bitstream_id', '0x23000410010309\n')
        self.tree.write(FPGA, fme + '/bitstream_metadata', '0x1201\n')
        self.tree.write(FPGA, 'subsystem_vendor', '0x8086\n')
        self.tree.write(FPGA, 'subsystem_device', '0x0001\n')
        [device] = intel_fpga.IntelFpgaDriver(self.conf).discover()
        self.assertEqual({'bitstream_id': '0x23000410010309',
                          'bitstream_metadata': '0x1201',
                          'subsystem': '8086:0001',
                          'subsystem_name': 'Intel Corporation Device 0001'},
                         json.loads(device.vendor_board_info))

    def test_a_driver_keeps_its_own_keys(self):
        self.flags(group='nic_devices', enabled_nic_types=[])
        self.tree.add_card('x710', NIC, vfs=1)
        self.tree.write(NIC, 'subsystem_vendor', '0x8086\n')
        self.tree.write(NIC, 'subsystem_device', '0x0001\n')
        [device] = intel_nic.IntelNicDriver(self.conf).discover()
        self.assertEqual({'netdevs': [], 'functions': [],
                          'physical_network': None,
                          'subsystem': '8086:0001',
                          'subsystem_name': 'Intel Corporation Ethernet '
                                            'Converged Network Adapter '
                                            'X710-4'},
                         json.loads(device.vendor_board_info))
