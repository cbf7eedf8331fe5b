"""The database engine: one oslo.db enginefacade for the cyborg database.

Resource modules (``db/<resource>.py``) decorate their functions with
``reader`` or ``writer``; each takes the request context first. Only the
conductor and ``cyborg-dbsync`` may open writer transactions.
"""

import functools

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade

context_manager = enginefacade.transaction_context()

reader = context_manager.reader
writer = context_manager.writer

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


def get_engine():
    return context_manager.writer.get_engine()


def retry_on_deadlock(func):
    """Retry a writer on deadlock; the outermost writer must carry it."""
    wrapped = oslo_db_api.wrap_db_retry(
        max_retries=5, retry_on_deadlock=True, inc_retry_interval=True,
        max_retry_interval=1)(func)
    return functools.wraps(func)(wrapped)
