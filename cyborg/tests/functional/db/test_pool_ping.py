"""A pooled server connection is checked before use only after it sat
idle (``db_api.ping_only_idle``): one the server closed meanwhile is
replaced, and one used a moment ago costs no extra round trip."""

import fixtures
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

#: The server's id of the connection running the statement, and how
#: another connection ends it.
_OWN_ID = {'mysql': 'SELECT CONNECTION_ID()',
           'postgresql': 'SELECT pg_backend_pid()'}
_KILL = {'mysql': 'KILL %d',
         'postgresql': 'SELECT pg_terminate_backend(%d)'}


class _PingTests:

    def setUp(self):
        super().setUp()
        database = self.useFixture(cyborg_fixtures.Database(
            self, self.backend, schema=None))
        self.engine = engines.create_engine(database.url, max_pool_size=1)
        self.addCleanup(self.engine.dispose)
        db_api.ping_only_idle(self.engine)
        self.killer = database.engine

    def connection_id(self):
        with self.engine.connect() as connection:
            return connection.exec_driver_sql(_OWN_ID[self.backend]).scalar()

    def kill(self, connection_id):
        with self.killer.connect() as connection:
            connection.exec_driver_sql(_KILL[self.backend] % connection_id)
            connection.commit()

    def test_a_connection_closed_while_idle_is_replaced(self):
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.api.PING_AFTER_IDLE_S', 0))
        first = self.connection_id()
        self.kill(first)
        self.assertNotEqual(first, self.connection_id())

    def test_a_connection_just_used_is_not_pinged(self):
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.api.PING_AFTER_IDLE_S', 3600))
        first = self.connection_id()
        self.kill(first)
        # No ping found it closed: the statement does.
        self.assertRaises((db_exc.DBConnectionError, sa.exc.DBAPIError),
                          self.connection_id)
        # And the pool replaces it then.
        self.assertNotEqual(first, self.connection_id())


class PingMySQLTest(_PingTests, base.TestCase):
    backend = 'mysql'


class PingPostgreSQLTest(_PingTests, base.TestCase):
    backend = 'postgresql'
