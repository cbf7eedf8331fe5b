"""xilinx_fpga_driver against sysfs trees of Alveo cards, and programming
with a stand-in ``xbmgmt``."""

import json
import os

import fixtures

from cyborg.accelerator import drivers
from cyborg.accelerator.drivers import base
from cyborg.accelerator.drivers.fpga import xilinx
from cyborg.tests.unit.accelerator import sysfs

PREFIX = 'cmp-1_example_org_'
XSABIN = b'xclbin2\0' + b'\0' * 120


def addresses(deployable):
    return ['%(domain)s:%(bus)s:%(device)s.%(function)s'
            % json.loads(h.attach_info)
            for h in deployable.attach_handle_list]


class XilinxFpgaDriverTest(sysfs.SysfsTestCase):

    def driver(self):
        return xilinx.XilinxFpgaDriver(self.conf)

    def test_cards(self):
        sysfs.add_alveo(self.tree, '0000:3b:00')
        sysfs.add_alveo(self.tree, '0000:d8:00')
        sysfs.add_alveo(self.tree, '0000:af:00', model='u250')
        self.tree.add_card('pac_arria10', '0000:5e:00.0')  # not Xilinx
        self.tree.add_card('qat_c62x', '0000:3d:00.0', vfs=2)
        devices = self.driver().discover()
        self.assertEqual(['Alveo U200', 'Alveo U250', 'Alveo U200'],
                         [d.model for d in devices])
        deps = self.by_name(devices)
        self.assertEqual([PREFIX + '0000_3b_00_0', PREFIX + '0000_af_00_0',
                          PREFIX + '0000_d8_00_0'], sorted(deps))
        u200 = deps[PREFIX + '0000_3b_00_0']
        self.assertEqual('FPGA', self.rc(u200))
        self.assertEqual(['CUSTOM_FPGA_PRODUCT_ID_5000',
                          'CUSTOM_FPGA_XILINX'], self.traits(u200))
        # One FPGA, handed out as its two functions.
        self.assertEqual((1, 'XILINX'), (u200.num_accelerators,
                                         u200.driver_name))
        self.assertEqual(['0000:3b:00.0', '0000:3b:00.1'], addresses(u200))
        self.assertEqual({'PCI'}, {h.attach_type
                                   for h in u200.attach_handle_list})
        self.assertEqual('{"bus": "3b", "device": "00", "domain": "0000", '
                         '"function": "1"}',
                         u200.attach_handle_list[1].attach_info)
        device = devices[0]
        self.assertEqual(('FPGA', '10ee', False),
                         (device.type, device.vendor, device.stub))
        self.assertEqual(u200.attach_handle_list[0].attach_info,
                         device.controlpath_id.cpid_info)
        self.assertEqual(['CUSTOM_FPGA_PRODUCT_ID_5004',
                          'CUSTOM_FPGA_XILINX'],
                         self.traits(deps[PREFIX + '0000_af_00_0']))
        self.assertEqual('', self.logs.output)

    def test_passed_through_functions_are_told_by_product_id(self):
        # An instance has the card: both functions on vfio-pci.
        sysfs.add_alveo(self.tree, '0000:3b:00', mgmt_driver='vfio-pci',
                        user_driver='vfio-pci')
        # The user function only, and one left without a driver.
        sysfs.add_alveo(self.tree, '0000:5e:00', user_driver='vfio-pci')
        sysfs.add_alveo(self.tree, '0000:86:00', user_driver=None)
        deps = self.by_name(self.driver().discover())
        self.assertEqual(3, len(deps))
        for slot in ('3b', '5e', '86'):
            self.assertEqual(['0000:%s:00.0' % slot, '0000:%s:00.1' % slot],
                             addresses(deps[PREFIX + '0000_%s_00_0' % slot]))

    def test_wrong_kernel_drivers(self):
        sysfs.add_alveo(self.tree, '0000:3b:00')
        sysfs.add_alveo(self.tree, '0000:5e:00', user_driver='pci-stub')
        # Both functions claimed by the user driver.
        sysfs.add_alveo(self.tree, '0000:86:00', mgmt_driver='xocl')
        devices = self.driver().discover()
        self.assertEqual([PREFIX + '0000_3b_00_0'],
                         sorted(self.by_name(devices)))
        reasons = {h['address']: h['reason']
                   for h in self.driver().hardware() if not h['ready']}
        self.assertEqual(
            {'0000:5e:00.0': '0000:5e:00.1 is bound to kernel driver '
                             'pci-stub; expected xclmgmt or xocl or '
                             'vfio-pci',
             '0000:86:00.0': '0000:86:00.0 and 0000:86:00.1 are both user '
                             'functions'}, reasons)

    def test_half_written_files_skip_the_card(self):
        sysfs.add_alveo(self.tree, '0000:3b:00')
        mgmt, user = sysfs.add_alveo(self.tree, '0000:5e:00')
        self.tree.write(user, 'device', '0x50')
        mgmt, _user = sysfs.add_alveo(self.tree, '0000:86:00')
        self.tree.write(mgmt, 'class', 'garbage\n')
        devices = self.driver().discover()
        self.assertEqual([PREFIX + '0000_3b_00_0'],
                         sorted(self.by_name(devices)))
        self.assertIn('Skipping PCI function 0000:5e:00.1', self.logs.output)
        self.assertIn('Skipping PCI function 0000:86:00.0', self.logs.output)
        reasons = {h['address']: h['reason']
                   for h in self.driver().hardware() if not h['ready']}
        self.assertEqual({'0000:5e:00.0': 'the card has no user function',
                          '0000:86:00.1': 'the card has no management '
                                          'function'}, reasons)

    def test_loads_as_plugin(self):
        loaded, statuses = drivers.load(['xilinx_fpga_driver'], self.conf)
        self.assertIsInstance(loaded['xilinx_fpga_driver'],
                              xilinx.XilinxFpgaDriver)
        self.assertIsInstance(loaded['xilinx_fpga_driver'], base.Programmer)
        self.assertEqual(('READY', 'FPGA'),
                         (statuses[0].status, statuses[0].device_type))


class XilinxFpgaProgramTest(sysfs.SysfsTestCase):
    """program() runs the real driver and privileged code; only
    ``xbmgmt`` is a script on PATH that records its arguments and what
    the image it was given starts with."""

    CPID = {'cpid_type': 'PCI', 'cpid_info': '{"bus": "3b", "device": '
            '"00", "domain": "0000", "function": "0"}'}

    def setUp(self):
        super().setUp()
        self.tool = self.useFixture(sysfs.FakeTool(
            'xbmgmt', body='head -c 7 "$6" > "$0.image"'))
        sysfs.add_alveo(self.tree, '0000:3b:00')
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.image = self.write_image('bitstream', XSABIN)
        self.driver = xilinx.XilinxFpgaDriver(self.conf)

    def write_image(self, name, content):
        path = os.path.join(self.tmp, name)
        with open(path, 'wb') as f:
            f.write(content)
        return path

    def test_runs_xbmgmt_on_the_management_function(self):
        self.driver.program(self.CPID, self.image)
        # The address with a '.' before the function (upstream wrote ':'),
        # and the image under an .xsabin name, gone afterwards.
        self.assertEqual(['program', '--device', '0000:3b:00.0', '--base',
                          '--image', self.image + '.xsabin'],
                         self.tool.argv())
        with open(os.path.join(self.tool.bin_dir, 'xbmgmt.image')) as f:
            self.assertEqual('xclbin2', f.read())
        self.assertEqual(['bitstream'], os.listdir(self.tmp))

    def test_an_xsabin_name_is_kept(self):
        image = self.write_image('base.xsabin', XSABIN)
        self.driver.program(self.CPID, image)
        self.assertEqual(image, self.tool.argv()[-1])

    def test_failure_carries_xbmgmt_message(self):
        self.tool.set_body('echo "ERROR: Specified base not found" >&2\n'
                           'exit 2')
        error = self.assertRaises(base.OperationFailed, self.driver.program,
                                  self.CPID, self.image)
        self.assertEqual('xbmgmt exited with status 2: ERROR: Specified '
                         'base not found', str(error))
        self.assertEqual(['bitstream'], os.listdir(self.tmp))

    def test_refusals_run_nothing(self):
        sysfs.add_alveo(self.tree, '0000:5e:00', mgmt_driver='vfio-pci')
        mcs = self.write_image('flash.mcs', b':020000040000FA\n')
        user = dict(self.CPID, cpid_info=self.CPID['cpid_info'].replace(
            '"function": "0"', '"function": "1"'))
        passed = dict(self.CPID, cpid_info=self.CPID['cpid_info'].replace(
            '3b', '5e'))
        cases = [
            (user, self.image, 'no Xilinx FPGA management function at '
             '0000:3b:00.1'),
            (passed, self.image, 'is bound to vfio-pci; xbmgmt needs it '
             'bound to xclmgmt'),
            (self.CPID, mcs, 'is not an xsabin image'),
            ({'cpid_type': 'PCI', 'cpid_info': '[]'}, self.image,
             'is not a PCI address'),
        ]
        for cpid, image, message in cases:
            error = self.assertRaises(base.OperationFailed,
                                      self.driver.program, cpid, image)
            self.assertIn(message, str(error))
        self.assertIsNone(self.tool.argv())

    def test_agent_programs_a_deployable_of_its_report(self):
        # What the conductor sends: the device's control path id and the
        # deployable's driver name (upstream lost the card there).
        self.program_through_agent(
            ['fake_driver', 'xilinx_fpga_driver'], 'xilinx_fpga_driver',
            XSABIN, 'u200-base')
        argv = self.tool.argv()
        self.assertEqual(['program', '--device', '0000:3b:00.0', '--base',
                          '--image'], argv[:5])
        self.assertTrue(argv[5].endswith('.xsabin'), argv[5])
        with open(os.path.join(self.tool.bin_dir, 'xbmgmt.image')) as f:
            self.assertEqual('xclbin2', f.read())
