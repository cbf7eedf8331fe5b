"""The steady state at scale: the conductors' lease on the periodic checks,
what an idle round of those checks costs with many hosts, and two
conductors, one of which dies, keeping watch over hosts that send
heartbeats to both."""

import concurrent.futures
import datetime
import threading

from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.common import context
from cyborg.common import rpc
from cyborg.conductor import leases
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import leases as db_leases
from cyborg.db import models
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional.test_hello import wait_for


def add_hosts(prefix, count, last_seen=None):
    """``count`` up hosts, in one INSERT; their names."""
    now = timeutils.utcnow().replace(microsecond=0)
    names = ['%s-%05d' % (prefix, i) for i in range(count)]
    with db_api.writer.using(context.get_admin_context()) as session:
        session.execute(sa.insert(models.Host), [
            {'hostname': name, 'status': 'up', 'endpoint': name,
             'version': '1', 'last_seen_at': last_seen or now,
             'report_generation': 0, 'sync_pending': False,
             'adopted': False, 'created_at': now} for name in names])
    return names


class StatementLog:
    """The SQL statements run on ``engine`` (BEGIN and COMMIT aside), with
    their parameters, from now until the test ends."""

    def __init__(self, test, engine):
        self.run = []

        def record(_conn, _cursor, statement, parameters, *_args):
            verb = statement.split()[0].upper()
            if verb not in ('BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT',
                            'RELEASE'):
                self.run.append((verb, statement, parameters))
        sa.event.listen(engine, 'before_cursor_execute', record)
        test.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        record)

    def verbs(self):
        return [verb for verb, _statement, _parameters in self.run]

    def clear(self):
        del self.run[:]


class _LeaseTests:

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(cyborg_fixtures.Database(self, self.backend))
        self.ctx = context.get_admin_context()

    def expire(self, name):
        with db_api.writer.using(self.ctx) as session:
            session.query(models.ConductorLease).filter_by(name=name).update(
                {'expires_at': timeutils.utcnow() -
                 datetime.timedelta(seconds=5)})

    def test_one_holder_until_it_expires_or_is_released(self):
        self.assertTrue(db_leases.take(self.ctx, 'p', 'ctl-1', 30))
        self.assertFalse(db_leases.take(self.ctx, 'p', 'ctl-2', 30))
        # The holder renews it.
        self.assertTrue(db_leases.take(self.ctx, 'p', 'ctl-1', 30))
        self.assertEqual('ctl-1', db_leases.holder_of(self.ctx, 'p')[0])
        # Expired, it goes to the first that asks.
        self.expire('p')
        self.assertTrue(db_leases.take(self.ctx, 'p', 'ctl-2', 30))
        self.assertFalse(db_leases.take(self.ctx, 'p', 'ctl-1', 30))
        # Released, it goes at once; only its holder releases it.
        self.assertFalse(db_leases.release(self.ctx, 'p', 'ctl-1'))
        self.assertTrue(db_leases.release(self.ctx, 'p', 'ctl-2'))
        self.assertTrue(db_leases.take(self.ctx, 'p', 'ctl-1', 30))
        # Another lease is another row.
        self.assertTrue(db_leases.take(self.ctx, 'q', 'ctl-2', 30))

    def test_many_takers_at_once_one_wins(self):
        barrier = threading.Barrier(8)

        def take(holder):
            barrier.wait()
            return db_leases.take(context.get_admin_context(), 'p', holder,
                                  30)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            won = list(pool.map(take, ['ctl-%d' % i for i in range(8)]))
        self.assertEqual(1, won.count(True), won)
        self.assertEqual('ctl-%d' % won.index(True),
                         db_leases.holder_of(self.ctx, 'p')[0])

    def test_a_conductor_asks_the_database_a_third_of_the_time(self):
        self.flags(periodic_lease_timeout=3600, group='conductor')
        one = leases.Lease(self.conf, holder='ctl-1')
        two = leases.Lease(self.conf, holder='ctl-2')
        log = StatementLog(self, self.db.engine)
        self.assertTrue(one.held())
        self.assertFalse(two.held())
        log.clear()
        # Neither asks again before a third of the timeout has passed.
        for _ in range(5):
            self.assertTrue(one.held())
            self.assertFalse(two.held())
        self.assertEqual([], log.verbs())
        # A clean stop hands it over at the other's next try.
        one.release()
        self.assertFalse(one.held())
        two._next = 0.0
        self.assertTrue(two.held())
        one._next = 0.0
        ran = []
        self.assertIsNone(one.guard(lambda: ran.append(1))())
        two.guard(lambda: ran.append(2))()
        self.assertEqual([2], ran)
        self.assertEqual('ctl-2', db_leases.holder_of(self.ctx,
                                                      leases.PERIODIC)[0])


class LeaseSQLiteTest(_LeaseTests, base.TestCase):
    backend = 'sqlite'

    def test_many_takers_at_once_one_wins(self):
        self.skipTest('SQLite serialises its writers: nothing to race')


class LeaseMySQLTest(_LeaseTests, base.TestCase):
    backend = 'mysql'


class LeasePostgreSQLTest(_LeaseTests, base.TestCase):
    backend = 'postgresql'


class _IdleSweepTests:
    """An idle round of the periodic checks costs the same statements
    with 1 host or many, and each reads through an index."""

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(cyborg_fixtures.Database(self, self.backend))
        # Nova configured, so that the stuck-ARQ check reads too.
        self.conf.set_override('auth_type', 'admin_token', group='nova')
        self.manager = conductor_manager.ConductorManager('ctl-1', self.conf)

    def sweep(self):
        """One run of each periodic task; the statements each ran."""
        log = StatementLog(self, self.db.engine)
        ran = {}
        for _interval, task in self.manager.periodic_tasks():
            log.clear()
            task()
            # Qualified: Binding.check and StuckARQs.check.
            ran[task.__qualname__] = list(log.run)
        return ran

    def verbs(self, ran):
        return {name: [verb for verb, _s, _p in run]
                for name, run in ran.items()}

    def test_idle_sweep_costs_the_same_with_many_hosts(self):
        add_hosts('one', 1)
        self.sweep()  # the lease is taken
        few = self.verbs(self.sweep())
        add_hosts('many', 3000)
        many = self.sweep()
        self.assertEqual(few, self.verbs(many))
        # Nothing heard, nothing changed: no write at all, one read per
        # check (the stale binds and Nova's events: two).
        self.assertEqual({
            'Liveness.flush_heartbeats': [],
            'Liveness.check_hosts': ['SELECT'],
            'ConductorManager._purge_rpc_nonces': ['SELECT'],
            'Binding.check': ['SELECT', 'SELECT'],
            'StuckARQs.check': ['SELECT'],
            'PlacementService.retry_pending': ['SELECT'],
            'Accelerators.expire_claims': ['SELECT']}, few)
        self.assertIndexed(many)

    def assertIndexed(self, ran):
        with self.db.engine.connect() as connection:
            if self.backend == 'postgresql':
                connection.execute(sa.text('ANALYZE'))
            elif self.backend == 'mysql':
                connection.execute(sa.text('ANALYZE TABLE hosts'))
            for name, run in ran.items():
                for _verb, statement, parameters in run:
                    plan = self.plan(connection, statement, parameters)
                    self.assertNotIn('FULL SCAN', plan,
                                     '%s: %s\n%s' % (name, statement, plan))

    def plan(self, connection, statement, parameters):
        """The query plan, with every full table scan of a table with
        rows said as ``FULL SCAN <table>``."""
        cursor = connection.connection.dbapi_connection.cursor()
        try:
            if self.backend == 'sqlite':
                cursor.execute('EXPLAIN QUERY PLAN ' + statement, parameters)
                return '\n'.join(
                    'FULL ' + row[-1] if row[-1].startswith('SCAN ')
                    and 'INDEX' not in row[-1] else row[-1]
                    for row in cursor.fetchall())
            cursor.execute('EXPLAIN ' + statement, parameters)
            rows = cursor.fetchall()
            if self.backend == 'mysql':
                names = [d[0] for d in cursor.description]
                return '\n'.join(
                    'FULL SCAN %s' % row['table'] if row['type'] == 'ALL'
                    and row['table'] == 'hosts' else str(row)
                    for row in (dict(zip(names, r, strict=True))
                                for r in rows))
            return '\n'.join(
                'FULL SCAN hosts' if 'Seq Scan on hosts' in row[0]
                else row[0] for row in rows)
        finally:
            cursor.close()


class IdleSweepSQLiteTest(_IdleSweepTests, base.TestCase):
    backend = 'sqlite'


class IdleSweepMySQLTest(_IdleSweepTests, base.TestCase):
    backend = 'mysql'


class IdleSweepPostgreSQLTest(_IdleSweepTests, base.TestCase):
    backend = 'postgresql'


CONDUCTORS = ('ctl-1', 'ctl-2')
#: Short times, so that the test takes seconds: a host is marked down
#: at most 8 + 1 + 1 s after its last heartbeat; the lease goes over at
#: most 3 * 4/3 + 1 s after its holder died.
HOST_DOWN_TIMEOUT = 8


class _TwoConductorsOneDies:
    """Two conductors, each hearing every other heartbeat of each host:
    one runs the checks; killed (no clean stop: what it heard and did not
    write is lost), the other takes them over, marks down the host that
    went silent and no other."""

    HOSTS = 12

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, self.backend))
        self.messaging = self.useFixture(
            cyborg_fixtures.Messaging(self, self.conf, 'fake'))
        self.flags(heartbeat_flush_interval=1, liveness_check_interval=1,
                   periodic_lease_timeout=3,
                   host_down_timeout=HOST_DOWN_TIMEOUT, group='conductor')
        self.ctx = context.get_admin_context()
        self.checks = {name: 0 for name in CONDUCTORS}
        self.services, self.apis = {}, {}
        for name in CONDUCTORS:
            manager = conductor_manager.ConductorManager(name, self.conf)
            manager.liveness.check_hosts = self._counted(
                name, manager.liveness.check_hosts)
            self.services[name] = cyborg_fixtures.start_rpc_service(
                self, manager, rpc.CONDUCTOR_TOPIC, name)
            # Heartbeats go to one conductor or the other by turns, as
            # RabbitMQ hands a topic's messages to its consumers.
            api = conductor_rpcapi.ConductorAPI()
            api.client = api.client.prepare(server=name)
            self.apis[name] = api
        self.hosts = ['beat-%02d' % i for i in range(self.HOSTS)]
        for hostname in self.hosts:
            self.apis[CONDUCTORS[0]].agent_hello(
                self.ctx, host_obj.AgentHello(
                    hostname=hostname, status='READY', endpoint=hostname,
                    version='1', drivers=[]))
        self.alive = list(CONDUCTORS)
        self.beating = set(self.hosts)
        self._stop = threading.Event()
        beats = threading.Thread(target=self._beat, daemon=True)
        beats.start()
        self.addCleanup(beats.join)
        self.addCleanup(self._stop.set)

    def _counted(self, name, check):
        def check_hosts():
            self.checks[name] += 1
            return check()
        return check_hosts

    def _beat(self):
        """Each beating host's agent, every half second."""
        turn = 0
        while not self._stop.wait(0.5):
            turn += 1
            alive = list(self.alive)
            for index, hostname in enumerate(sorted(self.beating)):
                self.apis[alive[(index + turn) % len(alive)]].agent_heartbeat(
                    self.ctx, hostname)

    def kill(self, name):
        """``name`` dies: no more checks or messages, no clean stop (no
        flush, no release of its lease), its unwritten heartbeats lost."""
        self.alive.remove(name)
        svc = self.services[name]
        for timer in svc.timers:
            timer.stop()
        for timer in svc.timers:
            timer.join()
        svc.timers = []
        svc.rpcserver.stop()
        svc.rpcserver.wait()
        svc.rpcserver = None
        svc.manager.liveness.heard.take()

    def status(self):
        return {host.hostname: host.status
                for host, _drivers in db_hosts.get_all(self.ctx)}

    def test_one_conductor_checks_and_either_may_die(self):
        wait_for(lambda: max(self.checks.values()) >= 2, timeout=60)
        holder = max(self.checks, key=self.checks.get)
        [other] = set(CONDUCTORS) - {holder}
        # Renewals come and go (every second): the other never checks.
        wait_for(lambda: self.checks[holder] >= 6, timeout=60)
        self.assertEqual(0, self.checks[other])
        if self.victim == 'holder':
            self.kill(holder)
            # The other takes the checks over.
            wait_for(lambda: self.checks[other] >= 1, timeout=60)
        else:
            self.kill(other)
            seen = self.checks[holder]
            wait_for(lambda: self.checks[holder] > seen, timeout=60)
        # One host goes silent: marked down within host_down_timeout +
        # flush + check (the deadline allows for a loaded machine).
        self.beating.discard('beat-00')
        wait_for(lambda: self.status()['beat-00'] == 'down', timeout=60)
        # The others, heard by the dead conductor too, stay up.
        status = self.status()
        del status['beat-00']
        self.assertEqual({hostname: 'up' for hostname in status}, status)
        # The notification follows the committed status (a read of the
        # host comes between): waited for, not expected at once.

        def downs():
            return [message['payload']['cyborg_object.data']['hostname']
                    for _ctx, message, _prio, _retry
                    in list(self.messaging.notifications)
                    if message['event_type'] == 'cyborg.host.down']
        wait_for(lambda: downs(), timeout=30)
        self.assertEqual(['beat-00'], downs())
        # Heard again, it is up again.
        self.beating.add('beat-00')
        wait_for(lambda: self.status()['beat-00'] == 'up', timeout=60)


# One backend each: the conductor running the checks dies on MariaDB, the
# other one on PostgreSQL.
class TwoConductorsHolderDiesMySQLTest(_TwoConductorsOneDies, base.TestCase):
    backend, victim = 'mysql', 'holder'


class TwoConductorsOtherDiesPostgreSQLTest(_TwoConductorsOneDies,
                                           base.TestCase):
    backend, victim = 'postgresql', 'other'
