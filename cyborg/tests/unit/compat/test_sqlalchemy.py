"""cyborg.compat.sqlalchemy on SQLAlchemy's own pool: an engine made with
pool_pre_ping (as oslo.db makes them) no longer pings at checkout."""

import sqlalchemy as sa
import testtools

from cyborg.compat import sqlalchemy as sqlalchemy_compat


class PrePingTest(testtools.TestCase):

    def pings(self, engine):
        """How many pings a checkout sends."""
        calls = []
        dialect = engine.dialect
        original = dialect.do_ping

        def counted(dbapi_connection):
            calls.append(dbapi_connection)
            return original(dbapi_connection)
        dialect.do_ping = counted
        with engine.connect():
            pass
        with engine.connect():
            pass
        return len(calls)

    def test_pre_ping_stops(self):
        engine = sa.create_engine('sqlite://', pool_pre_ping=True,
                                  poolclass=sa.pool.QueuePool)
        self.addCleanup(engine.dispose)
        self.assertGreater(self.pings(engine), 0)
        sqlalchemy_compat.stop_pre_ping(engine)
        self.assertEqual(0, self.pings(engine))
