"""Who declares what on RabbitMQ: cyborg's use of oslo.messaging's
``rabbit`` driver.

The conductors own the broker layout that more than one party uses: the
topic exchange (``control_exchange``), the conductors' queues and the
heartbeat channel's queue. An agent or the API (a *guest*) declares no
shared name: it declares the exchange passively (asserting that it
exists, which needs no RabbitMQ permission) and consumes only queues of
its own, so its broker user needs ``configure`` on nothing that another
party uses (:mod:`cyborg.common.broker` prints those permissions):

* an agent's RPC server reads only ``<topic>.<host>``, its own queue:
  not the topic's shared queue, nor a fanout queue (cyborg sends an
  agent nothing but messages addressed to it, each signed with that
  host's key);
* reply queues are named by who reads them: ``reply_<prefix><owner>.<hex>``
  with ``<owner>`` ``api``, ``conductor`` or ``host.<hostname>``, so a
  host's user may read and configure its own reply queues only.

oslo.messaging has no options for any of that: this module changes its
driver and connection through :mod:`cyborg.compat.oslo_messaging`, which
gives the parts it changes public names, and
``cyborg/tests/unit/test_rabbit.py`` fails should a release change what it
relies on.
"""

import functools
import uuid

from amqp import exceptions as amqp_exceptions
import kombu
from kombu import exceptions as kombu_exceptions
from oslo_log import log as logging

from cyborg.common import exception
from cyborg.common import keys
from cyborg.common import signing
from cyborg.common import stopping
from cyborg.compat import oslo_messaging as messaging_compat

LOG = logging.getLogger(__name__)

#: oslo.messaging's names of its RabbitMQ driver.
SCHEMES = messaging_compat.RABBIT_SCHEMES
#: Seconds between two looks for an exchange a conductor has not
#: declared yet, at most.
MAX_WAIT = 10.0
#: Seconds a consumer waits for messages before it looks whether it is
#: stopped, at most (oslo.messaging's listener waits up to 5).
CONSUME_WAIT = 1.0


def reply_owner(identity, prefix=''):
    """The part of a reply queue's name that says whose it is."""
    host = keys.host_of(identity)
    if host is not None:
        return '%shost.%s' % (prefix, host)
    return prefix + identity


def exchange_exists(connection, exchange):
    """Whether ``exchange`` (kombu's) exists, asked on a channel of its
    own: the broker closes the channel that asked for a missing one."""
    channel = connection.channel()
    try:
        channel.exchange_declare(exchange=exchange.name, type=exchange.type,
                                 passive=True)
        return True
    except amqp_exceptions.NotFound:
        return False
    finally:
        try:
            channel.close()
        except Exception as e:
            LOG.debug('Closing a channel the broker closed: %s', e)


def wait_for_exchange(connection, exchange):
    """Return once ``exchange`` (kombu's) exists on ``connection``
    (kombu's): a guest cannot declare it, and waits for a conductor to
    (at its first start, or after a broker lost its non-durable
    exchanges). The wait ends with Stopping when the process is told to
    stop."""
    delay = 1.0
    said = False
    while not exchange_exists(connection, exchange):
        if not said:
            LOG.warning('The exchange %s does not exist on the broker yet; '
                        'a cyborg-conductor declares it: waiting for one',
                        exchange.name)
            said = True
        stopping.sleep(delay)
        delay = min(delay * 2, MAX_WAIT)
    if said:
        LOG.info('The exchange %s exists now', exchange.name)


def _declare_once_there(declare, exchange, conn):
    """``declare(conn)`` once ``exchange`` exists (oslo.messaging declares
    a consumer again on each reconnect)."""
    wait_for_exchange(conn.connection, exchange)
    return declare(conn)


def _capped(take, consumer, limit, refusals, message):
    """``take(message)`` unless its body is over ``limit`` bytes: then it
    is acknowledged (so never handed out again) and refused, unread."""
    size = len(getattr(message, 'body', b'') or b'')
    if size <= limit:
        return take(message)
    to_python = getattr(consumer.queue.channel, 'message_to_python', None)
    (to_python(message) if to_python else message).ack()
    refusals.refused(signing.Refused(
        'a message of %d bytes, over [security] max_message_bytes (%d)'
        % (size, limit)), 'a message on %s' % consumer.queue_name)


def ssl_version(name):
    """The ``ssl`` module's protocol of ``[oslo_messaging_rabbit]
    ssl_version`` ``name``, as oslo.messaging's driver reads it (for the
    heartbeat channel's own connections)."""
    return messaging_compat.rabbit_ssl_version(name)


class BoundedConnection(messaging_compat.RabbitConnection):
    """A connection whose consumers take at most ``[security]
    rpc_prefetch`` messages ahead (unless ``rabbit_qos_prefetch_count``
    says how many) and drop, unread, a message over ``[security]
    max_message_bytes``."""

    def __init__(self, conf, url, purpose, retry=None):
        security = conf.security
        self._cyborg_prefetch = security.rpc_prefetch
        self._cyborg_max_bytes = security.max_message_bytes
        self._cyborg_refusals = signing.RefusalLog('RPC consumer')
        super().__init__(conf, url, purpose, retry=retry)

    @property
    def rabbit_qos_prefetch_count(self):
        return self._prefetch

    @rabbit_qos_prefetch_count.setter
    def rabbit_qos_prefetch_count(self, count):
        # oslo.messaging sets it from its option; 0 means no bound.
        self._prefetch = count if count > 0 else self._cyborg_prefetch

    def ensure_connection(self, max_retries=None):
        """Connect (again), as oslo.messaging's driver does, trying until
        the process is told to stop: oslo.messaging tries for ever
        (``retry=None``), and a daemon that could not reach its broker
        ignored SIGTERM. kombu calls ``callback`` after each failed try
        and each second of the pause before the next; it raises Stopping
        then, which ends the tries (it is no connection error).
        ``max_retries``, when given, bounds the tries (else the
        connection's own bound, by default none)."""
        def failed(exc, interval):
            LOG.error('Connection failed: %s (retrying in %s seconds)',
                      exc, interval)

        self.use_channel(None)
        self.connection.ensure_connection(
            errback=failed,
            max_retries=(self.max_retries if max_retries is None
                         else max_retries),
            interval_start=self.interval_start,
            interval_step=self.interval_stepping,
            interval_max=self.interval_max, callback=stopping.check)
        self.use_channel(self.connection.channel())
        self.set_transport_socket_timeout()

    def _reconnect_listener(self):
        """Try each node of ``transport_url`` once, from the one after
        the node that was lost; the consumers consume again on the node
        that answers. Without this a lost listening connection never
        failed over: oslo.messaging reconnects inside ``consume``, whose
        timeout (at most CONSUME_WAIT) ran out during its pause of
        ``kombu_reconnect_delay`` before the first try, which then ended
        the tries before kombu switched to the next node; each wait tried
        the lost node again, for ever (issue 41). When no node answers,
        or the process is stopping, oslo.messaging's ``consume`` goes on
        as before (it logs the failure and waits)."""
        with self.connection_lock:
            if self.connection.connected:
                return
            try:
                self.ensure_connection(
                    max_retries=max(len(self.connection.alt), 1) - 1)
            except (exception.Stopping, kombu_exceptions.OperationalError,
                    *self.connection.recoverable_connection_errors,
                    *self.connection.recoverable_channel_errors) as e:
                LOG.debug('[%s] No node to consume from yet: %s',
                          self.connection_id, e)
                return
            self.consume_again()
            LOG.info('[%(connection_id)s] Reconnected to AMQP server on '
                     '%(hostname)s:%(port)s to consume',
                     self.connection_info())

    def consume(self, timeout=None):
        """Wait for messages ``timeout`` seconds, at most CONSUME_WAIT: a
        listener that is stopped ends its wait only then (an RPC server
        took up to 5 s to stop when idle). A connection that was lost is
        made again first (:meth:`_reconnect_listener`)."""
        if not self.connection.connected:
            self._reconnect_listener()
        return super().consume(timeout=CONSUME_WAIT if timeout is None
                               else min(timeout, CONSUME_WAIT))

    def declare_consumer(self, consumer):
        self.wrap_callback(consumer, lambda take: functools.partial(
            _capped, take, consumer, self._cyborg_max_bytes,
            self._cyborg_refusals))
        return super().declare_consumer(consumer)


class GuestConnection(BoundedConnection):
    """A connection that declares every named exchange passively."""

    def declare_consumer(self, consumer):
        if consumer.exchange.name:
            consumer.exchange.passive = True
            # Also when oslo.messaging declares it again on a reconnect.
            consumer.declare = functools.partial(
                _declare_once_there, consumer.declare, consumer.exchange)
        return super().declare_consumer(consumer)

    def before_publish(self, exchange):
        if exchange.name:
            exchange.passive = True


class Driver(messaging_compat.RabbitDriver):
    """oslo.messaging's RabbitMQ driver, naming its reply queue after
    ``owner`` (:func:`reply_owner`); a ``guest`` (an agent, the API)
    declares exchanges passively and its RPC server reads only its own
    queue."""

    def __init__(self, conf, url, default_exchange=None,
                 allowed_remote_exmods=None, owner='conductor',
                 guest=False):
        super().__init__(conf, url, default_exchange=default_exchange,
                         allowed_remote_exmods=allowed_remote_exmods)
        self.owner = owner
        self.guest = guest
        self.use_connection_class(
            GuestConnection if guest else BoundedConnection)

    def reply_queue_name(self):
        return 'reply_%s.%s' % (self.owner, uuid.uuid4().hex)

    def listen(self, target, batch_size, batch_timeout):
        if not self.guest:
            return super().listen(target, batch_size, batch_timeout)
        # The exchange is waited for first, outside oslo.messaging's
        # retries, which log a stop that ends the wait as a failure to
        # connect.
        return self.listen_on_server_queue(
            target, batch_size, batch_timeout,
            before=lambda connection, exchange: wait_for_exchange(
                connection, kombu.Exchange(exchange, 'topic')))
