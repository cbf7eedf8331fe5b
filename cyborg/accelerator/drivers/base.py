"""The one base class of accelerator drivers."""

import abc

from oslo_log import log as logging

from cyborg.accelerator.common import sysfs
from cyborg.objects import host as host_obj

LOG = logging.getLogger(__name__)


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
    #: The ``driver_name`` its deployables carry, which the conductor
    #: names when it asks the agent to act on one of them.
    driver_name = None

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

    def hardware(self):
        """Every device this driver sees, usable or not.

        A list of dicts (see :func:`hardware_entry`): the discovered
        devices, plus devices that are present but need setup or a reboot
        before they can be offered. By default, what ``discover()`` finds.
        """
        return [hardware_entry(device.controlpath_id.cpid_info, device)
                for device in self.discover()]


class Programmer(abc.ABC):
    """Capability of a driver that loads bitstreams into its devices."""

    @abc.abstractmethod
    def program(self, controlpath_id, image_path):
        """Load the bitstream file ``image_path`` into the device whose
        control path id is ``controlpath_id`` (a dict with ``cpid_type``
        and ``cpid_info``); raise OperationFailed when it cannot."""


class MdevManager(abc.ABC):
    """Capability of a driver whose devices are shared as mdevs."""

    @abc.abstractmethod
    def create_mdev(self, pci_address, mdev_type, mdev_uuid):
        """Create mdev ``mdev_uuid`` of ``mdev_type`` on the function at
        ``pci_address``; True if created, False (and nothing done) when
        it exists already."""

    @abc.abstractmethod
    def remove_mdev(self, pci_address, mdev_type, mdev_uuid):
        """Remove mdev ``mdev_uuid``; nothing when it is gone already."""


class Installer(abc.ABC):
    """Capability of a driver whose devices need a setup step before they
    are handed out (the seed's driver "install"), run when an operator
    provisions a v1 accelerator or marks a new device ready."""

    @abc.abstractmethod
    def setup(self, controlpath_id):
        """Prepare the device whose control path id is ``controlpath_id``
        (``{'cpid_type', 'cpid_info'}``); idempotent; raise
        OperationFailed when it cannot."""


class OperationFailed(Exception):
    """A driver could not do what it was asked; the message says why."""


class NotReady(Exception):
    """A device is present but cannot be offered yet.

    Raised by :meth:`SysfsPciDriver.build_device`; ``discover()`` leaves the
    device out with a warning and ``hardware()`` lists it with the flags.
    """

    def __init__(self, reason, setup_required=True, reboot_required=False):
        super().__init__(reason)
        self.reason = reason
        self.setup_required = setup_required
        self.reboot_required = reboot_required


def hardware_entry(address, device=None, not_ready=None):
    """One row of a hardware listing (the seed's driver GET /hardware)."""
    return {'address': str(address), 'device': device,
            'ready': not_ready is None,
            'setup_required': bool(not_ready and not_ready.setup_required),
            'reboot_required': bool(not_ready and
                                    not_ready.reboot_required),
            'reason': not_ready.reason if not_ready else None}


class SysfsPciDriver(AcceleratorDriver):
    """Base of drivers that find PCI functions in sysfs.

    A subclass names its ``vendors``, picks its ``candidates`` among the
    functions found, and turns one candidate into a DriverDevice in
    ``build_device`` (or raises :class:`NotReady`, or returns None for a
    function that is not its business). One bad device never stops the
    others: anything raised while building it is logged and it is skipped.
    """

    #: PCI vendor ids (four lower-case hex digits) to read; None for all.
    vendors = None

    def __init__(self, conf):
        super().__init__(conf)
        self.reader = sysfs.PciReader(conf.agent.sysfs_root)

    @property
    def host(self):
        return self.conf.host

    def candidates(self, functions):
        """The functions that may become devices (default: all)."""
        return list(functions.values())

    @abc.abstractmethod
    def build_device(self, function, functions):
        """The DriverDevice of ``function``, None, or raise NotReady.

        ``functions`` maps every readable function of ``vendors`` by
        address, for looking up VFs and PFs.
        """

    def _scan(self):
        functions = {f.address: f
                     for f in self.reader.functions(self.vendors)}
        for function in self.candidates(functions):
            try:
                device = self.build_device(function, functions)
            except NotReady as e:
                LOG.warning('%s: %s is not offered: %s',
                            type(self).__name__, function.address, e.reason)
                yield function, None, e
            except Exception:
                LOG.exception('%s: skipping %s, its sysfs entries are not '
                              'understood', type(self).__name__,
                              function.address)
            else:
                if device is not None:
                    yield function, device, None

    def discover(self):
        return [device for _f, device, _e in self._scan() if device]

    def hardware(self):
        return [hardware_entry(function.address, device, not_ready)
                for function, device, not_ready in self._scan()]
