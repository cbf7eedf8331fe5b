"""SQLite, the all-in-one's database, under concurrent writers: the
conductor's threads (agents' hellos, reports, binds) must wait for each
other, not fail with "database is locked"; readers run meanwhile."""

import concurrent.futures

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
