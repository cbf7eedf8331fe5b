"""The conductor through a database outage: its checks fail as
DatabaseUnavailable, and no host is marked down merely because no
heartbeat could be recorded while the database was away."""

import datetime

from oslo_utils import timeutils

from cyborg.common import context
from cyborg.common import exception
from cyborg.conductor import liveness as liveness_mod
from cyborg.db import hosts as db_hosts
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional.test_hello import wait_for


class _LivenessThroughOutage:

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(cyborg_fixtures.Database(
            self, self.backend, gated=True))
        self.ctx = context.get_admin_context()
        self.liveness = liveness_mod.Liveness(self.conf)

    def status(self, hostname):
        return db_hosts.get_by_hostname(self.ctx, hostname)[0].status

    def silent_since(self, hostname, seconds):
        """The host was last heard ``seconds`` ago (its heartbeats were
        lost while the database was away)."""
        with db_hosts.db_api.writer.using(self.ctx) as session:
            session.query(db_hosts.models.Host).filter_by(
                hostname=hostname).update({'last_seen_at': (
                    timeutils.utcnow() - datetime.timedelta(
                        seconds=seconds))})

    def test_host_outlives_the_outage_then_is_watched_again(self):
        self.flags(host_down_timeout=1, group='conductor')
        db_hosts.record_hello(self.ctx, 'cmp-1', 'cmp-1', '1.0', [])
        self.db.gate.close()
        self.assertRaises(exception.DatabaseUnavailable,
                          self.liveness.check_hosts)
        self.db.gate.open()
        self.silent_since('cmp-1', 30)
        # The first check after the outage spares it: its agent gets a
        # whole timeout to be heard again.
        self.liveness.check_hosts()
        self.assertEqual('up', self.status('cmp-1'))
        # One that stays silent is marked down once that has passed.
        wait_for(lambda: (self.liveness.check_hosts(),
                          self.status('cmp-1') == 'down')[1], timeout=30)


class OutageLeftBehindTest(base.TestCase):

    def test_an_earlier_tests_outage_gives_no_grace(self):
        # The outage a test before made (one of those above, in the same
        # process) does not follow the next test's new database: its
        # conductor would mark no host down for a whole timeout.
        left = db_hosts.db_api._LAST_UNAVAILABLE
        self.addCleanup(left.__setitem__, 0, left[0])
        left[0] = 12.0
        self.useFixture(cyborg_fixtures.Database(self))
        self.assertIsNone(db_hosts.db_api.last_unavailable())
        ctx = context.get_admin_context()
        db_hosts.record_hello(ctx, 'cmp-1', 'cmp-1', '1.0', [])
        self.flags(host_down_timeout=1, group='conductor')
        with db_hosts.db_api.writer.using(ctx) as session:
            session.query(db_hosts.models.Host).update({'last_seen_at': (
                timeutils.utcnow() - datetime.timedelta(seconds=30))})
        liveness_mod.Liveness(self.conf).check_hosts()
        self.assertEqual(
            'down', db_hosts.get_by_hostname(ctx, 'cmp-1')[0].status)


class LivenessOutageMySQLTest(_LivenessThroughOutage, base.TestCase):
    backend = 'mysql'


class LivenessOutagePostgreSQLTest(_LivenessThroughOutage, base.TestCase):
    backend = 'postgresql'
