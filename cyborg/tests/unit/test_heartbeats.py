"""The heartbeat channel's pieces: what a conductor takes from its queue
(a signed heartbeat of the host it names, recent, newer than the last),
the refusals' log, the broker it reads, and who uses the channel: the
hello's answer names it to agents that know it, and the agent falls back
to RPC."""

import datetime
import json
import logging
import struct
import time
from unittest import mock

import fixtures
import oslo_messaging as messaging
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_rabbit

from cyborg.agent import reporter as agent_reporter
from cyborg.common import heartbeats
from cyborg.common import keys
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.compat import amqp as amqp_compat
from cyborg.conductor import liveness
from cyborg.conductor import manager as conductor_manager
from cyborg.objects import host as host_obj
from cyborg.tests import base
from cyborg.tests.unit.agent import base as agent_base

TOPIC = 'cyborg-heartbeat'


def body(store, sender, hostname, topic=TOPIC, method='agent_heartbeat',
         sent=None):
    """The body of a heartbeat cast as oslo.messaging puts it on the
    wire, signed by ``sender`` (a host name) at ``sent``."""
    message = {'method': method, 'args': {'hostname': hostname},
               'version': '1.0'}
    with mock.patch.object(signing.time, 'time',
                           return_value=sent or time.time()):
        context = signing.sign(store.keys(keys.host_identity(sender)),
                               keys.host_identity(sender),
                               signing.target_of(topic),
                               {'request_id': 'req-1'}, message)
    message['_unique_id'] = 'u' * 32
    for key, value in context.items():
        message['_context_' + key] = value
    return json.dumps(driver_common.serialize_msg(message)).encode()


class ChannelTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.store = keys.KeyStore(self.useFixture(fixtures.TempDir()).path,
                                   create_missing=True)
        self.noted = []
        self.consumer = heartbeats.Consumer(
            self.conf, self.store, lambda *a: self.noted.append(a),
            urls=['amqp://127.0.0.1:5672/%2F'])
        self.security = self.useFixture(fixtures.FakeLogger(
            name='cyborg.security', level=logging.WARNING))

    def receive(self, raw):
        self.consumer._received(mock.Mock(body=raw))

    def test_a_host_heartbeat_is_noted_at_its_signed_time(self):
        sent = time.time() - 5
        self.receive(body(self.store, 'cmp-1', 'cmp-1', sent=sent))
        self.assertEqual([('cmp-1', sent)], self.noted)
        self.assertEqual('', self.security.output)

    def test_a_heartbeat_for_another_host_is_refused(self):
        self.receive(body(self.store, 'cmp-2', 'cmp-1'))
        self.assertEqual([], self.noted)
        self.assertIn('heartbeat about host cmp-1', self.security.output)
        self.assertIn('proven sender host:cmp-2', self.security.output)

    def test_a_replay_is_refused(self):
        raw = body(self.store, 'cmp-1', 'cmp-1')
        self.receive(raw)
        self.receive(raw)
        # An older one, signed before the one taken, is a replay too.
        self.receive(body(self.store, 'cmp-1', 'cmp-1',
                          sent=time.time() - 30))
        self.assertEqual(1, len(self.noted))
        self.assertIn('replayed or reordered', self.security.output)

    def test_a_heartbeat_older_than_max_message_age_is_refused(self):
        self.flags(max_message_age=60, group='security')
        self.receive(body(self.store, 'cmp-1', 'cmp-1',
                          sent=time.time() - 61))
        self.assertEqual([], self.noted)
        self.assertIn('beyond the 60 s window', self.security.output)

    def test_forged_unsigned_or_diverted_heartbeats_are_refused(self):
        forged = json.loads(body(self.store, 'cmp-1', 'cmp-1'))
        inner = json.loads(forged['oslo.message'])
        inner['args']['hostname'] = 'cmp-9'
        forged['oslo.message'] = json.dumps(inner)
        unsigned = dict(inner, args={'hostname': 'cmp-1'})
        del unsigned['_context_cyborg_auth']
        for raw in (json.dumps(forged),
                    json.dumps(driver_common.serialize_msg(unsigned)),
                    # Signed for the conductor's RPC topic, not this one.
                    body(self.store, 'cmp-1', 'cmp-1',
                         topic='cyborg-conductor'),
                    body(self.store, 'cmp-1', 'cmp-1', method='report_data'),
                    b'not json', b'[1]'):
            self.receive(raw)
        self.assertEqual([], self.noted)
        self.assertEqual(6, self.consumer.received)

    def test_a_time_that_is_not_a_finite_number_is_refused(self):
        for sent in (float('nan'), float('inf'), float('-inf')):
            self.receive(body(self.store, 'cmp-1', 'cmp-1', sent=sent))
        self.assertEqual([], self.noted)
        self.assertIn('malformed signature', self.security.output)
        # NaN did not become the host's last time: a real one is taken.
        self.receive(body(self.store, 'cmp-1', 'cmp-1'))
        self.assertEqual(['cmp-1'], [h for h, _sent in self.noted])

    def test_a_body_over_the_cap_is_refused_undecoded(self):
        raw = body(self.store, 'cmp-1', 'cmp-1')
        big = raw + b' ' * (heartbeats.MAX_BODY + 1 - len(raw))
        with mock.patch.object(heartbeats, 'decode') as decode:
            self.receive(big)
        decode.assert_not_called()
        self.assertEqual([], self.noted)
        self.assertIn('heartbeat of %d bytes, over the %d-byte cap'
                      % (len(big), heartbeats.MAX_BODY), self.security.output)
        self.receive(raw)
        self.assertEqual(1, len(self.noted))

    def test_json_nested_too_deep_is_refused(self):
        self.receive(b'[' * (heartbeats.MAX_BODY - 1))
        self.assertIn('malformed heartbeat', self.security.output)
        self.assertEqual(1, self.consumer.received)

    def test_a_wire_method_is_logged_short_and_escaped(self):
        self.receive(body(self.store, 'cmp-1', 'cmp-1',
                          method='x\nSECURITY: forged' + 'y' * 1000))
        [line] = self.security.output.splitlines()
        self.assertIn('x\\nSECURITY: forged', line)
        self.assertLess(len(line), 400)

    def test_messages_are_acknowledged_in_batches(self):
        channel = mock.Mock()
        raw = body(self.store, 'cmp-1', 'cmp-1')
        for tag in range(1, heartbeats.ACK_EVERY + 3):
            # Taken or refused, each is acknowledged.
            self.consumer._received(mock.Mock(
                body=raw if tag % 2 else b'garbage', delivery_tag=tag,
                channel=channel))
        channel.basic_ack.assert_called_once_with(heartbeats.ACK_EVERY,
                                                  multiple=True)
        self.consumer._ack()
        channel.basic_ack.assert_called_with(heartbeats.ACK_EVERY + 2,
                                             multiple=True)
        self.consumer._ack()
        self.assertEqual(2, channel.basic_ack.call_count)

    def test_unsigned_heartbeats_pass_during_an_upgrade(self):
        self.flags(require_signed=False, group='security')
        message = {'method': 'agent_heartbeat',
                   'args': {'hostname': 'cmp-1'}, '_context_request_id': 'r'}
        self.receive(json.dumps(driver_common.serialize_msg(message)))
        self.assertEqual(['cmp-1'], [h for h, _sent in self.noted])

    def test_a_flood_of_refusals_is_logged_once_a_period(self):
        for _ in range(500):
            self.receive(b'garbage')
        lines = self.security.output.strip().splitlines()
        self.assertEqual(1, len(lines), lines)
        self.consumer.refusals._next = 0  # the period has passed
        self.receive(b'garbage')
        self.assertIn('refused 500 heartbeats', self.security.output)


class BrokerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        rpc.register_opts(self.conf)

    def test_the_urls_of_the_rpc_transport(self):
        self.flags(transport_url='rabbit://u:p%40ss@h1:5673,u:p@h2/vh')
        self.assertEqual(['amqp://u:p%40ss@h1:5673/vh',
                          'amqp://u:p@h2:5672/vh'],
                         heartbeats.broker_urls(self.conf))
        self.flags(transport_url='rabbit://u:p@h1/')
        self.assertEqual(['amqp://u:p@h1:5672/%2F'],
                         heartbeats.broker_urls(self.conf))

    def test_no_channel_without_rabbitmq(self):
        for url in ('local:/', 'fake:/', 'kafka://h:9092/'):
            self.flags(transport_url=url)
            self.assertIsNone(heartbeats.broker_urls(self.conf), url)
            self.assertIsNone(heartbeats.start(self.conf, None, None))

    def test_tls_settings_of_oslo_messaging_rabbit(self):
        self.conf.register_opts(impl_rabbit.rabbit_opts,
                                group='oslo_messaging_rabbit')
        self.assertFalse(heartbeats.ssl_options(self.conf))
        self.flags(ssl=True, ssl_ca_file='/ca.pem', ssl_cert_file='/c.pem',
                   ssl_key_file='/k.pem', group='oslo_messaging_rabbit')
        options = heartbeats.ssl_options(self.conf)
        self.assertEqual(('/ca.pem', '/c.pem', '/k.pem'),
                         (options['ca_certs'], options['certfile'],
                          options['keyfile']))


class QueueTest(base.TestCase):

    def test_a_bounded_queue_of_a_new_name_on_the_same_topic(self):
        self.flags(rpc_topic_prefix='p-')
        self.assertEqual('p-cyborg-heartbeat', heartbeats.topic(self.conf))
        self.assertEqual('p-cyborg-heartbeat.2',
                         heartbeats.queue_name(self.conf))
        self.assertEqual('p-cyborg-heartbeat.2.quorum',
                         heartbeats.queue_name(self.conf, quorum=True))
        arguments = heartbeats.queue_arguments()
        self.assertEqual({'x-message-ttl': 60000, 'x-expires': 3600000,
                          'x-max-length': 10000,
                          'x-max-length-bytes': 16 * 1024 * 1024,
                          'x-overflow': 'drop-head'}, arguments)
        self.assertEqual(dict(arguments, **{'x-queue-type': 'quorum'}),
                         heartbeats.queue_arguments(quorum=True))


class HeardAtTest(base.TestCase):

    def test_noted_at_the_signed_time_never_later_than_now(self):
        alive = liveness.Liveness(self.conf)
        past = time.time() - 100
        alive.heard_at('cmp-1', past)
        alive.heard_at('cmp-2', time.time() + 3600)
        heard = alive.heard.take()
        self.assertEqual(datetime.datetime.fromtimestamp(
            past, datetime.timezone.utc).replace(tzinfo=None),
            heard['cmp-1'])
        now = liveness.timeutils.utcnow()
        self.assertLessEqual(heard['cmp-2'], now)

    def test_a_late_old_heartbeat_does_not_move_a_host_back(self):
        alive = liveness.Liveness(self.conf)
        alive.heard_at('cmp-1', time.time())
        first = dict(alive.heard._hosts)
        alive.heard_at('cmp-1', time.time() - 50)
        self.assertEqual(first, alive.heard.take())


class AnswerTest(base.TestCase):
    """The conductor's answer to a hello names the channel to agents that
    know Host 1.2, and is what older agents knew."""

    def setUp(self):
        super().setUp()
        self.manager = conductor_manager.ConductorManager('c-1', self.conf)
        self.manager.liveness.hello = lambda _ctx, hello: host_obj.Host(
            hostname=hello.hostname, status='up', report_generation=0)
        self.manager.binding.restore_mdevs = mock.Mock()
        self.manager.heartbeats = mock.Mock(topic='p-cyborg-heartbeat')

    def test_a_new_agent_is_told_the_channel(self):
        answer = self.manager.agent_hello(None, host_obj.AgentHello(
            hostname='cmp-1'))
        self.assertEqual('p-cyborg-heartbeat', answer.heartbeat_topic)
        self.manager.heartbeats = None
        answer = self.manager.agent_hello(None, host_obj.AgentHello(
            hostname='cmp-1'))
        self.assertIsNone(answer.heartbeat_topic)

    def test_an_older_agent_gets_the_host_it_knows(self):
        hello = host_obj.AgentHello.obj_from_primitive(
            host_obj.AgentHello(hostname='cmp-1').obj_to_primitive(
                target_version='1.1'))
        answer = self.manager.agent_hello(None, hello)
        self.assertEqual('1.1', answer['cyborg_object.version'])
        self.assertNotIn('heartbeat_topic', answer['cyborg_object.data'])


class Conductor(agent_base.Conductor):
    """A conductor whose hello answer names a heartbeat channel (or
    not); ``channel_down`` makes a cast to it fail."""

    def __init__(self, topic):
        super().__init__()
        self.topic = topic
        self.channel_down = False

    def agent_hello(self, context, hello, timeout=None):
        host = super().agent_hello(context, hello, timeout)
        if self.topic is not False:
            host.heartbeat_topic = self.topic
        return host

    def agent_heartbeat(self, context, hostname, topic=None):
        if topic is None:
            return super().agent_heartbeat(context, hostname)
        if self.channel_down:
            raise messaging.MessageDeliveryFailure('broker gone')
        self._answer('heartbeat on %s' % topic)


class AgentTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(state_path=self.useFixture(fixtures.TempDir()).path)

    def reporter(self, conductor):
        reporter = agent_reporter.Reporter(
            'cmp-1', self.conf, lambda: ([], []), lambda: [], conductor)
        reporter.keep_alive()
        conductor.take_calls()
        return reporter

    def test_heartbeats_go_where_the_hello_answer_says(self):
        conductor = Conductor('p-cyborg-heartbeat')
        reporter = self.reporter(conductor)
        reporter.keep_alive()
        self.assertEqual(['heartbeat on p-cyborg-heartbeat'],
                         conductor.take_calls())
        conductor.channel_down = True
        reporter.keep_alive()
        self.assertEqual(['heartbeat'], conductor.take_calls())

    def test_by_rpc_when_the_conductor_names_no_channel(self):
        # None: a conductor without one; False: an older release's Host.
        for topic in (None, False):
            conductor = Conductor(topic)
            reporter = self.reporter(conductor)
            reporter.keep_alive()
            self.assertEqual(['heartbeat'], conductor.take_calls())


class BusyConnection:
    """A connection that always has a message: drain_events never times
    out; after ``rounds`` of them the consumer is told to stop."""

    def __init__(self, consumer, rounds):
        self.consumer = consumer
        self.rounds = rounds
        self.checks = 0

    def ensure_connection(self, **_kwargs):
        pass

    def channel(self):
        return mock.Mock()

    def drain_events(self, timeout):
        self.rounds -= 1
        if not self.rounds:
            self.consumer.stop()

    def heartbeat_check(self):
        self.checks += 1


class ConsumerLoopTest(base.TestCase):

    def test_amqp_heartbeats_go_out_while_busy(self):
        consumer = heartbeats.Consumer(self.conf, None, None,
                                       urls=['amqp://127.0.0.1:5672/%2F'])
        consumer.TICK = 0
        connection = BusyConnection(consumer, 5)
        with mock.patch.object(heartbeats.kombu, 'Consumer'), \
                mock.patch.object(consumer, '_queue'):
            consumer._consume(connection)
        self.assertEqual(5, connection.checks)
        self.assertTrue(consumer.consuming.is_set())


class BufferedReadTest(base.TestCase):
    """The channel's py-amqp transport reads in chunks and loses nothing
    when a read times out in the middle of a frame."""

    @staticmethod
    def frame(kind, payload):
        return (struct.pack('>BHI', kind, 1, len(payload)) + payload
                + b'\xce')

    def transport(self, pieces):
        transport = amqp_compat.BufferedTCPTransport.__new__(
            amqp_compat.BufferedTCPTransport)
        transport.raise_on_initial_eintr = True
        transport._read_buffer = b''
        transport._pos = 0
        calls = []

        def recv(size):
            calls.append(size)
            piece = pieces.pop(0)
            if isinstance(piece, Exception):
                raise piece
            return piece
        transport._quick_recv = recv
        return transport, calls

    def test_frames_read_whole_across_chunks_and_a_timeout(self):
        frames = [self.frame(1, b'a' * 10), self.frame(2, b'b' * 300),
                  self.frame(3, b'')]
        data = b''.join(frames)
        # The first frame and part of the second; a timeout; the rest.
        pieces = [data[:20], TimeoutError(), data[20:]]
        transport, calls = self.transport(pieces)
        self.assertEqual((1, 1, b'a' * 10), transport.read_frame())
        self.assertRaises(TimeoutError, transport.read_frame)
        self.assertEqual((2, 1, b'b' * 300), transport.read_frame())
        self.assertEqual((3, 1, b''), transport.read_frame())
        # Three reads for three frames: one per chunk, not per field.
        self.assertEqual(3, len(calls))
        self.assertTrue(all(size >= transport.CHUNK for size in calls))

    def test_a_closed_connection_is_an_error(self):
        transport, _calls = self.transport([b''])
        self.assertRaises(OSError, transport.read_frame)
