"""Accelerator requests (ARQs): the API's readers and the conductor's
writers.

Reads join the device profile and the attach handle in one query. Every
state change is a compare-and-swap on the ``state`` column with the
sources ``cyborg.common.states`` allows, so concurrent binds of one ARQ
have exactly one winner; attach handles are claimed with a conditional
UPDATE, so two ARQs never get the same one.
"""

import collections

from oslo_serialization import jsonutils
from oslo_utils import timeutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.common import exception
from cyborg.common import profile_groups
from cyborg.common import states
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import pagination

SORT_KEYS = ('created_at', 'updated_at', 'state', 'instance_uuid', 'uuid')

ARQ = models.ExtendedAcceleratorRequest
DP = models.DeviceProfile
AH = models.AttachHandle

# An ARQ as the API shows it and the conductor works on it.
ARQView = collections.namedtuple(
    'ARQView', 'id uuid state project_id device_profile_name '
               'device_profile_group_id group hostname device_rp_uuid '
               'instance_uuid attach_handle_id attach_handle_uuid '
               'attach_handle_type attach_handle_info deployable_id '
               'nova_notified bind_conductor bind_started_at created_at '
               'updated_at')

_COLUMNS = (ARQ.id, ARQ.uuid, ARQ.state, ARQ.project_id, DP.name,
            ARQ.device_profile_group_id, DP.profile_json, ARQ.hostname,
            ARQ.device_rp_uuid, ARQ.instance_uuid, ARQ.attach_handle_id,
            AH.uuid, AH.attach_type, AH.attach_info, ARQ.deployable_id,
            ARQ.nova_notified, ARQ.bind_conductor, ARQ.bind_started_at,
            ARQ.created_at, ARQ.updated_at)


def _view(row):
    values = list(row)
    groups = jsonutils.loads(values[6]).get('groups', [])
    index = values[5]
    values[6] = groups[index] if 0 <= index < len(groups) else {}
    values[13] = jsonutils.loads(values[13]) if values[13] else {}
    return ARQView(*values)


def _query(context, project_id=None):
    query = (context.session.query(*_COLUMNS)
             .join(DP, DP.id == ARQ.device_profile_id)
             .outerjoin(AH, AH.id == ARQ.attach_handle_id))
    if project_id is not None:
        query = query.filter(ARQ.project_id == project_id)
    return query


@db_api.reader
def get_all(context, project_id=None, instance_uuid=None, states_in=None,
            page=None):
    """ARQs visible to ``project_id`` (None: all), filtered in SQL."""
    query = _query(context, project_id)
    if instance_uuid is not None:
        query = query.filter(ARQ.instance_uuid == instance_uuid)
    if states_in is not None:
        query = query.filter(ARQ.state.in_(sorted(states_in)))
    return [_view(row) for row in
            pagination.apply(query, ARQ, page).all()]


@db_api.reader
def bound_mdevs(context, hostname):
    """The bound ARQs of ``hostname`` whose attach handle is an mdev."""
    query = (_query(context)
             .filter(ARQ.hostname == hostname)
             .filter(ARQ.state == states.BOUND)
             .filter(AH.attach_type == 'MDEV')
             .order_by(ARQ.id))
    return [_view(row) for row in query.all()]


@db_api.reader
def get(context, uuid, project_id=None):
    row = _query(context, project_id).filter(ARQ.uuid == uuid).first()
    if row is None:
        raise exception.ARQNotFound(arq=uuid)
    return _view(row)


@db_api.reader
def get_many(context, uuids, project_id=None):
    """The ARQs ``uuids``, all of them; 404 for the first missing."""
    found = {view.uuid: view for view in map(_view, _query(
        context, project_id).filter(ARQ.uuid.in_(uuids)))}
    for uuid in uuids:
        if uuid not in found:
            raise exception.ARQNotFound(arq=uuid)
    return [found[uuid] for uuid in uuids]


@db_api.reader
def instance_has_arqs(context, instance_uuid):
    return context.session.query(
        sa.exists().where(ARQ.instance_uuid == instance_uuid)).scalar()


@db_api.retry_on_deadlock
@db_api.writer
def create(context, device_profile_name, project_id):
    """The ARQs of a profile, one per accelerator of each group, in one
    transaction; returns their uuids."""
    profile = context.session.query(DP).filter(
        DP.name == device_profile_name).first()
    if profile is None:
        raise exception.DeviceProfileNotFound(profile=device_profile_name)
    uuids = []
    groups = jsonutils.loads(profile.profile_json).get('groups', [])
    for index, group in enumerate(groups):
        for _ in range(profile_groups.arq_count(group)):
            uuid = uuidutils.generate_uuid()
            context.session.add(ARQ(
                uuid=uuid, project_id=project_id, state=states.INITIAL,
                device_profile_id=profile.id, device_profile_group_id=index,
                substate=states.INITIAL))
            uuids.append(uuid)
    return uuids


def _cas(context, uuid, target, values, project_id=None, expected=None):
    """Move ARQ ``uuid`` to ``target`` if its state allows; 404 when it
    is not there (for ``project_id``), 409 when its state does not."""
    sources = expected or states.sources_of(target)
    query = context.session.query(ARQ).filter(ARQ.uuid == uuid,
                                              ARQ.state.in_(sources))
    if project_id is not None:
        query = query.filter(ARQ.project_id == project_id)
    if query.update(dict(values, state=target),
                    synchronize_session=False) == 1:
        return
    current = context.session.query(ARQ.state).filter(ARQ.uuid == uuid)
    if project_id is not None:
        current = current.filter(ARQ.project_id == project_id)
    state = current.scalar()
    if state is None:
        raise exception.ARQNotFound(arq=uuid)
    raise exception.ARQBadState(arq=uuid, state=state,
                                expected=', '.join(sources))


@db_api.retry_on_deadlock
@db_api.writer
def start_binds(context, binds, project_id, conductor):
    """``binds`` ({uuid: {hostname, device_rp_uuid, instance_uuid,
    project_id}}) all to BindStarted, or none of them."""
    now = timeutils.utcnow()
    for uuid, values in binds.items():
        _cas(context, uuid, states.BIND_STARTED, dict(
            values, bind_conductor=conductor, bind_started_at=now,
            nova_notified=False, attach_handle_id=None, deployable_id=None),
            project_id=project_id)


@db_api.retry_on_deadlock
@db_api.writer
def claim_handle(context, uuid):
    """Give BindStarted ARQ ``uuid`` a free attach handle of the
    deployable behind its ``device_rp_uuid``; returns (deployable row,
    handle row). 409 when there is none free."""
    arq = context.session.query(ARQ).filter(ARQ.uuid == uuid).one()
    deployable = context.session.query(models.Deployable).filter(
        models.Deployable.rp_uuid == arq.device_rp_uuid).first()
    if deployable is None:
        raise exception.NoFreeAttachHandle(rp_uuid=arq.device_rp_uuid)
    free = context.session.query(AH).filter(
        AH.deployable_id == deployable.id,
        AH.in_use == sa.false()).order_by(AH.id).all()
    for handle in free:
        claimed = context.session.query(AH).filter(
            AH.id == handle.id, AH.in_use == sa.false()).update(
            {'in_use': True}, synchronize_session=False)
        if claimed:
            _cas(context, uuid, states.BIND_STARTED,
                 {'attach_handle_id': handle.id,
                  'deployable_id': deployable.id},
                 expected=[states.BIND_STARTED])
            return deployable, handle
    raise exception.NoFreeAttachHandle(rp_uuid=arq.device_rp_uuid)


@db_api.retry_on_deadlock
@db_api.writer
def finish_bind(context, uuid):
    _cas(context, uuid, states.BOUND, {})


def _release(context, handle_ids):
    handle_ids = [i for i in handle_ids if i is not None]
    if handle_ids:
        context.session.query(AH).filter(AH.id.in_(handle_ids)).update(
            {'in_use': False}, synchronize_session=False)


@db_api.retry_on_deadlock
@db_api.writer
def fail_bind(context, uuid):
    """BindStarted ARQ ``uuid`` to BindFailed, its handle released."""
    handle_id = context.session.query(ARQ.attach_handle_id).filter(
        ARQ.uuid == uuid).scalar()
    _cas(context, uuid, states.BIND_FAILED,
         {'attach_handle_id': None, 'deployable_id': None},
         expected=[states.BIND_STARTED])
    _release(context, [handle_id])


_CLEARED = {'hostname': None, 'device_rp_uuid': None, 'instance_uuid': None,
            'attach_handle_id': None, 'deployable_id': None,
            'bind_conductor': None, 'bind_started_at': None}


@db_api.retry_on_deadlock
@db_api.writer
def unbind(context, uuid, project_id=None):
    """ARQ ``uuid`` to Unbound, its handle released."""
    handle_id = get(context, uuid, project_id).attach_handle_id
    _cas(context, uuid, states.UNBOUND, _CLEARED, project_id=project_id)
    _release(context, [handle_id])


@db_api.retry_on_deadlock
@db_api.writer
def delete(context, uuids=None, instance_uuid=None, project_id=None):
    """Delete ARQs by uuid (all must exist, else 404 and nothing is
    deleted) or by instance; handles are released. Returns the views of
    what was deleted."""
    if uuids is not None:
        views = get_many(context, uuids, project_id)
    else:
        views = get_all(context, project_id, instance_uuid=instance_uuid)
    if views:
        _release(context, [view.attach_handle_id for view in views])
        context.session.query(ARQ).filter(
            ARQ.id.in_([view.id for view in views])).delete(
            synchronize_session=False)
    return views


@db_api.reader
def stale_binds(context, conductor=None, started_before=None):
    """uuids of ARQs left BindStarted by ``conductor`` or since before
    ``started_before``."""
    query = context.session.query(ARQ.uuid).filter(
        ARQ.state == states.BIND_STARTED)
    if conductor is not None:
        query = query.filter(ARQ.bind_conductor == conductor)
    if started_before is not None:
        query = query.filter(ARQ.bind_started_at < started_before)
    return [row.uuid for row in query]


@db_api.reader
def unnotified_instances(context):
    """Instances whose ARQs are all resolved and Nova was not told of
    at least one: ``{instance_uuid: [ARQView, ...]}``."""
    pending = {row.instance_uuid for row in context.session.query(
        ARQ.instance_uuid).filter(ARQ.instance_uuid.is_not(None),
                                  ARQ.state.in_(sorted(states.RESOLVED)),
                                  ARQ.nova_notified == sa.false())}
    result = {}
    for instance in sorted(pending):
        views = get_all(context, instance_uuid=instance)
        if all(view.state in states.RESOLVED for view in views):
            result[instance] = views
    return result


@db_api.retry_on_deadlock
@db_api.writer
def mark_notified(context, uuids):
    context.session.query(ARQ).filter(ARQ.uuid.in_(uuids)).update(
        {'nova_notified': True}, synchronize_session=False)
