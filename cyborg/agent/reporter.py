"""The agent's side of the report protocol, apart from its RPC
endpoints: what makes the agent look at its hardware, the report's hash,
the hello, the pending report and its resend, the state file.

Three things make the agent look at its hardware: its start (after the
hello), a udev event on a PCI function or mdev (:mod:`cyborg.agent.udev`,
on the real ``/sys`` only) and the periodic rescan. With udev events, the
periodic rescan runs rarely (``[agent] full_rescan_interval``); without,
every ``[agent] rescan_interval`` seconds, but it runs the drivers only
when a cheap look at sysfs (:mod:`cyborg.agent.changes`) finds a change,
or a full rescan is due. Each discovery runs all drivers and hashes the
result; a report (``report_data``) goes to the conductor only when the hash
differs from the last one the conductor accepted. The heartbeat (``[agent]
heartbeat_interval``) runs no discovery: it is a cast, then the resend of
a report the conductor has not taken yet, if there is one. The cast goes
first: a resend may wait for the conductor's answer as long as the call
timeout, and a host whose liveness waited behind it would be marked down
while alive (and its Placement inventory reserved) whenever a conductor
is slow or dies with the report. The cast goes on the conductor's
heartbeat channel (:mod:`cyborg.common.heartbeats`) when the hello's
answer names one.

The last accepted report is kept in ``[agent] state_file``
(:mod:`cyborg.agent.state`), so a restarted agent whose hardware did not
change sends nothing but its hello and heartbeats.

A report carries the hardware list too (:mod:`cyborg.objects.hardware`):
every PCI function the drivers looked at, offered or not and why; the
hash covers it, so a changed decision alone is a new report.

Every report of new content carries a sequence higher than any the agent
sent before (at least the time in microseconds, above the last one it
saved and the one the conductor's hello answer names), so that a report
the conductor gets late, after a newer one, is refused instead of
replacing it. The sequence moves only when the content does: the same
report sent again (a resend, a full report the conductor asked for)
carries the sequence it was first sent with, which the conductor holds
already when it shows the report, so that it costs no database write.

The protocol needs no RPC server and no drivers: a ``Reporter`` is given
the survey of the hardware to report and the conductor's client (a fake
in tests).
"""

import hashlib
import json
import re
import threading
import time

from oslo_log import log as logging
import oslo_messaging as messaging

from cyborg.accelerator.common import sysfs
from cyborg.agent import changes
from cyborg.agent import state as agent_state
from cyborg.agent import udev
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import stopping
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import base as objects_base
from cyborg.objects import host as host_obj
from cyborg import version

LOG = logging.getLogger(__name__)

# What a report carries, by the conductor's release: the hardware list
# and a sequence (RPC 1.6), a sequence (1.5), neither.
PLAIN, SEQUENCE, HARDWARE = range(3)
#: ``report_data``'s versions (cyborg.conductor.rpcapi), newest first,
#: with what a report of each carries.
REPORT_VERSIONS = (('1.6', HARDWARE), ('1.5', SEQUENCE), ('1.1', PLAIN))


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


def _heartbeat_topic(host):
    """The heartbeat channel the hello's answer names (Host 1.2); None
    from a conductor that reads none or is of an older release."""
    if isinstance(host, host_obj.Host) and host.obj_attr_is_set(
            'heartbeat_topic'):
        return host.heartbeat_topic or None
    return None


def _last_sent(state):
    """(hash, sequence) of the last report sent, as the state file
    ``state`` (or None) says: the accepted report's, when no report was
    sent after it. None when unsure: reports sent after the one the file
    names may still be on their way."""
    if (state is None or state.trusted_hash is None
            or state.report_seq is None):
        return None
    return state.trusted_hash, state.report_seq


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


def _unsupported_version(error):
    """Whether ``error`` says the conductor has no such RPC version:
    oslo.messaging's UnsupportedVersion, as the in-process transport
    raises it, or a RemoteError of it, as a broker brings it (its module
    is not among the exceptions rebuilt)."""
    return (isinstance(error, messaging.UnsupportedVersion)
            or getattr(error, 'exc_type', None) == 'UnsupportedVersion')


def _backported(error, hardware):
    """``hardware`` (HardwareFunctions) as primitives of the version the
    conductor that answered ``error`` knows, when it refused theirs as
    too new; else None."""
    supported = _supported_version(error, hardware[0]) if hardware else None
    if supported is None:
        return None
    LOG.info('The conductor knows HardwareFunction %s only; sending the '
             'hardware list as that version', supported)
    return [f.obj_to_primitive(target_version=supported) for f in hardware]


class Reporter:
    """One agent's reports to the conductor.

    ``survey()`` returns ``(devices, hardware)``: what the drivers offer
    and every PCI function they looked at. ``driver_statuses()`` returns
    the drivers' HostDriver statuses the hello carries. ``conductor`` is
    the conductor's RPC client, built on first use when not given.

    The hello says who this agent is (``agent_id``); a conductor refuses
    it while another live agent holds the host (two agents with one
    ``[DEFAULT] host``). The agent then says so in one line, once, and
    calls ``on_refused`` (the daemon stops); without one it keeps saying
    hello, silently, until the other is gone.
    """

    def __init__(self, host, conf, survey, driver_statuses,
                 conductor=None, on_refused=None):
        self.host = host
        self.conf = conf
        self.agent_id = host_obj.new_agent_id(conf.agent.state_file)
        #: Why the conductor refused our hello (None: it did not).
        self.refused = None
        self._on_refused = on_refused
        self._survey = survey
        self._driver_statuses = driver_statuses
        self._conductor = conductor
        self._registered = threading.Event()
        self._lock = threading.Lock()
        self._report_lock = threading.Lock()
        self._watcher = None
        self.changes = changes.ChangeCheck(
            lambda: sysfs.fingerprint(conf.agent.sysfs_root),
            conf.agent.full_rescan_interval)
        # (hash, devices) of a report the conductor has not accepted yet.
        self._pending = None
        self._state = agent_state.load(conf.agent.state_file, host,
                                       report_hash)
        # The hash of the last report the conductor accepted.
        self.accepted_hash = self._state and self._state.trusted_hash
        # The sequence of the last report sent (or the conductor applied).
        self._seq = (self._state and self._state.report_seq) or 0
        # (hash, sequence) of the last report sent: sent again, it keeps
        # its sequence.
        self._sent = _last_sent(self._state)
        # Where heartbeats go, as the hello's answer says (None: RPC).
        self._heartbeat_topic = None

    @property
    def conductor(self):
        # Built on first use: the transport exists only once the service
        # has started (in the worker process).
        if self._conductor is None:
            self._conductor = conductor_rpcapi.ConductorAPI()
        return self._conductor

    @property
    def registered(self):
        return self._registered.is_set()

    def start(self):
        """Watch udev events (on the real ``/sys`` only)."""
        self._watcher = udev.start(self.conf.agent.sysfs_root, self.rescan)
        if self._watcher is None and not self.conf.agent.rescan_interval:
            LOG.warning('Neither udev events nor a periodic rescan: '
                        'hardware changes are found only when the '
                        'conductor asks for a discovery or the agent '
                        'restarts')

    def stop(self):
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
        udev events announce hot-plugs, so with them (known once start
        ran) a full rescan now and then is enough."""
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
        self.rescan()

    def survey(self):
        """``(devices, hardware)`` as the drivers see them now."""
        self.changes.discovering()
        return self._survey()

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
        report what it misses); once it has us, a heartbeat, then the
        resend of a report it has not taken yet. The heartbeat never
        waits for a call (see the module's docstring). No discovery
        unless we just said hello."""
        context = cyborg_context.get_admin_context()
        if not self._registered.is_set():
            if self.hello(context):
                self.report(context)
            return
        self._heartbeat(context)
        self._resend(context)

    def _heartbeat(self, context):
        """One heartbeat: on the conductor's heartbeat channel when its
        hello answer named one, else (or should that fail) by RPC."""
        topic = self._heartbeat_topic
        if topic is not None:
            try:
                self.conductor.agent_heartbeat(context, self.host,
                                               topic=topic)
                return
            except messaging.MessagingException as e:
                LOG.warning('The heartbeat channel %s failed (%s); sending '
                            'the heartbeat by RPC', topic, e)
        self.conductor.agent_heartbeat(context, self.host)

    def rescan(self):
        """Discovery, and a report only if it found something new (the
        rescan task, and what a udev event triggers)."""
        if not self._registered.is_set():
            # The hello the next heartbeat sends comes with a report.
            return
        self.report(cyborg_context.get_admin_context(), resend=False)

    def report(self, context, resend=True):
        """Discover and send the devices if they changed since the last
        accepted report, or a report sent after it is still pending (it
        may yet be applied: what the conductor accepted goes again, with
        a higher sequence); True if sent and accepted. With ``resend``
        False, a report equal to the pending one is left to the heartbeat.
        """
        with self._report_lock:
            devices, hardware = self.survey()
            if self._takes() < HARDWARE:
                hardware = None
            digest = report_hash(devices, hardware)
            if digest == self.accepted_hash and self._pending is None:
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

    def _seq_for(self, digest):
        """The sequence of a report hashed ``digest``: the one it was sent
        with last, if it was the last report sent and no newer sequence
        is known since (the hello's answer may name one); else the next
        one."""
        if self._sent is not None and self._sent == (digest, self._seq):
            return self._seq
        self._seq = next_report_seq(self._seq)
        self._sent = (digest, self._seq)
        return self._seq

    def _takes(self):
        """What a report to the conductor carries (HARDWARE, SEQUENCE or
        PLAIN): that of the newest ``report_data`` version the conductor's
        RPC client can send (``can_send_version()``, under its version
        cap; an older conductor's refusal lowers the cap until the next
        hello)."""
        for rpc_version, level in REPORT_VERSIONS:
            if self.conductor.can_send_version(rpc_version):
                return level
        return PLAIN

    def _refused_version(self, level):
        """The conductor refused ``report_data`` at ``level``: cap the
        client below it."""
        lower = [v for v, takes in REPORT_VERSIONS if takes < level]
        LOG.info('The conductor takes reports without %s only; sending '
                 'them so until we say hello again',
                 'hardware' if level == HARDWARE else 'a sequence')
        self.conductor.cap_version(lower[0])

    def _report_data(self, context, digest, devices, hardware):
        """``report_data`` with the report's sequence and hardware; a
        conductor of an older release gets what it knows (the version is
        the newest the RPC client can send, see :meth:`_takes`): the
        report without hardware (then hashed without it, as the conductor
        keeps it), or without a sequence either; one that knows an older
        HardwareFunction gets the list as that version. Returns the
        answer, the hash sent and the hardware sent (None: none)."""
        level = self._takes()
        if hardware is None:
            level = min(level, SEQUENCE)
        elif level < HARDWARE:
            digest, hardware = report_hash(devices), None
        extra = {}
        if level >= SEQUENCE:
            extra['report_seq'] = self._seq_for(digest)
        try:
            return self._report_as(context, digest, devices, hardware,
                                   extra), digest, hardware
        except (messaging.RemoteError, messaging.UnsupportedVersion) as e:
            if not _unsupported_version(e) or level == PLAIN:
                raise
        self._refused_version(level)
        return self._report_data(context, digest, devices, hardware)

    def _report_as(self, context, digest, devices, hardware, extra):
        """Send the report; a conductor that knows an older
        HardwareFunction only gets the list again as that version."""
        timeout = self._call_timeout()
        if hardware is not None:
            extra = dict(extra, hardware=hardware)
        try:
            return self.conductor.report_data(
                context, self.host, devices, digest, timeout=timeout,
                **extra)
        except messaging.RemoteError as e:
            older = _backported(e, hardware) if hardware else None
            if older is None:
                raise
        return self.conductor.report_data(
            context, self.host, devices, digest, timeout=timeout,
            **dict(extra, hardware=older))

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

    def hello(self, context, full_report=False):
        with self._lock:
            hello = host_obj.AgentHello(
                hostname=self.host, status='READY', endpoint=self.host,
                version=version.version_string(), agent_id=self.agent_id,
                drivers=self._driver_statuses(),
                resource_provider_name=(
                    self.conf.agent.resource_provider_name or None))
            try:
                host = self._say_hello(context, hello)
            except exception.AgentConflict as e:
                self._refused(e)
                return False
            except (messaging.MessagingException,
                    exception.ServiceUnavailable) as e:
                if stopping.requested():
                    # Cut short by the agent's stop: no "trying again".
                    LOG.info('Stopping: the hello is not sent (%s)', e)
                    return False
                LOG.warning('The conductor did not answer our hello (%s); '
                            'trying again in %d seconds', e,
                            self.conf.agent.heartbeat_interval)
                return False
            if full_report or not _has_reports(host):
                # A conductor that asks, or lost track of us (a new
                # database), gets a full report.
                self.accepted_hash = None
            self._seq = max(self._seq, _applied_seq(host) or 0)
            # This conductor may be newer than the one that lowered the
            # cap: its own version again.
            self.conductor.cap_version(None)
            self._heartbeat_topic = _heartbeat_topic(host)
            self._registered.set()
            self.refused = None
            LOG.info('Registered with the conductor as %s (agent %s)',
                     self.host, self.agent_id)
            return True

    def _refused(self, error):
        """Another live agent holds our host: said once."""
        if self.refused is None:
            LOG.error('The conductor refused this agent: %s', error)
            self.refused = str(error)
            if self._on_refused is not None:
                self._on_refused()

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

    def reregister(self, context):
        """The conductor asks us to register again: it gets a full
        report."""
        self._registered.clear()
        if self.hello(context, full_report=True):
            self.report(context)
