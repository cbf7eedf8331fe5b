"""Host liveness: agents say hello and send heartbeats; hosts that go
silent are marked down, with a log line and a notification (the seed's
alarm for an agent that reported before and went away)."""

from oslo_log import log as logging

from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import notifications
from cyborg.db import hosts as db_hosts
from cyborg.objects import host as host_obj

LOG = logging.getLogger(__name__)


def _host_object(row, drivers):
    return host_obj.Host.from_db(
        row, drivers=[host_obj.HostDriver.from_db(d) for d in drivers])


def _resource_provider_name(hello):
    """The compute node provider name the agent gave; None (its hostname,
    then) from an agent that gave none or is older than AgentHello 1.1."""
    if not hello.obj_attr_is_set('resource_provider_name'):
        return None
    return hello.resource_provider_name or None


class Liveness:

    def __init__(self, conf, on_status_change=None):
        self.conf = conf
        self._agents = None
        # Called with (context, hostname) when a host goes down or
        # comes back, after the notification.
        self.on_status_change = on_status_change

    @property
    def agents(self):
        if self._agents is None:
            self._agents = agent_rpcapi.AgentAPI()
        return self._agents

    def hello(self, context, hello):
        if not hello.hostname:
            raise exception.Invalid(reason='an agent hello needs a hostname')
        drivers = [d.as_dict() for d in hello.drivers]
        row, was_down = db_hosts.record_hello(
            context, hello.hostname, hello.endpoint, hello.version, drivers,
            resource_provider_name=_resource_provider_name(hello))
        LOG.info('Agent on host %s said hello with drivers %s',
                 hello.hostname, ', '.join(
                     '%s (%s)' % (d['name'], d['status']) for d in drivers))
        host = self.get_host(context, hello.hostname)
        if was_down:
            self._came_back(context, host)
        return host

    def heartbeat(self, context, hostname):
        try:
            before = db_hosts.record_heartbeat(context, hostname)
        except exception.HostNotFound:
            # We have lost the host (a new database, say): ask its agent to
            # introduce itself again rather than guess what it runs.
            LOG.info('Heartbeat from unknown host %s; asking for a hello',
                     hostname)
            self.agents.say_hello(context, hostname)
            return
        if before == 'down':
            self._came_back(context, self.get_host(context, hostname))

    def get_host(self, context, hostname):
        return _host_object(*db_hosts.get_by_hostname(context, hostname))

    def check_hosts(self):
        context = cyborg_context.get_admin_context()
        timeout = self.conf.conductor.host_down_timeout
        for hostname in db_hosts.mark_silent_hosts_down(context, timeout):
            LOG.warning('Host %s has not been heard from for %d seconds '
                        'and is now marked down', hostname, timeout)
            notifications.emit(context, 'host.down', 'ERROR',
                               self.get_host(context, hostname))
            self._status_changed(context, hostname)

    def _came_back(self, context, host):
        LOG.warning('Host %s is up again', host.hostname)
        notifications.emit(context, 'host.up', 'INFO', host)
        self._status_changed(context, host.hostname)

    def _status_changed(self, context, hostname):
        if self.on_status_change is None:
            return
        try:
            self.on_status_change(context, hostname)
        except Exception:
            LOG.exception('Following the status of host %s failed',
                          hostname)
