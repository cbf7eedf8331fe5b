"""The agent's RPC endpoints and its conversation with the conductor.

Three things make the agent look at its hardware: its start (after the
hello), a udev event on a PCI function or mdev (:mod:`cyborg.agent.udev`,
on the real ``/sys`` only) and the periodic rescan. With udev events, the
periodic rescan runs rarely (``[agent] full_rescan_interval``); without,
every ``[agent] rescan_interval`` seconds, but it runs the drivers only
when a cheap look at sysfs (:mod:`cyborg.agent.changes`) finds a change,
or a full rescan is due. Each discovery runs all drivers and hashes the
result; a report (``report_data``) goes to the conductor only when the hash
differs from the last one the conductor accepted. The heartbeat (``[agent]
heartbeat_interval``) runs no discovery: it is a cast, or the resend of a
report the conductor has not taken yet.

The last accepted report is kept in ``[agent] state_file``
(:mod:`cyborg.agent.state`), so a restarted agent whose hardware did not
change sends nothing but its hello and heartbeats.

A report carries the hardware list too (:mod:`cyborg.objects.hardware`):
every PCI function the drivers looked at, offered or not and why; the
hash covers it, so a changed decision alone is a new report. Each
decision not to offer a function is logged once, when it changes.

Every report carries a sequence higher than any the agent sent before (at
least the time in microseconds, above the last one it saved and the one
the conductor's hello answer names), so that a report the conductor gets
late, after a newer one, is refused instead of replacing it.
"""

import hashlib
import json
import os
import re
import tempfile
import threading
import time

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg.accelerator.common import sysfs
from cyborg.accelerator import drivers as accel_drivers
from cyborg.agent import admin
from cyborg.agent import changes
from cyborg.agent import state as agent_state
from cyborg.agent import udev
from cyborg.accelerator.drivers import base as drivers_base
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import base as objects_base
from cyborg.objects import hardware as hardware_obj
from cyborg.objects import host as host_obj
from cyborg import version

LOG = logging.getLogger(__name__)


def _canonical(value):
    """Canonical JSON text of ``value``: object fields by name, list items
    by their own text, so the order drivers list things in does not
    matter. Each item is serialized once, however deep it sits."""
    if isinstance(value, objects_base.CyborgObject):
        return '{%s}' % ','.join(
            '%s:%s' % (json.dumps(name), _canonical(getattr(value, name)))
            for name in sorted(value.fields) if value.obj_attr_is_set(name))
    if isinstance(value, (list, tuple)):
        return '[%s]' % ','.join(sorted(_canonical(item) for item in value))
    return json.dumps(value, sort_keys=True)


def report_hash(devices, hardware=None):
    """A content hash of a report (its devices and, if it carries one, its
    hardware list): equal for equal content, whatever the order drivers
    listed things in."""
    text = _canonical(list(devices))
    if hardware is not None:
        text += '\n' + _canonical(list(hardware))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _has_reports(host):
    """Whether the conductor's record of us (the hello's answer) holds a
    report of ours."""
    return (isinstance(host, host_obj.Host)
            and host.obj_attr_is_set('report_generation')
            and host.report_generation > 0)


def next_report_seq(last):
    """The sequence of the report after one sent with ``last``: higher,
    and at least the time in microseconds, so that it stays above what an
    agent sent before it lost count (a lost state file)."""
    return max(last + 1, time.time_ns() // 1000)


def _applied_seq(host):
    """The sequence of the newest report of ours the conductor applied,
    as its hello answer says (None: it does not say)."""
    if isinstance(host, host_obj.Host) and host.obj_attr_is_set(
            'report_seq'):
        return host.report_seq
    return None


def _supported_version(error, obj):
    """The version of ``obj``'s class that the server which answered
    ``error`` (a RemoteError) supports, when ``error`` says it cannot
    take ``obj``'s version; else None."""
    if error.exc_type != 'IncompatibleObjectVersion':
        return None
    # oslo.versionedobjects: "Version 1.1 of AgentHello is not supported,
    # supported version is 1.0".
    found = re.search(r' of %s is not supported, supported version is '
                      r'(\d+\.\d+)' % obj.obj_name(), error.value or '')
    if found is None or found.group(1) == obj.VERSION:
        return None
    return found.group(1)


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


class AgentManager(admin.AdminEndpoints):
    """Endpoints of topic ``cyborg-agent``; see rpcapi for versions."""

    RPC_API_VERSION = '1.4'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, host, conf):
        self.host = host
        self.conf = conf
        self.drivers, self.driver_statuses = accel_drivers.load(
            admin.enabled_drivers(conf), conf)
        self._conductor = None
        self._registered = threading.Event()
        self._lock = threading.Lock()
        self._report_lock = threading.Lock()
        self._watcher = None
        self.changes = changes.ChangeCheck(
            lambda: sysfs.fingerprint(conf.agent.sysfs_root),
            conf.agent.full_rescan_interval)
        # (driver, control path) overlaps already logged.
        self._overlaps = set()
        # (hash, devices) of a report the conductor has not accepted yet.
        self._pending = None
        self._state = agent_state.load(conf.agent.state_file, host,
                                       report_hash)
        # The hash of the last report the conductor accepted.
        self.accepted_hash = self._state and self._state.trusted_hash
        # The sequence of the last report sent (or the conductor applied).
        self._seq = (self._state and self._state.report_seq) or 0
        # False once a conductor of an older release refused a sequence.
        self._send_seq = True
        # False once a conductor of an older release refused hardware.
        self._send_hardware = True
        # {(driver, address): HardwareFunction.decision()} last logged.
        self._decisions = {}

    @property
    def conductor(self):
        # Built on first use: the transport exists only once the service
        # has started (in the worker process).
        if self._conductor is None:
            self._conductor = conductor_rpcapi.ConductorAPI()
        return self._conductor

    def init_host(self):
        self._watcher = udev.start(self.conf.agent.sysfs_root,
                                   self._rescan)
        if self._watcher is None and not self.conf.agent.rescan_interval:
            LOG.warning('Neither udev events nor a periodic rescan: '
                        'hardware changes are found only when the '
                        'conductor asks for a discovery or the agent '
                        'restarts')

    def del_host(self):
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    def periodic_tasks(self):
        tasks = [(self.conf.agent.heartbeat_interval, self.keep_alive)]
        interval = self._rescan_interval()
        if interval:
            tasks.append((interval, self.periodic_rescan))
        return tasks

    def _rescan_interval(self):
        """Seconds between periodic rescans (None: no periodic rescan).
        udev events announce hot-plugs, so with them (known once
        init_host ran) a full rescan now and then is enough."""
        if not self.conf.agent.rescan_interval:
            return None
        if self._watcher is None:
            return self.conf.agent.rescan_interval
        return self.conf.agent.full_rescan_interval or None

    def periodic_rescan(self):
        """The periodic rescan: without udev events, the drivers run only
        if sysfs changed or a full rescan is due."""
        if self._watcher is None and not self.changes.worth_discovering():
            return
        self._rescan()

    def _call_timeout(self):
        """How long a hello or report waits for the conductor.

        Short, so that a dead conductor never holds the agent (or its
        stop) for long. Safe, because both are idempotent: a report the
        conductor finished after we gave up comes back with the same hash
        and costs it one SELECT.
        """
        return max(2 * self.conf.agent.heartbeat_interval, 10)

    def keep_alive(self):
        """The heartbeat task: say hello until the conductor has us (then
        report what it misses), resend a report it has not taken yet, or
        send a heartbeat. No discovery unless we just said hello."""
        context = cyborg_context.get_admin_context()
        if not self._registered.is_set():
            if self._hello(context):
                self._report(context)
        elif not self._resend(context):
            self.conductor.agent_heartbeat(context, self.host)

    def _rescan(self):
        """Discovery, and a report only if it found something new (the
        rescan task, and what a udev event triggers)."""
        if not self._registered.is_set():
            # The hello the next heartbeat sends comes with a report.
            return
        self._report(cyborg_context.get_admin_context(), resend=False)

    def _report(self, context, resend=True):
        """Discover and send the devices if they changed since the last
        accepted report; True if sent and accepted. With ``resend``
        False, a report equal to the pending one is left to the heartbeat.
        """
        with self._report_lock:
            devices, hardware = self._survey()
            if not self._send_hardware:
                hardware = None
            digest = report_hash(devices, hardware)
            if digest == self.accepted_hash:
                self._pending = None
                return False
            if not resend and self._pending and self._pending[0] == digest:
                return False
            return self._send(context, digest, devices, hardware)

    def _resend(self, context):
        """Send the pending report again; True if now accepted."""
        with self._report_lock:
            if self._pending is None:
                return False
            return self._send(context, *self._pending)

    def _next_seq(self):
        self._seq = next_report_seq(self._seq)
        return self._seq

    def _report_data(self, context, digest, devices, hardware):
        """``report_data`` with the report's sequence and hardware; a
        conductor of an older release gets what it knows: the report
        without hardware (then hashed without it, as the conductor
        keeps it), or without a sequence either. Returns the answer, the
        hash sent and the hardware sent (None: none)."""
        timeout = self._call_timeout()
        if hardware is not None and self._send_hardware and self._send_seq:
            try:
                return self.conductor.report_data(
                    context, self.host, devices, digest,
                    report_seq=self._next_seq(), hardware=hardware,
                    timeout=timeout), digest, hardware
            except messaging.RemoteError as e:
                if e.exc_type != 'UnsupportedVersion':
                    raise
            LOG.info('The conductor takes reports without hardware only; '
                     'sending them so until we say hello again')
            self._send_hardware = False
        if hardware is not None:
            digest, hardware = report_hash(devices), None
        if self._send_seq:
            try:
                return self.conductor.report_data(
                    context, self.host, devices, digest,
                    report_seq=self._next_seq(), timeout=timeout), digest, None
            except messaging.RemoteError as e:
                if e.exc_type != 'UnsupportedVersion':
                    raise
            LOG.info('The conductor takes reports without a sequence only; '
                     'sending them so until we say hello again')
            self._send_seq = False
        answer = self.conductor.report_data(context, self.host, devices,
                                            digest, timeout=timeout)
        return answer, digest, None

    def _send(self, context, digest, devices, hardware=None):
        try:
            accepted, digest, hardware = self._report_data(
                context, digest, devices, hardware)

        except exception.HostNotFound:
            LOG.info('The conductor does not know us; saying hello again')
            self._registered.clear()
            self._pending = None
            return False
        except (messaging.MessagingException,
                exception.ServiceUnavailable) as e:
            # ServiceUnavailable: the conductor's database is down.
            LOG.warning('The conductor did not take our report (%s); '
                        'sending it again later', e)
            self._unconfirmed(digest, devices, hardware)
            return False
        if accepted != digest:
            LOG.info('The conductor will take our report again later')
            self._unconfirmed(digest, devices, hardware)
            return False
        self.accepted_hash = digest
        self._pending = None
        self._save(agent_state.AgentState(
            host=self.host, report_hash=digest, devices=tuple(devices),
            report_seq=self._seq,
            hardware=None if hardware is None else tuple(hardware)))
        LOG.info('Reported %d devices to the conductor', len(devices))
        return True

    def _unconfirmed(self, digest, devices, hardware=None):
        """The conductor may or may not hold ``digest`` now: keep it to
        send again, and let a restart send a full report."""
        self._pending = (digest, devices, hardware)
        if self._state is None or self._state.unconfirmed is None:
            self._save(agent_state.AgentState(
                host=self.host,
                report_hash=self._state and self._state.report_hash,
                devices=self._state.devices if self._state else (),
                unconfirmed=digest, report_seq=self._seq,
                hardware=self._state.hardware if self._state else None))

    def _save(self, state):
        self._state = state
        agent_state.save(self.conf.agent.state_file, state)

    def _hello(self, context, full_report=False):
        with self._lock:
            hello = host_obj.AgentHello(
                hostname=self.host, status='READY', endpoint=self.host,
                version=version.version_string(),
                drivers=self.driver_statuses,
                resource_provider_name=(
                    self.conf.agent.resource_provider_name or None))
            try:
                host = self._say_hello(context, hello)
            except (messaging.MessagingException,
                    exception.ServiceUnavailable) as e:
                LOG.warning('The conductor did not answer our hello (%s); '
                            'trying again in %d seconds', e,
                            self.conf.agent.heartbeat_interval)
                return False
            if full_report or not _has_reports(host):
                # A conductor that asks, or lost track of us (a new
                # database), gets a full report.
                self.accepted_hash = None
            self._seq = max(self._seq, _applied_seq(host) or 0)
            self._send_seq = True
            self._send_hardware = True
            self._registered.set()
            LOG.info('Registered with the conductor as %s', self.host)
            return True

    def _say_hello(self, context, hello):
        """Send ``hello``; a conductor of an older release, which refuses
        an AgentHello newer than the one it knows, gets it again as that
        version (without the fields it would not understand)."""
        timeout = self._call_timeout()
        try:
            return self.conductor.agent_hello(context, hello,
                                              timeout=timeout)
        except messaging.RemoteError as e:
            supported = _supported_version(e, hello)
            if supported is None:
                raise
        LOG.info('The conductor knows AgentHello %s only; saying hello '
                 'with that version', supported)
        return self.conductor.agent_hello(
            context, hello.obj_to_primitive(target_version=supported),
            timeout=timeout)

    @property
    def registered(self):
        return self._registered.is_set()

    # RPC endpoints

    def say_hello(self, context):
        """The conductor asks us to register again: it gets a full
        report."""
        self._registered.clear()
        if self._hello(context, full_report=True):
            self._report(context)

    def get_hardware(self, context):
        """The devices the drivers offer (the report's devices)."""
        return self._survey()[0]

    def _survey(self):
        """``(devices, hardware)``: what the drivers offer, and every
        function they looked at as HardwareFunctions (the decisions are
        logged when they change)."""
        devices, hardware = [], []
        claimed = {}
        self.changes.discovering()
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
    # operator programs a deployable. Failures come back as
    # DriverOperationFailed with the reason.

    def _capable_driver(self, operation, capability, driver_name=None):
        """The loaded driver with ``capability`` (and ``driver_name``, the
        entry point name or the one its deployables carry)."""
        for name, driver in self.drivers.items():
            if not isinstance(driver, capability):
                continue
            if driver_name in (None, name, driver.driver_name):
                return driver
        raise exception.DriverOperationFailed(
            operation=operation, host=self.host,
            reason='no enabled driver %scan do it (enabled: %s)' % (
                '%s ' % driver_name if driver_name else '',
                ', '.join(sorted(self.drivers)) or 'none'))

    def _run(self, operation, function, *args):
        try:
            return function(*args)
        except exception.CyborgException:
            raise
        except Exception as e:
            LOG.warning('%s failed: %s', operation, e)
            raise exception.DriverOperationFailed(
                operation=operation, host=self.host, reason=str(e)) from e

    def fpga_program(self, context, controlpath_id, image_uuid, driver_name):
        """Download Glance image ``image_uuid`` and load it into the device
        of ``controlpath_id`` with driver ``driver_name``."""
        # Loaded here: most agents never program a device.
        from cyborg.common.clients import glance
        operation = 'Programming %s with image %s' % (
            controlpath_id.get('cpid_info'), image_uuid)
        driver = self._capable_driver(operation, drivers_base.Programmer,
                                      driver_name)
        with tempfile.TemporaryDirectory(prefix='cyborg-bitstream-') as tmp:
            path = os.path.join(tmp, 'bitstream')
            self._run(operation, glance.download, glance.connect(self.conf),
                      image_uuid, path)
            self._run(operation, driver.program, controlpath_id, path)
        LOG.info('%s: done', operation)
        return True

    def create_mdev(self, context, pci_address, mdev_type, mdev_uuid):
        operation = 'Creating mdev %s of type %s on %s' % (
            mdev_uuid, mdev_type, pci_address)
        driver = self._capable_driver(operation, drivers_base.MdevManager)
        self._run(operation, driver.create_mdev, pci_address, mdev_type,
                  mdev_uuid)

    def remove_mdev(self, context, pci_address, mdev_type, mdev_uuid):
        operation = 'Removing mdev %s from %s' % (mdev_uuid, pci_address)
        driver = self._capable_driver(operation, drivers_base.MdevManager)
        self._run(operation, driver.remove_mdev, pci_address, mdev_type,
                  mdev_uuid)

    def ensure_mdevs(self, context, mdevs):
        """Create the mdevs of bound ARQs that are missing (after a host
        reboot); those that exist are left alone. A failure is logged and
        the others go on."""
        created = 0
        for mdev in mdevs:
            operation = 'Restoring mdev %s of type %s on %s' % (
                mdev['mdev_uuid'], mdev['mdev_type'], mdev['pci_address'])
            try:
                driver = self._capable_driver(operation,
                                              drivers_base.MdevManager)
                if driver.create_mdev(mdev['pci_address'], mdev['mdev_type'],
                                      mdev['mdev_uuid']):
                    created += 1
            except Exception as e:
                LOG.warning('%s failed: %s', operation, e)
        if created:
            LOG.info('Restored %d mdevs of bound ARQs', created)
        return created
