"""Attach handles and control path ids of reports are checked against a
schema before the conductor stores them or sends them back to agents."""

import json

import fixtures
import jsonschema

from cyborg.accelerator.common import pci
from cyborg.accelerator.common import records
from cyborg.common import exception
from cyborg.conductor import report_checks
from cyborg.objects import driver_device as dd
from cyborg.tests import base

GPU = pci.PciAddress.parse('0000:3b:00.0')


def get_test_device(handles, cpid_info=None):
    deployable = records.deployable('host-a', GPU, 'VGPU', [], handles)
    return dd.DriverDevice(
        vendor='10de', model='T4', type='GPU', std_board_info='{}',
        controlpath_id=dd.DriverControlPathID(
            cpid_type='PCI', cpid_info=cpid_info or GPU.to_json()),
        deployable_list=[deployable])


def mdev(**info):
    return dd.DriverAttachHandle(attach_type='MDEV', in_use=False,
                                 attach_info=json.dumps(info))


class ReportChecksTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(level='WARNING'))

    def test_what_drivers_report_passes(self):
        handles = [records.mdev_handle(GPU, 'nvidia-222', 0),
                   records.pci_handle(GPU),
                   records.pci_handle(GPU, physical_network='physnet 1')]
        [device] = report_checks.checked('host-a', [get_test_device(
            handles)])
        self.assertEqual(handles, device.deployable_list[0]
                         .attach_handle_list)

    def test_bad_handles_are_dropped_with_a_warning(self):
        good = records.mdev_handle(GPU, 'nvidia-222', 0)
        address = GPU.as_dict()
        bad = [mdev(**dict(address, asked_type='../../mdev/devices')),
               mdev(**dict(address, asked_type='.')),
               mdev(**address),
               mdev(**dict(address, bus='../..', asked_type='nvidia-222')),
               mdev(**dict(address, asked_type='nvidia-222', extra='x')),
               dd.DriverAttachHandle(attach_type='PCI', in_use=False,
                                     attach_info='not json'),
               dd.DriverAttachHandle(attach_type='PCI', in_use=False,
                                     attach_info='[]'),
               dd.DriverAttachHandle(attach_type='PCI', in_use=False,
                                     attach_info=GPU.to_json(x='y' * 2000)),
               dd.DriverAttachHandle(attach_type='SCRIPT', in_use=False,
                                     attach_info=GPU.to_json())]
        [device] = report_checks.checked('host-a', [get_test_device(
            [good] + bad)])
        self.assertEqual([good], device.deployable_list[0]
                         .attach_handle_list)
        self.assertEqual(len(bad), self.logs.output.count(
            'Host host-a reported attach handle'))
        self.assertIn("unknown type 'SCRIPT'", self.logs.output)

    def test_problems_are_what_jsonschema_validate_says(self):
        # The Validators are built once; their answers are those of
        # jsonschema.validate, which builds one at every call.
        address = GPU.as_dict()
        cases = [('MDEV', dict(address, asked_type='../../mdev/devices')),
                 ('MDEV', address),
                 ('MDEV', dict(address, bus='../..', asked_type='x')),
                 ('MDEV', dict(address, asked_type='nvidia-222', extra=1)),
                 ('PCI', []), ('PCI', dict(address, function='8')),
                 ('PCI', dict(address, physical_network='\x00')),
                 ('TEST_PCI', {'Bad': 'x'}), ('TEST_PCI', {'a': []}),
                 ('PCI', address), ('MDEV', dict(address, asked_type='t'))]
        for kind, info in cases:
            try:
                jsonschema.validate(info, report_checks.ATTACH_INFO[kind])
            except jsonschema.ValidationError as e:
                expected = e.message
            else:
                expected = None
            self.assertEqual(expected, report_checks._problem(
                report_checks.ATTACH_INFO, kind, json.dumps(info)),
                (kind, info))
        self.assertIsNone(report_checks._problem(
            report_checks.CPID_INFO, 'PCI', GPU.to_json()))
        self.assertEqual('unknown type %r' % 'MDEV', report_checks._problem(
            report_checks.CPID_INFO, 'MDEV', GPU.to_json()))

    def test_a_device_with_a_bad_control_path_is_dropped(self):
        devices = [get_test_device([], cpid_info='{"bus": "../.."}'),
                   get_test_device([])]
        self.assertEqual([devices[1]], report_checks.checked('host-a',
                                                             devices))
        self.assertIn('Host host-a reported a device with control path id',
                      self.logs.output)

    def test_a_deployable_not_named_after_the_host_is_dropped(self):
        device = get_test_device([])
        own = device.deployable_list[0]
        self.assertEqual('host-a_0000_3b_00_0', own.name)
        squat = records.deployable('host-b', GPU, 'VGPU', [], [])
        device.deployable_list = [own, squat, dd.DriverDeployable(
            name='host-a', num_accelerators=1)]
        [checked] = report_checks.checked('host-a', [device])
        self.assertEqual([own], checked.deployable_list)
        self.assertIn("Host host-a reported deployable 'host-b_0000_3b_00_0'"
                      ", whose name does not start with 'host-a_'",
                      self.logs.output)
        # The host's own names, as its agent makes them of its host name.
        dotted = records.deployable('cmp-1.example.org', GPU, 'VGPU', [], [])
        device.deployable_list = [dotted]
        [checked] = report_checks.checked('cmp-1.example.org', [device])
        self.assertEqual([dotted], checked.deployable_list)
        self.assertEqual([], report_checks.checked('host-b', [
            get_test_device([])])[0].deployable_list)

    def test_mdev_target_of_stored_values(self):
        info = json.loads(records.mdev_handle(GPU, 'nvidia-222',
                                              3).attach_info)
        self.assertEqual(('0000:3b:00.0', 'nvidia-222'),
                         report_checks.mdev_target(info))
        for bad in (dict(info, asked_type='..'), dict(info, bus='3b/..'),
                    {}, None, 'x'):
            self.assertRaises(exception.Invalid, report_checks.mdev_target,
                              bad)


class OwnPrefixesTest(base.TestCase):

    def test_ours_and_upstreams_names_of_a_host(self):
        self.assertEqual(
            ('cmp-1_', 'cmp-1_example_org_'),
            report_checks.own_prefixes('cmp-1.example.org'))
        self.assertEqual(('cmp-1_',), report_checks.own_prefixes('cmp-1'))
