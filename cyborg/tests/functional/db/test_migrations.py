"""The alembic migrations, walked up on SQLite, MariaDB and PostgreSQL.

Each backend gets a fresh, empty database. The walk checks every revision
lands where it says; ``test_models_sync`` (from oslo.db) then compares the
migrated schema with cyborg.db.models, so a model change without a
migration, or a migration that differs from the models, fails here.
"""

import os

from alembic import script as alembic_script
from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa

from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


def _revisions_oldest_first():
    """Every revision id, from the first migration to head."""
    location = os.path.join(os.path.dirname(migration.__file__),
                            'migrations')
    scripts = alembic_script.ScriptDirectory(location)
    return [rev.revision for rev in reversed(list(scripts.walk_revisions()))]


def _schema_snapshot(engine):
    """Tables with their columns, indexes and unique constraints."""
    inspector = sa.inspect(engine)
    return {
        table: (
            sorted(col['name'] for col in inspector.get_columns(table)),
            sorted(ix['name'] for ix in inspector.get_indexes(table)),
            sorted(str(uc['name'])
                   for uc in inspector.get_unique_constraints(table)))
        for table in inspector.get_table_names()}


class _MigrationsTests(test_migrations.ModelsMigrationsSync):
    """Run by the classes at the end, one per database backend."""

    backend = None

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(
            cyborg_fixtures.Database(self, self.backend, schema=None))

    # The three hooks test_models_sync needs.
    def get_engine(self):
        return self.db.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.upgrade('head', engine=engine)

    def test_walk_versions(self):
        self.assertIsNone(migration.version(self.db.engine))
        for revision in _revisions_oldest_first():
            migration.upgrade(revision, engine=self.db.engine)
            self.assertEqual(revision, migration.version(self.db.engine))
        self.assertEqual(migration.head(), migration.version(self.db.engine))

    def test_walk_ends_at_head(self):
        self.assertEqual(migration.head(), _revisions_oldest_first()[-1])

    def test_upgrade_twice_is_a_no_op(self):
        migration.upgrade('head', engine=self.db.engine)
        before = _schema_snapshot(self.db.engine)
        migration.upgrade('head', engine=self.db.engine)
        self.assertEqual(before, _schema_snapshot(self.db.engine))
        self.assertEqual(migration.head(), migration.version(self.db.engine))

    def test_every_model_table_is_created(self):
        migration.upgrade('head', engine=self.db.engine)
        tables = set(sa.inspect(self.db.engine).get_table_names())
        self.assertEqual(
            set(models.Base.metadata.tables) | {'alembic_version'}, tables)


class SQLiteMigrationsTest(_MigrationsTests, base.TestCase):
    backend = 'sqlite'


class MySQLMigrationsTest(_MigrationsTests, base.TestCase):
    backend = 'mysql'

    def test_tables_are_innodb_utf8mb4(self):
        """Foreign keys need InnoDB; names may hold any character."""
        migration.upgrade('head', engine=self.db.engine)
        query = sa.text(
            'SELECT table_name, engine, table_collation '
            'FROM information_schema.tables WHERE table_schema = DATABASE() '
            "AND table_name != 'alembic_version'")
        with self.db.engine.connect() as connection:
            rows = connection.execute(query).all()
        self.assertEqual(len(models.Base.metadata.tables), len(rows))
        for name, engine, collation in rows:
            self.assertEqual('InnoDB', engine, name)
            self.assertTrue(collation.startswith('utf8mb4'), name)


class PostgreSQLMigrationsTest(_MigrationsTests, base.TestCase):
    backend = 'postgresql'
