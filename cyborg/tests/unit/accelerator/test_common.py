"""The shared plumbing: PCI addresses, the sysfs reader, record builders."""

import json
import os

import testtools

from cyborg.accelerator.common import pci
from cyborg.accelerator.common import records
from cyborg.accelerator.common import sysfs
from cyborg.tests.unit.accelerator import sysfs as fake_sysfs


class PciAddressTest(testtools.TestCase):

    def test_parse_and_format(self):
        address = pci.PciAddress.parse('0000:3B:00.1')
        self.assertEqual((0, 0x3b, 0, 1), address)
        self.assertEqual('0000:3b:00.1', str(address))
        self.assertEqual(address, pci.PciAddress.parse('3b:00.1'))

    def test_json_is_upstreams_sorted_string_shape(self):
        address = pci.PciAddress.parse('0000:5e:00.1')
        self.assertEqual('{"bus": "5e", "device": "00", "domain": "0000", '
                         '"function": "1"}', address.to_json())
        self.assertEqual(
            {'bus': '3b', 'device': '02', 'domain': '0000', 'function': '1',
             'physical_network': 'physnet1'},
            json.loads(pci.PciAddress.parse('0000:3b:02.1').to_json(
                physical_network='physnet1')))

    def test_garbage_is_refused(self):
        for text in ('', '0000:3b:00', '0000:3b:00.8', 'zz:00.0', None,
                     '0000:3b:00.0\n0'):
            self.assertIsNone(pci.parse_or_none(text), text)
        self.assertRaises(ValueError, pci.PciAddress.parse, 'x')


class RecordsTest(testtools.TestCase):

    def test_deployable_name_is_host_qualified_and_safe(self):
        self.assertEqual(
            'cmp-1_example_org_0000_3b_00_0',
            records.deployable_name('cmp-1.example.org',
                                    pci.PciAddress.parse('0000:3b:00.0')))

    def test_custom_name(self):
        self.assertEqual('CUSTOM_NVIDIA_1EB8_T4_1B',
                         records.custom_name('nvidia', '1eb8', 'T4-1B'))

    def test_attributes_rc_then_sorted_traits(self):
        attrs = records.attributes('PGPU', ['B', 'A', 'B'])
        self.assertEqual([('rc', 'PGPU'), ('trait0', 'A'), ('trait1', 'B')],
                         [(a.key, a.value) for a in attrs])

    def test_device_type_from_class(self):
        self.assertEqual('GPU', records.device_type_for_class('030200'))
        self.assertEqual('NIC', records.device_type_for_class('020000'))
        self.assertEqual('SSD', records.device_type_for_class('010802'))
        self.assertEqual('GENERIC', records.device_type_for_class('120000'))

    def test_mdev_handle(self):
        handle = records.mdev_handle(pci.PciAddress.parse('0000:af:00.0'),
                                     'nvidia-223', 3)
        self.assertEqual('MDEV', handle.attach_type)
        self.assertEqual(
            '{"asked_type": "nvidia-223", "bus": "af", "device": "00", '
            '"domain": "0000", "function": "0", "vgpu_mark": "nvidia-223_3"}',
            handle.attach_info)


class ReaderTest(fake_sysfs.SysfsTestCase):

    def reader(self):
        return sysfs.PciReader(self.tree.root)

    def test_reads_a_pf_with_vfs(self):
        vfs = self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=3,
                                 numa_node=1)
        functions = {f.address: f for f in self.reader().functions()}
        pf = functions[pci.PciAddress.parse('0000:3d:00.0')]
        self.assertEqual(('8086', '37c8', '0b4000'),
                         (pf.vendor, pf.product, pf.class_code))
        self.assertEqual(('c6xx', 1, 16, 3),
                         (pf.driver, pf.numa_node, pf.sriov_totalvfs,
                          pf.sriov_numvfs))
        self.assertEqual(tuple(vfs), pf.virtfns)
        self.assertIsNotNone(pf.iommu_group)
        self.assertTrue(pf.has_vfs_enabled)
        vf = functions[vfs[2]]
        self.assertEqual(('37c9', 'c6xxvf', pf.address),
                         (vf.product, vf.driver, vf.physfn))
        self.assertTrue(vf.is_vf)

    def test_virtfns_in_index_order(self):
        vfs = self.tree.add_card('x710', '0000:18:00.0', vfs=12)
        pf = self.reader().get(pci.PciAddress.parse('0000:18:00.0'))
        self.assertEqual(tuple(vfs), pf.virtfns)
        self.assertEqual('0000:18:02.3', str(pf.virtfns[11]))

    def test_no_numa_no_driver(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0', driver=None)
        self.tree.write('0000:3b:00.0', 'numa_node', '-1\n')
        t4 = self.reader().functions()[0]
        self.assertIsNone(t4.numa_node)
        self.assertIsNone(t4.driver)
        self.assertFalse(t4.has_vfs_enabled)

    def test_bad_files_skip_only_that_function(self):
        for address in ('0000:3b:00.0', '0000:5e:00.0', '0000:86:00.0',
                        '0000:af:00.0', '0000:d8:00.0'):
            self.tree.add_card('tesla_t4', address)
        self.tree.write('0000:3b:00.0', 'vendor', '0x10')     # half-written
        self.tree.remove('0000:5e:00.0', 'device')           # missing
        self.tree.write('0000:86:00.0', 'numa_node', 'banana')
        self.tree.write('0000:af:00.0', 'class', '\xff\xfe')
        found = self.reader().functions()
        self.assertEqual(['0000:d8:00.0'], [str(f.address) for f in found])
        self.assertEqual(4, self.logs.output.count('Skipping PCI function'))

    def test_junk_entries_and_dangling_links(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        os.symlink('nowhere', os.path.join(self.tree.root, 'bus', 'pci',
                                           'devices', '0000:99:00.0'))
        os.mkdir(os.path.join(self.tree.root, 'bus', 'pci', 'devices',
                              'not-an-address'))
        found = self.reader().functions()
        self.assertEqual(['0000:3b:00.0'], [str(f.address) for f in found])

    def test_vendor_filter(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('x710', '0000:18:00.0')
        self.assertEqual(['10de'], [f.vendor for f in
                                    self.reader().functions(('10de',))])

    def test_vendor_filter_reads_only_the_vendor_of_others(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('x710', '0000:18:00.0')
        # Garbage in a function of another vendor: not read, not warned.
        self.tree.write('0000:18:00.0', 'numa_node', 'banana')
        found = self.reader().functions(('10de',))
        self.assertEqual(['0000:3b:00.0'], [str(f.address) for f in found])
        self.assertNotIn('Skipping', self.logs.output)
        # A vendor file that cannot be read is still reported.
        self.tree.write('0000:18:00.0', 'vendor', 'zz')
        self.reader().functions(('10de',))
        self.assertEqual(1, self.logs.output.count('Skipping PCI function'))

    def test_one_pass_reads_each_function_once(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('x710', '0000:18:00.0')
        self.tree.add_card('tesla_t4', '0000:5e:00.0')
        self.tree.write('0000:5e:00.0', 'vendor', '0x10')  # half-written
        readers = [self.reader(), self.reader()]
        with sysfs.one_pass():
            first = readers[0].functions()
            # Changes within the pass are not seen: both readers get what
            # the first one read, and the broken function warns once.
            self.tree.remove('0000:3b:00.0')
            with sysfs.one_pass():
                self.assertEqual(first, readers[1].functions())
            self.assertEqual(first[:1], readers[1].functions(('8086',)))
        self.assertEqual(['0000:18:00.0', '0000:3b:00.0'],
                         [str(f.address) for f in first])
        self.assertEqual(1, self.logs.output.count('Skipping PCI function'))
        # The next pass reads sysfs again.
        with sysfs.one_pass():
            self.assertEqual(['0000:18:00.0'], [
                str(f.address) for f in readers[1].functions()])

    def test_missing_root(self):
        reader = sysfs.PciReader(os.path.join(self.tree.root, 'nope'))
        self.assertEqual([], reader.functions())

    def test_mdev_types(self):
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_mdev_type('0000:3b:00.0', 'nvidia-222', 'GRID T4-1B',
                                14, devices=['u1', 'u2'])
        self.tree.add_mdev_type('0000:3b:00.0', 'nvidia-223', 'GRID T4-2B',
                                7)
        self.tree.write('0000:3b:00.0',
                        'mdev_supported_types/nvidia-223/'
                        'available_instances', '')
        types = self.reader().mdev_types(pci.PciAddress.parse('3b:00.0'))
        self.assertEqual(['nvidia-222'], list(types))
        self.assertEqual(('GRID T4-1B', 14, 'vfio-pci', ('u1', 'u2')),
                         (types['nvidia-222'].name,
                          types['nvidia-222'].available_instances,
                          types['nvidia-222'].device_api,
                          types['nvidia-222'].devices))


class SysfsPciDriverTest(fake_sysfs.SysfsTestCase):

    def test_one_broken_device_never_stops_discovery(self):
        from cyborg.accelerator.drivers import base

        class Flaky(base.SysfsPciDriver):
            device_type = 'GPU'

            def build_device(self, function, functions):
                if function.address.bus == 0x3b:
                    raise KeyError('surprise')
                return records.device(function, 'GPU', 'm', [])

        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.tree.add_card('tesla_t4', '0000:5e:00.0')
        devices = Flaky(self.conf).discover()
        self.assertEqual(['{"bus": "5e", "device": "00", "domain": "0000", '
                          '"function": "0"}'],
                         [d.controlpath_id.cpid_info for d in devices])
        self.assertIn("0000:3b:00.0: its sysfs entries are not understood: "
                      "'surprise'", self.not_offered(Flaky(self.conf)))
