"""The agent's RPC endpoints and its conversation with the conductor."""

import threading

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg.accelerator import drivers as accel_drivers
from cyborg.common import context as cyborg_context
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import host as host_obj
from cyborg import version

LOG = logging.getLogger(__name__)


class AgentManager:
    """Endpoints of topic ``cyborg-agent``; see rpcapi for versions."""

    RPC_API_VERSION = '1.0'
    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, host, conf):
        self.host = host
        self.conf = conf
        self.drivers, self.driver_statuses = accel_drivers.load(
            conf.agent.enabled_drivers, conf)
        self._conductor = None
        self._registered = threading.Event()
        self._lock = threading.Lock()

    @property
    def conductor(self):
        # Built on first use: the transport exists only once the service
        # has started (in the worker process).
        if self._conductor is None:
            self._conductor = conductor_rpcapi.ConductorAPI()
        return self._conductor

    def periodic_tasks(self):
        return [(self.conf.agent.heartbeat_interval, self.keep_alive)]

    def keep_alive(self):
        """Say hello until the conductor has us, then send heartbeats."""
        context = cyborg_context.get_admin_context()
        if not self._registered.is_set():
            self._hello(context)
        else:
            self.conductor.agent_heartbeat(context, self.host)

    def _hello(self, context):
        with self._lock:
            hello = host_obj.AgentHello(
                hostname=self.host, status='READY', endpoint=self.host,
                version=version.version_string(),
                drivers=self.driver_statuses)
            try:
                self.conductor.agent_hello(
                    context, hello,
                    timeout=max(self.conf.agent.heartbeat_interval, 5))
            except messaging.MessagingException as e:
                LOG.warning('The conductor did not answer our hello (%s); '
                            'trying again in %d seconds', e,
                            self.conf.agent.heartbeat_interval)
                return False
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
