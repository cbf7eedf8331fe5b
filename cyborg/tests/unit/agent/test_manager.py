"""When the agent discovers and what it sends: heartbeats run no
discovery, a rescan reports only a change, and the state file carries the
last accepted report across restarts and outages."""

import json
import os
import shutil

import oslo_messaging as messaging
from oslo_versionedobjects import exception as ovo_exception

from cyborg.agent import reporter as agent_reporter
from cyborg.agent import state as agent_state
from cyborg.common import context
from cyborg.common import exception
from cyborg.tests.unit.accelerator import sysfs
from cyborg.tests.unit.agent import base

DRIVERS_AND_NIC = base.DRIVERS + ['intel_nic_driver']


class HeartbeatAndRescanTest(base.AgentTestCase):

    def test_heartbeat_runs_no_discovery(self):
        agent = self.started_agent()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.reporter.keep_alive()
        agent.reporter.keep_alive()
        self.assertEqual(['heartbeat', 'heartbeat'],
                         self.conductor.take_calls())
        self.assertNotIn(self.name(base.SECOND_GPU), self.conductor.names())

    def test_unchanged_rescan_sends_nothing(self):
        agent = self.started_agent()
        for _ in range(3):
            agent.reporter.rescan()
        self.assertEqual([], self.conductor.take_calls())

    def test_rescan_finds_a_captured_tree_edited_on_disk(self):
        agent = self.started_agent()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertIn(self.name(base.SECOND_GPU), self.conductor.names())
        self.tree.remove(base.GPU)
        agent.reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertNotIn(self.name(base.GPU), self.conductor.names())
        self.assertEqual(self.conductor.report_hash,
                         agent.reporter.accepted_hash)

    def test_rescan_before_hello_waits_for_it(self):
        agent = self.agent()
        agent.reporter.rescan()
        self.assertEqual([], self.conductor.take_calls())

    def test_periodic_tasks(self):
        agent = self.agent()
        self.assertEqual([(10, agent.reporter.keep_alive),
                          (15, agent.reporter.periodic_rescan)],
                         agent.periodic_tasks())
        self.flags(rescan_interval=0, group='agent')
        self.assertEqual([(10, agent.reporter.keep_alive)],
                         agent.periodic_tasks())

    def test_drivers_share_one_read_of_the_tree(self):
        # The NVIDIA and the generic PCI driver both read NVIDIA functions;
        # a broken one is read once per discovery, so warned about once.
        self.flags(enabled_drivers=base.DRIVERS + ['pci_driver'],
                   group='agent')
        agent = self.agent()
        self.tree.add_card('tesla_t4', '0000:86:00.0')
        self.tree.write('0000:86:00.0', 'numa_node', 'banana')
        names = sorted(dep.name for device in agent.get_hardware(None)
                       for dep in device.deployable_list)
        self.assertEqual(sorted([self.name(base.GPU)] + [
            self.name('0000:3d:01.%d' % i) for i in range(2)]), names)
        self.assertEqual(1, self.logs.output.count('Skipping PCI function'))
        agent.get_hardware(None)
        self.assertEqual(2, self.logs.output.count('Skipping PCI function'))

    def test_a_function_two_drivers_offer_is_reported_once(self):
        # The generic driver's spec also matches the T4 the NVIDIA driver
        # offers: the vendor driver keeps it, whatever the order.
        self.flags(enabled_drivers=['pci_driver'] + base.DRIVERS,
                   group='agent')
        self.flags(passthrough_whitelist=[json.dumps(
            {'vendor_id': '10de', 'product_id': '1eb8'})], group='pci')
        agent = self.agent()
        for _ in range(2):
            devices = agent.get_hardware(None)
            names = [dep.name for device in devices
                     for dep in device.deployable_list]
            self.assertEqual(len(names), len(set(names)))
            [gpu] = [device for device in devices if device.type == 'GPU']
            self.assertEqual('PGPU', gpu.deployable_list[0].attribute_list[
                0].value)
        self.assertEqual(1, self.logs.output.count(
            'Driver pci_driver also offers'))
        self.assertIn('left to nvidia_gpu_driver', self.logs.output)

    def test_conductor_asks_for_a_full_report(self):
        agent = self.started_agent()
        agent.say_hello(None)
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        agent.discover(None)
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())


class OutageTest(base.AgentTestCase):

    def test_changes_during_an_outage_are_sent_when_it_ends(self):
        agent = self.started_agent()
        self.conductor.down = True
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.reporter.rescan()
        self.assertIn('did not take our report', self.logs.output)
        # The rescan leaves the pending report to the heartbeat.
        agent.reporter.rescan()
        self.conductor.down = False
        self.assertEqual([], self.conductor.take_calls())
        agent.reporter.keep_alive()
        self.assertEqual(['heartbeat', 'report'],
                         self.conductor.take_calls())
        self.assertIn(self.name(base.SECOND_GPU), self.conductor.names())
        agent.reporter.keep_alive()
        self.assertEqual(['heartbeat'], self.conductor.take_calls())

    def test_a_database_outage_is_an_outage_too(self):
        agent = self.started_agent()
        self.conductor.down = exception.DatabaseUnavailable()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.reporter.rescan()
        self.assertIn('The database is unavailable', self.logs.output)
        agent.reporter._registered.clear()
        self.assertFalse(agent.reporter.hello(context.get_admin_context()))
        self.conductor.down = False
        agent.reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertIn(self.name(base.SECOND_GPU), self.conductor.names())

    def test_report_taken_later_is_resent_by_the_heartbeat(self):
        agent = self.started_agent()
        self.conductor.accept = False
        self.tree.remove(base.GPU)
        agent.reporter.rescan()
        # Resending is the heartbeat's job, not every rescan's.
        agent.reporter.rescan()
        agent.reporter.keep_alive()
        self.assertEqual(['report', 'heartbeat', 'report'],
                         self.conductor.take_calls())
        self.conductor.accept = True
        agent.reporter.keep_alive()
        self.assertEqual(['heartbeat', 'report'],
                         self.conductor.take_calls())
        self.assertEqual(self.conductor.report_hash,
                         agent.reporter.accepted_hash)

    def test_conductor_that_lost_track_gets_a_full_report(self):
        agent = self.started_agent()
        self.conductor.lose_track()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertFalse(agent.reporter.registered)
        agent.reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertIn(self.name(base.GPU), self.conductor.names())


class ReportSequenceTest(base.AgentTestCase):
    """Every report carries a sequence above any the agent sent before,
    across restarts, so that one delivered late is refused."""

    def _change(self, agent, address):
        self.tree.add_card('tesla_t4', address)
        agent.reporter.rescan()

    def test_each_new_report_has_a_higher_sequence(self):
        agent = self.started_agent()
        self._change(agent, base.SECOND_GPU)
        self.conductor.accept = False
        self.tree.remove(base.SECOND_GPU)
        agent.reporter.rescan()
        seqs = self.conductor.seqs
        self.assertEqual(3, len(seqs))
        self.assertEqual(sorted(set(seqs)), seqs)

    def test_a_report_sent_again_keeps_its_sequence(self):
        # Resent, or sent again as the full report a conductor asks for,
        # the same content carries the sequence the conductor holds.
        agent = self.started_agent()
        self.conductor.accept = False
        self._change(agent, base.SECOND_GPU)
        agent.reporter.keep_alive()
        self.conductor.accept = True
        agent.reporter.keep_alive()
        agent.reporter.reregister(context.get_admin_context())
        first, *again = self.conductor.seqs[1:]
        self.assertEqual([first] * 3, again)
        self.assertEqual(first, self.conductor.report_seq)
        # So does a restarted agent's, from its state file.
        restarted = self.agent()
        restarted.reporter.reregister(context.get_admin_context())
        self.assertEqual(first, self.conductor.seqs[-1])

    def test_a_newer_sequence_named_by_the_hello_is_not_reused(self):
        agent = self.started_agent()
        self.conductor.report_seq = self.conductor.seqs[-1] + 10 ** 12
        agent.reporter.reregister(context.get_admin_context())
        self.assertGreater(self.conductor.seqs[-1],
                           self.conductor.seqs[-2])
        self.assertEqual(self.conductor.report_hash,
                         agent.reporter.accepted_hash)

    def test_going_back_to_the_accepted_report_outruns_the_pending(self):
        # A report the conductor did not answer may yet be applied: when
        # the hardware goes back to what the conductor accepted before,
        # that goes again, with a higher sequence than the pending one.
        agent = self.started_agent()
        accepted = agent.reporter.accepted_hash
        self.conductor.down = True
        self._change(agent, base.SECOND_GPU)
        self.conductor.down = False
        self.tree.remove(base.SECOND_GPU)
        agent.reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertEqual(accepted, self.conductor.report_hash)
        self.assertGreater(self.conductor.seqs[-1], self.conductor.seqs[0])
        self.assertEqual(accepted, agent.reporter.accepted_hash)
        agent.reporter.keep_alive()
        self.assertEqual(['heartbeat'], self.conductor.take_calls())

    def test_a_restarted_agent_goes_on_above_the_saved_sequence(self):
        agent = self.started_agent()
        # A clock set back after the restart does not matter.
        self.conductor.report_seq = None
        saved = agent.reporter._seq + 10 ** 9
        agent.reporter._save(agent_state.AgentState(
            host=self.HOST, report_hash=agent.reporter.accepted_hash,
            devices=agent.reporter._state.devices, report_seq=saved,
            hardware=agent.reporter._state.hardware))
        again = self.agent()
        self.tree.remove(base.QAT)
        again.reporter.keep_alive()
        self.assertGreater(self.conductor.seqs[-1], saved)
        with open(self.state_file) as f:
            self.assertEqual(self.conductor.seqs[-1],
                             json.load(f)['report_seq'])

    def test_the_conductor_hello_answer_raises_the_floor(self):
        self.started_agent()
        os.unlink(self.state_file)
        # What the conductor applied last (say, before the state file
        # was lost) is above anything this agent would count from.
        self.conductor.report_seq = self.conductor.seqs[-1] + 10 ** 12
        applied = self.conductor.report_seq
        again = self.agent()
        again.reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertGreater(self.conductor.seqs[-1], applied)
        self.assertEqual(self.conductor.report_hash,
                         again.reporter.accepted_hash)

    def test_a_conductor_of_an_older_release_gets_no_sequence(self):
        refused = []
        report_data = self.conductor.report_data

        def old_release(context, hostname, devices, report_hash,
                        report_seq=None, hardware=None, timeout=None):
            if report_seq is not None:
                refused.append(report_seq)
                raise messaging.RemoteError(
                    'UnsupportedVersion', 'Endpoint does not support RPC '
                    'version 1.5')
            return report_data(context, hostname, devices, report_hash,
                               timeout=timeout)

        self.conductor.report_data = old_release
        agent = self.started_agent()
        # Refused with hardware (1.6), then with a sequence (1.5).
        self.assertEqual(2, len(refused))
        self.assertEqual(self.conductor.report_hash,
                         agent.reporter.accepted_hash)
        self._change(agent, base.SECOND_GPU)
        self.assertEqual(2, len(refused))
        self.assertEqual([None, None], self.conductor.seqs)
        self.assertIn(self.name(base.SECOND_GPU), self.conductor.names())

    def test_a_conductor_without_hardware_gets_the_report_without(self):
        """A 1.5 conductor takes sequences but no hardware list: the
        report goes without it, hashed without it (what the conductor
        keeps), and a later hello tries the list again."""
        refused = []
        report_data = self.conductor.report_data

        def release_1_5(context, hostname, devices, report_hash,
                        report_seq=None, hardware=None, timeout=None):
            if hardware is not None:
                refused.append(report_hash)
                raise messaging.RemoteError(
                    'UnsupportedVersion', 'Endpoint does not support RPC '
                    'version 1.6')
            return report_data(context, hostname, devices, report_hash,
                               report_seq=report_seq, timeout=timeout)

        self.conductor.report_data = release_1_5
        agent = self.started_agent()
        self.assertEqual(1, len(refused))
        devices = self.conductor.devices
        self.assertEqual(agent_reporter.report_hash(devices),
                         agent.reporter.accepted_hash)
        self.assertIsNone(self.conductor.hardware)
        agent.reporter.rescan()
        self.assertEqual([], self.conductor.take_calls())
        # The conductor is upgraded; the agent's next hello finds out.
        self.conductor.report_data = report_data
        agent.say_hello(None)
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertEqual(2, len(self.conductor.hardware))
        self.assertEqual(1, len(refused))

    def test_a_conductor_knowing_an_older_hardware_function_gets_it(self):
        """A conductor that knows HardwareFunction 1.0 only refuses 1.1
        (as oslo.versionedobjects does, in a RemoteError): the list goes
        again as 1.0, without the names."""
        refused = []
        report_data = self.conductor.report_data

        def knows_1_0(context, hostname, devices, report_hash,
                      report_seq=None, hardware=None, timeout=None):
            if hardware and not isinstance(hardware[0], dict):
                refused.append(hardware[0].VERSION)
                raise messaging.RemoteError(
                    'IncompatibleObjectVersion',
                    str(ovo_exception.IncompatibleObjectVersion(
                        objname='HardwareFunction',
                        objver=hardware[0].VERSION, supported='1.0')))
            return report_data(context, hostname, devices, report_hash,
                               report_seq=report_seq, hardware=hardware,
                               timeout=timeout)

        self.conductor.report_data = knows_1_0
        agent = self.started_agent()
        self.assertEqual(['1.1'], refused)
        self.assertEqual(self.conductor.report_hash,
                         agent.reporter.accepted_hash)
        sent = self.conductor.hardware
        self.assertEqual(2, len(sent))
        self.assertEqual({'1.0'}, {h['cyborg_object.version'] for h in sent})
        self.assertNotIn('name', sent[0]['cyborg_object.data'])


class StateFileTest(base.AgentTestCase):

    def saved(self):
        with open(self.state_file) as f:
            return json.load(f)

    def test_accepted_report_is_saved(self):
        agent = self.started_agent()
        saved = self.saved()
        self.assertEqual((self.HOST, agent.reporter.accepted_hash, None),
                         (saved['host'], saved['report_hash'],
                          saved['unconfirmed']))
        self.assertEqual(2, len(saved['devices']))
        self.assertEqual(['agent-state.json'], os.listdir(self.state_dir))

    def test_restart_of_an_unchanged_host_sends_no_report(self):
        first = self.started_agent()
        again = self.agent()
        self.assertEqual(first.reporter.accepted_hash,
                         again.reporter.accepted_hash)
        again.reporter.keep_alive()
        again.reporter.keep_alive()
        self.assertEqual(['hello', 'heartbeat'],
                         self.conductor.take_calls())

    def test_restart_after_a_change_reports_it(self):
        self.started_agent()
        self.tree.remove(base.QAT)
        self.agent().reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertEqual([self.name(base.GPU)], self.conductor.names())

    def test_restart_against_a_new_database_sends_a_full_report(self):
        self.started_agent()
        self.conductor.lose_track()
        self.agent().reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())

    def test_restart_after_an_unconfirmed_report_sends_it(self):
        agent = self.started_agent()
        self.conductor.down = True
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.reporter.rescan()
        self.assertIsNotNone(self.saved()['unconfirmed'])
        # The agent stops; the hardware goes back to what was accepted,
        # but the conductor may hold the unconfirmed report.
        self.tree.remove(base.SECOND_GPU)
        self.conductor.down = False
        again = self.agent()
        self.assertIsNone(again.reporter.accepted_hash)
        again.reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertIsNone(self.saved()['unconfirmed'])

    def test_corrupt_state_file_starts_fresh(self):
        first = self.started_agent()
        with open(self.state_file) as f:
            text = f.read()
        for broken in (text[:len(text) // 2], '{}', '[1, 2]',
                       text.replace(first.reporter.accepted_hash, '0' * 64),
                       text.replace('"devices": [', '"devices": [17, ')):
            with open(self.state_file, 'w') as f:
                f.write(broken)
            agent = self.agent()
            self.assertIsNone(agent.reporter.accepted_hash)
            agent.reporter.keep_alive()
            self.assertEqual(['hello', 'report'],
                             self.conductor.take_calls())
            self.assertEqual(first.reporter.accepted_hash,
                             self.saved()['report_hash'])
        self.assertEqual(5, self.logs.output.count(
            'Ignoring the agent state file %s' % self.state_file))

    def test_state_of_another_host_is_ignored(self):
        self.started_agent()
        with open(self.state_file) as f:
            saved = json.load(f)
        saved['host'] = 'other-host'
        with open(self.state_file, 'w') as f:
            json.dump(saved, f)
        self.assertIsNone(self.agent().reporter.accepted_hash)
        self.assertIn('belongs to host other-host', self.logs.output)

    def test_unwritable_state_file_is_a_warning(self):
        self.flags(state_file=os.path.join(self.state_dir, 'gone', 'state'),
                   group='agent')
        agent = self.started_agent()
        self.assertIsNotNone(agent.reporter.accepted_hash)
        self.assertIn('Cannot write the agent state file', self.logs.output)
        self.assertEqual([], os.listdir(self.state_dir))


class ReportHashTest(base.AgentTestCase):

    def test_order_does_not_matter_content_does(self):
        devices = self.agent().get_hardware(None)
        digest = agent_reporter.report_hash(devices)
        self.assertEqual(64, len(digest))
        shuffled = self.agent().get_hardware(None)[::-1]
        for device in shuffled:
            device.deployable_list = device.deployable_list[::-1]
            for deployable in device.deployable_list:
                deployable.attribute_list = deployable.attribute_list[::-1]
        self.assertEqual(digest, agent_reporter.report_hash(shuffled))
        shuffled[0].deployable_list[0].num_accelerators += 1
        self.assertNotEqual(digest, agent_reporter.report_hash(shuffled))
        self.assertNotEqual(digest, agent_reporter.report_hash(devices[:1]))


class HardwareListTest(base.AgentTestCase):
    """A GPU under the vGPU host driver with no vGPU type configured and
    a NIC port the host runs: neither is offered; the report's hardware
    list says why, and the agent logs each once."""

    VGPU_HOST = '0000:af:00.0'
    HOST_NIC = '0000:18:00.0'

    def setUp(self):
        super().setUp()
        self.flags(enabled_drivers=DRIVERS_AND_NIC, group='agent')
        self.tree.add_card('tesla_t4', self.VGPU_HOST)
        self.tree.add_mdev_type(self.VGPU_HOST, 'nvidia-222', 'GRID T4-1B',
                                16)
        self.tree.add_card('x710', self.HOST_NIC)
        sysfs.add_netdev(self.tree, self.HOST_NIC, 'eno1')

    def hardware(self):
        return {(h.driver, h.address): h for h in self.conductor.hardware}

    def test_not_offered_functions_are_reported_and_logged_once(self):
        agent = self.started_agent()
        for _ in range(3):
            agent.reporter.rescan()
        self.assertEqual([], self.conductor.take_calls())
        hardware = self.hardware()
        gpu = hardware[('nvidia_gpu_driver', self.VGPU_HOST)]
        self.assertEqual((False, True, False, '10de', '1eb8', 'nvidia'), (
            gpu.offered, gpu.setup_required, gpu.reboot_required,
            gpu.vendor_id, gpu.product_id, gpu.kernel_driver))
        self.assertIn('vGPU host driver', gpu.reason)
        self.assertIn('[gpu_devices] enabled_vgpu_types', gpu.action)
        nic = hardware[('intel_nic_driver', self.HOST_NIC)]
        self.assertFalse(nic.offered)
        self.assertIn('the host runs it with kernel driver i40e (eno1)',
                      nic.reason)
        self.assertIn('physical_device_mappings', nic.action)
        self.assertTrue(hardware[('nvidia_gpu_driver', base.GPU)].offered)
        for address in (self.VGPU_HOST, self.HOST_NIC):
            self.assertEqual(1, self.logs.output.count(
                'PCI function %s (' % address), self.logs.output)
        self.assertIn('To offer it: enable one of its types',
                      self.logs.output)

    def test_a_changed_decision_is_reported_and_logged(self):
        agent = self.started_agent()
        # Given to vfio-pci: the vGPU host driver's types are gone.
        self.tree.bind(self.VGPU_HOST, 'vfio-pci')
        shutil.rmtree(os.path.join(self.tree.function_dir(self.VGPU_HOST),
                                   'mdev_supported_types'))
        agent.reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertIn(self.name(self.VGPU_HOST), self.conductor.names())
        self.assertTrue(self.hardware()[('nvidia_gpu_driver',
                                         self.VGPU_HOST)].offered)
        self.assertEqual(1, self.logs.output.count(
            'PCI function %s (' % self.VGPU_HOST))

    def test_a_changed_reason_alone_is_a_new_report(self):
        agent = self.started_agent()
        before = agent.reporter.accepted_hash
        # Still not offered whole, for another reason: mdevs exist.
        os.makedirs(os.path.join(
            self.tree.function_dir(self.VGPU_HOST), 'mdev_supported_types',
            'nvidia-222', 'devices', 'a-mdev'))
        agent.reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertNotEqual(before, agent.reporter.accepted_hash)
        self.assertIn('mdevs exist', self.hardware()[(
            'nvidia_gpu_driver', self.VGPU_HOST)].reason)
        self.assertEqual(2, self.logs.output.count(
            'PCI function %s (' % self.VGPU_HOST))

    def test_the_list_survives_a_restart_in_the_state_file(self):
        first = self.started_agent()
        again = self.agent()
        self.assertEqual(first.reporter.accepted_hash,
                         again.reporter.accepted_hash)
        self.assertEqual(len(self.conductor.hardware),
                         len(again.reporter._state.hardware))


class ConfigurationChangeTest(base.AgentTestCase):
    """What the troubleshooting guide says: a changed configuration file
    is seen by ``update-driver``, not by a rescan or a discovery."""

    def test_a_vgpu_type_added_to_the_file_needs_update_driver(self):
        self.tree.add_mdev_type(base.GPU, 'nvidia-222', 'GRID T4-1B', 14)
        config = os.path.join(self.state_dir, 'cyborg.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\n')
        self.conf(['--config-file', config], project='cyborg')
        agent = self.started_agent()
        gpu = self.name(base.GPU)
        self.assertNotIn(gpu, self.conductor.names())
        with open(config, 'w') as f:
            f.write('[gpu_devices]\nenabled_vgpu_types = nvidia-222\n'
                    '[vgpu_nvidia-222]\ndevice_addresses = %s\n' % base.GPU)
        agent.reporter.rescan()
        agent.discover(context.get_admin_context())
        self.assertNotIn(gpu, self.conductor.names())
        agent.admin.update_driver(context.get_admin_context(),
                                  'nvidia_gpu_driver')
        self.assertIn(gpu, self.conductor.names())
