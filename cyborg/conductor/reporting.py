"""An agent's report of its host's devices, reconciled with the database
and then with Placement.

The agent sends a report (a list of DriverDevice) with a content hash
only when its content changed. The conductor:

1. compares the hash with ``hosts.report_hash``: equal means the database
   and Placement already show this report, and nothing is written or
   called;
2. otherwise applies the report in ONE writer transaction, with one
   generic keyed diff (``keyed_diff``) at every level: devices by control
   path id (``cpid_info``), deployables by name (host-wide, so a
   deployable may move between devices), attributes by key, attach
   handles by ``attach_info``. Only rows that differ are written. The
   transaction also clears ``report_hash`` and bumps
   ``report_generation``: the host now needs a Placement sync;
3. syncs Placement after the commit (``placement_sync``) and only then
   stores the hash. If Placement fails, the database stands, the hash
   stays empty and the agent, not having its hash accepted, sends the
   report again: the next attempt finds nothing to change in the database
   and catches Placement up.

Stub devices in a report are ignored. Something in use is never deleted:
an attach handle that is ``in_use`` or referenced by an ARQ is kept, and
so is a deployable (with its attributes and handles) that an ARQ
references or that has such a handle, and the device holding it. They are
kept (logged) until a later report, after their release, removes them:
such a report is not recorded as accepted (the host's hash stays empty),
and releasing an ARQ on the host asks its agent for a full report.
``in_use`` itself is the conductor's to manage and is not taken from
reports.
"""

import collections

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as sdk_exceptions
from oslo_log import log as logging

from cyborg.common import coalesce
from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import notifications
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db import devices as db_devices
from cyborg.db import hosts as db_hosts
from cyborg.db import models
from cyborg.objects import notification

LOG = logging.getLogger(__name__)

# Placement down, unreachable or refusing: the sync is retried later.
SYNC_ERRORS = (exception.PlacementError, ks_exceptions.ClientException,
               sdk_exceptions.SDKException)

Diff = collections.namedtuple('Diff', 'added removed changed unchanged')

# Device notifications: ``cyborg.device.<action>``.
ADDED, REMOVED, CHANGED = 'added', 'removed', 'changed'


def keyed_diff(old, new, old_key, new_key, differs=None):
    """Match ``old`` and ``new`` items by key.

    Returns a Diff: ``added`` new items without an old one, ``removed``
    old items without a new one, and the matched ``(old, new)`` pairs
    split into ``changed`` (``differs(old, new)`` is true) and
    ``unchanged``. A key twice in ``new`` is an invalid report.
    """
    old_by_key = {old_key(item): item for item in old}
    added, changed, unchanged, seen = [], [], [], set()
    for item in new:
        key = new_key(item)
        if key in seen:
            raise exception.Invalid(reason='%r appears twice in the report'
                                    % (key,))
        seen.add(key)
        match = old_by_key.get(key)
        if match is None:
            added.append(item)
        elif differs is not None and differs(match, item):
            changed.append((match, item))
        else:
            unchanged.append((match, item))
    removed = [item for key, item in old_by_key.items() if key not in seen]
    return Diff(added, removed, changed, unchanged)


def _get(obj, name, default=None):
    return getattr(obj, name) if obj.obj_attr_is_set(name) else default


def _differs(values_of):
    def differs(row, item):
        return any(getattr(row, key) != value
                   for key, value in values_of(item).items())
    return differs


def _device_values(device):
    return {'type': device.type, 'vendor': device.vendor,
            'model': device.model,
            'std_board_info': _get(device, 'std_board_info'),
            'vendor_board_info': _get(device, 'vendor_board_info'),
            'cpid_type': device.controlpath_id.cpid_type}


def _attribute_values(attribute):
    return {'value': attribute.value}


def _handle_values(handle):
    return {'attach_type': handle.attach_type}


def _device_differs(node, device):
    values = _device_values(device)
    if node.cpid.cpid_type != values.pop('cpid_type'):
        return True
    return any(getattr(node.device, key) != value
               for key, value in values.items())


def _cpid_info(device):
    return device.controlpath_id.cpid_info


def _event(hostname, device, deployable_names):
    return notification.DeviceEventPayload(
        hostname=hostname, type=device.type, vendor=device.vendor,
        model=device.model, cpid_type=device.controlpath_id.cpid_type,
        cpid_info=_cpid_info(device), deployables=deployable_names)


class _Place:
    """Where a reported deployable lives: its device and control path."""

    def __init__(self, device_id, cpid_id):
        self.device_id = device_id
        self.cpid_id = cpid_id


class HostReconciler:
    """Applies one report of one host inside the caller's transaction."""

    def __init__(self, context, hostname, new_status='enabled'):
        self.context = context
        self.hostname = hostname
        #: The status of devices seen for the first time.
        self.new_status = new_status
        self.counts = collections.Counter()
        # {action: [DeviceEventPayload]}, notified after the commit; the
        # control path ids of devices changed in any way; devices kept.
        self.events = {ADDED: [], REMOVED: [], CHANGED: []}
        self._changed = set()
        self._kept_devices = set()
        self._arq_deployables = set()
        self._arq_handles = set()

    def apply(self, devices):
        tree = db_devices.get_host_tree(self.context, self.hostname)
        devices = [d for d in devices if not _get(d, 'stub', False)]
        device_diff = keyed_diff(tree, devices, lambda n: n.cpid.cpid_info,
                                 _cpid_info, _device_differs)
        places = self._apply_devices(device_diff)
        old = [dep for node in tree for dep in node.deployables]
        new = [(_cpid_info(d), dep) for d in devices
               for dep in _get(d, 'deployable_list', [])]
        diff = keyed_diff(old, new, lambda n: n.row.name, lambda p: p[1].name)
        common = diff.changed + diff.unchanged
        handle_diffs = [self._handle_diff(node, dep)
                        for node, (_key, dep) in common]
        self._load_arq_references(diff.removed, handle_diffs)
        kept = self._remove_deployables(diff.removed)
        for (node, (key, dep)), handles in zip(common, handle_diffs,
                                               strict=True):
            if self._update_deployable(node, places[key], dep, handles):
                self._changed.add(key)
        self._add_deployables(diff.added, places)
        self._remove_devices(device_diff.removed, kept)
        self._record_events(device_diff, devices)
        return self.counts

    def _record_events(self, device_diff, devices):
        """The devices added, removed and changed (themselves, or the
        deployables, attributes or attach handles under them)."""
        names = collections.defaultdict(list)
        for device in devices:
            names[_cpid_info(device)] = sorted(
                dep.name for dep in _get(device, 'deployable_list', []))
        added = {_cpid_info(device): device for device in device_diff.added}
        for key, device in added.items():
            self.events[ADDED].append(_event(self.hostname, device,
                                             names[key]))
        for node in device_diff.removed:
            if node.device.id in self._kept_devices:
                continue
            self.events[REMOVED].append(notification.DeviceEventPayload(
                hostname=self.hostname, type=node.device.type,
                vendor=node.device.vendor, model=node.device.model,
                cpid_type=node.cpid.cpid_type, cpid_info=node.cpid.cpid_info,
                deployables=sorted(d.row.name for d in node.deployables)))
        for device in devices:
            key = _cpid_info(device)
            if key in self._changed and key not in added:
                self.events[CHANGED].append(_event(self.hostname, device,
                                                   names[key]))

    # Devices and their control path ids

    def _apply_devices(self, diff):
        places = {}
        for node, device in diff.changed:
            values = _device_values(device)
            db_devices.update_changed(
                node.cpid, {'cpid_type': values.pop('cpid_type')})
            db_devices.update_changed(node.device, values)
            self.counts['devices_changed'] += 1
            self._changed.add(_cpid_info(device))
        for node, device in diff.changed + diff.unchanged:
            places[_cpid_info(device)] = _Place(node.device.id, node.cpid.id)
        places.update(self._add_devices(diff.added))
        return places

    def _add_devices(self, devices):
        rows = []
        for device in devices:
            values = _device_values(device)
            values.pop('cpid_type')
            rows.append(db_devices.new_row(
                models.Device, hostname=self.hostname,
                status=self.new_status,
                **values))
        db_devices.add(self.context, rows)
        cpids = [db_devices.new_row(
            models.ControlpathID, device_id=row.id,
            cpid_type=device.controlpath_id.cpid_type,
            cpid_info=_cpid_info(device))
            for row, device in zip(rows, devices, strict=True)]
        db_devices.add(self.context, cpids)
        self.counts['devices_added'] += len(rows)
        return {cpid.cpid_info: _Place(cpid.device_id, cpid.id)
                for cpid in cpids}

    def _remove_devices(self, nodes, kept_deployables):
        keep = {node.device_node.device.id for node in kept_deployables}
        self._kept_devices = keep
        gone = [n for n in nodes if n.device.id not in keep]
        db_devices.delete_ids(self.context, models.ControlpathID,
                              [n.cpid.id for n in gone])
        db_devices.delete_ids(self.context, models.Device,
                              [n.device.id for n in gone])
        self.counts['devices_removed'] += len(gone)

    # What is in use is never deleted

    def _load_arq_references(self, removed_deployables, handle_diffs):
        handle_ids = [h.id for node in removed_deployables
                      for h in node.handles]
        handle_ids += [h.id for diff in handle_diffs for h in diff.removed]
        self._arq_deployables, self._arq_handles = (
            db_devices.referenced_by_arqs(
                self.context, [n.row.id for n in removed_deployables],
                handle_ids))

    def _handle_in_use(self, handle):
        return handle.in_use or handle.id in self._arq_handles

    def _deployable_in_use(self, node):
        return (node.row.id in self._arq_deployables or
                any(self._handle_in_use(h) for h in node.handles))

    # Deployables, their attributes and attach handles

    def _remove_deployables(self, nodes):
        kept = [n for n in nodes if self._deployable_in_use(n)]
        for node in kept:
            LOG.warning('Deployable %s of host %s is no longer reported but '
                        'is in use; it is kept until released',
                        node.row.name, self.hostname)
        gone = [n for n in nodes if n not in kept]
        self._changed.update(n.device_node.cpid.cpid_info for n in gone)
        db_devices.delete_ids(self.context, models.AttachHandle,
                              [h.id for n in gone for h in n.handles])
        db_devices.delete_ids(self.context, models.Attribute,
                              [a.id for n in gone for a in n.attributes])
        db_devices.release_accelerators(self.context,
                                        [n.row.id for n in gone])
        db_devices.delete_ids(self.context, models.Deployable,
                              [n.row.id for n in gone])
        self.counts['deployables_removed'] += len(gone)
        self.counts['kept_in_use'] += len(kept)
        return kept

    def _update_deployable(self, node, place, deployable, handle_diff):
        """Apply one deployable's changes; whether there were any."""
        before = sum(self.counts.values())
        if db_devices.update_changed(node.row, {
                'num_accelerators': deployable.num_accelerators,
                'driver_name': _get(deployable, 'driver_name'),
                'device_id': place.device_id,
                'rp_uuid': placement_sync.provider_uuid(node.row.name)}):
            self.counts['deployables_changed'] += 1
        self._apply_attributes(node, _get(deployable, 'attribute_list', []))
        self._apply_handles(node, place, handle_diff)
        return sum(self.counts.values()) != before

    def _apply_attributes(self, node, attributes):
        diff = keyed_diff(node.attributes, attributes, lambda a: a.key,
                          lambda a: a.key, _differs(_attribute_values))
        for row, attribute in diff.changed:
            db_devices.update_changed(row, _attribute_values(attribute))
        db_devices.delete_ids(self.context, models.Attribute,
                              [a.id for a in diff.removed])
        db_devices.add(self.context, [
            db_devices.new_row(models.Attribute, deployable_id=node.row.id,
                               key=a.key, value=a.value)
            for a in diff.added])
        self.counts['attributes_changed'] += (
            len(diff.changed) + len(diff.removed) + len(diff.added))

    def _handle_diff(self, node, deployable):
        return keyed_diff(node.handles,
                          _get(deployable, 'attach_handle_list', []),
                          lambda h: h.attach_info, lambda h: h.attach_info)

    def _apply_handles(self, node, place, diff):
        for row, handle in diff.changed + diff.unchanged:
            db_devices.update_changed(row, dict(_handle_values(handle),
                                                cpid_id=place.cpid_id))
        gone = [h for h in diff.removed if not self._handle_in_use(h)]
        if len(gone) < len(diff.removed):
            LOG.warning('%d attach handles of deployable %s are no longer '
                        'reported but are in use; they are kept',
                        len(diff.removed) - len(gone), node.row.name)
            self.counts['handles_kept'] += len(diff.removed) - len(gone)
        db_devices.delete_ids(self.context, models.AttachHandle,
                              [h.id for h in gone])
        db_devices.add(self.context, [
            self._new_handle(node.row.id, place, h) for h in diff.added])
        self.counts['handles_changed'] += len(gone) + len(diff.added)

    def _add_deployables(self, pairs, places):
        rows = [db_devices.new_row(
            models.Deployable, name=dep.name,
            num_accelerators=dep.num_accelerators,
            device_id=places[key].device_id,
            driver_name=_get(dep, 'driver_name'),
            rp_uuid=placement_sync.provider_uuid(dep.name))
            for key, dep in pairs]
        db_devices.add(self.context, rows)
        children = []
        for row, (key, dep) in zip(rows, pairs, strict=True):
            children += [db_devices.new_row(
                models.Attribute, deployable_id=row.id, key=a.key,
                value=a.value) for a in _get(dep, 'attribute_list', [])]
            children += [self._new_handle(row.id, places[key], h)
                         for h in _get(dep, 'attach_handle_list', [])]
        db_devices.add(self.context, children)
        self.counts['deployables_added'] += len(rows)
        self._changed.update(key for key, _dep in pairs)

    @staticmethod
    def _new_handle(deployable_id, place, handle):
        return db_devices.new_row(
            models.AttachHandle, deployable_id=deployable_id,
            cpid_id=place.cpid_id, attach_type=handle.attach_type,
            attach_info=handle.attach_info, in_use=False)


Pending = collections.namedtuple(
    'Pending', 'host_id generation providers events kept compute_nodes')


@db_api.retry_on_deadlock
@db_api.writer
def reconcile(context, hostname, devices, report_hash,
              new_status='enabled'):
    """Apply a report in one transaction (new devices get
    ``new_status``). Returns the Pending Placement sync, or None when the
    host's accepted report has this hash."""
    return _reconcile(context, hostname, devices, report_hash, new_status)


@db_api.retry_on_deadlock
@db_api.writer
def reconcile_many(context, reports, new_status='enabled'):
    """Apply the reports ``[(hostname, devices, report_hash)]`` of
    different hosts in ONE transaction; their Pending syncs (or None), in
    order. Hosts are locked in name order, so two conductors applying
    overlapping batches wait for each other instead of deadlocking."""
    order = sorted(range(len(reports)), key=lambda i: reports[i][0])
    pending = [None] * len(reports)
    for index in order:
        hostname, devices, report_hash = reports[index]
        pending[index] = _reconcile(context, hostname, devices, report_hash,
                                    new_status)
    return pending


def _reconcile(context, hostname, devices, report_hash, new_status):
    host = db_devices.lock_host(context, hostname)
    if report_hash and host.report_hash == report_hash:
        return None
    reconciler = HostReconciler(context, hostname, new_status)
    counts = reconciler.apply(devices)
    generation = db_devices.start_report(context, host, report_hash)
    if +counts:
        LOG.info('Report of host %s applied: %s', hostname, ', '.join(
            '%s %d' % item for item in sorted(counts.items()) if item[1]))
    providers = placement_sync.wanted_providers(
        db_devices.get_providers(context, hostname))
    # The names to find its compute node under, from the row at hand.
    compute_nodes = placement_sync.compute_node_names(
        context, hostname, host.resource_provider_name or '')
    return Pending(host.id, generation, providers,
                   reconciler.events,
                   counts['kept_in_use'] + counts['handles_kept'],
                   compute_nodes)


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


Report = collections.namedtuple('Report',
                                'context hostname devices report_hash')

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

    def __init__(self, conf, sync=None):
        self.conf = conf
        self.sync = sync or placement_sync.PlacementSync(conf)
        self.batches = coalesce.Coalescer(self._apply_batch, MAX_BATCH)

    def report(self, context, hostname, devices, report_hash):
        """Apply a report; returns ``report_hash`` once the database and
        Placement both show it, None when Placement still has to catch
        up or a newer report of the host replaced it (the agent then
        sends its report again)."""
        outcome = self.batches.submit(
            Report(context, hostname, devices, report_hash))
        if outcome is ALONE:
            pending = reconcile(context, hostname, devices, report_hash,
                                new_device_status(self.conf))
            if pending is None:
                return report_hash
        elif isinstance(outcome, Pending):
            pending = outcome
        else:
            return outcome
        return self._sync(context, hostname, pending, report_hash)

    def _apply_batch(self, reports):
        """The outcome of each report of a batch: its accepted hash, None
        (replaced), an exception, ALONE, or the Pending sync of a report
        applied in the batch's transaction."""
        context = cyborg_context.get_admin_context()
        states = db_devices.get_report_states(
            context, [r.hostname for r in reports])
        newest = {r.hostname: index for index, r in enumerate(reports)}
        outcomes, changed = [], []
        for index, r in enumerate(reports):
            state = states.get(r.hostname)
            if state is None:
                outcomes.append(exception.HostNotFound(host=r.hostname))
            elif r.report_hash and state.report_hash == r.report_hash:
                outcomes.append(r.report_hash)
            elif newest[r.hostname] != index:
                LOG.info('A newer report of host %s came in with this one; '
                         'applying the newer', r.hostname)
                outcomes.append(None)
            else:
                outcomes.append(ALONE)
                changed.append(index)
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
            outcomes[index] = (reports[index].report_hash if one is None
                               else one)
        return outcomes

    def _sync(self, context, hostname, pending, report_hash):
        """Placement after the report's commit, then its acceptance."""
        notify_device_events(context, pending.events)
        try:
            self.sync.sync_host(hostname, pending.providers,
                                pending.compute_nodes)
        except SYNC_ERRORS as e:
            LOG.warning('Placement could not be synced for host %s; it '
                        'will be on its next report or by the periodic '
                        'retry: %s', hostname, e)
            db_hosts.set_sync_pending(context, hostname, True)
            # Part of this sync may have landed after a newer report's:
            # no report of the host counts as shown any more, so the next
            # one syncs again.
            db_hosts.forget_report(context, hostname)
            return None
        if pending.kept:
            # The database does not show this report yet: what it no
            # longer lists but is in use stays until released. The host's
            # hash stays empty, and a release on the host asks its agent
            # for the report again (Binding.reports_due), which removes
            # them then.
            current = db_devices.get_report_state(
                context, hostname).generation == pending.generation
            if current:
                LOG.info('Host %s: %d items no longer reported are in use; '
                         'its report is applied again once they are '
                         'released', hostname, pending.kept)
        else:
            current = db_devices.accept_report(
                context, pending.host_id, pending.generation, report_hash)
        if not current:
            self._catch_up(context, hostname)
            return None
        return report_hash

    def _catch_up(self, context, hostname, attempts=5):
        """A newer report of the host (on another conductor, or in another
        thread) started while we synced Placement, so our older providers
        may have landed after its. Sync again from what the database shows
        now, until no report started during the sync."""
        LOG.info('A newer report of host %s came in while Placement was '
                 'synced; syncing it again from the database', hostname)
        for _attempt in range(attempts):
            before = db_devices.get_report_state(context, hostname)
            providers = placement_sync.wanted_providers(
                db_devices.host_providers(context, hostname))
            try:
                self.sync.sync_host(hostname, providers)
            except SYNC_ERRORS as e:
                LOG.warning('Placement could not be synced for host %s; '
                            'the periodic retry will: %s', hostname, e)
                db_hosts.set_sync_pending(context, hostname, True)
                db_hosts.forget_report(context, hostname)
                return
            after = db_devices.get_report_state(context, hostname)
            if after.generation == before.generation:
                return
        # Reports keep coming; the last one's conductor catches up.
        LOG.info('Host %s keeps reporting; leaving its Placement sync to '
                 'its newest report', hostname)
