"""The agent's RPC endpoints and its conversation with the conductor.

Every heartbeat interval the agent runs discovery with all its drivers and
hashes the result; when the hash differs from the last one the conductor
accepted it sends the report (``report_data``), otherwise, or when the
report was not accepted, a heartbeat.
"""

import hashlib
import json
import os
import tempfile
import threading

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg.accelerator import drivers as accel_drivers
from cyborg.accelerator.drivers import base as drivers_base
from cyborg.common.clients import glance
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import base as objects_base
from cyborg.objects import host as host_obj
from cyborg import version

LOG = logging.getLogger(__name__)


def _canonical(value):
    if isinstance(value, objects_base.CyborgObject):
        return {name: _canonical(getattr(value, name))
                for name in sorted(value.fields)
                if value.obj_attr_is_set(name)}
    if isinstance(value, (list, tuple)):
        items = [_canonical(item) for item in value]
        return sorted(items, key=lambda i: json.dumps(i, sort_keys=True))
    return value


def report_hash(devices):
    """A content hash of a report: equal for equal content, whatever the
    order drivers listed things in."""
    text = json.dumps(_canonical(list(devices)), sort_keys=True)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


class AgentManager:
    """Endpoints of topic ``cyborg-agent``; see rpcapi for versions."""

    RPC_API_VERSION = '1.1'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, host, conf):
        self.host = host
        self.conf = conf
        self.drivers, self.driver_statuses = accel_drivers.load(
            conf.agent.enabled_drivers, conf)
        self._conductor = None
        self._registered = threading.Event()
        self._lock = threading.Lock()
        self._report_lock = threading.Lock()
        # The hash of the last report the conductor accepted.
        self.accepted_hash = None

    @property
    def conductor(self):
        # Built on first use: the transport exists only once the service
        # has started (in the worker process).
        if self._conductor is None:
            self._conductor = conductor_rpcapi.ConductorAPI()
        return self._conductor

    def periodic_tasks(self):
        return [(self.conf.agent.heartbeat_interval, self.keep_alive)]

    def _call_timeout(self):
        """How long a hello or report waits for the conductor.

        Short, so that a dead conductor never holds the agent (or its
        stop) for long. Safe, because both are idempotent: a report the
        conductor finished after we gave up comes back with the same hash
        and costs it one SELECT.
        """
        return max(2 * self.conf.agent.heartbeat_interval, 10)

    def keep_alive(self):
        """Say hello until the conductor has us, then report what changed
        or send a heartbeat."""
        context = cyborg_context.get_admin_context()
        if not self._registered.is_set():
            if self._hello(context):
                self._report(context)
        elif not self._report(context):
            self.conductor.agent_heartbeat(context, self.host)

    def _report(self, context):
        """Send the devices if they changed since the last accepted report;
        True if sent and accepted."""
        with self._report_lock:
            devices = self.get_hardware(context)
            digest = report_hash(devices)
            if digest == self.accepted_hash:
                return False
            try:
                accepted = self.conductor.report_data(
                    context, self.host, devices, digest,
                    timeout=self._call_timeout())
            except exception.HostNotFound:
                LOG.info('The conductor does not know us; saying hello again')
                self._registered.clear()
                return False
            except messaging.MessagingException as e:
                LOG.warning('The conductor did not take our report (%s); '
                            'sending it again later', e)
                return False
            if accepted != digest:
                LOG.info('The conductor will take our report again later')
                return False
            self.accepted_hash = digest
            LOG.info('Reported %d devices to the conductor', len(devices))
            return True

    def _hello(self, context):
        with self._lock:
            hello = host_obj.AgentHello(
                hostname=self.host, status='READY', endpoint=self.host,
                version=version.version_string(),
                drivers=self.driver_statuses)
            try:
                self.conductor.agent_hello(
                    context, hello,
                    timeout=self._call_timeout())
            except messaging.MessagingException as e:
                LOG.warning('The conductor did not answer our hello (%s); '
                            'trying again in %d seconds', e,
                            self.conf.agent.heartbeat_interval)
                return False
            # A conductor that lost track of us must get a full report.
            self.accepted_hash = None
            self._registered.set()
            LOG.info('Registered with the conductor as %s', self.host)
            return True

    @property
    def registered(self):
        return self._registered.is_set()

    # RPC endpoints

    def say_hello(self, context):
        self._registered.clear()
        self._hello(context)

    def get_hardware(self, context):
        devices = []
        for name, driver in self.drivers.items():
            try:
                devices.extend(driver.discover())
            except Exception:
                LOG.exception('Driver %s failed to discover hardware', name)
        return devices

    def discover(self, context):
        self.say_hello(context)
        if self.registered:
            self._report(context)

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
