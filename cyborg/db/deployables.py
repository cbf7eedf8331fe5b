"""Deployables: the API's readers and the conductor's programming writes.

Rows are created, changed and deleted by report reconciliation
(``cyborg.conductor.reporting`` through ``cyborg.db.devices``); what an
operator changes on one deployable (its bitstream after programming) is
written here, by the conductor.
"""

import collections

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import pagination

# Columns a list may be sorted by.
SORT_KEYS = ('created_at', 'updated_at', 'name', 'num_accelerators',
             'uuid', 'device_id', 'driver_name')
DEFAULT_SORT = ('created_at', pagination.DESC)

# What programming needs to know about a deployable, in one read.
ProgramTarget = collections.namedtuple(
    'ProgramTarget', 'id uuid name driver_name bitstream_id rp_uuid '
                     'device_type hostname controlpath_ids')


def attributes_of(context, deployable_ids):
    """``{deployable id: [(key, value), ...]}`` in one query, in the
    order the attributes were added."""
    result = collections.defaultdict(list)
    if deployable_ids:
        rows = (context.session.query(models.Attribute.deployable_id,
                                      models.Attribute.key,
                                      models.Attribute.value)
                .filter(models.Attribute.deployable_id.in_(deployable_ids))
                .order_by(models.Attribute.id))
        for deployable_id, key, value in rows:
            result[deployable_id].append((key, value))
    return result


@db_api.reader
def get_all(context, name=None, page=None):
    """(deployable rows, their attributes as ``attributes_of`` gives),
    filtered by ``name`` and paged by ``page``, newest first by
    default."""
    # Plain rows, not ORM objects: a list of a thousand is read-only and
    # building the objects would cost more than the query.
    query = context.session.query(*models.Deployable.__table__.columns)
    if name is not None:
        query = query.filter(models.Deployable.name == name)
    rows = pagination.apply(query, models.Deployable, page,
                            *DEFAULT_SORT).all()
    return rows, attributes_of(context, [row.id for row in rows])


def _get_row(context, uuid):
    row = (context.session.query(models.Deployable)
           .filter(models.Deployable.uuid == uuid).first())
    if row is None:
        raise exception.DeployableNotFound(deployable=uuid)
    return row


@db_api.reader
def get_by_uuid(context, uuid):
    """(the deployable ``uuid``, its ``[(key, value)]`` attributes)."""
    row = _get_row(context, uuid)
    return row, attributes_of(context, [row.id])[row.id]


@db_api.reader
def id_of(context, uuid):
    """The integer id of deployable ``uuid``; DeployableNotFound."""
    return _get_row(context, uuid).id


@db_api.reader
def get_program_target(context, uuid):
    """The ProgramTarget of deployable ``uuid``: with its device's host
    and type and the device's control path ids as
    ``[{'cpid_type', 'cpid_info'}]``."""
    row = _get_row(context, uuid)
    device = context.session.get(models.Device, row.device_id)
    cpids = (context.session.query(models.ControlpathID)
             .filter(models.ControlpathID.device_id == row.device_id)
             .order_by(models.ControlpathID.id).all())
    return ProgramTarget(
        row.id, row.uuid, row.name, row.driver_name, row.bitstream_id,
        row.rp_uuid, device.type, device.hostname,
        [{'cpid_type': c.cpid_type, 'cpid_info': c.cpid_info}
         for c in cpids])


@db_api.retry_on_deadlock
@db_api.writer
def set_bitstream(context, deployable_id, bitstream_id):
    """Record the bitstream (Glance image) a deployable now runs."""
    count = (context.session.query(models.Deployable)
             .filter(models.Deployable.id == deployable_id)
             .update({'bitstream_id': bitstream_id},
                     synchronize_session=False))
    if not count:
        raise exception.DeployableNotFound(deployable=deployable_id)


@db_api.reader
def hostnames_of_providers(context, rp_uuids):
    """``{rp uuid: hostname of its deployable's device}``."""
    if not rp_uuids:
        return {}
    rows = (context.session.query(models.Deployable.rp_uuid,
                                  models.Device.hostname)
            .join(models.Device,
                  models.Device.id == models.Deployable.device_id)
            .filter(models.Deployable.rp_uuid.in_(list(rp_uuids))))
    return dict(rows)


ServiceRow = collections.namedtuple(
    'ServiceRow', 'id uuid name driver_name bitstream_id device_uuid '
                  'device_type device_status hostname host_status')


@db_api.reader
def services(context, hostname=None, device_type=None):
    """(ServiceRows, ``attributes_of`` them): every deployable with its
    device and host, for the service list."""
    query = (context.session.query(
        models.Deployable.id, models.Deployable.uuid, models.Deployable.name,
        models.Deployable.driver_name, models.Deployable.bitstream_id,
        models.Device.uuid, models.Device.type, models.Device.status,
        models.Device.hostname, models.Host.status)
        .join(models.Device, models.Device.id == models.Deployable.device_id)
        .outerjoin(models.Host,
                   models.Host.hostname == models.Device.hostname))
    if hostname is not None:
        query = query.filter(models.Device.hostname == hostname)
    if device_type is not None:
        query = query.filter(models.Device.type == device_type)
    rows = [ServiceRow(*row) for row in query.order_by(
        models.Device.hostname, models.Deployable.name)]
    return rows, attributes_of(context, [row.id for row in rows])
