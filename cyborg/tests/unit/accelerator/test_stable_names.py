"""The resource classes and traits drivers report are a contract.

Device profiles and flavors name them; renaming one silently breaks them
on upgrade (upstream did, see spec 12.2). This test discovers one host
with every supported card through the real plugins and compares every
name against the table below, which is the one documented in
doc/source/contributor/drivers.rst. Change a name only with a deprecation
plan, and change both.
"""

import os
import re

from cyborg.accelerator import drivers
from cyborg.conf import drivers as drivers_conf
from cyborg.conf import nic as nic_conf
from cyborg.tests.unit.accelerator import sysfs

DOC = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'doc',
                   'source', 'contributor', 'drivers.rst')

# driver: {documented pattern: the name it gives on the test host}
CONTRACT = {
    'fake_driver': {
        'FPGA': 'FPGA',
        'CUSTOM_FAKE_DEVICE': 'CUSTOM_FAKE_DEVICE'},
    'pci_driver': {
        'CUSTOM_PCI': 'CUSTOM_PCI',
        'OWNER_CYBORG': 'OWNER_CYBORG',
        'CUSTOM_PCI_<VENDOR>': 'CUSTOM_PCI_NVIDIA',
        'CUSTOM_PCI_PRODUCT_ID_<PID>': 'CUSTOM_PCI_PRODUCT_ID_1EB8'},
    'nvidia_gpu_driver': {
        'PGPU': 'PGPU',
        'VGPU': 'VGPU',
        'OWNER_CYBORG': 'OWNER_CYBORG',
        'CUSTOM_NVIDIA_<PID>': 'CUSTOM_NVIDIA_1EB8',
        'CUSTOM_NVIDIA_<PID>_<VGPU_NAME>': 'CUSTOM_NVIDIA_1EB8_T4_1B',
        'CUSTOM_NVIDIA_<PID>_VGPU_<TYPE_NUMBER>':
            'CUSTOM_NVIDIA_2335_VGPU_1414'},
    'intel_qat_driver': {
        'CUSTOM_QAT': 'CUSTOM_QAT',
        'CUSTOM_QAT_CRYPTO': 'CUSTOM_QAT_CRYPTO',
        'CUSTOM_QAT_COMPRESSION': 'CUSTOM_QAT_COMPRESSION',
        'CUSTOM_QAT_PRODUCT_ID_<PID>': 'CUSTOM_QAT_PRODUCT_ID_37C8'},
    'intel_nic_driver': {
        'CUSTOM_NIC': 'CUSTOM_NIC',
        'CUSTOM_PF': 'CUSTOM_PF',
        'CUSTOM_VF': 'CUSTOM_VF',
        'CUSTOM_NIC_INTEL': 'CUSTOM_NIC_INTEL',
        'CUSTOM_NIC_PRODUCT_ID_<PID>': 'CUSTOM_NIC_PRODUCT_ID_1572',
        'CUSTOM_<PHYSNET>': 'CUSTOM_PHYSNET1',
        'CUSTOM_<FUNCTION>': 'CUSTOM_GTPV1'},
    'intel_fpga_driver': {
        'FPGA': 'FPGA',
        'CUSTOM_FPGA_INTEL': 'CUSTOM_FPGA_INTEL',
        'CUSTOM_FPGA_INTEL_<PRODUCT>': 'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
        'CUSTOM_FPGA_REGION_INTEL_<INTERFACE_ID>':
            'CUSTOM_FPGA_REGION_INTEL_CE48969398F05F33946D560708BE108A',
        'CUSTOM_FPGA_FUNCTION_ID_INTEL_<AFU_ID>':
            'CUSTOM_FPGA_FUNCTION_ID_INTEL_D8424DC4A4A3C413F89E433683F9040B'},
    'xilinx_fpga_driver': {
        'FPGA': 'FPGA',
        'CUSTOM_FPGA_XILINX': 'CUSTOM_FPGA_XILINX',
        'CUSTOM_FPGA_PRODUCT_ID_<PID>': 'CUSTOM_FPGA_PRODUCT_ID_5000'},
}


class StableNamesTest(sysfs.SysfsTestCase):

    def setUp(self):
        super().setUp()
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('tesla_t4', '0000:af:00.0')
        self.tree.add_mdev_type('0000:af:00.0', 'nvidia-222', 'GRID T4-1B',
                                16)
        self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=2)
        # Vendor-specific VFIO vGPU, carved already.
        for vf in self.tree.add_card('h200_sxm', '0000:41:00.0', vfs=2):
            sysfs.add_vendor_vgpu(self.tree, vf, [], current=1414)
        self.flags(group='gpu_devices',
                   enabled_vgpu_types=['nvidia-222', 'nvidia-1414'])
        drivers_conf.register_vgpu_opts(self.conf, 'nvidia-222')
        self.flags(group='vgpu_nvidia-222', device_addresses=['af:00.0'])
        drivers_conf.register_vgpu_opts(self.conf, 'nvidia-1414')
        self.flags(group='vgpu_nvidia-1414', device_addresses=['41:00.0'])
        self.flags(group='pci', passthrough_whitelist=[
            '{"vendor_id": "10de", "address": "*:3b:00.0"}'])
        self.tree.add_card('x710', '0000:18:00.0', vfs=2)
        self.tree.add_card('x710', '0000:18:00.1', driver='vfio-pci')
        sysfs.add_netdev(self.tree, '0000:18:00.0', 'ens1f0')
        self.flags(group='nic_devices', enabled_nic_types=['x710_static'])
        nic_conf.register_nic_type_opts(self.conf, 'x710_static')
        self.flags(group='x710_static',
                   physical_device_mappings=['physnet1:ens1f0'],
                   function_device_mappings=['GTPv1:ens1f0'])
        self.tree.add_card('pac_arria10', '0000:5e:00.0')
        sysfs.add_opae(self.tree, '0000:5e:00.0',
                       'ce48969398f05f33946d560708be108a',
                       'd8424dc4a4a3c413f89e433683f9040b')
        sysfs.add_alveo(self.tree, '0000:86:00')

    def test_names_are_the_documented_ones(self):
        loaded, _statuses = drivers.load(sorted(CONTRACT), self.conf)
        self.assertEqual(sorted(CONTRACT), sorted(loaded))
        for name, driver in loaded.items():
            reported = {attr.value for device in driver.discover()
                        for dep in device.deployable_list
                        for attr in dep.attribute_list}
            self.assertEqual(set(CONTRACT[name].values()), reported, name)

    def test_the_guide_documents_every_name(self):
        with open(DOC) as f:
            text = f.read()
        for name, names in CONTRACT.items():
            section = re.search(r'``%s``(.*?)(\n\n|\Z)' % name, text,
                                re.S)
            self.assertIsNotNone(section, name)
            for pattern in names:
                self.assertIn('``%s``' % pattern, section.group(1),
                              '%s: %s' % (name, pattern))
