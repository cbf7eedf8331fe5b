"""The real Nova's servers survive the switch from upstream Cyborg.

Run by ``tools/nova-e2e`` (``CYBORG_NOVA_E2E_VENV``; skipped without it).
Nova boots servers with accelerators from OpenStack Cyborg 17.0.0 (its
API, conductor and agent with its fake driver, on MariaDB, with a
standalone Placement: ``upstream_cloud.UpstreamNovaCloud``); then
upstream's services stop, ``cyborg-dbsync adopt --from`` copies its
database into ours, and cyborg-aio takes its place on the endpoint Nova
knows. ``cyborg-status upgrade check`` finds the adoption complete and
consistent with Placement. The servers are rebooted, rebuilt, shelved,
offloaded, unshelved and deleted through Nova, and every ARQ and every
Placement allocation ends as Nova expects.
"""

import os
import tempfile

import sqlalchemy as sa

from cyborg.db import models

from cyborg.tests.e2e import base
from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import standins
from cyborg.tests.e2e import upstream_cloud
from cyborg.tests.functional import upstream
from cyborg.tests import services

PROFILE = 'e2e-upstream-one'
GROUPS = [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]
SERVERS = 2
CARD_SIZE = 16


class ServersSurviveTheTakeOverTest(base.E2ETestCase):
    """Its cloud is made in each test (``start_cloud`` starts none)."""

    def setUp(self):
        super().setUp()
        workdir = tempfile.mkdtemp(
            prefix='adopt-', dir=os.environ.get(base.WORKDIR_ENV))
        try:
            self.cloud = upstream_cloud.UpstreamNovaCloud(self.venv, workdir)
        except upstream.Unavailable as e:
            services.unavailable(self, str(e))
        self.useFixture(self.cloud)

    # -- helpers ----------------------------------------------------------

    def bound(self, server):
        """The server's one ARQ, Bound on the card, and its allocation."""
        [arq] = self.cloud.arqs(server)
        self.assertEqual(('Bound', e2e.HOST, self.card, server),
                         (arq['state'], arq['hostname'],
                          arq['device_rp_uuid'], arq['instance_uuid']))
        self.assertEqual({'FPGA': 1}, self.cloud.allocations(server).get(
            self.card, {}).get('resources'))
        # Upstream's links carry "/accelerator" wherever it is served.
        return {k: v for k, v in arq.items() if k != 'links'}

    def card_state(self):
        """What cyborg's first report must not change in Placement."""
        provider = self.cloud.placement('/resource_providers/%s' % self.card)
        return (provider['generation'], provider['name'],
                self.cloud.placement('/resource_providers/%s/inventories'
                                     % self.card)['inventories'],
                sorted(self.cloud.placement('/resource_providers/%s/traits'
                                            % self.card)['traits']))

    # -- the scenario -----------------------------------------------------

    def test_servers_booted_with_upstream_live_on_under_cyborg(self):
        cloud = self.cloud
        self.card = self.only_device()
        base.add_profiles(cloud, {PROFILE: GROUPS})
        flavor = base.add_flavor(cloud, 'e2e.upstream', PROFILE)
        servers = [self.create_server(flavor, 'upstream-%d' % i)
                   for i in range(SERVERS)]
        for server in servers:
            self.wait_for(server, 'ACTIVE')
        arqs = {server: self.bound(server) for server in servers}
        self.assertEqual({'FPGA': SERVERS}, cloud.usages(self.card))
        before = self.card_state()

        # The switch.
        mark = cloud.placement_log.mark()
        adopted = cloud.take_over()
        self.assertIn('extended_accelerator_requests %d' % SERVERS,
                      adopted)
        e2e.wait(self._confirmed, 120, 'the adopted host confirmed')
        self.assertEqual([], [r for r in cloud.placement_log.since(mark)
                              if r[0] != 'GET' and 'nova' not in r[2]])
        self.assertEqual(before, self.card_state())
        self.assertEqual(arqs, {s: self.bound(s) for s in servers})
        self.assertIn('Result: Success', self._adoption_check())

        # Nova's operations on the adopted servers, against cyborg.
        first, second = servers
        self.action(first, {'reboot': {'type': 'HARD'}})
        self.wait_for(first, 'ACTIVE')
        self.assertEqual(arqs[first], self.bound(first))
        self.action(first, {'shelve': None})
        self.wait_for(first, 'SHELVED')
        self.action(first, {'shelveOffload': None}, admin=True)
        self.wait_for(first, 'SHELVED_OFFLOADED')
        self.assertEqual([], cloud.arqs(first))
        self.assertEqual({}, cloud.allocations(first))
        self.action(first, {'unshelve': None})
        self.wait_for(first, 'ACTIVE')
        self.assertNotEqual(arqs[first]['uuid'], self.bound(first)['uuid'])
        self.assertEqual({'FPGA': SERVERS}, cloud.usages(self.card))
        self.action(second, {'rebuild': {'imageRef': standins.IMAGE_ID}})
        self.wait_for(second, 'ACTIVE')
        self.assertEqual(arqs[second], self.bound(second))

        for server in servers:
            self.delete(server)
        self.assertEqual([], cloud.arqs())
        self.assertEqual({'FPGA': 0}, cloud.usages(self.card))
        self.assertEqual((CARD_SIZE, 0), self._handles())
        self.assertEqual([], cloud.proxy.failures)

    def _confirmed(self):
        self.cloud.check_running()
        refused = self.cloud.log_lines(
            'cyborg-aio', 'reports its devices otherwise than upstream')
        if refused:
            raise AssertionError('\n'.join(refused))
        return self.cloud.log_lines(
            'cyborg-aio', 'adopted from upstream Cyborg, is confirmed')

    def _adoption_check(self):
        """The lines of ``cyborg-status upgrade check`` about the
        adoption: from its check's name to the next check's."""
        if not hasattr(self, '_check_output'):
            self._check_output = self.cloud.upgrade_check()
        lines = self._check_output.splitlines()
        start = [i for i, line in enumerate(lines)
                 if 'Adoption of upstream Cyborg' in line]
        if not start:
            raise AssertionError(self._check_output)
        end = [i for i, line in enumerate(lines)
               if i > start[0] and 'Check:' in line] or [len(lines)]
        return '\n'.join(lines[start[0]:end[0]])

    def _handles(self):
        """(attach handles, those in use) in cyborg's database."""
        engine = sa.create_engine(self.cloud.database_url)
        self.addCleanup(engine.dispose)
        table = models.AttachHandle.__table__
        with engine.connect() as connection:
            return (connection.execute(sa.select(sa.func.count()).select_from(
                table)).scalar(), connection.execute(
                sa.select(sa.func.count()).select_from(table).where(
                    table.c.in_use)).scalar())
