"""The agent's endpoints for operators' requests, a second endpoint
object served beside AgentManager on the same RPC server: device setup
when the conductor provisions a v1 accelerator, and the generic-driver
operations of the seed: install (load and enable) a driver, uninstall
it, update it (reload with the current configuration), and discovery on
demand.

Drivers installed or uninstalled at run time are remembered in
``$state_path/agent-drivers.json`` (``{"installed": [...],
"uninstalled": [...]}``), applied over ``[agent] enabled_drivers`` when
the agent starts, so a restart keeps what the operator did.
"""

import json
import os
import tempfile

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg.accelerator import drivers as accel_drivers
from cyborg.accelerator.drivers import base as drivers_base
from cyborg.agent import operations
from cyborg.common import exception

LOG = logging.getLogger(__name__)

DRIVERS_FILE = 'agent-drivers.json'


def drivers_file(conf):
    return os.path.join(conf.state_path, DRIVERS_FILE)


def _read_changes(conf):
    try:
        with open(drivers_file(conf)) as f:
            changes = json.load(f)
        return (list(changes.get('installed', [])),
                list(changes.get('uninstalled', [])))
    except FileNotFoundError:
        return [], []
    except (OSError, ValueError, AttributeError) as e:
        LOG.warning('Ignoring the driver changes in %s: %s',
                    drivers_file(conf), e)
        return [], []


def enabled_drivers(conf):
    """``[agent] enabled_drivers`` with the operator's run-time changes
    applied."""
    installed, uninstalled = _read_changes(conf)
    names = [n for n in conf.agent.enabled_drivers if n not in uninstalled]
    return names + [n for n in installed if n not in names]


def _write_changes(conf, installed, uninstalled):
    path = drivers_file(conf)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path),
                                   prefix='.' + DRIVERS_FILE)
        with os.fdopen(fd, 'w') as f:
            json.dump({'installed': installed, 'uninstalled': uninstalled},
                      f, sort_keys=True)
        os.replace(tmp, path)
    except OSError as e:
        LOG.warning('Cannot record the driver change in %s (%s); it is '
                    'lost at the next restart', path, e)


class AdminEndpoints:
    """Operators' endpoints of topic ``cyborg-agent``, on the drivers of
    ``agent`` (the AgentManager they are served with)."""

    # The agent's RPC API, as AgentManager's.
    RPC_API_VERSION = '1.4'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, agent):
        self.agent = agent
        self.conf = agent.conf
        self.host = agent.host

    @messaging.expected_exceptions(exception.DriverOperationFailed)
    def setup_device(self, context, controlpath_id, driver_name):
        """The setup step of ``driver_name`` for one device. A driver
        without one needs none: the device is ready as discovered."""
        operation = 'Setting up %s' % controlpath_id.get('cpid_info')
        driver = operations.capable_driver(
            self.agent.drivers, self.host, operation,
            drivers_base.AcceleratorDriver, driver_name)
        if not isinstance(driver, drivers_base.Installer):
            LOG.info('%s: driver %s has no setup step', operation,
                     driver_name)
            return True
        operations.run(self.host, operation, driver.setup, controlpath_id)
        LOG.info('%s: done', operation)
        return True

    # Drivers

    def _check_installed(self, name):
        if self._status_of(name) is None and name not in self.agent.drivers:
            raise exception.DriverNotInstalled(driver=name, host=self.host)

    def _status_of(self, name):
        for status in self.agent.driver_statuses:
            if status.name == name:
                return status
        return None

    def _load(self, name):
        """(Re)load driver ``name``; its HostDriver status."""
        drivers, statuses = accel_drivers.load([name], self.conf)
        self.agent.drivers.pop(name, None)
        self.agent.drivers.update(drivers)
        self.agent.driver_statuses = [s for s in self.agent.driver_statuses
                                      if s.name != name] + statuses
        return statuses[0]

    def _remember(self, name, installed):
        added, removed = _read_changes(self.conf)
        added = [n for n in added if n != name]
        removed = [n for n in removed if n != name]
        if installed and name not in self.conf.agent.enabled_drivers:
            added.append(name)
        if not installed and name in self.conf.agent.enabled_drivers:
            removed.append(name)
        _write_changes(self.conf, added, removed)

    def _rediscover(self, context):
        """Tell the conductor the drivers and devices now (hello and
        report), before answering."""
        self.agent.discover(context)

    def install_driver(self, context, name):
        """Load and enable driver ``name``; nothing if it is loaded.
        Returns its status (FAILED with the reason if it cannot load)."""
        status = self._status_of(name)
        if name in self.agent.drivers and status is not None:
            return status
        status = self._load(name)
        if status.status == 'READY':
            self._remember(name, installed=True)
            LOG.info('Driver %s installed', name)
        self._rediscover(context)
        return status

    @messaging.expected_exceptions(exception.DriverNotInstalled)
    def uninstall_driver(self, context, name):
        """Unload driver ``name``; its devices leave the next report."""
        self._check_installed(name)
        self.agent.drivers.pop(name, None)
        self.agent.driver_statuses = [s for s in self.agent.driver_statuses
                                      if s.name != name]
        self._remember(name, installed=False)
        LOG.info('Driver %s uninstalled', name)
        self._rediscover(context)
        return True

    @messaging.expected_exceptions(exception.DriverNotInstalled)
    def update_driver(self, context, name):
        """Reload driver ``name`` with the configuration files as they are
        now."""
        self._check_installed(name)
        try:
            self.conf.reload_config_files()
        except Exception as e:
            LOG.warning('The configuration files could not be read again '
                        '(%s); reloading driver %s with the current one',
                        e, name)
        status = self._load(name)
        LOG.info('Driver %s reloaded: %s', name, status.status)
        self._rediscover(context)
        return status

    @messaging.expected_exceptions(exception.DriverNotInstalled)
    def driver_devices(self, context, name):
        """The control path infos of the devices driver ``name`` finds."""
        driver = self.agent.drivers.get(name)
        if driver is None:
            raise exception.DriverNotInstalled(driver=name, host=self.host)
        return [device.controlpath_id.cpid_info
                for device in driver.discover()]

    def discover_now(self, context):
        """Discovery now: hello and report, answered when done; returns
        the number of devices and deployables reported."""
        self.agent.discover(context)
        devices = self.agent.get_hardware(context)
        return {'registered': self.agent.reporter.registered,
                'devices': len(devices),
                'deployables': sum(len(d.deployable_list) for d in devices)}
