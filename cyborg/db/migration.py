"""Schema migrations with alembic: upgrade, stamp, version; and the check
of the database a daemon makes before it starts (:func:`check_ready`)."""

import os
import re

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from alembic import util as alembic_util
from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg.common import exception
from cyborg.db import api as db_api

_SCRIPT_LOCATION = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(engine=None):
    config = alembic_config.Config()
    config.set_main_option('script_location', _SCRIPT_LOCATION)
    config.attributes['engine'] = engine or db_api.get_engine()
    return config


def upgrade(revision='head', engine=None):
    alembic_command.upgrade(_config(engine), revision)


def stamp(revision='head', engine=None):
    alembic_command.stamp(_config(engine), revision)


def version(engine=None):
    """The revision the database is at, or None for an empty database."""
    engine = engine or db_api.get_engine()
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()


def head():
    """The newest revision this release knows."""
    return alembic_script.ScriptDirectory.from_config(
        _config(engine=object())).get_current_head()


def masked_url(url):
    """``url`` with its password masked, to be named in messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return '<not a database URL>'


def check_ready(url, at_head=True):
    """Raise DatabaseNotReady unless the database of ``url`` (``[database]
    connection``, whose engine ``db_api`` has been configured with)
    answers and, with ``at_head``, holds this release's schema.

    A SQLite file that does not exist is not created by the check. Each
    failure is one line that names the database, its password masked, and
    what to do. oslo.db's own retries of a refused connection (``[database]
    max_retries`` every ``retry_interval`` seconds) come first.
    """
    shown = masked_url(url)
    if at_head and _missing_sqlite_file(url):
        raise exception.DatabaseNotReady(
            url=shown, problem='does not exist',
            fix='create it with "cyborg-dbsync upgrade", or correct '
                '[database] connection')
    try:
        current = version()
    except (db_exc.DBError, db_exc.CantStartEngineError,
            sa.exc.SQLAlchemyError, ImportError) as e:
        raise exception.DatabaseNotReady(
            url=shown, problem='cannot be used: %s' % one_line(e, url),
            fix=_fix_for(e)) from None
    if at_head:
        _check_head(shown, current)


def _check_head(shown, current):
    newest = head()
    if current == newest:
        return
    if current is None:
        raise exception.DatabaseNotReady(
            url=shown, problem='has no cyborg schema',
            fix='run "cyborg-dbsync upgrade" (or correct [database] '
                'connection if it names another database)')
    scripts = alembic_script.ScriptDirectory.from_config(
        _config(engine=object()))
    try:
        scripts.get_revision(current)
    except alembic_util.CommandError:
        raise exception.DatabaseNotReady(
            url=shown, problem='is at schema revision %s, which this '
            'release does not know (%s is its newest)' % (current, newest),
            fix='upgrade cyborg on this host to the release that upgraded '
                'the database') from None
    raise exception.DatabaseNotReady(
        url=shown, problem='is at schema revision %s; this release needs %s'
        % (current, newest), fix='run "cyborg-dbsync upgrade"')


def _missing_sqlite_file(url):
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return False
    path = parsed.database
    return (parsed.get_backend_name() == 'sqlite' and bool(path)
            and path != ':memory:' and not path.startswith('file:')
            and not os.path.exists(path))


#: What a driver's message says when the login was refused, the database
#: does not exist, or the server could not be reached.
_LOGIN_REFUSED = re.compile(r'\b1045\b|Access denied|password authentication '
                            r'failed|role "[^"]*" does not exist',
                            re.IGNORECASE)
_NO_DATABASE = re.compile(r'\b1049\b|Unknown database|database "[^"]*" does '
                          r'not exist', re.IGNORECASE)
_UNREACHABLE = re.compile(r'Connection refused|Can\'t connect|could not '
                          r'connect|could not translate host name|Name or '
                          r'service not known|timed out|No route to host',
                          re.IGNORECASE)


#: What to do about a database that cannot be used, by problem_kind().
_FIXES = {
    'driver missing': 'install the database driver that [database] '
                      'connection names (PyMySQL, psycopg2)',
    'bad URL': 'correct [database] connection',
    'login refused': 'correct the user name or password in [database] '
                     'connection, or the grants on the database server',
    'no such database': 'create the database (see the installation guide) '
                        'or correct its name in [database] connection',
    'unreachable': 'start the database server, or correct the host and '
                   'port in [database] connection',
    'error': 'check [database] connection and the database server',
}


def problem_kind(error):
    """What ``error``, raised connecting to the database, says in a few
    words that name no host, user or path (a key of ``_FIXES``)."""
    text = str(error)
    if isinstance(error, (ImportError, sa.exc.NoSuchModuleError)):
        return 'driver missing'
    if isinstance(error, (sa.exc.ArgumentError,
                          db_exc.CantStartEngineError)):
        return 'bad URL'
    if _LOGIN_REFUSED.search(text):
        return 'login refused'
    if isinstance(error, db_exc.DBNonExistentDatabase) or _NO_DATABASE.search(
            text):
        return 'no such database'
    if isinstance(error, db_exc.DBConnectionError) or _UNREACHABLE.search(
            text):
        return 'unreachable'
    return 'error'


def _fix_for(error):
    """What to do about ``error``, raised connecting to the database."""
    return _FIXES[problem_kind(error)]


def one_line(error, url=None):
    """A driver's error as one short line: without SQLAlchemy's class
    prefix, its link to the documentation and the statement, and with
    the password of ``url`` masked should the driver repeat it."""
    text = str(error)
    text = re.sub(r'\(Background on this error at: [^)]*\)', '', text)
    text = re.sub(r'\[SQL: .*', '', text, flags=re.DOTALL)
    text = re.sub(r'^\([\w.]+\) ', '', text.strip())
    text = ' '.join(text.split())
    password = _password(url)
    if password and len(password) >= 4:
        text = text.replace(password, '***')
    return text[:300] or type(error).__name__


def _password(url):
    try:
        return sa.engine.make_url(url).password if url else None
    except sa.exc.ArgumentError:
        return None
