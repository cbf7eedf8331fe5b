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
        'CUSTOM_NVIDIA_<PID>_<VGPU_NAME>': 'CUSTOM_NVIDIA_1EB8_T4_1B'},
    'intel_qat_driver': {
        'CUSTOM_QAT': 'CUSTOM_QAT',
        'CUSTOM_QAT_CRYPTO': 'CUSTOM_QAT_CRYPTO',
        'CUSTOM_QAT_COMPRESSION': 'CUSTOM_QAT_COMPRESSION',
        'CUSTOM_QAT_PRODUCT_ID_<PID>': 'CUSTOM_QAT_PRODUCT_ID_37C8'},
}


class StableNamesTest(sysfs.SysfsTestCase):

    def setUp(self):
        super().setUp()
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('tesla_t4', '0000:af:00.0')
        self.tree.add_mdev_type('0000:af:00.0', 'nvidia-222', 'GRID T4-1B',
                                16)
        self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=2)
        self.flags(group='gpu_devices', enabled_vgpu_types=['nvidia-222'])
        drivers_conf.register_vgpu_opts(self.conf, 'nvidia-222')
        self.flags(group='vgpu_nvidia-222', device_addresses=['af:00.0'])
        self.flags(group='pci', passthrough_whitelist=[
            '{"vendor_id": "10de", "address": "*:3b:00.0"}'])

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
