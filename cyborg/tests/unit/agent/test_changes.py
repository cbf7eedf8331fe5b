"""The periodic rescan without udev: a cheap look at sysfs decides whether
the drivers run; with udev events, the periodic rescan is the rare full
one."""

from cyborg.accelerator.common import sysfs as common_sysfs
from cyborg.agent import changes
from cyborg.tests.unit.agent import base


class DriverRuns:
    """Counts the discoveries (surveys) of an agent's (real) drivers."""

    def __init__(self, agent):
        self.count = 0
        for driver in agent.drivers.values():
            driver.survey = self._counted(driver.survey)

    def _counted(self, survey):
        def counted():
            self.count += 1
            return survey()
        return counted

    def take(self):
        count, self.count = self.count, 0
        return count


class FingerprintTest(base.AgentTestCase):

    def fingerprint(self):
        return common_sysfs.fingerprint(self.tree.root)

    def test_equal_for_an_untouched_tree(self):
        self.assertEqual(self.fingerprint(), self.fingerprint())

    def test_changes_with_what_discovery_depends_on(self):
        edits = [
            lambda: self.tree.write(base.QAT, 'sriov_numvfs', '4\n'),
            lambda: self.tree.bind(base.GPU, 'vfio-pci'),
            lambda: self.tree.bind(base.GPU, None),
            lambda: self.tree.add_mdev_type(base.GPU, 'nvidia-222',
                                            'GRID T4-1B', 16),
            lambda: self.tree.write(
                base.GPU, 'mdev_supported_types/nvidia-222/'
                'available_instances', '15\n'),
            lambda: self.tree.add_mdev_type(
                base.GPU, 'nvidia-222', 'GRID T4-1B', 15,
                devices=['4b20d080-1b54-4048-85b3-a6a62d165c01']),
            lambda: self.tree.add_card('tesla_t4', base.SECOND_GPU),
            lambda: self.tree.remove(base.SECOND_GPU),
        ]
        seen = [self.fingerprint()]
        for edit in edits:
            edit()
            seen.append(self.fingerprint())
            self.assertNotEqual(seen[-2], seen[-1])

    def test_a_missing_tree_is_a_fingerprint_too(self):
        self.assertEqual(common_sysfs.fingerprint('/nonexistent/sys'),
                         common_sysfs.fingerprint('/nonexistent/sys'))


class CheapRescanTest(base.AgentTestCase):
    """Without udev events (a captured tree never has them)."""

    def test_nothing_changed_no_driver_runs(self):
        agent = self.started_agent()
        runs = DriverRuns(agent)
        for _ in range(3):
            agent.reporter.periodic_rescan()
        self.assertEqual(0, runs.take())
        self.assertEqual(3, agent.reporter.changes.skipped)
        self.assertEqual([], self.conductor.take_calls())

    def test_a_vf_count_change_runs_the_drivers(self):
        agent = self.started_agent()
        runs = DriverRuns(agent)
        self.tree.add_vfs(base.QAT, 4, '37c9', 'c6xxvf')
        agent.reporter.periodic_rescan()
        self.assertEqual(len(agent.drivers), runs.take())
        self.assertEqual(['report'], self.conductor.take_calls())
        # Seen once: the next look finds nothing new.
        agent.reporter.periodic_rescan()
        self.assertEqual(0, runs.take())

    def test_a_driver_link_change_runs_the_drivers(self):
        agent = self.started_agent()
        runs = DriverRuns(agent)
        self.tree.bind(base.GPU, 'vfio-pci')
        agent.reporter.periodic_rescan()
        self.assertEqual(len(agent.drivers), runs.take())

    def test_a_full_rescan_comes_when_due(self):
        now = [1000.0]
        self.flags(full_rescan_interval=600, group='agent')
        agent = self.started_agent()
        agent.reporter.changes.clock = lambda: now[0]
        agent.reporter.changes.discovering()
        runs = DriverRuns(agent)
        now[0] += 599
        agent.reporter.periodic_rescan()
        self.assertEqual(0, runs.take())
        now[0] += 1
        agent.reporter.periodic_rescan()
        self.assertEqual(len(agent.drivers), runs.take())
        # That discovery starts a new period.
        agent.reporter.periodic_rescan()
        self.assertEqual(0, runs.take())

    def test_other_discoveries_refresh_what_was_seen(self):
        # A discovery the conductor asked for saw the edit already.
        agent = self.started_agent()
        self.tree.add_card('tesla_t4', base.SECOND_GPU)
        agent.discover(None)
        self.assertIn('report', self.conductor.take_calls())
        runs = DriverRuns(agent)
        agent.reporter.periodic_rescan()
        self.assertEqual(0, runs.take())

    def test_schedule(self):
        agent = self.agent()
        agent.init_host()
        self.addCleanup(agent.del_host)
        self.assertEqual([(10, agent.reporter.keep_alive),
                          (15, agent.reporter.periodic_rescan)],
                         agent.periodic_tasks())
        self.flags(rescan_interval=0, group='agent')
        self.assertEqual([(10, agent.reporter.keep_alive)],
                         agent.periodic_tasks())


class WithUdevTest(base.AgentTestCase):
    """With udev events, hot-plugs are announced: the periodic rescan is
    the full one, rarely."""

    def agent_with_udev(self):
        agent = self.started_agent()
        # What udev.start returns when it can:
        agent.reporter._watcher = object()
        return agent

    def test_rare_full_rescans(self):
        self.flags(full_rescan_interval=900, group='agent')
        agent = self.agent_with_udev()
        self.assertEqual([(10, agent.reporter.keep_alive),
                          (900, agent.reporter.periodic_rescan)],
                         agent.periodic_tasks())
        self.flags(full_rescan_interval=0, group='agent')
        self.assertEqual([(10, agent.reporter.keep_alive)],
                         agent.periodic_tasks())

    def test_the_periodic_rescan_runs_the_drivers(self):
        agent = self.agent_with_udev()
        runs = DriverRuns(agent)
        agent.reporter.periodic_rescan()
        self.assertEqual(len(agent.drivers), runs.take())
        self.assertEqual(0, agent.reporter.changes.skipped)


class ChangeCheckTest(base.AgentTestCase):

    def test_first_check_is_due(self):
        check = changes.ChangeCheck(lambda: 'same', 0)
        self.assertTrue(check.worth_discovering())
        check.discovering()
        self.assertFalse(check.worth_discovering())
        self.assertEqual((1, 1), (check.due, check.skipped))
