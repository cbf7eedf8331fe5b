"""PyMySQL connections without ``ssl`` options ("preferred" TLS mode)
share one TLS context per process instead of building one (loading the
system's CA certificates) for every new connection; connections with
``ssl`` options build their own, and every connection is still set up
as cyborg's MySQL connections are."""

import ssl

import fixtures
import pymysql
import sqlalchemy as sa

from cyborg.common import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures

# PyMySQL 1.2 added the "preferred" mode; before it (1.1, the pin of
# OpenStack 2026.1) a connection without ``ssl`` options does not use TLS
# and builds no context, so there is none to share, and the override is
# called only with options.
PREFERRED_MODE = tuple(int(part) for part in
                       pymysql.VERSION_STRING.split('.')[:2]) >= (1, 2)


class PreferredTLSContextTest(base.TestCase):
    """The connection type alone, without a server: PyMySQL builds the
    context when the connection is made, before it connects."""

    def setUp(self):
        super().setUp()
        self.assertIsNotNone(db_api._PYMYSQL_CONNECTION)
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.compat.pymysql._PREFERRED_TLS', []))

    def connection(self, **kwargs):
        return db_api._PYMYSQL_CONNECTION(host='127.0.0.1',
                                          defer_connect=True, **kwargs)

    def test_one_context_without_ssl_options(self):
        first, second = self.connection(), self.connection()
        if not PREFERRED_MODE:
            self.assertFalse(first.ssl)
            self.assertFalse(hasattr(first, 'ctx'))
            self.skipTest('PyMySQL %s has no preferred TLS mode (1.2 added '
                          'it): no context without ssl options'
                          % pymysql.VERSION_STRING)
        self.assertIsInstance(first.ctx, ssl.SSLContext)
        self.assertIs(first.ctx, second.ctx)
        # What PyMySQL's preferred mode asks of it: no certificate check.
        self.assertEqual(ssl.CERT_NONE, first.ctx.verify_mode)
        self.assertFalse(first.ctx.check_hostname)
        self.assertFalse(first._ssl_required)

    def test_ssl_options_build_their_own(self):
        own = self.connection(ssl={'verify_mode': 'required'}).ctx
        self.assertEqual(ssl.CERT_REQUIRED, own.verify_mode)
        self.assertIsNot(
            own, self.connection(ssl={'verify_mode': 'required'}).ctx)
        if PREFERRED_MODE:
            self.assertIsNot(self.connection().ctx, own)


class MySQLConnectionsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'mysql'))

    def test_engine_connections_share_the_context_and_read_committed(self):
        engine = db_api.get_engine()
        engine.dispose()
        raw = []
        for _ in range(2):
            with engine.connect() as connection:
                raw.append(connection.connection.dbapi_connection)
                self.assertEqual('READ-COMMITTED', connection.execute(
                    sa.text('SELECT @@SESSION.tx_isolation')).scalar())
            # A new connection each time, not the pooled one.
            engine.dispose()
        self.assertIsNot(raw[0], raw[1])
        self.assertIsInstance(raw[0], db_api._PYMYSQL_CONNECTION)
        if PREFERRED_MODE:
            self.assertIs(raw[0].ctx, raw[1].ctx)
        else:
            self.assertFalse(hasattr(raw[0], 'ctx'))
        # And cyborg's transactions run on it.
        ctx = cyborg_context.get_admin_context()
        with db_api.reader.using(ctx) as session:
            self.assertEqual(1, session.execute(sa.text('SELECT 1')).scalar())
