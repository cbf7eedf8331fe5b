"""Fixtures for tests against real servers: a database of its own on
SQLite, MariaDB or PostgreSQL, and messaging on RabbitMQ or in-process."""

import os
import sys
import uuid

import fixtures
from oslo_db.sqlalchemy import engines
from oslo_messaging import conffixture
from oslo_messaging.notify import _impl_test as notify_test
import sqlalchemy as sa

from cyborg.common import keys
from cyborg.common import rpc
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import services


_WRITES = ('INSERT', 'UPDATE', 'DELETE', 'CREATE', 'DROP', 'ALTER')


def _api_frame():
    """The innermost cyborg.api module on the call stack, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get('__name__', '')
        if module == 'cyborg.api' or module.startswith('cyborg.api.'):
            return '%s:%d' % (module, frame.f_lineno)
        frame = frame.f_back
    return None


class APIWriteError(AssertionError):
    pass


def forbid_api_writes(engine):
    """Fail any statement that writes when API code is on the stack.

    DESIGN.md: the API process reads the database, and every write goes
    through the conductor. The Database fixture installs this on every
    test engine, so a handler that writes fails its tests.
    """
    def check(_conn, _cursor, statement, _params, _context, _many):
        if statement.lstrip().upper().startswith(_WRITES):
            where = _api_frame()
            if where:
                raise APIWriteError('API code at %s wrote to the database: '
                                    '%s' % (where, statement[:80]))
    sa.event.listen(engine, 'before_cursor_execute', check)


def _database_url(server_url, name):
    return sa.engine.make_url(server_url).set(database=name)


def server_database(owner, backend, prefix='cyborg_test'):
    """A new database ``<prefix>_<hex>`` on the shared server of
    ``backend`` ('mysql' or 'postgresql'), dropped when ``owner`` (a test
    or a fixture) cleans up; its URL. ``owner`` is skipped, or fails
    under CYBORG_TEST_REQUIRE_SERVICES, where the server does not
    answer."""
    test = getattr(owner, 'test', owner)
    server_url = services.require(test, backend)
    name = '%s_%s' % (prefix, uuid.uuid4().hex[:12])
    admin = sa.create_engine(server_url, isolation_level='AUTOCOMMIT')
    with admin.connect() as connection:
        connection.execute(sa.text('CREATE DATABASE %s' % name))

    def drop():
        with admin.connect() as connection:
            if backend == 'postgresql':
                connection.execute(sa.text(
                    'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name))
            else:
                connection.execute(sa.text(
                    'DROP DATABASE IF EXISTS %s' % name))
        admin.dispose()
    owner.addCleanup(drop)
    return _database_url(server_url, name).render_as_string(
        hide_password=False)


class Database(fixtures.Fixture):
    """A fresh, empty database that cyborg's engine points at.

    ``backend`` is 'sqlite', 'mysql' or 'postgresql'. On the servers a new
    database is created for the test and dropped after it. The schema is
    made by the migrations (``schema='migrations'``), from the models
    (``'models'``, faster), or not at all (``None``).
    """

    def __init__(self, test, backend='sqlite', schema='models', gated=False):
        super().__init__()
        self.test = test
        self.backend = backend
        self.schema = schema
        # Gated (a server backend only): cyborg's engine reaches the
        # database through ``self.gate`` (faults.TcpGate), which a test
        # closes to take the database away; ``self.url`` stays direct.
        self.gated = gated
        self.gate = None

    def _setUp(self):
        # This process has not found the new database down: an outage an
        # earlier test made must not give this one's conductors a grace
        # period in which no host is marked down.
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.api._LAST_UNAVAILABLE', [None]))
        if self.backend == 'sqlite':
            # A file, not ':memory:': an in-memory database shares one
            # connection between threads, so a reader would see another
            # thread's uncommitted rows.
            path = self.useFixture(fixtures.TempDir()).join('cyborg.sqlite')
            self.url = 'sqlite:///%s' % path
        else:
            self.url = db_api.connection_url(
                self._create_server_database())
        # Made the way enginefacade makes the real one, so that errors are
        # translated (DBDuplicateEntry, DBDeadlock) and SQLite
        # transactions begin as in production.
        engine_url = self.url
        if self.gated:
            from cyborg.tests.functional import faults
            self.gate, engine_url = faults.TcpGate.for_url(self, self.url)
            self.gate.open()
        self.engine = engines.create_engine(engine_url)
        self.addCleanup(self.engine.dispose)
        forbid_api_writes(self.engine)
        if self.schema == 'models':
            models.Base.metadata.create_all(self.engine)
            migration.stamp('head', engine=self.engine)
        elif self.schema == 'migrations':
            migration.upgrade('head', engine=self.engine)
        self.addCleanup(db_api.context_manager.patch_engine(self.engine))

    def _create_server_database(self):
        return server_database(self, self.backend)


def start_rpc_service(test, manager, topic, host):
    """Start ``manager`` as an RPC service on ``topic``; stopped at the end
    of ``test``."""
    from cyborg.common import service
    svc = service.RPCService(host, topic, manager)
    svc.start()
    test.addCleanup(svc.stop)
    return svc


class Messaging(fixtures.Fixture):
    """oslo.messaging on RabbitMQ (``'rabbit'``) or in-process
    (``'fake'``), with an exchange of its own so tests do not meet."""

    def __init__(self, test, conf, backend='fake'):
        super().__init__()
        self.test = test
        self.conf = conf
        self.backend = backend

    def _setUp(self):
        if self.backend == 'rabbit':
            url = services.require(self.test, 'rabbit')
        else:
            url = 'fake:/'
        messaging_conf = self.useFixture(conffixture.ConfFixture(self.conf))
        messaging_conf.transport_url = url
        # Notifications are kept in memory for the test to look at.
        self.conf.set_override('driver', ['test'],
                               group='oslo_messaging_notifications')
        del notify_test.NOTIFICATIONS[:]
        self.notifications = notify_test.NOTIFICATIONS
        namespace = 'test-%s-' % uuid.uuid4().hex[:8]
        self.conf.set_override('control_exchange', namespace + 'cyborg')
        self.conf.set_override('rpc_topic_prefix', namespace)
        # Signed messages as in production; every identity the test
        # speaks as gets a key when first used.
        self.key_dir = self.useFixture(fixtures.TempDir()).path
        self.conf.set_override('key_dir', self.key_dir, group='security')
        self.keys = keys.KeyStore(self.key_dir, create_missing=True)
        # Conductors, agents and the API of a test share this process's
        # transport: it declares what conductors do.
        rpc.init(self.conf, self.keys, identity=keys.CONDUCTOR)
        self.addCleanup(rpc.cleanup)


class NoHTTPEnvironment(fixtures.Fixture):
    """No proxy (``*_proxy``) and no CA bundle (``REQUESTS_CA_BUNDLE``,
    ``CURL_CA_BUNDLE``) in the environment during the test; it sets
    those it needs."""

    def _setUp(self):
        for name in list(os.environ):
            if name.lower().endswith('_proxy') or name in (
                    'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE'):
                self.useFixture(fixtures.EnvironmentVariable(name))
