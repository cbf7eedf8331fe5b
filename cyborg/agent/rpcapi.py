"""Client side of the agent RPC API (topic ``cyborg-agent``, server = the
agent's host).

Version history:

* 1.0 - Initial version: ``say_hello`` (cast), ``get_hardware`` (call),
  ``discover`` (cast, to one host or fanout to all).
* 1.1 - Device operations, all calls to one host: ``fpga_program``,
  ``create_mdev``, ``remove_mdev``.
* 1.2 - ``setup_device`` (call): a driver's setup step for one device,
  when the conductor provisions a v1 accelerator.
* 1.3 - Generic-driver operations, all calls to one host:
  ``install_driver``, ``uninstall_driver``, ``update_driver``,
  ``driver_devices``, ``discover_now``.
* 1.4 - ``ensure_mdevs`` (cast): create the missing mdevs of the host's
  bound ARQs, sent when its agent says hello.
"""


from cyborg.common import keys
from cyborg.common import rpc

#: Seconds the conductor waits for an agent to download and load a
#: bitstream: flashing an Alveo card's base image takes minutes (the
#: privileged helper gives xbmgmt 30 minutes), far beyond the default RPC
#: timeout.
PROGRAM_TIMEOUT = 1800


class AgentAPI:
    """What the conductor asks of agents, signed with the key of the host
    it addresses."""

    RPC_API_VERSION = '1.4'

    def __init__(self, topic=rpc.AGENT_TOPIC):
        self.client = rpc.get_topic_client(topic, self.RPC_API_VERSION,
                                           sender=keys.CONDUCTOR)

    def say_hello(self, context, hostname):
        """Ask the agent on ``hostname`` to register again."""
        cctxt = self.client.prepare(server=hostname, version='1.0')
        cctxt.cast(context, 'say_hello')

    def get_hardware(self, context, hostname):
        """Every driver's hardware on ``hostname``, usable or not."""
        cctxt = self.client.prepare(server=hostname, version='1.0')
        return cctxt.call(context, 'get_hardware')

    def discover(self, context, hostname):
        """Run discovery now on ``hostname``. There is no fanout to every
        host: the conductor signs a message to a host with that host's
        key, so "every host" is one cast to each."""
        cctxt = self.client.prepare(server=hostname, version='1.0')
        cctxt.cast(context, 'discover')

    def fpga_program(self, context, hostname, controlpath_id, image_uuid,
                     driver_name):
        """Program the FPGA behind ``controlpath_id`` (``{'cpid_type',
        'cpid_info'}``) on ``hostname`` with the Glance image
        ``image_uuid``, using driver ``driver_name``."""
        cctxt = self.client.prepare(server=hostname, version='1.1',
                                    timeout=PROGRAM_TIMEOUT)
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

    def setup_device(self, context, hostname, controlpath_id, driver_name):
        """Run the setup step of driver ``driver_name`` for the device of
        ``controlpath_id`` on ``hostname`` (nothing if it has none)."""
        cctxt = self.client.prepare(server=hostname, version='1.2')
        return cctxt.call(context, 'setup_device',
                          controlpath_id=controlpath_id,
                          driver_name=driver_name)

    def install_driver(self, context, hostname, name, timeout=None):
        """Load and enable driver ``name`` on ``hostname``; returns its
        HostDriver status."""
        cctxt = self.client.prepare(server=hostname, version='1.3',
                                    timeout=timeout)
        return cctxt.call(context, 'install_driver', name=name)

    def uninstall_driver(self, context, hostname, name, timeout=None):
        """Unload driver ``name`` on ``hostname``."""
        cctxt = self.client.prepare(server=hostname, version='1.3',
                                    timeout=timeout)
        return cctxt.call(context, 'uninstall_driver', name=name)

    def update_driver(self, context, hostname, name, timeout=None):
        """Reload driver ``name`` on ``hostname`` with its current
        configuration; returns its HostDriver status."""
        cctxt = self.client.prepare(server=hostname, version='1.3',
                                    timeout=timeout)
        return cctxt.call(context, 'update_driver', name=name)

    def driver_devices(self, context, hostname, name, timeout=None):
        """Control path infos of the devices driver ``name`` finds."""
        cctxt = self.client.prepare(server=hostname, version='1.3',
                                    timeout=timeout)
        return cctxt.call(context, 'driver_devices', name=name)

    def discover_now(self, context, hostname, timeout=None):
        """Discovery on ``hostname``, answered once reported:
        ``{'registered', 'devices', 'deployables'}``."""
        cctxt = self.client.prepare(server=hostname, version='1.3',
                                    timeout=timeout)
        return cctxt.call(context, 'discover_now')

    def ensure_mdevs(self, context, hostname, mdevs):
        """Create on ``hostname`` those of ``mdevs`` (``{'pci_address',
        'mdev_type', 'mdev_uuid'}``) that do not exist; an agent older
        than 1.4 is not asked."""
        if not self.client.can_send_version('1.4'):
            return
        cctxt = self.client.prepare(server=hostname, version='1.4')
        cctxt.cast(context, 'ensure_mdevs', mdevs=mdevs)
