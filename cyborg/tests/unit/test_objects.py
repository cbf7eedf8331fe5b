"""Versioned objects: a field change without a version bump fails here."""

from oslo_versionedobjects import fixture

from cyborg.objects import base
from cyborg.objects import driver_device
from cyborg.objects import hardware
from cyborg.objects import host
from cyborg.tests import base as test_base

# When a test below fails because you changed an object, bump its VERSION,
# add a line to its version history and update the hash here.
EXPECTED_FINGERPRINTS = {
    'AgentHello': '1.3-aab8f19b7ee0d8ca9f9d687c0fd0b428',
    'ARQEventPayload': '1.0-2a653db8c24175810644285c644e353a',
    'DeviceEventPayload': '1.0-32d31cf92c3c35659867a89a285a4f58',
    'DriverAttachHandle': '1.0-901a3af18a826be07afeb34fa9a379cd',
    'DriverAttribute': '1.0-8b0258883e67fc59f2c5e5541bd52b43',
    'DriverControlPathID': '1.0-e14d12caa861fca270a0f0b29a60964e',
    'DriverDeployable': '1.0-9fd489b3c94b538c213f3565e0f72528',
    'DriverDevice': '1.0-3cec4fec775dfd6c1266982623c82c4d',
    'HardwareFunction': '1.1-a85c57fa7815ac519d9271ed32acc00f',
    'Host': '1.2-64590ba028b995491b3cdea3c4225b67',
    'HostDriver': '1.0-1883f7a43944ab414364ca08cd9aeadc',
}


class ObjectVersionTest(test_base.TestCase):

    def test_fingerprints(self):
        checker = fixture.ObjectVersionChecker(
            base.CyborgObjectRegistry.obj_classes())
        expected, actual = checker.test_hashes(EXPECTED_FINGERPRINTS)
        self.assertEqual(expected, actual,
                         'Objects changed: bump their VERSION and update '
                         'EXPECTED_FINGERPRINTS')

    def test_every_registered_object_has_a_fingerprint(self):
        self.assertEqual(sorted(EXPECTED_FINGERPRINTS),
                         sorted(base.CyborgObjectRegistry.obj_classes()))


class SerializationTest(test_base.TestCase):

    def test_hello_round_trips_through_the_rpc_serializer(self):
        hello = host.AgentHello(
            hostname='cmp-1', status='READY', endpoint='cmp-1',
            version='1.0', drivers=[host.HostDriver(
                name='fake_driver', status='READY', device_type='FPGA',
                version='1.0', error=None)])
        serializer = base.CyborgObjectSerializer()
        primitive = serializer.serialize_entity(None, hello)
        back = serializer.deserialize_entity(None, primitive)
        # Not ``hello == back``: that compares the lists of changed
        # fields, whose order depends on the hash seed.
        self.assertEqual(test_base.comparable(hello),
                         test_base.comparable(back))
        self.assertEqual('fake_driver', back.drivers[0].name)

    def hello(self, **kwargs):
        return host.AgentHello(
            hostname='cmp-1', status='READY', endpoint='cmp-1',
            version='1.0', drivers=[host.HostDriver(
                name='fake_driver', status='READY')], **kwargs)

    def test_hello_carries_the_resource_provider_name(self):
        serializer = base.CyborgObjectSerializer()
        back = serializer.deserialize_entity(None, serializer.serialize_entity(
            None, self.hello(resource_provider_name='cmp-1.example.org')))
        self.assertEqual('cmp-1.example.org', back.resource_provider_name)

    def test_hello_1_0_has_no_resource_provider_name(self):
        primitive = self.hello(
            resource_provider_name='cmp-1.example.org').obj_to_primitive(
                target_version='1.0')
        self.assertEqual('1.0', primitive['cyborg_object.version'])
        data = primitive['cyborg_object.data']
        self.assertNotIn('resource_provider_name', data)
        self.assertNotIn('resource_provider_name',
                         primitive['cyborg_object.changes'])
        self.assertEqual('fake_driver', data['drivers'][0][
            'cyborg_object.data']['name'])
        # What a conductor gets from an agent of the previous release.
        back = base.CyborgObjectSerializer().deserialize_entity(None,
                                                                primitive)
        self.assertEqual('cmp-1', back.hostname)
        self.assertFalse(back.obj_attr_is_set('resource_provider_name'))

    def test_hello_1_2_has_no_agent_id(self):
        """What a conductor of the previous release takes."""
        agent_id = 'node-a:/var/lib/cyborg/agent-state.json/42/0a1b2c3d4e5f'
        primitive = self.hello(agent_id=agent_id).obj_to_primitive(
            target_version='1.2')
        self.assertNotIn('agent_id', primitive['cyborg_object.data'])
        self.assertEqual('node-a:/var/lib/cyborg/agent-state.json',
                         host.seat_of(agent_id))
        first = host.new_agent_id('/var/lib/cyborg/agent-state.json')
        again = host.new_agent_id('/var/lib/cyborg/agent-state.json')
        self.assertNotEqual(first, again)
        self.assertEqual(host.seat_of(first), host.seat_of(again))
        self.assertLess(len(host.new_agent_id('/x' * 200)), 255)

    def test_host_1_0_has_no_report_seq(self):
        record = host.Host(hostname='cmp-1', status='up', report_generation=2,
                           report_seq=1795000000000000, drivers=[])
        primitive = record.obj_to_primitive(target_version='1.0')
        self.assertNotIn('report_seq', primitive['cyborg_object.data'])
        # What an agent of the previous release gets from the conductor.
        back = base.CyborgObjectSerializer().deserialize_entity(None,
                                                                primitive)
        self.assertEqual(2, back.report_generation)
        self.assertFalse(back.obj_attr_is_set('report_seq'))

    def test_hardware_function_1_0_has_no_name(self):
        row = hardware.HardwareFunction(
            address='0000:00:06.0', vendor_id='10de', product_id='2330',
            name='NVIDIA Corporation GH100[H100 SXM5 80GB]',
            kernel_driver='nvidia', driver='nvidia_gpu_driver',
            offered=False, reason='it has no IOMMU group', action=None)
        primitive = row.obj_to_primitive(target_version='1.0')
        self.assertNotIn('name', primitive['cyborg_object.data'])
        # What a conductor gets from an agent of the previous release.
        back = base.CyborgObjectSerializer().deserialize_entity(None,
                                                                primitive)
        self.assertEqual('2330', back.product_id)
        self.assertFalse(back.obj_attr_is_set('name'))

    def test_bad_enum_values_are_refused(self):
        self.assertRaises(ValueError, host.HostDriver, name='x',
                          status='SOMETIMES')
        self.assertRaises(ValueError, driver_device.DriverDevice,
                          type='TOASTER')

    def test_from_db_copies_row_fields(self):
        class Row:
            name = 'fake_driver'
            device_type = 'FPGA'
            version = '1.0'
            status = 'READY'
            error = None
            host_id = 7
        obj = host.HostDriver.from_db(Row())
        self.assertEqual({'name': 'fake_driver', 'device_type': 'FPGA',
                          'version': '1.0', 'status': 'READY',
                          'error': None}, obj.as_dict())
        self.assertEqual(set(), obj.obj_what_changed())
