"""Prometheus metrics of every daemon, and the listener serving them.

The metrics are module-level objects of prometheus_client's default
registry; code that counts something imports this module and calls them
(a counter or histogram costs a lock and an addition: nothing here reads
the database or the network while counting). Labels take bounded values
only: route templates, not paths; methods the code defines, not what a
message claims; a reason's class, not its text. What must be read at a
scrape (hosts by status, ARQs by state) is a :class:`ScrapeGauges`
collector the conductor registers, with a short cache.

The listener (:func:`serve`) is prometheus_client's own HTTP server in a
daemon thread, started when ``[metrics] enabled``; one per process, shared
by the parts of the all-in-one, shut down when the last part stops. The
names, and what each counts, are in doc/source/admin/metrics.rst.
"""

import atexit
import os
import shutil
import socket
import socketserver
import tempfile
import threading
import time
from wsgiref import simple_server

from oslo_log import log as logging
import prometheus_client as prom
from prometheus_client import core
from prometheus_client import multiprocess
from prometheus_client import utils

from cyborg.compat import prometheus as prometheus_compat

LOG = logging.getLogger(__name__)

#: The label value of a route, method or reason outside the known ones.
OTHER = 'other'

# Buckets for what is quick (a DB statement, an RPC cast) and what waits
# on others (an API request, a bind, a Placement request), in seconds.
FAST_BUCKETS = (.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1.0,
                2.5, float('inf'))
SLOW_BUCKETS = (.005, .01, .025, .05, .1, .25, .5, 1.0, 2.5, 5.0, 10.0, 30.0,
                60.0, float('inf'))

API_REQUESTS = prom.Counter(
    'cyborg_api_requests', 'API requests answered, by route template, '
    'method, status and microversion.',
    ['route', 'method', 'status', 'microversion'])
API_DURATION = prom.Histogram(
    'cyborg_api_request_duration_seconds', 'Time to answer an API request.',
    ['route', 'method'], buckets=SLOW_BUCKETS)

RPC_CLIENT = prom.Counter(
    'cyborg_rpc_client_messages', 'RPC messages sent, by method, kind '
    '(call or cast) and outcome (ok or error).',
    ['method', 'kind', 'outcome'])
RPC_CLIENT_DURATION = prom.Histogram(
    'cyborg_rpc_client_duration_seconds', 'Time to send a cast, or to '
    'send a call and have its reply.', ['method', 'kind'],
    buckets=SLOW_BUCKETS)
RPC_SERVER = prom.Counter(
    'cyborg_rpc_server_messages', 'RPC messages run by this server, by '
    'method and outcome (ok or error).', ['method', 'outcome'])
RPC_SERVER_DURATION = prom.Histogram(
    'cyborg_rpc_server_duration_seconds', 'Time to run an RPC method.',
    ['method'], buckets=SLOW_BUCKETS)
REFUSALS = prom.Counter(
    'cyborg_rpc_refusals', 'Messages refused by their signature check, by '
    'receiver and reason class.', ['receiver', 'reason'])

BINDS = prom.Counter(
    'cyborg_conductor_binds', 'ARQ binds finished, by outcome (Bound, '
    'BindFailed, or error: the request was refused).', ['outcome'])
BIND_DURATION = prom.Histogram(
    'cyborg_conductor_bind_duration_seconds', 'Time to bind the ARQs of '
    'one request.', buckets=SLOW_BUCKETS)
REPORTS_RECEIVED = prom.Counter(
    'cyborg_conductor_reports_received', 'Agent reports received.')
REPORTS = prom.Counter(
    'cyborg_conductor_reports', 'Agent reports handled, by outcome: '
    'applied (the rows or Placement needed it), unchanged, refused (older '
    'than one applied, or replaced by a newer one), failed.', ['outcome'])
HEARTBEATS = prom.Counter(
    'cyborg_conductor_heartbeats', 'Agent heartbeats, by outcome '
    '(accepted or refused).', ['outcome'])
LEASE_HELD = prom.Gauge(
    'cyborg_conductor_lease_held', '1 while this conductor holds the '
    'lease, 0 otherwise.', ['lease'])

PLACEMENT = prom.Counter(
    'cyborg_placement_requests', 'Requests to Placement, by method, route '
    'template and status.', ['method', 'route', 'status'])
PLACEMENT_DURATION = prom.Histogram(
    'cyborg_placement_request_duration_seconds', 'Time of a request to '
    'Placement.', ['method', 'route'], buckets=SLOW_BUCKETS)

DB_STATEMENTS = prom.Counter(
    'cyborg_db_statements', 'SQL statements run, by kind (select, insert, '
    'update, delete, other).', ['kind'])
DB_DURATION = prom.Histogram(
    'cyborg_db_statement_duration_seconds', 'Time of an SQL statement.',
    ['kind'], buckets=FAST_BUCKETS)

#: HTTP methods counted by name; any other is OTHER.
METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                     'OPTIONS'))
#: SQL statement kinds counted by name.
STATEMENTS = frozenset(('select', 'insert', 'update', 'delete'))

# The reason classes of signing refusals: the first class whose word is
# in the reason (signing.Refused's text, written by cyborg) names it.
_REASONS = (('replayed', 'replay'), ('reordered', 'replay'),
            ('unsigned', 'unsigned'), ('malformed', 'malformed'),
            ('signature', 'signature'), ('cannot verify', 'signature'),
            ('window', 'stale'), ('signed for', 'target'),
            ('may not send', 'sender'), ('for the api only', 'sender'),
            ('about host', 'sender'), ('bytes', 'size'),
            ('heartbeat channel', 'method'))


def method_label(method):
    return method if method in METHODS else OTHER


def reason_class(reason):
    """The bounded class of a refusal's ``reason`` text."""
    text = (reason or '').lower()
    for word, name in _REASONS:
        if word in text:
            return name
    return OTHER


def count_refusal(receiver, reason):
    REFUSALS.labels(receiver, reason_class(reason)).inc()


def statement_kind(statement):
    kind = statement.lstrip()[:6].lower()
    return kind if kind in STATEMENTS else OTHER


def placement_route(url):
    """A Placement URL's template: the collections it names, each id
    (every second segment) as ``{id}``, the query left out."""
    path = url.partition('?')[0].strip('/')
    if not path:
        return '/'
    segments = path.split('/')
    return '/' + '/'.join('{id}' if index % 2 else segment
                          for index, segment in enumerate(segments))


class Children(dict):
    """A labelled metric's children by their tuple of label values, each
    made once by ``labels()``: on the paths of every request, message and
    statement, a dict lookup instead of ``labels()``'s conversions and
    lock. The values must be bounded (the labels are)."""

    def __init__(self, metric):
        super().__init__()
        self.metric = metric

    def __missing__(self, key):
        # Two threads may both get here: labels() gives both one child.
        child = self[key] = self.metric.labels(*key)
        return child


_API_REQUESTS = Children(API_REQUESTS)
_API_DURATION = Children(API_DURATION)
_RPC_CLIENT = Children(RPC_CLIENT)
_RPC_CLIENT_DURATION = Children(RPC_CLIENT_DURATION)
_RPC_SERVER = Children(RPC_SERVER)
_RPC_SERVER_DURATION = Children(RPC_SERVER_DURATION)
_DB_STATEMENTS = Children(DB_STATEMENTS)
_DB_DURATION = Children(DB_DURATION)


def count_api_request(route, method, status, microversion, seconds):
    _API_REQUESTS[route, method, status, microversion].inc()
    _API_DURATION[route, method].observe(seconds)


def count_statement(kind, seconds):
    """One SQL statement of ``kind``; ``seconds`` None: not timed."""
    _DB_STATEMENTS[kind,].inc()
    if seconds is not None:
        _DB_DURATION[kind,].observe(seconds)


class _Counted:
    """Counts (``outcome`` ok or error, after ``labels``) and times what
    runs inside it."""

    __slots__ = ('counts', 'times', 'labels', 'started')

    def __init__(self, counts, times, labels):
        self.counts, self.times, self.labels = counts, times, labels

    def __enter__(self):
        self.started = time.monotonic()

    def __exit__(self, exc_type, _exc, _tb):
        self.counts[
            (*self.labels, 'ok' if exc_type is None else 'error')].inc()
        self.times[self.labels].observe(time.monotonic() - self.started)
        return False


def rpc_client(method, call):
    """Count and time one message sent (a call waits for its reply)."""
    return _Counted(_RPC_CLIENT, _RPC_CLIENT_DURATION,
                    (method, 'call' if call else 'cast'))


def rpc_server(method):
    """Count and time one RPC method run by this server."""
    return _Counted(_RPC_SERVER, _RPC_SERVER_DURATION, (method,))


class ScrapeGauges:
    """A collector of gauges read at a scrape: ``readers`` maps a gauge's
    (name, help, label name) to a callable returning ``{label value:
    number}``; or, with the label name None, a gauge histogram's
    (name, help) to one returning ``[(upper bound, how many at most that,
    cumulative)]``, the last bound ``+Inf`` (its ``_gsum`` is NaN: not
    known). Each reader's answer is kept
    ``cache_seconds``; a reader that fails leaves its gauge out of that
    scrape (logged)."""

    def __init__(self, readers, cache_seconds=10.0, clock=time.monotonic):
        self.readers = readers
        self.cache_seconds = cache_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._cache = {}

    def _read(self, key, reader):
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and now < cached[0]:
                return cached[1]
            try:
                values = reader()
            except Exception as e:
                LOG.warning('Metrics: %s could not be read: %s', key[0], e)
                return None
            self._cache[key] = (now + self.cache_seconds, values)
            return values

    def collect(self):
        for key, reader in self.readers.items():
            values = self._read(key, reader)
            if values is None:
                continue
            name, doc, label = key
            if label is None:
                # No sum: the buckets are counted by one row of sums.
                yield core.GaugeHistogramMetricFamily(
                    name, doc, buckets=[(utils.floatToGoString(bound), count)
                                        for bound, count in values],
                    gsum_value=float('nan'))
                continue
            family = core.GaugeMetricFamily(name, doc, labels=[label])
            for value, number in sorted(values.items()):
                family.add_metric([str(value)], number)
            yield family

    def describe(self):
        # Empty: registering does not read the database.
        return []


def register(collector):
    prom.REGISTRY.register(collector)


def unregister(collector):
    try:
        prom.REGISTRY.unregister(collector)
    except KeyError:
        pass


class CannotServe(Exception):
    """The metrics listener cannot bind its address (in use, say)."""


class _Listener:
    """The process's metrics listener, shared by its services."""

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._server = None
        self._thread = None
        self.port = None

    def start(self, conf, registry=prom.REGISTRY, reuse_port=False):
        with self._lock:
            if self._users == 0:
                try:
                    if reuse_port:
                        server, thread = _serve_reusing_port(
                            conf.metrics.host, conf.metrics.port, registry)
                    else:
                        server, thread = prom.start_http_server(
                            conf.metrics.port, addr=conf.metrics.host,
                            registry=registry)
                except OSError as e:
                    raise CannotServe(
                        'cannot serve metrics on %s:%s ([metrics] host and '
                        'port): %s' % (conf.metrics.host, conf.metrics.port,
                                       e.strerror or e)) from None
                self._server, self._thread = server, thread
                self.port = server.server_address[1]
                LOG.info('Metrics on http://%s:%s/metrics',
                         conf.metrics.host, self.port)
            self._users += 1

    def stop(self):
        with self._lock:
            if self._users == 0:
                return
            self._users -= 1
            if self._users or self._server is None:
                return
            server, self._server = self._server, None
        server.shutdown()
        server.server_close()


LISTENER = _Listener()


class Serving:
    """What :func:`serve` returns: :meth:`stop` once, when the service
    stops."""

    def __init__(self, started):
        self._started = started

    def stop(self):
        if self._started:
            self._started = False
            LISTENER.stop()


def serve(conf):
    """Start (or share) the metrics listener if ``[metrics] enabled``;
    raises CannotServe, so a daemon that cannot serve its metrics does
    not start."""
    if not conf.metrics.enabled:
        return Serving(False)
    LISTENER.start(conf)
    return Serving(True)


def _remove_in(pid, directory):
    """Remove ``directory`` at the exit of process ``pid`` only (a
    forked worker inherits the handler)."""
    if os.getpid() == pid:
        shutil.rmtree(directory, ignore_errors=True)


def serve_workers(conf):
    """For a parent process about to fork workers (cyborg-api with
    ``[api] api_workers`` > 1), if ``[metrics] enabled``: from now on
    every process counts in files of a directory of this start's own
    (prometheus_client's multiprocess mode), and this process serves
    their sum. Call before anything is counted: a labelled value made
    before it would be counted in the worker's memory, unseen. The
    directory goes when this process exits."""
    if not conf.metrics.enabled:
        return Serving(False)
    directory = tempfile.mkdtemp(prefix='cyborg-metrics-')
    LOG.info('Metrics of the workers counted in %s', directory)
    atexit.register(_remove_in, os.getpid(), directory)
    os.environ['PROMETHEUS_MULTIPROC_DIR'] = directory
    # prometheus_client chose its value class when imported: choose again.
    prometheus_compat.choose_value_class()
    registry = prom.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)
    LISTENER.start(conf, registry)
    return Serving(True)


# The API under a WSGI server (uwsgi, mod_wsgi): its workers are forked
# by the server, and none of them is a parent of the others.

#: prometheus_client's own variable: the directory of multiprocess mode.
MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'


class _Quiet(simple_server.WSGIRequestHandler):

    def log_message(self, *args):
        pass


class _ReusePortServer(socketserver.ThreadingMixIn,
                       simple_server.WSGIServer):
    """A listener that every worker of a WSGI server binds on the same
    port (SO_REUSEPORT: same user only); the kernel hands each scrape to
    one of them, and each serves the sum of all."""

    daemon_threads = True
    allow_reuse_port = True


def _serve_reusing_port(host, port, registry):
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    server_class = type('Server', (_ReusePortServer,),
                        {'address_family': family})
    server = simple_server.make_server(
        host, port, prom.make_wsgi_app(registry), server_class,
        handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True,
                              name='cyborg-metrics')
    thread.start()
    return server, thread


def serve_wsgi(conf, environ=os.environ):
    """For the API loaded by a WSGI server, if ``[metrics] enabled``:
    every worker counts in the files of ``$PROMETHEUS_MULTIPROC_DIR``
    (set by the server's configuration before Python starts, so that
    prometheus_client counts there from its import on) and serves their
    sum on ``[metrics] host`` and ``port``, bound with SO_REUSEPORT by
    every worker. Raises CannotServe without that directory: each worker
    would serve only its own counts, a different one at each scrape."""
    if not conf.metrics.enabled:
        return Serving(False)
    directory = environ.get(MULTIPROC_ENV)
    if not directory or not os.path.isdir(directory):
        raise CannotServe(
            '[metrics] enabled under a WSGI server needs $%s, a directory '
            'of the API\'s own that the server sets for its workers and '
            'empties at its start (%s)' % (
                MULTIPROC_ENV, 'unset' if not directory
                else '%s is not a directory' % directory))
    # As prometheus_client chose at its import, unless the server set the
    # variable later (then the labelled values, made from now on).
    prometheus_compat.choose_value_class()
    registry = prom.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)
    LISTENER.start(conf, registry, reuse_port=True)
    return Serving(True)
