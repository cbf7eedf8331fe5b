"""local:/, the all-in-one's in-process transport: RPC works as on the
fake driver, and an idle listener sleeps instead of polling."""

import threading

import oslo_messaging as messaging

from cyborg.compat import oslo_messaging as local_transport
from cyborg.tests import base


class Endpoint:

    target = messaging.Target(version='1.0')

    def echo(self, context, value):
        return value


class LocalTransportTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.transport = messaging.get_rpc_transport(self.conf,
                                                     url='local:/')
        self.addCleanup(self.transport.cleanup)
        self.target = messaging.Target(topic='local-test-%s' % self.id(),
                                       server='here')

    def test_the_url_loads_the_local_driver(self):
        self.assertIsInstance(self.transport._driver,
                              local_transport.LocalDriver)

    def test_call_and_cast(self):
        server = messaging.get_rpc_server(self.transport, self.target,
                                          [Endpoint()], executor='threading')
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        client = messaging.get_rpc_client(self.transport, self.target)
        self.assertEqual('hi', client.call({}, 'echo', value='hi'))
        client.cast({}, 'echo', value='ho')
        self.assertEqual(3, client.prepare(timeout=30).call(
            {}, 'echo', value=3))

    def listener(self):
        driver = self.transport._driver
        adapter = driver.listen(self.target, None, None)
        return adapter._poll_style_listener

    def test_idle_listener_looks_once_per_wake_up(self):
        listener = self.listener()
        looks = []
        take = listener._take
        listener._take = lambda: looks.append(1) or take()
        # No delivery: one look, a sleep to the deadline, one more look.
        # oslo.messaging's fake driver would look every 50 ms.
        self.assertEqual([], listener.poll(timeout=0.5))
        self.assertLessEqual(len(looks), 2)

    def test_a_delivery_wakes_a_sleeping_listener(self):
        listener = self.listener()
        got = []
        thread = threading.Thread(
            target=lambda: got.extend(listener.poll(timeout=60)))
        thread.start()
        self.transport._send(self.target, {}, {'method': 'echo',
                                               'args': {'value': 1}})
        thread.join(60)
        self.assertEqual(1, len(got))
        self.assertEqual({'method': 'echo', 'args': {'value': 1}},
                         got[0].message)

    def test_stop_wakes_a_sleeping_listener(self):
        listener = self.listener()
        got = []
        thread = threading.Thread(
            target=lambda: got.append(listener.poll(timeout=60)))
        thread.start()
        listener.stop()
        thread.join(60)
        self.assertFalse(thread.is_alive())
        self.assertEqual([[]], got)
