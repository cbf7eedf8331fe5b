"""What a daemon checks before it serves: the database (reachable, with
this release's schema) and the API's authentication, each refusal one
line."""

import io
import os

import fixtures
from oslo_config import cfg
from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyborg.api.middleware import auth
from cyborg.common import config_check
from cyborg.common import exception
from cyborg.common import preflight
from cyborg.db import migration
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures


class CheckReadyTest(base.TestCase):
    """migration.check_ready on SQLite files."""

    def database(self, schema):
        db = self.useFixture(cyborg_fixtures.Database(self, 'sqlite',
                                                      schema=schema))
        return db.url

    def refusal(self, url, **kwargs):
        error = self.assertRaises(exception.DatabaseNotReady,
                                  migration.check_ready, url, **kwargs)
        self.assertNotIn('\n', str(error))
        return str(error)

    def test_a_database_at_head_passes(self):
        migration.check_ready(self.database('migrations'))

    def test_an_empty_database_is_refused_with_its_name_and_the_fix(self):
        url = self.database(None)
        self.assertEqual(
            'the database %s has no cyborg schema; run "cyborg-dbsync '
            'upgrade" (or correct [database] connection if it names another '
            'database)' % url, self.refusal(url))
        # The all-in-one upgrades its own.
        migration.check_ready(url, at_head=False)

    def test_an_old_schema_is_refused(self):
        url = self.database(None)
        scripts = migration.alembic_script.ScriptDirectory.from_config(
            migration._config(engine=object()))
        first = list(scripts.walk_revisions())[-1].revision
        migration.upgrade(first)
        self.assertEqual(
            'the database %s is at schema revision %s; this release needs '
            '%s; run "cyborg-dbsync upgrade"' % (url, first, migration.head()),
            self.refusal(url))

    def test_a_schema_of_a_newer_release_is_refused(self):
        url = self.database('models')
        with sa.create_engine(url).begin() as connection:
            connection.execute(sa.text(
                "UPDATE alembic_version SET version_num = 'ffffffffffff'"))
        self.assertIn('is at schema revision ffffffffffff, which this '
                      'release does not know', self.refusal(url))

    def test_a_missing_sqlite_file_is_not_created(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'cyborg.sqlite')
        url = 'sqlite:///%s' % path
        self.assertEqual(
            'the database %s does not exist; create it with "cyborg-dbsync '
            'upgrade", or correct [database] connection' % url,
            self.refusal(url))
        self.assertFalse(os.path.exists(path))

    def test_a_connection_error_is_one_line_with_the_password_masked(self):
        url = 'mysql+pymysql://cyborg:s3cret-pw@db.example.org/cyborg'
        error = sa.exc.OperationalError(
            'SELECT 1', {}, Exception(
                '(1045, "Access denied for user \'cyborg\'@\'10.0.0.5\' '
                '(using password: YES)")\nmore'))
        self.useFixture(fixtures.MockPatchObject(migration, 'version',
                                                 side_effect=error))
        message = self.refusal(url)
        self.assertTrue(message.startswith(
            'the database mysql+pymysql://cyborg:***@db.example.org/cyborg '
            'cannot be used: (1045, "Access denied'), message)
        self.assertTrue(message.endswith(
            '; correct the user name or password in [database] connection, '
            'or the grants on the database server'), message)
        self.assertNotIn('s3cret', message)
        self.assertNotIn('[SQL', message)


class ProblemTest(base.TestCase):

    def test_kinds_name_no_host_or_user(self):
        cases = [
            (db_exc.DBConnectionError(Exception("(2003, \"Can't connect to "
                                                "MySQL server on 'db'\")")),
             'unreachable'),
            (Exception('connection to server at "db", port 5432 failed: '
                       'Connection refused'), 'unreachable'),
            (Exception('FATAL: password authentication failed for user '
                       '"cyborg"'), 'login refused'),
            (db_exc.DBNonExistentDatabase('cyborg'), 'no such database'),
            (sa.exc.NoSuchModuleError("Can't load plugin: mysql.pymysql"),
             'driver missing'),
            (sa.exc.ArgumentError('Could not parse SQLAlchemy URL'),
             'bad URL'),
            (db_exc.CantStartEngineError('No sql_connection parameter is '
                                         'established'), 'bad URL'),
            (Exception('disk I/O error'), 'error'),
        ]
        for error, kind in cases:
            self.assertEqual(kind, migration.problem_kind(error), error)

    def test_one_line(self):
        error = sa.exc.OperationalError(
            'SELECT x FROM y', {}, Exception('server said\n  no, pw=hunter22'))
        self.assertEqual('server said no, pw=***', migration.one_line(
            error, 'mysql://u:hunter22@h/d'))

    def test_masked_url(self):
        self.assertEqual('postgresql://u:***@h/d',
                         migration.masked_url('postgresql://u:p@h/d'))
        self.assertEqual('<not a database URL>',
                         migration.masked_url('not a url'))


class AuthConfigTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf = cfg.ConfigOpts()
        self.conf.register_opt(cfg.StrOpt('auth_strategy'))

    def parse(self, text):
        path = os.path.join(self.tmp, 'cyborg.conf')
        with open(path, 'w') as f:
            f.write(text)
        self.conf(['--config-file', path], default_config_files=[])

    def refusal(self):
        error = self.assertRaises(config_check.ConfigError,
                                  auth.check_config, self.conf)
        self.assertNotIn('\n', str(error))
        return str(error)

    def test_noauth_needs_nothing(self):
        self.parse('[DEFAULT]\nauth_strategy = noauth\n')
        auth.check_config(self.conf)

    def test_keystone_without_its_section_is_refused(self):
        self.parse('[DEFAULT]\nauth_strategy = keystone\n'
                   '[keystone_authtokn]\nauth_type = password\n')
        self.assertTrue(self.refusal().startswith(
            '[DEFAULT] auth_strategy is keystone but [keystone_authtoken] '
            'sets no auth_type (is the section missing or misspelled?)'))

    def test_a_section_without_auth_type_is_refused(self):
        # www_authenticate_uri alone: keystonemiddleware could validate no
        # token.
        self.parse('[DEFAULT]\nauth_strategy = keystone\n'
                   '[keystone_authtoken]\nwww_authenticate_uri = http://k\n')
        self.assertIn('sets no auth_type', self.refusal())

    def test_an_unknown_plugin_is_refused(self):
        self.parse('[DEFAULT]\nauth_strategy = keystone\n'
                   '[keystone_authtoken]\nauth_type = pasword\n')
        self.assertTrue(self.refusal().startswith(
            '[keystone_authtoken] auth_type = pasword: keystoneauth has no '
            'such plugin'))

    def test_a_required_option_missing_is_named(self):
        self.parse('[DEFAULT]\nauth_strategy = keystone\n'
                   '[keystone_authtoken]\nauth_type = password\n'
                   'username = cyborg\n')
        self.assertEqual('[keystone_authtoken] auth_type = password needs '
                         'auth_url, which [keystone_authtoken] does not set',
                         self.refusal())

    def test_a_complete_section_passes(self):
        self.parse('[DEFAULT]\nauth_strategy = keystone\n'
                   '[keystone_authtoken]\nauth_type = password\n'
                   'auth_url = http://k:5000\nusername = cyborg\n'
                   'password = p\nproject_name = service\n')
        auth.check_config(self.conf)

    def test_the_group_auth_section_names_is_read(self):
        self.parse('[DEFAULT]\nauth_strategy = keystone\n'
                   '[keystone_authtoken]\nauth_section = service_auth\n'
                   '[service_auth]\nauth_type = password\nusername = c\n')
        self.assertIn('[service_auth] auth_type = password needs auth_url',
                      self.refusal())

    def test_auth_type_from_the_environment_counts(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_KEYSTONE_AUTHTOKEN__AUTH_TYPE', 'token'))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_KEYSTONE_AUTHTOKEN__AUTH_URL', 'http://k:5000'))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_KEYSTONE_AUTHTOKEN__TOKEN', 't'))
        self.parse('[DEFAULT]\nauth_strategy = keystone\n')
        auth.check_config(self.conf)


class RunTest(base.TestCase):

    def test_a_refusal_is_one_line_and_status_2(self):
        stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))

        def refuse():
            raise exception.DatabaseNotReady(url='sqlite://', problem='is x',
                                             fix='do y')
        error = self.assertRaises(SystemExit, preflight.run, 'cyborg-x',
                                  lambda: None, refuse)
        self.assertEqual(2, error.code)
        self.assertEqual('cyborg-x: error: the database sqlite:// is x; do '
                         'y\n', stderr.getvalue())

    def test_other_errors_are_not_hidden(self):
        def broken():
            raise RuntimeError('a bug')
        self.assertRaises(RuntimeError, preflight.run, 'cyborg-x', broken)
