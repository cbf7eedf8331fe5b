"""What cyborg.common.rabbit relies on in oslo.messaging's RabbitMQ driver
(private names): a release that changes any of it fails here first."""

import inspect
import threading
import time

import fixtures
import kombu

from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_rabbit
from oslo_messaging._drivers import pool
import oslo_messaging as messaging

from cyborg.common import exception
from cyborg.common import keys
from cyborg.common import rabbit
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.common import stopping
from cyborg.tests import base


class RabbitDriverTest(base.TestCase):

    def driver(self, identity):
        rpc.register_opts(self.conf)
        url = messaging.TransportURL.parse(
            self.conf, 'rabbit://u:p@127.0.0.1:1/')
        return rabbit.Driver(
            self.conf, url, default_exchange='cyborg',
            owner=rabbit.reply_owner(identity, 'r1-'),
            guest=identity != keys.CONDUCTOR)

    def test_reply_queues_are_named_by_their_reader(self):
        for identity, prefix in (('host:cmp-1', 'reply_r1-host.cmp-1.'),
                                 (keys.API, 'reply_r1-api.'),
                                 (keys.CONDUCTOR, 'reply_r1-conductor.')):
            name = self.driver(identity)._get_reply_queue_name()
            self.assertTrue(name.startswith(prefix), name)
            int(name[len(prefix):], 16)
        # oslo.messaging names the reply queue with this method.
        self.assertIn('self._get_reply_queue_name()', inspect.getsource(
            amqpdriver.AMQPDriverBase._get_reply_q))

    def test_a_guest_connects_with_the_guest_connection(self):
        self.assertIs(rabbit.GuestConnection, self.driver(
            'host:cmp-1')._connection_pool.connection_cls)
        self.assertIs(rabbit.BoundedConnection, self.driver(
            keys.CONDUCTOR)._connection_pool.connection_cls)
        # The pool makes its connections of that attribute.
        self.assertIn('self.connection_cls(', inspect.getsource(
            pool.ConnectionPool.create))

    def test_the_private_names_the_guest_connection_overrides(self):
        # Consumers are declared through declare_consumer (also by the
        # listener and reply waiter), which calls consumer.declare(conn);
        # every publish goes through _publish, which skips declaring a
        # passive exchange.
        for name in ('declare_topic_consumer', 'declare_direct_consumer'):
            self.assertIn('self.declare_consumer(consumer)',
                          inspect.getsource(getattr(impl_rabbit.Connection,
                                                    name)))
        self.assertIn('consumer.declare(self)', inspect.getsource(
            impl_rabbit.Connection.declare_consumer))
        self.assertIn('exchange.passive', inspect.getsource(
            impl_rabbit.Connection._publish))
        self.assertIn('self.exchange', inspect.getsource(
            impl_rabbit.Consumer.declare))
        # What the guest's listen() builds its listener of.
        self.assertEqual(['self', 'driver', 'conn'], list(inspect.signature(
            amqpdriver.RpcAMQPListener.__init__).parameters))
        self.assertEqual(
            ['self', 'exchange_name', 'topic', 'callback', 'queue_name'],
            list(inspect.signature(
                impl_rabbit.Connection.declare_topic_consumer).parameters))


    def test_the_private_names_of_the_connection_retries(self):
        # BoundedConnection.ensure_connection stands for oslo.messaging's,
        # which a connection calls as it is made and when it resets, and
        # does what it does, with kombu's callback between tries.
        for method in (impl_rabbit.Connection.__init__,
                       impl_rabbit.Connection.reset):
            self.assertIn('self.ensure_connection()',
                          inspect.getsource(method))
        theirs = inspect.getsource(impl_rabbit.Connection.ensure_connection)
        for used in ('self._set_current_channel(None)',
                     'self.connection.ensure_connection(',
                     'max_retries=self.max_retries',
                     'interval_start=self.interval_start',
                     'interval_step=self.interval_stepping',
                     'interval_max=self.interval_max',
                     'self._set_current_channel(self.connection.channel())',
                     'self.set_transport_socket_timeout()'):
            self.assertIn(used, theirs)
        self.assertIn('callback', inspect.signature(
            kombu.Connection._ensure_connection).parameters)
        # A listener waits for messages in consume(timeout), and its stop
        # takes effect once that returns.
        self.assertIn('self.conn.consume(timeout=', inspect.getsource(
            amqpdriver.AMQPListener))
        self.assertIn('self.conn.stop_consuming()', inspect.getsource(
            amqpdriver.AMQPListener.stop))
        self.assertIn('self._consume_loop_stopped', inspect.getsource(
            impl_rabbit.Connection.consume))
        # A lost listening connection is made again before consume
        # (BoundedConnection._reconnect_listener): consume's consumers
        # consume again on a new connection once their tags are new.
        consume = inspect.getsource(impl_rabbit.Connection.consume)
        for used in ('if not self.connection.connected:',
                     'self._new_tags = set(self._consumers.values())',
                     'while self._new_tags:',
                     'with self._connection_lock:'):
            self.assertIn(used, consume)
        # One try per node: kombu's list of the nodes of a connection.
        self.assertEqual(3, len(kombu.Connection(
            'amqp://a//;amqp://b//;amqp://c//').alt))
        # The guest's listen() waits for its exchange on the kombu
        # connection of the pool's connection.
        self.assertIn('self.connection = connection_pool.get(',
                      inspect.getsource(
                          driver_common.ConnectionContext.__init__))


class StopTest(base.TestCase):
    """The driver's waits end when the process is told to stop."""

    def setUp(self):
        super().setUp()
        self.addCleanup(stopping.clear)
        threading.Timer(0.5, stopping.request).start()

    def test_connecting_to_a_broker_that_refuses(self):
        rpc.register_opts(self.conf)
        url = messaging.TransportURL.parse(self.conf,
                                           'rabbit://u:p@127.0.0.1:1/')
        driver = rabbit.Driver(self.conf, url, default_exchange='cyborg')
        began = time.monotonic()
        # oslo.messaging tries for ever (retry=None).
        self.assertRaises(exception.Stopping, driver._connection_pool.create)
        self.assertLess(time.monotonic() - began, 5)

    def test_waiting_for_an_exchange(self):
        self.useFixture(fixtures.MockPatch(
            'cyborg.common.rabbit.exchange_exists', return_value=False))
        began = time.monotonic()
        self.assertRaises(exception.Stopping, rabbit.wait_for_exchange,
                          None, kombu.Exchange('cyborg', 'topic'))
        self.assertLess(time.monotonic() - began, 5)


class _Message:

    def __init__(self, body):
        self.body = body
        self.acked = False

    def ack(self):
        self.acked = True


class _Consumer:

    def __init__(self):
        self.queue_name = 'cyborg-conductor'
        self.queue = self
        self.channel = object()


class BoundsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.taken = []
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.security'))
        self.refusals = signing.RefusalLog('RPC consumer')

    def test_a_message_over_the_cap_is_acknowledged_and_refused_unread(self):
        big = _Message(b'x' * 101)
        rabbit._capped(self.taken.append, _Consumer(), 100, self.refusals,
                       big)
        self.assertEqual([], self.taken)
        self.assertTrue(big.acked)
        self.assertIn('a message of 101 bytes, over [security] '
                      'max_message_bytes (100)', self.logs.output)
        small = _Message(b'x' * 100)
        rabbit._capped(self.taken.append, _Consumer(), 100, self.refusals,
                       small)
        self.assertEqual([small], self.taken)
        self.assertFalse(small.acked)

    def test_prefetch_is_bounded_unless_the_option_bounds_it(self):
        connection = rabbit.BoundedConnection.__new__(
            rabbit.BoundedConnection)
        connection._cyborg_prefetch = 64
        connection.rabbit_qos_prefetch_count = 0
        self.assertEqual(64, connection.rabbit_qos_prefetch_count)
        connection.rabbit_qos_prefetch_count = 10
        self.assertEqual(10, connection.rabbit_qos_prefetch_count)
        # oslo.messaging sets it in Connection.__init__ and reads it when
        # it sets a channel's QoS.
        self.assertIn('self.rabbit_qos_prefetch_count = ', inspect.getsource(
            impl_rabbit.Connection.__init__))
        self.assertIn('self.rabbit_qos_prefetch_count', inspect.getsource(
            impl_rabbit.Connection._set_qos))
        self.assertIn('callback=self._callback', inspect.getsource(
            impl_rabbit.Consumer.consume))
