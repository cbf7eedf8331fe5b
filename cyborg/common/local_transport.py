"""``local:/``: oslo.messaging in this process, waking only for messages.

The all-in-one's conductor and agent talk over in-process messaging.
oslo.messaging's own in-memory driver (``fake:/``) has every listener look
for messages twenty times a second, which is most of what an idle
all-in-one costs. This driver is that one with the polling replaced by a
wait: a delivery wakes the listeners, and a listener with nothing to do
sleeps until one does (or its poll's timeout ends).
"""

import threading
import time

import oslo_messaging
from oslo_messaging._drivers import base
from oslo_messaging._drivers import impl_fake

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
    """The ``local`` transport (``transport_url = local:/``)."""

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
