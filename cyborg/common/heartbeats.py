"""The heartbeat channel: agents' heartbeats that cost the conductor
little to receive.

An agent's heartbeat is the signed cast ``agent_heartbeat`` (see
:mod:`cyborg.common.signing`). Received by the conductor's RPC server,
each costs ~1.5 ms of CPU, almost all of it oslo.messaging's dispatch
(copies of the context, a watchdog thread per message). With RabbitMQ,
a conductor also reads a queue of its own, ``<[DEFAULT]
rpc_topic_prefix>cyborg-heartbeat`` (bound to the ``control_exchange``,
shared by every conductor), with a plain consumer: no acknowledgement,
no reply, no dispatcher; it checks the signature of each message as the
RPC server would and notes the host. Its hello answer names that topic
(``Host.heartbeat_topic``, object 1.2) and the agent then casts its
heartbeats there; an agent of an older release, or one whose conductor
names no topic (the all-in-one's ``local:/`` transport, a non-rabbit
one), casts to the conductor's topic as before.

A heartbeat on this channel proves its host like any message: it is
signed with the host's key, the host is the proven sender (a heartbeat
naming another host is refused), it is refused when its signed time is
not a finite number within ``[security] max_message_age`` of now
(:func:`cyborg.common.signing.check_window`, the RPC server's rule) or
not newer than the last one this conductor took from the host, and the
time noted is the signed time (never later than now), so a replayed
heartbeat cannot make a host look heard after it was. Refusals are
logged on ``cyborg.security``: the first in full, then at most one
summary a minute (:class:`cyborg.common.signing.RefusalLog`), with what
came from the wire cut short and escaped.

What a host can make a conductor hold is bounded, since a compromised
host may send anything it likes there:

* a body over :data:`MAX_BODY` (64 KiB; a heartbeat is ~1 KB) is
  refused before it is decoded;
* the queue keeps at most :data:`MAX_QUEUED` messages and
  :data:`MAX_QUEUED_BYTES` bytes (``x-max-length``,
  ``x-max-length-bytes``), dropping the oldest when more come
  (``x-overflow: drop-head``); these bound what waits, not one message:
  RabbitMQ hands a consumer with room a message of any size at once (a
  32 MiB body reached the conductors in the broker-boundary test, and
  was refused there, before decoding, by the cap above);
* the consumer acknowledges what it takes, with a prefetch of
  :data:`PREFETCH`: the broker pushes at most that many messages ahead
  of the conductor, and the rest of a flood waits, bounded, in the queue
  (where the oldest are dropped) instead of in the conductor's socket
  and memory. With ``no_ack`` a prefetch does not apply (RabbitMQ
  ignores it for such consumers) and the broker pushes all it holds.
  Acknowledgements go in batches (``multiple``): every
  :data:`ACK_EVERY` messages, whenever the consumer has read all that
  came, and at least once a second; a message is acknowledged whether
  it was taken or refused, never requeued. A conductor that dies with
  unacknowledged heartbeats has them delivered to another, which takes
  them or refuses them as replays.

A lost heartbeat is harmless (the next one comes ``[agent]
heartbeat_interval`` later), so messages are not persistent, and the
queue drops what waited more than a minute (and goes when no conductor
has read it for an hour).

The queue is ``<topic>.2`` (:func:`queue_name`), bound to the exchange
with the topic ``<[DEFAULT] rpc_topic_prefix>cyborg-heartbeat`` as its
routing key, as the first queue was: agents cast to the same topic and
a host's broker user needs no new permission. A new name because
RabbitMQ refuses to declare an existing queue with other arguments
(``PRECONDITION_FAILED``): the bounds above could not be added to the
queue of the release before. During an upgrade both queues are bound,
so a heartbeat reaches a conductor of each release; the old queue goes
by itself an hour after the last old conductor stopped reading it
(``x-expires``). With ``[oslo_messaging_rabbit] rabbit_quorum_queue``
the queue is a quorum queue (``x-queue-type: quorum``; RabbitMQ 3.10 or
later, for the message TTL), with the same bounds and expiry; switching
that option needs a queue of another name again, so the quorum queue is
``<topic>.2.quorum``.
"""

import errno
import json
import ssl
import threading
import time
import urllib.parse

import amqp.transport
import kombu
import kombu.transport.pyamqp
import kombu.utils.url
from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg.common import keys
from cyborg.common import metrics
from cyborg.common import rabbit
from cyborg.common import signing

LOG = logging.getLogger(__name__)

HEARTBEAT_TOPIC = 'cyborg-heartbeat'
METHOD = 'agent_heartbeat'

#: Milliseconds a heartbeat waits in the queue at most (the queue's
#: ``x-message-ttl``: fixed, so that every conductor declares the queue
#: alike).
QUEUE_TTL_MS = 60000
#: Milliseconds the queue stays without a consumer before the broker
#: deletes it (``x-expires``; no conductor read it for an hour).
QUEUE_EXPIRES_MS = 3600000
#: The queue's version: a new one when its arguments change (RabbitMQ
#: refuses to declare a queue again with other arguments).
QUEUE_VERSION = '.2'
#: Most messages and bytes the queue holds (then the oldest go).
MAX_QUEUED = 10000
MAX_QUEUED_BYTES = 16 * 1024 * 1024
#: Longest body a conductor decodes, in bytes (a heartbeat is ~1 KB).
MAX_BODY = 64 * 1024
#: Messages the broker sends ahead of the consumer's acknowledgements.
PREFETCH = 500
#: Messages the consumer acknowledges at once, at most.
ACK_EVERY = 100

#: oslo.messaging's drivers of RabbitMQ.
_RABBIT = ('rabbit', 'kombu')
_CONTEXT = '_context_'


def topic(conf):
    """The routing key agents cast their heartbeats with."""
    return conf.rpc_topic_prefix + HEARTBEAT_TOPIC


def queue_name(conf, quorum=False):
    """The conductors' queue of the channel (see the module's notes)."""
    return topic(conf) + QUEUE_VERSION + ('.quorum' if quorum else '')


def queue_arguments(quorum=False):
    """The queue's arguments: the same from every conductor."""
    arguments = {'x-message-ttl': QUEUE_TTL_MS,
                 'x-expires': QUEUE_EXPIRES_MS,
                 'x-max-length': MAX_QUEUED,
                 'x-max-length-bytes': MAX_QUEUED_BYTES,
                 'x-overflow': 'drop-head'}
    if quorum:
        arguments['x-queue-type'] = 'quorum'
    return arguments


def broker_urls(conf):
    """The kombu URLs of the RPC transport's RabbitMQ (one per host of
    ``transport_url``, with its vhost), or None when the transport is
    not RabbitMQ (the all-in-one's ``local:/``, ``fake:/``, ...)."""
    try:
        url = messaging.TransportURL.parse(conf, conf.transport_url)
    except messaging.InvalidTransportURL:
        return None
    if url.transport not in _RABBIT or not url.hosts:
        return None
    vhost = urllib.parse.quote(url.virtual_host or '/', safe='')
    result = []
    for host in url.hosts:
        auth = ''
        if host.username:
            auth = urllib.parse.quote(host.username, safe='')
            if host.password:
                auth += ':' + urllib.parse.quote(host.password, safe='')
            auth += '@'
        address = host.hostname or 'localhost'
        if ':' in address:
            address = '[%s]' % address
        result.append('amqp://%s%s:%d/%s' % (auth, address, host.port or 5672,
                                             vhost))
    return result


def ssl_options(conf):
    """kombu's ``ssl`` argument from [oslo_messaging_rabbit] (False: no
    TLS), as oslo.messaging's rabbit driver makes it from the same
    options (``Connection._fetch_ssl_params``): ``ssl_version`` is its
    protocol; with ``ssl_ca_file`` the broker's certificate is verified,
    and its name too when ``transport_url`` names one host (with several,
    kombu takes the name of the host it connects to)."""
    group = conf.oslo_messaging_rabbit
    if not group.ssl:
        return False
    options = {}
    if group.ssl_version:
        options['ssl_version'] = rabbit.ssl_version(group.ssl_version)
    if group.ssl_ca_file:
        options['ca_certs'] = group.ssl_ca_file
        options['cert_reqs'] = ssl.CERT_REQUIRED
        try:
            hosts = messaging.TransportURL.parse(conf,
                                                 conf.transport_url).hosts
        except messaging.InvalidTransportURL:
            hosts = []
        options['server_hostname'] = (hosts[0].hostname if len(hosts) == 1
                                      else None)
    if group.ssl_cert_file:
        options['certfile'] = group.ssl_cert_file
    if group.ssl_key_file:
        options['keyfile'] = group.ssl_key_file
    return options or True


def decode(body):
    """``(context, message)`` of an oslo.messaging cast's body (the
    JSON text of its envelope); ValueError when it is not one."""
    if isinstance(body, bytes):
        body = body.decode('utf-8')
    envelope = json.loads(body)
    if not isinstance(envelope, dict):
        raise ValueError('not a message envelope')
    inner = envelope.get('oslo.message')
    message = json.loads(inner) if isinstance(inner, str) else envelope
    if not isinstance(message, dict):
        raise ValueError('not a message')
    context = {key[len(_CONTEXT):]: value for key, value in message.items()
               if key.startswith(_CONTEXT)}
    return context, message


class Verifier(signing.Verifier):
    """The conductor's check of the heartbeats of its channel: a signed
    ``agent_heartbeat`` of the host it names, recent and newer than the
    last one taken from that host (instead of the RPC server's nonce
    cache: one entry per host, not one per message)."""

    def __init__(self, store, conf, channel_topic):
        super().__init__(store, conf, signing.CONDUCTOR_ROLE, channel_topic,
                         None)
        self.refusals = signing.RefusalLog('heartbeat channel', 'heartbeats')
        self._last = {}

    def heartbeat(self, context, message):
        """``(hostname, time sent)`` of a heartbeat; raises Refused."""
        if message.get('method') != METHOD:
            # Cut short here, escaped when logged.
            raise signing.Refused('%.64s on the heartbeat channel'
                                  % (message.get('method'),))
        args = message.get('args')
        hostname = args.get('hostname') if isinstance(args, dict) else None
        if not isinstance(hostname, str) or not hostname:
            raise signing.Refused('a heartbeat without a hostname')
        sender, _ = self.verify(context, message)
        if sender is None:
            # Unsigned, accepted during an upgrade ([security]
            # require_signed False), as the RPC server would.
            return hostname, time.time()
        proven = keys.host_of(sender)
        if proven != hostname:
            raise signing.Refused(
                'heartbeat about host %s' % hostname,
                claimed=keys.HOST_PREFIX + hostname, proven=sender)
        # verify() took it as a finite float.
        return hostname, float(context[signing.AUTH]['time'])

    def _check_fresh(self, sent, nonce, sender):
        signing.check_window(sent, self.conf, sender)
        with self._lock:
            if sent <= self._last.get(sender, 0.0):
                raise signing.Refused('replayed or reordered heartbeat',
                                      claimed=sender, proven=sender)
            self._last[sender] = sent


class _BufferedTCPTransport(amqp.transport.TCPTransport):
    """py-amqp's TCP transport, reading the socket in chunks: py-amqp
    reads each frame's header, payload and end byte with a recv() of its
    own, nine system calls per message. What is left unread after an
    error is kept from its start, as py-amqp's own frame reader expects
    (it puts a partly read frame back in front of it on a timeout)."""

    CHUNK = 65536

    def _setup_transport(self):
        super()._setup_transport()
        self._pos = 0

    def _read(self, n, initial=False, _errnos=(errno.EAGAIN, errno.EINTR)):
        buf, pos = self._read_buffer, self._pos
        try:
            while len(buf) - pos < n:
                try:
                    chunk = self._quick_recv(max(self.CHUNK, n))
                except OSError as exc:
                    if exc.errno in _errnos:
                        if initial and self.raise_on_initial_eintr:
                            raise TimeoutError() from None
                        continue
                    raise
                if not chunk:
                    raise OSError('Server unexpectedly closed connection')
                buf, pos = buf[pos:] + chunk, 0
        except BaseException:
            self._read_buffer, self._pos = buf[pos:], 0
            raise
        self._read_buffer, self._pos = buf, pos + n
        return buf[pos:pos + n]

    def buffered(self):
        """How many bytes were read from the socket and not taken."""
        return len(self._read_buffer) - self._pos


class _Connection(kombu.transport.pyamqp.Connection):

    def Transport(self, host, connect_timeout, ssl=False,
                  read_timeout=None, write_timeout=None,
                  socket_settings=None, **kwargs):
        if ssl:
            return super().Transport(
                host, connect_timeout, ssl, read_timeout, write_timeout,
                socket_settings, **kwargs)
        return _BufferedTCPTransport(
            host, connect_timeout=connect_timeout, read_timeout=read_timeout,
            write_timeout=write_timeout, socket_settings=socket_settings,
            **kwargs)


class _Transport(kombu.transport.pyamqp.Transport):
    """kombu's py-amqp transport, reading plain TCP in chunks."""

    Connection = _Connection


class Consumer(threading.Thread):
    """Reads the heartbeat queue and calls ``on_heartbeat(hostname,
    sent)`` (``sent``: the signed time, seconds since the epoch) for
    each heartbeat that proves its host. Reconnects (to the next host of
    ``transport_url``) when the connection fails, until :meth:`stop`."""

    #: Seconds between two looks at whether to stop, and at the
    #: connection's AMQP heartbeat.
    TICK = 1.0
    #: Seconds the consumer waits, once it has read all that came, for
    #: more to gather (500 heartbeats a second: 25 at a time).
    PAUSE = 0.05
    #: Seconds between two tries to reconnect, at most.
    MAX_DELAY = 30.0

    def __init__(self, conf, key_store, on_heartbeat, urls=None):
        super().__init__(name='cyborg-heartbeats', daemon=True)
        self.conf = conf
        self.urls = list(urls or broker_urls(conf))
        self.topic = topic(conf)
        self.on_heartbeat = on_heartbeat
        self.verifier = Verifier(key_store, conf, self.topic)
        self.refusals = self.verifier.refusals
        self.received = 0
        self.noted = 0
        self._halt = threading.Event()
        self.consuming = threading.Event()
        #: The last message taken and not acknowledged, and how many.
        self._unacked = None
        self._unacked_count = 0

    def _connection(self):
        rabbit = self.conf.oslo_messaging_rabbit
        return kombu.Connection(
            self.urls, transport=_Transport, ssl=ssl_options(self.conf),
            heartbeat=rabbit.heartbeat_timeout_threshold,
            connect_timeout=5, failover_strategy='round-robin')

    def _after(self, connection):
        """Put the host after the one ``connection`` last used (the one
        lost, or the last one that refused) first in ``urls``: the next
        round of tries begins with the others, in turn, and a node that
        is gone is tried last, not first each time."""
        address = (connection.hostname, connection.port)
        for index, url in enumerate(self.urls):
            parts = kombu.utils.url.url_to_parts(url)
            if (parts.hostname, parts.port) == address:
                self.urls = self.urls[index + 1:] + self.urls[:index + 1]
                return

    def _queue(self, channel):
        quorum = self.conf.oslo_messaging_rabbit.rabbit_quorum_queue
        exchange = kombu.Exchange(self.conf.control_exchange, 'topic',
                                  passive=True)
        return kombu.Queue(
            queue_name(self.conf, quorum), exchange=exchange,
            routing_key=self.topic, durable=True, auto_delete=False,
            channel=channel, queue_arguments=queue_arguments(quorum))

    def run(self):
        delay = 1.0
        failed = False
        while not self._halt.is_set():
            connection = self._connection()
            try:
                with connection:
                    self._consume(connection)
                return
            except Exception as e:
                self._after(connection)
                if self.consuming.is_set():
                    # It had worked: a new outage.
                    self.consuming.clear()
                    failed, delay = False, 1.0
                if not failed:
                    LOG.warning('The heartbeat channel lost the broker '
                                '(%s); heartbeats come by RPC only until it '
                                'is back', e)
                failed = True
            if self._halt.wait(delay):
                return
            delay = min(delay * 2, self.MAX_DELAY)

    def _consume(self, connection):
        # Each host of transport_url once, in turn (kombu moves to the
        # next after each failure; it waits only after a whole round).
        connection.ensure_connection(max_retries=len(self.urls) - 1 or 1)
        channel = connection.channel()
        queue = self._queue(channel)
        # The exchange is oslo.messaging's (the conductor's RPC server
        # declares it); the queue and its binding are ours.
        queue.declare()
        self._unacked, self._unacked_count = None, 0
        # Per consumer (global is not for quorum queues).
        channel.basic_qos(0, PREFETCH, False)
        # py-amqp's messages as they come (their body is all we read), not
        # kombu's Message objects made of them.
        channel.basic_consume(queue=queue.name, no_ack=False,
                              callback=self._received)
        LOG.info('Reading heartbeats from queue %s', queue.name)
        self.consuming.set()
        checked = time.monotonic()
        # Our plain TCP transport tells what it holds; TLS's does not.
        buffered = getattr(getattr(getattr(connection, 'connection', None),
                                   'transport', None), 'buffered', None)
        while not self._halt.is_set():
            try:
                connection.drain_events(timeout=self.TICK)
            except TimeoutError:
                pass
            if buffered is not None and not buffered():
                # All read: acknowledge it, and let the next heartbeats
                # gather, to be read with one system call and one
                # wake-up, not one each.
                self._ack()
                self._halt.wait(self.PAUSE)
            # AMQP heartbeats: sent when nothing else was, busy or idle.
            if time.monotonic() - checked >= self.TICK:
                self._ack()
                connection.heartbeat_check()
                checked = time.monotonic()

    def _ack(self):
        """Acknowledge every message taken so far (one ``multiple``
        acknowledgement)."""
        message, self._unacked = self._unacked, None
        self._unacked_count = 0
        if message is not None:
            message.channel.basic_ack(message.delivery_tag, multiple=True)

    def _received(self, message):
        self.received += 1
        self._unacked = message
        self._unacked_count += 1
        try:
            self._take(message.body)
        finally:
            if self._unacked_count >= ACK_EVERY:
                self._ack()

    def _take(self, raw):
        """Note the heartbeat of body ``raw``, or log its refusal."""
        try:
            if len(raw) > MAX_BODY:
                raise signing.Refused('heartbeat of %d bytes, over the '
                                      '%d-byte cap' % (len(raw), MAX_BODY))
            context, body = decode(raw)
            hostname, sent = self.verifier.heartbeat(context, body)
        except signing.Refused as e:
            metrics.HEARTBEATS.labels('refused').inc()
            self.refusals.refused(e, METHOD)
            return
        except (ValueError, TypeError, AttributeError, KeyError,
                RecursionError) as e:
            # RecursionError: JSON nested deeper than the decoder goes.
            metrics.HEARTBEATS.labels('refused').inc()
            self.refusals.refused(signing.Refused(
                'malformed heartbeat: %s' % e), METHOD)
            return
        try:
            self.on_heartbeat(hostname, sent)
        except Exception:
            LOG.exception('The heartbeat of %s could not be noted',
                          signing.loggable(hostname))
            return
        self.noted += 1

    def stop(self):
        self._halt.set()


def start(conf, key_store, on_heartbeat):
    """The running Consumer of this conductor's heartbeat queue, or None
    when the RPC transport is not RabbitMQ."""
    urls = broker_urls(conf)
    if not urls:
        LOG.info('No heartbeat channel: the RPC transport is not RabbitMQ; '
                 'agents send their heartbeats by RPC')
        return None
    consumer = Consumer(conf, key_store, on_heartbeat, urls=urls)
    consumer.start()
    return consumer
