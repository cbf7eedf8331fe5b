"""The generic-driver operations of the seed (microversion 2.5): install,
uninstall and update a driver on one host or all hosts that are up, and
discovery on demand.

Each is a call to the agents concerned, in parallel, each answered once
the agent has told the conductor (hello and report) what changed, so the
API answers with the database and Placement already up to date. A host
whose agent does not answer is reported as such, not as an error of the
whole request. Uninstalling is refused while any device of the driver is
in use (an ARQ, a v1 accelerator or an attach handle holds it); once
unloaded, its devices leave the next report and so the database and
Placement.
"""

import concurrent.futures

from oslo_log import log as logging
import oslo_messaging as messaging
import stevedore

from cyborg.accelerator import drivers as accel_drivers
from cyborg.common import exception
from cyborg.conductor import agents as agent_gateway
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import devices as db_devices
from cyborg.db import hosts as db_hosts

LOG = logging.getLogger(__name__)

#: Seconds an agent has to load a driver and report, by default.
AGENT_TIMEOUT = conductor_rpcapi.AGENT_WAIT
NO_ANSWER = 'no answer'


def known_drivers():
    """Names of the driver entry points installed with cyborg."""
    return sorted(stevedore.ExtensionManager(
        accel_drivers.NAMESPACE, invoke_on_load=False).names())


def check_driver_name(name):
    known = known_drivers()
    if name not in known:
        raise exception.UnknownDriver(driver=name, known=', '.join(known))


class Drivers:

    def __init__(self, conf, agents=None):
        self.conf = conf
        #: The conductor's agent gateway.
        self.agents = agents or agent_gateway.Agents()

    def _hosts(self, context, hostname):
        """The hostnames to act on: ``hostname`` (which must exist), or
        every host that is up."""
        if hostname:
            db_hosts.get_by_hostname(context, hostname)
            return [hostname]
        return [host.hostname for host, _drivers in db_hosts.get_all(context)
                if host.status == 'up']

    def _on_hosts(self, hostnames, function):
        """``{hostname: function(hostname) or the exception}``, the hosts
        in parallel."""
        if not hostnames:
            return {}
        workers = min(len(hostnames), 16)
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            futures = {name: pool.submit(function, name)
                       for name in hostnames}
        results = {}
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except Exception as e:
                results[name] = e
        return results

    @staticmethod
    def _row(hostname, name, result):
        """One host's line of a driver operation's answer."""
        if isinstance(result, Exception):
            return {'host': hostname, 'name': name,
                    'status': (NO_ANSWER if isinstance(
                        result, messaging.MessagingTimeout) else 'FAILED'),
                    'device_type': None, 'version': None,
                    'error': agent_gateway.failure_reason(result)}
        return {'host': hostname, 'name': name, 'status': result.status,
                'device_type': result.device_type,
                'version': result.version, 'error': result.error}

    def install(self, context, name, hostname=None):
        check_driver_name(name)
        results = self._on_hosts(
            self._hosts(context, hostname),
            lambda host: self.agents.install_driver(
                context, host, name, timeout=AGENT_TIMEOUT))
        return [self._row(host, name, result)
                for host, result in sorted(results.items())]

    def update(self, context, name, hostname=None):
        hosts = self._hosts_running(context, name, hostname)
        results = self._on_hosts(
            hosts, lambda host: self.agents.update_driver(
                context, host, name, timeout=AGENT_TIMEOUT))
        return [self._row(host, name, result)
                for host, result in sorted(results.items())]

    def _hosts_running(self, context, name, hostname):
        """The hosts (of ``_hosts``) that have driver ``name``; 404 when
        none has it."""
        hosts = []
        for host, drivers in db_hosts.get_all(context):
            if hostname and host.hostname != hostname:
                continue
            if not hostname and host.status != 'up':
                continue
            if any(d.name == name for d in drivers):
                hosts.append(host.hostname)
        if not hosts:
            if not hostname:
                raise exception.DriverNotFound(name=name)
            db_hosts.get_by_hostname(context, hostname)
            raise exception.DriverNotInstalled(driver=name, host=hostname)
        return hosts

    def uninstall(self, context, name, hostname=None):
        hosts = self._hosts_running(context, name, hostname)
        # Nothing is unloaded anywhere while any host uses the driver.
        devices = self._on_hosts(hosts, lambda host: self.agents.
                                 driver_devices(context, host, name,
                                                timeout=AGENT_TIMEOUT))
        for host in hosts:
            result = devices[host]
            if isinstance(result, exception.DriverNotInstalled):
                continue
            if isinstance(result, Exception):
                raise self._uninstall_failed(name, host, result)
            users = db_devices.users_of(context, host, result)
            if users:
                raise exception.DriverInUse(driver=name, host=host,
                                            users=', '.join(users))
        results = self._on_hosts(hosts, lambda host: self.agents.
                                 uninstall_driver(context, host, name,
                                                  timeout=AGENT_TIMEOUT))
        for host, result in results.items():
            if isinstance(result, Exception) and not isinstance(
                    result, exception.DriverNotInstalled):
                raise self._uninstall_failed(name, host, result)
        LOG.info('Driver %s uninstalled from %s', name, ', '.join(hosts))

    @staticmethod
    def _uninstall_failed(name, host, error):
        return exception.DriverOperationFailed(
            operation='Uninstalling driver %s' % name, host=host,
            reason=agent_gateway.failure_reason(error))

    def discover(self, context, hostname=None, timeout=None):
        """Discovery now on one host or every host that is up; waits for
        the reports (at most ``timeout`` seconds each)."""
        results = self._on_hosts(
            self._hosts(context, hostname),
            lambda host: self.agents.discover_now(
                context, host, timeout=timeout or AGENT_TIMEOUT))
        summary = []
        for host, result in sorted(results.items()):
            if isinstance(result, Exception):
                LOG.warning('Discovery on %s: %s', host, result)
                summary.append({'hostname': host, 'status': NO_ANSWER,
                                'devices': None, 'deployables': None})
            else:
                summary.append({'hostname': host,
                                'status': 'reported' if result['registered']
                                else NO_ANSWER,
                                'devices': result['devices'],
                                'deployables': result['deployables']})
        return summary
