"""Cyborg on a three-node RabbitMQ cluster with quorum queues, as Kolla-
Ansible and OpenStack-Ansible deploy it, with the node that leads the
conductor's queue killed, then started again, during a bind storm and a
report storm.

The cluster is the test's own (:mod:`rabbitcluster`), on a vhost whose
users and permissions are what ``cyborg-status keys broker`` prints (the
conductor's, the API's, the agent's), with its policy. Every daemon
lists the three nodes in ``transport_url`` and runs with
``[oslo_messaging_rabbit] rabbit_quorum_queue`` and
``rabbit_transient_quorum_queue``: every queue on the vhost is a quorum
queue, the heartbeat channel's included. The conductor, the API (whose
calls the binds are, as Nova makes them) and a real agent are separate
processes; this process also plays compute hosts (:mod:`cyborg.sim`)
whose reports are the report storm.

During each fault (the leader killed with SIGKILL, then started again)
Nova's binds and the hosts' reports keep coming. Afterwards: every bind
the API took ended Bound or BindFailed (none is left BindStarted), the
database shows every host's hardware as the host has it, no host was
marked down, and the daemons are the processes started at the beginning.
Printed per fault: the binds and how they ended, the reports converged,
and the seconds until a bind went through again and until the reports
converged (timings are printed, not asserted).
"""

import collections
import json
import os
import shlex
import threading
import time

import fixtures
from oslo_messaging._drivers import impl_rabbit
from oslo_utils import uuidutils
import requests

from cyborg.common import broker
from cyborg.common import heartbeats
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.sim import hosts as simhosts
from cyborg.tests import base
from cyborg.tests.functional import doc_commands
from cyborg.tests.functional import nova
from cyborg.tests.functional import rabbitcluster
from cyborg.tests.functional import test_daemons
from cyborg.tests.functional.test_hello import wait_for

VHOST = 'cyborg'
SIM_USER = 'cyborg-simulated-hosts'
#: Simulated compute hosts (the report storm).
HOSTS = 8
#: Nova's concurrent binds.
BINDERS = 4
FINAL = ('Bound', 'BindFailed')
#: Generous: waits for what must happen, on a loaded machine.
SETTLE = 120
#: What the daemons set (see config()): a host silent this long is down,
#: far longer than a node's failover.
HOST_DOWN_TIMEOUT = 40
#: The options of every daemon's and this process's RPC transport.
QUORUM = {'rabbit_quorum_queue': True,
          'rabbit_transient_quorum_queue': True,
          # A node that is gone is noticed at once anyway (its sockets
          # are reset); this bounds a silent one.
          'heartbeat_timeout_threshold': 10,
          'kombu_reconnect_delay': 0.5,
          'rabbit_retry_interval': 1}


class RabbitClusterTest(test_daemons.NovaStack, base.TestCase):

    def broker_url(self):
        self.cluster = rabbitcluster.RabbitCluster.started(self)
        self.cluster.ctl('add_vhost', VHOST)
        # The agent's host, as start_stack names it.
        agent_host = 'cmp-%s' % os.path.basename(self.tmp)[-8:]
        self.users = [(broker.user_name(broker.CONDUCTOR), broker.CONDUCTOR,
                       None),
                      (broker.user_name(broker.API), broker.API, None),
                      (broker.user_name(broker.AGENT, agent_host),
                       broker.AGENT, agent_host)]
        # This process, which plays many hosts, on a user of its own
        # with the conductor's permissions (each real agent has its own).
        self.users.append((SIM_USER, broker.CONDUCTOR, None))
        for user, role, host in self.users:
            self.cluster.ctl('add_user', user, 'pw-' + user)
            for command in broker.commands(user, role, host, vhost=VHOST):
                self.cluster.ctl(*command)
        return self.url(broker.user_name(broker.CONDUCTOR))

    def url(self, user):
        return self.cluster.transport_url(user, 'pw-' + user, VHOST)

    def config(self, name, host, **sections):
        sections.setdefault('oslo_messaging_rabbit', dict(QUORUM))
        defaults = sections.setdefault('DEFAULT', {})
        # The names the broker permissions are made for.
        defaults.update(rpc_topic_prefix='')
        if name.startswith('api-'):
            defaults.update(transport_url=self.url(broker.user_name(
                broker.API)), rpc_response_timeout=20)
        elif name.startswith('agent-'):
            defaults.update(transport_url=self.url(broker.user_name(
                broker.AGENT, host)))
        sections.setdefault('conductor', {
            'host_down_timeout': HOST_DOWN_TIMEOUT,
            'liveness_check_interval': 1, 'heartbeat_flush_interval': 1})
        return super().config(name, host, **sections)

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.daemons = []

    def start(self, name, host):
        daemon = super().start(name, host)
        self.daemons.append(daemon)
        return daemon

    # -- the simulated hosts -------------------------------------------------

    def start_hosts(self):
        """This process's compute hosts, with their own keys."""
        rpc.register_opts(self.conf)
        self.conf.register_opts(impl_rabbit.rabbit_opts,
                                group='oslo_messaging_rabbit')
        self.flags(transport_url=self.url(SIM_USER), rpc_topic_prefix='',
                   control_exchange='cyborg')
        self.flags(group='oslo_messaging_rabbit', **QUORUM)
        self.flags(key_dir=self.key_dir, group='security')
        rpc.init(self.conf, keys.KeyStore(self.key_dir), identity=keys.API)
        self.addCleanup(rpc.cleanup)
        tag = os.path.basename(self.tmp)[-6:]
        self.hostnames = ['rq-%s-%02d' % (tag, i) for i in range(HOSTS)]
        for hostname in self.hostnames:
            self.placement.create_compute_node(hostname)
        sim = simhosts.SimHosts(self.conf, self.hostnames, self.key_dir,
                                state_dir=self.tmp, heartbeat_interval=2,
                                rescan_interval=1, change_interval=0,
                                threads=HOSTS, steady_threads=2 * HOSTS + 1)
        self.addCleanup(sim.stop)
        return sim

    def database_shows(self):
        shown = collections.defaultdict(list)
        with db_api.reader.using(self.ctx) as session:
            for name, hostname in session.query(
                    models.Deployable.name, models.Device.hostname).join(
                        models.Device,
                        models.Device.id == models.Deployable.device_id
                    ).filter(models.Device.hostname.in_(self.hostnames)):
                shown[hostname].append(name)
        return {host: sorted(names) for host, names in shown.items()}

    def converged(self, sim):
        """Every host's current hardware accepted and in the database."""
        return not sim.out_of_sync() and self.database_shows() == {
            host: names for host, names in sim.deployables().items()
            if names}

    def report_storm(self, sim):
        """Every host gains or loses a card at once: each reports."""
        for host in sim.hosts.values():
            host.toggle_card(sim.rng)

    # -- Nova's binds --------------------------------------------------------

    def bind_once(self, profile, rp_uuid):
        """One instance's ARQ, created, bound and deleted as Nova does;
        (its uuid or None, the bind's HTTP status or an error's name,
        the ARQ's state after the bind)."""
        instance = uuidutils.generate_uuid()
        arqs_url = self.base + nova.ARQS
        try:
            response = requests.post(arqs_url, timeout=60,
                                     headers=nova.USER_AND_SERVICE,
                                     json={'device_profile_name': profile})
            if response.status_code != 201:
                return None, 'create %d' % response.status_code, None
            [arq] = response.json()['arqs']
            response = requests.patch(
                arqs_url, timeout=60, headers=nova.USER_AND_SERVICE,
                json={arq['uuid']: [
                    {'op': 'add', 'path': path, 'value': value}
                    for path, value in (('/hostname', self.hostname),
                                        ('/device_rp_uuid', rp_uuid),
                                        ('/instance_uuid', instance))]})
            status = response.status_code
        except requests.RequestException as e:
            return None, type(e).__name__, None
        state = db_arqs.get(self.ctx, arq['uuid']).state
        if state in FINAL:
            # The deployable's handle is free for the next one (a failed
            # delete leaves the ARQ, checked at the end all the same).
            try:
                requests.delete(arqs_url, params={'instance': instance},
                                timeout=60, headers=nova.USER_AND_SERVICE)
            except requests.RequestException:
                pass
        return arq['uuid'], status, state

    def bind_storm(self, profile, rp_uuid):
        """Nova's binds, BINDERS at a time, until ``stop`` is set;
        returns (stop, threads, results: (began, ended, arq, status,
        state) each)."""
        stop = threading.Event()
        results = []

        def binder():
            while not stop.is_set():
                began = time.monotonic()
                outcome = self.bind_once(profile, rp_uuid)
                results.append((began, time.monotonic()) + outcome)

        threads = [threading.Thread(target=binder, daemon=True)
                   for _ in range(BINDERS)]
        for thread in threads:
            thread.start()
        return stop, threads, results

    # -- liveness ------------------------------------------------------------

    def watch_down(self):
        """The hosts (of this test) ever seen down, polled until the test
        ends."""
        seen = set()
        stop = threading.Event()
        self.addCleanup(stop.set)
        names = set(self.hostnames) | {self.hostname}

        def watch():
            while not stop.wait(0.5):
                try:
                    with db_api.reader.using(self.ctx) as session:
                        down = {h for (h,) in session.query(
                            models.Host.hostname).filter(
                                models.Host.status == 'down')}
                except Exception:  # noqa: S112 - the next poll tries again
                    continue
                seen.update(down & names)

        threading.Thread(target=watch, daemon=True).start()
        return seen

    # -- the faults ----------------------------------------------------------

    def leader(self):
        """The node leading the conductor's queue (once one does)."""
        def found():
            try:
                return self.cluster.leader_of('cyborg-conductor',
                                              VHOST) + 1
            except AssertionError:
                return None
        return wait_for(found, timeout=SETTLE, interval=0.5) - 1

    def fault(self, name, node, act, profile, rp_uuid, sim):
        """Binds and reports during ``act()``, the fault of ``node``;
        the binds' results, and the connections the node had (before
        the fault)."""
        stop, threads, results = self.bind_storm(profile, rp_uuid)
        time.sleep(2)
        connections = self.cluster.connections()
        self.report_storm(sim)
        at = time.monotonic()
        act()
        acted = time.monotonic()
        converged = wait_for(lambda: self.converged(sim) and time.monotonic(),
                             timeout=SETTLE, interval=0.5)
        # Binds go on until one begun after the fault went through.
        try:
            wait_for(lambda: any(r[0] >= acted and r[4] in FINAL
                                 and r[3] == 202 for r in results),
                     timeout=SETTLE, interval=0.2)
        finally:
            stop.set()
            for thread in threads:
                thread.join(120)
        first = min(r[1] for r in results
                    if r[0] >= acted and r[3] == 202 and r[4] in FINAL)
        numbers = {
            'fault': name,
            'connections on the node': connections.get(node, {}),
            'binds': len(results),
            'ended': dict(collections.Counter(
                r[4] or str(r[3]) for r in results)),
            'answers': dict(collections.Counter(str(r[3]) for r in results)),
            'hosts converged': HOSTS - len(sim.out_of_sync()),
            'fault s': round(acted - at, 1),
            'bind back s': round(first - at, 1),
            'reports converged s': round(converged - at, 1),
        }
        print('RABBIT CLUSTER %s' % numbers)
        return results, connections.get(node, {})

    def test_node_killed_and_restarted_under_binds_and_reports(self):
        rp_uuid, profile = self.start_stack()
        pids = {d.name: d.process.pid for d in self.daemons}
        sim = self.start_hosts()
        sim.boot()
        wait_for(lambda: self.converged(sim), timeout=SETTLE, interval=0.5)
        down = self.watch_down()

        # Every queue on the vhost is a quorum queue, with a member on
        # each node: the conductor's, the agents', the fanout and reply
        # queues, the heartbeat channel's.
        queues = self.cluster.queues(VHOST)
        self.assertIn(heartbeats.queue_name(self.conf, quorum=True), queues)
        self.assertIn('cyborg-conductor', queues)
        self.assertIn('cyborg-agent.%s' % self.hostname, queues)
        self.assertEqual(
            {name: 'quorum' for name in queues},
            {name: kind for name, (kind, _l, _m) in queues.items()})
        self.assertEqual(
            {name: 3 for name in queues},
            {name: len(members or ()) for name, (_k, _l, members)
             in queues.items()})

        # The policy cyborg-status keys broker prints bounds the RPC
        # queues, quorum queues as they are.
        policies = {row['name']: row['policy'] for row in json.loads(
            self.cluster.ctl('list_queues', '-p', VHOST, '--quiet',
                             '--formatter', 'json', 'name', 'policy'))}
        name, _pattern, _definition = broker.policy()
        self.assertEqual(
            {'cyborg-conductor': name, 'cyborg-conductor.ctl-1': name,
             'cyborg-agent.%s' % self.hostname: name},
            {queue: policies[queue] for queue in (
                'cyborg-conductor', 'cyborg-conductor.ctl-1',
                'cyborg-agent.%s' % self.hostname)})

        leader = self.leader()
        results, lost = self.fault('kill node %d' % (leader + 1), leader,
                                   lambda: self.cluster.kill(leader),
                                   profile, rp_uuid, sim)
        # The conductor's connection that declared its queue was there
        # (RabbitMQ puts a quorum queue's leader on the declaring
        # client's node): the kill cut it, and the conductor went on.
        self.assertIn(broker.user_name(broker.CONDUCTOR), lost)
        self.assertNotEqual(leader, self.leader())
        more, _ = self.fault(
            'restart node %d' % (leader + 1), leader,
            lambda: self.assertTrue(self.cluster.start(leader),
                                    self.cluster.problem),
            profile, rp_uuid, sim)
        results += more

        # Every bind the API took ended Bound or BindFailed; a bind whose
        # answer was lost still ended so (or never began: Initial).
        took = [r for r in results if r[2] is not None]
        states = {r[2]: db_arqs.get(self.ctx, r[2]).state for r in took
                  if r[3] != 202 and self._exists(r[2])}
        self.assertEqual([], [r for r in took if r[3] == 202
                              and r[4] not in FINAL])
        self.assertEqual({}, {u: s for u, s in states.items()
                              if s not in FINAL + ('Initial',)})
        self.assertGreater(sum(1 for r in took if r[4] == 'Bound'), 0)
        # No report lost: the database holds what the hosts hold.
        self.assertTrue(self.converged(sim))
        # No live host was marked down, ever.
        self.assertEqual(set(), down)
        self.assertEqual(0, sim.counts['errors'])
        # The daemons are the processes started first, and still work.
        self.assertEqual(pids, {d.name: d.process.pid for d in self.daemons
                                if d.running()})
        self.assertEqual((202, 'Bound'),
                         self.bind_once(profile, rp_uuid)[1:])
        self.assertEqual(
            ['quorum'], sorted({kind for kind, _l, _m
                                in self.cluster.queues(VHOST).values()}))

    def _exists(self, uuid):
        try:
            db_arqs.get(self.ctx, uuid)
            return True
        except Exception:
            return False


class PageTest(base.TestCase):
    """The page on RabbitMQ clusters shows the conductors' permissions
    and policy as cyborg-status keys broker prints them (which the
    cluster test applies)."""

    PAGE = 'doc/source/admin/rabbitmq-cluster.rst'

    def test_the_page_shows_the_printed_commands(self):
        shown = [shlex.split(line)[1:] for command in doc_commands.commands()
                 if command.page == self.PAGE
                 for line in command.text.replace('\\\n', ' ').splitlines()
                 if line.startswith('rabbitmqctl set_')]
        self.assertEqual(broker.commands(
            broker.user_name(broker.CONDUCTOR), broker.CONDUCTOR,
            vhost=VHOST), shown)
