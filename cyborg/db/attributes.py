"""Attributes of deployables: the API's readers and the conductor's
writes for operator-made attributes.

Attributes a driver reports (``rc``, ``trait<N>``) are written by report
reconciliation (``cyborg.db.devices``).
"""

from oslo_db import exception as db_exc
from oslo_utils import uuidutils

from cyborg.common import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db import pagination

SORT_KEYS = ('created_at', 'updated_at', 'key', 'deployable_id', 'uuid')


@db_api.reader
def get_all(context, deployable_id=None, key=None, page=None):
    """Attribute rows, filtered exactly by ``deployable_id`` and ``key``,
    in the order they were added unless ``page`` sorts them."""
    query = context.session.query(models.Attribute)
    if deployable_id is not None:
        query = query.filter(models.Attribute.deployable_id == deployable_id)
    if key is not None:
        query = query.filter(models.Attribute.key == key)
    return pagination.apply(query, models.Attribute, page).all()


def _get_row(context, uuid):
    row = (context.session.query(models.Attribute)
           .filter(models.Attribute.uuid == uuid).first())
    if row is None:
        raise exception.AttributeNotFound(attribute=uuid)
    return row


@db_api.reader
def get_by_uuid(context, uuid):
    return _get_row(context, uuid)


def _check_new(context, deployable_id, key):
    session = context.session
    if session.get(models.Deployable, deployable_id) is None:
        raise exception.DeployableNotFound(deployable=deployable_id)
    if session.query(models.Attribute.id).filter(
            models.Attribute.deployable_id == deployable_id,
            models.Attribute.key == key).first() is not None:
        raise exception.AttributeExists(deployable=deployable_id, key=key)


@db_api.retry_on_deadlock
@db_api.writer
def create(context, deployable_id, key, value):
    """Add an attribute; returns its uuid. 404 for an unknown
    deployable, 409 when the deployable has ``key`` already."""
    _check_new(context, deployable_id, key)
    row = models.Attribute(uuid=uuidutils.generate_uuid(),
                           deployable_id=deployable_id, key=key, value=value)
    context.session.add(row)
    try:
        context.session.flush()
    except db_exc.DBDuplicateEntry as exc:
        # Another writer added the same key meanwhile.
        raise exception.AttributeExists(deployable=deployable_id,
                                        key=key) from exc
    except db_exc.DBReferenceError as exc:
        # A report removed the deployable meanwhile.
        raise exception.DeployableNotFound(deployable=deployable_id) from exc
    return row.uuid


@db_api.retry_on_deadlock
@db_api.writer
def delete(context, uuid):
    count = (context.session.query(models.Attribute)
             .filter(models.Attribute.uuid == uuid)
             .delete(synchronize_session=False))
    if not count:
        raise exception.AttributeNotFound(attribute=uuid)
