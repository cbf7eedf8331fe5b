"""The nonces of the signed RPC messages the conductors took
(``rpc_nonces``): a message runs once among them all, restarts included
(:class:`cyborg.common.signing.Verifier`). Written only by conductors;
each claim is one INSERT in a transaction of its own, into a table that
MySQL keeps in memory and PostgreSQL does not log (see the migration
``b6e2d9f4a1c8``): no disk flush on the path of every message."""

import datetime

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models

_NONCE = models.RPCNonce
#: Built once: a claim is on the path of every RPC message.
_INSERT = sa.insert(_NONCE)
#: Seconds a row outlives its message's window: a clock that moved, or a
#: window made longer meanwhile, does not make a message new again.
MARGIN = 300


def _utc(timestamp):
    return datetime.datetime.fromtimestamp(
        timestamp, datetime.timezone.utc).replace(tzinfo=None)


@db_api.retry_on_deadlock
def _insert(nonce, expires_at):
    # A Core statement on a connection of its own: no ORM session (it
    # cost as much CPU as the rest of the claim).
    with db_api.core_transaction() as connection:
        connection.execute(_INSERT, {
            'nonce': nonce, 'expires_at': expires_at,
            'created_at': timeutils.utcnow()})


def claim(context, nonce, expires):
    """Note ``nonce`` until ``expires`` (seconds since the epoch); False
    when a conductor noted it before. (``context`` is the conductor's;
    the claim needs none of it.)"""
    try:
        _insert(nonce, _utc(expires) + datetime.timedelta(seconds=MARGIN))
    except db_exc.DBDuplicateEntry:
        return False
    return True


@db_api.retry_on_deadlock
@db_api.writer
def purge(context, limit=10000):
    """Drop at most ``limit`` rows whose messages are too old to be
    taken anyway; how many went."""
    now = timeutils.utcnow()
    old = sa.select(_NONCE.nonce).where(
        _NONCE.expires_at < now).limit(limit)
    nonces = [row[0] for row in context.session.execute(old)]
    if not nonces:
        return 0
    return context.session.execute(
        sa.delete(_NONCE).where(_NONCE.nonce.in_(nonces))
        .execution_options(synchronize_session=False)).rowcount


class Store:
    """What a conductor's Verifier claims nonces with."""

    def __init__(self, context):
        self.context = context

    def claim(self, nonce, expires):
        return claim(self.context, nonce, expires)
