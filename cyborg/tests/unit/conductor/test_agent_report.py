"""The agent reports only what changed, and heartbeats otherwise."""

from cyborg.agent import manager as agent_manager
from cyborg.tests import base
from cyborg.tests import conductor_versions


class _Conductor(conductor_versions.RPCVersions):

    def __init__(self, accept=True):
        self.accept = accept
        self.sent = []

    def agent_hello(self, context, hello, timeout=None):
        self.sent.append('hello')

    def agent_heartbeat(self, context, hostname):
        self.sent.append('heartbeat')

    def report_data(self, context, hostname, devices, report_hash,
                    report_seq=None, hardware=None, timeout=None):
        self.timeout = timeout
        self.sent.append('report')
        return report_hash if self.accept else None


class _Broken:

    def discover(self):
        raise RuntimeError('no hardware today')


class AgentReportTest(base.TestCase):

    def _agent(self, conductor):
        self.flags(enabled_drivers=['fake_driver'], group='agent')
        agent = agent_manager.AgentManager('h1', self.conf)
        agent.reporter._conductor = conductor
        return agent

    def test_report_once_then_heartbeats(self):
        conductor = _Conductor()
        agent = self._agent(conductor)
        for _ in range(3):
            agent.reporter.keep_alive()
        self.assertEqual(['hello', 'report', 'heartbeat', 'heartbeat'],
                         conductor.sent)
        # A dead conductor must not hold the agent for rpc_response_timeout
        # (60 s): two heartbeat intervals (10 s by default), at least 10 s.
        self.assertEqual(20, conductor.timeout)

    def test_not_accepted_report_is_sent_again_with_heartbeat(self):
        conductor = _Conductor(accept=False)
        agent = self._agent(conductor)
        agent.reporter.keep_alive()
        agent.reporter.keep_alive()
        self.assertEqual(['hello', 'report', 'heartbeat', 'report'],
                         conductor.sent)
        self.assertIsNone(agent.reporter.accepted_hash)

    def test_failing_driver_does_not_stop_the_others(self):
        agent = self._agent(_Conductor())
        agent.drivers = dict(agent.drivers, broken=_Broken())
        devices = agent.get_hardware(None)
        self.assertEqual(1, len(devices))
