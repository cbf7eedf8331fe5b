"""Devices of a host and everything under them: control path ids,
deployables, attributes and attach handles.

Written only by the conductor's report reconciliation
(``cyborg.conductor.reconciler``), which runs these helpers inside its
one writer transaction per host report; the helpers therefore use the
caller's ``context.session`` and open no transaction of their own. The
host's report state (hash, generation, sequence) is in ``db.hosts``;
generic row helpers are in ``db.rows``.
"""

import collections

import sqlalchemy as sa

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import rows


class DeviceNode:
    """A device row with its control path id and deployable nodes."""

    def __init__(self, device, cpid):
        self.device = device
        self.cpid = cpid
        self.deployables = []


class DeployableNode:
    """A deployable row with its attribute and attach handle rows."""

    def __init__(self, row, device_node):
        self.row = row
        self.device_node = device_node
        self.attributes = []
        self.handles = []


def get_host_tree(context, hostname):
    """The device tree of ``hostname`` in five queries (not one per row).

    Devices without a control path id are left out: they cannot be
    matched with a report.
    """
    session = context.session
    devices = session.query(models.Device).filter(
        models.Device.hostname == hostname).order_by(models.Device.id).all()
    if not devices:
        return []
    cpids = {row.device_id: row for row in rows.select_in(
        session, models.ControlpathID, 'device_id',
        [d.id for d in devices])}
    nodes = {d.id: DeviceNode(d, cpids[d.id]) for d in devices
             if d.id in cpids}
    by_id = {}
    for row in rows.select_in(session, models.Deployable, 'device_id',
                              list(nodes)):
        node = DeployableNode(row, nodes[row.device_id])
        node.device_node.deployables.append(node)
        by_id[row.id] = node
    for row in rows.select_in(session, models.Attribute, 'deployable_id',
                              list(by_id)):
        by_id[row.deployable_id].attributes.append(row)
    for row in rows.select_in(session, models.AttachHandle,
                              'deployable_id', list(by_id)):
        by_id[row.deployable_id].handles.append(row)
    return list(nodes.values())


def referenced_by_arqs(context, deployable_ids, handle_ids):
    """(deployable ids, attach handle ids) that some ARQ references; a
    deployable an attached v1 accelerator holds counts as referenced
    too."""
    arq = models.ExtendedAcceleratorRequest
    acc = models.Accelerator
    deployables, handles = set(), set()
    if deployable_ids:
        deployables.update(row[0] for row in context.session.query(
            arq.deployable_id).filter(arq.deployable_id.in_(deployable_ids)))
        deployables.update(row[0] for row in context.session.query(
            acc.deployable_id).filter(acc.deployable_id.in_(deployable_ids),
                                      acc.state == ATTACHED))
    if handle_ids:
        handles = {row[0] for row in context.session.query(
            arq.attach_handle_id).filter(
                arq.attach_handle_id.in_(handle_ids))}
    return deployables, handles


def release_accelerators(context, deployable_ids):
    """v1 accelerators on deployables about to be deleted lose them and
    become ``unavailable`` (they are kept, with their name and spec)."""
    if deployable_ids:
        context.session.query(models.Accelerator).filter(
            models.Accelerator.deployable_id.in_(deployable_ids)).update(
                {'deployable_id': None, 'unit': None, 'state': UNAVAILABLE},
                synchronize_session=False)


# Rows the reconciler adds and deletes (inside its transaction)

#: A control path id row just added.
NewControlpathID = collections.namedtuple('NewControlpathID',
                                          'id device_id cpid_info')


def add_devices(context, hostname, status, devices):
    """Insert a device and its control path id for each ``(values,
    cpid_type, cpid_info)`` of ``devices``; their control path ids
    (NewControlpathID), in order."""
    device_ids = rows.insert(context, models.Device, [
        dict(values, hostname=hostname, status=status)
        for values, _type, _info in devices])
    cpids = [{'device_id': device_id, 'cpid_type': cpid_type,
              'cpid_info': cpid_info}
             for device_id, (_values, cpid_type, cpid_info)
             in zip(device_ids, devices, strict=True)]
    ids = rows.insert(context, models.ControlpathID, cpids)
    return [NewControlpathID(cpid_id, cpid['device_id'], cpid['cpid_info'])
            for cpid_id, cpid in zip(ids, cpids, strict=True)]


def delete_devices(context, nodes):
    """Delete the devices of ``nodes`` (DeviceNode) and their control
    path ids."""
    rows.delete_ids(context, models.ControlpathID,
                    [n.cpid.id for n in nodes])
    rows.delete_ids(context, models.Device, [n.device.id for n in nodes])


def add_deployables(context, values):
    """Insert a deployable for each dict of ``values``; their ids."""
    return rows.insert(context, models.Deployable, values)


def delete_deployables(context, ids):
    rows.delete_ids(context, models.Deployable, ids)


def add_attributes(context, attributes):
    """Insert an attribute for each ``(deployable_id, key, value)``."""
    rows.insert(context, models.Attribute, [
        {'deployable_id': deployable_id, 'key': key, 'value': value}
        for deployable_id, key, value in attributes])


def delete_attributes(context, ids):
    rows.delete_ids(context, models.Attribute, ids)


def add_attach_handles(context, handles):
    """Insert an attach handle, not in use, for each ``(deployable_id,
    cpid_id, attach_type, attach_info)``."""
    rows.insert(context, models.AttachHandle, [
        {'deployable_id': deployable_id, 'cpid_id': cpid_id,
         'attach_type': attach_type, 'attach_info': attach_info,
         'in_use': False}
        for deployable_id, cpid_id, attach_type, attach_info in handles])


def delete_attach_handles(context, ids):
    rows.delete_ids(context, models.AttachHandle, ids)


DISABLED = 'maintaining'
# v1 accelerators' states (cyborg.db.accelerators) that matter here.
ATTACHED = 'attached'
UNAVAILABLE = 'unavailable'


# Core, built once: it runs after every report that changed a host.
_DEP = models.Deployable.__table__
_DEV = models.Device.__table__
_ACC = models.Accelerator.__table__
_ATTR = models.Attribute.__table__
_HOST_PROVIDERS = sa.select(
    _DEV.c.hostname, _DEP.c.id, _DEP.c.name, _DEP.c.num_accelerators,
    _DEV.c.status,
    sa.select(sa.func.count()).where(
        _ACC.c.deployable_id == _DEP.c.id, _ACC.c.state == ATTACHED)
    .scalar_subquery().label('attached')).select_from(
        _DEP.join(_DEV, _DEV.c.id == _DEP.c.device_id)).where(
    _DEV.c.hostname.in_(sa.bindparam('hostnames', expanding=True))
).order_by(_DEV.c.hostname, _DEP.c.name)
_ATTRIBUTES_OF = sa.select(
    _ATTR.c.deployable_id, _ATTR.c.key, _ATTR.c.value).where(
    _ATTR.c.deployable_id.in_(sa.bindparam('ids', expanding=True))
).order_by(_ATTR.c.id)


def get_providers(context, hostname):
    """(deployable row, {key: value}, reserved units) for every
    deployable of the host: all its units when its device is disabled,
    else one per v1 accelerator attached to it, so Placement offers
    those to no one else. The rows are plain (hostname, id, name,
    num_accelerators, ...), in name order."""
    return get_providers_of(context, [hostname])[hostname]


_IDS_PER_STATEMENT = 900


def get_providers_of(context, hostnames):
    """``{hostname: get_providers(hostname)}`` of several hosts, read in
    two statements whatever their number."""
    providers = {hostname: [] for hostname in hostnames}
    if not providers:
        return providers
    # Core does not flush the ORM's pending changes as a query would.
    context.session.flush()
    connection = context.session.connection()
    found = connection.execute(_HOST_PROVIDERS,
                               {'hostnames': list(hostnames)}).all()
    attributes = collections.defaultdict(dict)
    ids = [r.id for r in found]
    # In slices: an SQLite older than 3.32 takes 999 parameters at most.
    for start in range(0, len(ids), _IDS_PER_STATEMENT):
        for row in connection.execute(_ATTRIBUTES_OF, {
                'ids': ids[start:start + _IDS_PER_STATEMENT]}):
            attributes[row.deployable_id][row.key] = row.value
    # MySQL compares hostnames without case (nor trailing spaces): a
    # row is the host's asked for under another case, and every row is
    # the host's when one was asked for.
    asked = {hostname.casefold(): hostname for hostname in providers}
    only = next(iter(providers)) if len(providers) == 1 else None
    for row in found:
        hostname = row.hostname
        if hostname not in providers:
            hostname = asked.get(hostname.casefold(), only)
        providers[hostname].append((
            row, attributes[row.id],
            row.num_accelerators if row.status == DISABLED
            else min(row.attached, row.num_accelerators)))
    return providers


@db_api.reader
def host_providers(context, hostname):
    """``get_providers`` in a transaction of its own."""
    return get_providers(context, hostname)


@db_api.retry_on_deadlock
@db_api.writer
def set_status(context, device_uuid, status):
    """Set a device's status; returns its hostname. 404 if unknown."""
    row = context.session.query(models.Device).filter(
        models.Device.uuid == device_uuid).first()
    if row is None:
        raise exception.DeviceNotFound(device=device_uuid)
    row.status = status
    return row.hostname


# -- API readers --
# What ``/v2/devices`` reads (owned with the API, appended here to keep
# one file name per resource); reader transactions only.

DEVICE_SORT_KEYS = ('created_at', 'updated_at', 'type', 'vendor', 'model',
                    'hostname', 'status', 'uuid')


@db_api.reader
def list_for_api(context, filters=None, page=None):
    """Device rows matching ``filters`` (exact values of ``type``,
    ``vendor``, ``hostname``), paged by ``page``, newest first by
    default."""
    from cyborg.db import pagination  # only the API readers need it
    query = context.session.query(models.Device)
    for key, value in (filters or {}).items():
        query = query.filter(getattr(models.Device, key) == value)
    return pagination.apply(query, models.Device, page, 'created_at',
                            pagination.DESC).all()


@db_api.reader
def get_for_api(context, uuid):
    """The device row ``uuid``; DeviceNotFound when there is none."""
    row = (context.session.query(models.Device)
           .filter(models.Device.uuid == uuid).first())
    if row is None:
        raise exception.DeviceNotFound(device=uuid)
    return row


@db_api.reader
def users_of(context, hostname, cpid_infos):
    """Who uses the devices of ``hostname`` with these control path infos:
    ``['ARQ <uuid>', 'accelerator <name>' (attached), 'attach handle
    <uuid>']``."""
    if not cpid_infos:
        return []
    session = context.session
    deployable_ids = [row[0] for row in session.query(models.Deployable.id)
                      .join(models.Device,
                            models.Device.id == models.Deployable.device_id)
                      .join(models.ControlpathID,
                            models.ControlpathID.device_id ==
                            models.Device.id)
                      .filter(models.Device.hostname == hostname,
                              models.ControlpathID.cpid_info.in_(
                                  cpid_infos))]
    if not deployable_ids:
        return []
    arq = models.ExtendedAcceleratorRequest
    users = ['ARQ %s' % row[0] for row in session.query(arq.uuid).filter(
        arq.deployable_id.in_(deployable_ids))]
    users += ['accelerator %s' % row[0] for row in session.query(
        models.Accelerator.name).filter(
            models.Accelerator.deployable_id.in_(deployable_ids),
            models.Accelerator.state == ATTACHED)]
    users += ['attach handle %s' % row[0] for row in session.query(
        models.AttachHandle.uuid).filter(
            models.AttachHandle.deployable_id.in_(deployable_ids),
            models.AttachHandle.in_use.is_(True))]
    return sorted(users)


@db_api.reader
def setup_target(context, device_uuid):
    """``(hostname, controlpath id dict or None, driver names)`` of a
    device: what its driver's setup step needs. 404 if unknown."""
    session = context.session
    device = session.query(models.Device).filter(
        models.Device.uuid == device_uuid).first()
    if device is None:
        raise exception.DeviceNotFound(device=device_uuid)
    cpid = (session.query(models.ControlpathID)
            .filter(models.ControlpathID.device_id == device.id)
            .order_by(models.ControlpathID.id).first())
    drivers = sorted({row[0] for row in session.query(
        models.Deployable.driver_name).filter(
            models.Deployable.device_id == device.id) if row[0]})
    return (device.hostname,
            {'cpid_type': cpid.cpid_type, 'cpid_info': cpid.cpid_info}
            if cpid else None, drivers)
