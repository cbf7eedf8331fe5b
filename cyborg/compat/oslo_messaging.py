"""oslo.messaging: a transport's sends, a dispatcher's calls, a server's
thread pool, and its RabbitMQ and in-memory drivers.

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

The modules of :data:`EXTENSIONS` subclass oslo.messaging's private driver
package (``oslo_messaging._drivers``) as a whole: they are part of this
shim, their private names listed here, and their own tests
(``tests/unit/test_rabbit.py``, ``tests/unit/test_local_transport.py``)
fail should a release change what they rely on.
"""

from oslo_messaging.rpc import dispatcher
from oslo_messaging import transport as msg_transport

DISTRIBUTION = 'oslo.messaging'

#: Modules built on ``oslo_messaging._drivers``, fenced with this shim.
EXTENSIONS = ('cyborg.common.rabbit', 'cyborg.common.local_transport')

PRIVATE_NAMES = (
    # Here.
    '_do_dispatch', '_driver', '_executor_cls', '_send',
    # common/rabbit.py
    '_callback', '_connection_lock', '_connection_pool', '_consumers',
    '_drivers', '_get_connection', '_get_connection_info', '_get_exchange',
    '_get_reply_queue_name', '_new_tags', '_publish',
    '_set_current_channel',
    # common/local_transport.py
    '_default_exchange', '_exchange_manager', '_exchanges',
    '_exchanges_lock', '_pool', '_stopped', '_targets',
)


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
