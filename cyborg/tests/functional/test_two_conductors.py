"""Two conductors on one database and one broker share the work: reports
of the same hosts, sent at once and out of order, each host's reports to
both conductors, end with the database and Placement showing each host's
last report."""

import collections
import concurrent.futures
import datetime
import functools
import uuid

from oslo_messaging.notify import _impl_test as notify_test

from cyborg.agent import reporter as agent_reporter
from cyborg.common import context
from cyborg.common import rpc
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import placement_sync
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional.test_reporting import get_test_device

HOSTS = 6
CONDUCTORS = ('ctl-1', 'ctl-2')


def versions(hostname):
    """Three successive reports of a host: devices come, change and go."""
    return [
        [get_test_device(hostname, 0), get_test_device(hostname, 1)],
        [get_test_device(hostname, 1, num=4), get_test_device(hostname, 2)],
        [get_test_device(hostname, 2, num=8), get_test_device(hostname, 3,
                                                              num=2)],
    ]


class _TwoConductorsTests:

    def setUp(self):
        super().setUp()
        self.use_database()
        # Both conductors consume the one conductor topic (in-process
        # messaging: they compete for each message as on RabbitMQ).
        self.useFixture(cyborg_fixtures.Messaging(self, self.conf, 'fake'))
        self.placement = self.useFixture(
            placement_fixture.Placement(self.conf))
        self.ctx = context.get_admin_context()
        self.taken = collections.defaultdict(set)
        self.managers = []
        for index, name in enumerate(CONDUCTORS):
            manager = conductor_manager.ConductorManager(name, self.conf)
            manager.report_data = self._counted(name, manager.report_data)
            self.managers.append(self.place(manager, index))
            cyborg_fixtures.start_rpc_service(self, manager,
                                              rpc.CONDUCTOR_TOPIC, name)
        self.api = conductor_rpcapi.ConductorAPI()
        # A client of each conductor. Which of two listeners on a shared
        # topic takes a message is up to the transport's timing (the fake
        # driver's first to wake drains a burst alone), so each report
        # is addressed to one conductor.
        self.apis = []
        for name in CONDUCTORS:
            api = conductor_rpcapi.ConductorAPI()
            api.client = api.client.prepare(server=name)
            self.apis.append(api)
        self.hosts = ['two-%s-%d' % (uuid.uuid4().hex[:6], i)
                      for i in range(HOSTS)]
        self.roots = {}
        for hostname in self.hosts:
            self.roots[hostname] = self.placement.create_compute_node(
                hostname)['uuid']
            self.api.agent_hello(self.ctx, host_obj.AgentHello(
                hostname=hostname, status='READY', endpoint=hostname,
                version='1', drivers=[]))

    def use_database(self):
        self.useFixture(cyborg_fixtures.Database(self, self.backend))

    def place(self, manager, index):
        """Conductor ``index`` (its manager) where it runs; here, all
        in one process on one database."""
        return manager

    def _counted(self, name, function):
        # wraps: the endpoint stays a host method (see signing).
        @functools.wraps(function)
        def report_data(context, hostname, devices, report_hash,
                        report_seq=None):
            self.taken[name].add(hostname)
            return function(context, hostname, devices, report_hash,
                            report_seq)
        return report_data

    def send(self, hostname, devices, seq):
        """Send a report as an agent does, with its sequence, to one
        conductor or the other by the sequence and the host; whether it
        was accepted."""
        digest = agent_reporter.report_hash(devices)
        api = self.apis[(seq + self.hosts.index(hostname)) % len(self.apis)]
        return api.report_data(self.ctx, hostname, devices, digest,
                               report_seq=seq, timeout=60) == digest

    def database_shows(self, hostname):
        with db_api.reader.using(self.ctx) as session:
            rows = (session.query(models.Deployable)
                    .join(models.Device,
                          models.Device.id == models.Deployable.device_id)
                    .filter(models.Device.hostname == hostname).all())
            return sorted((d.name, d.num_accelerators) for d in rows)

    def placement_shows(self, hostname):
        _, body = self.placement.get('/resource_providers?in_tree=%s'
                                     % self.roots[hostname])
        shown = []
        for provider in body['resource_providers']:
            if provider['uuid'] == self.roots[hostname]:
                continue
            self.assertEqual(placement_sync.provider_uuid(provider['name']),
                             provider['uuid'])
            _, inventories = self.placement.get(
                '/resource_providers/%s/inventories' % provider['uuid'])
            [inventory] = inventories['inventories'].values()
            shown.append((provider['name'], inventory['total']))
        return sorted(shown)

    def wanted(self, hostname):
        return [('%s_dev2' % hostname, 8), ('%s_dev3' % hostname, 2)]

    def test_reports_out_of_order_end_with_the_last_one(self):
        # Each host's three reports, sent at once in any order, with the
        # sequences their agent gave them in turn.
        burst = [(hostname, report, seq) for hostname in self.hosts
                 for seq, report in enumerate(versions(hostname), 1)]
        with concurrent.futures.ThreadPoolExecutor(len(burst)) as pool:
            # Not every report is accepted in a race; none may fail.
            accepted = list(pool.map(lambda item: self.send(*item), burst))
        # A host whose newest report was accepted shows it already.
        for (hostname, _report, seq), ok in zip(burst, accepted,
                                                strict=True):
            if ok and seq == 3:
                self.assertEqual(self.wanted(hostname),
                                 self.database_shows(hostname))
        # Each agent then sends its newest report until it is accepted.
        for hostname in self.hosts:
            last = versions(hostname)[-1]
            for seq in range(4, 14):
                if self.send(hostname, last, seq):
                    break
            else:
                self.fail('the last report of %s was never accepted'
                          % hostname)
        for hostname in self.hosts:
            self.assertEqual(self.wanted(hostname),
                             self.database_shows(hostname))
            self.assertEqual(self.wanted(hostname),
                             self.placement_shows(hostname))
        # Both conductors took reports of every host.
        self.assertEqual({name: set(self.hosts) for name in CONDUCTORS},
                         dict(self.taken))

    def sweep(self, index):
        """Conductor ``index``'s periodic liveness check."""
        self.managers[index].liveness.check_hosts()

    def test_heartbeats_and_sweeps_on_both_mark_each_silent_host_once(self):
        silent, alive = self.hosts[:HOSTS // 2], self.hosts[HOSTS // 2:]
        with db_api.writer.using(self.ctx) as session:
            session.query(models.Host).filter(
                models.Host.hostname.in_(silent)).update(
                {'last_seen_at': datetime.datetime(2000, 1, 1)},
                synchronize_session=False)
        del notify_test.NOTIFICATIONS[:]
        beats = [(index, hostname) for index in range(len(CONDUCTORS))
                 for hostname in alive for _ in range(3)]
        work = ([functools.partial(self.managers[i].agent_heartbeat,
                                   self.ctx, h) for i, h in beats]
                + [functools.partial(self.sweep, i)
                   for i in range(len(CONDUCTORS)) for _ in range(2)])
        with concurrent.futures.ThreadPoolExecutor(len(work)) as pool:
            # None fails: conflicting writes are retried.
            for future in [pool.submit(job) for job in work]:
                future.result()
        with db_api.reader.using(self.ctx) as session:
            status = dict(session.query(models.Host.hostname,
                                        models.Host.status).filter(
                models.Host.hostname.in_(self.hosts)))
        self.assertEqual(dict.fromkeys(silent, 'down')
                         | dict.fromkeys(alive, 'up'), status)
        down = [message['payload']['cyborg_object.data']['hostname']
                for _ctx, message, _priority, _retry
                in notify_test.NOTIFICATIONS
                if message['event_type'] == 'cyborg.host.down']
        self.assertEqual(sorted(silent), sorted(down))


class TwoConductorsMySQLTest(_TwoConductorsTests, base.TestCase):
    backend = 'mysql'


class TwoConductorsPostgreSQLTest(_TwoConductorsTests, base.TestCase):
    backend = 'postgresql'
