"""The installed ``cyborg-dbsync`` and ``cyborg-status`` commands, run as
an operator runs them, against a fresh MariaDB and PostgreSQL database."""

import os
import shutil
import subprocess
import sys

import fixtures
import sqlalchemy as sa

from cyborg.common import keys
from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import placement_fixture


def _command(name, module):
    """This venv's console script, or ``python -m`` where not installed."""
    script = shutil.which(name, path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, '-m', module]


class _CommandLineTests:
    """Run by the classes at the end against each database server."""

    backend = None

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(
            cyborg_fixtures.Database(self, self.backend, schema=None))
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.config_file = self.write_config(self.db.url)

    def write_config(self, url, name='cyborg.conf'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            # No retries: a test of an unreachable server need not wait.
            f.write('[database]\nconnection = %s\nmax_retries = 0\n' % url)
            # cyborg-status also checks the (real, test) Placement.
            f.write('[placement]\nauth_type = admin_token\ntoken = admin\n'
                    'endpoint = %s\n' % placement_fixture.endpoint())
            # and the API's RPC key, which a deployment has.
            key_dir = os.path.join(self.tmp, 'keys')
            keys.create(key_dir, keys.API)
            f.write('[security]\nkey_dir = %s\n' % key_dir)
        return path

    def run_command(self, command, *argv, config_file=None):
        # Warnings of libraries (eventlet's deprecation) would mix with the
        # command's own stderr, which is what these tests read.
        return subprocess.run(
            command + ['--config-file', config_file or self.config_file,
                       *argv],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))

    def dbsync(self, *argv, **kwargs):
        return self.run_command(
            _command('cyborg-dbsync', 'cyborg.cmd.dbsync'), *argv, **kwargs)

    def status(self, **kwargs):
        return self.run_command(
            _command('cyborg-status', 'cyborg.cmd.status'),
            'upgrade', 'check', **kwargs)

    def assertSucceeds(self, result):
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        return result

    def tables(self):
        return set(sa.inspect(self.db.engine).get_table_names())

    def test_upgrade_then_version_is_head(self):
        self.assertEqual('None',
                         self.assertSucceeds(self.dbsync('version')).stdout
                         .strip())
        self.assertSucceeds(self.dbsync('upgrade'))
        self.assertEqual(migration.head(),
                         self.assertSucceeds(self.dbsync('version')).stdout
                         .strip())
        self.assertTrue(set(models.Base.metadata.tables) <= self.tables())

    def test_status_fails_on_empty_database_passes_after_upgrade(self):
        empty = self.status()
        self.assertEqual(2, empty.returncode, empty.stdout + empty.stderr)
        self.assertIn('no cyborg schema', empty.stdout)
        self.assertSucceeds(self.dbsync('upgrade'))
        self.assertSucceeds(self.status())

    def test_stamp_then_upgrade_creates_nothing(self):
        self.assertSucceeds(self.dbsync('stamp', '--revision', 'head'))
        self.assertSucceeds(self.dbsync('upgrade'))
        self.assertEqual({'alembic_version'}, self.tables())

    def test_create_schema_then_refuses_to_run_again(self):
        self.assertSucceeds(self.dbsync('create_schema'))
        self.assertSucceeds(self.status())
        again = self.dbsync('create_schema')
        self.assertEqual(1, again.returncode)
        self.assertEqual(1, len(again.stderr.splitlines()), again.stderr)
        self.assertIn('not empty', again.stderr)

    def test_online_data_migrations_with_nothing_registered(self):
        self.assertSucceeds(self.dbsync('upgrade'))
        result = self.assertSucceeds(self.dbsync('online_data_migrations'))
        self.assertIn('Total Needed', result.stdout)

    def test_unreachable_server_is_one_line_and_a_failure(self):
        unreachable = sa.engine.make_url(self.db.url).set(port=1)
        config = self.write_config(
            unreachable.render_as_string(hide_password=False), 'bad.conf')
        result = self.dbsync('version', config_file=config)
        self.assertEqual(1, result.returncode)
        lines = result.stderr.splitlines()
        self.assertEqual(1, len(lines), result.stderr)
        self.assertTrue(lines[0].startswith('cyborg-dbsync: error: '))
        checked = self.status(config_file=config)
        self.assertEqual(2, checked.returncode)
        self.assertIn('Cannot read the database', checked.stdout)


class MySQLCommandLineTest(_CommandLineTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLCommandLineTest(_CommandLineTests, base.TestCase):
    backend = 'postgresql'
