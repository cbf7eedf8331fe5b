"""Client side of the conductor RPC API.

Version history:

* 1.0 - Initial version: ``agent_hello`` (call) and ``agent_heartbeat``
  (cast).
"""

import oslo_messaging as messaging

from cyborg.common import rpc


class ConductorAPI:
    """What the API and the agents ask of the conductor."""

    RPC_API_VERSION = '1.0'

    def __init__(self, topic=rpc.CONDUCTOR_TOPIC):
        from cyborg.conf import CONF
        target = messaging.Target(topic=rpc.topic(CONF, topic),
                                  version='1.0')
        self.client = rpc.get_client(target,
                                     version_cap=self.RPC_API_VERSION)

    def agent_hello(self, context, hello, timeout=None):
        """Register an agent and its drivers; returns the Host."""
        cctxt = self.client.prepare(version='1.0', timeout=timeout)
        return cctxt.call(context, 'agent_hello', hello=hello)

    def agent_heartbeat(self, context, hostname):
        """Tell the conductor the agent on ``hostname`` is alive."""
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(context, 'agent_heartbeat', hostname=hostname)
