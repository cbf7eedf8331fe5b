"""The one base class of accelerator drivers."""

import abc

from cyborg.objects import host as host_obj


class AcceleratorDriver(abc.ABC):
    """A driver finds one kind of accelerator on the host it runs on.

    Drivers are stevedore plugins (namespace ``cyborg.accelerator.driver``)
    built with the agent's configuration. ``discover()`` is the one method
    every driver implements.
    """

    #: The kind of device this driver handles (a DeviceType value).
    device_type = None
    #: Version of the driver, reported in the agent's hello.
    version = '1.0'

    def __init__(self, conf):
        self.conf = conf

    def hello(self, name):
        """The driver's registration: it is loaded and ready."""
        return host_obj.HostDriver(name=name, status='READY',
                                   device_type=self.device_type,
                                   version=self.version, error=None)

    @abc.abstractmethod
    def discover(self):
        """The accelerators on this host, as a list of DriverDevice."""
