"""Generic helpers for ORM rows, used inside the caller's transaction
(``context.session``); they open no transaction of their own."""

from oslo_utils import uuidutils


def new_row(model_class, **values):
    """A new, not yet added, row of ``model_class`` with a fresh uuid."""
    return model_class(uuid=uuidutils.generate_uuid(), **values)


def add(context, rows):
    """Insert ``rows`` now (one batched INSERT per table where possible)."""
    if rows:
        context.session.add_all(rows)
        context.session.flush()


def delete_ids(context, model, ids):
    """Delete the rows of ``model`` with these ids, in one statement."""
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


def select_in(session, model, column, values):
    """The rows of ``model`` whose ``column`` is one of ``values``, by id."""
    if not values:
        return []
    return (session.query(model).filter(getattr(model, column).in_(values))
            .order_by(model.id).all())
