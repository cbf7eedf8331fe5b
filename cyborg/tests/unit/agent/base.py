"""Agents on captured sysfs trees, talking to a conductor that keeps what
it accepted the way the real one does."""

import os

import fixtures
import oslo_messaging as messaging

from cyborg.agent import manager as agent_manager
from cyborg.common import exception
from cyborg.objects import host as host_obj
from cyborg.tests import conductor_versions
from cyborg.tests.unit.accelerator import sysfs

DRIVERS = ['nvidia_gpu_driver', 'intel_qat_driver']
GPU = '0000:3b:00.0'
QAT = '0000:3d:00.0'
SECOND_GPU = '0000:5e:00.0'


class Conductor(conductor_versions.RPCVersions):
    """The conductor's side of the agent's RPC: it records the calls, and
    like the real one keeps the hash of the last report it applied, bumps
    the host's report generation on a new one, and answers HostNotFound
    for a host it does not know."""

    def __init__(self):
        self.calls = []
        self.known = False
        self.generation = 0
        self.report_hash = None
        self.devices = None
        self.hardware = None
        self.accept = True
        self.down = False
        # The sequences of the reports sent, and the newest applied.
        self.seqs = []
        self.report_seq = None

    def _answer(self, call):
        if isinstance(self.down, Exception):
            raise self.down  # the conductor's database is down, say
        if self.down:
            raise messaging.MessagingTimeout('no conductor')
        self.calls.append(call)

    def agent_hello(self, context, hello, timeout=None):
        self._answer('hello')
        self.known = True
        return host_obj.Host(hostname=hello.hostname, status='up',
                             report_generation=self.generation,
                             report_seq=self.report_seq)

    def agent_heartbeat(self, context, hostname):
        self._answer('heartbeat')

    def report_data(self, context, hostname, devices, report_hash,
                    report_seq=None, hardware=None, timeout=None):
        self._answer('report')
        self.seqs.append(report_seq)
        if not self.known:
            raise exception.HostNotFound(host=hostname)
        if report_seq is not None:
            if self.report_seq is not None and report_seq < self.report_seq:
                return None
            self.report_seq = report_seq
        if report_hash != self.report_hash:
            self.generation += 1
            self.devices = devices
            self.hardware = hardware
            self.report_hash = report_hash if self.accept else None
        return self.report_hash

    def lose_track(self):
        """A new database: the host and its report are gone."""
        self.__init__()

    def take_calls(self):
        calls, self.calls = self.calls, []
        return calls

    def names(self):
        """Deployable names of the last report applied."""
        return sorted(dep.name for device in self.devices or []
                      for dep in device.deployable_list)


class AgentTestCase(sysfs.SysfsTestCase):
    """A captured tree with a GPU and a QAT card, and an empty state
    directory."""

    def setUp(self):
        super().setUp()
        self.state_dir = self.useFixture(fixtures.TempDir()).path
        self.flags(state_path=self.state_dir)
        self.flags(enabled_drivers=DRIVERS, group='agent')
        self.state_file = os.path.join(self.state_dir, 'agent-state.json')
        self.tree.add_card('tesla_t4', GPU)
        self.tree.add_card('qat_c62x', QAT, vfs=2)
        self.conductor = Conductor()

    def agent(self, conductor=None):
        agent = agent_manager.AgentManager(self.HOST, self.conf)
        agent.reporter._conductor = conductor or self.conductor
        return agent

    def started_agent(self):
        """An agent that said hello and reported."""
        agent = self.agent()
        agent.reporter.keep_alive()
        self.assertEqual(['hello', 'report'], self.conductor.take_calls())
        return agent

    def name(self, address):
        return 'cmp-1_example_org_%s' % address.replace(':', '_').replace(
            '.', '_')
