"""PyMySQL: the TLS context of its "preferred" mode, built once.

When ``[database] connection`` sets no ``ssl`` options, PyMySQL uses TLS if
the server offers it, checking no certificate ("preferred" mode), and builds
a new default context for every connection
(``Connection._create_ssl_ctx({})``), which loads the system's CA
certificates (about 20 ms of CPU) that this mode never uses. Passing a
context as ``ssl`` is public but makes TLS required, so the method is
overridden instead.

PyMySQL before 1.2 (1.1, the pin of OpenStack 2026.1) has no "preferred"
mode: without ``ssl`` options it does not use TLS and never calls the
method, which then only ever builds contexts for options, as PyMySQL does.
"""

import threading

from pymysql import connections

DISTRIBUTION = 'PyMySQL'
PRIVATE_NAMES = ('_create_ssl_ctx',)

# The TLS context of PyMySQL's "preferred" mode, built once per process.
_PREFERRED_TLS = []
_PREFERRED_TLS_LOCK = threading.Lock()


class Connection(connections.Connection):
    """PyMySQL's connection, but the context of "preferred" mode is the
    same for every connection, built once. Connections with ``ssl``
    options build theirs as PyMySQL does."""

    def _create_ssl_ctx(self, sslp):
        if sslp:
            return super()._create_ssl_ctx(sslp)
        with _PREFERRED_TLS_LOCK:
            if not _PREFERRED_TLS:
                _PREFERRED_TLS.append(super()._create_ssl_ctx(sslp))
            return _PREFERRED_TLS[0]

