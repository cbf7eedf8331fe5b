"""oslo.messaging: a transport's sends, a dispatcher's calls, a server's
thread pool, its RabbitMQ driver's hooks and the in-memory ``local:/``
driver.

What cyborg changes and oslo.messaging offers no interface for:

* every RPC message it sends is signed (``common/rpc.py``): the RPC
  client sends through ``Transport._send``, and :class:`SendingTransport`
  has it go through :meth:`SendingTransport.send_message`, on the driver
  of a transport oslo.messaging made (``Transport._driver``);
* every message it receives is checked before the endpoint's method runs
  with the caller's proven identity: the RPC dispatcher calls the method
  in ``RPCDispatcher._do_dispatch``, which :class:`EndpointDispatcher`
  sends to :meth:`EndpointDispatcher.call_endpoint`;
* the RPC server's thread pool (:func:`use_executor`): the ``executor``
  argument of ``RPCServer`` takes only the names ``threading`` and
  ``eventlet`` (oslo.messaging 18), and ``threading`` is futurist's pool;
  the server makes its pool from ``_executor_cls`` at ``start()``.

* what ``cyborg.common.rabbit`` changes in the RabbitMQ driver (who
  declares what, bounded consumers, the listener's fail-over): it builds
  on :class:`RabbitConnection` and :class:`RabbitDriver`, which give the
  driver's private parts public names, and uses nothing private itself;
* ``local:/`` (:class:`LocalDriver`): the in-memory driver with its
  polling replaced by a wait, for the all-in-one.

``tests/unit/compat/test_oslo_messaging.py`` fails should a release change
what these rely on (with ``tests/unit/test_rabbit.py`` and
``tests/unit/test_local_transport.py``, which test the drivers as cyborg
uses them).
"""

import threading
import time

import oslo_messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import base
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_fake
from oslo_messaging._drivers import impl_rabbit
from oslo_messaging.rpc import dispatcher
from oslo_messaging import transport as msg_transport

DISTRIBUTION = 'oslo.messaging'

PRIVATE_NAMES = (
    # Transport, dispatcher, server.
    '_do_dispatch', '_driver', '_executor_cls', '_send',
    # The RabbitMQ driver.
    '_callback', '_connection_lock', '_connection_pool', '_consumers',
    '_drivers', '_get_connection', '_get_connection_info', '_get_exchange',
    '_get_reply_queue_name', '_new_tags', '_publish',
    '_set_current_channel',
    # The in-memory driver.
    '_default_exchange', '_exchange_manager', '_exchanges',
    '_exchanges_lock', '_pool', '_stopped', '_targets',
)

#: oslo.messaging's names of its RabbitMQ driver.
RABBIT_SCHEMES = ('rabbit', 'kombu')


class SendingTransport(msg_transport.RPCTransport):
    """An RPC transport on the driver of ``transport`` (one that
    oslo.messaging made), every message of which goes through
    :meth:`send_message`."""

    def __init__(self, transport):
        super().__init__(transport._driver)

    def _send(self, target, ctxt, message, *args, **kwargs):
        return self.send_message(target, ctxt, message, *args, **kwargs)

    def send_message(self, target, ctxt, message, *args, **kwargs):
        """Send ``message`` as oslo.messaging does; what a call returns is
        its reply. The arguments after ``message`` are oslo.messaging's
        (``wait_for_reply``, ``timeout``, ...)."""
        return super()._send(target, ctxt, message, *args, **kwargs)


class EndpointDispatcher(dispatcher.RPCDispatcher):
    """An RPC dispatcher that calls an endpoint's method through
    :meth:`call_endpoint`."""

    def _do_dispatch(self, endpoint, method, ctxt, args):
        return self.call_endpoint(endpoint, method, ctxt, args)

    def call_endpoint(self, endpoint, method, ctxt, args):
        """Call ``method`` of ``endpoint`` with the serialized context
        ``ctxt`` and arguments ``args`` (a dict); the serialized result.
        As oslo.messaging does unless overridden."""
        return super()._do_dispatch(endpoint, method, ctxt, args)


def use_executor(server, executor_cls):
    """``server`` (an RPC server, not started) runs incoming messages in
    ``executor_cls(max_workers=executor_thread_pool_size)``, of which it
    uses only ``submit()`` and ``shutdown(wait=True)``."""
    server._executor_cls = executor_cls


# The RabbitMQ driver.

def rabbit_ssl_version(name):
    """The ``ssl`` module's protocol of ``[oslo_messaging_rabbit]
    ssl_version`` ``name``, as the RabbitMQ driver reads it."""
    return impl_rabbit.Connection.validate_ssl_version(name)


class RabbitConnection(impl_rabbit.Connection):
    """The RabbitMQ driver's connection, with public names for the parts
    of it that cyborg changes."""

    @property
    def connection_lock(self):
        """The lock the connection holds while it (re)connects or
        consumes."""
        return self._connection_lock

    def use_channel(self, channel):
        """Make ``channel`` (kombu's, or None) the one the connection
        sends and consumes on, as the driver does after it connects."""
        self._set_current_channel(channel)

    def consume_again(self):
        """Have every consumer of the connection declared again at the
        next ``consume``, as the driver's own reconnect does."""
        self._new_tags = set(self._consumers.values())

    def connection_info(self):
        """``{'hostname', 'port', 'connection_id'}`` of the node the
        connection is on, as the driver logs it."""
        return self._get_connection_info()

    @staticmethod
    def wrap_callback(consumer, wrap):
        """Have ``consumer`` (the driver's) hand each message to
        ``wrap(callback)`` instead of to its ``callback``."""
        consumer._callback = wrap(consumer._callback)

    def before_publish(self, exchange):
        """Called with kombu's ``exchange`` before a message is published
        on it; does nothing unless overridden."""

    def _publish(self, exchange, msg, *args, **kwargs):
        self.before_publish(exchange)
        return super()._publish(exchange, msg, *args, **kwargs)


class RabbitDriver(impl_rabbit.RabbitDriver):
    """The RabbitMQ driver, with public names for the parts of it that
    cyborg changes."""

    def use_connection_class(self, connection_cls):
        """Make the connections of the driver's pool ``connection_cls``
        (a :class:`RabbitConnection`)."""
        self._connection_pool.connection_cls = connection_cls

    def reply_queue_name(self):
        """The name of the driver's reply queue (made once); the driver's
        own unless overridden."""
        return super()._get_reply_queue_name()

    def _get_reply_queue_name(self):
        return self.reply_queue_name()

    def listen_on_server_queue(self, target, batch_size, batch_timeout,
                               before=None):
        """An RPC listener on ``<topic>.<server>`` of ``target`` alone (the
        driver's ``listen`` also consumes the topic's shared queue and its
        fanout), as ``listen`` returns it. ``before(connection,
        exchange)``, if given, is called first with kombu's connection and
        the exchange's name."""
        conn = self._get_connection(driver_common.PURPOSE_LISTEN)
        exchange = self._get_exchange(target)
        if before is not None:
            before(conn.connection.connection, exchange)
        listener = amqpdriver.RpcAMQPListener(self, conn)
        conn.declare_topic_consumer(
            exchange_name=exchange,
            topic='%s.%s' % (target.topic, target.server),
            callback=listener)
        return base.PollStyleListenerAdapter(listener, batch_size,
                                             batch_timeout)


# ``local:/``: oslo.messaging in this process, waking only for messages.
#
# The all-in-one's conductor and agent talk over in-process messaging.
# oslo.messaging's own in-memory driver (``fake:/``) has every listener
# look for messages twenty times a second, which is most of what an idle
# all-in-one costs. This driver is that one with the polling replaced by
# a wait: a delivery wakes the listeners, and a listener with nothing to
# do sleeps until one does (or its poll's timeout ends).

# One condition for every exchange of the process: a delivery bumps the
# generation and wakes the listeners, which look at their queues again.
_WAKE = threading.Condition()
_GENERATION = [0]


def _delivered():
    with _WAKE:
        _GENERATION[0] += 1
        _WAKE.notify_all()


class _Exchange(impl_fake.FakeExchange):

    def deliver_message(self, *args, **kwargs):
        super().deliver_message(*args, **kwargs)
        _delivered()


class _ExchangeManager(impl_fake.FakeExchangeManager):
    # Exchanges of their own, apart from the fake driver's.
    _exchanges_lock = threading.Lock()
    _exchanges = {}

    def get_exchange(self, name):
        if name is None:
            name = self._default_exchange
        with self._exchanges_lock:
            return self._exchanges.setdefault(name, _Exchange(name))


class _Listener(impl_fake.FakeListener):

    def _take(self):
        for target in self._targets:
            exchange = self._exchange_manager.get_exchange(target.exchange)
            ctxt, message, reply_q, requeue = exchange.poll(target,
                                                            self._pool)
            if message is not None:
                return impl_fake.FakeIncomingMessage(ctxt, message, reply_q,
                                                     requeue)
        return None

    @base.batch_poll_helper
    def poll(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._stopped.is_set():
            with _WAKE:
                seen = _GENERATION[0]
            message = self._take()
            if message is not None:
                return message
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            with _WAKE:
                # Nothing delivered since we looked: sleep until something
                # is (or we are stopped).
                if _GENERATION[0] == seen and not self._stopped.is_set():
                    _WAKE.wait(left)
        return None

    def stop(self):
        super().stop()
        _delivered()


class LocalDriver(impl_fake.FakeDriver):
    """The ``local`` transport (``transport_url = local:/``): the
    in-memory driver, whose idle listeners sleep until a message is
    delivered instead of polling."""

    def __init__(self, conf, url, default_exchange=None,
                 allowed_remote_exmods=None):
        super().__init__(conf, url, default_exchange, allowed_remote_exmods)
        self._exchange_manager = _ExchangeManager(default_exchange)

    def listen(self, target, batch_size, batch_timeout):
        return self._listen([
            _target(target.topic, target.server, target.exchange
                    or self._default_exchange),
            _target(target.topic, None, target.exchange
                    or self._default_exchange)], batch_size, batch_timeout)

    def listen_for_notifications(self, targets_and_priorities, pool,
                                 batch_size, batch_timeout):
        return self._listen(
            [_target('%s.%s' % (target.topic, priority), None,
                     target.exchange)
             for target, priority in targets_and_priorities],
            batch_size, batch_timeout, pool)

    def _listen(self, targets, batch_size, batch_timeout, pool=None):
        listener = _Listener(self._exchange_manager, targets, pool)
        return base.PollStyleListenerAdapter(listener, batch_size,
                                             batch_timeout)


def _target(topic, server, exchange):
    return oslo_messaging.Target(topic=topic, server=server,
                                 exchange=exchange)
