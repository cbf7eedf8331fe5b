"""A real agent on a captured sysfs tree and a real conductor, with a real
database and Placement: devices added to and removed from the tree reach
both without a restart, and a restarted agent on an unchanged host sends
no report."""

import os
import uuid

import fixtures

from cyborg.accelerator.common import records
from cyborg.agent import manager as agent_manager
from cyborg.common import context
from cyborg.common import rpc
from cyborg.conductor import manager as conductor_manager
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

GPU = '0000:3b:00.0'
QAT = '0000:3d:00.0'
SECOND_GPU = '0000:5e:00.0'


def rescan_config(test, sysfs_root):
    """Drivers on the tree, a one second rescan, the state file in a
    directory of the test's own."""
    test.flags(sysfs_root=sysfs_root, rescan_interval=1,
               heartbeat_interval=1,
               enabled_drivers=['nvidia_gpu_driver', 'intel_qat_driver'],
               group='agent')
    test.flags(state_path=test.useFixture(fixtures.TempDir()).path)


class InventoryView:
    """What the database and Placement show of host ``self.host`` (its
    compute node provider ``self.root``)."""

    def deployables(self):
        with db_api.reader.using(self.ctx) as session:
            return sorted(d.name for d in session.query(models.Deployable))

    def providers(self):
        _, body = self.placement.get('/resource_providers?in_tree=%s'
                                     % self.root['uuid'])
        return sorted(rp['name'] for rp in body['resource_providers']
                      if rp['uuid'] != self.root['uuid'])

    def shows(self, addresses):
        """Whether both hold exactly the deployables of ``addresses``."""
        names = sorted(records.deployable_name(self.host, a)
                       for a in addresses)
        return self.deployables() == names and self.providers() == names


class AgentRescanTest(InventoryView, base.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = placement_fixture.in_process_stack(self)
        self.tree = sysfs.SysfsTree(self.useFixture(
            fixtures.TempDir()).path)
        self.tree.add_card('tesla_t4', GPU)
        self.tree.add_card('qat_c62x', QAT, vfs=2)
        rescan_config(self, self.tree.root)
        self.host = 'rescan-%s' % uuid.uuid4().hex[:10]
        self.flags(host=self.host)
        self.root = self.placement.create_compute_node(self.host)
        self.ctx = context.get_admin_context()
        self.reports = []
        conductor = conductor_manager.ConductorManager('cond', self.conf)
        report_data = conductor.report_data

        def counted(context, hostname, devices, report_hash,
                    report_seq=None, hardware=None):
            self.reports.append(report_hash)
            return report_data(context, hostname, devices, report_hash,
                               report_seq, hardware)
        conductor.report_data = counted
        cyborg_fixtures.start_rpc_service(self, conductor,
                                          rpc.CONDUCTOR_TOPIC, 'cond')

    def start_agent(self):
        return cyborg_fixtures.start_rpc_service(
            self, agent_manager.AgentManager(self.host, self.conf),
            rpc.AGENT_TOPIC, self.host)

    def test_tree_edits_reach_the_conductor_without_a_restart(self):
        agent = self.start_agent()
        vfs = ['0000:3d:01.0', '0000:3d:01.1']
        wait_for(lambda: self.shows([GPU] + vfs))
        self.tree.add_card('tesla_t4', SECOND_GPU)
        wait_for(lambda: self.shows([GPU, SECOND_GPU] + vfs), timeout=10)
        self.tree.remove(GPU)
        wait_for(lambda: self.shows([SECOND_GPU] + vfs), timeout=10)
        # One report at start and one per edit.
        self.assertEqual(3, len(set(self.reports)))
        state_file = os.path.join(self.conf.state_path, 'agent-state.json')
        self.assertTrue(os.path.exists(state_file))

        # A restart on an unchanged host: hello and heartbeats only.
        agent.stop()
        sent = len(self.reports)
        agent = self.start_agent()
        wait_for(lambda: agent.manager.reporter.registered)
        before = self.host_last_seen()
        wait_for(lambda: self.host_last_seen() > before, timeout=10)
        self.assertEqual(sent, len(self.reports))
        # A change while it was stopped is found at its start.
        agent.stop()
        self.tree.remove(QAT)
        self.start_agent()
        wait_for(lambda: self.shows([SECOND_GPU]), timeout=10)
        self.assertEqual(4, len(set(self.reports)))

    def host_last_seen(self):
        with db_api.reader.using(self.ctx) as session:
            return session.query(models.Host).filter_by(
                hostname=self.host).one().last_seen_at
