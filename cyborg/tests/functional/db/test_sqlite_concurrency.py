"""SQLite, the all-in-one's database, under concurrent writers: the
conductor's threads (agents' hellos, reports, binds) must wait for each
other, not fail with "database is locked"; readers run meanwhile."""

import concurrent.futures
import os
import sqlite3

import fixtures
from oslo_db.sqlalchemy import engines
import sqlalchemy as sa

from cyborg.common import context as cyborg_context
from cyborg.db import adopt
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.unit import test_adopt

THREADS = 8
ROUNDS = 15


class SQLiteConcurrentWritersTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.context = cyborg_context.get_admin_context()

    def hello(self, index):
        for _ in range(ROUNDS):
            # Reads then writes in one transaction, the pattern SQLite
            # fails at once when another writer commits in between.
            db_hosts.record_hello(self.context, 'host-%d' % (index % 3),
                                  'endpoint', '1', [])
            with db_api.reader.using(self.context) as session:
                session.query(models.Host).count()

    def test_concurrent_writers_take_turns(self):
        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            for future in [pool.submit(self.hello, i)
                           for i in range(THREADS)]:
                future.result()
        with db_api.reader.using(self.context) as session:
            self.assertEqual(3, session.query(models.Host).count())

    def test_wal_and_busy_timeout(self):
        with db_api.get_engine().connect() as connection:
            self.assertEqual('wal', connection.exec_driver_sql(
                'PRAGMA journal_mode').scalar())
            self.assertEqual(db_api.SQLITE_BUSY_TIMEOUT_MS,
                             connection.exec_driver_sql(
                                 'PRAGMA busy_timeout').scalar())


class SQLiteLogKeptTest(base.TestCase):
    """The write-ahead log survives the end of a transaction when the
    engine keeps a connection open, instead of being checkpointed and
    deleted with every transaction's connection."""

    def wal_after_a_write(self, keep):
        path = self.useFixture(fixtures.TempDir()).join('kept.sqlite')
        engine = engines.create_engine('sqlite:///%s' % path,
                                       thread_checkin=False)
        self.addCleanup(engine.dispose)
        if keep:
            db_api.keep_sqlite_open(engine)
        with engine.begin() as connection:
            connection.exec_driver_sql('CREATE TABLE t (x INTEGER)')
        with engine.begin() as connection:
            connection.exec_driver_sql('INSERT INTO t VALUES (1)')
        return os.path.exists(path + '-wal')

    def test_kept_open_the_log_stays(self):
        self.assertTrue(self.wal_after_a_write(keep=True))

    def test_without_it_every_last_close_removes_the_log(self):
        self.assertFalse(self.wal_after_a_write(keep=False))

    def test_nothing_kept_for_a_database_in_memory(self):
        engine = engines.create_engine('sqlite://')
        self.addCleanup(engine.dispose)
        db_api.keep_sqlite_open(engine)
        self.assertNotIn(engine, db_api._SQLITE_KEEPERS)


class Interloper:
    """Another writer on the SQLite database of ``engine`` (a running
    conductor renewing its lease) that, right after the first statement
    of the next transaction there (BEGIN aside), tries to write and
    commit without waiting. ``outcome``: 'committed', or SQLite's error."""

    def __init__(self, test, engine):
        self.path = engine.url.database
        self.outcome = None
        sa.event.listen(engine, 'after_cursor_execute', self._write)
        test.addCleanup(sa.event.remove, engine, 'after_cursor_execute',
                        self._write)

    def _write(self, _conn, _cursor, statement, *_args):
        if self.outcome is not None or statement.strip().upper() == 'BEGIN':
            return
        other = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        try:
            other.execute('BEGIN IMMEDIATE')
            other.execute("INSERT INTO conductor_leases (name, holder, "
                          "expires_at) VALUES ('periodic', 'conductor-2', "
                          "'2026-11-27 00:00:00')")
            other.execute('COMMIT')
            self.outcome = 'committed'
        except sqlite3.OperationalError as e:
            self.outcome = str(e)
        finally:
            other.close()


class SQLiteAdoptionTest(base.TestCase):
    """``cyborg-dbsync adopt`` and ``adopt_accept`` next to a running
    all-in-one: their transaction holds SQLite's write lock from its
    first statement, so another writer waits for it. One that read first
    would fail at its first write ("database is locked", at once,
    whatever the busy timeout) had a conductor committed in between."""

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.plan = adopt.plan(test_adopt.HEAD, test_adopt._source(),
                               now=test_adopt.NOW)

    def count(self, table):
        with self.db.engine.connect() as connection:
            return connection.execute(sa.select(sa.func.count()).select_from(
                models.Base.metadata.tables[table])).scalar()

    def test_adopt_holds_off_other_writers(self):
        interloper = Interloper(self, self.db.engine)
        adopt.apply(self.db.engine, self.plan)
        self.assertEqual('database is locked', interloper.outcome)
        self.assertEqual((1, 1, 0), (self.count('devices'),
                                     self.count('adoptions'),
                                     self.count('conductor_leases')))

    def test_accepting_a_host_holds_off_other_writers(self):
        adopt.apply(self.db.engine, self.plan)
        interloper = Interloper(self, self.db.engine)
        with self.db.engine.begin() as connection:
            self.assertEqual(['compute-a'],
                             adopt.accept_host(connection, None))
        self.assertEqual('database is locked', interloper.outcome)
        with self.db.engine.begin() as connection:
            self.assertEqual([], adopt.accept_host(connection, None))

    def test_a_refused_adoption_leaves_no_record(self):
        adopt.apply(self.db.engine, self.plan)
        self.assertRaisesRegex(adopt.AdoptError, 'not empty', adopt.apply,
                               self.db.engine, self.plan)
        self.assertEqual(1, self.count('adoptions'))
