"""Host liveness: agents say hello and send heartbeats; hosts that go
silent are marked down, with a log line and a notification (the seed's
alarm for an agent that reported before and went away).

A heartbeat costs no database write when it arrives: the conductor notes
the time in memory and writes the hosts heard every ``[conductor]
heartbeat_flush_interval`` seconds, in one UPDATE per 1,000 hosts
(``flush_heartbeats``). The hosts that UPDATE did not find up (down, or
unknown to the database) are then handled one by one, as state changes:
marked up and announced, or asked for a hello. The timing bounds this
gives are in ``doc/source/admin/liveness.rst``.
"""

import datetime
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import metrics
from cyborg.common import notifications
from cyborg.common import signing
from cyborg.conductor import agents as agent_gateway
from cyborg.db import api as db_api
from cyborg.db import hosts as db_hosts
from cyborg.objects import host as host_obj

LOG = logging.getLogger(__name__)

#: A refusal names the host and two agent ids: room for all three.
AGENT_CONFLICT_LOG_LIMIT = 1000
#: The longest agent id kept (``hosts.agent_id``).
AGENT_ID_MAX = 255


def _host_object(row, drivers):
    return host_obj.Host.from_db(
        row, drivers=[host_obj.HostDriver.from_db(d) for d in drivers])


def _resource_provider_name(hello):
    """The compute node provider name the agent gave; None (its hostname,
    then) from an agent that gave none or is older than AgentHello 1.1."""
    if not hello.obj_attr_is_set('resource_provider_name'):
        return None
    return hello.resource_provider_name or None


def _agent_id(hello):
    """Who the agent is (at most what ``hosts.agent_id`` holds); None
    from an agent older than AgentHello 1.3, which the conductor cannot
    tell from another."""
    if not hello.obj_attr_is_set('agent_id'):
        return None
    return (hello.agent_id or '')[:AGENT_ID_MAX] or None


class Heard:
    """The heartbeats a conductor heard and has not written yet:
    ``{hostname: when heard}``, shared by its RPC threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._hosts = {}

    def add(self, hostname, when):
        with self._lock:
            if self._hosts.get(hostname, when) <= when:
                self._hosts[hostname] = when

    def take(self):
        """What was heard, which is forgotten here."""
        with self._lock:
            taken, self._hosts = self._hosts, {}
        return taken

    def put_back(self, taken):
        """``taken`` could not be written: keep it for the next flush,
        except where a later heartbeat came meanwhile."""
        with self._lock:
            for hostname, when in taken.items():
                if self._hosts.get(hostname, when) <= when:
                    self._hosts[hostname] = when


class Liveness:

    def __init__(self, conf, on_status_change=None, agents=None):
        self.conf = conf
        #: The conductor's agent gateway.
        self.agents = agents or agent_gateway.Agents()
        # Called with (context, hostname) when a host goes down or
        # comes back, after the notification.
        self.on_status_change = on_status_change
        # The database outage (db_api.last_unavailable()) last seen, and
        # until when (time.monotonic()) no host is marked down after it.
        self._outage_seen = None
        self._grace_until = None
        self.heard = Heard()

    def check_timing(self):
        """Whether ``host_down_timeout`` leaves room for a conductor to die
        with heartbeats it has not written (see the admin guide, "Hosts
        and liveness"): a warning when it does not. The agents' interval
        is read from this conductor's configuration, the default where it
        sets none."""
        conductor = self.conf.conductor
        needed = 2 * (self.conf.agent.heartbeat_interval
                      + conductor.heartbeat_flush_interval)
        if conductor.host_down_timeout > needed:
            return True
        LOG.warning('[conductor] host_down_timeout (%d s) is not above 2 * '
                    '([agent] heartbeat_interval + [conductor] '
                    'heartbeat_flush_interval) = %d s: hosts whose '
                    'heartbeats a dying conductor had not written yet may be '
                    'marked down', conductor.host_down_timeout, needed)
        return False

    def hello(self, context, hello):
        if not hello.hostname:
            raise exception.Invalid(reason='an agent hello needs a hostname')
        drivers = [d.as_dict() for d in hello.drivers]
        # The rows as written are the answer: no second transaction.
        try:
            row, driver_rows, was_down = db_hosts.record_hello(
                context, hello.hostname, hello.endpoint, hello.version,
                drivers, resource_provider_name=_resource_provider_name(hello),
                agent_id=_agent_id(hello),
                live_for=self.conf.conductor.host_down_timeout)
        except exception.AgentConflict as e:
            # The refused agent is told, and stops.
            # The agent ids come from the hosts: escaped, as wire values.
            LOG.warning('Refused the hello of a second agent: %s',
                        signing.loggable(str(e), AGENT_CONFLICT_LOG_LIMIT))
            raise
        LOG.info('Agent on host %s said hello with drivers %s',
                 hello.hostname, ', '.join(
                     '%s (%s)' % (d['name'], d['status']) for d in drivers))
        host = _host_object(row, driver_rows)
        if was_down:
            self._came_back(context, host)
        return host

    def heartbeat(self, context, hostname):
        """Note that ``hostname`` was heard; written by the next
        ``flush_heartbeats`` (at once with a flush interval of 0)."""
        metrics.HEARTBEATS.labels('accepted').inc()
        self.heard.add(hostname, timeutils.utcnow())
        if not self.conf.conductor.heartbeat_flush_interval:
            self.flush_heartbeats(context)

    def heard_at(self, hostname, sent):
        """A heartbeat of the heartbeat channel: ``hostname`` was heard
        when it signed it (``sent``, seconds since the epoch), or now if
        that is later (a clock ahead of ours): a heartbeat replayed later
        never makes the host look heard after it sent it."""
        metrics.HEARTBEATS.labels('accepted').inc()
        now = timeutils.utcnow()
        signed = datetime.datetime.fromtimestamp(
            sent, datetime.timezone.utc).replace(tzinfo=None)
        self.heard.add(hostname, min(now, signed))
        if not self.conf.conductor.heartbeat_flush_interval:
            self.flush_heartbeats()

    def flush_heartbeats(self, context=None):
        """Write the heartbeats heard since the last flush: one UPDATE
        for the hosts that are up (per 1,000 of them), then each of the
        others as the state change it is. Heartbeats that could not be
        written (the database is down) are kept for the next flush."""
        heard = self.heard.take()
        if not heard:
            return
        context = context or cyborg_context.get_admin_context()
        try:
            others = db_hosts.record_heartbeats(context, heard)
        except Exception:
            self.heard.put_back(heard)
            raise
        for hostname in others:
            try:
                self._heartbeat_changes(context, hostname,
                                        heard[hostname])
            except Exception:
                LOG.warning('The heartbeat of host %s could not be '
                            'recorded; trying again at the next flush',
                            hostname, exc_info=True)
                self.heard.put_back({hostname: heard[hostname]})

    def _heartbeat_changes(self, context, hostname, when=None):
        """A heartbeat of a host that is not up (heard at ``when``): it
        comes back, or we do not know it."""
        try:
            before = db_hosts.record_heartbeat(context, hostname, when)
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

    def in_grace(self, timeout):
        """Whether hosts are spared being marked down: for ``timeout``
        seconds after this conductor finds the database answering again
        after it was down. During the outage no heartbeat could be
        recorded, so a silent host is not a dead one until its agent has
        had a whole timeout to be heard again."""
        outage = db_api.last_unavailable()
        now = time.monotonic()
        if outage is not None and outage != self._outage_seen:
            self._outage_seen = outage
            self._grace_until = now + timeout
            LOG.warning('The database was unavailable; no host is marked '
                        'down for the next %d seconds', timeout)
        return self._grace_until is not None and now < self._grace_until

    def check_hosts(self):
        context = cyborg_context.get_admin_context()
        timeout = self.conf.conductor.host_down_timeout
        # What this conductor heard is written first: it never marks
        # down a host it heard itself.
        self.flush_heartbeats(context)
        # Read first: the grace after an outage starts once the database
        # answers (this read raises DatabaseUnavailable while it does not).
        silent = db_hosts.count_silent_hosts(context, timeout)
        if self.in_grace(timeout) or not silent:
            return
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
