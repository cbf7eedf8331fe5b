"""What a writer reads after it has locked a row is what the lock protects,
as committed then, on the database servers: a transaction that read
something first (say, the hashes of a batch of reports) and then waited
for a host's lock must not see that host's devices as they were before
the other writer committed. (SQLite has one writer at a time: a writer
transaction there never waits for another one's commit.)"""

import threading

from oslo_utils import timeutils

from cyborg.common import context
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.db import rows as db_rows
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class _IsolationTests:

    backend = None

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, self.backend))
        self.ctx = context.get_admin_context()
        with db_api.writer.using(self.ctx) as session:
            for name in ('host-a', 'host-b'):
                session.add(models.Host(hostname=name, report_generation=0,
                                        last_seen_at=timeutils.utcnow()))

    def _add_device(self, hostname, model):
        with db_api.writer.using(context.get_admin_context()) as session:
            session.add(db_rows.new_row(
                models.Device, hostname=hostname, type='FPGA',
                vendor='8086', model=model, status='enabled'))

    def _models_of(self, hostname):
        return sorted(row.model for row in self.ctx.session.query(
            models.Device).filter(models.Device.hostname == hostname))

    def test_read_under_a_lock_sees_the_commit_it_waited_for(self):
        self._add_device('host-b', 'before')
        locked = threading.Event()
        release = threading.Event()

        def other_writer():
            # Holds host-b's lock, then commits a new device under it.
            ctx = context.get_admin_context()
            with db_api.writer.using(ctx):
                db_hosts.lock_host(ctx, 'host-b')
                locked.set()
                release.wait(30)
                ctx.session.add(db_rows.new_row(
                    models.Device, hostname='host-b', type='FPGA',
                    vendor='8086', model='after', status='enabled'))

        thread = threading.Thread(target=other_writer)
        with db_api.writer.using(self.ctx):
            # The transaction reads first: on MySQL under REPEATABLE READ
            # this fixes the snapshot every later plain SELECT reads.
            db_hosts.lock_host(self.ctx, 'host-a')
            self.assertEqual([], self._models_of('host-a'))
            self.assertEqual(['before'], self._models_of('host-b'))
            thread.start()
            self.assertTrue(locked.wait(30))
            threading.Timer(0.5, release.set).start()
            # Waits for the other writer's commit.
            db_hosts.lock_host(self.ctx, 'host-b')
            self.assertEqual(['after', 'before'], self._models_of('host-b'))
        thread.join(30)


class IsolationMySQLTest(_IsolationTests, base.TestCase):
    backend = 'mysql'


class IsolationPostgreSQLTest(_IsolationTests, base.TestCase):
    backend = 'postgresql'
