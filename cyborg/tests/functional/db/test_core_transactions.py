"""``db_api.core_reader`` and ``core_writer``: a function's transaction on
one Core connection, or the transaction it is called in. On each
database: a writer commits, or rolls back all it wrote when it raises;
nested functions share one connection and one transaction (with
enginefacade's too); an ORM session is made only when asked for, in the
same transaction; a writer within a reader, or an enginefacade
transaction within a core one, raises instead of opening a transaction
of its own elsewhere; a database that does not answer is
DatabaseUnavailable, as with enginefacade's decorators."""

import copy
import threading

from oslo_utils import uuidutils

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

_ROWS = 'SELECT COUNT(*) FROM t'


class Boom(Exception):
    pass


@db_api.core_writer
def _insert(context, *values, then=None):
    for value in values:
        db_api.connection(context).exec_driver_sql(
            'INSERT INTO t (id) VALUES (%d)' % value)
    if then is not None:
        return then(context)
    return None


@db_api.core_reader
def _rows(context, then=None):
    count = db_api.connection(context).exec_driver_sql(_ROWS).scalar()
    if then is not None:
        then(context)
    return count


@db_api.core_reader
def _connection(context):
    return db_api.connection(context)


@db_api.writer
def _orm_insert(context, value, then=None):
    db_api.connection(context).exec_driver_sql(
        'INSERT INTO t (id) VALUES (%d)' % value)
    return then(context)


@db_api.reader
def _orm_rows(context):
    return context.session.connection().exec_driver_sql(_ROWS).scalar()


@db_api.core_writer
def _profile_by_session(context, name):
    """An ORM insert and read, in the core writer's transaction."""
    session = db_api.session(context)
    session.add(models.DeviceProfile(
        uuid=uuidutils.generate_uuid(), name=name,
        profile_json='{"groups": []}'))
    session.flush()
    # The row the session wrote is seen on the core connection.
    return db_api.connection(context).exec_driver_sql(
        "SELECT COUNT(*) FROM device_profiles WHERE name = '%s'"
        % name).scalar()


class _CoreTransactionTests:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(cyborg_fixtures.Database(
            self, self.backend))
        with self.database.engine.begin() as connection:
            connection.exec_driver_sql('CREATE TABLE t (id INT PRIMARY KEY)')
        self.context = cyborg_context.get_admin_context()

    def test_a_writer_commits(self):
        _insert(self.context, 1, 2)
        self.assertEqual(2, _rows(self.context))

    def test_a_writer_that_raises_writes_nothing(self):
        def fail(_context):
            raise Boom()
        self.assertRaises(Boom, _insert, self.context, 1, 2, then=fail)
        self.assertEqual(0, _rows(self.context))
        # The connection went back to the pool, usable.
        _insert(self.context, 3)
        self.assertEqual(1, _rows(self.context))

    def test_nested_functions_share_the_transaction(self):
        seen = []

        def nested(context):
            # A reader within the writer reads what it wrote, uncommitted,
            # on the same connection.
            seen.append((_rows(context), _connection(context)))
            seen.append(db_api.connection(context))
            _insert(context, 2)
            raise Boom()
        self.assertRaises(Boom, _insert, self.context, 1, then=nested)
        self.assertEqual(1, seen[0][0])
        self.assertIs(seen[0][1], seen[1])
        # All of it was rolled back, the nested writer's row included.
        self.assertEqual(0, _rows(self.context))

    def test_within_an_enginefacade_transaction_its_connection_is_used(self):
        def nested(context):
            self.assertEqual(1, _rows(context))
            _insert(context, 2)
            raise Boom()
        self.assertRaises(Boom, _orm_insert, self.context, 1, then=nested)
        self.assertEqual(0, _orm_rows(self.context))

        def count(context):
            return _rows(context)
        # In enginefacade's transaction the core reader sees its write.
        self.assertEqual(1, _orm_insert(self.context, 5, then=count))

    def test_a_writer_within_an_enginefacade_reader_raises(self):
        @db_api.reader
        def read_then_write(context):
            _insert(context, 1)
        # enginefacade's refusal to upgrade its reader: the row is not
        # written into a transaction that would be rolled back.
        self.assertRaises(TypeError, read_then_write, self.context)
        self.assertEqual(0, _rows(self.context))

    def test_a_writer_within_a_reader_raises(self):
        def write(context):
            _insert(context, 1)
        self.assertRaises(db_api.CoreTransactionError, _rows, self.context,
                          then=write)
        self.assertEqual(0, _rows(self.context))

    def test_an_enginefacade_transaction_within_a_core_one_raises(self):
        self.assertRaises(db_api.CoreTransactionError, _rows, self.context,
                          then=_orm_rows)
        self.assertRaises(db_api.CoreTransactionError, _insert,
                          self.context, 1, then=_orm_rows)
        self.assertEqual(0, _rows(self.context))

    def test_each_thread_has_its_own_transaction(self):
        other = []

        def in_another_thread(context):
            # The same context in another thread is in no transaction:
            # it gets one of its own, which does not see this one's row.
            thread = threading.Thread(
                target=lambda: other.append(_rows(context)))
            thread.start()
            thread.join()
        _insert(self.context, 1, then=in_another_thread)
        self.assertEqual([0], other)

    def test_an_orm_session_is_made_when_asked_for(self):
        self.assertEqual(1, _profile_by_session(self.context, 'p1'))
        self.assertEqual(1, self._profiles())

        @db_api.core_writer
        def fail(context):
            _profile_by_session(context, 'p2')
            raise Boom()
        self.assertRaises(Boom, fail, self.context)
        self.assertEqual(1, self._profiles())

    def _profiles(self):
        return _profile_count(self.context)

    def test_a_copied_context_shares_the_transaction(self):
        def copied(context):
            self.assertEqual(1, _rows(copy.deepcopy(context)))
            self.assertEqual(1, _rows(copy.copy(context)))
        _insert(self.context, 1, then=copied)


class SQLiteCoreTransactionTest(_CoreTransactionTests, base.TestCase):
    backend = 'sqlite'


class MySQLCoreTransactionTest(_CoreTransactionTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLCoreTransactionTest(_CoreTransactionTests, base.TestCase):
    backend = 'postgresql'


class UnavailableTest(base.TestCase):
    """A server that does not answer: DatabaseUnavailable (503)."""

    def test_a_closed_gate_is_database_unavailable(self):
        database = self.useFixture(cyborg_fixtures.Database(
            self, 'mysql', gated=True))
        context = cyborg_context.get_admin_context()
        self.assertEqual(0, _profile_count(context))
        database.engine.dispose()
        db_api.get_engine().dispose()
        database.gate.close()
        self.assertRaises(exception.DatabaseUnavailable, _profile_count,
                          context)
        self.assertRaises(exception.DatabaseUnavailable, _insert_profile,
                          context)


@db_api.core_reader
def _profile_count(context):
    return db_api.connection(context).exec_driver_sql(
        'SELECT COUNT(*) FROM device_profiles').scalar()


@db_api.core_writer
def _insert_profile(context):
    db_api.connection(context).exec_driver_sql(
        "DELETE FROM device_profiles WHERE name = 'none'")
