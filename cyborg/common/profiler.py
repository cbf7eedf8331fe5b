"""Traces with osprofiler, joining the caller's (Nova's ``--os-profile``).

Wired as Nova, Placement and Ironic wire osprofiler, with its options
(``[profiler]``, :mod:`cyborg.conf.profiler`):

* each daemon calls :func:`setup` at start (osprofiler's
  ``init_from_conf``): the notifier of ``[profiler] connection_string``
  (by default osprofiler's OpenTelemetry driver, ``otlp://``), the WSGI
  middleware's keys and, with ``trace_requests``, a span for every HTTP
  request the process makes (to Placement, Nova, Glance, Keystone);
* the API's pipeline has osprofiler's WSGI middleware
  (:func:`wsgi_middleware`): a request is traced only when its
  ``X-Trace-Info`` header is signed (``X-Trace-HMAC``) with one of
  ``[profiler] hmac_keys``; an unsigned or wrongly signed one is served
  untraced;
* the database engine gets osprofiler's statement spans
  (:func:`trace_statements`, with ``trace_sqlalchemy``);
* keystoneauth adds the signed trace headers to every request it sends
  while a trace is on (Placement and Nova then join the trace).

Across RPC (cyborg.common.rpc), unlike osprofiler's usual integration,
no key travels: a message's context carries only the trace's ids
(:data:`CONTEXT_KEY`: ``base_id`` and ``parent_id``), signed with the
rest of the context, and the receiver joins the trace with a key of its
own configuration (:func:`serving`). It does so only for the senders it
trusts to start traces (:data:`TRUSTED_SENDERS`: the API and the
conductor). A compute host's agent is not trusted: the conductor records
the spans of its message under the ids the agent sent, without a key, so
nothing the conductor does for it carries signed trace headers to
Placement or Nova, or trace ids to another agent. An agent can attach
spans to a trace, and no more.
"""

import contextlib
import threading

from oslo_log import log as logging
from oslo_utils import uuidutils
from osprofiler import initializer
from osprofiler import notifier
from osprofiler import profiler
from osprofiler import sqlalchemy as profiler_sqlalchemy
from osprofiler import web

from cyborg.common import keys
from cyborg.compat import osprofiler as osprofiler_compat

LOG = logging.getLogger(__name__)

PROJECT = 'cyborg'

#: The RPC context field with the trace's ids.
CONTEXT_KEY = 'trace_info'
#: The ids that field may hold (osprofiler's names), no other.
_IDS = ('base_id', 'parent_id')
#: The senders (proven by cyborg.common.signing) whose trace ids a
#: receiver joins with its key: what it does then may be traced onward.
TRUSTED_SENDERS = (keys.API, keys.CONDUCTOR)
#: osprofiler's default hmac_keys, which anyone may know.
_WELL_KNOWN_KEY = 'SECRET_KEY'

#: This process's first ``[profiler] hmac_keys`` once :func:`setup` ran
#: with profiling on; None when it is off.
_KEY = []
_LOCK = threading.Lock()


def split_keys(value):
    """The keys of ``[profiler] hmac_keys`` (comma-separated)."""
    return [key.strip() for key in (value or '').split(',') if key.strip()]


def enabled(conf):
    """Whether ``[profiler] enabled`` (False where the group is not
    registered)."""
    group = getattr(conf, 'profiler', None)
    return bool(group is not None and group.enabled)


def setup(conf, service, host):
    """Turn tracing on for this process as ``[profiler]`` says (once per
    process; the all-in-one's parts share it): ``service`` names the
    daemon (``api``, ``conductor``, ``agent``, ``aio``; spans come from
    ``cyborg-<service>``). Returns whether tracing is on."""
    if not enabled(conf):
        return False
    with _LOCK:
        if _KEY:
            return True
        configured = split_keys(conf.profiler.hmac_keys)
        if not configured:
            LOG.error('[profiler] enabled is True but hmac_keys is empty: '
                      'no trace is taken')
            return False
        if _WELL_KNOWN_KEY in configured:
            LOG.warning('[profiler] hmac_keys holds osprofiler\'s default '
                        'key %s: anyone who knows it can have requests '
                        'traced; set a secret of your own', _WELL_KNOWN_KEY)
        initializer.init_from_conf(conf, context=None, project=PROJECT,
                                   service=service, host=host)
        osprofiler_compat.per_thread(notifier.get())
        _KEY.append(configured[0])
        LOG.info('Tracing with osprofiler to %s',
                 conf.profiler.connection_string.split('://')[0] + '://')
    return True


def wsgi_middleware(app, conf):
    """``app`` behind osprofiler's middleware when tracing is on: a
    request with a trace header signed with one of ``[profiler]
    hmac_keys`` is traced (a ``wsgi`` span), any other is served as
    is."""
    if not enabled(conf):
        return app
    return web.WsgiMiddleware(app, hmac_keys=conf.profiler.hmac_keys,
                              enabled=True)


def traces_statements(conf):
    return enabled(conf) and bool(conf.profiler.trace_sqlalchemy)


def trace_statements(engine):
    """A span for every statement ``engine`` runs in a traced request
    (for oslo.db's ``append_on_engine_create``)."""
    import sqlalchemy
    profiler_sqlalchemy.add_tracing(sqlalchemy, engine, 'db')


def add_trace_info(values):
    """``values`` (an outgoing RPC context) with the ids of the trace
    this thread is in, if any, and one it may pass on (started with a
    key): never a key."""
    current = profiler.get()
    if current is not None and current.hmac_key:
        values[CONTEXT_KEY] = {'base_id': current.get_base_id(),
                               'parent_id': current.get_id()}
    return values


def trace_ids(value):
    """The ids of a received :data:`CONTEXT_KEY` (a dict of UUIDs with
    ``base_id`` and maybe ``parent_id``, nothing else), or None."""
    if not isinstance(value, dict) or 'base_id' not in value:
        return None
    if set(value) - set(_IDS):
        return None
    if not all(isinstance(v, str) and uuidutils.is_uuid_like(v)
               for v in value.values()):
        return None
    return {name: value[name] for name in _IDS if name in value}


@contextlib.contextmanager
def serving(trace_info, sender, method):
    """Runs an incoming RPC message (``method``, sent by the proven
    ``sender``, with ``trace_info`` from its context) as an ``rpc`` span
    of the sender's trace, if it sent one and tracing is on here."""
    ids = trace_ids(trace_info) if _KEY else None
    if trace_info is not None and ids is None and _KEY:
        LOG.debug('Trace ids of %s from %s ignored: not two UUIDs',
                  method, sender)
    if ids is None:
        yield
        return
    span = profiler.Trace('rpc', info={'function': {'name': method}})
    if profiler.get() is not None:
        # Delivered in the sender's thread (the all-in-one's messages):
        # a span of the trace under way.
        with span:
            yield
        return
    key = _KEY[0] if sender in TRUSTED_SENDERS else None
    profiler.init(key, **ids)
    try:
        with span:
            yield
    finally:
        profiler.clean()
