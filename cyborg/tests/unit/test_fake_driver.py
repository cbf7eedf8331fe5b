from cyborg.accelerator import drivers
from cyborg.accelerator.drivers.fake import driver as fake
from cyborg.tests import base


class FakeDriverTest(base.TestCase):

    def test_discover_reports_one_card_with_sixteen_functions(self):
        self.flags(host='cmp.example.org')
        devices = fake.FakeDriver(self.conf).discover()
        self.assertEqual(1, len(devices))
        device = devices[0]
        self.assertEqual('FPGA', device.type)
        deployable = device.deployable_list[0]
        self.assertEqual('cmp_example_org_FakeDevice', deployable.name)
        self.assertEqual(16, deployable.num_accelerators)
        self.assertEqual(16, len(deployable.attach_handle_list))
        self.assertEqual(16, len({h.attach_info
                                  for h in deployable.attach_handle_list}))
        attributes = {a.key: a.value for a in deployable.attribute_list}
        self.assertEqual({'rc': 'FPGA', 'trait0': 'CUSTOM_FAKE_DEVICE'},
                         attributes)


class LoaderTest(base.TestCase):

    def test_loads_known_and_reports_unknown(self):
        loaded, statuses = drivers.load(['fake_driver', 'nope'], self.conf)
        self.assertEqual(['fake_driver'], list(loaded))
        by_name = {s.name: s for s in statuses}
        self.assertEqual('READY', by_name['fake_driver'].status)
        self.assertEqual('FAILED', by_name['nope'].status)
        self.assertEqual(['fake_driver', 'nope'], [s.name for s in statuses])
