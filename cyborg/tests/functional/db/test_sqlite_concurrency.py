"""SQLite, the all-in-one's database, under concurrent writers: the
conductor's threads (agents' hellos, reports, binds) must wait for each
other, not fail with "database is locked"; readers run meanwhile."""

import concurrent.futures
import os

import fixtures
from oslo_db.sqlalchemy import engines

from cyborg.common import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

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
