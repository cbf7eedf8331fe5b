"""Two cyborg-conductor processes carry the steady state of 50 simulated
compute hosts (:mod:`cyborg.sim`: the real agent
report protocol, each host signing with its own key) on RabbitMQ, MariaDB
and the real Placement: hellos, heartbeats, rescans and a trickle of
changes; a host that dies is marked down, and when a conductor dies the
other carries on. ``tools/bench/scale`` runs the same at thousands of
hosts."""

import os
import sys

import fixtures
import sqlalchemy as sa

from cyborg.common import keys
from cyborg.common import rpc
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.sim import hosts as simhosts
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import daemons
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for

HOSTS = 50
# Generous: these are waits for what must happen, on a loaded machine.
SETTLE = 180

class SeparatePlacement(placement_fixture.Placement):
    """The real Placement in a process of its own, on a MariaDB database
    of its own, as deployed: the shared test Placement serves from the
    test process, whose interpreter here also plays 50 hosts, on SQLite,
    whose writers take turns; on a loaded machine a host's first sync
    then took minutes (py-spy: its threads waiting for the one writer).
    Its requests are not counted (no ``requests()``).
    """

    def __init__(self, test, conf):
        super().__init__(conf)
        self.test = test

    def _setUp(self):
        url = sa.engine.make_url(cyborg_fixtures.server_database(
            self, 'mysql', 'placement_test'))
        state_dir = self.useFixture(fixtures.TempDir()).path
        port = daemons.free_port()
        server = daemons.Daemon(
            self, 'placement', [state_dir, url.render_as_string(
                hide_password=False), str(port)],
            os.path.join(state_dir, 'placement.log'),
            command=[sys.executable, '-c', placement_fixture.SERVER])
        endpoint = 'http://127.0.0.1:%d' % port
        daemons.wait_for_http(endpoint + '/', timeout=SETTLE, daemon=server)
        self.point_at(endpoint)


class TwoConductorsSteadyStateTest(test_daemons._Daemons, base.TestCase):

    backend = 'mysql'

    def config(self, name, host, **sections):
        sections.setdefault('placement', {
            'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': self.placement.endpoint})
        # Heartbeats every 2 s, written each second; a host silent for
        # 20 is down (more than twice the two plus a delivery delay of up
        # to 7 s, which a loaded CI machine sees). A conductor's lease on
        # the shared checks lasts 3 s.
        sections.setdefault('conductor', {'host_down_timeout': 20,
                                          'heartbeat_flush_interval': 1,
                                          'periodic_lease_timeout': 3,
                                          'liveness_check_interval': 1})
        return super().config(name, host, **sections)

    def setUp(self):
        super().setUp()
        # Two conductor processes starting on a loaded machine take a good
        # part of the default two minutes.
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.placement = self.useFixture(SeparatePlacement(self, self.conf))
        # This process plays the hosts, on the daemons' broker and topics,
        # with the keys the conductors read.
        rpc.register_opts(self.conf)
        self.flags(transport_url=self.transport_url,
                   rpc_topic_prefix='test-%s-' % os.path.basename(self.tmp))
        self.flags(key_dir=self.key_dir, group='security')
        os.makedirs(self.key_dir, exist_ok=True)
        # Plays compute hosts: a guest on the broker, as agents are.
        rpc.init(self.conf, keys.KeyStore(self.key_dir),
                 identity=keys.API)
        self.addCleanup(rpc.cleanup)
        tag = os.path.basename(self.tmp)[-6:]
        self.hostnames = ['sim-%s-%02d' % (tag, i) for i in range(HOSTS)]

    def database_shows(self):
        """{hostname: deployable names} as the database has them."""
        shown = {}
        with db_api.reader.using(self.ctx) as session:
            for name, hostname in session.query(
                    models.Deployable.name, models.Device.hostname).join(
                        models.Device,
                        models.Device.id == models.Deployable.device_id):
                shown.setdefault(hostname, []).append(name)
        return {host: sorted(names) for host, names in shown.items()}

    def placement_shows(self):
        _, body = self.placement.get(
            '/resource_providers?required=OWNER_CYBORG', microversion='1.22')
        return sorted(p['name'] for p in body['resource_providers'])

    def consistent(self, sim):
        """Every live host's current hardware accepted, and shown by the
        database and Placement alike."""
        if sim.out_of_sync():
            return False
        wanted = {host: names for host, names in sim.deployables().items()
                  if names}
        return (self.database_shows() == wanted
                and self.placement_shows() == sorted(
                    name for names in wanted.values() for name in names))

    def test_two_conductors_carry_fifty_hosts(self):
        conductors = [self.start('conductor', name)
                      for name in ('ctl-1', 'ctl-2')]
        for hostname in self.hostnames:
            self.placement.create_compute_node(hostname)
        # The storm hits conductors that listen: a call sent before a
        # conductor's queue exists is dropped by the broker, and its
        # agent learns that only when its call times out.
        wait_for(lambda: all('Started ConductorManager' in c.output()
                             for c in conductors), timeout=SETTLE,
                 interval=0.2)
        # The storm, then a worker for each host's heartbeat and rescan,
        # as a real agent runs each periodic task in a thread of its own:
        # a host waiting for an answer never holds another's heartbeat
        # back (they wait, they do not compute).
        sim = simhosts.SimHosts(self.conf, self.hostnames, self.key_dir,
                                state_dir=self.tmp, heartbeat_interval=2,
                                rescan_interval=3, change_interval=0.5,
                                threads=8, steady_threads=2 * HOSTS + 1)
        self.addCleanup(sim.stop)
        # The boot storm, in the steady state with its changes.
        sim.boot()
        wait_for(lambda: sim.counts['changes'] >= 4, timeout=SETTLE)
        sim.changing = False
        wait_for(lambda: self.consistent(sim), timeout=SETTLE, interval=0.5)
        # Several variants' hardware, and the trickle's cards, arrived.
        self.assertGreater(len({h.variant.name for h in sim.hosts.values()
                                if h.deployables()}), 3)
        self.assertTrue(any(h.extra for h in sim.hosts.values()))

        # A host dies: it is marked down, no other is.
        dead = [self.hostnames[0]]
        sim.kill(dead[0])
        wait_for(lambda: self.status(dead[0]) == 'down', timeout=SETTLE,
                 interval=0.5)

        # A conductor dies: the other takes every message from now on,
        # marks the next dead host down and applies the next change.
        conductors[0].kill()
        dead.append(self.hostnames[1])
        sim.kill(dead[1])
        sim.hosts[self.hostnames[2]].toggle_card(sim.rng)
        wait_for(lambda: self.status(dead[1]) == 'down', timeout=SETTLE,
                 interval=0.5)
        wait_for(lambda: self.consistent(sim), timeout=SETTLE, interval=0.5)
        self.assertTrue(conductors[1].running())

        # No host lost: every live one is up, the dead ones are down.
        statuses = {row.hostname: row.status
                    for row, _drivers in db_hosts.get_all(self.ctx)}
        self.assertEqual(
            {h: 'down' if h in dead else 'up' for h in self.hostnames},
            {h: s for h, s in statuses.items() if h in self.hostnames})
        self.assertEqual(0, sim.counts['errors'])
