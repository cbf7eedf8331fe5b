"""The agent's RPC endpoints (topic ``cyborg-agent``).

``AgentManager`` serves what the conductor asks of the agent's hardware:
the hello again, the hardware, discovery and the device operations of
ARQ binds and FPGA programming. The operators' endpoints (device setup,
generic-driver operations) are a second endpoint object,
:class:`cyborg.agent.admin.AdminEndpoints`, served beside it on the same
RPC server. The report protocol (hash, hello, pending report and resend,
state file, rescans) is :class:`cyborg.agent.reporter.Reporter`'s; the
manager gives it the survey of the drivers' hardware.

Each decision of a driver not to offer a PCI function is logged once,
when it changes.
"""

import os
import tempfile

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_utils import uuidutils

from cyborg.accelerator.common import capture
from cyborg.accelerator.common import mdev
from cyborg.accelerator.common import pci
from cyborg.accelerator.common import sysfs
from cyborg.accelerator import drivers as accel_drivers
from cyborg.accelerator.drivers import base as drivers_base
from cyborg.agent import admin
from cyborg.agent import operations
from cyborg.agent import reporter
from cyborg.common import exception
from cyborg.objects import hardware as hardware_obj

LOG = logging.getLogger(__name__)


#: The generic driver comes after the vendor drivers, which know their
#: hardware better, whatever the order of ``[agent] enabled_drivers``.
GENERIC_DRIVERS = ('pci_driver',)


def _claim_order(drivers):
    return sorted(drivers, key=lambda name: name in GENERIC_DRIVERS)


def _cpid_info(device):
    try:
        return device.controlpath_id.cpid_info
    except Exception:
        return None


def _functions(name, entries, kept, claimed):
    """The HardwareFunctions of driver ``name``'s hardware ``entries``;
    a device another driver took first is not offered by this one."""
    kept_ids = {id(device) for device in kept}
    functions = []
    for entry in entries:
        function = hardware_obj.HardwareFunction.from_entry(name, entry)
        device = entry['device']
        if device is not None and id(device) not in kept_ids:
            owner = claimed.get(('device', _cpid_info(device)), 'another')
            function.offered = False
            function.reason = 'driver %s offers it already' % owner
            function.action = ('narrow the configuration of one of the '
                               'two drivers')
        functions.append(function)
    return functions


class AgentManager:
    """Endpoints of topic ``cyborg-agent``; see rpcapi for versions."""

    RPC_API_VERSION = '1.4'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, host, conf, conductor=None, on_refused=None):
        self.host = host
        self.conf = conf
        # A capture file as the sysfs root is laid out as a tree first.
        capture.resolve_root(conf)
        self.drivers, self.driver_statuses = accel_drivers.load(
            admin.enabled_drivers(conf), conf)
        # (driver, control path) overlaps already logged.
        self._overlaps = set()
        # {(driver, address): HardwareFunction.decision()} last logged.
        self._decisions = {}
        #: The report protocol; ``conductor`` (the conductor's RPC
        #: client) is built on first use when not given.
        self.reporter = reporter.Reporter(
            host, conf, self._survey, lambda: self.driver_statuses,
            conductor, on_refused)
        #: The operators' endpoints, served beside this object.
        self.admin = admin.AdminEndpoints(self)
        #: What the RPC server of topic ``cyborg-agent`` serves.
        self.endpoints = [self, self.admin]

    def init_host(self):
        self.reporter.start()

    def del_host(self):
        self.reporter.stop()

    def periodic_tasks(self):
        return self.reporter.periodic_tasks()

    # RPC endpoints

    def say_hello(self, context):
        """The conductor asks us to register again: it gets a full
        report."""
        self.reporter.reregister(context)

    def get_hardware(self, context):
        """The devices the drivers offer (the report's devices)."""
        return self.reporter.survey()[0]

    def _survey(self):
        """``(devices, hardware)``: what the drivers offer, and every
        function they looked at as HardwareFunctions (the decisions are
        logged when they change)."""
        devices, hardware = [], []
        claimed = {}
        # The drivers share one read of the PCI tree.
        with sysfs.one_pass():
            for name in _claim_order(self.drivers):
                try:
                    found, entries = self.drivers[name].survey()
                except Exception:
                    LOG.exception('Driver %s failed to discover hardware',
                                  name)
                    continue
                kept = self._unclaimed(name, found, claimed)
                devices.extend(kept)
                hardware.extend(_functions(name, entries, kept, claimed))
        self._log_decisions(hardware)
        return devices, hardware

    def _log_decisions(self, hardware):
        """Log each function's decision once, when it changes: why one is
        not offered (a WARNING), that one is offered again (INFO)."""
        decisions = {}
        for function in hardware:
            key = (function.driver, function.address)
            decision = decisions[key] = function.decision()
            before = self._decisions.get(key)
            if decision == before:
                continue
            if not function.offered:
                LOG.warning(
                    'Driver %s: PCI function %s (%s:%s, kernel driver %s) '
                    'is not offered: %s.%s', function.driver,
                    function.address, function.vendor_id,
                    function.product_id, function.kernel_driver or 'none',
                    function.reason, ' To offer it: %s.' % function.action
                    if function.action else '')
            elif before is not None:
                LOG.info('Driver %s: PCI function %s is offered now',
                         function.driver, function.address)
        self._decisions = decisions

    def _unclaimed(self, name, devices, claimed):
        """Those of ``devices`` (found by driver ``name``) no driver before
        it offered: a function offered twice, say by pci_driver through a
        whitelist spec and by a vendor driver, would make the conductor
        refuse the whole report. The first driver keeps it; the overlap
        is logged once."""
        result = []
        for device in devices:
            keys = [('device', _cpid_info(device))] + [
                ('deployable', dep.name)
                for dep in getattr(device, 'deployable_list', [])]
            owners = {claimed[key] for key in keys if key in claimed}
            if owners:
                warning = (name, keys[0][1])
                if warning not in self._overlaps:
                    self._overlaps.add(warning)
                    LOG.warning('Driver %s also offers %s, which driver %s '
                                'offers already; it is left to %s. Narrow '
                                'the configuration of one of them.',
                                name, keys[0][1], ', '.join(sorted(owners)),
                                ', '.join(sorted(owners)))
                continue
            for key in keys:
                claimed[key] = name
            result.append(device)
        return result

    def discover(self, context):
        self.say_hello(context)

    # Device operations the conductor asks for while it binds ARQs or an
    # operator programs a deployable (see operations).

    @messaging.expected_exceptions(exception.DriverOperationFailed,
                                   exception.Invalid,
                                   exception.ServiceUnavailable)
    def fpga_program(self, context, controlpath_id, image_uuid, driver_name):
        """Download Glance image ``image_uuid`` and load it into the device
        of ``controlpath_id`` with driver ``driver_name``. Glance's errors
        pass as themselves: the image is not there (Invalid), Glance does
        not answer (ServiceUnavailable)."""
        # Loaded here: most agents never program a device.
        from cyborg.common.clients import glance
        cpid_info = (controlpath_id.get('cpid_info')
                     if isinstance(controlpath_id, dict) else None)
        operation = 'Programming %r with image %r' % (cpid_info, image_uuid)
        if not isinstance(cpid_info, str):
            raise exception.RefusedDeviceArgument(
                operation=operation, reason='no control path id')
        if not uuidutils.is_uuid_like(image_uuid):
            raise exception.RefusedDeviceArgument(
                operation=operation, reason='the image id is not a UUID')
        driver = self._driver(operation, drivers_base.Programmer,
                              driver_name)
        with tempfile.TemporaryDirectory(prefix='cyborg-bitstream-') as tmp:
            path = os.path.join(tmp, 'bitstream')
            operations.run(self.host, operation, glance.download,
                           glance.connect(self.conf), image_uuid, path)
            operations.run(self.host, operation, driver.program,
                           controlpath_id, path)
        LOG.info('%s: done', operation)
        return True

    def _checked_mdev(self, operation, pci_address, mdev_type, mdev_uuid,
                      type_must_exist=True):
        """``(address, type, uuid)`` as canonical text once each is what
        it must be: a PCI address, an mdev type (one that function offers
        under ``mdev_supported_types`` when ``type_must_exist``) and a
        UUID; RefusedDeviceArgument otherwise."""
        try:
            address = str(pci.PciAddress.parse(pci_address))
            mdev_type = mdev.parse_type(mdev_type)
            mdev_uuid = mdev.parse_uuid(mdev_uuid)
        except (TypeError, ValueError, AttributeError) as e:
            raise exception.RefusedDeviceArgument(
                operation=operation, reason=str(e)) from None
        if type_must_exist and not os.path.isdir(os.path.join(
                sysfs.PciReader(self.conf.agent.sysfs_root).path(address),
                'mdev_supported_types', mdev_type)):
            raise exception.RefusedDeviceArgument(
                operation=operation, reason='PCI function %s has no mdev '
                'type %s' % (address, mdev_type))
        return address, mdev_type, mdev_uuid

    @messaging.expected_exceptions(exception.DriverOperationFailed,
                                   exception.Invalid)
    def create_mdev(self, context, pci_address, mdev_type, mdev_uuid):
        operation = 'Creating mdev %r of type %r on %r' % (
            mdev_uuid, mdev_type, pci_address)
        checked = self._checked_mdev(operation, pci_address, mdev_type,
                                     mdev_uuid)
        driver = self._driver(operation, drivers_base.MdevManager)
        operations.run(self.host, operation, driver.create_mdev, *checked)

    @messaging.expected_exceptions(exception.DriverOperationFailed,
                                   exception.Invalid)
    def remove_mdev(self, context, pci_address, mdev_type, mdev_uuid):
        operation = 'Removing mdev %r from %r' % (mdev_uuid, pci_address)
        checked = self._checked_mdev(operation, pci_address, mdev_type,
                                     mdev_uuid, type_must_exist=False)
        driver = self._driver(operation, drivers_base.MdevManager)
        operations.run(self.host, operation, driver.remove_mdev, *checked)

    def ensure_mdevs(self, context, mdevs):
        """Create the mdevs of bound ARQs that are missing (after a host
        reboot); those that exist are left alone. A failure (an entry
        refused included) is logged and the others go on."""
        created = 0
        for entry in mdevs if isinstance(mdevs, list) else []:
            if not isinstance(entry, dict):
                entry = {}
            operation = 'Restoring mdev %r of type %r on %r' % (
                entry.get('mdev_uuid'), entry.get('mdev_type'),
                entry.get('pci_address'))
            try:
                checked = self._checked_mdev(
                    operation, entry.get('pci_address'),
                    entry.get('mdev_type'), entry.get('mdev_uuid'))
                driver = self._driver(operation, drivers_base.MdevManager)
                if driver.create_mdev(*checked):
                    created += 1
            except Exception as e:
                LOG.warning('%s failed: %s', operation, e)
        if created:
            LOG.info('Restored %d mdevs of bound ARQs', created)
        return created

    def _driver(self, operation, capability, driver_name=None):
        return operations.capable_driver(self.drivers, self.host, operation,
                                         capability, driver_name)
