"""The database engine: one oslo.db enginefacade for the cyborg database.

Resource modules (``db/<resource>.py``) decorate their functions with
``reader`` or ``writer``; each takes the request context first. Only the
conductor and ``cyborg-dbsync`` may open writer transactions.
"""

import contextlib
import functools
import sqlite3
import threading

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

context_manager = enginefacade.transaction_context()

reader = context_manager.reader

# SQLite allows one writer at a time, and a writer whose transaction read
# before another writer committed fails at once ("database is locked")
# instead of waiting. So on SQLite, writer transactions of this process
# take turns; on MySQL and PostgreSQL they run concurrently.
_SQLITE_WRITERS = threading.RLock()


def _writers_turn():
    if get_engine().dialect.name == 'sqlite':
        return _SQLITE_WRITERS
    return contextlib.nullcontext()


class _Writer:
    """enginefacade's ``writer`` (decorator and ``using``), taking turns
    on SQLite."""

    def __call__(self, func):
        transactional = context_manager.writer(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with _writers_turn():
                return transactional(*args, **kwargs)
        return wrapper

    @contextlib.contextmanager
    def using(self, context):
        with _writers_turn():
            with context_manager.writer.using(context) as session:
                yield session

    def get_engine(self):
        return context_manager.writer.get_engine()


writer = _Writer()

_CONFIGURED = []


def configure(conf):
    """Point the engine at ``[database] connection``; once per process."""
    if _CONFIGURED:
        return
    options = dict(conf.database.items())
    options.pop('mysql_engine', None)
    for unused in ('backend', 'use_db_reconnect', 'db_retry_interval',
                   'db_inc_retry_interval', 'db_max_retry_interval',
                   'db_max_retries', 'use_tpool'):
        options.pop(unused, None)
    context_manager.configure(**options)
    _CONFIGURED.append(True)


# How long a SQLite writer waits for another one before giving up.
SQLITE_BUSY_TIMEOUT_MS = 30000


@sa.event.listens_for(sa.engine.Engine, 'connect')
def _sqlite_concurrency(dbapi_connection, _record):
    """SQLite (the all-in-one's database) with concurrent threads: in WAL
    mode readers and the writer do not block each other, and a writer
    waits for the previous one instead of failing at once with "database
    is locked"."""
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute('PRAGMA journal_mode=WAL')
        # In WAL mode NORMAL keeps the database consistent through any
        # crash; only the last commits may be lost if the machine (not
        # the process) goes down. FULL costs an fsync per commit.
        cursor.execute('PRAGMA synchronous=NORMAL')
        cursor.execute('PRAGMA busy_timeout=%d' % SQLITE_BUSY_TIMEOUT_MS)
    finally:
        cursor.close()


def get_engine():
    return context_manager.writer.get_engine()


def _sqlite_busy(exc):
    """SQLite's "database is locked": a writer whose read snapshot went
    stale fails at once, whatever its busy timeout; like a deadlock, the
    whole transaction may simply run again."""
    return 'database is locked' in str(exc)


def retry_on_deadlock(func):
    """Retry a writer on deadlock (or SQLite's busy snapshot); the
    outermost writer must carry it."""
    wrapped = oslo_db_api.wrap_db_retry(
        max_retries=5, retry_on_deadlock=True, inc_retry_interval=True,
        max_retry_interval=1, exception_checker=_sqlite_busy)(func)
    return functools.wraps(func)(wrapped)
