"""The heartbeat channel on the real RabbitMQ: conductors read agents'
heartbeats from their shared queue, take only those that prove their
host and are fresh, and agents and conductors of the previous protocol
still heartbeat by RPC."""

import logging
import socket
import threading
import time
import types
from unittest import mock

import amqp.exceptions
import fixtures
import kombu
import kombu.utils.url
import oslo_messaging as messaging

from cyborg.agent import manager as agent_manager
from cyborg.common import context
from cyborg.common import heartbeats
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import hosts as db_hosts
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import faults
from cyborg.tests.functional.test_hello import wait_for


def agent_hello(hostname):
    return host_obj.AgentHello(hostname=hostname, status='READY',
                               endpoint=hostname, version='1', drivers=[])


class HeartbeatChannelTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf, 'rabbit'))
        self.flags(heartbeat_interval=1, group='agent')
        self.flags(heartbeat_flush_interval=0, group='conductor')
        self.ctx = context.get_admin_context()
        self.security = self.useFixture(fixtures.FakeLogger(
            name='cyborg.security', level=logging.WARNING))
        self.api = conductor_rpcapi.ConductorAPI()

    def start_conductor(self, host='conductor-1'):
        service = cyborg_fixtures.start_rpc_service(
            self, conductor_manager.ConductorManager(host, self.conf),
            rpc.CONDUCTOR_TOPIC, host)
        consumer = service.manager.heartbeats
        self.assertIsNotNone(consumer)
        self.assertTrue(consumer.consuming.wait(20))
        return service

    def hello(self, hostname):
        """Say hello as ``hostname``'s agent; the channel it is told."""
        answer = self.api.agent_hello(self.ctx, agent_hello(hostname),
                                      timeout=20)
        return answer.heartbeat_topic

    def last_seen(self, hostname):
        return db_hosts.get_by_hostname(self.ctx, hostname)[0].last_seen_at

    def cast_as(self, sender, topic, hostname):
        """A heartbeat about ``hostname`` signed by host ``sender``."""
        client = rpc.get_client(messaging.Target(topic=topic),
                                sender=keys.host_identity(sender),
                                serializer=rpc.RequestIdSerializer())
        client.cast(self.ctx, 'agent_heartbeat', hostname=hostname)

    def test_a_heartbeat_on_the_channel_is_noted(self):
        consumer = self.start_conductor().manager.heartbeats
        topic = self.hello('cmp-1')
        self.assertEqual(heartbeats.topic(self.conf), topic)
        before = self.last_seen('cmp-1')
        time.sleep(0.01)
        self.api.agent_heartbeat(self.ctx, 'cmp-1', topic=topic)
        wait_for(lambda: consumer.noted == 1)
        self.assertGreater(self.last_seen('cmp-1'), before)
        self.assertEqual('', self.security.output)

    def test_a_heartbeat_for_another_host_is_refused(self):
        consumer = self.start_conductor().manager.heartbeats
        topic = self.hello('cmp-1')
        self.hello('cmp-2')
        before = self.last_seen('cmp-1')
        self.cast_as('cmp-2', topic, 'cmp-1')
        wait_for(lambda: consumer.received == 1)
        self.assertEqual(0, consumer.noted)
        self.assertEqual(before, self.last_seen('cmp-1'))
        self.assertIn('heartbeat about host cmp-1', self.security.output)
        self.assertIn('proven sender host:cmp-2', self.security.output)

    def test_a_replay_older_than_max_message_age_is_ignored(self):
        self.flags(max_message_age=30, group='security')
        consumer = self.start_conductor().manager.heartbeats
        topic = self.hello('cmp-1')
        before = self.last_seen('cmp-1')
        old = types.SimpleNamespace(time=lambda: time.time() - 31)
        sign = signing.sign

        def sign_before(*args, **kwargs):
            # Only while signing: the conductor's check of the window
            # (signing.check_window) must see the real clock.
            with mock.patch.object(signing, 'time', old):
                return sign(*args, **kwargs)
        with mock.patch.object(signing, 'sign', sign_before):
            self.api.agent_heartbeat(self.ctx, 'cmp-1', topic=topic)
        # The consumer counts a message as received before it checks it,
        # and logs the refusal after: wait for the log line too.
        wait_for(lambda: consumer.received == 1
                 and 'beyond the 30 s window' in self.security.output)
        self.assertEqual(0, consumer.noted)
        self.assertEqual(before, self.last_seen('cmp-1'))

    def test_an_agent_of_the_previous_release_heartbeats_by_rpc(self):
        conductor = self.start_conductor()
        # Its hello is AgentHello 1.1; the answer, the Host 1.1 it knows.
        hello = agent_hello('cmp-old').obj_to_primitive(target_version='1.1')
        answer = self.api.agent_hello(self.ctx, hello, timeout=20)
        self.assertEqual('1.1', answer.VERSION)
        self.assertFalse(answer.obj_attr_is_set('heartbeat_topic'))
        before = self.last_seen('cmp-old')
        time.sleep(0.01)
        self.api.agent_heartbeat(self.ctx, 'cmp-old')
        wait_for(lambda: self.last_seen('cmp-old') > before)
        self.assertEqual(0, conductor.manager.heartbeats.received)

    def test_an_agent_heartbeats_by_rpc_to_a_conductor_without_channel(self):
        with mock.patch.object(heartbeats, 'start', return_value=None):
            conductor = cyborg_fixtures.start_rpc_service(
                self, conductor_manager.ConductorManager('c-1', self.conf),
                rpc.CONDUCTOR_TOPIC, 'c-1')
        self.assertIsNone(conductor.manager.heartbeats)
        self.flags(host='cmp-new')
        agent = cyborg_fixtures.start_rpc_service(
            self, agent_manager.AgentManager('cmp-new', self.conf),
            rpc.AGENT_TOPIC, 'cmp-new')
        first = wait_for(lambda: self._row('cmp-new'))
        wait_for(lambda: self.last_seen('cmp-new') > first.last_seen_at)
        self.assertIsNone(agent.manager.reporter._heartbeat_topic)

    def test_a_real_agent_uses_the_channel(self):
        conductor = self.start_conductor()
        self.flags(host='cmp-3')
        agent = cyborg_fixtures.start_rpc_service(
            self, agent_manager.AgentManager('cmp-3', self.conf),
            rpc.AGENT_TOPIC, 'cmp-3')
        wait_for(lambda: conductor.manager.heartbeats.noted >= 2)
        self.assertEqual(heartbeats.topic(self.conf),
                         agent.manager.reporter._heartbeat_topic)

    def test_two_conductors_share_the_queue_and_either_may_die(self):
        first = self.start_conductor('conductor-1').manager.heartbeats
        second_service = self.start_conductor('conductor-2')
        second = second_service.manager.heartbeats
        hosts = ['cmp-%02d' % i for i in range(20)]
        for hostname in hosts:
            topic = self.hello(hostname)
        for hostname in hosts:
            self.api.agent_heartbeat(self.ctx, hostname, topic=topic)
        wait_for(lambda: first.noted + second.noted == len(hosts))
        self.assertGreater(first.noted, 0)
        self.assertGreater(second.noted, 0)
        second_service.stop()
        noted = first.noted
        for hostname in hosts:
            self.api.agent_heartbeat(self.ctx, hostname, topic=topic)
        wait_for(lambda: first.noted == noted + len(hosts))

    def _row(self, hostname):
        try:
            return db_hosts.get_by_hostname(self.ctx, hostname)[0]
        except Exception:
            return None


def _port_of_ours():
    """A free loopback port in 22000-22999 (the range for test servers)."""
    for port in range(22000, 23000):
        with socket.socket() as sock:
            try:
                sock.bind(('127.0.0.1', port))
            except OSError:
                continue
            return port
    raise RuntimeError('no free port in 22000-22999')


class BrokerLostTest(base.TestCase):
    """The channel's consumer reconnects when it loses the broker."""

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf, 'rabbit'))
        [url] = heartbeats.broker_urls(self.conf)
        parsed = kombu.utils.url.url_to_parts(url)
        self.gate = faults.TcpGate(self, (parsed.hostname, parsed.port))
        self.gate.port = _port_of_ours()
        self.gate.open()
        through = url.replace('%s:%d' % (parsed.hostname, parsed.port),
                              '127.0.0.1:%d' % self.gate.port, 1)
        # The exchange, as oslo.messaging declares it.
        with kombu.Connection(url) as connection:
            kombu.Exchange(self.conf.control_exchange, 'topic',
                           durable=False)(connection.channel()).declare()
        self.noted = []
        self.consumer = heartbeats.Consumer(
            self.conf, self.messaging.keys,
            lambda hostname, _sent: self.noted.append(hostname),
            urls=[through])
        self.addCleanup(self.consumer.join, 5)
        self.addCleanup(self.consumer.stop)
        self.consumer.start()
        self.api = conductor_rpcapi.ConductorAPI()
        self.ctx = context.get_admin_context()

    def test_heartbeats_are_read_again_after_the_broker_came_back(self):
        self.assertTrue(self.consumer.consuming.wait(20))
        self.gate.close()
        wait_for(lambda: not self.consumer.consuming.is_set())
        self.gate.open()
        self.assertTrue(self.consumer.consuming.wait(20))
        self.api.agent_heartbeat(self.ctx, 'cmp-1',
                                 topic=self.consumer.topic)
        wait_for(lambda: self.noted == ['cmp-1'])


class FailoverTest(base.TestCase):
    """With several hosts in ``transport_url`` (three gates to the one
    broker, standing for a cluster's nodes), the channel's consumer goes
    on to the next host when it loses the one it reads from, and tries
    every host in turn, however many are gone."""

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf, 'rabbit'))
        [url] = heartbeats.broker_urls(self.conf)
        parsed = kombu.utils.url.url_to_parts(url)
        with kombu.Connection(url) as connection:
            kombu.Exchange(self.conf.control_exchange, 'topic',
                           durable=False)(connection.channel()).declare()
        self.gates = []
        urls = []
        for _ in range(3):
            gate = faults.TcpGate(self, (parsed.hostname, parsed.port))
            gate.port = _port_of_ours()
            gate.open()
            self.gates.append(gate)
            urls.append(url.replace(
                '%s:%d' % (parsed.hostname, parsed.port),
                '127.0.0.1:%d' % gate.port, 1))
        self.noted = []
        self.consumer = heartbeats.Consumer(
            self.conf, self.messaging.keys,
            lambda hostname, _sent: self.noted.append(hostname),
            urls=urls)
        self.addCleanup(self.consumer.join, 5)
        self.addCleanup(self.consumer.stop)
        self.consumer.start()
        self.api = conductor_rpcapi.ConductorAPI()
        self.ctx = context.get_admin_context()

    def reconnected(self, hostname):
        wait_for(lambda: not self.consumer.consuming.is_set())
        self.assertTrue(self.consumer.consuming.wait(20))
        self.api.agent_heartbeat(self.ctx, hostname,
                                 topic=self.consumer.topic)
        wait_for(lambda: hostname in self.noted)

    def test_the_consumer_moves_to_the_next_host_each_time(self):
        self.assertTrue(self.consumer.consuming.wait(20))
        # The first two hosts gone: the third is reached.
        self.gates[0].close()
        self.gates[1].close()
        self.reconnected('cmp-1')
        # The first back, the third gone: the first is reached, though
        # the second (tried first, after the third) is still gone.
        self.gates[0].open()
        self.gates[2].close()
        self.reconnected('cmp-2')


class BoundsTest(base.TestCase):
    """What the broker and the channel let a host pile up on a
    conductor: the queue's bounds, the prefetch, the body cap."""

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(cyborg_fixtures.Messaging(
            self, self.conf, 'rabbit'))
        [self.url] = heartbeats.broker_urls(self.conf)
        self.exchange = kombu.Exchange(self.conf.control_exchange, 'topic',
                                       durable=False)
        with kombu.Connection(self.url) as connection:
            self.exchange(connection.channel()).declare()
        self.security = self.useFixture(fixtures.FakeLogger(
            name='cyborg.security', level=logging.WARNING))
        self.noted = []
        self.api = conductor_rpcapi.ConductorAPI()
        self.ctx = context.get_admin_context()

    def consumer(self, on_heartbeat=None):
        consumer = heartbeats.Consumer(
            self.conf, self.messaging.keys,
            on_heartbeat or (lambda host, _sent: self.noted.append(host)),
            urls=[self.url])
        self.addCleanup(consumer.join, 5)
        self.addCleanup(consumer.stop)
        consumer.start()
        self.assertTrue(consumer.consuming.wait(20))
        return consumer

    @staticmethod
    def stopped(consumer):
        consumer.stop()
        consumer.join(10)
        assert not consumer.is_alive()

    def declare(self, arguments, name=None):
        with kombu.Connection(self.url) as connection:
            return kombu.Queue(
                name or heartbeats.queue_name(self.conf),
                exchange=self.exchange, routing_key=heartbeats.topic(
                    self.conf), durable=True, auto_delete=False,
                queue_arguments=arguments)(connection.channel()).declare()

    def ready(self, name=None):
        """Messages ready (not delivered) in the queue."""
        with kombu.Connection(self.url) as connection:
            _name, count, _consumers = connection.channel().queue_declare(
                name or heartbeats.queue_name(self.conf), passive=True)
            return count

    def heartbeat(self, hostname='cmp-1'):
        self.api.agent_heartbeat(self.ctx, hostname,
                                 topic=heartbeats.topic(self.conf))

    def test_the_queue_is_declared_with_its_bounds(self):
        self.stopped(self.consumer())
        # The same arguments: declared again; without the bounds (the
        # first queue's), refused, so the queue has them.
        self.declare(heartbeats.queue_arguments())
        error = self.assertRaises(
            amqp.exceptions.PreconditionFailed, self.declare,
            {'x-message-ttl': heartbeats.QUEUE_TTL_MS,
             'x-expires': heartbeats.QUEUE_EXPIRES_MS})
        self.assertIn('inequivalent arg', str(error))

    def test_the_queue_of_the_release_before_does_not_stop_the_channel(self):
        # As a conductor of the release before declared it.
        old = heartbeats.topic(self.conf)
        self.declare({'x-message-ttl': heartbeats.QUEUE_TTL_MS,
                      'x-expires': heartbeats.QUEUE_EXPIRES_MS}, name=old)
        self.consumer()
        self.heartbeat()
        wait_for(lambda: self.noted == ['cmp-1'])
        # Agents' casts reach both while both are bound.
        wait_for(lambda: self.ready(old) == 1)

    def test_a_quorum_queue_with_rabbit_quorum_queue(self):
        self.flags(rabbit_quorum_queue=True, group='oslo_messaging_rabbit')
        self.consumer()
        self.heartbeat()
        wait_for(lambda: self.noted == ['cmp-1'])
        name = heartbeats.queue_name(self.conf, quorum=True)
        self.declare(heartbeats.queue_arguments(quorum=True), name=name)
        self.assertRaises(amqp.exceptions.PreconditionFailed, self.declare,
                          heartbeats.queue_arguments(), name=name)

    def test_the_oldest_go_when_the_queue_is_full(self):
        self.useFixture(fixtures.MockPatchObject(heartbeats, 'MAX_QUEUED',
                                                 5))
        self.stopped(self.consumer())
        hosts = ['cmp-%d' % number for number in range(12)]
        for hostname in hosts:
            self.heartbeat(hostname)
        wait_for(lambda: self.ready() == 5)
        self.consumer()
        wait_for(lambda: self.noted == hosts[-5:])

    def test_the_broker_pushes_at_most_the_prefetch(self):
        self.useFixture(fixtures.MockPatchObject(heartbeats, 'PREFETCH', 3))
        held = threading.Event()
        self.addCleanup(held.set)

        def stuck(hostname, _sent):
            held.wait(30)
            self.noted.append(hostname)
        consumer = self.consumer(stuck)
        for number in range(10):
            self.heartbeat('cmp-%d' % number)
        wait_for(lambda: consumer.received == 1)
        # Three delivered (one of them being noted), seven wait.
        wait_for(lambda: self.ready() == 7)
        held.set()
        wait_for(lambda: len(self.noted) == 10)
        wait_for(lambda: self.ready() == 0)

    def test_a_big_body_is_refused_and_the_channel_goes_on(self):
        self.consumer()
        with kombu.Connection(self.url) as connection:
            connection.Producer().publish(
                b'x' * (heartbeats.MAX_BODY + 1), exchange=self.exchange,
                routing_key=heartbeats.topic(self.conf))
        self.heartbeat()
        wait_for(lambda: self.noted == ['cmp-1'])
        self.assertIn('heartbeat of %d bytes, over the %d-byte cap'
                      % (heartbeats.MAX_BODY + 1, heartbeats.MAX_BODY),
                      self.security.output)
