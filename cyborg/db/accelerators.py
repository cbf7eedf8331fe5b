"""Accelerators of the v1 API: named views of deployables.

An accelerator row claims one deployable (``deployable_id``) and adds
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


def _free_deployables(context):
    """Deployables no accelerator claims, on enabled devices of hosts
    that are up, with no attach handle in use or referenced by an ARQ,
    oldest first."""
    handles = models.AttachHandle
    arqs = models.ExtendedAcceleratorRequest
    busy_handle = sa.exists().where(
        handles.deployable_id == _D.id,
        sa.or_(handles.in_use.is_(True),
               sa.exists().where(arqs.attach_handle_id == handles.id)))
    return (context.session.query(_D, _DEV)
            .join(_DEV, _DEV.id == _D.device_id)
            .join(models.Host, models.Host.hostname == _DEV.hostname)
            .filter(models.Host.status == 'up',
                    _DEV.status == 'enabled',
                    ~sa.exists().where(_A.deployable_id == _D.id),
                    ~sa.exists().where(arqs.deployable_id == _D.id),
                    ~busy_handle)
            .order_by(_D.id))


class _Race(Exception):
    """Another request claimed the same deployable first."""


CLAIM_ATTEMPTS = 5


def claim(context, name, uuid=None):
    """Create accelerator ``name`` in state ``provisioning`` on the first
    free deployable; returns its Claim. DuplicateAccelerator when the
    name or uuid is taken, NoFreeDeployable when nothing is free."""
    for attempt in range(1, CLAIM_ATTEMPTS + 1):
        try:
            return _claim(context, name, uuid)
        except _Race:
            if attempt == CLAIM_ATTEMPTS:
                raise exception.NoFreeDeployable(accelerator=name) from None


@db_api.retry_on_deadlock
@db_api.writer
def _claim(context, name, uuid):
    session = context.session
    taken = session.query(_A.name, _A.uuid).filter(
        sa.or_(_A.name == name, _A.uuid == uuid)).first()
    if taken is not None:
        raise exception.DuplicateAccelerator(
            accelerator=name if taken.name == name else uuid)
    free = _free_deployables(context).first()
    if free is None:
        raise exception.NoFreeDeployable(accelerator=name)
    deployable, device = free
    attributes = dict(db_deployables.attributes_of(
        context, [deployable.id])[deployable.id])
    row = _A(uuid=uuid or uuidutils.generate_uuid(), name=name,
             deployable_id=deployable.id, device_type=device.type,
             acc_type=attributes.get('rc'), state=PROVISIONING,
             remotable=0, spec_version=1)
    session.add(row)
    try:
        session.flush()
    except db_exc.DBDuplicateEntry as e:
        # Two requests at once: the unique constraints let one win.
        if 'deployable_id' in (e.columns or []):
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


def _in_use_by_arqs(context, deployable_id):
    arqs = models.ExtendedAcceleratorRequest
    return context.session.query(arqs.uuid).filter(
        arqs.deployable_id == deployable_id).first() is not None


@db_api.retry_on_deadlock
@db_api.writer
def attach(context, uuid, instance_uuid=None, host=None):
    """Attach an available accelerator to an instance or a host;
    AcceleratorBusy when it is attached or an ARQ uses its deployable.
    Returns the hostname of its device (whose inventory changes)."""
    row = context.session.query(_A).filter(_A.uuid == uuid).first()
    if row is None:
        raise exception.AcceleratorNotFound(accelerator=uuid)
    if row.deployable_id and _in_use_by_arqs(context, row.deployable_id):
        raise exception.AcceleratorBusy(
            accelerator=uuid, reason='an accelerator request uses it')
    if not _update(context, uuid, [_A.state == AVAILABLE],
                   {'state': ATTACHED, 'instance_uuid': instance_uuid,
                    'attached_host': host}):
        raise exception.AcceleratorBusy(
            accelerator=uuid, reason='it is %s' % row.state)
    return _hostname_of(context, row.deployable_id)


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


@db_api.reader
def allocation_holders(context, uuid):
    """(deployable rp uuid, uuids of ARQs on the deployable) of
    accelerator ``uuid``."""
    row = (context.session.query(_A.deployable_id, _D.rp_uuid)
           .outerjoin(_D, _D.id == _A.deployable_id)
           .filter(_A.uuid == uuid).first())
    if row is None:
        raise exception.AcceleratorNotFound(accelerator=uuid)
    arqs = models.ExtendedAcceleratorRequest
    holders = [r.uuid for r in context.session.query(arqs.uuid).filter(
        arqs.deployable_id == row.deployable_id)] if row.deployable_id else []
    return row.rp_uuid, holders
