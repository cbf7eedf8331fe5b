"""Hot-plug: udev events, debounced, make the agent discover and report;
without udev the agent relies on its rescan."""

import errno
import os
import queue
import sys
import threading
import time
from unittest import mock

import fixtures
import testtools

from cyborg.agent import udev
from cyborg.tests.unit.agent import base

CARD_IDS = {'tesla_t4': ('10DE:1EB8', '30200'),
            'qat_c62x': ('8086:37C8', 'B4000'),
            'qat_c62x_vf': ('8086:37C9', 'B4000')}


class UEvent:
    """A device event as pyudev's Monitor hands it over: the variables
    of the kernel's uevent (``udevadm monitor --kernel --property``),
    read through pyudev.Device's names (``action``, ``subsystem``,
    ``sys_path``, ``device_path``, ``sequence_number``, ``driver``,
    ``properties``).

    Real pyudev Devices with an action only come from a netlink socket
    (udevd sends them) or from ``udev_device_new_from_environment``, which
    clears the whole C environment of the process it runs in.
    """

    _seqnum = 4000

    def __init__(self, action, address, card='tesla_t4', subsystem='pci',
                 driver=None):
        UEvent._seqnum += 1
        bus = address.split(':')[1]
        pci_id, pci_class = CARD_IDS[card]
        self.properties = {
            'ACTION': action, 'SUBSYSTEM': subsystem,
            'DEVPATH': '/devices/pci0000:%s/%s' % (bus, address),
            'SEQNUM': str(UEvent._seqnum)}
        if subsystem == 'pci':
            vendor, product = pci_id.split(':')
            self.properties.update(
                PCI_ID=pci_id, PCI_CLASS=pci_class, PCI_SLOT_NAME=address,
                MODALIAS='pci:v0000%sd0000%ssv*sd*bc%s' % (
                    vendor, product, pci_class.zfill(6)[:2]))
        if driver:
            self.properties['DRIVER'] = driver

    action = property(lambda self: self.properties['ACTION'])
    subsystem = property(lambda self: self.properties['SUBSYSTEM'])
    device_path = property(lambda self: self.properties['DEVPATH'])
    sys_path = property(lambda self: '/sys' + self.device_path)
    sequence_number = property(lambda self: int(self.properties['SEQNUM']))
    driver = property(lambda self: self.properties.get('DRIVER'))


uevent = UEvent


class EventSource:
    """What the watcher reads a pyudev Monitor through: a descriptor that
    is readable while events are queued, and ``poll(timeout=0)``."""

    def __init__(self):
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        self.queue = queue.Queue()

    def fileno(self):
        return self._read

    def send(self, *items):
        for item in items:
            self.queue.put(item)
            os.write(self._write, b'.')

    def poll(self, timeout=None):
        try:
            os.read(self._read, 1)
        except BlockingIOError:
            return None
        item = self.queue.get_nowait()
        if isinstance(item, Exception):
            raise item
        return item

    def close(self):
        os.close(self._read)
        os.close(self._write)


class DebouncerTest(testtools.TestCase):

    def test_burst_fires_once_after_quiet(self):
        d = udev.Debouncer(quiet=0.3, max_delay=1.0)
        self.assertIsNone(d.wait(0))
        self.assertFalse(d.take(0))
        d.add(10.0)
        d.add(10.1)
        self.assertAlmostEqual(0.3, d.wait(10.1))
        self.assertFalse(d.take(10.3))
        self.assertTrue(d.take(10.4))
        self.assertFalse(d.take(10.5))
        self.assertIsNone(d.wait(10.5))

    def test_endless_burst_fires_by_max_delay(self):
        d = udev.Debouncer(quiet=0.3, max_delay=1.0)
        for tick in range(10):
            d.add(20.0 + tick * 0.1)
        self.assertEqual(0, d.wait(21.0))
        self.assertTrue(d.take(21.0))


class HotplugTest(base.AgentTestCase):
    """The watcher, fed events shaped by pyudev, drives a real agent."""

    def setUp(self):
        super().setUp()
        self.source = EventSource()
        self.addCleanup(self.source.close)
        self.agent = self.started_agent()
        self.reported = threading.Event()
        rescan = self.agent.reporter.rescan

        def rescan_and_tell():
            rescan()
            self.reported.set()
        self.watcher = udev.HotplugWatcher(self.source, rescan_and_tell)
        self.watcher.start()
        self.addCleanup(self.watcher.stop)

    def test_added_card_is_reported_without_waiting_for_a_rescan(self):
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        self.source.send(uevent('add', base.SECOND_GPU))
        self.assertTrue(self.reported.wait(30))
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertIn(self.name(base.SECOND_GPU), self.conductor.names())

    def test_burst_of_events_is_one_discovery(self):
        vfs = self.tree.add_vfs(base.QAT, 8, '37c9', 'c6xxvf')
        events = [uevent('add', str(vf), 'qat_c62x_vf') for vf in vfs]
        events += [uevent('bind', str(vf), 'qat_c62x_vf', driver='c6xxvf')
                   for vf in vfs]
        events.append(uevent('change', base.QAT, 'qat_c62x'))
        self.source.send(*events)
        self.assertTrue(self.reported.wait(5))
        time.sleep(0.5)
        self.assertEqual((17, 1), (self.watcher.events,
                                   self.watcher.bursts))
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertIn(self.name(str(vfs[-1])), self.conductor.names())

    def test_removed_card_is_reported(self):
        self.tree.remove(base.GPU)
        self.source.send(uevent('unbind', base.GPU),
                         uevent('remove', base.GPU))
        self.assertTrue(self.reported.wait(5))
        self.assertNotIn(self.name(base.GPU), self.conductor.names())

    def test_mdev_events_count(self):
        mdev = '%s/5e6c1a2b-3d4e-4f50-8a61-72b8c9d0e1f2' % base.GPU
        self.source.send(uevent('add', mdev, subsystem='mdev'))
        self.assertTrue(self.reported.wait(5))
        self.assertEqual((1, 1), (self.watcher.events, self.watcher.bursts))
        # Nothing the drivers report changed: nothing sent.
        self.assertEqual([], self.conductor.take_calls())

    def test_other_events_are_ignored(self):
        self.source.send(uevent('add', base.SECOND_GPU, subsystem='usb'),
                         uevent('online', base.GPU))
        self.assertFalse(self.reported.wait(0.8))
        self.assertEqual((0, 0), (self.watcher.events, self.watcher.bursts))

    def test_lost_events_mean_a_discovery(self):
        self.tree.remove(base.QAT)
        self.source.send(OSError(errno.ENOBUFS, 'No buffer space'))
        self.assertTrue(self.reported.wait(5))
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertTrue(self.watcher.running)

    def test_broken_monitor_ends_the_watcher(self):
        self.source.send(OSError(errno.EBADF, 'Bad file descriptor'))
        for _ in range(100):
            if not self.watcher.running:
                break
            time.sleep(0.05)
        self.assertFalse(self.watcher.running)
        self.assertIn('relying on the periodic rescan', self.logs.output)

    def test_stop_ends_the_thread_and_closes_the_pipe(self):
        thread = self.watcher._thread
        wake = self.watcher._wake_read
        self.watcher.stop()
        self.assertFalse(thread.is_alive())
        self.assertRaises(OSError, os.fstat, wake)
        self.watcher.stop()


class AvailabilityTest(base.AgentTestCase):
    """Where the watcher runs, and the agent without it."""

    def control_file(self):
        path = os.path.join(self.state_dir, 'control')
        open(path, 'w').close()
        return path

    def test_captured_tree_has_no_events(self):
        self.assertIn('not the real /sys', udev.unavailable_reason(
            self.tree.root, self.control_file()))
        self.assertIsNone(udev.start(self.tree.root, lambda: None))

    def test_no_udev_daemon(self):
        missing = os.path.join(self.state_dir, 'no-control')
        self.assertEqual('udev is not running (no %s)' % missing,
                         udev.unavailable_reason('/sys', missing))
        self.assertIsNone(udev.start('/sys', lambda: None, missing))
        self.assertEqual(1, self.logs.output.count('No hot-plug events'))

    def test_no_pyudev(self):
        with mock.patch.dict(sys.modules, {'pyudev': None}):
            self.assertIn('pyudev cannot be imported',
                          udev.unavailable_reason('/sys',
                                                  self.control_file()))

    def test_real_monitor_starts_and_stops(self):
        watcher = udev.start('/sys', lambda: None, self.control_file())
        if watcher is None:
            self.skipTest('no netlink udev monitor here: %s'
                          % self.logs.output)
        self.assertTrue(watcher.running)
        self.assertEqual('Monitor', type(watcher.monitor).__name__)
        watcher.stop()
        self.assertFalse(watcher.running)

    def test_agent_without_udev_relies_on_rescan(self):
        agent = self.started_agent()
        agent.init_host()
        self.assertIsNone(agent.reporter._watcher)
        self.assertIn(agent.reporter.periodic_rescan,
                      [task for _, task in agent.periodic_tasks()])
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.reporter.periodic_rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        agent.del_host()

    def test_agent_with_neither_warns(self):
        self.flags(rescan_interval=0, group='agent')
        agent = self.agent()
        agent.init_host()
        self.assertIn('Neither udev events nor a periodic rescan',
                      self.logs.output)

    def test_agent_on_real_sys_watches(self):
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.agent.udev.UDEV_CONTROL', self.control_file()))
        self.flags(sysfs_root='/sys', group='agent')
        agent = self.agent()
        agent.init_host()
        if agent.reporter._watcher is None:
            self.skipTest('no netlink udev monitor here')
        watcher = agent.reporter._watcher
        self.assertTrue(watcher.running)
        agent.del_host()
        self.assertFalse(watcher.running)
        self.assertIsNone(agent.reporter._watcher)
