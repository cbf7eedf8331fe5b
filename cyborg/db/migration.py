"""Schema migrations with alembic: upgrade, stamp, version."""

import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

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


def check_at_head(engine=None):
    """Raise DBNotAtHead unless the schema is at this release's head."""
    current, newest = version(engine), head()
    if current != newest:
        raise exception.DBNotAtHead(current=current, head=newest)
