"""intel_nic_driver against captured-style sysfs trees."""

import json

from oslo_config import cfg

from cyborg.accelerator.common import pci
from cyborg.accelerator import drivers
from cyborg.accelerator.drivers.nic import intel
from cyborg.conf import nic as nic_conf
from cyborg.tests.unit.accelerator import sysfs

PREFIX = 'cmp-1_example_org_'


def name(address):
    return PREFIX + str(address).replace(':', '_').replace('.', '_')


def handle(address, **extra):
    return json.dumps(dict(address.as_dict(), **extra), sort_keys=True)


class IntelNicDriverTest(sysfs.SysfsTestCase):

    def nic_types(self, **groups):
        """Enable NIC types; each value maps option names to lists
        (an empty one leaves the group to the driver)."""
        self.flags(group='nic_devices', enabled_nic_types=list(groups))
        for nic_type, options in groups.items():
            if options:
                nic_conf.register_nic_type_opts(self.conf, nic_type)
                self.flags(group=nic_type, **options)

    def nic(self, card, address, netdev=None, up=True, **kwargs):
        vfs = self.tree.add_card(card, address, **kwargs)
        if netdev:
            sysfs.add_netdev(self.tree, address, netdev, up=up)
        return vfs

    def driver(self):
        return intel.IntelNicDriver(self.conf)

    def discover(self):
        return self.driver().discover()

    def reasons(self):
        return {h['address']: h for h in self.driver().hardware()
                if not h['ready']}

    def test_vfs_and_pfs_with_physical_networks(self):
        self.nic_types(x710_static={
            'physical_device_mappings': ['physnet1:ens1f0',
                                         'physnet2:ens2f0|0000:86:00.0'],
            'function_device_mappings': ['GTPv1:ens1f0']})
        vfs = self.nic('x710', '0000:3b:00.0', 'ens1f0', vfs=3)
        self.nic('xxv710', '0000:5e:00.0', 'ens2f0', up=False)
        self.nic('e810', '0000:86:00.0', driver='vfio-pci')
        self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=2)
        self.tree.add_card('bridge', '0000:00:01.0')
        devices = self.discover()
        self.assertEqual(3, len(devices))
        x710, xxv710, e810 = devices
        self.assertEqual(
            ('NIC', '8086', 'Intel Ethernet Controller X710 for 10GbE SFP+'),
            (x710.type, x710.vendor, x710.model))
        self.assertEqual(handle(pci.PciAddress.parse('0000:3b:00.0')),
                         x710.controlpath_id.cpid_info)
        self.assertEqual({'netdevs': ['ens1f0'], 'functions': ['GTPv1'],
                          'physical_network': 'physnet1'},
                         json.loads(x710.vendor_board_info))
        self.assertEqual([name(vf) for vf in vfs],
                         [d.name for d in x710.deployable_list])
        for vf, dep in zip(vfs, x710.deployable_list, strict=True):
            self.assertEqual('CUSTOM_NIC', self.rc(dep))
            self.assertEqual(['CUSTOM_GTPV1', 'CUSTOM_NIC_INTEL',
                              'CUSTOM_NIC_PRODUCT_ID_1572',
                              'CUSTOM_PHYSNET1', 'CUSTOM_VF'],
                             self.traits(dep))
            self.assertEqual((1, 'NIC'),
                             (dep.num_accelerators, dep.driver_name))
            [vf_handle] = dep.attach_handle_list
            self.assertEqual(('PCI', False),
                             (vf_handle.attach_type, vf_handle.in_use))
            self.assertEqual(handle(vf, physical_network='physnet1'),
                             vf_handle.attach_info)
        # Without VFs the PF itself, named in a mapping by its netdev...
        [pf] = xxv710.deployable_list
        self.assertEqual(name('0000:5e:00.0'), pf.name)
        self.assertEqual(['CUSTOM_NIC_INTEL', 'CUSTOM_NIC_PRODUCT_ID_158B',
                          'CUSTOM_PF', 'CUSTOM_PHYSNET2'], self.traits(pf))
        # ...or by its PCI address (bound to vfio-pci: no netdev).
        [pf] = e810.deployable_list
        self.assertEqual('Intel Ethernet Controller E810-XXV for SFP',
                         e810.model)
        self.assertEqual(['CUSTOM_NIC_INTEL', 'CUSTOM_NIC_PRODUCT_ID_159B',
                          'CUSTOM_PF', 'CUSTOM_PHYSNET2'], self.traits(pf))
        self.assertEqual('{"bus": "86", "device": "00", "domain": "0000", '
                         '"function": "0", "physical_network": "physnet2"}',
                         pf.attach_handle_list[0].attach_info)
        self.assertEqual('', self.logs.output)

    def test_upstream_example_configuration(self):
        # Spec section 6.4: the [x710_static] example, unchanged.
        self.nic_types(x710_static={
            'physical_device_mappings': ['physnet1:eth2|eth3'],
            'function_device_mappings': ['GTPv1:eth3|eth2']})
        self.nic('xxv710', '0000:3b:01.0', 'eth2', vfs=2)
        self.nic('xxv710', '0000:3b:03.0', 'eth3', vfs=1)
        deps = self.by_name(self.discover())
        self.assertEqual([PREFIX + '0000_3b_02_0', PREFIX + '0000_3b_02_1',
                          PREFIX + '0000_3b_04_0'], sorted(deps))
        # The attach handle of spec section 3.6, byte for byte.
        self.assertEqual(
            '{"bus": "3b", "device": "02", "domain": "0000", "function": '
            '"1", "physical_network": "physnet1"}',
            deps[PREFIX + '0000_3b_02_1'].attach_handle_list[0].attach_info)
        for dep in deps.values():
            self.assertIn('CUSTOM_PHYSNET1', self.traits(dep))
            self.assertIn('CUSTOM_GTPV1', self.traits(dep))

    def test_no_physical_network_mapping(self):
        vfs = self.nic('e810_cq', '0000:af:00.0', 'ens7f0', vfs=2)
        self.nic('x710', '0000:18:00.0', 'eno1')           # the host's NIC
        self.nic('x710', '0000:18:00.1', driver=None)      # unbound
        devices = self.discover()
        deps = self.by_name(devices)
        self.assertEqual(sorted([name(vfs[0]), name(vfs[1]),
                                 name('0000:18:00.1')]), sorted(deps))
        vf = deps[name(vfs[0])]
        self.assertEqual('CUSTOM_NIC', self.rc(vf))
        self.assertEqual(['CUSTOM_NIC_INTEL', 'CUSTOM_NIC_PRODUCT_ID_1592',
                          'CUSTOM_VF'], self.traits(vf))
        self.assertEqual(handle(vfs[0]), vf.attach_handle_list[0].attach_info)
        self.assertNotIn('physical_network',
                         vf.attach_handle_list[0].attach_info)
        self.assertEqual(['CUSTOM_NIC_INTEL', 'CUSTOM_NIC_PRODUCT_ID_1572',
                          'CUSTOM_PF'],
                         self.traits(deps[name('0000:18:00.1')]))
        host_nic = self.reasons()['0000:18:00.0']
        self.assertTrue(host_nic['setup_required'])
        self.assertIn('kernel driver i40e (eno1)', host_nic['reason'])
        self.assertIn('vfio-pci', host_nic['action'])
        self.assertEqual('i40e', host_nic['kernel_driver'])
        self.assertEqual(('8086', '1572'), (host_nic['vendor_id'],
                                            host_nic['product_id']))
        # The driver says so in its hardware list; the agent logs it.
        self.assertNotIn('0000:18:00.0', self.logs.output)

    def test_sriov_enabled_and_not_on_one_card(self):
        self.nic_types(sriov={
            'physical_device_mappings': ['physnet1:ens1f0|ens1f1']})
        vfs = self.nic('xl710', '0000:3b:00.0', 'ens1f0', vfs=2)
        self.nic('xl710', '0000:3b:00.1', 'ens1f1', up=False)
        first, second = self.discover()
        self.assertEqual([name(vf) for vf in vfs],
                         [d.name for d in first.deployable_list])
        self.assertEqual([name('0000:3b:00.1')],
                         [d.name for d in second.deployable_list])
        self.assertIn('CUSTOM_PF', self.traits(second.deployable_list[0]))
        self.assertEqual('Intel Ethernet Controller XL710 for 40GbE QSFP+',
                         second.model)

    def test_wrong_kernel_drivers(self):
        vfs = self.nic('x710', '0000:3b:00.0', 'ens1f0', vfs=4)
        self.tree.bind(vfs[1], 'ixgbevf')
        self.tree.bind(vfs[2], 'i40evf')                   # older kernels
        self.tree.bind(vfs[3], 'vfio-pci')
        self.nic('x710', '0000:5e:00.0', driver='igb_uio', vfs=2)
        self.nic('e810', '0000:86:00.0', 'ens3f0', vfs=1,
                 vf_driver='igb_uio')
        self.nic('e810', '0000:af:00.0', driver='i40e')   # wrong family
        [device] = self.discover()
        self.assertEqual([name(vfs[0]), name(vfs[2]), name(vfs[3])],
                         [d.name for d in device.deployable_list])
        reasons = self.reasons()
        self.assertEqual('a VF of NIC 0000:3b:00.0 bound to kernel driver '
                         'ixgbevf', reasons[str(vfs[1])]['reason'])
        self.assertIn('vfio-pci', reasons[str(vfs[1])]['action'])
        self.assertNotIn('ixgbevf', self.logs.output)
        self.assertEqual(sorted(['0000:5e:00.0', '0000:86:00.0',
                                 '0000:86:01.0', '0000:af:00.0',
                                 str(vfs[1])]), sorted(reasons))
        self.assertIn('igb_uio, expected i40e',
                      reasons['0000:5e:00.0']['reason'])
        self.assertIn('none of its VFs', reasons['0000:86:00.0']['reason'])
        self.assertIn('i40e, expected ice', reasons['0000:af:00.0']['reason'])

    def test_vf_of_another_product(self):
        pf = pci.PciAddress.parse('0000:3b:00.0')
        self.nic('x710', pf, 'ens1f0')
        vfs = self.tree.add_vfs(pf, 2, '154c', 'iavf')
        self.tree.write(vfs[1], 'device', '0x1889\n')
        [device] = self.discover()
        self.assertEqual([name(vfs[0])],
                         [d.name for d in device.deployable_list])
        self.assertIn('with product id 1889, not the 154c',
                      self.reasons()[str(vfs[1])]['reason'])

    def test_half_written_and_garbage_files(self):
        self.nic_types(t={'physical_device_mappings': ['physnet1:ens1f0']})
        vfs = self.nic('x710', '0000:3b:00.0', 'ens1f0', vfs=3)
        self.tree.write(vfs[0], 'vendor', '0x80')          # half-written
        self.tree.write(vfs[2], 'class', 'garbage\n')
        # PF files being written while the driver reads.
        self.nic('x710', '0000:5e:00.0', vfs=2)
        self.tree.write('0000:5e:00.0', 'sriov_numvfs', '')
        self.nic('e810', '0000:86:00.0', vfs=1)
        self.tree.write('0000:86:00.0', 'device', '0x15')
        # VFs being created: sriov_numvfs ahead of the virtfn links.
        self.nic('e810', '0000:af:00.0', 'ens5f0', vfs=2)
        self.tree.write('0000:af:00.0', 'sriov_numvfs', '4\n')
        # net/ is not a directory; junk in another net/.
        self.nic('x710', '0000:d8:00.0', driver='vfio-pci')
        self.tree.write('0000:d8:00.0', 'net', 'junk')
        self.nic('x710', '0000:d8:00.1', driver='vfio-pci')
        sysfs.add_netdev(self.tree, '0000:d8:00.1', 'eth0:1', up=False)
        devices = self.discover()
        self.assertEqual([name(vfs[1]), name('0000:d8:00.0'),
                          name('0000:d8:00.1')],
                         sorted(self.by_name(devices)))
        self.assertIn('CUSTOM_PHYSNET1',
                      self.traits(self.by_name(devices)[name(vfs[1])]))
        flux = self.reasons()['0000:af:00.0']
        self.assertFalse(flux['setup_required'])
        self.assertIn('sriov_numvfs says 4 VFs but sysfs lists 2',
                      flux['reason'])
        for address in ('0000:5e:00.0', '0000:86:00.0', str(vfs[0]),
                        str(vfs[2])):
            self.assertIn('Skipping PCI function %s' % address,
                          self.logs.output)
        self.assertIn('Cannot list the network devices of 0000:d8:00.0',
                      self.logs.output)
        self.assertIn("Ignoring 'eth0:1' below 0000:d8:00.1/net",
                      self.logs.output)

    def test_bad_configuration_is_a_warning(self):
        self.nic_types(
            agent={},                                  # another group
            empty={},
            good={'physical_device_mappings': [
                'physnet1', 'physnet1:', ':eth2', 'physnet1:eth2|',
                'physnet1:eth/2', 'pf:eth2', 'nic_x:eth2',
                'provider-net.1:eth2'],
                'function_device_mappings': ['GTPv1:eth2']})
        vfs = self.nic('x710', '0000:3b:00.0', 'eth2', vfs=1)
        [device] = self.discover()
        [dep] = device.deployable_list
        self.assertEqual(['CUSTOM_GTPV1', 'CUSTOM_NIC_INTEL',
                          'CUSTOM_NIC_PRODUCT_ID_1572',
                          'CUSTOM_PROVIDER_NET_1', 'CUSTOM_VF'],
                         self.traits(dep))
        self.assertEqual(handle(vfs[0], physical_network='provider-net.1'),
                         dep.attach_handle_list[0].attach_info)
        for entry in ('physnet1', 'physnet1:', ':eth2', 'physnet1:eth2|',
                      'physnet1:eth/2'):
            self.assertIn("Ignoring %r in [good] physical_device_mappings: "
                          "not <name>:<interface>" % entry, self.logs.output)
        self.assertIn("its trait CUSTOM_PF is one the driver sets itself",
                      self.logs.output)
        self.assertIn("its trait CUSTOM_NIC_X is one", self.logs.output)
        self.assertIn("Ignoring NIC type 'agent'", self.logs.output)
        self.assertIn('NIC type empty is enabled but [empty] maps no '
                      'interface', self.logs.output)
        self.assertNotIn('physical_device_mappings', self.conf.agent)

    def test_interface_on_several_physical_networks(self):
        self.nic_types(
            a={'physical_device_mappings': ['physnet1:ens1f0|ens2f0']},
            b={'physical_device_mappings': ['physnet2:0000:3b:00.0',
                                            'physnet2:ens2f0']})
        self.nic('x710', '0000:3b:00.0', 'ens1f0', vfs=1)
        self.nic('x710', '0000:5e:00.0', 'ens2f0', vfs=1)
        self.nic('x710', '0000:86:00.0', 'ens3f0', vfs=1)
        devices = self.discover()
        self.assertEqual([name('0000:86:01.0')],
                         sorted(self.by_name(devices)))
        reasons = self.reasons()
        for address in ('0000:3b:00.0', '0000:5e:00.0'):
            self.assertIn('several physical networks: physnet1, physnet2',
                          reasons[address]['reason'])

    def test_only_enabled_types_are_read(self):
        # Upstream reads [x710_static] whatever types are enabled.
        nic_conf.register_nic_type_opts(self.conf, 'x710_static')
        self.flags(group='x710_static',
                   physical_device_mappings=['physnet1:ens1f0'])
        self.nic_types(e810_gtp={
            'physical_device_mappings': ['physnet9:ens1f0']})
        self.nic('x710', '0000:3b:00.0', 'ens1f0', vfs=1)
        [device] = self.discover()
        self.assertIn('CUSTOM_PHYSNET9',
                      self.traits(device.deployable_list[0]))
        self.assertNotIn('CUSTOM_PHYSNET1',
                         self.traits(device.deployable_list[0]))

    def test_type_group_cannot_take_over_another_group(self):
        for nic_type in ('agent', 'host', 'DEFAULT', '', 'nic_devices'):
            self.assertRaises(ValueError, nic_conf.register_nic_type_opts,
                              self.conf, nic_type)
        nic_conf.register_nic_type_opts(self.conf, 'x710_static')
        group = nic_conf.register_nic_type_opts(self.conf, 'x710_static')
        self.assertEqual([], group.function_device_mappings)

    def test_nothing_found(self):
        self.assertEqual([], self.discover())
        self.tree.add_card('tesla_t4', '0000:3b:00.0')
        self.assertEqual([], self.discover())

    def test_loads_as_plugin(self):
        loaded, statuses = drivers.load(['intel_nic_driver'], self.conf)
        self.assertIsInstance(loaded['intel_nic_driver'],
                              intel.IntelNicDriver)
        self.assertEqual(('READY', 'NIC'),
                         (statuses[0].status, statuses[0].device_type))

    def test_options_are_upstreams(self):
        self.assertEqual([], cfg.CONF.nic_devices.enabled_nic_types)
        self.assertIn('<nic_type>', nic_conf.list_opts())
        self.assertEqual(
            ['physical_device_mappings', 'function_device_mappings'],
            [opt.name for opt in nic_conf.list_opts()['<nic_type>']])
