"""cyborg-api and the all-in-one refuse to start, with exit status 2 and
one line on stderr, where every request would fail; and /healthcheck
answers 503 with the reason while the database or the broker is down,
200 once it is back. The real processes, on MariaDB and RabbitMQ
reached through gates (faults.TcpGate) that the tests close: the shared
servers are never touched."""

import os
import subprocess
import sys
import time
import urllib.parse
import uuid

import fixtures
import requests
import sqlalchemy as sa

from cyborg.db import migration
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional import faults


def server_database(test, schema=True):
    """A database ``h40health_<hex>`` of the test's own on the shared
    MariaDB, dropped after it; with ``schema``, at head. Its URL."""
    url = cyborg_fixtures.server_database(test, 'mysql', 'h40health')
    if schema:
        engine = sa.create_engine(url)
        try:
            migration.upgrade('head', engine=engine)
        finally:
            engine.dispose()
    return url


class _Processes(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def write_config(self, sections, name='cyborg.conf'):
        """A config file of ``sections``; ``[DEFAULT]`` keeps the state
        in the test's directory and the messages in the process."""
        values = {'DEFAULT': {'state_path': self.tmp,
                              'transport_url': 'fake:/'}}
        for section, options in sections.items():
            values.setdefault(section, {}).update(options)
        return daemons.write_config(os.path.join(self.tmp, name), values)

    def run_command(self, name, *args, env=None):
        """``python -m cyborg.cmd.<name> args`` to its end: (status,
        stdout, stderr)."""
        done = subprocess.run(
            [sys.executable, '-m', 'cyborg.cmd.%s' % name] + list(args),
            capture_output=True, text=True, stdin=subprocess.DEVNULL,
            timeout=90, env=None if env is None else dict(os.environ, **env))
        return done.returncode, done.stdout, done.stderr

    def assertRefused(self, result, prog, *said):
        """Exit status 2 and one line on stderr, ``<prog>: error: ...``,
        that says each of ``said``."""
        status, out, err = result
        lines = err.splitlines()
        self.assertEqual((2, 1), (status, len(lines)), err + out[-2000:])
        self.assertTrue(lines[0].startswith(prog + ': error: '), lines[0])
        for words in said:
            self.assertIn(words, lines[0])
        return lines[0]


class StartRefusedTest(_Processes):

    def wrong_password(self):
        """A config whose database is the shared MariaDB's with a
        password its user does not have."""
        url = sa.engine.make_url(services.require(self, 'mysql')).set(
            password='not-the-pw-h40', database='h40health_%s'
            % uuid.uuid4().hex[:12])
        return self.write_config({
            'DEFAULT': {'auth_strategy': 'noauth'},
            'database': {'connection': url.render_as_string(
                hide_password=False)}})

    def aio(self, config):
        return self.run_command('aio', '--config-file', config,
                                '--state-dir', os.path.join(self.tmp, 'aio'),
                                '--port', str(daemons.free_port()))

    def test_a_wrong_database_password(self):
        config = self.wrong_password()
        for result, prog in (
                (self.run_command('api', '--config-file', config),
                 'cyborg-api'),
                (self.run_command('conductor', '--config-file', config),
                 'cyborg-conductor'),
                (self.aio(config), 'cyborg-aio')):
            line = self.assertRefused(
                result, prog, 'the database mysql+pymysql://root:***@',
                'Access denied', 'correct the user name or password in '
                '[database] connection')
            self.assertNotIn('not-the-pw-h40', line)

    def test_a_misspelled_database_section(self):
        config = self.write_config({
            'DEFAULT': {'auth_strategy': 'noauth'},
            'databse': {'connection': 'sqlite:///%s/c.sqlite' % self.tmp}})
        for result, prog in (
                (self.run_command('api', '--config-file', config),
                 'cyborg-api'),
                (self.aio(config), 'cyborg-aio')):
            self.assertRefused(result, prog, '%s: [databse] is not a group '
                               'cyborg knows: did you mean [database]?'
                               % config)
        # Nothing was made in state_path, the default database's place.
        self.assertEqual([], [n for n in os.listdir(self.tmp)
                              if n.endswith('.sqlite')])

    def test_keystone_without_its_section(self):
        db = self.useFixture(cyborg_fixtures.Database(
            self, 'sqlite', schema='migrations'))
        # auth_strategy = keystone is the default.
        config = self.write_config({'database': {'connection': db.url}})
        self.assertRefused(
            self.run_command('api', '--config-file', config), 'cyborg-api',
            '[DEFAULT] auth_strategy is keystone but [keystone_authtoken] '
            'sets no auth_type')
        config = self.write_config({'DEFAULT': {'auth_strategy': 'keystone'}})
        self.assertRefused(self.aio(config), 'cyborg-aio',
                           'sets no auth_type')

    def test_a_database_without_the_schema(self):
        url = server_database(self, schema=False)
        config = self.write_config({
            'DEFAULT': {'auth_strategy': 'noauth'},
            'database': {'connection': url}})
        self.assertRefused(
            self.run_command('api', '--config-file', config), 'cyborg-api',
            'the database %s has no cyborg schema; run "cyborg-dbsync '
            'upgrade"' % url)

    def test_the_wsgi_application_refuses_too(self):
        missing = os.path.join(self.tmp, 'none.sqlite')
        config = self.write_config({
            'DEFAULT': {'auth_strategy': 'noauth'},
            'database': {'connection': 'sqlite:///%s' % missing}})
        done = subprocess.run(
            [sys.executable, '-c', 'import cyborg.wsgi.api'],
            capture_output=True, text=True, stdin=subprocess.DEVNULL,
            timeout=90, env=dict(os.environ, CYBORG_CONFIG_FILE=config))
        self.assertRefused((done.returncode, done.stdout, done.stderr),
                           'cyborg-wsgi-api', 'sqlite:///%s does not exist'
                           % missing)
        self.assertFalse(os.path.exists(missing))


class HealthcheckTest(_Processes):

    def start_api(self, connection, transport_url='fake:/', key_dir=None):
        self.port = daemons.free_port()
        self.base = 'http://127.0.0.1:%d' % self.port
        config = self.write_config({
            'DEFAULT': {'auth_strategy': 'noauth',
                        'transport_url': transport_url},
            'api': {'host_ip': '127.0.0.1', 'port': self.port,
                    'api_workers': 1},
            'database': {'connection': connection,
                         # A database that went away is found at once.
                         'max_retries': 0},
            'security': {'key_dir': key_dir or self.tmp}})
        self.api = daemons.Daemon(self, 'api', ['--config-file', config],
                                  os.path.join(self.tmp, 'api.log'))
        daemons.wait_for_http(self.base + '/healthcheck', daemon=self.api)

    def health(self):
        response = requests.get(self.base + '/healthcheck', timeout=30)
        return response.status_code, response.text

    def wait_for_health(self, status, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            found = self.health()
            if found[0] == status or time.monotonic() > deadline:
                return found
            time.sleep(0.2)

    def test_the_database_goes_away_and_comes_back(self):
        gate, through = faults.TcpGate.for_url(self, server_database(self))
        gate.open()
        self.start_api(through)
        self.assertEqual((200, 'database: OK\nbroker: OK (in-process '
                          'messaging)'), self.wait_for_health(200))
        gate.close()
        status, body = self.wait_for_health(503)
        self.assertEqual(503, status, body)
        self.assertIn('database: unavailable (unreachable)', body)
        self.assertNotIn('127.0.0.1', body)
        gate.open()
        self.assertEqual(200, self.wait_for_health(200)[0])
        self.assertTrue(self.api.running())
        log = self.api.output()
        self.assertIn('Health check: database: unavailable', log)
        self.assertIn('Health check: database: OK', log)

    def test_the_broker_goes_away_and_comes_back(self):
        broker = urllib.parse.urlparse(services.require(self, 'rabbit'))
        gate = faults.TcpGate(self, (broker.hostname, broker.port)).open()
        transport_url = broker._replace(netloc='%s@127.0.0.1:%d' % (
            broker.netloc.rpartition('@')[0], gate.port)).geturl()
        db = self.useFixture(cyborg_fixtures.Database(
            self, 'sqlite', schema='migrations'))
        self.start_api(db.url, transport_url=transport_url)
        self.assertEqual((200, 'database: OK\nbroker: OK'),
                         self.wait_for_health(200))
        gate.close()
        status, body = self.wait_for_health(503)
        self.assertEqual((503, 'database: OK\nbroker: unreachable'),
                         (status, body))
        gate.open()
        self.assertEqual(200, self.wait_for_health(200)[0])

    def test_a_missing_rpc_key_is_named_without_its_path(self):
        db = self.useFixture(cyborg_fixtures.Database(
            self, 'sqlite', schema='migrations'))
        key_dir = os.path.join(self.tmp, 'no-keys-here')
        self.start_api(db.url, key_dir=key_dir)
        response = requests.post(
            self.base + '/v2/device_profiles', timeout=30,
            headers={'X-Auth-Token': 'admin'},
            json=[{'name': 'p', 'groups': [{'resources:FPGA': '1'}]}])
        self.assertEqual(503, response.status_code, response.text)
        self.assertIn('the RPC key of the API (api)', response.text)
        self.assertIn('cyborg-status keys create --api', response.text)
        self.assertNotIn(key_dir, response.text)
        self.assertNotIn('api.key', response.text)
        self.assertIn(os.path.join(key_dir, 'api.key'), self.api.output())
