"""The alembic migrations, walked up on SQLite, MariaDB and PostgreSQL.

Each backend gets a fresh, empty database. The walk checks every revision
lands where it says; ``test_models_sync`` (from oslo.db) then compares the
migrated schema with cyborg.db.models, so a model change without a
migration, or a migration that differs from the models, fails here.
"""

import os

from alembic import script as alembic_script
from oslo_db import exception as db_exc
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

    def test_accepted_reports_start_synced(self):
        """5b7e91c04a2d: a host whose report was accepted (its hash kept
        only once Placement showed it) starts synced; one without starts
        unsynced, so its next report syncs Placement again."""
        migration.upgrade('22c1ca53d916', engine=self.db.engine)
        insert = sa.text(
            'INSERT INTO hosts (hostname, status, last_seen_at, report_hash, '
            'report_generation, sync_pending) VALUES '
            "(:name, 'up', :now, :hash, :generation, :pending)")
        with self.db.engine.begin() as connection:
            for name, digest in (('accepted', 'a' * 64), ('pending', None)):
                connection.execute(insert, {
                    'name': name, 'now': '2026-01-01 00:00:00',
                    'hash': digest, 'generation': 3, 'pending': False})
        migration.upgrade('5b7e91c04a2d', engine=self.db.engine)
        with self.db.engine.connect() as connection:
            rows = dict(connection.execute(sa.text(
                'SELECT hostname, synced_generation FROM hosts')).all())
        self.assertEqual({'accepted': 3, 'pending': None}, rows)

    def test_accelerators_hold_units(self):
        """f1a2b3c4d5e6: an accelerator holds one unit of its deployable;
        one from before holds unit 0, a second one on the same
        deployable needs another unit."""
        migration.upgrade('5b7e91c04a2d', engine=self.db.engine)
        statements = [
            "INSERT INTO devices (id, uuid, type, vendor, model, hostname, "
            "status) VALUES (1, 'dev-1', 'FPGA', '8086', 'm', 'h', "
            "'enabled')",
            "INSERT INTO deployables (id, uuid, name, num_accelerators, "
            "device_id) VALUES (1, 'dep-1', 'h_card', 16, 1)",
            "INSERT INTO accelerators (uuid, name, deployable_id, remotable, "
            "state, spec_version) VALUES ('acc-1', 'old', 1, 0, "
            "'available', 1)"]
        with self.db.engine.begin() as connection:
            for statement in statements:
                connection.execute(sa.text(statement))
        migration.upgrade('f1a2b3c4d5e6', engine=self.db.engine)
        insert = sa.text(
            "INSERT INTO accelerators (uuid, name, deployable_id, unit, "
            "remotable, state, spec_version) VALUES (:uuid, :name, 1, "
            ":unit, 0, 'available', 1)")
        with self.db.engine.begin() as connection:
            connection.execute(insert, {'uuid': 'acc-2', 'name': 'new',
                                        'unit': 1})
        with self.db.engine.connect() as connection:
            self.assertEqual([('old', 0), ('new', 1)], [
                tuple(row) for row in connection.execute(sa.text(
                    'SELECT name, unit FROM accelerators ORDER BY id'))])
        with self.db.engine.begin() as connection:
            self.assertRaises(db_exc.DBDuplicateEntry, connection.execute,
                              insert, {'uuid': 'acc-3', 'name': 'same',
                                       'unit': 1})

    def test_hosts_start_without_hardware_and_take_it(self):
        """7f3a9c1d2e4b: a host of before has no hardware rows; its
        rows go with it."""
        migration.upgrade('f1a2b3c4d5e6', engine=self.db.engine)
        with self.db.engine.begin() as connection:
            connection.execute(sa.text(
                'INSERT INTO hosts (hostname, status, last_seen_at, '
                'report_generation, sync_pending) VALUES '
                "('old', 'up', '2026-01-01 00:00:00', 1, :no)"),
                {'no': False})
        migration.upgrade('7f3a9c1d2e4b', engine=self.db.engine)
        with self.db.engine.begin() as connection:
            self.assertEqual(0, connection.execute(sa.text(
                'SELECT COUNT(*) FROM host_hardware')).scalar())
            host_id = connection.execute(sa.text(
                "SELECT id FROM hosts WHERE hostname = 'old'")).scalar()
            connection.execute(sa.text(
                'INSERT INTO host_hardware (host_id, address, driver, '
                'offered, setup_required, reboot_required) VALUES '
                "(:host, '0000:3b:00.0', 'nvidia_gpu_driver', :no, :yes, "
                ':no)'), {'host': host_id, 'no': False, 'yes': True})
        self.assertRaises(db_exc.DBDuplicateEntry, self._insert_twice,
                          host_id)

    def _insert_twice(self, host_id):
        with self.db.engine.begin() as connection:
            connection.execute(sa.text(
                'INSERT INTO host_hardware (host_id, address, driver, '
                'offered, setup_required, reboot_required) VALUES '
                "(:host, '0000:3b:00.0', 'nvidia_gpu_driver', :no, :no, "
                ':no)'), {'host': host_id, 'no': False})

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
        """Foreign keys need InnoDB; names may hold any character. The
        conductors' RPC nonces are kept in memory (no disk flush on the
        path of every message)."""
        migration.upgrade('head', engine=self.db.engine)
        query = sa.text(
            'SELECT table_name, engine, table_collation '
            'FROM information_schema.tables WHERE table_schema = DATABASE() '
            "AND table_name != 'alembic_version'")
        with self.db.engine.connect() as connection:
            rows = connection.execute(query).all()
        self.assertEqual(len(models.Base.metadata.tables), len(rows))
        for name, engine, collation in rows:
            self.assertEqual('MEMORY' if name == 'rpc_nonces' else 'InnoDB',
                             engine, name)
            self.assertTrue(collation.startswith('utf8mb4'), name)


class PostgreSQLMigrationsTest(_MigrationsTests, base.TestCase):
    backend = 'postgresql'
