"""When the agent discovers and what it sends: heartbeats run no
discovery, a rescan reports only a change, and the state file carries the
last accepted report across restarts and outages."""

import json
import os

from cyborg.agent import manager as agent_manager
from cyborg.tests.unit.agent import base


class HeartbeatAndRescanTest(base.AgentTestCase):

    def test_heartbeat_runs_no_discovery(self):
        agent = self.started_agent()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.keep_alive()
        agent.keep_alive()
        self.assertEqual(['heartbeat', 'heartbeat'],
                         self.conductor.take_calls())
        self.assertNotIn(self.name(base.SECOND_GPU), self.conductor.names())

    def test_unchanged_rescan_sends_nothing(self):
        agent = self.started_agent()
        for _ in range(3):
            agent._rescan()
        self.assertEqual([], self.conductor.take_calls())

    def test_rescan_finds_a_captured_tree_edited_on_disk(self):
        agent = self.started_agent()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent._rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertIn(self.name(base.SECOND_GPU), self.conductor.names())
        self.tree.remove(base.GPU)
        agent._rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertNotIn(self.name(base.GPU), self.conductor.names())
        self.assertEqual(self.conductor.report_hash, agent.accepted_hash)

    def test_rescan_before_hello_waits_for_it(self):
        agent = self.agent()
        agent._rescan()
        self.assertEqual([], self.conductor.take_calls())

    def test_periodic_tasks(self):
        agent = self.agent()
        self.assertEqual([(10, agent.keep_alive), (15, agent._rescan)],
                         agent.periodic_tasks())
        self.flags(rescan_interval=0, group='agent')
        self.assertEqual([(10, agent.keep_alive)], agent.periodic_tasks())

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
        agent._rescan()
        self.assertIn('did not take our report', self.logs.output)
        # The rescan leaves the pending report to the heartbeat.
        agent._rescan()
        self.conductor.down = False
        self.assertEqual([], self.conductor.take_calls())
        agent.keep_alive()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertIn(self.name(base.SECOND_GPU), self.conductor.names())
        agent.keep_alive()
        self.assertEqual(['heartbeat'], self.conductor.take_calls())

    def test_report_taken_later_is_resent_by_the_heartbeat(self):
        agent = self.started_agent()
        self.conductor.accept = False
        self.tree.remove(base.GPU)
        agent._rescan()
        # Resending is the heartbeat's job, not every rescan's.
        agent._rescan()
        agent.keep_alive()
        self.assertEqual(['report', 'report', 'heartbeat'],
                         self.conductor.take_calls())
        self.conductor.accept = True
        agent.keep_alive()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertEqual(self.conductor.report_hash, agent.accepted_hash)

    def test_conductor_that_lost_track_gets_a_full_report(self):
        agent = self.started_agent()
        self.conductor.lose_track()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent._rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertFalse(agent.registered)
        agent.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertIn(self.name(base.GPU), self.conductor.names())


class StateFileTest(base.AgentTestCase):

    def saved(self):
        with open(self.state_file) as f:
            return json.load(f)

    def test_accepted_report_is_saved(self):
        agent = self.started_agent()
        saved = self.saved()
        self.assertEqual((self.HOST, agent.accepted_hash, None),
                         (saved['host'], saved['report_hash'],
                          saved['unconfirmed']))
        self.assertEqual(2, len(saved['devices']))
        self.assertEqual(['agent-state.json'], os.listdir(self.state_dir))

    def test_restart_of_an_unchanged_host_sends_no_report(self):
        first = self.started_agent()
        again = self.agent()
        self.assertEqual(first.accepted_hash, again.accepted_hash)
        again.keep_alive()
        again.keep_alive()
        self.assertEqual(['hello', 'heartbeat'],
                         self.conductor.take_calls())

    def test_restart_after_a_change_reports_it(self):
        self.started_agent()
        self.tree.remove(base.QAT)
        self.agent().keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertEqual([self.name(base.GPU)], self.conductor.names())

    def test_restart_against_a_new_database_sends_a_full_report(self):
        self.started_agent()
        self.conductor.lose_track()
        self.agent().keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())

    def test_restart_after_an_unconfirmed_report_sends_it(self):
        agent = self.started_agent()
        self.conductor.down = True
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent._rescan()
        self.assertIsNotNone(self.saved()['unconfirmed'])
        # The agent stops; the hardware goes back to what was accepted,
        # but the conductor may hold the unconfirmed report.
        self.tree.remove(base.SECOND_GPU)
        self.conductor.down = False
        again = self.agent()
        self.assertIsNone(again.accepted_hash)
        again.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertIsNone(self.saved()['unconfirmed'])

    def test_corrupt_state_file_starts_fresh(self):
        first = self.started_agent()
        with open(self.state_file) as f:
            text = f.read()
        for broken in (text[:len(text) // 2], '{}', '[1, 2]',
                       text.replace(first.accepted_hash, '0' * 64),
                       text.replace('"devices": [', '"devices": [17, ')):
            with open(self.state_file, 'w') as f:
                f.write(broken)
            agent = self.agent()
            self.assertIsNone(agent.accepted_hash)
            agent.keep_alive()
            self.assertEqual(['hello', 'report'],
                             self.conductor.take_calls())
            self.assertEqual(first.accepted_hash,
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
        self.assertIsNone(self.agent().accepted_hash)
        self.assertIn('belongs to host other-host', self.logs.output)

    def test_unwritable_state_file_is_a_warning(self):
        self.flags(state_file=os.path.join(self.state_dir, 'gone', 'state'),
                   group='agent')
        agent = self.started_agent()
        self.assertIsNotNone(agent.accepted_hash)
        self.assertIn('Cannot write the agent state file', self.logs.output)
        self.assertEqual([], os.listdir(self.state_dir))


class ReportHashTest(base.AgentTestCase):

    def test_order_does_not_matter_content_does(self):
        devices = self.agent().get_hardware(None)
        digest = agent_manager.report_hash(devices)
        self.assertEqual(64, len(digest))
        shuffled = self.agent().get_hardware(None)[::-1]
        for device in shuffled:
            device.deployable_list = device.deployable_list[::-1]
            for deployable in device.deployable_list:
                deployable.attribute_list = deployable.attribute_list[::-1]
        self.assertEqual(digest, agent_manager.report_hash(shuffled))
        shuffled[0].deployable_list[0].num_accelerators += 1
        self.assertNotEqual(digest, agent_manager.report_hash(shuffled))
        self.assertNotEqual(digest, agent_manager.report_hash(devices[:1]))
