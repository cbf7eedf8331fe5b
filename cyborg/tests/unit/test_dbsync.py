"""cyborg-dbsync: argument parsing, each sub-command on SQLite, and the
online data migration runner with a migration registered by the test."""

import io
import os
import subprocess
import sys

import fixtures
from oslo_config import cfg
from oslo_utils import timeutils
import sqlalchemy as sa

from cyborg.cmd import dbsync
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


def _parse(argv):
    """A private ConfigOpts with dbsync's sub-commands, parsed from argv.

    Private because CLI options cannot be added to the global CONF once the
    test base has parsed it.
    """
    conf = cfg.ConfigOpts()
    conf.register_cli_opt(dbsync.command_opt)
    conf(argv, project='cyborg', default_config_files=[])
    return conf


class ParseTest(base.TestCase):

    def test_upgrade_defaults_to_head(self):
        conf = _parse(['upgrade'])
        self.assertEqual('head', conf.command.revision)
        self.assertIs(dbsync.do_upgrade, conf.command.func)

    def test_stamp_needs_a_revision(self):
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        self.assertRaises(SystemExit, _parse, ['stamp'])

    def test_a_command_is_required(self):
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        self.assertRaises(SystemExit, _parse, [])

    def test_max_count_is_an_integer(self):
        conf = _parse(['online_data_migrations', '--max-count', '7'])
        self.assertEqual(7, conf.command.max_count)
        self.assertIsNone(_parse(['online_data_migrations']).command.max_count)


class _CommandTestCase(base.TestCase):
    """Runs sub-commands in-process on an empty SQLite database."""

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(
            cyborg_fixtures.Database(self, 'sqlite', schema=None))
        # The fixture already points the engine at its database; the real
        # configure() would refuse once an earlier test started the engine.
        self.useFixture(fixtures.MockPatchObject(db_api, 'configure'))
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))

    def run_command(self, *argv):
        return dbsync.run(_parse(list(argv)))

    def tables(self):
        return set(sa.inspect(self.db.engine).get_table_names())


class CommandsTest(_CommandTestCase):

    def test_version_of_an_empty_database_is_none(self):
        self.assertEqual(0, self.run_command('version'))
        self.assertEqual('None\n', self.stdout.getvalue())

    def test_upgrade_then_version_is_head(self):
        self.assertEqual(0, self.run_command('upgrade'))
        self.stdout.truncate(0)
        self.stdout.seek(0)
        self.assertEqual(0, self.run_command('version'))
        self.assertEqual(migration.head() + '\n', self.stdout.getvalue())

    def test_upgrade_to_an_unknown_revision_is_one_line(self):
        self.assertEqual(1, self.run_command('upgrade', '--revision', 'nope'))
        lines = self.stderr.getvalue().splitlines()
        self.assertEqual(1, len(lines))
        self.assertIn("cyborg-dbsync: error: Can't locate revision", lines[0])

    def test_stamp_records_without_creating(self):
        self.assertEqual(0, self.run_command('stamp', '--revision', 'head'))
        self.assertEqual(migration.head(), migration.version())
        self.assertEqual({'alembic_version'}, self.tables())

    def test_create_schema_creates_tables_and_stamps_head(self):
        self.assertEqual(0, self.run_command('create_schema'))
        self.assertEqual(migration.head(), migration.version())
        self.assertEqual(
            set(models.Base.metadata.tables) | {'alembic_version'},
            self.tables())

    def test_create_schema_refuses_a_database_with_tables(self):
        migration.upgrade('head')
        self.assertEqual(1, self.run_command('create_schema'))
        self.assertIn('not empty', self.stderr.getvalue())
        self.assertEqual(1, len(self.stderr.getvalue().splitlines()))

    def test_unreachable_database_is_one_line(self):
        bad = sa.create_engine('sqlite:////nonexistent-dir/cyborg.sqlite')
        self.addCleanup(bad.dispose)
        self.useFixture(fixtures.MockPatchObject(
            db_api, 'get_engine', return_value=bad))
        self.assertEqual(1, self.run_command('version'))
        self.assertEqual(
            ['cyborg-dbsync: error: (sqlite3.OperationalError) unable to '
             'open database file'],
            self.stderr.getvalue().splitlines())


def _fill_report_hash(ctx, max_count):
    """A test online migration: give hosts without a report hash one."""
    with db_api.writer.using(ctx) as session:
        hosts = (session.query(models.Host)
                 .filter(models.Host.report_hash.is_(None))
                 .limit(max_count).all())
        for host in hosts:
            host.report_hash = 'migrated'
    return len(hosts), len(hosts)


def _always_fails(ctx, max_count):
    raise RuntimeError('broken migration')


class OnlineDataMigrationsTest(_CommandTestCase):

    def setUp(self):
        super().setUp()
        migration.upgrade('head')

    def register(self, *migrations):
        self.useFixture(fixtures.MockPatchObject(
            dbsync, 'ONLINE_MIGRATIONS', migrations))

    def add_hosts(self, count):
        now = timeutils.utcnow()
        with self.db.engine.begin() as connection:
            connection.execute(sa.insert(models.Host), [
                {'hostname': 'host-%d' % i, 'status': 'up',
                 'last_seen_at': now, 'report_generation': 0}
                for i in range(count)])

    def unmigrated(self):
        with self.db.engine.connect() as connection:
            return connection.execute(
                sa.select(sa.func.count()).select_from(models.Host)
                .where(models.Host.report_hash.is_(None))).scalar()

    def test_empty_registry_prints_an_empty_table(self):
        self.register()
        self.assertEqual(0, self.run_command('online_data_migrations'))
        self.assertIn('Total Needed', self.stdout.getvalue())

    def test_runs_in_batches_until_done(self):
        self.register(_fill_report_hash)
        self.add_hosts(120)
        self.assertEqual(0, self.run_command('online_data_migrations'))
        self.assertEqual(0, self.unmigrated())
        self.assertRegex(self.stdout.getvalue(),
                         r'_fill_report_hash\s*\|\s*120\s*\|\s*120')

    def test_max_count_stops_early_and_says_to_run_again(self):
        self.register(_fill_report_hash)
        self.add_hosts(120)
        self.assertEqual(1, self.run_command('online_data_migrations',
                                             '--max-count', '70'))
        self.assertEqual(50, self.unmigrated())
        self.assertIn('Run the command again', self.stdout.getvalue())
        self.assertEqual(0, self.run_command('online_data_migrations'))
        self.assertEqual(0, self.unmigrated())

    def test_max_count_below_one_is_refused(self):
        self.register(_fill_report_hash)
        self.assertEqual(1, self.run_command('online_data_migrations',
                                             '--max-count', '0'))
        self.assertIn('--max-count must be at least 1',
                      self.stderr.getvalue())

    def test_a_failing_migration_does_not_stop_the_others(self):
        self.register(_always_fails, _fill_report_hash)
        self.add_hosts(3)
        self.assertEqual(2, self.run_command('online_data_migrations'))
        self.assertEqual(0, self.unmigrated())
        self.assertIn('_always_fails', self.stderr.getvalue())


class _FakeMigration:
    """Pretends ``rows`` rows need migrating; records each batch size."""

    def __init__(self, rows, __name__='fake'):
        self.rows = rows
        self.batches = []
        self.__name__ = __name__

    def __call__(self, ctx, max_count):
        self.batches.append(max_count)
        done = min(self.rows, max_count)
        self.rows -= done
        return done, done


class RunOnlineMigrationsTest(base.TestCase):

    def test_batches_are_of_batch_size(self):
        fake = _FakeMigration(120)
        totals, failed, limited = dbsync.run_online_migrations(None, [fake])
        self.assertEqual([50, 50, 50, 50], fake.batches)
        self.assertEqual({'fake': [120, 120]}, totals)
        self.assertEqual((set(), False), (failed, limited))

    def test_max_count_is_shared_by_all_migrations(self):
        first = _FakeMigration(30, 'first')
        second = _FakeMigration(30, 'second')
        totals, _, limited = dbsync.run_online_migrations(
            None, [first, second], max_count=40)
        self.assertEqual({'first': [30, 30], 'second': [10, 10]}, totals)
        self.assertTrue(limited)
        self.assertEqual([40], first.batches)
        self.assertEqual([10], second.batches)


class MainTest(base.TestCase):
    """The real command line, in a process of its own, on a SQLite file."""

    def dbsync(self, *argv):
        return subprocess.run(
            [sys.executable, '-m', 'cyborg.cmd.dbsync',
             '--config-file', self.config_file, *argv],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))

    def test_upgrade_version_and_refused_create_schema(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.config_file = os.path.join(tmp, 'cyborg.conf')
        with open(self.config_file, 'w') as f:
            f.write('[database]\nconnection = sqlite:///%s/cyborg.sqlite\n'
                    % tmp)
        self.assertEqual('None', self.dbsync('version').stdout.strip())
        self.assertEqual(0, self.dbsync('upgrade').returncode)
        self.assertEqual(migration.head(),
                         self.dbsync('version').stdout.strip())
        refused = self.dbsync('create_schema')
        self.assertEqual(1, refused.returncode)
        self.assertEqual(1, len(refused.stderr.splitlines()), refused.stderr)
