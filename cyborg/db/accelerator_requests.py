"""Accelerator requests (ARQs): the API's readers and the conductor's
writers.

Reads join the device profile and the attach handle in one query. Every
state change is a compare-and-swap on the ``state`` column with the
sources ``cyborg.common.states`` allows, so concurrent binds of one ARQ
have exactly one winner; attach handles are claimed with a conditional
UPDATE, so two ARQs never get the same one.

These are on the path of every server Nova boots, so they are SQLAlchemy
Core statements built once, with bound parameters, in Core transactions
(``db_api.core_reader`` and ``core_writer``: no ORM session is built):
the ORM's query building and unit of work cost about as much CPU as the
database round trips they save nothing on. Their reads select only the
fields their callers use (``SHOWN``, ``HELD``, ``BINDING``). An UPDATE
without ``values()`` sets the columns named by its parameters; its WHERE
parameters start with ``b_`` so they never collide with a column.
"""

import collections
import functools
import warnings

from oslo_serialization import jsonutils
from oslo_utils import timeutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.common import exception
from cyborg.common import hostnames
from cyborg.common import profile_groups
from cyborg.common import states
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import pagination
from cyborg.db import statements

SORT_KEYS = ('created_at', 'updated_at', 'state', 'instance_uuid', 'uuid')

ARQ = models.ExtendedAcceleratorRequest
_ARQ = ARQ.__table__
_DP = models.DeviceProfile.__table__
_AH = models.AttachHandle.__table__
_DEPLOYABLE = models.Deployable.__table__
_DEVICE = models.Device.__table__
_HOST = models.Host.__table__

# An ARQ as the API shows it and the conductor works on it.
# ``hostname`` is the host the bind named (Nova's name for it);
# ``agent_host`` the [DEFAULT] host of the agent of its device (None
# before a bind claimed one), the RPC server to ask about the device.
ARQView = collections.namedtuple(
    'ARQView', 'id uuid state project_id device_profile_name '
               'device_profile_group_id group hostname device_rp_uuid '
               'instance_uuid attach_handle_id attach_handle_uuid '
               'attach_handle_type attach_handle_info deployable_id '
               'nova_notified bind_conductor bind_started_at created_at '
               'updated_at agent_host')

_VIEW_COLUMNS = (
    _ARQ.c.id, _ARQ.c.uuid, _ARQ.c.state, _ARQ.c.project_id, _DP.c.name,
    _ARQ.c.device_profile_group_id, _DP.c.profile_json, _ARQ.c.hostname,
    _ARQ.c.device_rp_uuid, _ARQ.c.instance_uuid, _ARQ.c.attach_handle_id,
    _AH.c.uuid, _AH.c.attach_type, _AH.c.attach_info, _ARQ.c.deployable_id,
    _ARQ.c.nova_notified, _ARQ.c.bind_conductor, _ARQ.c.bind_started_at,
    _ARQ.c.created_at, _ARQ.c.updated_at,
    _DEVICE.c.hostname.label('agent_host'))
_VIEW_FROM = _ARQ.join(_DP, _DP.c.id == _ARQ.c.device_profile_id).outerjoin(
    _AH, _AH.c.id == _ARQ.c.attach_handle_id).outerjoin(
    _DEPLOYABLE, _DEPLOYABLE.c.id == _ARQ.c.deployable_id).outerjoin(
    _DEVICE, _DEVICE.c.id == _DEPLOYABLE.c.device_id)


#: Each field's place in an ARQView (and its column's in _VIEW_COLUMNS).
_PLACE = {name: place for place, name in enumerate(ARQView._fields)}

#: The fields the API shows of an ARQ (``v2.accelerator_requests.view``)
#: with ``id``, which pagination needs.
SHOWN = ('id', 'uuid', 'state', 'project_id', 'device_profile_name',
         'device_profile_group_id', 'hostname', 'device_rp_uuid',
         'instance_uuid', 'attach_handle_uuid', 'attach_handle_type',
         'attach_handle_info', 'created_at', 'updated_at')
#: What a delete needs of the ARQs it deletes: what to release and to
#: delete, and where their mdevs are (``Binding.remove_mdev``).
HELD = ('id', 'uuid', 'hostname', 'instance_uuid', 'attach_handle_id',
        'attach_handle_uuid', 'attach_handle_type', 'attach_handle_info',
        'agent_host')
#: What a bind needs of its ARQs: their state, owner and group.
BINDING = ('id', 'uuid', 'state', 'project_id', 'device_profile_name',
           'device_profile_group_id', 'group')


@functools.cache
def _columns(fields):
    """The columns of the view fields ``fields`` (None: all of them).
    Each column read costs the driver a descriptor to parse, at every
    statement: a read selects only what its callers use."""
    if fields is None:
        return _VIEW_COLUMNS
    return tuple(_VIEW_COLUMNS[_PLACE[name]] for name in fields)


def _view(row, profiles=None, fields=None):
    """The ARQView of ``row``, a read of ``fields`` (None: every field;
    those not read are None, ``group`` and ``attach_handle_info`` then
    empty); ``profiles`` ({profile_json: groups}), shared by the rows of
    one list, parses each profile once."""
    if fields is None:
        values = list(row)
    else:
        values = [None] * len(ARQView._fields)
        for name, value in zip(fields, row, strict=True):
            values[_PLACE[name]] = value
    if profiles is None:
        profiles = {}
    if values[6] is None:
        values[6] = {}
    else:
        groups = profiles.get(values[6])
        if groups is None:
            groups = profiles[values[6]] = jsonutils.loads(values[6]).get(
                'groups', [])
        index = values[5]
        values[6] = groups[index] if 0 <= index < len(groups) else {}
    values[13] = jsonutils.loads(values[13]) if values[13] else {}
    return ARQView(*values)


_run = statements.run
_is = statements.param_is
_in = statements.param_in


@functools.cache
def _views(*conditions, fields=None):
    """The view select (of ``fields``, None: all) WHERE every condition,
    named by the column it tests: ``('uuid', 'project_id')`` is ``uuid =
    :b_uuid AND project_id = :b_project_id``; a name ending in ``s``
    tests ``IN :b_<name>`` of the column without it (``uuids``,
    ``states``). Ordered by id, unless ``unordered`` is a condition
    (pagination orders)."""
    statement = sa.select(*_columns(fields)).select_from(_VIEW_FROM)
    for name in conditions:
        if name == 'unordered':
            continue
        if name.endswith('s'):
            statement = statement.where(_in(_ARQ.c[name[:-1]]))
        else:
            statement = statement.where(_is(_ARQ.c[name]))
    if 'unordered' not in conditions:
        statement = statement.order_by(_ARQ.c.id)
    return statement


def _select_views(context, page=None, fields=None, **filters):
    """The views of the ARQs matching ``filters`` ({condition: value} as
    ``_views`` names them; None values are left out), of ``fields``."""
    filters = {name: value for name, value in filters.items()
               if value is not None}
    names = sorted(filters)
    params = {'b_' + name: value for name, value in filters.items()}
    if page is not None and any(page):
        # A marker of another project's ARQ is as unknown as any.
        scope = ({'project_id': filters['project_id']}
                 if 'project_id' in filters else None)
        statement = pagination.apply(
            _views('unordered', *names, fields=fields), ARQ, page,
            session=db_api.session(context), marker_scope=scope)
    else:
        statement = _views(*names, fields=fields)
    profiles = {}
    return [_view(row, profiles, fields)
            for row in _run(context, statement, **params)]


@db_api.core_reader
def get_all(context, project_id=None, instance_uuid=None, states_in=None,
            page=None, fields=None):
    """ARQs visible to ``project_id`` (None: all), filtered in SQL; of
    their ``fields`` only (such as SHOWN), the others None."""
    return _select_views(
        context, page, fields, project_id=project_id,
        instance_uuid=instance_uuid,
        states=None if states_in is None else sorted(states_in))


_BOUND_MDEVS = _views('state').where(
    _AH.c.attach_type == 'MDEV', _DEVICE.c.hostname == sa.bindparam(
        'b_hostname'))


@db_api.core_reader
def bound_mdevs(context, hostname):
    """The bound ARQs whose attach handle is an mdev of a device of
    ``hostname`` (its agent's host, whatever name the bind gave)."""
    return [_view(row) for row in _run(context, _BOUND_MDEVS,
                                       b_hostname=hostname,
                                       b_state=states.BOUND)]


_STATE_COUNTS = sa.select(_ARQ.c.state, sa.func.count()).group_by(
    _ARQ.c.state)


@db_api.core_reader
def state_counts(context):
    """Number of ARQs per state: one GROUP BY (the conductor's
    metrics)."""
    return dict(_run(context, _STATE_COUNTS).all())


@db_api.core_reader
def get(context, uuid, project_id=None):
    found = _select_views(context, uuid=uuid, project_id=project_id)
    if not found:
        raise exception.ARQNotFound(arq=uuid)
    return found[0]


@db_api.core_reader
def get_many(context, uuids, project_id=None):
    """The ARQs ``uuids``, all of them; 404 for the first missing."""
    found = {view.uuid: view for view in _select_views(
        context, uuids=list(uuids), project_id=project_id)}
    for uuid in uuids:
        if uuid not in found:
            raise exception.ARQNotFound(arq=uuid)
    return [found[uuid] for uuid in uuids]


_PROFILE = sa.select(_DP.c.id, _DP.c.profile_json).where(_is(_DP.c.name))


def _created_at(context):
    """The time a new row is stamped with, as the database will give it
    back: MySQL and MariaDB keep no fraction of a second in a DATETIME,
    so that the view ``create`` returns is the one a read shows."""
    now = timeutils.utcnow()
    if db_api.connection(context).dialect.name == 'mysql':
        now = now.replace(microsecond=0)
    return now


@db_api.retry_on_deadlock
@db_api.core_writer
def create(context, device_profile_name, project_id):
    """The ARQs of a profile, one per accelerator of each group, in one
    transaction; returns their views as a read would give them (but for
    ``id``, which the API does not show), so that nothing is read back."""
    profile = _run(context, _PROFILE, b_name=device_profile_name).first()
    if profile is None:
        raise exception.DeviceProfileNotFound(profile=device_profile_name)
    rows, views = [], []
    groups = jsonutils.loads(profile.profile_json).get('groups', [])
    now = _created_at(context)
    for index, group in enumerate(groups):
        for _ in range(profile_groups.arq_count(group)):
            row = {'uuid': uuidutils.generate_uuid(),
                   'project_id': project_id, 'state': states.INITIAL,
                   'substate': states.INITIAL,
                   'device_profile_id': profile.id,
                   'device_profile_group_id': index, 'created_at': now}
            rows.append(row)
            views.append(ARQView(
                id=None, uuid=row['uuid'], state=states.INITIAL,
                project_id=project_id,
                device_profile_name=device_profile_name,
                device_profile_group_id=index, group=group, hostname=None,
                device_rp_uuid=None, instance_uuid=None,
                attach_handle_id=None, attach_handle_uuid=None,
                attach_handle_type=None, attach_handle_info={},
                deployable_id=None, nova_notified=False,
                bind_conductor=None, bind_started_at=None, created_at=now,
                updated_at=None, agent_host=None))
    if rows:
        db_api.connection(context).execute(_ARQ.insert(), rows)
    return views


#: The fields of a view that cross RPC, as ``to_primitive`` gives them.
_TIMES = ('bind_started_at', 'created_at', 'updated_at')


def to_primitive(view):
    """``view`` as JSON can carry it (times as ISO 8601 strings)."""
    values = view._asdict()
    for name in _TIMES:
        if values[name] is not None:
            values[name] = values[name].isoformat()
    return values


def from_primitive(values):
    """The view ``to_primitive`` gave ``values`` of."""
    values = dict(values)
    for name in _TIMES:
        if values[name] is not None:
            values[name] = timeutils.normalize_time(
                timeutils.parse_isotime(values[name]))
    return ARQView(**values)


_CAS = _ARQ.update().where(_is(_ARQ.c.uuid), _in(_ARQ.c.state))
_STATE = sa.select(_ARQ.c.state).where(_is(_ARQ.c.uuid))


def _cas(context, uuid, target, values, project_id=None, expected=None):
    """Move ARQ ``uuid`` to ``target`` if its state allows; 404 when it
    is not there (for ``project_id``), 409 when its state does not."""
    sources = list(expected or states.sources_of(target))
    where = {'b_uuid': uuid, 'b_states': sources}
    cas, current = _CAS, _STATE
    if project_id is not None:
        cas, current = _of_project(_CAS), _of_project(_STATE)
        where['b_project_id'] = project_id
    if _run(context, cas, **where, **values, state=target).rowcount == 1:
        return
    where.pop('b_states')
    state = _run(context, current, **where).scalar()
    if state is None:
        raise exception.ARQNotFound(arq=uuid)
    raise exception.ARQBadState(arq=uuid, state=state,
                                expected=', '.join(sources))


@functools.cache
def _of_project(statement):
    return statement.where(_is(_ARQ.c.project_id))


def _start(context, binds, project_id, conductor, moved=None):
    """``binds`` to BindStarted, one by one; each one moved is added to
    ``moved`` (when given) before the next is tried."""
    now = timeutils.utcnow()
    for uuid, values in binds.items():
        _cas(context, uuid, states.BIND_STARTED, dict(
            values, bind_conductor=conductor, bind_started_at=now,
            nova_notified=False, attach_handle_id=None, deployable_id=None,
            instance_confirmed=False, instance_checked_at=None),
            project_id=project_id)
        if moved is not None:
            moved.append(uuid)


@db_api.retry_on_deadlock
@db_api.core_writer
def start_binds(context, binds, project_id, conductor):
    """``binds`` ({uuid: {hostname, device_rp_uuid, instance_uuid,
    project_id}}) all to BindStarted, or none of them."""
    _start(context, binds, project_id, conductor)


# An ARQ of the instance other than those ``b_uuids``, read with a lock:
# on MariaDB the read waits for a transaction that wrote the instance on
# another ARQ and has not committed yet.
_OTHER_ARQ_OF_INSTANCE = sa.select(_ARQ.c.id).where(
    _is(_ARQ.c.instance_uuid),
    _ARQ.c.uuid.not_in(sa.bindparam('b_uuids', expanding=True)),
).limit(1).with_for_update()
_INSTANCE_LOCK = sa.select(sa.func.pg_advisory_xact_lock(
    sa.func.hashtext(sa.bindparam('b_instance_uuid'))))


def _instances(binds):
    """The instances of ``binds``, in the order they come."""
    return list(dict.fromkeys(v['instance_uuid'] for v in binds.values()))


def _lock_instances(context, binds):
    """On PostgreSQL, a lock on each instance of ``binds`` until the
    transaction ends, so two binds for one instance take turns and the
    second sees the ARQs of the first; True if taken."""
    if db_api.connection(context).dialect.name != 'postgresql':
        return False
    for instance in sorted(_instances(binds)):
        _run(context, _INSTANCE_LOCK, b_instance_uuid=instance)
    return True


def _refuse_bound_instances(context, binds, exclude=()):
    """InstanceHasARQs (400) for the first instance of ``binds`` an ARQ
    other than those ``exclude`` is bound to already."""
    excluded = sorted(exclude)
    for instance in _instances(binds):
        if _run(context, _OTHER_ARQ_OF_INSTANCE, b_instance_uuid=instance,
                b_uuids=excluded).first():
            raise exception.InstanceHasARQs(instance=instance)


# The deployable behind a provider (id uuid name) and its device's host.
_DEPLOYABLE_OF = sa.select(
    _DEPLOYABLE.c.id, _DEPLOYABLE.c.uuid, _DEPLOYABLE.c.name,
    _DEVICE.c.hostname).select_from(
    _DEPLOYABLE.join(_DEVICE, _DEVICE.c.id == _DEPLOYABLE.c.device_id)
).where(_is(_DEPLOYABLE.c.rp_uuid))


_NAMES = sa.bindparam('b_names', expanding=True)
_PREFIX = sa.bindparam('b_prefix')
# The hosts one of whose names is one of b_names or starts with b_prefix.
_HOSTS_NAMED = sa.select(
    _HOST.c.hostname, _HOST.c.resource_provider_name).where(sa.or_(
        _HOST.c.hostname.in_(_NAMES),
        _HOST.c.resource_provider_name.in_(_NAMES),
        _HOST.c.hostname.like(_PREFIX, escape='!'),
        _HOST.c.resource_provider_name.like(_PREFIX, escape='!')))


def _hosts_named(context, name, host):
    """{hostname: resource_provider_name} of ``host`` and of every host
    that one of ``name``'s forms may name (see ``same_host_name``)."""
    names = [name, host] + [n for n in [hostnames.short_name(name)] if n]
    prefix = ''.join('!' + c if c in '!%_' else c for c in name) + '.%'
    return dict(_run(context, _HOSTS_NAMED, b_names=names,
                     b_prefix=prefix).all())


def _check_host(context, uuid, values, host):
    """BindHostMismatch (400) unless the bind ``values`` of ARQ ``uuid``
    name ``host``, the host of its provider (``bind_host_refusal``)."""
    name = values['hostname']
    hosts = _hosts_named(context, name, host)
    reason = hostnames.bind_host_refusal(name, host, hosts)
    if reason is not None:
        raise exception.BindHostMismatch(
            arq=uuid, hostname=name, rp_uuid=values['device_rp_uuid'],
            host=host,
            names=', '.join(hostnames.host_names(host, hosts.get(host))),
            reason=reason)


def _check_hosts(context, binds, found):
    """BindHostMismatch (400) for the first bind of ``binds`` whose
    ``hostname`` is not a name of the host of its provider's deployable
    (``found``: {rp_uuid: deployable row or None})."""
    for uuid, values in sorted(binds.items()):
        row = found[values['device_rp_uuid']]
        if row is not None and row.hostname != values['hostname']:
            _check_host(context, uuid, values, row.hostname)


# The deployable behind a bind's provider, and the first free handle of
# it when the ARQs are read (``_BIND_VIEWS``).
Deployable = collections.namedtuple('Deployable', 'id uuid name hostname')
Handle = collections.namedtuple('Handle', 'id uuid attach_type attach_info')

_BIND_DEPLOYABLE = _DEPLOYABLE.alias('bind_deployable')
_BIND_DEVICE = _DEVICE.alias('bind_device')
_BIND_HANDLE = _AH.alias('bind_handle')
_FREE = _AH.alias('free_handle')
_FIRST_FREE = sa.select(sa.func.min(_FREE.c.id)).where(
    _FREE.c.deployable_id == _BIND_DEPLOYABLE.c.id,
    _FREE.c.in_use == sa.false()).scalar_subquery()
# The views (of BINDING) of the ARQs of a bind, each with every
# deployable of the bind's providers (b_rp_uuids), its device's host and
# its first free attach handle: one read for what a bind needs to know.
# A provider no deployable has is in no row; an ARQ with none of them is
# in one row with NULLs.
_BIND_VIEWS = sa.select(
    *_columns(BINDING), _BIND_DEPLOYABLE.c.rp_uuid, _BIND_DEPLOYABLE.c.id,
    _BIND_DEPLOYABLE.c.uuid, _BIND_DEPLOYABLE.c.name,
    _BIND_DEVICE.c.hostname, _BIND_HANDLE.c.id, _BIND_HANDLE.c.uuid,
    _BIND_HANDLE.c.attach_type, _BIND_HANDLE.c.attach_info).select_from(
    # BINDING has no field of the ARQ's own handle or device.
    _ARQ.join(_DP, _DP.c.id == _ARQ.c.device_profile_id).outerjoin(
        _BIND_DEPLOYABLE, _BIND_DEPLOYABLE.c.rp_uuid.in_(
            sa.bindparam('b_rp_uuids', expanding=True))).outerjoin(
        _BIND_DEVICE, _BIND_DEVICE.c.id == _BIND_DEPLOYABLE.c.device_id
    ).outerjoin(_BIND_HANDLE, _BIND_HANDLE.c.id == _FIRST_FREE)).where(
    _in(_ARQ.c.uuid)).order_by(_ARQ.c.id)
_VIEW_WIDTH = len(BINDING)

#: What SQLAlchemy 2.0 says of ``_BIND_VIEWS`` on MySQL alone: its MySQL
#: compiler links the two sides of a JOIN nested in another by the JOIN
#: objects rather than by their tables when it looks for FROM elements
#: left unjoined, and the deployables of the bind's providers are joined
#: to each ARQ on purpose with no column of it; the statement's SQL is
#: as written, every FROM element in its JOINs. Only the bind's aliases
#: (``bind_*``, used nowhere else) are named, so any other cartesian
#: product is still said.
BIND_VIEWS_LINT = (r'(?s)SELECT statement has a cartesian product between '
                   r'FROM element\(s\) .*"bind_(deployable|device|handle)"')


def quiet_bind_views_lint():
    """Leave out what SQLAlchemy says of ``_BIND_VIEWS`` on MySQL (done
    when this module is imported)."""
    warnings.filterwarnings('ignore', message=BIND_VIEWS_LINT,
                            category=sa.exc.SAWarning)


quiet_bind_views_lint()


def _read_for_bind(context, binds):
    """(views, deployables, candidates) of ``binds``: {uuid: ARQView} of
    those that exist, {rp_uuid: Deployable or None} of every provider
    of ``binds`` and {deployable id: its first free Handle} when it was
    read, in one statement (a second one for providers when an ARQ of
    ``binds`` does not exist). BindHostMismatch (400) as
    ``_deployables_of``."""
    rp_uuids = sorted({v['device_rp_uuid'] for v in binds.values()})
    views, found, candidates, profiles = {}, {}, {}, {}
    for row in _run(context, _BIND_VIEWS, b_uuids=sorted(binds),
                    b_rp_uuids=rp_uuids):
        if row[1] not in views:
            views[row[1]] = _view(row[:_VIEW_WIDTH], profiles, BINDING)
        rp_uuid, extra = row[_VIEW_WIDTH], row[_VIEW_WIDTH + 1:]
        if rp_uuid is None:
            continue
        deployable = Deployable(*extra[:4])
        found[rp_uuid] = deployable
        if extra[4] is not None:
            candidates[deployable.id] = Handle(*extra[4:])
    if set(views) != set(binds):
        # An ARQ that does not exist: its providers were read with no
        # row; they are read as before, so that a bind on the wrong
        # host is still a 400 before an unknown ARQ's 404.
        found.update(_deployables_of(
            context, {u: v for u, v in binds.items()
                      if v['device_rp_uuid'] not in found}))
    for rp_uuid in rp_uuids:
        found.setdefault(rp_uuid, None)
    _check_hosts(context, binds, found)
    return views, found, candidates


def _deployables_of(context, binds):
    """{rp_uuid: deployable row or None} of the providers of ``binds``;
    BindHostMismatch (400) for a bind whose ``hostname`` is not a name of
    the host of the deployable behind its ``device_rp_uuid`` (see
    ``bind_host_refusal``): the request would claim one host's device
    for an instance on another. A provider cyborg does not know is left
    to the claim, which refuses it (UnknownDeviceProvider, 400)."""
    found = {}
    for uuid, values in sorted(binds.items()):
        rp_uuid = values['device_rp_uuid']
        if rp_uuid not in found:
            found[rp_uuid] = _run(context, _DEPLOYABLE_OF,
                                  b_rp_uuid=rp_uuid).first()
        row = found[rp_uuid]
        if row is not None and row.hostname != values['hostname']:
            _check_host(context, uuid, values, row.hostname)
    return found


# An ARQ left BindStarted with its attach handle, for the conductor to
# prepare its device: the ARQ (its handle filled in), the deployable
# (id uuid name) and the handle (id uuid attach_type attach_info).
Claim = collections.namedtuple('Claim', 'arq deployable handle')

_FREE_HANDLES = sa.select(
    _AH.c.id, _AH.c.uuid, _AH.c.attach_type, _AH.c.attach_info).where(
    _is(_AH.c.deployable_id), _AH.c.in_use == sa.false()).order_by(_AH.c.id)
_TAKE_HANDLE = _AH.update().where(_is(_AH.c.id), _AH.c.in_use == sa.false())
_SET_HANDLES = _AH.update().where(_in(_AH.c.id))


def _claim(context, deployable, candidate=None):
    """A free attach handle of ``deployable``, now in use; None when all
    are taken. The conditional UPDATE makes two binds never share one.
    ``candidate``, a handle read free a moment ago, is tried first."""
    if candidate is not None and _run(context, _TAKE_HANDLE, b_id=candidate.id,
                                      in_use=True).rowcount:
        return candidate
    for handle in _run(context, _FREE_HANDLES,
                       b_deployable_id=deployable.id).all():
        if _run(context, _TAKE_HANDLE, b_id=handle.id,
                in_use=True).rowcount:
            return handle
    return None


def _check_startable(arqs, binds, project_id):
    """404 for the first ARQ of ``binds`` not in ``arqs`` (their views)
    or not of ``project_id``, 409 for the first whose state cannot move
    to BindStarted: what ``_start`` would answer, read before a write."""
    sources = states.sources_of(states.BIND_STARTED)
    for uuid in binds:
        arq = arqs.get(uuid)
        if arq is None or project_id not in (None, arq.project_id):
            raise exception.ARQNotFound(arq=uuid)
        if arq.state not in sources:
            raise exception.ARQBadState(arq=uuid, state=arq.state,
                                        expected=', '.join(sources))


def _started(arq, values, conductor, now):
    """``arq`` as its bind ``values`` leave it in BindStarted."""
    return arq._replace(
        state=states.BIND_STARTED, hostname=values['hostname'],
        device_rp_uuid=values['device_rp_uuid'],
        instance_uuid=values['instance_uuid'],
        project_id=values.get('project_id', arq.project_id),
        bind_conductor=conductor,
        bind_started_at=now, nova_notified=False)


@db_api.retry_on_deadlock
@db_api.core_writer
def bind(context, binds, project_id, conductor, ready,
         new_instances_only=True):
    """The binds of one request, in ONE transaction.

    A bind whose hostname is not a name of the host of its provider's
    device is a 400 (BindHostMismatch). With ``new_instances_only``, an
    instance of ``binds`` that has ARQs already is a 400
    (InstanceHasARQs). Every ARQ of ``binds`` (as for ``start_binds``)
    moves to BindStarted, or none does (404, 409). Each then claims a
    free attach handle of the deployable behind its ``device_rp_uuid``
    (none free: it moves to BindFailed; no such deployable: the request
    is refused, 400) and moves on to Bound when ``ready(arq, handle)``
    says that nothing is to be done on its host first. Returns
    ``(claims, failed)``: the Claims of the ARQs left BindStarted with
    their handle, for the caller to prepare and then ``finish_binds``,
    and the uuids of those that failed.

    What the rest of the world sees is that, at the commit; within the
    transaction each ARQ is written once: its views are read first, its
    handle is claimed, and one compare-and-swap from the states that
    may start a bind moves it, with its bind's values and its handle,
    to where it ends (Bound, BindStarted or BindFailed).
    """
    arqs, deployables, candidates = _read_for_bind(context, binds)
    _lock_instances(context, binds)
    moved, claims, failed, unknown = [], [], [], None
    try:
        _check_startable(arqs, binds, project_id)
        now = timeutils.utcnow()
        for uuid, values in binds.items():
            arq = _started(arqs[uuid], values, conductor, now)
            deployable = deployables[values['device_rp_uuid']]
            handle = None if deployable is None else _claim(
                context, deployable, candidates.pop(deployable.id, None))
            target = states.BIND_STARTED
            if deployable is None:
                # The whole request is refused (400) once the instance
                # is checked, and nothing is written.
                unknown = unknown or arq
            elif handle is None:
                target = states.BIND_FAILED
                failed.append(uuid)
            else:
                arq = arq._replace(
                    attach_handle_id=handle.id,
                    attach_handle_uuid=handle.uuid,
                    attach_handle_type=handle.attach_type,
                    deployable_id=deployable.id,
                    attach_handle_info=jsonutils.loads(handle.attach_info),
                    agent_host=deployable.hostname)
                if ready(arq, handle):
                    target = states.BOUND
                else:
                    claims.append(Claim(arq, deployable, handle))
            _cas(context, uuid, target, dict(
                values, bind_conductor=conductor, bind_started_at=now,
                nova_notified=False, instance_confirmed=False,
                instance_checked_at=None,
                attach_handle_id=None if handle is None else handle.id,
                deployable_id=None if handle is None else deployable.id),
                project_id=project_id,
                expected=states.sources_of(states.BIND_STARTED))
            moved.append(uuid)
    except (exception.ARQNotFound, exception.ARQBadState):
        if new_instances_only:
            # An instance that has ARQs already is the answer (400)
            # before a state of these ARQs (404, 409), as when it was
            # checked before the write. Those moved had no instance
            # before (Initial, Unbound): leaving them out reads what
            # was there before the write.
            _refuse_bound_instances(context, binds, exclude=moved)
        raise
    if new_instances_only:
        # One check, after the write, with a lock on what it reads: of
        # two concurrent binds of one instance, the second waits for the
        # first (on PostgreSQL for the instance's lock, on MariaDB for
        # the row the first wrote; SQLite has one writer at a time) or
        # deadlocks and is retried, and then sees the first's ARQs.
        _refuse_bound_instances(context, binds, exclude=binds)
    if unknown is not None:
        raise exception.UnknownDeviceProvider(rp_uuid=unknown.device_rp_uuid,
                                              arq=unknown.uuid)
    return claims, failed


@db_api.retry_on_deadlock
@db_api.core_writer
def finish_binds(context, bound, failed):
    """After their devices were prepared: the BindStarted ARQs ``bound``
    to Bound, those ``failed`` to BindFailed with their handle released,
    in one transaction. Returns the uuids of those no longer BindStarted
    (unbound or deleted meanwhile), which are left as they are."""
    changed = []
    for uuid in bound:
        try:
            _cas(context, uuid, states.BOUND, {},
                 expected=[states.BIND_STARTED])
        except (exception.ARQBadState, exception.ARQNotFound):
            changed.append(uuid)
    for uuid in failed:
        try:
            _fail(context, uuid)
        except (exception.ARQBadState, exception.ARQNotFound):
            changed.append(uuid)
    return changed


def _release(context, handle_ids):
    handle_ids = [i for i in handle_ids if i is not None]
    if handle_ids:
        _run(context, _SET_HANDLES, b_ids=handle_ids, in_use=False)


_HANDLE_OF = sa.select(_ARQ.c.attach_handle_id).where(_is(_ARQ.c.uuid))


def _fail(context, uuid):
    handle_id = _run(context, _HANDLE_OF, b_uuid=uuid).scalar()
    _cas(context, uuid, states.BIND_FAILED,
         {'attach_handle_id': None, 'deployable_id': None},
         expected=[states.BIND_STARTED])
    _release(context, [handle_id])


@db_api.retry_on_deadlock
@db_api.core_writer
def fail_bind(context, uuid):
    """BindStarted ARQ ``uuid`` to BindFailed, its handle released."""
    _fail(context, uuid)


_CLEARED = {'hostname': None, 'device_rp_uuid': None, 'instance_uuid': None,
            'attach_handle_id': None, 'deployable_id': None,
            'bind_conductor': None, 'bind_started_at': None,
            'instance_confirmed': False, 'instance_checked_at': None}


@db_api.retry_on_deadlock
@db_api.core_writer
def unbind(context, uuid, project_id=None):
    """ARQ ``uuid`` to Unbound, its handle released."""
    handle_id = get(context, uuid, project_id).attach_handle_id
    _cas(context, uuid, states.UNBOUND, _CLEARED, project_id=project_id)
    _release(context, [handle_id])


_DELETE = _ARQ.delete().where(_in(_ARQ.c.id))


@db_api.retry_on_deadlock
@db_api.core_writer
def delete(context, uuids=None, instance_uuid=None, project_id=None,
           hosts_due=None):
    """Delete ARQs by uuid (all must exist, else 404 and nothing is
    deleted) or by instance; handles are released. Returns the views of
    what was deleted (of their HELD fields, at least); with
    ``hosts_due`` (``db.hosts.awaiting_report``), also what it answers
    for the hosts of their devices' agents, read in the same
    transaction."""
    if uuids is not None:
        views = get_many(context, uuids, project_id)
    else:
        views = get_all(context, project_id, instance_uuid=instance_uuid,
                        fields=HELD)
    _remove(context, views)
    if hosts_due is None:
        return views
    return views, hosts_due(context, sorted(
        {view.agent_host for view in views if view.agent_host}))


@db_api.core_reader
def stale_binds(context, conductor=None, started_before=None):
    """uuids of ARQs left BindStarted by ``conductor`` or since before
    ``started_before``."""
    query = sa.select(_ARQ.c.uuid).where(
        _ARQ.c.state == states.BIND_STARTED)
    if conductor is not None:
        query = query.where(_ARQ.c.bind_conductor == conductor)
    if started_before is not None:
        query = query.where(_ARQ.c.bind_started_at < started_before)
    return [row.uuid for row in _run(context, query)]


def _remove(context, views):
    if views:
        _release(context, [view.attach_handle_id for view in views])
        _run(context, _DELETE, b_ids=[view.id for view in views])


def delete_ids(context, ids):
    """Delete the ARQs ``ids`` in the caller's transaction (of a
    ``db_api.writer``), releasing their attach handles as a DELETE does;
    returns their views."""
    views = [_view(row) for row in _run(context, _views('ids'), b_ids=ids)]
    _remove(context, views)
    return views
