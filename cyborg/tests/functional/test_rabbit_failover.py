"""An RPC server on a three-node RabbitMQ cluster fails over when the
node its connections are on is killed (issue 41): the first node of
``transport_url`` when oslo.messaging's shuffle of the nodes keeps their
order, as here.

oslo.messaging's listener consumes with a timeout (cyborg bounds it
to :data:`cyborg.common.rabbit.CONSUME_WAIT`, so a stopped
server ends promptly); when that timeout ran out while the connection
was being made again, kombu's retry ended before it switched to the next
node, and the next wait retried the dead node: for ever, with only
``AMQP server on ...:<first port> is unreachable:
<RecoverableConnectionError: unknown error>`` logged every second.

The server and the client are in this process, on cyborg's driver
(:mod:`cyborg.common.rabbit`), with oslo.messaging's default
``kombu_reconnect_delay`` (1 s, as a deployment has it) and quorum
queues. A call must be answered within :data:`BOUND` seconds of the
kill; the node is started again afterwards and calls still work.
"""

import threading
import time

import fixtures
import oslo_messaging as messaging
from oslo_messaging._drivers import impl_rabbit

from cyborg.common import keys
from cyborg.common import rpc
from cyborg.tests import base
from cyborg.tests.functional import rabbitcluster

#: Seconds within which a call is answered after the first node died.
BOUND = 30
#: The options of the transports here: oslo.messaging's defaults but
#: quorum queues (kombu_reconnect_delay 1.0 is the default, set so that
#: a change of the default does not hide the bug).
OPTIONS = {'rabbit_quorum_queue': True,
           'rabbit_transient_quorum_queue': True,
           'kombu_reconnect_delay': 1.0,
           'rabbit_retry_interval': 1}


class Echo:
    target = messaging.Target(version='1.0')

    def echo(self, ctxt, value):
        return value


class FirstNodeKilledTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(400, gentle=True))
        self.cluster = rabbitcluster.RabbitCluster.started(self)
        rpc.register_opts(self.conf)
        self.conf.register_opts(impl_rabbit.rabbit_opts,
                                group='oslo_messaging_rabbit')
        self.flags(rpc_topic_prefix='', control_exchange='cyborg-failover')
        self.flags(group='oslo_messaging_rabbit', **OPTIONS)
        self.url = self.cluster.transport_url()
        # oslo.messaging shuffles the nodes of each connection; in the
        # order of the URL, every connection is on node 0, the one killed.
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_messaging._drivers.impl_rabbit.random.shuffle',
            lambda hosts: None))

    def transport(self):
        transport = rpc.rpc_transport(self.conf, keys.CONDUCTOR, self.url)
        self.addCleanup(transport.cleanup)
        return transport

    def call(self, client, timeout):
        return client.prepare(timeout=timeout).call({}, 'echo', value='hi')

    def answered_within(self, client, bound):
        """Seconds until a call was answered, or None after ``bound``."""
        began = time.monotonic()
        while time.monotonic() - began < bound:
            try:
                if self.call(client, 5) == 'hi':
                    return time.monotonic() - began
            except messaging.MessagingTimeout:
                pass
        return None

    def test_first_node_killed(self):
        target = messaging.Target(topic='failover-test', server='srv')
        server = messaging.get_rpc_server(
            self.transport(), target, [Echo()], executor='threading')
        server.start()

        def stop():
            server.stop()
            stopper = threading.Thread(target=server.wait, daemon=True)
            stopper.start()
            stopper.join(30)
        self.addCleanup(stop)
        client = messaging.get_rpc_client(
            self.transport(), messaging.Target(topic='failover-test'))
        self.assertEqual('hi', self.call(client, 30))
        # The server's, the reply queue's, the sending connections.
        connections = self.cluster.connections()
        self.assertEqual([0], sorted(connections), connections)
        self.assertGreaterEqual(connections[0]['guest'], 3, connections)

        self.cluster.kill(0)
        took = self.answered_within(client, BOUND)
        print('RABBIT FAILOVER first node killed: answered after %s s'
              % (None if took is None else round(took, 1)))
        self.assertIsNotNone(took, 'no call was answered within %d s of '
                             'the first node killed' % BOUND)

        self.assertTrue(self.cluster.start(0), self.cluster.problem)
        self.assertEqual('hi', self.call(client, 30))
