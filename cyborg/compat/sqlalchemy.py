"""SQLAlchemy: turning off a pool's ping before each checkout.

oslo.db creates every engine with ``pool_pre_ping=True`` and has no option
to leave it off; ``db/api.py`` pings only connections that sat idle (see
``ping_only_idle``). ``Pool(pre_ping=...)`` is public but only when the
pool is made; afterwards the flag is the pool's ``_pre_ping``.
"""

DISTRIBUTION = 'SQLAlchemy'
PRIVATE_NAMES = ('_pre_ping',)


def stop_pre_ping(engine):
    """``engine``'s pool no longer pings a connection at checkout."""
    engine.pool._pre_ping = False
