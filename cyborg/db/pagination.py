"""Sorting and keyset paging of list queries, in the database.

The API (``cyborg.api.pagination``) turns query parameters into a
``Page``; a resource's list reader applies it to its filtered query with
``apply``. The marker is the uuid of the last item of the previous page.
Rows are ordered by the sort key and then by ``id``, so the order is total
and pages never repeat or skip a row. NULLs sort as the smallest value on
every database (MySQL and PostgreSQL disagree by default), and the marker
condition knows it; oslo.db's ``paginate_query`` skips rows after a NULL
marker value, hence this module.

The ORDER BY is plain columns, so that an index on the sort key (InnoDB
adds the primary key to every index) returns a page without sorting the
table: MySQL, MariaDB and SQLite put NULLs first ascending already, and
PostgreSQL is told ``NULLS FIRST``/``NULLS LAST``; a column that cannot
be NULL needs neither.
"""

import collections

import sqlalchemy as sa

from cyborg.common import exception

Page = collections.namedtuple('Page', 'limit marker sort_key sort_dir')
Page.__new__.__defaults__ = (None, None, None, None)

ASC = 'asc'
DESC = 'desc'


def _marker_row(session, model, marker, scope=None):
    """The row of ``marker``; one outside ``scope`` (``{column: value}``,
    what the caller may see) is as unknown as a uuid that names none."""
    row = (session.query(model).filter(model.uuid == marker)
           .filter_by(**(scope or {})).first())
    if row is None:
        raise exception.MarkerNotFound(marker=marker)
    return row


def _after(column, id_column, value, marker_id, ascending):
    """Rows after (``column``, ``id``) = (``value``, ``marker_id``) in the
    order: NULLs first ascending, last descending."""
    if ascending:
        if value is None:
            return sa.or_(column.is_not(None),
                          sa.and_(column.is_(None), id_column > marker_id))
        return sa.or_(column > value,
                      sa.and_(column == value, id_column > marker_id))
    if value is None:
        return sa.and_(column.is_(None), id_column < marker_id)
    later = [column < value, sa.and_(column == value, id_column < marker_id)]
    if column.nullable:
        later.append(column.is_(None))
    return sa.or_(*later)


def _order(column, ascending, dialect):
    """``column`` in the order, NULLs as the smallest value."""
    ordered = column.asc() if ascending else column.desc()
    if column.nullable and dialect == 'postgresql':
        ordered = ordered.nulls_first() if ascending else ordered.nulls_last()
    return [ordered]


def _dialect(query, session):
    """The database ``query`` runs on: an ORM Query knows its session."""
    session = session or query.session
    return session.get_bind().dialect.name


def apply(query, model, page=None, default_key='id', default_dir=ASC,
          session=None, marker_scope=None):
    """``query`` sorted by ``page.sort_key`` (else ``default_key``), then
    ``id``, starting after ``page.marker`` and cut at ``page.limit``.
    ``query`` is an ORM Query or a Core select of ``model``'s table (then
    ``session`` reads the marker); the marker must match
    ``marker_scope`` (``{column: value}``) or it is not found."""
    page = page or Page()
    columns = model.__table__.c
    key = page.sort_key or default_key
    column, id_column = columns[key], columns.id
    ascending = (page.sort_dir or default_dir) == ASC
    if page.marker:
        marker = _marker_row(session or query.session, model, page.marker,
                             marker_scope)
        if key == 'id':
            query = query.filter(id_column > marker.id if ascending
                                 else id_column < marker.id)
        else:
            query = query.filter(_after(column, id_column,
                                        getattr(marker, key),
                                        marker.id, ascending))
    order = [] if key == 'id' else _order(column, ascending,
                                          _dialect(query, session))
    query = query.order_by(*order,
                           id_column.asc() if ascending else id_column.desc())
    if page.limit is not None:
        query = query.limit(page.limit)
    return query
