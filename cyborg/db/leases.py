"""The conductors' leases (``conductor_leases``): which conductor does a
piece of periodic work for all of them, until when. Written only by
conductors; each call is one short transaction."""

import datetime

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models

_LEASE = models.ConductorLease


def take(context, name, holder, seconds):
    """Take the lease ``name`` for ``holder``, or renew it, for
    ``seconds``: possible when ``holder`` holds it, when it has expired,
    or when nobody ever took it. True if ``holder`` holds it now. One
    UPDATE; a lease never taken costs an INSERT more, the first time."""
    if _renew(context, name, holder, seconds):
        return True
    try:
        return _create(context, name, holder, seconds)
    except db_exc.DBDuplicateEntry:
        # Held by another, or taken by another just now.
        return False


@db_api.retry_on_deadlock
@db_api.writer
def _renew(context, name, holder, seconds):
    now = timeutils.utcnow()
    return bool(context.session.execute(
        sa.update(_LEASE).where(
            _LEASE.name == name,
            sa.or_(_LEASE.holder == holder, _LEASE.expires_at < now))
        .values(holder=holder, updated_at=now,
                expires_at=now + datetime.timedelta(seconds=seconds))
        .execution_options(synchronize_session=False)).rowcount)


@db_api.retry_on_deadlock
@db_api.writer
def _create(context, name, holder, seconds):
    """Create the lease for ``holder``; False when it exists (then
    held by another: ``_renew`` found it neither ours nor expired)."""
    if context.session.query(_LEASE.name).filter(
            _LEASE.name == name).first() is not None:
        return False
    now = timeutils.utcnow()
    context.session.add(_LEASE(
        name=name, holder=holder, created_at=now,
        expires_at=now + datetime.timedelta(seconds=seconds)))
    context.session.flush()
    return True


@db_api.retry_on_deadlock
@db_api.writer
def release(context, name, holder):
    """Give the lease up, if ``holder`` holds it, so that another
    conductor may take it at once. True if it was given up."""
    now = timeutils.utcnow()
    return bool(context.session.execute(
        sa.update(_LEASE).where(_LEASE.name == name,
                                _LEASE.holder == holder)
        .values(expires_at=now - datetime.timedelta(seconds=1),
                updated_at=now)
        .execution_options(synchronize_session=False)).rowcount)


@db_api.reader
def holder_of(context, name):
    """``(holder, expires_at)`` of the lease ``name``; None if never
    taken."""
    row = context.session.query(_LEASE.holder, _LEASE.expires_at).filter(
        _LEASE.name == name).first()
    return None if row is None else tuple(row)
