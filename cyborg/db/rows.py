"""Generic helpers for ORM rows, used inside the caller's transaction
(``context.session``); they open no transaction of their own."""

import functools

from oslo_utils import uuidutils
import sqlalchemy as sa


def new_row(model_class, **values):
    """A new, not yet added, row of ``model_class`` with a fresh uuid."""
    return model_class(uuid=uuidutils.generate_uuid(), **values)


@functools.cache
def _insert_returning_ids(table):
    return sa.insert(table).returning(table.c.uuid, table.c.id)


def insert(context, model, values):
    """Insert a row of ``model`` for each dict of ``values`` (all with the
    same keys), each with a fresh uuid, in one multi-row INSERT; their
    ids, in the order of ``values``.

    Core rather than ORM objects and a flush, which cost the conductor
    more than the database does; the columns' Python defaults
    (``created_at``, ``default=``) are filled all the same. The ids are
    matched to the rows by uuid: SQLite returns the rows in no promised
    order, and SQLAlchemy would then insert them one at a time to keep it
    (``sort_by_parameter_order``).
    """
    if not values:
        return []
    uuids = [uuidutils.generate_uuid() for _one in values]
    ids = dict(context.session.execute(
        _insert_returning_ids(model.__table__),
        [dict(one, uuid=uuid) for one, uuid in zip(values, uuids,
                                                    strict=True)]).all())
    return [ids[uuid] for uuid in uuids]


def delete_ids(context, model, ids):
    """Delete the rows of ``model`` with these ids, in one statement.

    Their ORM objects leave the session: SQLite may give their ids to
    rows ``insert`` adds next, which a later query in the transaction
    would otherwise return as the deleted objects.
    """
    if ids:
        context.session.query(model).filter(model.id.in_(ids)).delete(
            synchronize_session='evaluate')


def update_changed(row, values):
    """Set the values that differ; True if any did. An ORM row with no
    changed attribute is not written at all."""
    changed = False
    for key, value in values.items():
        if getattr(row, key) != value:
            setattr(row, key, value)
            changed = True
    return changed


def select_in(session, model, column, values):
    """The rows of ``model`` whose ``column`` is one of ``values``, by id."""
    if not values:
        return []
    return (session.query(model).filter(getattr(model, column).in_(values))
            .order_by(model.id).all())
