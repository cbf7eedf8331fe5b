"""Request groups of device profiles."""

from cyborg.common import exception
from cyborg.common import profile_groups as pg
from cyborg.tests import base


class NormalizeTest(base.TestCase):

    def test_valid_group_keys_are_stripped(self):
        self.assertEqual(
            {'resources:CUSTOM_QAT': '2', 'trait:CUSTOM_QAT_CRYPTO':
             'required', 'accel:function_id': 'f1'},
            pg.normalize_group({' resources: CUSTOM_QAT '[1:]: ' 2',
                                'trait: CUSTOM_QAT_CRYPTO': 'required',
                                'accel:function_id': 'f1'}))

    def test_each_bad_key_is_named(self):
        for group, key in (({'resources:fpga': '1'}, 'resources:fpga'),
                           ({'resources:PGPU': '-1'}, 'resources:PGPU'),
                           ({'resources:PGPU': 1}, 'resources:PGPU'),
                           ({'trait:OWNER_CYBORG': 'required'},
                            'trait:OWNER_CYBORG'),
                           ({'trait:CUSTOM_A': 'yes'}, 'trait:CUSTOM_A'),
                           ({'accel:': 'x'}, 'accel:'),
                           ({'size': 'L'}, 'size')):
            exc = self.assertRaises(exception.InvalidDeviceProfileGroup,
                                    pg.normalize_group, group)
            self.assertEqual(400, exc.code)
            self.assertIn(repr(key), str(exc))

    def test_not_a_group(self):
        for group in ({}, [], 'x', None):
            self.assertRaises(exception.InvalidParameterValue,
                              pg.normalize_group, group)


class CountTest(base.TestCase):

    def test_parts(self):
        group = {'resources:FPGA': '2', 'resources:CUSTOM_X': '1',
                 'trait:CUSTOM_A': 'forbidden', 'accel:bitstream_id': 'b'}
        self.assertEqual({'FPGA': 2, 'CUSTOM_X': 1},
                         pg.resource_amounts(group))
        self.assertEqual({'CUSTOM_A': 'forbidden'}, pg.traits(group))
        self.assertEqual({'bitstream_id': 'b'}, pg.accel_properties(group))
        self.assertEqual(3, pg.arq_count(group))

    def test_xilinx_needs_two_functions_per_fpga(self):
        group = {'resources:FPGA': '2',
                 'trait:CUSTOM_FPGA_XILINX': 'required'}
        self.assertEqual(4, pg.arq_count(group))
        group['trait:CUSTOM_FPGA_XILINX'] = 'forbidden'
        self.assertEqual(2, pg.arq_count(group))
