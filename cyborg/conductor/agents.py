"""The conductor's one way to its agents.

The ConductorManager builds one ``Agents`` and hands it to every workflow
that asks an agent for something (liveness, binding, FPGA programming,
device setup, v1 accelerators, driver operations), so a conductor holds
one agent RPC client however many workflows use it. It owns:

* the client (``cyborg.agent.rpcapi.AgentAPI``), built on first use:
  the transport exists only once the service has started; its calls
  (``say_hello``, ``create_mdev``, ``fpga_program``...) are the
  gateway's;
* the one translation of a failed agent call into the caller's error
  (``failures``, with ``failure_reason`` for the reason it gives;
  the driver operations, which answer per host, use the reason alone).
"""

import contextlib

import oslo_messaging as messaging

from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.common import exception

#: The reason given when an agent does not answer in time.
NO_ANSWER = 'the agent did not answer'


def failure_reason(error):
    """Why an agent call failed, as the caller's error says it."""
    if isinstance(error, messaging.MessagingTimeout):
        return NO_ANSWER
    if isinstance(error, messaging.RemoteError):
        # An exception the agent may not send as itself.
        return '%s: %s' % (error.exc_type, error.value)
    if isinstance(error, exception.CyborgException):
        return str(error)
    # Built-in exceptions of the agent arrive as themselves.
    return '%s: %s' % (type(error).__name__, error)


@contextlib.contextmanager
def failures(error):
    """Inside, a failed agent call raises ``error(reason)`` (the
    caller's exception, given the ``failure_reason``) chained to the
    failure. A client error the agent raised on purpose (a cyborg
    exception with a 4xx code: an image Glance does not have, say)
    passes as itself."""
    try:
        yield
    except exception.CyborgException as e:
        if e.code < 500:
            raise
        raise error(failure_reason(e)) from e
    except Exception as e:
        raise error(failure_reason(e)) from e


class Agents:
    """One conductor's agents: the AgentAPI's calls, on a client built
    on first use."""

    def __init__(self, api=None):
        self._api = api

    @property
    def api(self):
        """The AgentAPI, built on first use."""
        if self._api is None:
            self._api = agent_rpcapi.AgentAPI()
        return self._api

    def __getattr__(self, name):
        # The AgentAPI's calls: say_hello, create_mdev, fpga_program...
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self.api, name)
