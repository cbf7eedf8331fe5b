import json
import os
import threading
import time

import fixtures

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

    def test_device_names_vendor_and_model_like_a_real_driver(self):
        device = fake.FakeDriver(self.conf).discover()[0]
        self.assertRegex(device.vendor, '^[0-9a-f]{4}$')
        self.assertEqual('Fake FPGA card (16 functions)', device.model)
        self.assertEqual(
            {'bus': '0c', 'device': '00', 'domain': '0000', 'function': '0'},
            json.loads(device.controlpath_id.cpid_info))

    def test_hardware_row_shows_a_pci_address_and_ids(self):
        [row] = fake.FakeDriver(self.conf).hardware()
        self.assertEqual('0000:0c:00.0', row['address'])
        self.assertEqual(('abcd', 'fa16'),
                         (row['vendor_id'], row['product_id']))
        self.assertTrue(row['ready'])


class UpstreamCardTest(base.TestCase):
    """[fake_driver] report_as = upstream: the card as OpenStack Cyborg's
    fake driver reports it (its cyborg/accelerator/drivers/fake.py)."""

    def test_the_card_field_for_field(self):
        self.flags(host='cmp.example.org')
        self.flags(report_as='upstream', group='fake_driver')
        [device] = fake.FakeDriver(self.conf).discover()
        self.assertEqual(
            ('0xABCD', 'miss model info', 'FPGA', 'fake_vendor_info',
             '{"device_id": "0xabcd", "class": "Fake class"}'),
            (device.vendor, device.model, device.type,
             device.vendor_board_info, device.std_board_info))
        self.assertEqual('{"domain":"0000","bus":"0c","device":"00",'
                         '"function":"0"}', device.controlpath_id.cpid_info)
        [deployable] = device.deployable_list
        self.assertEqual(('cmp_example_org_FakeDevice', 16, 'fake'),
                         (deployable.name, deployable.num_accelerators,
                          deployable.driver_name))
        self.assertEqual([('traits1', 'CUSTOM_FAKE_DEVICE'), ('rc', 'FPGA')],
                         [(a.key, a.value) for a in deployable.attribute_list])
        handles = deployable.attach_handle_list
        self.assertEqual({'TEST_PCI'}, {h.attach_type for h in handles})
        self.assertEqual('{"domain": "0000", "bus": "0c", "device": "0", '
                         '"function": "1"}', handles[0].attach_info)
        self.assertEqual('{"domain": "0000", "bus": "0c", "device": "2", '
                         '"function": "0"}', handles[-1].attach_info)

    def test_by_default_the_card_as_a_real_driver_of_ours_names_it(self):
        [device] = fake.FakeDriver(self.conf).discover()
        self.assertEqual(fake.VENDOR_ID, device.vendor)


class HoldTest(base.TestCase):
    """[fake_driver] hold_dir stops programming half-way until released."""

    def test_programming_waits_for_the_release_file(self):
        hold_dir = self.useFixture(fixtures.TempDir()).path
        self.flags(hold_dir=hold_dir, group='fake_driver')
        image = os.path.join(hold_dir, 'image.bin')
        with open(image, 'wb') as f:
            f.write(b'bits')
        driver = fake.FakeDriver(self.conf)
        cpid = {'cpid_info': json.dumps(fake.PCI_ADDRESS, sort_keys=True)}
        worker = threading.Thread(target=driver.program, args=(cpid, image))
        worker.start()
        self.addCleanup(worker.join, 30)
        deadline = time.monotonic() + 30
        while not [n for n in os.listdir(hold_dir) if n.startswith('held-')]:
            self.assertLess(time.monotonic(), deadline, 'nothing was held')
            time.sleep(0.01)
        self.assertTrue(worker.is_alive())
        self.assertEqual({}, driver.programmed)
        with open(os.path.join(hold_dir, fake.RELEASE), 'w'):
            pass
        worker.join(30)
        self.assertFalse(worker.is_alive())
        self.assertEqual([cpid['cpid_info']], list(driver.programmed))


class LoaderTest(base.TestCase):

    def test_loads_known_and_reports_unknown(self):
        loaded, statuses = drivers.load(['fake_driver', 'nope'], self.conf)
        self.assertEqual(['fake_driver'], list(loaded))
        by_name = {s.name: s for s in statuses}
        self.assertEqual('READY', by_name['fake_driver'].status)
        self.assertEqual('FAILED', by_name['nope'].status)
        self.assertEqual(['fake_driver', 'nope'], [s.name for s in statuses])
