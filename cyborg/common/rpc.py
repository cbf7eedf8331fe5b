"""oslo.messaging plumbing: transports, serializer, clients and servers."""

import concurrent.futures

import oslo_messaging as messaging
import oslo_messaging.opts  # noqa: F401  (for register_opts)
from oslo_messaging.rpc import dispatcher

from cyborg.common import context as cyborg_context
from cyborg.objects import base as objects_base

CONDUCTOR_TOPIC = 'cyborg-conductor'
AGENT_TOPIC = 'cyborg-agent'

ALLOWED_EXMODS = ['cyborg.common.exception']

_TRANSPORT = None
_NOTIFICATION_TRANSPORT = None
_NOTIFIER = None


def topic(conf, name):
    """The broker topic of ``name`` (CONDUCTOR_TOPIC or AGENT_TOPIC)."""
    return conf.rpc_topic_prefix + name


def set_defaults(control_exchange='cyborg'):
    messaging.set_transport_defaults(control_exchange)


def init(conf):
    """Create the process's transports; call once at service start."""
    global _TRANSPORT, _NOTIFICATION_TRANSPORT, _NOTIFIER
    _TRANSPORT = messaging.get_rpc_transport(
        conf, allowed_remote_exmods=ALLOWED_EXMODS)
    _NOTIFICATION_TRANSPORT = messaging.get_notification_transport(
        conf, allowed_remote_exmods=ALLOWED_EXMODS)
    _NOTIFIER = messaging.Notifier(
        _NOTIFICATION_TRANSPORT, serializer=RequestContextSerializer(),
        topics=['versioned_notifications'])


def cleanup():
    global _TRANSPORT, _NOTIFICATION_TRANSPORT, _NOTIFIER
    for transport in (_TRANSPORT, _NOTIFICATION_TRANSPORT):
        if transport is not None:
            transport.cleanup()
    _TRANSPORT = _NOTIFICATION_TRANSPORT = _NOTIFIER = None


def initialized():
    return _TRANSPORT is not None


class RequestContextSerializer(messaging.Serializer):
    """Carries the request context and versioned objects over RPC."""

    def __init__(self, base=None):
        self._base = base or objects_base.CyborgObjectSerializer()

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return cyborg_context.RequestContext.from_dict(context)


def get_client(target, version_cap=None):
    return messaging.get_rpc_client(
        _TRANSPORT, target, version_cap=version_cap,
        serializer=RequestContextSerializer())


def get_topic_client(name, version_cap):
    """A client of cyborg's topic ``name`` (with [DEFAULT]
    rpc_topic_prefix), capped at ``version_cap``."""
    from cyborg.conf import CONF
    target = messaging.Target(topic=topic(CONF, name), version='1.0')
    return get_client(target, version_cap=version_cap)


class Executor(concurrent.futures.ThreadPoolExecutor):
    """What runs an RPC server's incoming messages.

    oslo.messaging's ``threading`` executor is futurist's thread pool,
    which starts a new thread for every message until it holds
    ``executor_thread_pool_size`` (64), busy or not, and whose idle
    threads each wake once a second: an idle daemon cost more the longer
    it had run (an all-in-one, after a few minutes of heartbeats, had 20
    such threads, 0.06 CPU-s a minute). The standard library's pool
    starts a thread only when none is idle, and an idle one sleeps until
    work or shutdown comes.
    """

    def __init__(self, max_workers):
        super().__init__(max_workers=max_workers,
                         thread_name_prefix='cyborg-rpc')


def get_server(target, endpoints):
    server = messaging.get_rpc_server(
        _TRANSPORT, target, endpoints, executor='threading',
        serializer=RequestContextSerializer(),
        access_policy=dispatcher.DefaultRPCAccessPolicy)
    # oslo.messaging makes the pool from this class at start(), with
    # max_workers=executor_thread_pool_size, and uses only submit() and
    # shutdown(wait=True). A test fails should a release stop reading it.
    server._executor_cls = Executor
    return server


def get_notifier(publisher_id):
    return _NOTIFIER.prepare(publisher_id=publisher_id)


def register_opts(conf):
    """Register oslo.messaging's [DEFAULT] options (transport_url, ...)
    so they can be defaulted before a transport exists."""
    for group, opts in messaging.opts.list_opts():
        if group in (None, 'DEFAULT'):
            conf.register_opts(opts)
