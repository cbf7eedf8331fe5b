"""The one base class of accelerator drivers."""

import abc
import json

from oslo_log import log as logging

from cyborg.accelerator.common import passthrough
from cyborg.accelerator.common import pci
from cyborg.accelerator.common import pciids
from cyborg.accelerator.common import records
from cyborg.accelerator.common import sysfs
from cyborg.accelerator.common import vendor_info
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

    def survey(self):
        """``(devices, hardware)`` from one look at the host: what
        ``discover()`` returns, and every device this driver looked at,
        offered or not, as :func:`hardware_entry` dicts. By default each
        discovered device, offered."""
        devices = self.discover()
        return devices, [hardware_entry(device.controlpath_id.cpid_info,
                                        device, vendor_id=device.vendor)
                         for device in devices]

    def hardware(self):
        """Every device this driver sees, usable or not (see
        :meth:`survey`)."""
        return self.survey()[1]


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

    Raised by :meth:`SysfsPciDriver.build_device`: ``reason`` says why,
    ``action`` what an operator changes to offer it (the option to set,
    the binding to make; None when there is nothing to do but wait).
    ``discover()`` leaves the device out and ``hardware()`` lists it with
    the reason and the flags; the agent logs it once, when it changes.
    """

    def __init__(self, reason, setup_required=True, reboot_required=False,
                 action=None):
        super().__init__(reason)
        self.reason = reason
        self.action = action
        self.setup_required = setup_required
        self.reboot_required = reboot_required


def hardware_entry(address, device=None, not_ready=None, function=None,
                   vendor_id=None, product_id=None, name=None):
    """One row of a hardware listing (the seed's driver GET /hardware):
    the function at ``address`` (a PciFunction, when read from sysfs)
    named ``name`` (by default the device's model), offered as
    ``device`` or not offered for ``not_ready``."""
    return {'address': str(address), 'device': device,
            'ready': not_ready is None,
            'vendor_id': function.vendor if function else vendor_id,
            'product_id': function.product if function else product_id,
            'name': name or (device.model if device is not None else None),
            'kernel_driver': function.driver if function else None,
            'setup_required': bool(not_ready and not_ready.setup_required),
            'reboot_required': bool(not_ready and
                                    not_ready.reboot_required),
            'reason': not_ready.reason if not_ready else None,
            'action': not_ready.action if not_ready else None}


def _pci_handle_address(handle):
    """The PciAddress a PCI attach handle hands out, None for others."""
    if handle.attach_type != records.ATTACH_PCI:
        return None
    try:
        info = json.loads(handle.attach_info)
        return pci.PciAddress.parse('%(domain)s:%(bus)s:%(device)s.'
                                    '%(function)s' % info)
    except (ValueError, TypeError, KeyError):
        return None


def _drop_handles(device, refused):
    """Remove the handles of ``refused`` addresses from ``device``: a
    deployable with one accelerator per handle keeps the others, one
    whose handles go together (an FPGA's two functions) goes whole."""
    kept = []
    for deployable in device.deployable_list:
        handles = deployable.attach_handle_list
        left = [h for h in handles
                if _pci_handle_address(h) not in refused]
        if len(left) == len(handles):
            kept.append(deployable)
        elif left and deployable.num_accelerators == len(handles):
            deployable.attach_handle_list = left
            deployable.num_accelerators = len(left)
            kept.append(deployable)
    device.deployable_list = kept


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
        """``(function, device, NotReady)`` of every candidate; a device
        that could not be understood is not offered either, and says
        why. Nothing is logged here: the agent logs each decision once,
        when it changes."""
        functions = {f.address: f
                     for f in self.reader.functions(self.vendors)}
        checker = self._checker = passthrough.Checker(
            self.reader, self.conf.agent.allow_no_iommu_group)
        for function in self.candidates(functions):
            self._declined = []
            try:
                device = self.build_device(function, functions)
                if device is not None:
                    self._keep_passable(function, device, checker)
                    device.vendor_board_info = vendor_info.merged(
                        device.vendor_board_info, vendor_info.board_info(
                            self.reader, function,
                            pciids.database(self.conf)))
            except NotReady as e:
                yield function, None, e
            except Exception as e:
                LOG.debug('%s: %s is not understood', type(self).__name__,
                          function.address, exc_info=True)
                yield function, None, NotReady(
                    'its sysfs entries are not understood: %s' % e,
                    setup_required=False)
            else:
                if device is not None:
                    yield function, device, None
            yield from self._declined

    def _keep_passable(self, function, device, checker):
        """Take out of ``device`` the PCI functions a VM cannot have,
        declining each; NotReady if nothing is left to hand out."""
        handed = {}
        for deployable in device.deployable_list:
            for handle in deployable.attach_handle_list:
                address = _pci_handle_address(handle)
                if address is not None:
                    handed[address] = None
        for address in handed:
            target = (function if address == function.address
                      else self.reader.get(address))
            handed[address] = (checker.check(target, handed)
                               if target is not None else
                               passthrough.Refusal('it cannot be read',
                                                   None))
        refused = {a: r for a, r in handed.items() if r is not None}
        if not refused:
            return
        _drop_handles(device, refused)
        for address, refusal in sorted(refused.items()):
            if address != function.address:
                self._declined.append((self.reader.get(address) or function,
                                       None, NotReady(refusal.reason,
                                                      action=refusal.action)))
        if not device.deployable_list:
            own = refused.get(function.address) or passthrough.Refusal(
                'none of its functions can be handed to a VM', None)
            raise NotReady(own.reason, action=own.action)

    def refusal(self, function, together=()):
        """Why a VM cannot have ``function``, handed out with the
        addresses in ``together`` (a :class:`passthrough.Refusal`), or
        None when it can: what :meth:`build_device` asks before it
        changes anything on a function, so that nothing is written to one
        that will not be offered."""
        return self._checker.check(function, together)

    def decline(self, function, reason, action=None):
        """Leave out ``function``, a part of the device being built (a
        VF, say), for ``reason``: it is listed in the hardware, not
        offered, and the agent logs it once, when it changes."""
        self._declined.append((function, None, NotReady(reason,
                                                         action=action)))

    def own_name(self, function):
        """The name the vendor's kernel driver gives ``function`` (None:
        it gives none); used where the PCI ID database does not know the
        device."""
        return None

    def function_name(self, names, function):
        """``function``'s name: as ``lspci`` names it from ``names`` (a
        :class:`pciids.Database`), unless the database does not know the
        device (a host without one, or a card newer than it) and the
        vendor's driver names it."""
        if names.device(function.vendor, function.product) is None:
            own = self.own_name(function)
            if own:
                return own
        return names.name(function.vendor, function.product)

    def survey(self):
        """As :meth:`AcceleratorDriver.survey`; every function, offered
        or not, is named from the PCI ID database as ``lspci`` names it
        on this host (or as its vendor's driver does, see
        :meth:`function_name`)."""
        devices, hardware, seen = [], [], set()
        names = pciids.database(self.conf)
        for function, device, not_ready in self._scan():
            if device is not None:
                devices.append(device)
            if function.address not in seen:
                seen.add(function.address)
                hardware.append(hardware_entry(
                    function.address, device, not_ready, function,
                    name=self.function_name(names, function)))
        return devices, hardware

    def discover(self):
        return self.survey()[0]
