"""Signed RPC messages: who sent a message is what its receiver proves.

A sender adds to the message's context a ``cyborg_auth`` field: its
identity (see :mod:`cyborg.common.keys`), the time, a random nonce, the
target it addressed, the context keys it signed, and one HMAC-SHA256
per key it holds over a canonical JSON encoding of all that and the
method, its arguments, namespace and version. The receiver:

* takes the key of the claimed sender (the conductor's messages to a host
  are signed with that host's key), refuses the message unless one
  signature verifies, it is recent (``[security] max_message_age``) and
  it was not seen before;
* accepts only senders of its kind: a conductor, the API and compute
  hosts; an agent, the conductor;
* checks the signed target is its own;
* for the conductor's host methods (marked with :func:`host_method`),
  takes the host from the proven identity: a message whose host argument
  names another host is refused; every other conductor method is the
  API's.

Refusals are logged on the ``cyborg.security`` logger with the claimed
and the proven sender: per receiver, the first in full, then at most one
summary a minute (:class:`RefusalLog`). What a log line takes from the
wire (the claimed sender, the method, a reason that quotes them) is cut
short and its control characters escaped (:func:`loggable`), so that a
message can neither fill the log nor forge a line of it. A signed time
must be a finite number within ``[security] max_message_age`` of now
(:func:`check_window`). With ``[security] require_signed = False`` (a
rolling upgrade), an unsigned message is accepted and logged; one whose
signature does not verify is refused all the same.
"""

import collections
import contextlib
import contextvars
import hashlib
import hmac
import math
import secrets
import threading
import time

from oslo_log import log as logging
from oslo_serialization import jsonutils

from cyborg.common import exception
from cyborg.common import keys
from cyborg.common import metrics

LOG = logging.getLogger(__name__)
SECURITY_LOG = logging.getLogger('cyborg.security')

#: Longest sender or method name a log line shows, and longest reason.
LOG_NAME_LIMIT = 64
LOG_REASON_LIMIT = 200

#: The context field that carries the signature.
AUTH = 'cyborg_auth'
#: The field of a signed request that asks for a signed reply, and the
#: key of the reply's envelope.
REPLY = 'cyborg_reply'

#: Receivers: what a conductor or an agent serves.
CONDUCTOR_ROLE = 'conductor'
AGENT_ROLE = 'agent'

_HOST_ARG = '_cyborg_rpc_host_arg'
_SENDER = contextvars.ContextVar('cyborg_rpc_sender', default=None)


@contextlib.contextmanager
def sending_as(identity):
    """Messages sent in this block are signed as ``identity`` (an agent's
    host methods are signed as the host they are about)."""
    token = _SENDER.set(identity)
    try:
        yield
    finally:
        _SENDER.reset(token)


def current_sender(default):
    return _SENDER.get() or default


def host_method(*path):
    """Mark a conductor endpoint as a compute host's: ``path`` names the
    argument (and attributes) that hold the host it is about, which must
    be the proven sender."""
    def mark(func):
        setattr(func, _HOST_ARG, path)
        return func
    return mark


_REPLAYS_HARMLESS = '_cyborg_rpc_replays_harmless'


def replays_harmless(func):
    """Mark a conductor endpoint whose message, taken again, changes
    nothing (its own ordering refuses it or makes it a no-op): the
    conductors check its nonce in their memory only, not in the
    database (no write for an unchanged report)."""
    setattr(func, _REPLAYS_HARMLESS, True)
    return func


def is_replay_harmless(func):
    return getattr(func, _REPLAYS_HARMLESS, False)


def host_argument(func):
    """The path a :func:`host_method` marked, None for others."""
    return getattr(func, _HOST_ARG, None)


def _digest(body):
    return jsonutils.dumps(body, sort_keys=True,
                           separators=(',', ':')).encode('utf-8')


def _body(auth, target, ctxt, message):
    body = {'sender': auth['sender'], 'time': auth['time'],
            'nonce': auth['nonce'], 'target': target,
            'context': {key: ctxt.get(key) for key in auth['context']},
            'method': message.get('method'), 'args': message.get('args'),
            'namespace': message.get('namespace'),
            'version': message.get('version')}
    # Signed when present, so that nobody can take it away; absent from
    # the messages of releases that did not sign replies, whose
    # signatures verify as before.
    if REPLY in auth:
        body[REPLY] = auth[REPLY]
    return body


def _macs(key_list, data):
    return {keys.key_id(key): hmac.new(key, data, hashlib.sha256).hexdigest()
            for key in key_list}


def target_of(topic, server=None, fanout=False):
    return {'topic': topic, 'server': server, 'fanout': bool(fanout)}


def sign(key_list, sender, target, ctxt, message, reply=True):
    """A copy of the context ``ctxt`` of ``message`` with the signature
    of ``sender`` (made with each key of ``key_list``) for ``target``;
    ``reply``: the message is a call, whose reply must be signed (a cast
    asks for none, so its receiver signs nothing it would throw away)."""
    ctxt = {k: v for k, v in ctxt.items() if k != AUTH}
    auth = {'sender': sender, 'time': time.time(),
            'nonce': secrets.token_hex(16), 'target': target,
            'context': sorted(ctxt)}
    if reply:
        auth[REPLY] = True
    auth['macs'] = _macs(key_list, _digest(_body(auth, target, ctxt,
                                                 message)))
    ctxt[AUTH] = auth
    return ctxt


def sender_key_identity(sender, target):
    """Whose key signs ``sender``'s message to ``target``: the
    conductor's messages to a host use that host's key."""
    if sender == keys.CONDUCTOR:
        if not target.get('server') or target.get('fanout'):
            raise exception.RPCKeyMissing(
                identity=sender, reason='a message to every host cannot be '
                'signed: the conductor signs with the key of the one host '
                'it addresses')
        return keys.host_identity(target['server'])
    return sender


def nonce_of(ctxt):
    """The nonce of a context signed by :func:`sign`."""
    return ctxt[AUTH]['nonce']


def wants_signed_reply(ctxt):
    """Whether the signed context ``ctxt`` asks for a signed reply (a
    sender of this release does; one before it would not understand
    one)."""
    auth = ctxt.get(AUTH)
    return isinstance(auth, dict) and auth.get(REPLY) is True


def _reply_digest(nonce, data):
    return b'\0'.join((b'cyborg-reply', nonce.encode('utf-8'),
                       data.encode('utf-8')))


def sign_reply(key_list, nonce, result):
    """The envelope of ``result`` (JSON-able), the answer to the request
    whose signature had ``nonce``, with one HMAC per key of
    ``key_list``: the keys the request was proven with, which its sender
    holds. The result travels as JSON text, so that its MAC is over the
    very bytes the caller checks."""
    data = jsonutils.dumps(result)
    return {REPLY: {'data': data,
                    'macs': _macs(key_list, _reply_digest(nonce, data))}}


def open_reply(key_list, nonce, reply):
    """The result in the envelope ``reply`` of the answer to the request
    of ``nonce``; Refused unless a MAC verifies with a key of
    ``key_list``."""
    try:
        envelope = reply[REPLY]
        data = envelope['data']
        macs = dict(envelope['macs'])
        if not isinstance(data, str):
            raise TypeError(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Refused('a reply without a valid signature') from None
    digest = _reply_digest(nonce, data)
    if not any(hmac.compare_digest(
            str(macs.get(keys.key_id(key), '')),
            hmac.new(key, digest, hashlib.sha256).hexdigest())
            for key in key_list):
        raise Refused('a reply whose signature does not verify')
    return jsonutils.loads(data)


def is_signed_reply(reply):
    return isinstance(reply, dict) and set(reply) == {REPLY}


class Refused(Exception):
    def __init__(self, reason, claimed=None, proven=None):
        super().__init__(reason)
        self.reason = reason
        self.claimed = claimed
        self.proven = proven


class Verifier:
    """Checks the messages of one RPC server: ``role`` (CONDUCTOR_ROLE or
    AGENT_ROLE) on ``topic`` as ``server`` (the host)."""

    def __init__(self, store, conf, role, topic, server, nonce_store=None):
        self.store = store
        self.conf = conf
        self.role = role
        self.topic = topic
        self.server = server
        #: Where the nonces of every receiver of the topic are kept (the
        #: conductors' database), or None: this process's memory only.
        self.nonce_store = nonce_store
        self._seen = collections.OrderedDict()
        self._lock = threading.Lock()
        self._unsigned_logged = set()
        #: This receiver's refusals on ``cyborg.security``.
        self.refusals = RefusalLog(role)

    def log_refusal(self, refused, method):
        """Log ``refused`` (Refused), a message of ``method`` (as the
        wire names it), rate-limited: see :class:`RefusalLog`."""
        self.refusals.refused(refused, method)

    def verify(self, ctxt, message):
        """``(sender, context)``: the proven sender (None for an unsigned
        message accepted during an upgrade) and the context it signed.
        Raises Refused."""
        auth = ctxt.get(AUTH)
        if auth is None:
            return self._unsigned(ctxt, message)
        try:
            sender = auth['sender']
            target = auth['target']
            signed_context = {key: ctxt[key] for key in auth['context']}
            data = _digest(_body(auth, target, ctxt, message))
            macs = dict(auth['macs'])
            sent = float(auth['time'])
            nonce = str(auth['nonce'])
        except (KeyError, TypeError, ValueError, AttributeError):
            raise Refused('malformed signature') from None
        # NaN is never out of the window (every comparison is False).
        if not isinstance(sender, str) or not math.isfinite(sent):
            raise Refused('malformed signature')
        self._check_sender(sender)
        key_list = self._keys(sender, target)
        if not any(hmac.compare_digest(
                str(macs.get(keys.key_id(key), '')),
                hmac.new(key, data, hashlib.sha256).hexdigest())
                for key in key_list):
            raise Refused('no signature verifies with a key of %s'
                          % sender, claimed=sender)
        self._check_target(target, sender)
        self._check_fresh(sent, nonce, sender)
        return sender, signed_context

    def claim(self, nonce, sent, sender):
        """Once in the whole set of receivers that share ``nonce_store``
        (the conductors, through their database), restarts included:
        raises Refused for a message one of them took before."""
        if self.nonce_store is None:
            return
        window = self.conf.security.max_message_age
        if not self.nonce_store.claim(nonce, sent + window):
            raise Refused('replayed message (already taken by a '
                          'conductor)', claimed=sender, proven=sender)

    def reply_keys(self, sender):
        """The keys that sign the reply to a message proven by
        ``sender``: those its signature was checked with."""
        return self._keys(sender, None)

    def _unsigned(self, ctxt, message):
        method = message.get('method')
        if self.conf.security.require_signed:
            raise Refused('unsigned message (method %s)' % method)
        # Bounded: the method names come from the wire.
        if (method not in self._unsigned_logged
                and len(self._unsigned_logged) < 100):
            self._unsigned_logged.add(method)
            SECURITY_LOG.warning(
                'Accepting unsigned RPC messages (first: %s on %s) because '
                '[security] require_signed is False; sign every peer, then '
                'set it to True', loggable(method), self.topic)
        return None, ctxt

    def _check_sender(self, sender):
        if self.role == AGENT_ROLE:
            allowed = sender == keys.CONDUCTOR
        else:
            allowed = sender == keys.API or keys.host_of(sender) is not None
        if not allowed:
            raise Refused('%s may not send to the %s' % (sender, self.role),
                          claimed=sender)

    def _keys(self, sender, target):
        if self.role == AGENT_ROLE:
            identity = keys.host_identity(self.server)
        else:
            identity = sender
        try:
            return self.store.keys(identity)
        except exception.RPCKeyMissing as e:
            raise Refused('cannot verify: %s' % e, claimed=sender) from None

    def _check_target(self, target, sender):
        if not isinstance(target, dict) or target.get('topic') != self.topic:
            raise Refused('signed for another topic', claimed=sender,
                          proven=sender)
        server = target.get('server')
        if target.get('fanout') or server not in (None, self.server) or (
                self.role == AGENT_ROLE and server != self.server):
            raise Refused('signed for server %s, not %s'
                          % (server, self.server), claimed=sender,
                          proven=sender)

    def _check_fresh(self, sent, nonce, sender):
        now = check_window(sent, self.conf, sender)
        window = self.conf.security.max_message_age
        with self._lock:
            while self._seen and next(iter(self._seen.values())) < (
                    now - 2 * window):
                self._seen.popitem(last=False)
            if nonce in self._seen:
                raise Refused('replayed message', claimed=sender,
                              proven=sender)
            self._seen[nonce] = now

    def authorize(self, sender, name, func, args):
        """Whether ``sender`` may call endpoint ``func`` (method ``name``)
        with ``args`` (deserialized); raises Refused. An unsigned message
        accepted during an upgrade (sender None) passes."""
        if sender is None or self.role == AGENT_ROLE:
            return
        path = host_argument(func)
        if path is None:
            if sender != keys.API:
                raise Refused('%s is for the API only' % name,
                              claimed=sender, proven=sender)
            return
        claimed = _resolve(args, path)
        proven = keys.host_of(sender)
        if proven is None or claimed != proven:
            raise Refused('%s about host %s' % (name, claimed),
                          claimed=keys.HOST_PREFIX + str(claimed),
                          proven=sender)


def _resolve(args, path):
    value = args.get(path[0])
    for attribute in path[1:]:
        value = getattr(value, attribute, None)
    return value


def check_window(sent, conf, sender):
    """Refuse (Refused) a message of ``sender`` signed at ``sent``
    (seconds since the epoch, a finite number) further than ``[security]
    max_message_age`` from now; returns now."""
    window = conf.security.max_message_age
    now = time.time()
    if abs(now - sent) > window:
        raise Refused('sent %.0f s from now, beyond the %d s window'
                      % (sent - now, window), claimed=sender, proven=sender)
    return now


def loggable(value, limit=LOG_NAME_LIMIT):
    """``value`` (taken from the wire) fit for one log line: at most
    ``limit`` characters, then ``...`` when there was more; backslashes,
    control characters and other non-printable ones escaped as repr()
    escapes them (a newline is the two characters ``\\n``)."""
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    pieces = []
    size = 0
    for char in text[:limit]:
        if not char.isprintable() or char == '\\':
            char = repr(char)[1:-1]
        size += len(char)
        if size > limit:
            cut = True
            break
        pieces.append(char)
    return ''.join(pieces) + ('...' if cut else '')


def _fields(refused, method, role):
    return {'role': role, 'method': loggable(method),
            'reason': loggable(refused.reason, LOG_REASON_LIMIT),
            'claimed': loggable(refused.claimed or 'none'),
            'proven': loggable(refused.proven or 'none')}


def log_refusal(refused, method, role):
    """Log one refusal in full (wire values made :func:`loggable`)."""
    SECURITY_LOG.warning(
        'SECURITY: %(role)s refused RPC %(method)s: %(reason)s (claimed '
        'sender %(claimed)s, proven sender %(proven)s)',
        _fields(refused, method, role))


class RefusalLog:
    """The refusals of one receiver (``role``, as log lines name it) on
    ``cyborg.security``: the first in full, then one summary per
    ``period`` seconds at most, with how many there were and the last;
    so a flood of refused messages costs a line a minute."""

    def __init__(self, role, what='RPC messages', period=60.0,
                 clock=time.monotonic):
        self.role = role
        self.what = what
        self.period = period
        self.clock = clock
        self._lock = threading.Lock()
        self._next = None
        self._count = 0

    def refused(self, refused, method):
        metrics.count_refusal(self.role, refused.reason)
        now = self.clock()
        with self._lock:
            self._count += 1
            if self._next is not None and now < self._next:
                return
            count, self._count = self._count, 0
            self._next = now + self.period
        if count == 1:
            log_refusal(refused, method, self.role)
            return
        fields = _fields(refused, method, self.role)
        fields.update(count=count, period=self.period, what=self.what)
        SECURITY_LOG.warning(
            'SECURITY: %(role)s refused %(count)d %(what)s in the last '
            '%(period)d s; the last: %(method)s: %(reason)s (claimed sender '
            '%(claimed)s, proven sender %(proven)s)', fields)
