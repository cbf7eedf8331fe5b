"""Client side of the conductor RPC API.

Version history:

* 1.0 - Initial version: ``agent_hello`` (call) and ``agent_heartbeat``
  (cast).
* 1.1 - ``report_data`` (call): an agent's devices with their content
  hash; returns the hash once the database and Placement show them.
"""


from cyborg.common import rpc


class ConductorAPI:
    """What the API and the agents ask of the conductor."""

    RPC_API_VERSION = '1.1'

    def __init__(self, topic=rpc.CONDUCTOR_TOPIC):
        self.client = rpc.get_topic_client(topic, self.RPC_API_VERSION)

    def agent_hello(self, context, hello, timeout=None):
        """Register an agent and its drivers; returns the Host."""
        cctxt = self.client.prepare(version='1.0', timeout=timeout)
        return cctxt.call(context, 'agent_hello', hello=hello)

    def agent_heartbeat(self, context, hostname):
        """Tell the conductor the agent on ``hostname`` is alive."""
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(context, 'agent_heartbeat', hostname=hostname)

    def report_data(self, context, hostname, devices, report_hash,
                    timeout=None):
        """Send the DriverDevices of ``hostname``; returns ``report_hash``
        when accepted, None when the conductor wants it again later."""
        cctxt = self.client.prepare(version='1.1', timeout=timeout)
        return cctxt.call(context, 'report_data', hostname=hostname,
                          devices=devices, report_hash=report_hash)
