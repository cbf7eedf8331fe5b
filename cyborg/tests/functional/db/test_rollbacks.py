"""On MySQL and MariaDB a transaction ends with one COMMIT or ROLLBACK:
the pool's rollback of a connection returned with nothing to roll back
is not sent (``db_api._pymysql_connection_type``), and one returned with
a transaction open is still rolled back. Counted by the server."""

from oslo_db import exception as db_exc

from cyborg.common import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

_COUNTERS = ("SHOW SESSION STATUS WHERE Variable_name IN "
             "('Com_rollback', 'Com_commit')")


@db_api.reader
def _counters(context):
    """This connection's COMMITs and ROLLBACKs so far, by the server."""
    rows = context.session.connection().exec_driver_sql(_COUNTERS).all()
    return {name: int(value) for name, value in rows}


@db_api.reader
def _rows(context):
    return context.session.connection().exec_driver_sql(
        'SELECT COUNT(*) FROM t').scalar()


@db_api.writer
def _insert(context, value):
    context.session.connection().exec_driver_sql(
        'INSERT INTO t VALUES (%d)' % value)


class RollbackTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(cyborg_fixtures.Database(
            self, 'mysql', schema=None))
        with self.database.engine.begin() as connection:
            connection.exec_driver_sql(
                'CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB')
        # One pooled connection, used by every transaction below.
        self.database.engine.dispose()
        self.context = cyborg_context.get_admin_context()

    def sent(self, what):
        """What the server counted between two reads of its counters:
        those of the transaction of the first read, then ``what``."""
        before = _counters(self.context)
        what()
        after = _counters(self.context)
        self.assertEqual(1, self.database.engine.pool.checkedin())
        return {name[len('Com_'):]: after[name] - before[name]
                for name in after}

    def test_a_reader_transaction_sends_one_rollback(self):
        self.assertEqual({'rollback': 1, 'commit': 0},
                         self.sent(lambda: None))
        self.assertEqual({'rollback': 2, 'commit': 0},
                         self.sent(lambda: _rows(self.context)))

    def test_a_writer_transaction_sends_one_commit(self):
        self.assertEqual({'rollback': 1, 'commit': 1},
                         self.sent(lambda: _insert(self.context, 1)))
        self.assertEqual(1, _rows(self.context))

    def test_a_transaction_left_open_is_rolled_back_by_the_pool(self):
        def leave_open():
            raw = self.database.engine.raw_connection()
            cursor = raw.dbapi_connection.cursor()
            cursor.execute('INSERT INTO t VALUES (2)')
            cursor.close()
            raw.close()
        self.assertEqual({'rollback': 2, 'commit': 0},
                         self.sent(leave_open))
        self.assertEqual(0, _rows(self.context))

    def test_a_rollback_after_a_failed_statement_is_sent(self):
        _insert(self.context, 3)

        def duplicate():
            self.assertRaises(db_exc.DBDuplicateEntry, _insert,
                              self.context, 3)
        sent = self.sent(duplicate)
        self.assertEqual(0, sent['commit'])
        self.assertGreaterEqual(sent['rollback'], 2)
        self.assertEqual(1, _rows(self.context))

    def test_the_connection_type_skips_only_an_empty_rollback(self):
        raw = self.database.engine.raw_connection()
        self.addCleanup(raw.close)
        connection = raw.dbapi_connection
        self.assertIsInstance(connection, db_api._PYMYSQL_CONNECTION)

        def rollbacks():
            cursor = connection.cursor()
            cursor.execute(_COUNTERS)
            counted = dict(cursor.fetchall())
            cursor.close()
            connection.commit()
            return int(counted['Com_rollback'])
        start = rollbacks()
        connection.rollback()
        self.assertEqual(start, rollbacks())
        connection.begin()
        connection.rollback()
        self.assertEqual(start + 1, rollbacks())
        connection.query('SELECT 1')
        connection.rollback()
        connection.rollback()
        self.assertEqual(start + 2, rollbacks())
