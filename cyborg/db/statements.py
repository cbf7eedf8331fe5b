"""Helpers for SQLAlchemy Core statements built once, with bound
parameters, and run on the connection of the caller's transaction.

A WHERE parameter is named after its column with ``b_`` in front (and an
``s`` behind for a list), so it never collides with a column an UPDATE
sets from the parameters of the same name.

A list parameter (:func:`param_in`) is an "expanding" one: SQLAlchemy
writes the statement's SQL again at each execution, with as many
placeholders as the list has values. Most lists of the boot path hold
one value (one ARQ, one instance, one host), so :func:`run` runs a
statement given a list of one value for such a parameter as a variant
of it (made once per statement and set of such parameters) that compares
with ``=`` (``<>`` for ``NOT IN``) instead: the same rows, and SQL that
SQLAlchemy compiles once and caches, where rewriting it took 2.4 % of the
all-in-one's CPU in Nova's boot cycle.
"""

import functools

import sqlalchemy as sa
from sqlalchemy.sql import elements
from sqlalchemy.sql import operators
from sqlalchemy.sql import visitors

from cyborg.db import api as db_api

#: The comparison a list of one value turns each membership test into.
_SINGLE = {operators.in_op: operators.eq, operators.not_in_op: operators.ne}
#: Statements whose list parameters and variants are kept (statements
#: compare by identity: those built once stay; those built per call, a
#: page of a list, pass through).
_KEPT = 512


def run(context, statement, **params):
    """Run ``statement`` with ``params`` on the connection of the
    transaction ``context`` runs in (``db_api.connection``)."""
    statement, params = single_values(statement, params)
    return db_api.connection(context).execute(statement, params)


def single_values(statement, params):
    """``(statement, params)`` as :func:`run` executes them: a list
    parameter of one value compared with ``=`` (``<>``), not ``IN``
    (``NOT IN``)."""
    names = _listed(statement)
    single = tuple(sorted(
        name for name in names
        if isinstance(params.get(name), (list, tuple))
        and len(params[name]) == 1)) if names else ()
    if not single:
        return statement, params
    params = dict(params)
    for name in single:
        params[name] = params[name][0]
    return _variant(statement, single), params


def _membership(element, names=None):
    """Whether ``element`` is an ``IN`` or ``NOT IN`` of a list
    parameter (of ``names``, when given)."""
    return (isinstance(element, elements.BinaryExpression)
            and element.operator in _SINGLE
            and isinstance(element.right, elements.BindParameter)
            and element.right.expanding
            and (names is None or element.right.key in names))


@functools.lru_cache(maxsize=_KEPT)
def _listed(statement):
    """The names of ``statement``'s list parameters that an ``IN`` or
    ``NOT IN`` compares with."""
    return frozenset(element.right.key
                     for element in visitors.iterate(statement)
                     if _membership(element))


@functools.lru_cache(maxsize=_KEPT)
def _variant(statement, names):
    """``statement`` with each ``IN`` (``NOT IN``) of a list parameter of
    ``names`` made an ``=`` (``<>``) of a parameter of the same name."""

    def replace(element):
        if not _membership(element, names):
            return None
        return _SINGLE[element.operator](
            element.left, sa.bindparam(element.right.key,
                                       type_=element.right.type))
    return visitors.replacement_traverse(statement, {}, replace)


def param_is(column):
    """``column = :b_<column>``."""
    return column == sa.bindparam('b_' + column.key)


def param_in(column):
    """``column IN :b_<column>s``, the list expanded when run."""
    return column.in_(sa.bindparam('b_%ss' % column.key, expanding=True))
