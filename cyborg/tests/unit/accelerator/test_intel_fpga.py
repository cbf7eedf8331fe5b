"""intel_fpga_driver against sysfs trees of OPAE's kernel drivers, and
programming with a stand-in ``fpgaconf``."""

import json
import os
import time

import fixtures

from cyborg.accelerator.common import privileged
from cyborg.accelerator import drivers
from cyborg.accelerator.drivers import base
from cyborg.accelerator.drivers.fpga import intel
from cyborg.tests.unit.accelerator import sysfs

PREFIX = 'cmp-1_example_org_'
# PR interface ids of two FPGA interface managers, and two AFUs.
REGION_A10 = 'ce48969398f05f33946d560708be108a'
REGION_D5005 = '9346116d8d6f5b5ba73c6a1ef4f8e8d5'
NLB0 = 'd8424dc4a4a3c413f89e433683f9040b'
HELLO_AFU = '850adcc26ceb4b229722d43375b61c66'


class IntelFpgaDriverTest(sysfs.SysfsTestCase):

    def driver(self):
        return intel.IntelFpgaDriver(self.conf)

    def handles(self, deployable):
        return ['%(domain)s:%(bus)s:%(device)s.%(function)s'
                % json.loads(h.attach_info)
                for h in deployable.attach_handle_list]

    def test_cards_with_and_without_sriov(self):
        # An Arria 10 PAC handed out whole, with the DFL driver.
        self.tree.add_card('pac_arria10', '0000:5e:00.0')
        sysfs.add_opae(self.tree, '0000:5e:00.0', REGION_A10, NLB0)
        # A D5005 with SR-IOV: its port went to its VF.
        [vf] = self.tree.add_card('pac_d5005', '0000:af:00.0', vfs=1)
        sysfs.add_opae(self.tree, '0000:af:00.0', REGION_D5005)
        # An Arria 10 PAC with OPAE's older driver and two VFs, one of
        # them kept by the host's OPAE driver (its AFU is visible).
        vfs = self.tree.add_card('pac_arria10', '0000:3b:00.0', vfs=2)
        sysfs.add_opae(self.tree, '0000:3b:00.0', REGION_A10,
                       driver='intel-fpga-pci')
        sysfs.add_opae(self.tree, vfs[1], afu_id=HELLO_AFU,
                       driver='intel-fpga-pci')
        # Not FPGAs.
        self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=1)
        self.tree.add_card('x710', '0000:18:00.0')
        devices = self.driver().discover()
        self.assertEqual(['0000:3b:00.0', '0000:5e:00.0', '0000:af:00.0'],
                         ['%(domain)s:%(bus)s:%(device)s.%(function)s'
                          % json.loads(d.controlpath_id.cpid_info)
                          for d in devices])
        deps = self.by_name(devices)
        self.assertEqual([PREFIX + '0000_3b_00_0', PREFIX + '0000_5e_00_0',
                          PREFIX + '0000_af_00_0'], sorted(deps))

        whole = deps[PREFIX + '0000_5e_00_0']
        self.assertEqual('FPGA', self.rc(whole))
        self.assertEqual(
            ['CUSTOM_FPGA_FUNCTION_ID_INTEL_' + NLB0.upper(),
             'CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
             'CUSTOM_FPGA_REGION_INTEL_' + REGION_A10.upper()],
            self.traits(whole))
        self.assertEqual((1, 'intel'), (whole.num_accelerators,
                                        whole.driver_name))
        [pf_handle] = whole.attach_handle_list
        self.assertEqual('PCI', pf_handle.attach_type)
        self.assertEqual('{"bus": "5e", "device": "00", "domain": "0000", '
                         '"function": "0"}', pf_handle.attach_info)
        device = devices[1]
        self.assertEqual(('FPGA', '8086', 'Intel PAC Arria 10 GX', False),
                         (device.type, device.vendor, device.model,
                          device.stub))
        self.assertEqual(pf_handle.attach_info,
                         device.controlpath_id.cpid_info)

        sriov = deps[PREFIX + '0000_af_00_0']
        self.assertEqual(['CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_D5005',
                          'CUSTOM_FPGA_REGION_INTEL_' + REGION_D5005.upper()],
                         self.traits(sriov))
        self.assertEqual([str(vf)], self.handles(sriov))
        self.assertEqual(1, sriov.num_accelerators)

        legacy = deps[PREFIX + '0000_3b_00_0']
        self.assertEqual(
            ['CUSTOM_FPGA_FUNCTION_ID_INTEL_' + HELLO_AFU.upper(),
             'CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
             'CUSTOM_FPGA_REGION_INTEL_' + REGION_A10.upper()],
            self.traits(legacy))
        self.assertEqual([str(v) for v in vfs], self.handles(legacy))
        self.assertEqual(2, legacy.num_accelerators)
        self.assertEqual('', self.logs.output)

    def test_unknown_product_found_by_its_fme(self):
        self.tree.add_function('0000:b1:00.0', '8086', 'bcce', '120000',
                               'dfl-pci')
        sysfs.add_opae(self.tree, '0000:b1:00.0', REGION_D5005, NLB0)
        self.tree.add_card('pac_n3000', '0000:1c:00.0', driver='vfio-pci')
        devices = self.driver().discover()
        self.assertEqual(['Intel FPGA PAC N3000', 'Intel FPGA bcce'],
                         [d.model for d in devices])
        deps = self.by_name(devices)
        self.assertEqual(
            ['CUSTOM_FPGA_FUNCTION_ID_INTEL_' + NLB0.upper(),
             'CUSTOM_FPGA_INTEL',
             'CUSTOM_FPGA_REGION_INTEL_' + REGION_D5005.upper()],
            self.traits(deps[PREFIX + '0000_b1_00_0']))

    def test_passed_through_card_is_offered_whole(self):
        # vfio-pci owns it (an instance uses it, or it is kept for one):
        # no FME to read, so the card traits only.
        self.tree.add_card('pac_arria10', '0000:5e:00.0', driver='vfio-pci')
        [device] = self.driver().discover()
        [dep] = device.deployable_list
        self.assertEqual(['CUSTOM_FPGA_INTEL',
                          'CUSTOM_FPGA_INTEL_PAC_ARRIA10'], self.traits(dep))
        self.assertEqual(['0000:5e:00.0'], self.handles(dep))

    def test_wrong_kernel_drivers(self):
        self.tree.add_card('pac_arria10', '0000:5e:00.0', driver='pci-stub')
        self.tree.add_card('pac_arria10', '0000:60:00.0', driver=None)
        vfs = self.tree.add_card('pac_d5005', '0000:af:00.0', vfs=3)
        sysfs.add_opae(self.tree, '0000:af:00.0', REGION_D5005)
        self.tree.bind(vfs[1], 'ixgbevf')
        [iavf] = self.tree.add_card('pac_d5005', '0000:d8:00.0', vfs=1,
                                    vf_driver='iavf')
        sysfs.add_opae(self.tree, '0000:d8:00.0', REGION_D5005)
        [device] = self.driver().discover()
        [dep] = device.deployable_list
        self.assertEqual([str(vfs[0]), str(vfs[2])], self.handles(dep))
        rows = {h['address']: h
                for h in self.driver().hardware() if not h['ready']}
        reasons = {address: row['reason'] for address, row in rows.items()}
        self.assertEqual(sorted(['0000:5e:00.0', '0000:60:00.0',
                                 '0000:d8:00.0', str(vfs[1]), str(iavf)]),
                         sorted(reasons))
        # A VF left out is listed with its reason, not logged.
        self.assertEqual('a VF of FPGA 0000:af:00.0 bound to kernel driver '
                         'ixgbevf', reasons[str(vfs[1])])
        self.assertIn('bind it to', rows[str(vfs[1])]['action'])
        self.assertEqual('ixgbevf', rows[str(vfs[1])]['kernel_driver'])
        self.assertNotIn('ixgbevf', self.logs.output)
        self.assertIn('bound to kernel driver pci-stub',
                      reasons['0000:5e:00.0'])
        self.assertIn('bound to no kernel driver', reasons['0000:60:00.0'])
        self.assertEqual('none of its VFs can be offered',
                         reasons['0000:d8:00.0'])

    def test_opae_driver_without_fme(self):
        # dfl-pci is bound, but the FME module is not loaded.
        self.tree.add_card('pac_arria10', '0000:5e:00.0')
        [row] = self.driver().hardware()
        self.assertFalse(row['ready'])
        self.assertTrue(row['setup_required'])
        self.assertIn('is the dfl-fme module loaded', row['reason'])

    def test_stale_sriov_fails_closed(self):
        # sriov_numvfs says one VF, but no virtfn link: the PF's port may
        # be gone to a VF we cannot see, so the PF is not handed out.
        self.tree.add_card('pac_arria10', '0000:5e:00.0')
        sysfs.add_opae(self.tree, '0000:5e:00.0', REGION_A10)
        self.tree.write('0000:5e:00.0', 'sriov_numvfs', '1\n')
        self.assertEqual([], self.driver().discover())
        self.assertIn('sriov_numvfs is 1 but no VF is in sysfs',
                      self.not_offered(self.driver()))

    def test_garbage_ids_skip_only_that_card(self):
        self.tree.add_card('pac_arria10', '0000:3b:00.0')
        sysfs.add_opae(self.tree, '0000:3b:00.0', REGION_A10, NLB0[:12])
        self.tree.add_card('pac_arria10', '0000:5e:00.0')
        sysfs.add_opae(self.tree, '0000:5e:00.0', REGION_A10, NLB0)
        self.tree.add_card('pac_d5005', '0000:86:00.0', vfs=1)
        sysfs.add_opae(self.tree, '0000:86:00.0', 'x' * 32)
        self.tree.add_card('pac_d5005', '0000:af:00.0')
        sysfs.add_opae(self.tree, '0000:af:00.0', REGION_D5005)
        self.tree.write('0000:af:00.0', 'vendor', '0x80')  # half-written
        self.tree.add_card('pac_d5005', '0000:d8:00.0')
        sysfs.add_opae(self.tree, '0000:d8:00.0', REGION_D5005, HELLO_AFU,
                       driver='intel-fpga-pci')
        with open(os.path.join(self.tree.function_dir('0000:d8:00.0'),
                               'fpga', 'intel-fpga-dev.%d' % (0xd8 * 256),
                               'intel-fpga-port.%d' % (0xd8 * 256),
                               'afu_id'), 'wb') as f:
            f.write(b'\xff\xfe\x00')
        devices = self.driver().discover()
        self.assertEqual([PREFIX + '0000_5e_00_0'],
                         sorted(self.by_name(devices)))
        not_offered = self.not_offered(self.driver())
        self.assertIn("dfl-port.%d/afu_id holds 'd8424dc4a4a3', not a "
                      "128-bit id" % (0x3b * 256), not_offered)
        self.assertIn("compat_id holds '%s'" % ('x' * 32), not_offered)
        self.assertIn('Skipping PCI function 0000:af:00.0', self.logs.output)
        self.assertIn('intel-fpga-port.%d/afu_id' % (0xd8 * 256),
                      not_offered)

    def test_loads_as_plugin(self):
        loaded, statuses = drivers.load(['intel_fpga_driver'], self.conf)
        self.assertIsInstance(loaded['intel_fpga_driver'],
                              intel.IntelFpgaDriver)
        self.assertIsInstance(loaded['intel_fpga_driver'], base.Programmer)
        self.assertEqual(('READY', 'FPGA'),
                         (statuses[0].status, statuses[0].device_type))


class IntelFpgaProgramTest(sysfs.SysfsTestCase):
    """program() runs the real driver and privileged code; only
    ``fpgaconf`` is a script on PATH that records its arguments."""

    PF = '0000:5e:00.0'
    CPID = {'cpid_type': 'PCI', 'cpid_info': '{"bus": "5e", "device": '
            '"00", "domain": "0000", "function": "0"}'}

    def setUp(self):
        super().setUp()
        self.tool = self.useFixture(sysfs.FakeTool('fpgaconf'))
        self.tree.add_card('pac_arria10', self.PF, vfs=1)
        sysfs.add_opae(self.tree, self.PF, REGION_A10)
        self.image = self.useFixture(fixtures.TempDir()).join('bitstream')
        with open(self.image, 'wb') as f:
            f.write(b'XeonFPGA\xb7GBSv001' + b'\0' * 64)
        self.driver = intel.IntelFpgaDriver(self.conf)

    def test_runs_fpgaconf_on_the_pf(self):
        self.driver.program(self.CPID, self.image)
        self.assertEqual(['--bus', '0x5e', '--device', '0x00',
                          '--function', '0x0', self.image],
                         self.tool.argv())

    def test_other_pci_segment_and_parsed_cpid(self):
        self.tree.add_card('pac_d5005', '0001:af:00.0')
        sysfs.add_opae(self.tree, '0001:af:00.0', REGION_D5005, NLB0)
        self.driver.program(
            {'cpid_type': 'PCI', 'cpid_info': {
                'domain': '0001', 'bus': 'af', 'device': '00',
                'function': '0'}}, self.image)
        self.assertEqual(['--bus', '0xaf', '--device', '0x00',
                          '--function', '0x0', '--segment', '0x0001',
                          self.image], self.tool.argv())

    def test_failure_carries_fpgaconf_message(self):
        self.tool.set_body('echo "Error: PR interface id does not match" '
                           '>&2\nexit 1')
        error = self.assertRaises(base.OperationFailed, self.driver.program,
                                  self.CPID, self.image)
        self.assertEqual('fpgaconf exited with status 1: Error: PR '
                         'interface id does not match', str(error))

    def test_timeout_kills_it(self):
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.accelerator.common.privileged.FPGA_TOOLS',
            dict(privileged.FPGA_TOOLS, fpgaconf=('/nonexistent', 0.5))))
        # A child of the tool holds the output open: it is killed too.
        self.tool.set_body('echo loading\nsleep 30 &\nwait')
        started = time.monotonic()
        error = self.assertRaises(base.OperationFailed, self.driver.program,
                                  self.CPID, self.image)
        self.assertLess(time.monotonic() - started, 10)
        self.assertEqual('fpgaconf did not finish in time: loading',
                         str(error))

    def test_fpgaconf_not_installed(self):
        empty = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('PATH', empty))
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.accelerator.common.privileged.FPGA_TOOLS',
            dict(privileged.FPGA_TOOLS, fpgaconf=(empty, 600))))
        error = self.assertRaises(base.OperationFailed, self.driver.program,
                                  self.CPID, self.image)
        self.assertIn('fpgaconf is not installed', str(error))

    def test_refusals_run_nothing(self):
        self.tree.add_card('pac_arria10', '0000:86:00.0', driver='vfio-pci')
        empty = self.useFixture(fixtures.TempDir()).join('empty')
        open(empty, 'w').close()
        cases = [
            ({'cpid_type': 'PCI', 'cpid_info': '{"bus": "3b"}'}, self.image,
             'is not a PCI address'),
            ({'cpid_type': 'PCI', 'cpid_info': 'garbage'}, self.image,
             'is not a PCI address'),
            (dict(self.CPID, cpid_info=self.CPID['cpid_info'].replace(
                '5e', '3b')), self.image, 'no Intel FPGA card at 0000:3b'),
            (dict(self.CPID, cpid_info=self.CPID['cpid_info'].replace(
                '5e', '86')), self.image,
             'shows no FPGA management engine (its kernel driver is '
             'vfio-pci'),
            (self.CPID, empty, 'is empty'),
            (self.CPID, empty + '.missing', 'cannot read the bitstream'),
        ]
        for cpid, image, message in cases:
            error = self.assertRaises(base.OperationFailed,
                                      self.driver.program, cpid, image)
            self.assertIn(message, str(error))
        self.assertIsNone(self.tool.argv())

    def test_agent_programs_a_deployable_of_its_report(self):
        self.program_through_agent(
            ['intel_qat_driver', 'intel_fpga_driver'], 'intel_fpga_driver',
            b'XeonFPGA\xb7GBSv001', 'nlb0')
        argv = self.tool.argv()
        self.assertEqual(['--bus', '0x5e', '--device', '0x00',
                          '--function', '0x0'], argv[:6])

    def test_privileged_side_checks_its_arguments(self):
        self.assertRaises(ValueError, privileged.program_fpga, 'sh',
                          self.PF, self.image)
        self.assertRaises(ValueError, privileged.program_fpga, 'fpgaconf',
                          '--help', self.image)
        self.assertRaises(ValueError, privileged.program_fpga, 'fpgaconf',
                          self.PF, os.path.dirname(self.image))
        self.assertIsNone(self.tool.argv())
