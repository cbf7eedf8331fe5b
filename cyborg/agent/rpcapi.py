"""Client side of the agent RPC API (topic ``cyborg-agent``, server = the
agent's host).

Version history:

* 1.0 - Initial version: ``say_hello`` (cast), ``get_hardware`` (call),
  ``discover`` (cast, to one host or fanout to all).
* 1.1 - Device operations, all calls to one host: ``fpga_program``,
  ``create_mdev``, ``remove_mdev``.
"""


from cyborg.common import rpc


class AgentAPI:
    """What the conductor asks of agents."""

    RPC_API_VERSION = '1.1'

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

    def fpga_program(self, context, hostname, controlpath_id, image_uuid,
                     driver_name):
        """Program the FPGA behind ``controlpath_id`` (``{'cpid_type',
        'cpid_info'}``) on ``hostname`` with the Glance image
        ``image_uuid``, using driver ``driver_name``."""
        cctxt = self.client.prepare(server=hostname, version='1.1')
        return cctxt.call(context, 'fpga_program',
                          controlpath_id=controlpath_id,
                          image_uuid=image_uuid, driver_name=driver_name)

    def create_mdev(self, context, hostname, pci_address, mdev_type,
                    mdev_uuid):
        """Create the mediated device ``mdev_uuid`` of ``mdev_type`` on the
        parent ``pci_address`` of ``hostname``."""
        cctxt = self.client.prepare(server=hostname, version='1.1')
        return cctxt.call(context, 'create_mdev', pci_address=pci_address,
                          mdev_type=mdev_type, mdev_uuid=mdev_uuid)

    def remove_mdev(self, context, hostname, pci_address, mdev_type,
                    mdev_uuid):
        """Remove the mediated device ``mdev_uuid`` from ``hostname``."""
        cctxt = self.client.prepare(server=hostname, version='1.1')
        return cctxt.call(context, 'remove_mdev', pci_address=pci_address,
                          mdev_type=mdev_type, mdev_uuid=mdev_uuid)
