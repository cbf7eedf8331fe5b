"""The RPC servers' worker pool: a thread per message only while every
thread is busy, and idle threads that sleep until there is work."""

import threading
import time

import oslo_messaging as messaging

from cyborg.common import context
from cyborg.common import rpc
from cyborg.common import signing
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class Endpoint:

    target = messaging.Target(version='1.0')

    def __init__(self):
        self.gate = threading.Event()

    def echo(self, context, value):
        return value

    def wait(self, context):
        return self.gate.wait(30)


class RPCExecutorTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(cyborg_fixtures.Messaging(self, self.conf, 'fake'))
        self.endpoint = Endpoint()
        target = messaging.Target(topic='executor-%s' % self.id(),
                                  server='here')
        # Served as a conductor is: the API's signed calls are taken.
        self.server = rpc.get_server(target, [self.endpoint],
                                     role=signing.CONDUCTOR_ROLE)
        self.server.start()
        self.addCleanup(self.server.wait)
        self.addCleanup(self.server.stop)
        self.addCleanup(self.endpoint.gate.set)
        self.client = rpc.get_client(target).prepare(timeout=30)
        self.ctx = context.get_admin_context()

    def workers(self):
        return self.server._work_executor._threads

    def test_the_server_runs_messages_on_our_pool(self):
        self.client.call(self.ctx, 'echo', value=1)
        self.assertIsInstance(self.server._work_executor, rpc.Executor)
        self.assertEqual(self.conf.executor_thread_pool_size,
                         self.server._work_executor._max_workers)

    def test_messages_one_after_another_use_one_thread(self):
        # futurist's pool, oslo.messaging's own, would hold 20 threads.
        for value in range(20):
            self.assertEqual(value, self.client.call(self.ctx, 'echo',
                                                     value=value))
        self.assertEqual(1, len(self.workers()))

    def test_messages_at_once_each_get_a_thread(self):
        calls = [threading.Thread(target=self.client.call,
                                  args=(self.ctx, 'wait')) for _ in range(3)]
        for call in calls:
            call.start()
        deadline = time.monotonic() + 30
        while len(self.workers()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(3, len(self.workers()))
        self.endpoint.gate.set()
        for call in calls:
            call.join(30)
        self.assertEqual(1, self.client.call(self.ctx, 'echo', value=1))
        self.assertEqual(3, len(self.workers()))
