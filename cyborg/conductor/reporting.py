"""An agent's report of its host's devices, reconciled with the database
and then with Placement.

The agent sends a report (a list of DriverDevice) with a content hash
only when its content changed, and with a sequence that grows with every
new content it sends (the same report sent again keeps its sequence).
The conductor keeps per host (``hosts``): the hash of the report its
device rows show (``report_hash``), a generation bumped by
every report that changed them (``report_generation``), the generation
Placement was last synced to (``synced_generation``) and the newest
sequence applied (``report_seq``). Then:

1. a report whose hash the rows show, with Placement synced to them, is
   answered at once: one SELECT for a whole batch of them, no write
   (only when its sequence is new, which takes an agent that sent other
   content since, a one-row UPDATE of the sequence, nothing else);
2. otherwise the report is applied in ONE writer transaction under the
   host's row lock: a report older than one already applied (a lower
   sequence: sent earlier, delivered late, perhaps through another
   conductor) is refused; one generic keyed diff (``reconciler``) runs at
   every level: devices by control path id (``cpid_info``), deployables
   by name (host-wide, so a deployable may move between devices),
   attributes by key, attach handles by ``attach_info``. Only rows that
   differ are written, and the hash and sequence are written with them,
   so the hash can never describe other rows than those;
3. Placement is synced after the commit (``placement_service``) and the
   generation it was synced to is recorded, unless a newer report changed
   the rows meanwhile (then Placement is synced again from the database).
   Only then is the report's hash returned as accepted. If Placement
   fails, the database stands, the host counts as unsynced and the agent,
   not having its hash accepted, sends the report again: the next attempt
   finds nothing to change in the database and catches Placement up (as
   does the periodic retry before it). While a report's sync of a host
   runs, another report of the host that needs one (most often the same
   report, sent again by an agent that gave up waiting for the answer) is
   answered None at once rather than syncing the host a second time
   alongside: under load, syncs slower than the agent's call timeout
   would otherwise pile up, each resend adding one, until they held
   every RPC worker of the conductor (and its agents' heartbeats waited
   behind them).

A report may carry the hardware list of its host (RPC 1.6): every
function the agent's drivers looked at, offered or not and why. Its hash
covers the list, which is written (``db.hardware``) in the transaction
that writes the hash; a list that changed alone changes no device row,
bumps no generation and calls nothing in Placement.

Stub devices in a report are ignored. Something in use is never deleted:
an attach handle that is ``in_use`` or referenced by an ARQ is kept, and
so is a deployable (with its attributes and handles) that an ARQ
references or that has such a handle, and the device holding it. They are
kept (logged) until a later report, after their release, removes them:
the rows then show no report exactly, so the host's hash stays empty, and
releasing an ARQ on the host asks its agent for a full report. ``in_use``
itself is the conductor's to manage and is not taken from reports.
"""

import collections
import threading

from oslo_log import log as logging

from cyborg.common import coalesce
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import metrics
from cyborg.common import notifications
from cyborg.conductor import placement_service
from cyborg.conductor import placement_sync
from cyborg.conductor import reconciler
from cyborg.conductor import report_checks
from cyborg.db import api as db_api
from cyborg.db import devices as db_devices
from cyborg.db import hardware as db_hardware
from cyborg.db import hosts as db_hosts

LOG = logging.getLogger(__name__)

#: A report's Placement sync, due after its commit. ``fresh``: this
#: report was the host's first to change its rows, so no sync of the
#: host was ever attempted and Placement has none of its providers.
Pending = collections.namedtuple(
    'Pending',
    'host_id generation providers events kept compute_nodes fresh',
    defaults=(False,))

#: A report settled without a Placement sync: ``answer`` is what its
#: agent gets (the report's hash when the database and Placement show it,
#: None when it must send it again).
Done = collections.namedtuple('Done', 'answer')

#: Counts of a reconciliation that are not changes.
_NOT_CHANGES = ('kept_in_use', 'handles_kept')


@db_api.retry_on_deadlock
@db_api.writer
def reconcile(context, hostname, devices, report_hash, new_status='enabled',
              report_seq=None, hardware=None):
    """Apply a report in one transaction (new devices get
    ``new_status``). Returns the Pending Placement sync, or Done."""
    return _with_providers(context, [hostname], [_reconcile(
        context, hostname, devices, report_hash, report_seq, hardware,
        new_status)])[0]


@db_api.retry_on_deadlock
@db_api.writer
def reconcile_many(context, reports, new_status='enabled'):
    """Apply the reports ``[(hostname, devices, report_hash, report_seq,
    hardware)]`` of different hosts in ONE transaction; their Pending
    syncs (or Done), in order. Hosts are locked in name order, so two
    conductors applying overlapping batches wait for each other instead
    of deadlocking."""
    order = sorted(range(len(reports)), key=lambda i: reports[i][0])
    pending = [None] * len(reports)
    for index in order:
        pending[index] = _reconcile(context, *reports[index],
                                    new_status=new_status)
    return _with_providers(context, [r[0] for r in reports], pending)


def _with_providers(context, hostnames, outcomes):
    """``outcomes`` (of the reports of ``hostnames``), each Pending sync
    with its host's providers, read once for all of them."""
    providers = db_devices.get_providers_of(context, [
        hostname for hostname, outcome in zip(hostnames, outcomes,
                                              strict=True)
        if isinstance(outcome, Pending)])
    return [outcome._replace(providers=placement_sync.wanted_providers(
        providers[hostname])) if isinstance(outcome, Pending) else outcome
        for hostname, outcome in zip(hostnames, outcomes, strict=True)]


def _reconcile(context, hostname, devices, report_hash, report_seq,
               hardware=None, new_status='enabled'):
    """Under the host's row lock: refuse a report older than one applied,
    settle one the rows show already, or apply it. The hash and sequence
    are written with the rows they describe. A Pending sync's providers
    are left for the caller to read (``_with_providers``)."""
    host = db_hosts.lock_host(context, hostname)
    state = db_hosts.report_state(host)
    if state.is_stale(report_seq):
        LOG.info('Report %s of host %s arrived after its newer report %s; '
                 'it is not applied', report_seq, hostname, state.report_seq)
        return Done(None)
    if report_hash and host.report_hash == report_hash:
        db_hosts.record_report(host, report_hash, report_seq, False)
        if state.shows(report_hash):
            return Done(report_hash)
        # The rows show it; Placement may not.
        return _pending(context, host, {}, 0, False)
    if host.adopted:
        return _confirm_adopted(context, host, devices, report_hash,
                                report_seq, hardware, new_status)
    host_reconciler = reconciler.HostReconciler(context, hostname,
                                                new_status)
    counts = host_reconciler.apply(devices)
    if hardware is not None and db_hardware.replace(context, host.id,
                                                    hardware):
        LOG.info('Host %s: its hardware list changed', hostname)
    kept = sum(counts[key] for key in _NOT_CHANGES)
    changed = sum(counts.values()) > kept
    # Rows kept in use do not show the report: no hash for them.
    db_hosts.record_report(host, None if kept else report_hash,
                             report_seq, changed)
    if changed:
        LOG.info('Report of host %s applied: %s', hostname, ', '.join(
            '%s %d' % item for item in sorted(counts.items()) if item[1]))
    elif state.synced_generation == host.report_generation:
        return Done(report_hash)
    # Generation 0: no report ever changed the host's rows, so no sync
    # of the host was ever attempted (each sync follows such a report;
    # a host without rows has nothing to create in Placement).
    return _pending(context, host, host_reconciler.events, kept,
                    changed and not state.generation)


def _confirm_adopted(context, host, devices, report_hash, report_seq,
                     hardware, new_status):
    """The first report of a host adopted from upstream Cyborg: applied
    when it changes nothing, which confirms the host (Placement, synced
    by upstream, is left alone). One that would change the adopted rows
    is not applied: what it would change is logged, the rows and
    Placement stay as upstream left them, and the agent, its report not
    accepted, sends it again until ``cyborg-dbsync adopt_accept`` lets
    it through."""
    savepoint = context.session.begin_nested()
    counts = reconciler.HostReconciler(context, host.hostname,
                                       new_status).apply(devices)
    if any(counts.values()):
        savepoint.rollback()
        LOG.warning(
            'Host %s, adopted from upstream Cyborg, reports its devices '
            'otherwise than upstream recorded them (%s); nothing is '
            'changed until an operator accepts it with "cyborg-dbsync '
            'adopt_accept --host %s"', host.hostname, ', '.join(
                '%s %d' % item for item in sorted(counts.items()) if item[1]),
            host.hostname)
        return Done(None)
    savepoint.commit()
    host.adopted = False
    if hardware is not None:
        db_hardware.replace(context, host.id, hardware)
    db_hosts.record_report(host, report_hash, report_seq, False)
    LOG.info('Host %s, adopted from upstream Cyborg, is confirmed by its '
             'first report', host.hostname)
    return Done(report_hash)


def _pending(context, host, events, kept, fresh):
    # The names to find its compute node under, from the row at hand.
    compute_nodes = placement_sync.compute_node_names(
        context, host.hostname, host.resource_provider_name or '')
    return Pending(host.id, host.report_generation, None, events, kept,
                   compute_nodes, fresh)


def notify_device_events(context, events):
    """``cyborg.device.added``, ``.removed`` and ``.changed``, one per
    device, once the report that made them is committed."""
    for action, payloads in events.items():
        for payload in payloads:
            notifications.emit(context, 'device.%s' % action, 'INFO',
                               payload)


#: ``[agent] new_device_state`` -> the status of a newly found device.
NEW_DEVICE_STATUS = {'ready': 'enabled', 'inactive': 'maintaining'}


def new_device_status(conf):
    return NEW_DEVICE_STATUS[conf.agent.new_device_state]


Report = collections.namedtuple(
    'Report', 'context hostname devices report_hash report_seq hardware',
    defaults=(None, None))


#: Reports applied in one transaction at most (see Reporting).
MAX_BATCH = 50

#: The outcome of a report its caller applies on its own.
ALONE = object()


class Reporting:
    """The conductor's side of ``report_data``.

    Reports from many agents at once are coalesced (group commit,
    :mod:`cyborg.common.coalesce`): the reports that arrive while a batch
    is being read and written form the next batch, which costs ONE
    SELECT for all their hashes (unchanged reports end there) and ONE
    writer transaction for all the changed ones. Several reports of one
    host in a batch: only the newest is applied. A lone changed report is
    applied by its own caller, as is each report of a batch whose
    transaction failed, so a bad report fails alone. Placement is synced
    after the commit by each report's own caller, in parallel.
    """

    def __init__(self, conf, placement=None):
        self.conf = conf
        #: The conductor's PlacementService.
        self.placement = (placement or
                          placement_service.PlacementService(conf))
        self.batches = coalesce.Coalescer(self._apply_batch, MAX_BATCH)
        # Syncs that end together are recorded in one transaction.
        self.synced = coalesce.Coalescer(self._mark_synced, MAX_BATCH)
        # {hostname: generation} of the report syncs running here.
        self._syncing = {}
        self._syncing_lock = threading.Lock()

    def report(self, context, hostname, devices, report_hash,
               report_seq=None, hardware=None):
        """Apply a report; returns ``report_hash`` once the database and
        Placement both show it (or all of it but what is kept in use),
        None when Placement still has to catch up or a newer report of
        the host replaced it (the agent then sends its report again).
        What fails the report's schema is dropped first (``report_checks``).
        """
        metrics.REPORTS_RECEIVED.inc()
        try:
            devices = report_checks.checked(hostname, devices)
            outcome = self.batches.submit(
                Report(context, hostname, devices, report_hash, report_seq,
                       hardware))
            if outcome is ALONE:
                outcome = reconcile(context, hostname, devices, report_hash,
                                    new_device_status(self.conf),
                                    report_seq, hardware)
        except Exception:
            metrics.REPORTS.labels('failed').inc()
            raise
        metrics.REPORTS.labels(outcome_label(outcome, report_hash)).inc()
        if isinstance(outcome, Done):
            return outcome.answer
        with self._syncing_lock:
            running = self._syncing.get(hostname)
            if running is None:
                self._syncing[hostname] = outcome.generation
        if running is not None:
            return self._sync_running(context, hostname, outcome, running)
        try:
            return self._sync(context, hostname, outcome, report_hash)
        finally:
            with self._syncing_lock:
                del self._syncing[hostname]

    @staticmethod
    def _sync_running(context, hostname, pending, running):
        """A report of ``hostname`` needs a Placement sync while one of
        generation ``running`` runs here: the agent is answered None (it
        sends the report again later). Rows newer than those being synced
        leave the host pending for the periodic retry, should the running
        sync not catch up with them."""
        notify_device_events(context, pending.events)
        if pending.generation != running:
            db_hosts.set_sync_pending(context, hostname, True)
        LOG.info('Placement is being synced for host %s already; its '
                 'agent sends the report again later', hostname)
        return None

    def _apply_batch(self, reports):
        """The outcome of each report of a batch: Done, an exception,
        ALONE, or the Pending sync of a report applied in the batch's
        transaction."""
        context = cyborg_context.get_admin_context()
        states = db_hosts.get_report_states(
            context, [r.hostname for r in reports])
        newest = _newest_of_each_host(reports)
        outcomes, changed, shown = [], [], []
        for index, r in enumerate(reports):
            state = states.get(r.hostname)
            if state is None:
                outcomes.append(exception.HostNotFound(host=r.hostname))
            elif newest[r.hostname] != index:
                LOG.info('A newer report of host %s came in with this one; '
                         'applying the newer', r.hostname)
                outcomes.append(Done(None))
            elif state.shows(r.report_hash) and not state.is_stale(
                    r.report_seq):
                outcomes.append(Done(r.report_hash))
                if r.report_seq is not None and (
                        r.report_seq != state.report_seq):
                    shown.append((index, state.host_id))
            else:
                outcomes.append(ALONE)
                changed.append(index)
        self._record_seqs(context, reports, shown, outcomes)
        if len(changed) < 2:
            return outcomes
        try:
            pending = reconcile_many(
                context, [reports[i][1:] for i in changed],
                new_device_status(self.conf))
        except Exception:
            LOG.warning('%d reports could not be applied together; applying '
                        'each alone', len(changed), exc_info=True)
            return outcomes
        for index, one in zip(changed, pending, strict=True):
            outcomes[index] = one
        return outcomes

    @staticmethod
    def _mark_synced(hosts):
        return db_hosts.mark_synced_many(
            cyborg_context.get_admin_context(), hosts)

    @staticmethod
    def _record_seqs(context, reports, shown, outcomes):
        """Reports the database shows already still move their host's
        sequence on, so that an older report that arrives after them is
        refused. One whose host changed meanwhile goes the long way."""
        if not shown:
            return
        done = db_hosts.record_seqs(context, [
            (host_id, reports[index].report_hash, reports[index].report_seq)
            for index, host_id in shown])
        for (index, _host_id), recorded in zip(shown, done, strict=True):
            if not recorded:
                outcomes[index] = ALONE

    def _sync(self, context, hostname, pending, report_hash):
        """Placement after the report's commit, then its acceptance."""
        notify_device_events(context, pending.events)
        if not self.placement.sync_or_mark_pending(
                context, hostname, pending.providers, pending.compute_nodes,
                pending.fresh):
            now = db_hosts.get_report_states(context, [hostname]).get(
                hostname)
            if now is not None and now.generation != pending.generation:
                # A newer report's sync (on another conductor, say) ran
                # alongside ours, and may have deleted a provider ours
                # was writing; our older writes may have landed after
                # its, and it may record the host as synced after our
                # failure. Sync again from what the database shows now.
                self._catch_up(context, hostname)
            return None
        if not self.synced.submit((pending.host_id, pending.generation)):
            self._catch_up(context, hostname)
            return None
        if pending.kept:
            # The database does not show this report exactly: what it no
            # longer lists but is in use stays until released. The host's
            # hash stays empty, and a release on the host asks its agent
            # for the report again (Binding.reports_due), which removes
            # them then; until then the agent need not send it again.
            LOG.info('Host %s: %d items no longer reported are in use; '
                     'its report is applied again once they are released',
                     hostname, pending.kept)
        return report_hash

    def _catch_up(self, context, hostname, attempts=5):
        """A newer report of the host (on another conductor, or in another
        thread) started while we synced Placement, so our older providers
        may have landed after its. Sync again from what the database shows
        now, until no report started during the sync."""
        LOG.info('A newer report of host %s came in while Placement was '
                 'synced; syncing it again from the database', hostname)
        for _attempt in range(attempts):
            before = db_hosts.get_report_state(context, hostname)
            providers = placement_sync.wanted_providers(
                db_devices.host_providers(context, hostname))
            if not self.placement.sync_or_mark_pending(context, hostname,
                                                       providers):
                return
            if db_hosts.mark_synced(context, before.host_id,
                                      before.generation):
                return
        # Reports keep coming; the last one's conductor catches up.
        LOG.info('Host %s keeps reporting; leaving its Placement sync to '
                 'its newest report', hostname)


def outcome_label(outcome, report_hash):
    """How ``cyborg_conductor_reports_total`` counts a report's
    outcome: Done with its hash (the rows showed it: unchanged), Done
    None (older than one applied, or a newer one came with it: refused),
    or a Pending sync (the rows or Placement needed it: applied)."""
    if isinstance(outcome, Done):
        return 'unchanged' if outcome.answer == report_hash else 'refused'
    return 'applied'


def _newest_of_each_host(reports):
    """``{hostname: index}`` of each host's newest report in ``reports``:
    the one with the highest sequence, else the last to arrive."""
    newest = {}
    for index, r in enumerate(reports):
        other = newest.get(r.hostname)
        if other is None or not (
                r.report_seq is not None
                and reports[other].report_seq is not None
                and r.report_seq < reports[other].report_seq):
            newest[r.hostname] = index
    return newest
