"""Devices of a host and everything under them: control path ids,
deployables, attributes and attach handles.

Written only by the conductor's report reconciliation
(``cyborg.conductor.reporting``), which runs these helpers inside its one
writer transaction per host report; the helpers therefore use the
caller's ``context.session`` and open no transaction of their own.
"""

import collections

from oslo_utils import timeutils
from oslo_utils import uuidutils

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models


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


ReportState = collections.namedtuple('ReportState',
                                     'host_id report_hash generation')


@db_api.reader
def get_report_state(context, hostname):
    """What the conductor last accepted from ``hostname``; one SELECT."""
    row = (context.session.query(models.Host.id, models.Host.report_hash,
                                 models.Host.report_generation)
           .filter(models.Host.hostname == hostname).first())
    if row is None:
        raise exception.HostNotFound(host=hostname)
    return ReportState(*row)


@db_api.reader
def get_report_states(context, hostnames):
    """``{hostname: ReportState}`` of the known ones; one SELECT."""
    rows = (context.session.query(models.Host.hostname, models.Host.id,
                                  models.Host.report_hash,
                                  models.Host.report_generation)
            .filter(models.Host.hostname.in_(sorted(set(hostnames)))))
    return {row[0]: ReportState(*row[1:]) for row in rows}


def lock_host(context, hostname):
    """The host row, locked until the transaction ends (where supported),
    so two conductors never reconcile the same host at once."""
    row = (context.session.query(models.Host)
           .filter(models.Host.hostname == hostname)
           .with_for_update().first())
    if row is None:
        raise exception.HostNotFound(host=hostname)
    return row


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
    cpids = {row.device_id: row for row in _in(
        session, models.ControlpathID, 'device_id',
        [d.id for d in devices])}
    nodes = {d.id: DeviceNode(d, cpids[d.id]) for d in devices
             if d.id in cpids}
    by_id = {}
    for row in _in(session, models.Deployable, 'device_id', list(nodes)):
        node = DeployableNode(row, nodes[row.device_id])
        node.device_node.deployables.append(node)
        by_id[row.id] = node
    for row in _in(session, models.Attribute, 'deployable_id', list(by_id)):
        by_id[row.deployable_id].attributes.append(row)
    for row in _in(session, models.AttachHandle, 'deployable_id',
                   list(by_id)):
        by_id[row.deployable_id].handles.append(row)
    return list(nodes.values())


def _in(session, model, column, values):
    if not values:
        return []
    return (session.query(model).filter(getattr(model, column).in_(values))
            .order_by(model.id).all())


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
                {'deployable_id': None, 'state': UNAVAILABLE},
                synchronize_session=False)


def add(context, rows):
    """Insert ``rows`` now (one batched INSERT per table where possible)."""
    if rows:
        context.session.add_all(rows)
        context.session.flush()


def new_row(model_class, **values):
    return model_class(uuid=uuidutils.generate_uuid(), **values)


def delete_ids(context, model, ids):
    if ids:
        context.session.query(model).filter(model.id.in_(ids)).delete(
            synchronize_session=False)


def update_changed(row, values):
    """Set the values that differ; True if any did. An ORM row with no
    changed attribute is not written at all."""
    changed = False
    for key, value in values.items():
        if getattr(row, key) != value:
            setattr(row, key, value)
            changed = True
    return changed


def start_report(context, host, report_hash):
    """Mark ``host`` as reconciling a new report: a new generation and no
    accepted hash until Placement has it too. Returns the generation."""
    host.report_generation = (host.report_generation or 0) + 1
    host.report_hash = None
    host.last_seen_at = timeutils.utcnow()
    return host.report_generation


@db_api.retry_on_deadlock
@db_api.writer
def accept_report(context, host_id, generation, report_hash):
    """Record ``report_hash`` as fully applied (DB and Placement), unless
    a newer report of the host started meanwhile. True if recorded."""
    count = context.session.query(models.Host).filter(
        models.Host.id == host_id,
        models.Host.report_generation == generation).update(
            {'report_hash': report_hash}, synchronize_session=False)
    return bool(count)


DISABLED = 'maintaining'
# v1 accelerators' states (cyborg.db.accelerators) that matter here.
ATTACHED = 'attached'
UNAVAILABLE = 'unavailable'


def get_providers(context, hostname):
    """(deployable row, {key: value}, reserved) for every deployable of
    the host: reserved when its device is disabled or a v1 accelerator
    holds it attached, so Placement offers it to no one else."""
    session = context.session
    attached = models.Accelerator
    rows = (session.query(models.Deployable, models.Device.status,
                          attached.state)
            .join(models.Device, models.Device.id ==
                  models.Deployable.device_id)
            .outerjoin(attached,
                       attached.deployable_id == models.Deployable.id)
            .filter(models.Device.hostname == hostname)
            .order_by(models.Deployable.name).all())
    attributes = collections.defaultdict(dict)
    for attr in _in(session, models.Attribute, 'deployable_id',
                    [r.id for r, *_rest in rows]):
        attributes[attr.deployable_id][attr.key] = attr.value
    return [(row, attributes[row.id],
             status == DISABLED or state == ATTACHED)
            for row, status, state in rows]


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
