"""Helpers for SQLAlchemy Core statements built once, with bound
parameters, and run on the connection of the caller's transaction.

A WHERE parameter is named after its column with ``b_`` in front (and an
``s`` behind for a list), so it never collides with a column an UPDATE
sets from the parameters of the same name.
"""

import sqlalchemy as sa

from cyborg.db import api as db_api


def run(context, statement, **params):
    """Run ``statement`` with ``params`` on the connection of the
    transaction ``context`` runs in (``db_api.connection``)."""
    return db_api.connection(context).execute(statement, params)


def param_is(column):
    """``column = :b_<column>``."""
    return column == sa.bindparam('b_' + column.key)


def param_in(column):
    """``column IN :b_<column>s``, the list expanded when run."""
    return column.in_(sa.bindparam('b_%ss' % column.key, expanding=True))
