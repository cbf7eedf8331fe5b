"""Accelerators of the v1 API: named views of accelerator units.

An accelerator row claims one unit (``unit``) of a deployable
(``deployable_id``; a deployable has ``num_accelerators`` units) and adds
what the v1 API lets an operator set: its spec (``remotable`` and
``acc_capability``, versioned by ``spec_version``) and what it is
attached to (an instance or a host). Every write is a conditional UPDATE
so that two writers never silently overwrite each other: the loser sees
0 rows changed and gets a conflict.

States: ``provisioning`` (claimed, the agent is setting it up),
``available``, ``attached``, ``unavailable`` (its deployable is gone, for
example after its driver was uninstalled; an attached accelerator keeps
its deployable until detached).
"""

import collections

from oslo_db import exception as db_exc
from oslo_utils import timeutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import deployables as db_deployables
from cyborg.db import models

PROVISIONING = 'provisioning'
AVAILABLE = 'available'
ATTACHED = 'attached'
UNAVAILABLE = 'unavailable'

# An accelerator with its deployable, device and the deployable's
# attributes, as the API shows it.
View = collections.namedtuple(
    'View', 'row deployable_uuid num_accelerators device_uuid hostname '
            'device_type attributes')

# What provisioning needs: the claimed deployable's host, control path
# and driver.
Claim = collections.namedtuple(
    'Claim', 'id uuid name deployable_uuid hostname driver_name '
             'controlpath_id')

_A = models.Accelerator
_D = models.Deployable
_DEV = models.Device


def _views(context, query):
    rows = query.add_columns(_D.uuid, _D.num_accelerators, _DEV.uuid,
                             _DEV.hostname, _DEV.type).all()
    attributes = db_deployables.attributes_of(
        context, [row.deployable_id for row, *_rest in rows])
    return [View(row, dep_uuid, num, dev_uuid, hostname, dev_type,
                 attributes[row.deployable_id])
            for row, dep_uuid, num, dev_uuid, hostname, dev_type in rows]


def _query(context):
    return (context.session.query(_A)
            .outerjoin(_D, _D.id == _A.deployable_id)
            .outerjoin(_DEV, _DEV.id == _D.device_id))


@db_api.reader
def list_for_api(context):
    """Every accelerator as a View, oldest first."""
    return _views(context, _query(context).order_by(_A.id))


@db_api.reader
def get_for_api(context, uuid):
    """The View of accelerator ``uuid``; AcceleratorNotFound if none."""
    views = _views(context, _query(context).filter(_A.uuid == uuid))
    if not views:
        raise exception.AcceleratorNotFound(accelerator=uuid)
    return views[0]


# A deployable as the v1 API lists it next to the accelerators: the
# hardware an agent discovered, ``free`` of its units not provisioned nor
# used by an ARQ.
Hardware = collections.namedtuple(
    'Hardware', 'deployable device_uuid hostname device_type device_status '
                'free attributes')


def _hardware(context, query):
    used = _accelerators_on(_D.id) + _arqs_on(_D.id)
    rows = query.add_columns(_DEV.uuid, _DEV.hostname, _DEV.type,
                             _DEV.status, used).all()
    attributes = db_deployables.attributes_of(
        context, [row[0].id for row in rows])
    return [Hardware(dep, dev_uuid, hostname, dev_type, status,
                     max(dep.num_accelerators - count, 0),
                     attributes[dep.id])
            for dep, dev_uuid, hostname, dev_type, status, count in rows]


def _hardware_query(context):
    return (context.session.query(_D)
            .join(_DEV, _DEV.id == _D.device_id))


@db_api.reader
def list_hardware_for_api(context):
    """Every deployable the agents discovered, as Hardware, oldest
    first."""
    return _hardware(context, _hardware_query(context).order_by(_D.id))


@db_api.reader
def get_hardware_for_api(context, uuid):
    """The Hardware of deployable ``uuid``, or None."""
    found = _hardware(context,
                      _hardware_query(context).filter(_D.uuid == uuid))
    return found[0] if found else None


def _arqs_on(deployable_id_column):
    arqs = models.ExtendedAcceleratorRequest
    return (sa.select(sa.func.count()).where(
        arqs.deployable_id == deployable_id_column).scalar_subquery())


def _accelerators_on(deployable_id_column):
    return (sa.select(sa.func.count()).where(
        _A.deployable_id == deployable_id_column).scalar_subquery())


def _ready_deployables(context):
    """(deployable, device, units used) of enabled devices on hosts that
    are up, oldest first; a unit is used by an accelerator or an ARQ."""
    used = _accelerators_on(_D.id) + _arqs_on(_D.id)
    return (context.session.query(_D, _DEV, used)
            .join(_DEV, _DEV.id == _D.device_id)
            .join(models.Host, models.Host.hostname == _DEV.hostname)
            .filter(models.Host.status == 'up', _DEV.status == 'enabled')
            .order_by(_D.id))


def _free_unit(context):
    """(deployable, device, unit) of the first free accelerator unit, or
    None."""
    for deployable, device, used in _ready_deployables(context):
        if used >= deployable.num_accelerators:
            continue
        taken = {row.unit for row in context.session.query(_A.unit).filter(
            _A.deployable_id == deployable.id)}
        # The lowest free unit: two requests that read the same rows
        # pick the same one, and the unique constraint lets one win.
        unit = min(set(range(deployable.num_accelerators)) - taken)
        return deployable, device, unit
    return None


def _exhausted(context, name):
    """NoFreeAccelerator for ``name``, saying what the hardware has."""
    ready = _ready_deployables(context).all()
    inactive = (context.session.query(sa.func.coalesce(
        sa.func.sum(_D.num_accelerators), 0))
        .join(_DEV, _DEV.id == _D.device_id)
        .filter(_DEV.status != 'enabled').scalar())
    return exception.NoFreeAccelerator(
        accelerator=name,
        total=sum(d.num_accelerators for d, _dev, _used in ready),
        inactive=inactive)


class _Race(Exception):
    """Another request claimed the same unit first."""


CLAIM_ATTEMPTS = 5


def claim(context, name, uuid=None):
    """Create accelerator ``name`` in state ``provisioning`` on the first
    free accelerator unit; returns its Claim. DuplicateAccelerator when
    the name or uuid is taken, NoFreeAccelerator when every unit of the
    ready hardware is used."""
    for attempt in range(1, CLAIM_ATTEMPTS + 1):
        try:
            return _claim(context, name, uuid)
        except _Race:
            if attempt == CLAIM_ATTEMPTS:
                raise exception.AcceleratorClaimRace(
                    accelerator=name) from None


@db_api.retry_on_deadlock
@db_api.writer
def _claim(context, name, uuid):
    session = context.session
    taken = session.query(_A.name, _A.uuid).filter(
        sa.or_(_A.name == name, _A.uuid == uuid)).first()
    if taken is not None:
        raise exception.DuplicateAccelerator(
            accelerator=name if taken.name == name else uuid)
    if uuid and session.query(_D.id).filter(_D.uuid == uuid).first():
        # The list shows that deployable under its uuid.
        raise exception.DuplicateAccelerator(accelerator=uuid)
    free = _free_unit(context)
    if free is None:
        raise _exhausted(context, name)
    deployable, device, unit = free
    attributes = dict(db_deployables.attributes_of(
        context, [deployable.id])[deployable.id])
    row = _A(uuid=uuid or uuidutils.generate_uuid(), name=name,
             deployable_id=deployable.id, unit=unit, device_type=device.type,
             acc_type=attributes.get('rc'), state=PROVISIONING,
             remotable=0, spec_version=1)
    session.add(row)
    try:
        session.flush()
    except db_exc.DBDuplicateEntry as e:
        # Two requests at once: the unique constraints let one win.
        if 'unit' in (e.columns or []) or 'deployable_id' in (
                e.columns or []):
            raise _Race() from e
        raise exception.DuplicateAccelerator(accelerator=name) from e
    cpid = (session.query(models.ControlpathID)
            .filter(models.ControlpathID.device_id == device.id)
            .order_by(models.ControlpathID.id).first())
    return Claim(row.id, row.uuid, row.name, deployable.uuid,
                 device.hostname, deployable.driver_name,
                 {'cpid_type': cpid.cpid_type, 'cpid_info': cpid.cpid_info}
                 if cpid else None)


def _update(context, uuid, conditions, values):
    """UPDATE accelerator ``uuid`` where ``conditions`` hold; True if a
    row changed, False if it exists but a condition failed."""
    query = context.session.query(_A).filter(_A.uuid == uuid, *conditions)
    values = dict(values, updated_at=timeutils.utcnow())
    if query.update(values, synchronize_session=False):
        return True
    if not context.session.query(_A.id).filter(_A.uuid == uuid).first():
        raise exception.AcceleratorNotFound(accelerator=uuid)
    return False


@db_api.retry_on_deadlock
@db_api.writer
def finish_provisioning(context, uuid):
    """``provisioning`` -> ``available``; False when the claim is no
    longer provisioning (it expired meanwhile)."""
    try:
        return _update(context, uuid, [_A.state == PROVISIONING],
                       {'state': AVAILABLE})
    except exception.AcceleratorNotFound:
        return False


@db_api.retry_on_deadlock
@db_api.writer
def delete(context, uuid):
    context.session.query(_A).filter(_A.uuid == uuid).delete(
        synchronize_session=False)


@db_api.retry_on_deadlock
@db_api.writer
def delete_stale_provisioning(context, older_than):
    """Drop claims whose provisioning never finished (the conductor
    doing it died); returns their names."""
    rows = (context.session.query(_A.id, _A.name)
            .filter(_A.state == PROVISIONING,
                    sa.func.coalesce(_A.updated_at, _A.created_at) <
                    older_than)
            .all())
    if rows:
        context.session.query(_A).filter(
            _A.id.in_([r.id for r in rows])).delete(
                synchronize_session=False)
    return [r.name for r in rows]


@db_api.retry_on_deadlock
@db_api.writer
def set_spec(context, uuid, expected_version, remotable, acc_capability):
    """Replace the spec if it is still at ``expected_version``; returns
    the new version, SpecConflict when another writer came first."""
    if not _update(context, uuid, [_A.spec_version == expected_version],
                   {'remotable': remotable, 'acc_capability': acc_capability,
                    'spec_version': _A.spec_version + 1}):
        raise exception.SpecConflict(accelerator=uuid,
                                     version=expected_version)
    return expected_version + 1


@db_api.retry_on_deadlock
@db_api.writer
def attach(context, uuid, instance_uuid=None, host=None):
    """Attach an available accelerator to an instance, a host, or (with
    neither) the host its device is on; AcceleratorBusy when it is not
    available. Returns the hostname of its device (whose inventory
    changes)."""
    row = context.session.query(_A).filter(_A.uuid == uuid).first()
    if row is None:
        raise exception.AcceleratorNotFound(accelerator=uuid)
    hostname = _hostname_of(context, row.deployable_id)
    if instance_uuid is None and host is None:
        host = hostname
    if not _update(context, uuid, [_A.state == AVAILABLE],
                   {'state': ATTACHED, 'instance_uuid': instance_uuid,
                    'attached_host': host}):
        raise exception.AcceleratorBusy(
            accelerator=uuid, reason='it is %s' % row.state)
    return hostname


@db_api.retry_on_deadlock
@db_api.writer
def detach(context, uuid):
    """Detach an attached accelerator; returns its device's hostname.
    AcceleratorNotAttached when it is not attached."""
    row = context.session.query(_A).filter(_A.uuid == uuid).first()
    if row is None:
        raise exception.AcceleratorNotFound(accelerator=uuid)
    if not _update(context, uuid, [_A.state == ATTACHED],
                   {'state': AVAILABLE, 'instance_uuid': None,
                    'attached_host': None}):
        raise exception.AcceleratorNotAttached(accelerator=uuid)
    return _hostname_of(context, row.deployable_id)


def _hostname_of(context, deployable_id):
    row = (context.session.query(_DEV.hostname)
           .join(_D, _D.device_id == _DEV.id)
           .filter(_D.id == deployable_id).first())
    return row.hostname if row else None


# Who else uses the deployable of an accelerator, for attach and detach.
Holders = collections.namedtuple(
    'Holders', 'rp_uuid total attached arqs')


@db_api.reader
def allocation_holders(context, uuid):
    """The Holders of accelerator ``uuid``'s deployable: its provider,
    its units, how many of its accelerators are attached, and the uuids
    of the ARQs on it."""
    row = (context.session.query(_A.deployable_id, _D.rp_uuid,
                                 _D.num_accelerators)
           .outerjoin(_D, _D.id == _A.deployable_id)
           .filter(_A.uuid == uuid).first())
    if row is None:
        raise exception.AcceleratorNotFound(accelerator=uuid)
    if row.deployable_id is None:
        return Holders(None, 0, 0, [])
    arqs = models.ExtendedAcceleratorRequest
    holders = [r.uuid for r in context.session.query(arqs.uuid).filter(
        arqs.deployable_id == row.deployable_id)]
    attached = context.session.query(sa.func.count(_A.id)).filter(
        _A.deployable_id == row.deployable_id, _A.state == ATTACHED).scalar()
    return Holders(row.rp_uuid, row.num_accelerators, attached, holders)
