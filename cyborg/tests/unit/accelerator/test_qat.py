"""intel_qat_driver against sysfs trees."""

import json

from cyborg.accelerator.drivers.qat import intel
from cyborg.tests.unit.accelerator import sysfs

PREFIX = 'cmp-1_example_org_'


class IntelQatDriverTest(sysfs.SysfsTestCase):

    def discover(self):
        return intel.IntelQatDriver(self.conf).discover()

    def test_pf_with_vfs_and_pf_without(self):
        vfs = self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=4)
        self.tree.add_card('qat_c62x', '0000:3f:00.0')
        self.tree.add_card('x710', '0000:18:00.0')
        devices = self.discover()
        self.assertEqual(2, len(devices))
        first, second = devices
        self.assertEqual(('QAT', '8086', 'Intel QuickAssist C62x'),
                         (first.type, first.vendor, first.model))
        self.assertEqual(
            [PREFIX + str(vf).replace(':', '_').replace('.', '_')
             for vf in vfs],
            [d.name for d in first.deployable_list])
        dep = first.deployable_list[0]
        self.assertEqual('CUSTOM_QAT', self.rc(dep))
        self.assertEqual(['CUSTOM_QAT_COMPRESSION', 'CUSTOM_QAT_CRYPTO',
                          'CUSTOM_QAT_PRODUCT_ID_37C8'], self.traits(dep))
        self.assertEqual((1, 'PCI'), (dep.num_accelerators,
                                      dep.attach_handle_list[0].attach_type))
        self.assertEqual('{"bus": "3d", "device": "01", "domain": "0000", '
                         '"function": "0"}',
                         dep.attach_handle_list[0].attach_info)
        self.assertEqual('{"bus": "3d", "device": "00", "domain": "0000", '
                         '"function": "0"}', first.controlpath_id.cpid_info)
        self.assertEqual([PREFIX + '0000_3f_00_0'],
                         [d.name for d in second.deployable_list])

    def test_4xxx_services(self):
        self.tree.add_card('qat_4xxx', '0000:6b:00.0', vfs=2)
        self.tree.write('0000:6b:00.0', 'qat/cfg_services', 'dc\n')
        self.tree.write('0000:6b:00.0', 'qat/state', 'up\n')
        self.tree.add_card('qat_4xxx', '0000:70:00.0', vfs=2)
        self.tree.write('0000:70:00.0', 'qat/cfg_services', 'sym;asym\n')
        self.tree.add_card('qat_4xxx', '0000:75:00.0', vfs=2)
        self.tree.write('0000:75:00.0', 'qat/state', 'down\n')
        self.tree.add_card('qat_4xxx', '0000:7a:00.0', vfs=2)
        self.tree.write('0000:7a:00.0', 'qat/cfg_services', 'sym;bogus')
        traits = {d.controlpath_id.cpid_info[9:11]:
                  self.traits(d.deployable_list[0])
                  for d in self.discover()}
        self.assertEqual(
            {'6b': ['CUSTOM_QAT_COMPRESSION', 'CUSTOM_QAT_PRODUCT_ID_4940'],
             '70': ['CUSTOM_QAT_CRYPTO', 'CUSTOM_QAT_PRODUCT_ID_4940']},
            traits)
        # What the qat/ files say, in vendor_board_info too.
        info = {d.controlpath_id.cpid_info[9:11]:
                json.loads(d.vendor_board_info) for d in self.discover()}
        self.assertEqual(('up', 'dc'), (info['6b']['qat_state'],
                                        info['6b']['qat_services']))
        self.assertEqual('sym;asym', info['70']['qat_services'])
        self.assertNotIn('qat_state', info['70'])
        hardware = intel.IntelQatDriver(self.conf).hardware()
        reasons = {h['address']: h['reason'] for h in hardware}
        self.assertIn('down', reasons['0000:75:00.0'])
        self.assertIn('bogus', reasons['0000:7a:00.0'])

    def test_wrong_kernel_drivers(self):
        vfs = self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=3)
        self.tree.bind(vfs[1], 'ixgbevf')
        self.tree.add_card('qat_c62x', '0000:3f:00.0', driver='igb_uio')
        self.tree.add_card('qat_c62x', '0000:41:00.0', vfs=1,
                           vf_driver='ixgbevf')
        [device] = self.discover()
        self.assertEqual([PREFIX + '0000_3d_01_0', PREFIX + '0000_3d_01_2'],
                         [d.name for d in device.deployable_list])
        not_offered = self.not_offered(intel.IntelQatDriver(self.conf))
        self.assertIn('0000:3d:01.1: a VF of QAT 0000:3d:00.0 bound to '
                      'kernel driver ixgbevf', not_offered)
        self.assertIn('0000:3f:00.0: bound to kernel driver igb_uio',
                      not_offered)
        self.assertNotIn('ixgbevf', self.logs.output)

    def test_half_written_vf_and_pf(self):
        vfs = self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=2)
        self.tree.write(vfs[0], 'vendor', '0x80')
        self.tree.add_card('qat_c62x', '0000:3f:00.0', vfs=2)
        self.tree.write('0000:3f:00.0', 'sriov_totalvfs', '1')
        self.tree.write('0000:3f:00.0', 'sriov_totalvfs', '')
        [device] = self.discover()
        self.assertEqual([PREFIX + '0000_3d_01_1'],
                         [d.name for d in device.deployable_list])
