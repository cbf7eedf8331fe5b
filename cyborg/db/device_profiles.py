"""Device profiles: the API's readers and the conductor's writers.

``profile_json`` holds ``{"groups": [...]}``, as upstream stores it.
"""

from oslo_db import exception as db_exc
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import pagination

SORT_KEYS = ('name', 'created_at', 'updated_at', 'uuid')


def groups_of(row):
    return jsonutils.loads(row.profile_json).get('groups', [])


_DP = models.DeviceProfile.__table__
# Nova reads its profile by name at every boot: Core statements built
# once, as for ARQs, not an ORM query built, compiled and turned into
# objects at every request.
_PROFILES = sa.select(_DP)
_NAMED = _PROFILES.where(_DP.c.name.in_(sa.bindparam('names',
                                                     expanding=True)))
_IN_ORDER = {False: _PROFILES.order_by(_DP.c.id),
             True: _NAMED.order_by(_DP.c.id)}


@db_api.core_reader
def get_all(context, names=None, page=None):
    """Profiles (rows with the table's columns as attributes), those
    named ``names`` if given, in ``page``."""
    named = names is not None
    params = {'names': list(names)} if named else {}
    if page is not None and any(page):
        statement = pagination.apply(_NAMED if named else _PROFILES,
                                     models.DeviceProfile, page,
                                     session=db_api.session(context))
    else:
        statement = _IN_ORDER[named]
    return db_api.connection(context).execute(statement, params).all()


@db_api.reader
def get(context, name_or_uuid, by_name=True):
    """One profile by uuid, or by name when ``by_name``; 404 if none."""
    query = context.session.query(models.DeviceProfile)
    if uuidutils.is_uuid_like(name_or_uuid):
        row = query.filter(models.DeviceProfile.uuid == name_or_uuid).first()
    else:
        row = None
    if row is None and by_name:
        row = query.filter(models.DeviceProfile.name == name_or_uuid).first()
    if row is None:
        raise exception.DeviceProfileNotFound(profile=name_or_uuid)
    return row


@db_api.retry_on_deadlock
@db_api.writer
def _insert(context, values):
    row = models.DeviceProfile(
        uuid=values.get('uuid') or uuidutils.generate_uuid(),
        name=values['name'], description=values.get('description'),
        profile_json=jsonutils.dumps({'groups': values['groups']}))
    context.session.add(row)
    context.session.flush()
    return row.uuid


@db_api.reader
def _holder(context, values):
    """The profile that has the name or the uuid of ``values``."""
    model = models.DeviceProfile
    names = [model.name == values['name']]
    if values.get('uuid'):
        names.append(model.uuid == values['uuid'])
    return context.session.query(model).filter(sa.or_(*names)).first()


def create(context, values):
    """Insert a profile; 409 naming the profile that holds the name or
    uuid when one does (read after the failed insert rolled back, so a
    concurrent create is named too)."""
    try:
        return _insert(context, values)
    except db_exc.DBDuplicateEntry as e:
        holder = _holder(context, values)
        raise exception.DuplicateDeviceProfile(
            name=holder.name if holder else values['name'],
            uuid=holder.uuid if holder else values.get('uuid')) from e


def _in_use(context, ids):
    return {row.device_profile_id for row in context.session.query(
        models.ExtendedAcceleratorRequest.device_profile_id).filter(
        models.ExtendedAcceleratorRequest.device_profile_id.in_(ids))}


@db_api.retry_on_deadlock
@db_api.writer
def delete(context, names_or_uuids):
    """Delete every profile named (or with the uuid) in the list, or
    none: 404 for a missing one, 409 for one that ARQs use."""
    rows = []
    for value in names_or_uuids:
        rows.append(get(context, value))
    used = _in_use(context, [row.id for row in rows])
    if used:
        name = [row.name for row in rows if row.id in used][0]
        raise exception.DeviceProfileInUse(profile=name)
    for row in rows:
        context.session.delete(row)
