"""Two conductors on a three-node MariaDB Galera cluster, each on its own
node (``galera.Database``): a ``SELECT ... FOR UPDATE`` on one node locks
nothing on another, and the second of two conflicting commits fails
certification with a deadlock error. Every writer retries it (oslo.db's
``wrap_db_retry``); here binds racing for the last free devices and
hosts reporting and beating to both conductors lose nothing and bind
nothing twice."""

import collections
import concurrent.futures
import threading
import uuid as uuidlib

import fixtures
from keystoneauth1 import loading as ks_loading
from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.accelerator.drivers.fake import driver as fake_driver
from cyborg.common import context
from cyborg.common import states
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import reporting
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import api as db_api
from cyborg.db import device_profiles as db_device_profiles
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import galera
from cyborg.tests.functional import nova
from cyborg.tests.functional import test_two_conductors

PROJECT = 'b8d3f5ae4b204c1c9a3f1e0d7c6b5a49'
PROFILE = 'galera-fpga'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
CONDUCTORS = ('ctl-1', 'ctl-2')


class DeadlockCounter:
    """How many statements or commits each engine saw fail with MySQL's
    ER_LOCK_DEADLOCK (1213), Galera's certification failure."""

    def __init__(self, engines):
        self.counts = collections.Counter()
        for index, engine in enumerate(engines):
            sa.event.listen(engine, 'handle_error', self._seen(index))

    def _seen(self, index):
        def seen(exception_context):
            orig = exception_context.original_exception
            if getattr(orig, 'args', (None,))[0] == 1213:
                self.counts[index] += 1
        return seen

    def total(self):
        return sum(self.counts.values())


class GaleraTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cluster = galera.shared_cluster(self)
        self.db = self.useFixture(galera.Database(self.cluster))
        self.deadlocks = DeadlockCounter(self.db.engines)
        self.ctx = context.get_admin_context()


class CertificationTest(GaleraTestCase):
    """What Galera does that a single MariaDB does not."""

    def test_for_update_locks_nothing_on_another_node(self):
        db_hosts.record_hello(self.ctx, 'cert-host', 'cert-host', '1', [])
        first, second = (e.connect() for e in self.db.engines[:2])
        self.addCleanup(first.close)
        self.addCleanup(second.close)
        lock = sa.text('SELECT id FROM hosts WHERE hostname = :h FOR UPDATE')
        write = sa.text('UPDATE hosts SET version = :v WHERE hostname = :h')
        first.begin()
        second.begin()
        first.execute(lock, {'h': 'cert-host'})
        # On one server this would wait for the first transaction; on
        # another node of the cluster it returns at once.
        second.execute(lock, {'h': 'cert-host'})
        first.execute(write, {'v': 'first', 'h': 'cert-host'})
        second.execute(write, {'v': 'second', 'h': 'cert-host'})
        first.commit()
        # The second commit fails certification: a deadlock to oslo.db,
        # which its retry helpers retry.
        self.assertRaises(db_exc.DBDeadlock, second.commit)
        self.assertEqual(1, self.deadlocks.counts[1])
        host, _drivers = db_hosts.get_by_hostname(self.ctx, 'cert-host')
        self.assertEqual('first', host.version)

    def test_a_writer_retries_a_certification_failure(self):
        db_hosts.record_hello(self.ctx, 'retry-host', 'retry-host', '1', [])
        other = self.db.engines[2].connect()
        self.addCleanup(other.close)
        calls = []
        original = db_hosts._replace_drivers

        def conflicting(context, host, drivers):
            # The first attempt (on node 0) writes the host row; node 2
            # commits a change of the same row meanwhile.
            original(context, host, drivers)
            if not calls:
                with other.begin():
                    # Once node 2 applied the host's first hello.
                    other.execute(sa.text('SET SESSION wsrep_sync_wait = 3'))
                    updated = other.execute(sa.text(
                        "UPDATE hosts SET version = 'other' "
                        "WHERE hostname = 'retry-host'")).rowcount
                self.assertEqual(1, updated)
            calls.append(1)
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.hosts._replace_drivers', conflicting))
        db_hosts.record_hello(self.ctx, 'retry-host', 'retry-host', '2', [])
        self.assertEqual(2, len(calls))
        self.assertGreaterEqual(self.deadlocks.counts[0], 1)
        host, _drivers = db_hosts.get_by_hostname(self.ctx, 'retry-host')
        self.assertEqual('2', host.version)


class ReplicatedSchemaTest(GaleraTestCase):
    """A test gets its database once every node has applied it."""

    def test_every_node_has_the_database_and_its_tables_at_once(self):
        expected = set(models.Base.metadata.tables) | {'alembic_version'}
        for node in self.cluster.nodes:
            engine = sa.create_engine(node.url(self.db.name),
                                      poolclass=sa.pool.NullPool)
            self.addCleanup(engine.dispose)
            with engine.connect() as connection:
                # No causal wait: what the node has applied by now.
                connection.execute(sa.text('SET SESSION wsrep_sync_wait = 0'))
                tables = {row[0] for row in
                          connection.execute(sa.text('SHOW TABLES'))}
            self.assertEqual(expected, tables, 'node%d' % node.index)

    def test_a_node_late_to_apply_a_new_database_is_waited_for(self):
        # FLUSH TABLES WITH READ LOCK desyncs node 2 and pauses its
        # applier until the lock goes: node 2 creates the next database
        # only then, a second after node 0 did.
        node = self.cluster.nodes[2]
        engine = sa.create_engine(node.url(), poolclass=sa.pool.NullPool)
        self.addCleanup(engine.dispose)
        lock = engine.connect()
        self.addCleanup(lock.close)
        lock.execute(sa.text('FLUSH TABLES WITH READ LOCK'))
        self.assertEqual('Donor/Desynced',
                         node.status('wsrep_local_state_comment'))
        release = threading.Timer(1, lock.close)
        self.addCleanup(release.cancel)
        release.start()
        name = self.cluster.create_database()
        with engine.connect() as connection:
            connection.execute(sa.text('SET SESSION wsrep_sync_wait = 0'))
            found = connection.execute(
                sa.text('SHOW DATABASES LIKE :name'), {'name': name}).all()
        self.assertEqual([(name,)], found)

    def test_a_database_a_node_never_applies_names_the_node_and_state(self):
        node = self.cluster.nodes[2]
        error = self.assertRaises(
            RuntimeError, node.wait_tables, 'cyborg_test_never', set(),
            timeout=0)
        message = str(error)
        self.assertIn('galera node2 did not apply database cyborg_test_never',
                      message)
        self.assertIn('its tables are None, not set()', message)
        self.assertIn('wsrep_cluster_status=Primary', message)
        self.assertIn('wsrep_local_state_comment=Synced', message)


class ConcurrentBindTest(GaleraTestCase):
    """Many ARQs bound at once, half through each conductor (each on its
    own node), for the last free attach handles of a card."""

    FREE = 4
    ARQS = 12

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Messaging(self, self.conf, 'fake'))
        self.nova = nova.StandInNova().start(self)
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='nova')
        self.flags(group='nova', **self.nova.config())
        self.hostname = 'galera-%s' % uuidlib.uuid4().hex[:8]
        self.flags(host=self.hostname)
        devices = fake_driver.FakeDriver(self.conf).discover()
        db_hosts.record_hello(self.ctx, self.hostname, self.hostname, '1',
                              [])
        reporting.reconcile(self.ctx, self.hostname, devices, 'h')
        with db_api.writer.using(self.ctx) as session:
            self.rp_uuid = session.query(models.Deployable.rp_uuid).one()[0]
            handles = session.query(models.AttachHandle).order_by(
                models.AttachHandle.id).all()
            for handle in handles[self.FREE:]:
                handle.in_use = True
        db_device_profiles.create(self.ctx, {'name': PROFILE,
                                             'groups': [GROUP]})
        self.managers = [
            galera.route(conductor_manager.ConductorManager(name, self.conf),
                         index)
            for index, name in enumerate(CONDUCTORS)]
        for manager in self.managers:
            self.addCleanup(manager.binding.events.wait_idle, 30)

    def bind(self, index, arq):
        manager = self.managers[index % len(self.managers)]
        patch = {arq: {'hostname': self.hostname,
                       'device_rp_uuid': self.rp_uuid,
                       'instance_uuid': uuidutils.generate_uuid()}}
        return manager.arq_apply_patch(self.ctx, patch, PROJECT)

    def test_last_free_handles_bound_once_nothing_lost(self):
        arqs = []
        for _ in range(self.ARQS):
            arqs += [arq.uuid for arq in db_arqs.create(self.ctx, PROFILE,
                                                        PROJECT)]
        with concurrent.futures.ThreadPoolExecutor(self.ARQS) as pool:
            # None of the binds fails: a certification failure is retried.
            list(pool.map(self.bind, range(self.ARQS), arqs))
        with db_api.reader.using(self.ctx) as session:
            rows = session.query(models.ExtendedAcceleratorRequest).filter(
                models.ExtendedAcceleratorRequest.uuid.in_(arqs)).all()
            in_use = session.query(models.AttachHandle).filter_by(
                in_use=True).count()
            total = session.query(models.AttachHandle).count()
        by_state = collections.Counter(row.state for row in rows)
        self.assertEqual({states.BOUND: self.FREE,
                          states.BIND_FAILED: self.ARQS - self.FREE},
                         dict(by_state))
        handles = [row.attach_handle_id for row in rows
                   if row.state == states.BOUND]
        self.assertEqual(self.FREE, len(set(handles)))
        self.assertEqual(total, in_use)
        for manager in self.managers:
            self.assertTrue(manager.binding.events.wait_idle(30))
        self.assertEqual(self.ARQS, len(self.nova.events))


class TwoConductorsGaleraTest(test_two_conductors._TwoConductorsTests,
                              base.TestCase):
    """The two-conductor reports, heartbeats and sweeps, each conductor
    on its own node."""

    def use_database(self):
        self.db = self.useFixture(
            galera.Database(galera.shared_cluster(self)))
        self.deadlocks = DeadlockCounter(self.db.engines)

    def place(self, manager, index):
        return galera.route(manager, index)

    def sweep(self, index):
        with galera.on_node(index):
            super().sweep(index)
