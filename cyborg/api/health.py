"""What ``/healthcheck`` checks: the API's database and its broker.

Two backends of oslo.middleware's healthcheck application, registered as
its plugins (entry points ``oslo.middleware.healthcheck``:
``cyborg_database`` and ``cyborg_broker``) and named in ``[healthcheck]
backends``, whose default lists both. ``/healthcheck`` answers 503 while
either says the dependency is down, 200 once it is back.

* ``cyborg_database`` runs ``SELECT 1`` on the API's own engine;
* ``cyborg_broker`` opens a channel on a connection of its own to the
  broker of ``transport_url``, with the same user and TLS options as the
  API's messaging; with in-process messaging (the all-in-one) there is
  nothing to reach and it passes.

A load balancer may poll as often as it likes: each check runs at most
once every :data:`CACHE_SECONDS` per process, every other request in
between gets its last result, and a request waits at most
:data:`TIMEOUT_SECONDS` for a check that hangs (a server that drops
packets). The reason in the plain body names the dependency and the kind
of failure only (login refused, unreachable...); the details (shown with
``[healthcheck] detailed = true``) and the log add the database URL with
its password masked, or the broker's address, and the driver's message.
"""

from importlib import metadata as importlib_metadata
import os
import threading
import time

import kombu
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from cyborg.common import heartbeats
from cyborg.common import rabbit
from cyborg.common import rpc
from cyborg.db import api as db_api
from cyborg.db import migration

LOG = logging.getLogger(__name__)

#: The backends cyborg adds to ``[healthcheck] backends`` by default.
BACKENDS = ('cyborg_database', 'cyborg_broker')
#: How long a check's result is reused, in seconds.
CACHE_SECONDS = 2.0
#: How long a request waits for a check that does not finish, in seconds.
TIMEOUT_SECONDS = 5.0


def missing_backends(conf):
    """The backends of :data:`BACKENDS` that ``[healthcheck] backends``
    leaves out (an operator who set it without them)."""
    return [name for name in BACKENDS if name not in conf.healthcheck.backends]


def unknown_backends(conf):
    """The backends ``[healthcheck] backends`` names that no installed
    package provides (a misspelling, or cyborg installed without its
    entry points): oslo.middleware leaves them out and answers 200."""
    installed = {entry.name for entry in importlib_metadata.entry_points(
        group=healthcheck.Healthcheck.NAMESPACE)}
    return [name for name in conf.healthcheck.backends
            if name not in installed]


class CachedCheck:
    """Runs ``check`` (which returns ``(available, reason, details)``) in
    a thread of its own, at most once every ``ttl`` seconds; a request
    waits for it at most ``timeout`` seconds. A change of the result is
    logged once."""

    def __init__(self, name, check, ttl=CACHE_SECONDS,
                 timeout=TIMEOUT_SECONDS):
        self.name = name
        self.check = check
        self.ttl = ttl
        self.timeout = timeout
        self._lock = threading.Lock()
        self._reset()

    def _reset(self):
        self._pid = os.getpid()
        self._result = None
        self._at = None
        self._running = None
        self._started = None

    def result(self):
        """The last result if it is fresh, else that of a new run."""
        with self._lock:
            if self._pid != os.getpid():
                self._reset()  # forked: the run and its thread stayed behind
            now = time.monotonic()
            if self._result is not None and now - self._at < self.ttl:
                return self._result
            if self._running is None:
                self._running = threading.Event()
                self._started = now
                threading.Thread(target=self._run, args=(self._running,),
                                 name='healthcheck-%s' % self.name,
                                 daemon=True).start()
            done, left = self._running, self._started + self.timeout - now
        if done.wait(max(0.0, left)):
            with self._lock:
                return self._result
        return (False, '%s: no answer within %s s' % (self.name,
                                                      self.timeout),
                'the check is still running')

    def _run(self, done):
        try:
            result = self.check()
        except Exception as e:  # a check's own failure is a failed check
            result = (False, '%s: the check failed' % self.name, str(e))
        with self._lock:
            before = self._result
            self._result, self._at = result, time.monotonic()
            self._running = None
        done.set()
        if before is None and result[0]:
            return
        if before is None or before[0] != result[0]:
            (LOG.info if result[0] else LOG.warning)(
                'Health check: %s (%s)', result[1], result[2])


class _Check(pluginbase.HealthcheckBaseExtension):
    """A backend whose ``probe()`` result is cached (:class:`CachedCheck`)."""

    name = None

    def __init__(self, oslo_conf, conf):
        super().__init__(oslo_conf, conf)
        self._cached = CachedCheck(self.name, self.probe)

    def healthcheck(self, server_port):
        available, reason, details = self._cached.result()
        return pluginbase.HealthcheckResult(available, reason,
                                            details=details)

    def probe(self):
        raise NotImplementedError


class DatabaseCheck(_Check):
    """The database answers ``SELECT 1`` on the API's engine."""

    name = 'database'

    def probe(self):
        url = self.oslo_conf.database.connection
        shown = migration.masked_url(url)
        started = time.monotonic()
        try:
            with db_api.reader.get_engine().connect() as connection:
                connection.execute(sa.text('SELECT 1')).fetchall()
        except Exception as e:
            return (False, 'database: unavailable (%s)'
                    % migration.problem_kind(e),
                    '%s: %s' % (shown, migration.one_line(e, url)))
        return (True, 'database: OK', '%s answered in %.0f ms' % (
            shown, (time.monotonic() - started) * 1000))


class BrokerCheck(_Check):
    """The broker of ``transport_url`` accepts the API's user and opens
    a channel; passes with in-process messaging."""

    name = 'broker'

    def __init__(self, oslo_conf, conf):
        super().__init__(oslo_conf, conf)
        self._connection = None

    def probe(self):
        conf = self.oslo_conf
        rpc.register_opts(conf)
        if rpc.in_process(conf):
            return (True, 'broker: OK (in-process messaging)',
                    'transport_url %s keeps every message in this process'
                    % conf.transport_url.split(':', 1)[0])
        url = messaging.TransportURL.parse(conf, conf.transport_url)
        if url.transport.split('+')[0] not in rabbit.SCHEMES:
            return (True, 'broker: not checked', 'no check for transport %s'
                    % url.transport)
        if self._connection is not None:
            try:
                return self._open_channel(self._connection)
            except Exception as e:
                LOG.debug('The health check connection failed: %s', e)
                self._drop()
        return self._connect(url)

    def _connect(self, url):
        failures = []
        for host in url.hosts or [messaging.TransportHost('localhost')]:
            connection = kombu.Connection(
                hostname=host.hostname or 'localhost',
                port=host.port or 5672, userid=host.username or 'guest',
                password=host.password or 'guest',
                virtual_host=url.virtual_host or '/',
                ssl=self._ssl(), transport='pyamqp',
                connect_timeout=TIMEOUT_SECONDS)
            where = '%s:%s' % (host.hostname, host.port or 5672)
            try:
                connection.connect()
                result = self._open_channel(connection)
            except Exception as e:
                failures.append('%s: %s' % (where, ' '.join(
                    str(e).split()) or type(e).__name__))
                _close(connection)
                continue
            self._connection = connection
            return result
        return (False, 'broker: unreachable', '; '.join(failures))

    @staticmethod
    def _open_channel(connection):
        channel = connection.channel()
        channel.close()
        return (True, 'broker: OK', '%s:%s accepted the connection' % (
            connection.hostname, connection.port))

    def _drop(self):
        connection, self._connection = self._connection, None
        _close(connection)

    def _ssl(self):
        """The TLS options of ``[oslo_messaging_rabbit]``, as the
        heartbeat channel (and oslo.messaging's driver) build them."""
        for group, opts in messaging_opts.list_opts():
            if group == 'oslo_messaging_rabbit':
                self.oslo_conf.register_opts(opts, group=group)
        return heartbeats.ssl_options(self.oslo_conf)


def _close(connection):
    try:
        connection.release()
    except Exception as e:
        LOG.debug('Closing a health check connection: %s', e)
