"""The version of an agent's report is chosen by the conductor RPC
client's ``can_send_version()``, under its version cap: a conductor of an
older release, served on oslo.messaging's in-process transport, refuses
a version it does not have; the agent's client is capped below it and
sends the version the cap allows until its next hello."""

import os

import fixtures
import oslo_messaging as messaging

from cyborg.agent import reporter as agent_reporter
from cyborg.common import context
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.unit.agent import test_reporter


class _OlderConductor:
    """A conductor of the release whose RPC API was ``version``: it takes
    ``report_data`` with what that version had."""

    def __init__(self, version):
        self.target = messaging.Target(version=version)
        self.reports = []

    @signing.host_method('hello', 'hostname')
    def agent_hello(self, context, hello):
        return host_obj.Host(hostname=hello.hostname, status='up',
                             report_generation=0)

    @signing.host_method('hostname')
    def agent_heartbeat(self, context, hostname):
        pass

    @signing.host_method('hostname')
    def report_data(self, context, hostname, devices, report_hash,
                    report_seq=None, hardware=None):
        self.reports.append((report_seq is not None, hardware is not None))
        return report_hash


class ReportVersionsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        state_dir = self.useFixture(fixtures.TempDir()).path
        self.flags(state_path=state_dir)
        self.useFixture(cyborg_fixtures.Messaging(self, self.conf, 'fake'))
        self.survey = test_reporter.Survey(self.conf)
        self.ctx = context.get_admin_context()

    def reporter(self, version):
        conductor = _OlderConductor(version)
        cyborg_fixtures.start_rpc_service(self, conductor,
                                          rpc.CONDUCTOR_TOPIC, 'ctl-1')
        client = conductor_rpcapi.ConductorAPI()
        reporter = agent_reporter.Reporter('cmp-1', self.conf, self.survey,
                                           lambda: [], client)
        return reporter, conductor, client

    def test_a_1_5_conductor_caps_the_client_until_the_next_hello(self):
        reporter, conductor, client = self.reporter('1.5')
        self.assertTrue(client.can_send_version('1.6'))
        reporter.keep_alive()
        # Refused at 1.6 by the conductor's dispatcher, then sent as 1.5:
        # a sequence, no hardware.
        self.assertEqual([(True, False)], conductor.reports)
        self.assertFalse(client.can_send_version('1.6'))
        self.assertTrue(client.can_send_version('1.5'))
        self.assertEqual(agent_reporter.report_hash(self.survey.devices),
                         reporter.accepted_hash)
        # The next report goes as 1.5 at once: the cap says so.
        self.survey.devices = []
        self.assertTrue(reporter.report(self.ctx))
        self.assertEqual([(True, False)] * 2, conductor.reports)
        # A hello lifts the cap (the conductor may have been upgraded).
        reporter.hello(self.ctx)
        self.assertTrue(client.can_send_version('1.6'))

    def test_a_1_1_conductor_gets_neither_sequence_nor_hardware(self):
        reporter, conductor, client = self.reporter('1.1')
        reporter.keep_alive()
        self.assertEqual([(False, False)], conductor.reports)
        self.assertFalse(client.can_send_version('1.5'))
        self.assertTrue(client.can_send_version('1.1'))

    def test_a_current_conductor_gets_everything_first(self):
        reporter, conductor, client = self.reporter(
            conductor_rpcapi.ConductorAPI.RPC_API_VERSION)
        reporter.keep_alive()
        self.assertEqual([(True, True)], conductor.reports)
        self.assertTrue(client.can_send_version('1.6'))
        self.assertTrue(os.path.exists(self.conf.agent.state_file))
