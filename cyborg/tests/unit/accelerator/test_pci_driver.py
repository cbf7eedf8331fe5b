"""pci_driver: Nova style specs against sysfs trees."""

import json

import testtools

from cyborg.accelerator.common import pci
from cyborg.accelerator.common import sysfs as reader
from cyborg.accelerator.drivers.pci import driver as pci_driver
from cyborg.tests.unit.accelerator import sysfs

PREFIX = 'cmp-1_example_org_'


def _function(address, vendor='8086', product='1572'):
    return reader.PciFunction(address=pci.PciAddress.parse(address),
                              vendor=vendor, product=product,
                              class_code='020000')


class DeviceSpecTest(testtools.TestCase):

    def spec(self, **raw):
        return pci_driver.DeviceSpec(raw)

    def test_ids_and_wildcards(self):
        spec = self.spec(vendor_id='0x8086', product_id='*')
        self.assertTrue(spec.matches(_function('0000:18:00.0')))
        self.assertFalse(spec.matches(_function('0000:18:00.0', '10de')))

    def test_address_globs(self):
        cases = [('0000:18:*.*', True), ('*:18:00.*', True),
                 ('18:00.0', True), ('0000:19:*.*', False),
                 ('0000:18:00.1', False), ('*:1?:00.0', True)]
        for glob, expected in cases:
            self.assertEqual(expected, self.spec(address=glob).matches(
                _function('0000:18:00.0')), glob)
        spec = self.spec(address={'bus': '18', 'function': '[0-1]'})
        self.assertTrue(spec.matches(_function('0000:18:00.1')))
        self.assertFalse(spec.matches(_function('0000:18:00.2')))

    def test_names_are_normalised(self):
        spec = self.spec(vendor_id='10de', resource_class='my-gpu',
                         traits='fast, HW_GPU_API_VULKAN,CUSTOM_x')
        self.assertEqual('CUSTOM_MY_GPU', spec.resource_class)
        self.assertEqual(['CUSTOM_FAST', 'HW_GPU_API_VULKAN', 'CUSTOM_X'],
                         spec.traits)
        self.assertEqual('PGPU', self.spec(vendor_id='10de',
                                           resource_class='PGPU')
                         .resource_class)

    def test_refused_specs(self):
        for raw in ({}, {'devname': 'eth0'}, {'vendor_id': 'xyz'},
                    {'address': 'nonsense'}, {'vendor_id': '8086',
                                              'traits': ['A']}, []):
            self.assertRaises(pci_driver.InvalidSpec, pci_driver.DeviceSpec,
                              raw)

    def test_parse_specs_skips_bad_entries(self):
        specs = pci_driver.parse_specs([
            '{"vendor_id": "8086"}', 'not json', '{}',
            '[{"vendor_id": "10de"}, {"product_id": "1572"}]'])
        self.assertEqual(['8086', '10de', None],
                         [s.vendor_id for s in specs])


class PciDriverTest(sysfs.SysfsTestCase):

    def discover(self, *specs):
        self.flags(group='pci', passthrough_whitelist=[
            json.dumps(spec) for spec in specs])
        return pci_driver.PciDriver(self.conf).discover()

    def test_device_spec_and_passthrough_whitelist_both_count(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('u200_user', '0000:af:00.1')
        self.tree.add_card('x710', '0000:18:00.0')
        self.flags(group='pci', device_spec=[
            '{"vendor_id": "10ee", "resource_class": "CUSTOM_U200"}'])
        deps = self.by_name(self.discover({'vendor_id': '10de'}))
        self.assertEqual(
            {PREFIX + '0000_3b_00_0': 'CUSTOM_PCI',
             PREFIX + '0000_af_00_1': 'CUSTOM_U200'},
            {name: self.rc(dep) for name, dep in deps.items()})

    def test_whitelisted_functions(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('u200_user', '0000:af:00.1')
        self.tree.add_card('x710', '0000:18:00.0')
        self.tree.add_card('bridge', '0000:00:01.0')
        devices = self.discover(
            {'vendor_id': '10de'},
            {'vendor_id': '10ee', 'product_id': '5001',
             'resource_class': 'CUSTOM_FPGA_U200', 'traits': 'xrt'},
            {'address': '0000:00:*.*'})
        deps = self.by_name(devices)
        self.assertEqual([PREFIX + '0000_3b_00_0', PREFIX + '0000_af_00_1'],
                         sorted(deps))
        gpu = deps[PREFIX + '0000_3b_00_0']
        self.assertEqual('CUSTOM_PCI', self.rc(gpu))
        self.assertEqual(['CUSTOM_PCI_NVIDIA', 'CUSTOM_PCI_PRODUCT_ID_1EB8',
                          'OWNER_CYBORG'], self.traits(gpu))
        self.assertEqual('NVIDIA', gpu.driver_name)
        fpga = deps[PREFIX + '0000_af_00_1']
        self.assertEqual('CUSTOM_FPGA_U200', self.rc(fpga))
        self.assertEqual(['CUSTOM_PCI_PRODUCT_ID_5001', 'CUSTOM_PCI_XILINX',
                          'CUSTOM_XRT', 'OWNER_CYBORG'], self.traits(fpga))
        self.assertEqual('{"bus": "af", "device": "00", "domain": "0000", '
                         '"function": "1"}',
                         fpga.attach_handle_list[0].attach_info)
        types = {d.controlpath_id.cpid_info: d.type for d in devices}
        self.assertEqual(['GENERIC', 'GPU'], sorted(types.values()))

    def test_sriov_pf_is_not_offered_whole_its_vfs_are(self):
        vfs = self.tree.add_card('e810', '0000:86:00.0', vfs=3)
        self.tree.add_card('e810', '0000:87:00.0')
        deps = self.by_name(self.discover({'vendor_id': '8086'}))
        self.assertEqual(
            sorted([PREFIX + '0000_87_00_0'] +
                   [PREFIX + str(vf).replace(':', '_').replace('.', '_')
                    for vf in vfs]), sorted(deps))
        self.assertEqual(
            'NIC', pci_driver.PciDriver(self.conf).discover()[0].type)

    def test_unknown_vendor_and_broken_device(self):
        self.tree.add_function('0000:3b:00.0', '1af4', '1041', '020000',
                               'virtio-pci')
        self.tree.add_function('0000:3c:00.0', '1af4', '1041', '020000')
        self.tree.write('0000:3c:00.0', 'device', '0x10')
        [device] = self.discover({'vendor_id': '1af4'})
        dep = device.deployable_list[0]
        self.assertEqual('1AF4', dep.driver_name)
        self.assertEqual(['CUSTOM_PCI_PRODUCT_ID_1041', 'OWNER_CYBORG'],
                         self.traits(dep))
        self.assertIn('0000:3c:00.0', self.logs.output)

    def test_nothing_whitelisted(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.assertEqual([], self.discover())
