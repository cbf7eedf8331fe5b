"""Client side of the agent RPC API (topic ``cyborg-agent``, server = the
agent's host).

Version history:

* 1.0 - Initial version: ``say_hello`` (cast), ``get_hardware`` (call),
  ``discover`` (cast, to one host or fanout to all).
"""


from cyborg.common import rpc


class AgentAPI:
    """What the conductor asks of agents."""

    RPC_API_VERSION = '1.0'

    def __init__(self, topic=rpc.AGENT_TOPIC):
        self.client = rpc.get_topic_client(topic, self.RPC_API_VERSION)

    def say_hello(self, context, hostname):
        """Ask the agent on ``hostname`` to register again."""
        cctxt = self.client.prepare(server=hostname, version='1.0')
        cctxt.cast(context, 'say_hello')

    def get_hardware(self, context, hostname):
        """Every driver's hardware on ``hostname``, usable or not."""
        cctxt = self.client.prepare(server=hostname, version='1.0')
        return cctxt.call(context, 'get_hardware')

    def discover(self, context, hostname=None):
        """Run discovery now on one host, or on every host."""
        if hostname:
            cctxt = self.client.prepare(server=hostname, version='1.0')
        else:
            cctxt = self.client.prepare(fanout=True, version='1.0')
        cctxt.cast(context, 'discover')
