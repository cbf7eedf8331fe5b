"""oslo.messaging plumbing: transports, serializer, clients and servers."""

import concurrent.futures

from oslo_log import log as logging
import oslo_messaging as messaging
import oslo_messaging.opts  # noqa: F401  (for register_opts)
from oslo_messaging.rpc import dispatcher
from oslo_messaging.rpc import server as rpc_server
from oslo_messaging import transport as msg_transport

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import keys
from cyborg.common import metrics
from cyborg.common import profiler
from cyborg.common import rabbit
from cyborg.common import signing
from cyborg.compat import oslo_messaging as messaging_compat
from cyborg.objects import base as objects_base

LOG = logging.getLogger(__name__)

CONDUCTOR_TOPIC = 'cyborg-conductor'
AGENT_TOPIC = 'cyborg-agent'

ALLOWED_EXMODS = ['cyborg.common.exception']

_TRANSPORT = None
_NOTIFICATION_TRANSPORT = None
_NOTIFIER = None
_KEYS = None
_CONF = None


def topic(conf, name):
    """The broker topic of ``name`` (CONDUCTOR_TOPIC or AGENT_TOPIC)."""
    return conf.rpc_topic_prefix + name


def set_defaults(control_exchange='cyborg'):
    messaging.set_transport_defaults(control_exchange)


def init(conf, key_store=None, *, identity):
    """Create the process's transports; call once at service start.
    ``key_store`` (a :class:`cyborg.common.keys.KeyStore`): the keys that
    sign and verify messages; by default those of [security].
    ``identity``: who this process is (``api``, ``conductor`` or a host's
    identity), which says what it declares and reads on RabbitMQ (a
    process that serves the conductors' topic must say ``conductor``:
    any other reads only queues of its own)."""
    global _TRANSPORT, _NOTIFICATION_TRANSPORT, _NOTIFIER, _KEYS, _CONF
    _CONF = conf
    _KEYS = key_store or keys.KeyStore.from_conf(conf)
    _TRANSPORT = rpc_transport(conf, identity)
    _NOTIFICATION_TRANSPORT = messaging.get_notification_transport(
        conf, allowed_remote_exmods=ALLOWED_EXMODS)
    _NOTIFIER = messaging.Notifier(
        _NOTIFICATION_TRANSPORT, serializer=RequestContextSerializer(),
        topics=['versioned_notifications'])


def rpc_transport(conf, identity, url=None):
    """oslo.messaging's RPC transport to ``url`` (by default
    ``transport_url``); on RabbitMQ, with the driver of
    :mod:`cyborg.common.rabbit` for ``identity``."""
    register_opts(conf)
    url = messaging.TransportURL.parse(conf, url or conf.transport_url)
    if url.transport.split('+')[0] not in rabbit.SCHEMES:
        return messaging.get_rpc_transport(
            conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
    driver = rabbit.Driver(
        conf, url, default_exchange=conf.control_exchange,
        allowed_remote_exmods=ALLOWED_EXMODS,
        owner=rabbit.reply_owner(identity, conf.rpc_topic_prefix),
        guest=identity != keys.CONDUCTOR)
    return msg_transport.RPCTransport(driver)


#: Transports whose messages never leave the process (the all-in-one's).
IN_PROCESS = ('local', 'fake')


def in_process(conf):
    """Whether ``transport_url`` keeps every message in this process,
    where nobody else can send, read or replay one."""
    register_opts(conf)
    return (conf.transport_url or '').split(':', 1)[0] in IN_PROCESS


def cleanup():
    global _TRANSPORT, _NOTIFICATION_TRANSPORT, _NOTIFIER, _KEYS
    for transport in (_TRANSPORT, _NOTIFICATION_TRANSPORT):
        if transport is not None:
            transport.cleanup()
    _TRANSPORT = _NOTIFICATION_TRANSPORT = _NOTIFIER = _KEYS = None


def initialized():
    return _TRANSPORT is not None


def key_store():
    """The keys that sign and verify this process's messages."""
    return _KEYS


#: What of a request context goes over RPC: who asked (ids, names and
#: roles, for policy and logs), and the request ids. Nothing else, so no
#: credential (the Keystone token of the caller, which oslo.context puts
#: in ``to_dict()``) ever reaches the broker, the conductor or a compute
#: host; nothing on the receiving side acts with the caller's token.
WIRE_CONTEXT = frozenset((
    'user', 'user_id', 'project', 'project_id', 'domain', 'domain_id',
    'user_domain', 'user_domain_id', 'project_domain', 'project_domain_id',
    'user_name', 'project_name', 'user_domain_name', 'project_domain_name',
    'is_admin', 'is_admin_project', 'read_only', 'show_deleted', 'roles',
    'system_scope', 'request_id', 'global_request_id', 'resource_uuid',
    'user_identity', 'service_roles', 'accepted_service_roles'))


def wire_context(values):
    """The part of a context's ``to_dict()`` that may go over RPC."""
    return {key: value for key, value in values.items()
            if key in WIRE_CONTEXT}


class RequestContextSerializer(messaging.Serializer):
    """Carries the request context and versioned objects over RPC."""

    def __init__(self, base=None):
        self._base = base or objects_base.CyborgObjectSerializer()

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        # With the ids of the trace under way, if any (never its key).
        return profiler.add_trace_info(wire_context(context.to_dict()))

    def deserialize_context(self, context):
        return cyborg_context.RequestContext.from_dict(context)


class RequestIdSerializer(RequestContextSerializer):
    """Carries only the context's request id: for the heartbeat channel,
    whose receiver needs no context (a third of the bytes to send, read
    and sign)."""

    def serialize_context(self, context):
        return {'request_id': context.request_id}


class SigningTransport(messaging_compat.SendingTransport):
    """The process's RPC transport, signing what it sends as ``sender``
    (or as :func:`cyborg.common.signing.sending_as` says)."""

    def __init__(self, transport, sender, key_store, conf):
        super().__init__(transport)
        self.sender = sender
        self.key_store = key_store
        self.sign_conf = conf
        self._unsigned_logged = False

    def send_message(self, target, ctxt, message, *args, **kwargs):
        sender = signing.current_sender(self.sender)
        signed_for = signing.target_of(target.topic, target.server,
                                       target.fanout)
        key_list = None
        try:
            key_list = self.key_store.keys(
                signing.sender_key_identity(sender, signed_for))
        except exception.RPCKeyMissing as e:
            if self.sign_conf.security.require_signed:
                raise
            if not self._unsigned_logged:
                self._unsigned_logged = True
                LOG.warning('Sending unsigned RPC messages ([security] '
                            'require_signed is False): %s', e)
        call = _waits_for_reply(*args, **kwargs)
        if key_list is not None:
            ctxt = signing.sign(key_list, sender, signed_for, ctxt, message,
                                reply=call)
        with metrics.rpc_client(message.get('method'), call):
            result = super().send_message(target, ctxt, message, *args,
                                          **kwargs)
            if not call:
                return result
            return self._open_reply(result, ctxt, message, target, key_list)

    def _open_reply(self, result, ctxt, message, target, key_list):
        """The result of a call, once its signature is checked: a reply
        to a request signed with ``key_list`` must be signed with one of
        them. Failures are not signed: an unsigned one can make a call
        fail, never look successful."""
        method = message.get('method')
        if signing.AUTH not in ctxt:
            # Sent unsigned ([security] require_signed False).
            return result
        if signing.is_signed_reply(result):
            try:
                return signing.open_reply(key_list,
                                          signing.nonce_of(ctxt), result)
            except signing.Refused as e:
                refused = e
        elif not self.sign_conf.security.require_signed:
            # A receiver of the release before, during an upgrade.
            return result
        else:
            refused = signing.Refused('an unsigned reply')
        refused.claimed = '%s on %s' % (target.server or 'a server',
                                        target.topic)
        metrics.count_refusal('caller', refused.reason)
        signing.log_refusal(refused, method, 'caller')
        raise exception.RPCRefused(reason='%s to %s' % (refused.reason,
                                                        method))

    def cleanup(self):
        """The process's transport is cleaned up by :func:`cleanup`."""


def _waits_for_reply(wait_for_reply=None, *args, **kwargs):
    return bool(wait_for_reply)


def get_client(target, version_cap=None, sender=keys.API,
               serializer=None):
    """A client of ``target`` whose messages are signed as ``sender``."""
    transport = SigningTransport(_TRANSPORT, sender, _KEYS, _CONF)
    return messaging.get_rpc_client(
        transport, target, version_cap=version_cap,
        serializer=serializer or RequestContextSerializer())


def get_topic_client(name, version_cap, sender=keys.API):
    """A client of cyborg's topic ``name`` (with [DEFAULT]
    rpc_topic_prefix), capped at ``version_cap``, signing as ``sender``."""
    target = messaging.Target(topic=topic(_CONF, name), version='1.0')
    return get_client(target, version_cap=version_cap, sender=sender)


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


class SignedDispatcher(messaging_compat.EndpointDispatcher):
    """Dispatches only the messages its Verifier accepts (see
    :mod:`cyborg.common.signing`), and host methods only for the proven
    host."""

    _SENDER = '_cyborg_proven_sender'

    def __init__(self, endpoints, verifier):
        super().__init__(endpoints, RequestContextSerializer(),
                         dispatcher.DefaultRPCAccessPolicy)
        self.verifier = verifier

    def dispatch(self, incoming):
        try:
            sender, ctxt = self.verifier.verify(incoming.ctxt,
                                                incoming.message)
        except signing.Refused as e:
            refused = e
        else:
            refused = None
        if refused is not None:
            self._refuse(refused, incoming.message.get('method'))
        signed = incoming.ctxt
        ctxt = dict(ctxt)
        ctxt.pop(signing.AUTH, None)
        auth = signed.get(signing.AUTH) if sender is not None else None
        ctxt[self._SENDER] = (sender, auth and (auth['nonce'],
                                                float(auth['time'])))
        incoming.ctxt = ctxt
        result = super().dispatch(incoming)
        if sender is None or not signing.wants_signed_reply(signed):
            return result
        return signing.sign_reply(self.verifier.reply_keys(sender),
                                  signing.nonce_of(signed), result)

    def call_endpoint(self, endpoint, method, ctxt, args):
        ctxt = dict(ctxt)
        sender, nonce = ctxt.pop(self._SENDER)
        trace_info = ctxt.pop(profiler.CONTEXT_KEY, None)
        context = self.serializer.deserialize_context(ctxt)
        kwargs = {name: self.serializer.deserialize_entity(context, arg)
                  for name, arg in args.items()}
        func = getattr(endpoint, method)
        # Who may call it is the endpoint class's word, whatever replaced
        # the method on the object.
        declared = getattr(type(endpoint), method, func)
        try:
            self.verifier.authorize(sender, method, declared, kwargs)
            if nonce and not signing.is_replay_harmless(declared):
                self.verifier.claim(nonce[0], nonce[1], sender)
        except signing.Refused as e:
            refused = e
        else:
            refused = None
        if refused is not None:
            self._refuse(refused, method)
        # Counted once found on an endpoint: a bounded name.
        with metrics.rpc_server(method), \
                profiler.serving(trace_info, sender, method):
            result = func(context, **kwargs)
        return self.serializer.serialize_entity(context, result)

    def _refuse(self, refused, method):
        self.verifier.log_refusal(refused, method)
        try:
            raise exception.RPCRefused(reason=refused.reason)
        except exception.RPCRefused:
            # Sent back to a caller as itself; no traceback in the log.
            raise messaging.ExpectedException() from None


def _role(target):
    if target.topic == topic(_CONF, CONDUCTOR_TOPIC):
        return signing.CONDUCTOR_ROLE
    if target.topic == topic(_CONF, AGENT_TOPIC):
        return signing.AGENT_ROLE
    raise ValueError('No RPC server of cyborg listens on %s' % target.topic)


def get_server(target, endpoints, role=None, nonce_store=None):
    """The RPC server of ``endpoints`` on ``target``: the conductor's or
    an agent's (``role``, by default told by the topic). ``nonce_store``:
    where the receivers of ``target``'s topic note the messages they
    took, so that each runs once among them all (see
    :class:`cyborg.common.signing.Verifier`)."""
    verifier = signing.Verifier(_KEYS, _CONF, role or _role(target),
                                target.topic, target.server,
                                nonce_store=nonce_store)
    server = rpc_server.RPCServer(
        _TRANSPORT, target, SignedDispatcher(endpoints, verifier),
        'threading')
    messaging_compat.use_executor(server, Executor)
    return server


def get_notifier(publisher_id):
    return _NOTIFIER.prepare(publisher_id=publisher_id)


def register_opts(conf):
    """Register oslo.messaging's [DEFAULT] options (transport_url, ...)
    so they can be defaulted before a transport exists."""
    for group, opts in messaging.opts.list_opts():
        if group in (None, 'DEFAULT'):
            conf.register_opts(opts)
