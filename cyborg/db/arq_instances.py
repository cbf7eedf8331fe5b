"""What cyborg keeps about the instance of an ARQ, apart from the ARQ
itself: whether Nova was told of its ARQs
(``cyborg.conductor.nova_events``), and whether Nova showed the instance
past its build (``cyborg.conductor.stuck_arqs``), with the delete of the
ARQs of an instance Nova no longer has.
"""

import collections

from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.common import states
from cyborg.db import accelerator_requests as db_arqs
from cyborg.db import api as db_api
from cyborg.db import statements

_ARQ = db_arqs.ARQ.__table__
_run = statements.run
_is = statements.param_is
_in = statements.param_in

_NOTIFY_COLUMNS = sa.select(_ARQ.c.instance_uuid, _ARQ.c.uuid, _ARQ.c.state,
                            _ARQ.c.nova_notified)
_NOTIFY_OF = _NOTIFY_COLUMNS.where(_in(_ARQ.c.instance_uuid))
_NOTIFY_PENDING = _NOTIFY_COLUMNS.where(_ARQ.c.instance_uuid.in_(
    sa.select(_ARQ.c.instance_uuid).where(
        _ARQ.c.instance_uuid.is_not(None),
        _ARQ.c.state.in_(sorted(states.RESOLVED)),
        _ARQ.c.nova_notified == sa.false()).distinct()))


@db_api.core_reader
def unnotified(context, instances=None):
    """The instances (of ``instances``, or any) whose ARQs are all
    resolved and Nova was not told of at least one, in one query:
    ``{instance_uuid: {arq uuid: state}}``."""
    if instances is None:
        rows = _run(context, _NOTIFY_PENDING)
    else:
        rows = _run(context, _NOTIFY_OF, b_instance_uuids=sorted(instances))
    found = collections.defaultdict(dict)
    untold, unresolved = set(), set()
    for row in rows:
        found[row.instance_uuid][row.uuid] = row.state
        if row.state not in states.RESOLVED:
            unresolved.add(row.instance_uuid)
        elif not row.nova_notified:
            untold.add(row.instance_uuid)
    return {instance: found[instance]
            for instance in sorted(untold - unresolved)}


# Only the ARQs not marked yet: an instance's events name all its ARQs,
# and those told before are left as they are.
_MARK_NOTIFIED = _ARQ.update().where(_in(_ARQ.c.uuid),
                                     _ARQ.c.nova_notified == sa.false())


@db_api.retry_on_deadlock
@db_api.core_writer
def mark_notified(context, uuids):
    _run(context, _MARK_NOTIFIED, b_uuids=list(uuids), nova_notified=True)


# The stuck-ARQ check (cyborg.conductor.stuck_arqs): ARQs of an instance
# that Nova has not yet shown past its build.
_UNCONFIRMED_STATES = sorted((states.BOUND, states.BIND_FAILED))
_UNCONFIRMED = sa.and_(_ARQ.c.instance_uuid.is_not(None),
                       _ARQ.c.state.in_(_UNCONFIRMED_STATES),
                       _ARQ.c.instance_confirmed == sa.false())
_DUE = sa.or_(_ARQ.c.instance_checked_at.is_(None),
              _ARQ.c.instance_checked_at < sa.bindparam('b_checked_before'))
_DUE_INSTANCES = sa.select(_ARQ.c.instance_uuid).where(
    _UNCONFIRMED, _DUE,
    _ARQ.c.bind_started_at < sa.bindparam('b_bound_before'),
).group_by(_ARQ.c.instance_uuid).order_by(
    sa.func.min(sa.func.coalesce(_ARQ.c.instance_checked_at,
                                 _ARQ.c.bind_started_at)),
    _ARQ.c.instance_uuid).limit(sa.bindparam('b_limit'))
# The check's bookkeeping leaves ``updated_at`` as it was: the API shows
# it, and nothing about the ARQ itself changed.
_TAKE_INSTANCE = _ARQ.update().where(
    _is(_ARQ.c.instance_uuid), _UNCONFIRMED, _DUE).values(
    instance_checked_at=sa.bindparam('v_checked_at'),
    updated_at=_ARQ.c.updated_at)


@db_api.retry_on_deadlock
@db_api.core_writer
def take_unconfirmed(context, bound_before, checked_before, limit):
    """Up to ``limit`` instances with ARQs bound (or failed) before
    ``bound_before`` that Nova has not shown past their build, and that
    no conductor asked Nova about since ``checked_before``: the least
    recently asked first. They are marked as asked now, each with a
    conditional UPDATE, so two conductors never take the same one."""
    due = [row.instance_uuid for row in _run(
        context, _DUE_INSTANCES, b_bound_before=bound_before,
        b_checked_before=checked_before, b_limit=limit)]
    now = timeutils.utcnow()
    return [instance for instance in due
            if _run(context, _TAKE_INSTANCE, b_instance_uuid=instance,
                    b_checked_before=checked_before,
                    v_checked_at=now).rowcount]


_CONFIRM = _ARQ.update().where(_in(_ARQ.c.instance_uuid), _UNCONFIRMED).values(
    instance_confirmed=True, updated_at=_ARQ.c.updated_at)


@db_api.retry_on_deadlock
@db_api.core_writer
def confirm_instances(context, instance_uuids):
    """Nova showed ``instance_uuids`` past their build: their ARQs are
    never asked about again."""
    if instance_uuids:
        _run(context, _CONFIRM, b_instance_uuids=sorted(instance_uuids))


_UNCONFIRMED_OF = sa.select(_ARQ.c.id).where(
    _is(_ARQ.c.instance_uuid), _UNCONFIRMED).with_for_update()


@db_api.retry_on_deadlock
@db_api.core_writer
def delete_unconfirmed(context, instance_uuid):
    """Delete the unconfirmed Bound and BindFailed ARQs of
    ``instance_uuid``, which Nova no longer has, releasing their attach
    handles as a DELETE does; returns their views. ARQs that changed
    meanwhile (unbound, rebound, confirmed, deleted) are left alone."""
    ids = [row.id for row in _run(context, _UNCONFIRMED_OF,
                                  b_instance_uuid=instance_uuid)]
    if not ids:
        return []
    return db_arqs.delete_ids(context, ids)
