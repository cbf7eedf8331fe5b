"""The database engine: one oslo.db enginefacade for the cyborg database.

Resource modules (``db/<resource>.py``) decorate their functions with
``reader`` or ``writer``; each takes the request context first. Only the
conductor and ``cyborg-dbsync`` may open writer transactions.

A database that does not answer is ``exception.DatabaseUnavailable``
(503) from either decorator, whatever the driver said: the API answers it
with ``Retry-After``, and it crosses RPC from the conductor as itself.
"""

import contextlib
import functools
import sqlite3
import threading
import time
import weakref

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy import orm

from cyborg.common import context as cyborg_context
from cyborg.common import exception
from cyborg.common import metrics
from cyborg.common import profiler
from cyborg.compat import sqlalchemy as sqlalchemy_compat

# Our request contexts carry oslo.db transactions (``context.session``).
enginefacade.transaction_context_provider(cyborg_context.RequestContext)

context_manager = enginefacade.transaction_context()

# When (time.monotonic()) this process last found the database down.
_LAST_UNAVAILABLE = [None]


def last_unavailable():
    """The ``time.monotonic()`` of the last time this process found the
    database unavailable; None if it never did."""
    return _LAST_UNAVAILABLE[0]


def _unavailable(exc):
    """Whether ``exc`` says the database cannot be reached (refused,
    dropped, restarting), rather than that a statement failed."""
    if isinstance(exc, db_exc.DBConnectionError):
        return True
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    # psycopg2 reports a refused connection as an OperationalError that
    # oslo.db leaves untranslated; errors the server sent carry a pgcode.
    return (isinstance(exc, sa.exc.OperationalError)
            and type(exc.orig).__module__.startswith('psycopg')
            and getattr(exc.orig, 'pgcode', 'server') is None)


@contextlib.contextmanager
def _database_answers():
    try:
        yield
    except (db_exc.DBError, sa.exc.DBAPIError) as exc:
        if not _unavailable(exc):
            raise
        _LAST_UNAVAILABLE[0] = time.monotonic()
        raise exception.DatabaseUnavailable() from exc


class _Reader:
    """enginefacade's ``reader`` (decorator and ``using``), raising
    DatabaseUnavailable for a database that does not answer."""

    def __call__(self, func):
        transactional = context_manager.reader(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            _no_core_transaction(args[0] if args else None, func)
            with _database_answers():
                return transactional(*args, **kwargs)
        return wrapper

    @contextlib.contextmanager
    def using(self, context):
        with _database_answers():
            with context_manager.reader.using(context) as session:
                yield session

    def get_engine(self):
        return context_manager.reader.get_engine()


reader = _Reader()

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
    on SQLite, raising DatabaseUnavailable for a database that does not
    answer."""

    def __call__(self, func):
        transactional = context_manager.writer(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            _no_core_transaction(args[0] if args else None, func)
            with _database_answers(), _writers_turn():
                return transactional(*args, **kwargs)
        # For the test that every writer retries deadlocks.
        wrapper.cyborg_writer = True
        return wrapper

    @contextlib.contextmanager
    def using(self, context):
        with _database_answers(), _writers_turn():
            with context_manager.writer.using(context) as session:
                yield session

    def get_engine(self):
        return context_manager.writer.get_engine()


writer = _Writer()


@contextlib.contextmanager
def core_transaction(writing=True):
    """A Core connection in a transaction of its own on the writer's
    engine, raising as writers do (``writing``: committed at the end,
    taking turns on SQLite; otherwise rolled back): for statements on the
    path of every message or boot, where an ORM session and
    enginefacade's context cost more than the statements."""
    turn = _writers_turn() if writing else contextlib.nullcontext()
    with _database_answers(), turn:
        engine = get_engine()
        with (engine.begin() if writing else engine.connect()) as connection:
            yield connection


# Core transactions: a function's whole transaction on one Core
# connection, for the functions on the path of every server Nova boots.
# enginefacade's reader and writer build an ORM session for every
# transaction (about 130 us of CPU each on MariaDB, against 200 us for
# the connection and its statement), which these functions never use.


class _CoreLocal(threading.local):
    """A context's Core transaction on the current thread; copied
    contexts share it, as they share enginefacade's."""

    connection = None
    writing = False
    session = None

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return _CoreLocal, ()


_CORE = 'cyborg_core_transaction'


def _core_local(context):
    local = context.__dict__.get(_CORE)
    if local is None:
        local = context.__dict__.setdefault(_CORE, _CoreLocal())
    return local


def _in_enginefacade(context):
    try:
        return context.transaction_ctx is not None
    except db_exc.NoEngineContextEstablished:
        return False


def connection(context):
    """The Core connection of the transaction ``context`` runs in on
    this thread: a core reader's or writer's, or that of enginefacade's
    session."""
    local = context.__dict__.get(_CORE)
    if local is not None and local.connection is not None:
        return local.connection
    return context.session.connection()


def session(context):
    """An ORM session in the transaction ``context`` runs in: within a
    core reader or writer, one bound to its connection, made on first
    use (for what only the ORM does, such as a page marker's read)."""
    local = context.__dict__.get(_CORE)
    if local is None or local.connection is None:
        return context.session
    if local.session is None:
        local.session = orm.Session(bind=local.connection,
                                       expire_on_commit=False)
    return local.session


class CoreTransactionError(Exception):
    """A writer called within a core reader's transaction, or an
    enginefacade reader or writer within a core transaction (it would
    open a transaction of its own, on another connection)."""


def _core(writing):
    def decorate(func):
        @functools.wraps(func)
        def wrapper(context, *args, **kwargs):
            local = _core_local(context)
            if local.connection is not None:
                if writing and not local.writing:
                    raise CoreTransactionError(
                        '%s writes within a reader' % func.__qualname__)
                return func(context, *args, **kwargs)
            if _in_enginefacade(context):
                if not writing:
                    return func(context, *args, **kwargs)
                # enginefacade refuses a writer within its reader (whose
                # writes it would roll back) and joins its writer.
                with context_manager.writer.using(context):
                    return func(context, *args, **kwargs)
            with core_transaction(writing) as conn:
                local.connection, local.writing = conn, writing
                try:
                    result = func(context, *args, **kwargs)
                    if local.session is not None:
                        local.session.flush()
                    return result
                finally:
                    if local.session is not None:
                        local.session.close()
                    local.connection = local.session = None
        if writing:
            wrapper.cyborg_writer = True
        return wrapper
    return decorate


#: Decorators of functions whose transaction is one Core connection's
#: (``connection(context)``), or that of the transaction they are called
#: in: enginefacade's, or a core one's (a writer within a reader raises
#: CoreTransactionError). They raise as ``reader`` and ``writer`` do.
core_reader = _core(writing=False)
core_writer = _core(writing=True)


def _no_core_transaction(context, func):
    local = getattr(context, '__dict__', {}).get(_CORE)
    if local is not None and local.connection is not None:
        raise CoreTransactionError(
            '%s opens a transaction of its own within a core one: make it '
            'a core_reader or core_writer' % func.__qualname__)


_CONFIGURED = []


def connection_url(url):
    """``url`` with ``charset=utf8mb4`` on MySQL unless it names a
    charset: oslo.db would connect with ``utf8`` (three bytes at most),
    and a four-byte character (an emoji, say) sent to the utf8mb4 tables
    over such a connection is a DataError instead of a row."""
    if not url:
        return url
    parsed = sa.engine.make_url(url)
    if (parsed.get_backend_name() != 'mysql'
            or 'charset' in parsed.query):
        return url
    return parsed.update_query_dict({'charset': 'utf8mb4'}).render_as_string(
        hide_password=False)


def configure(conf):
    """Point the engine at ``[database] connection``; once per process."""
    if _CONFIGURED:
        return
    options = dict(conf.database.items())
    options['connection'] = connection_url(options.get('connection'))
    options.pop('mysql_engine', None)
    for unused in ('backend', 'use_db_reconnect', 'db_retry_interval',
                   'db_inc_retry_interval', 'db_max_retry_interval',
                   'db_max_retries', 'use_tpool'):
        options.pop(unused, None)
    # oslo.db's sleep(0) at every connection check-in lets eventlet's
    # green threads run; with real threads it only hands the GIL away
    # at the end of every transaction (and waits to get it back).
    options['thread_checkin'] = False
    context_manager.configure(**options)
    context_manager.append_on_engine_create(keep_sqlite_open)
    context_manager.append_on_engine_create(ping_only_idle)
    if _metrics_enabled(conf):
        # Two listeners on every statement: only when they are served.
        context_manager.append_on_engine_create(count_statements)
    if profiler.traces_statements(conf):
        context_manager.append_on_engine_create(profiler.trace_statements)
    _CONFIGURED.append(True)


def _metrics_enabled(conf):
    group = getattr(conf, 'metrics', None)
    return bool(group is not None and group.enabled)


_STARTED = 'cyborg_statement_started'


def count_statements(engine):
    """Count and time every statement ``engine`` runs
    (``cyborg_db_statements_total``): two listeners, no query."""
    sa.event.listen(engine, 'before_cursor_execute', _statement_starts)
    sa.event.listen(engine, 'after_cursor_execute', _statement_ends)


def _statement_starts(_conn, _cursor, _statement, _params, context,
                      _many):
    if context is not None:
        context.__dict__[_STARTED] = time.monotonic()


def _statement_ends(_conn, _cursor, statement, _params, context, _many):
    started = (context.__dict__.get(_STARTED) if context is not None
               else None)
    metrics.count_statement(
        metrics.statement_kind(statement),
        None if started is None else time.monotonic() - started)


#: A pooled server connection idle longer than this is checked (one
#: round trip) before it is used again.
PING_AFTER_IDLE_S = 2.0

_IDLE_SINCE = 'cyborg_idle_since'


def ping_only_idle(engine):
    """On a database server, check a pooled connection before use only
    when it was idle for PING_AFTER_IDLE_S or longer.

    oslo.db turns SQLAlchemy's ``pool_pre_ping`` on: one round trip to
    the server before every transaction, a quarter of the all-in-one's
    time per request on MariaDB. A connection used a moment ago is alive
    as far as a ping can tell; one that sat idle (the server restarted,
    or closed it) is pinged as before, and one that fails its ping is
    replaced. A connection that dies between its ping and its use fails
    its transaction, as with pre-ping."""
    if engine.dialect.name == 'sqlite':
        return
    # What pool_pre_ping sets; the listener below pings instead.
    sqlalchemy_compat.stop_pre_ping(engine)

    def mark_idle(_dbapi_connection, record, *_args):
        record.info[_IDLE_SINCE] = time.monotonic()

    sa.event.listen(engine, 'connect', mark_idle)
    sa.event.listen(engine, 'checkin', mark_idle)
    sa.event.listen(engine, 'checkout', _ping_if_idle)


def _ping_if_idle(dbapi_connection, record, _proxy):
    since = record.info.get(_IDLE_SINCE)
    if since is not None and time.monotonic() - since < PING_AFTER_IDLE_S:
        return
    try:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute('SELECT 1')
            cursor.fetchall()
        finally:
            cursor.close()
    except Exception as e:
        # The pool drops this connection and checks out a new one.
        raise sa.exc.DisconnectionError(str(e)) from e


def keep_sqlite_open(engine):
    """On a SQLite file, one connection of the engine stays open as long
    as the engine.

    oslo.db gives SQLite files no pool: every transaction opens its own
    connection and closes it. When the last connection to a database in
    WAL mode closes, SQLite checkpoints the log into the database file
    (with an fsync) and deletes it, and the next transaction creates it
    again: that was most of the all-in-one's time per request. With one
    connection always open, the log stays and is checkpointed every
    thousand pages, as WAL mode intends. That connection runs no
    transaction, so it blocks no checkpoint and no writer."""
    if engine.dialect.name != 'sqlite' or engine.url.database in (
            None, '', ':memory:') or engine.url.database.startswith(
            'file::memory:'):
        return
    _SQLITE_KEEPERS[engine] = engine.raw_connection()


#: The connection each SQLite engine keeps open, dropped with the engine.
_SQLITE_KEEPERS = weakref.WeakKeyDictionary()


# How long a SQLite writer waits for another one before giving up.
SQLITE_BUSY_TIMEOUT_MS = 30000


def _is_mysql(dbapi_connection):
    return any(type_.__module__.split('.')[0] in ('pymysql', 'MySQLdb')
               for type_ in type(dbapi_connection).__mro__)


def _pymysql_connection_type():
    """PyMySQL's connection, but

    * for its TLS context when ``[database] connection`` sets no ``ssl``
      options: PyMySQL then uses TLS if the server offers it, checking no
      certificate ("preferred" mode), and builds a new default context
      for every connection, which loads the system's CA certificates
      (about 20 ms of CPU) that this mode never uses. That context, the
      same for every connection, is built once. Connections with ``ssl``
      options build theirs as PyMySQL does.
    * for a ``rollback()`` with nothing to roll back: SQLAlchemy's
      Session ends its transaction (COMMIT or ROLLBACK), then returns the
      connection to the pool, which rolls back again; PyMySQL sends every
      ROLLBACK to the server, so each transaction cost one more round
      trip. A ROLLBACK is sent unless no statement was sent (and no
      BEGIN) since the last COMMIT or ROLLBACK that succeeded: then the
      server has no transaction open on the connection (psycopg2 skips
      such a rollback the same way)."""
    try:
        from cyborg.compat import pymysql as pymysql_compat
    except ImportError:
        return None

    class Connection(pymysql_compat.Connection):

        #: False only when nothing was sent since the last COMMIT or
        #: ROLLBACK that succeeded.
        cyborg_may_be_in_transaction = True

        def query(self, sql, unbuffered=False):
            self.cyborg_may_be_in_transaction = True
            return super().query(sql, unbuffered)

        def begin(self):
            self.cyborg_may_be_in_transaction = True
            return super().begin()

        def commit(self):
            self.cyborg_may_be_in_transaction = True
            super().commit()
            self.cyborg_may_be_in_transaction = False

        def rollback(self):
            if not self.cyborg_may_be_in_transaction:
                return
            super().rollback()
            self.cyborg_may_be_in_transaction = False
    return Connection


_PYMYSQL_CONNECTION = _pymysql_connection_type()


@sa.event.listens_for(sa.engine.Engine, 'do_connect')
def _pymysql_connect(dialect, _record, cargs, cparams):
    """A PyMySQL connection of ``_pymysql_connection_type``; other
    drivers connect as they do."""
    if dialect.driver == 'pymysql' and _PYMYSQL_CONNECTION is not None:
        return _PYMYSQL_CONNECTION(*cargs, **cparams)
    return None


@sa.event.listens_for(sa.engine.Engine, 'connect')
def _read_committed(dbapi_connection, _record):
    """MySQL and MariaDB transactions read committed data, as PostgreSQL's
    do by default.

    Under InnoDB's default REPEATABLE READ, a transaction's plain SELECTs
    all read the snapshot taken at its first read, even after a later
    ``SELECT ... FOR UPDATE`` has waited for another transaction to
    commit. A writer that locks a row and then reads what the lock
    protects (a host's devices, under the host row) would read the past
    and write a diff against it. READ COMMITTED reads each statement's
    rows as committed when it runs, so what is read under a lock is what
    the lock protects.
    """
    if not _is_mysql(dbapi_connection):
        return
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(
            'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED')
    finally:
        cursor.close()


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


#: How many times a writer runs again after a deadlock: on Galera, a
#: commit that fails certification is one (doc/source/admin/galera.rst).
DEADLOCK_RETRIES = 5


def retry_on_deadlock(func):
    """Retry a writer on deadlock (or SQLite's busy snapshot); the
    outermost writer must carry it."""
    wrapped = oslo_db_api.wrap_db_retry(
        max_retries=DEADLOCK_RETRIES, retry_on_deadlock=True,
        inc_retry_interval=True, max_retry_interval=1,
        exception_checker=_sqlite_busy)(func)
    wrapped = functools.wraps(func)(wrapped)
    wrapped.cyborg_retries_deadlocks = True
    return wrapped
