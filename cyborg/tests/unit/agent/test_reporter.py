"""The report protocol on its own: a Reporter given a survey and a fake
conductor client, with no RPC, no drivers and no sysfs."""

import os

import fixtures
import oslo_messaging as messaging

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.agent import reporter as agent_reporter
from cyborg.agent import state as agent_state
from cyborg.common import exception
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests.unit.agent import base as agent_base


class Survey:
    """What the drivers offer: the fake driver's card, or nothing."""

    def __init__(self, conf):
        self.devices = fake_driver.FakeDriver(conf).discover()
        self.runs = 0

    def __call__(self):
        self.runs += 1
        return list(self.devices), []


class ReporterTest(base.TestCase):

    def setUp(self):
        super().setUp()
        state_dir = self.useFixture(fixtures.TempDir()).path
        self.flags(state_path=state_dir)
        self.state_file = os.path.join(state_dir, 'agent-state.json')
        self.survey = Survey(self.conf)
        self.conductor = agent_base.Conductor()
        self.statuses = [host_obj.HostDriver(name='fake_driver',
                                             status='READY')]

    def reporter(self):
        return agent_reporter.Reporter('cmp-1', self.conf, self.survey,
                                       lambda: self.statuses,
                                       self.conductor)

    def started(self):
        reporter = self.reporter()
        reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        return reporter

    def test_hello_then_the_report_then_heartbeats(self):
        reporter = self.started()
        self.assertTrue(reporter.registered)
        self.assertEqual(self.conductor.report_hash, reporter.accepted_hash)
        self.assertEqual(agent_reporter.report_hash(self.survey.devices, []),
                         reporter.accepted_hash)
        reporter.keep_alive()
        self.assertEqual(['heartbeat'], self.conductor.take_calls())

    def test_a_rescan_reports_only_a_change(self):
        reporter = self.started()
        reporter.rescan()
        self.assertEqual([], self.conductor.take_calls())
        self.survey.devices = []
        reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        self.assertEqual([], self.conductor.devices)

    def test_no_rescan_before_the_hello(self):
        reporter = self.reporter()
        reporter.rescan()
        self.assertEqual([], self.conductor.take_calls())
        self.assertEqual(0, self.survey.runs)

    def test_a_report_not_taken_is_sent_again_by_the_heartbeat(self):
        reporter = self.started()
        self.survey.devices = []
        self.conductor.down = exception.DatabaseUnavailable()
        reporter.rescan()
        self.assertEqual(self.conductor.generation, 1)
        self.assertEqual(self.state_file_unconfirmed(),
                         agent_reporter.report_hash([], []))
        self.conductor.down = False
        runs = self.survey.runs
        reporter.keep_alive()
        # The heartbeat first, then the resend.
        self.assertEqual(['heartbeat', 'report'],
                         self.conductor.take_calls())
        self.assertEqual(runs, self.survey.runs)  # a resend, no survey
        self.assertEqual(self.conductor.report_hash, reporter.accepted_hash)
        self.assertIsNone(self.state_file_unconfirmed())

    def test_the_heartbeat_does_not_wait_for_a_resend(self):
        # A conductor slow to take reports, or one that died with ours:
        # the resend waits up to the call timeout, and the host must be
        # heard before it, not only after it (or, with the resend
        # accepted, not at all).
        reporter = self.started()
        self.survey.devices = []
        self.conductor.accept = False
        reporter.rescan()
        self.assertEqual(['report'], self.conductor.take_calls())
        heard_before = []

        def report_data(*args, **kwargs):
            heard_before.append(list(self.conductor.calls))
            raise messaging.MessagingTimeout('no answer')
        self.conductor.report_data = report_data
        reporter.keep_alive()
        self.assertEqual([['heartbeat']], heard_before)
        self.assertEqual(['heartbeat'], self.conductor.take_calls())
        self.assertIsNotNone(reporter._pending)

    def state_file_unconfirmed(self):
        return agent_state.load(self.state_file, 'cmp-1',
                                agent_reporter.report_hash).unconfirmed

    def test_a_restart_with_the_state_file_sends_no_report(self):
        self.started()
        again = self.reporter()
        again.keep_alive()
        self.assertEqual(['hello'], self.conductor.take_calls())

    def test_a_conductor_that_lost_us_gets_a_full_report(self):
        reporter = self.started()
        self.conductor.lose_track()
        reporter.keep_alive()
        self.assertEqual(['heartbeat'], self.conductor.take_calls())
        reporter.reregister(None)
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        self.assertEqual(self.conductor.report_hash, reporter.accepted_hash)

    def test_the_hello_carries_the_driver_statuses_of_now(self):
        hellos = []
        answer = self.conductor.agent_hello

        def agent_hello(context, hello, timeout=None):
            hellos.append([d.name for d in hello.drivers])
            return answer(context, hello, timeout)
        self.conductor.agent_hello = agent_hello
        reporter = self.started()
        self.statuses = []
        reporter.reregister(None)
        self.assertEqual([['fake_driver'], []], hellos)
