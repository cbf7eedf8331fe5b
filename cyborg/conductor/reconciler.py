"""The keyed diff and the reconciler of one host's report.

``keyed_diff`` matches old and new items by key (added, removed,
changed, unchanged); ``HostReconciler`` applies one report of one host
with it at every level, inside the caller's writer transaction
(``cyborg.conductor.reporting.reconcile``): devices by control path id,
deployables by name (host-wide, so a deployable may move between
devices), attributes by key, attach handles by ``attach_info``. Only rows
that differ are written (through ``cyborg.db.devices`` and
``cyborg.db.rows``), and what is in use is never deleted: see
``cyborg.conductor.reporting`` for the whole report path.
"""

import collections

from oslo_log import log as logging

from cyborg.common import exception
from cyborg.conductor import placement_sync
from cyborg.db import devices as db_devices
from cyborg.db import rows as db_rows
from cyborg.objects import notification

LOG = logging.getLogger(__name__)

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
            db_rows.update_changed(
                node.cpid, {'cpid_type': values.pop('cpid_type')})
            db_rows.update_changed(node.device, values)
            self.counts['devices_changed'] += 1
            self._changed.add(_cpid_info(device))
        for node, device in diff.changed + diff.unchanged:
            places[_cpid_info(device)] = _Place(node.device.id, node.cpid.id)
        places.update(self._add_devices(diff.added))
        return places

    def _add_devices(self, devices):
        new = []
        for device in devices:
            values = _device_values(device)
            cpid_type = values.pop('cpid_type')
            new.append((values, cpid_type, _cpid_info(device)))
        cpids = db_devices.add_devices(self.context, self.hostname,
                                       self.new_status, new)
        self.counts['devices_added'] += len(cpids)
        return {cpid.cpid_info: _Place(cpid.device_id, cpid.id)
                for cpid in cpids}

    def _remove_devices(self, nodes, kept_deployables):
        keep = {node.device_node.device.id for node in kept_deployables}
        self._kept_devices = keep
        gone = [n for n in nodes if n.device.id not in keep]
        db_devices.delete_devices(self.context, gone)
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
        db_devices.delete_attach_handles(
            self.context, [h.id for n in gone for h in n.handles])
        db_devices.delete_attributes(
            self.context, [a.id for n in gone for a in n.attributes])
        db_devices.release_accelerators(self.context,
                                        [n.row.id for n in gone])
        db_devices.delete_deployables(self.context,
                                      [n.row.id for n in gone])
        self.counts['deployables_removed'] += len(gone)
        self.counts['kept_in_use'] += len(kept)
        return kept

    def _update_deployable(self, node, place, deployable, handle_diff):
        """Apply one deployable's changes; whether there were any."""
        before = sum(self.counts.values())
        if db_rows.update_changed(node.row, {
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
            db_rows.update_changed(row, _attribute_values(attribute))
        db_devices.delete_attributes(self.context,
                                     [a.id for a in diff.removed])
        db_devices.add_attributes(self.context, [
            (node.row.id, a.key, a.value) for a in diff.added])
        self.counts['attributes_changed'] += (
            len(diff.changed) + len(diff.removed) + len(diff.added))

    def _handle_diff(self, node, deployable):
        return keyed_diff(node.handles,
                          _get(deployable, 'attach_handle_list', []),
                          lambda h: h.attach_info, lambda h: h.attach_info)

    def _apply_handles(self, node, place, diff):
        for row, handle in diff.changed + diff.unchanged:
            db_rows.update_changed(row, dict(_handle_values(handle),
                                             cpid_id=place.cpid_id))
        gone = [h for h in diff.removed if not self._handle_in_use(h)]
        kept = [h for h in diff.removed if self._handle_in_use(h)]
        if kept:
            LOG.warning('%d attach handles of deployable %s are no longer '
                        'reported but are in use; they are kept',
                        len(kept), node.row.name)
            self.counts['handles_kept'] += len(kept)
        # A kept handle follows its deployable to the device it is on now:
        # the control path id of a device that went may not outlive it.
        for row in kept:
            db_rows.update_changed(row, {'cpid_id': place.cpid_id})
        db_devices.delete_attach_handles(self.context,
                                         [h.id for h in gone])
        db_devices.add_attach_handles(self.context, [
            _new_handle(node.row.id, place, h) for h in diff.added])
        self.counts['handles_changed'] += len(gone) + len(diff.added)

    def _add_deployables(self, pairs, places):
        ids = db_devices.add_deployables(self.context, [{
            'name': dep.name, 'num_accelerators': dep.num_accelerators,
            'device_id': places[key].device_id,
            'driver_name': _get(dep, 'driver_name'),
            'rp_uuid': placement_sync.provider_uuid(dep.name)}
            for key, dep in pairs])
        attributes, handles = [], []
        for deployable_id, (key, dep) in zip(ids, pairs, strict=True):
            attributes += [(deployable_id, a.key, a.value)
                           for a in _get(dep, 'attribute_list', [])]
            handles += [_new_handle(deployable_id, places[key], h)
                        for h in _get(dep, 'attach_handle_list', [])]
        db_devices.add_attributes(self.context, attributes)
        db_devices.add_attach_handles(self.context, handles)
        self.counts['deployables_added'] += len(ids)
        self._changed.update(key for key, _dep in pairs)


def _new_handle(deployable_id, place, handle):
    """An attach handle to add, as ``db_devices.add_attach_handles``
    takes it."""
    return (deployable_id, place.cpid_id, handle.attach_type,
            handle.attach_info)
