"""cyborg.compat.oslo_messaging on oslo.messaging's own client, server and
in-memory driver: every message sent goes through send_message, every
endpoint call through call_endpoint, and the server's pool is ours."""

import concurrent.futures

import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher
from oslo_messaging.rpc import server as rpc_server

from cyborg.compat import oslo_messaging as messaging_compat
from cyborg.tests import base


class Endpoint:

    target = messaging.Target(version='1.0')

    def echo(self, context, value):
        return value


class Transport(messaging_compat.SendingTransport):

    def send_message(self, target, ctxt, message, *args, **kwargs):
        self.sent.append((message['method'], bool(args and args[0]
                                                  or kwargs.get(
                                                      'wait_for_reply'))))
        return super().send_message(target, ctxt, message, *args, **kwargs)


class Dispatcher(messaging_compat.EndpointDispatcher):

    def call_endpoint(self, endpoint, method, ctxt, args):
        self.called.append((method, args))
        return super().call_endpoint(endpoint, method, ctxt, args)


class Executor(concurrent.futures.ThreadPoolExecutor):
    made = []

    def __init__(self, max_workers):
        super().__init__(max_workers=max_workers)
        self.made.append(max_workers)


class OsloMessagingTest(base.TestCase):

    def test_sends_calls_and_pool(self):
        made = messaging.get_rpc_transport(self.conf, url='fake:/')
        self.addCleanup(made.cleanup)
        target = messaging.Target(topic='compat-%s' % self.id(),
                                  server='here')
        transport = Transport(made)
        transport.sent = []
        self.assertIs(made.conf, transport.conf)
        endpoints = Dispatcher([Endpoint()], messaging.NoOpSerializer(),
                               dispatcher.DefaultRPCAccessPolicy)
        endpoints.called = []
        server = rpc_server.RPCServer(made, target, endpoints, 'threading')
        messaging_compat.use_executor(server, Executor)
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        client = messaging.get_rpc_client(transport, target)
        self.assertEqual('hi', client.call({}, 'echo', value='hi'))
        self.assertEqual([('echo', True)], transport.sent)
        self.assertEqual([('echo', {'value': 'hi'})], endpoints.called)
        self.assertEqual([self.conf.executor_thread_pool_size],
                         Executor.made)
