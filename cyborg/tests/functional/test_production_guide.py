"""The production install guide, followed as written, boots an ARQ.

``doc/source/install/production.rst`` is read, not retold: its SQL, its
``ini`` blocks and its ``cyborg-dbsync`` and ``cyborg-status`` commands
are taken from the page, and the ``rabbitmqctl`` commands are those
``cyborg-status keys broker`` prints. They run against MariaDB, a
RabbitMQ node of the test's own (the guide's vhost, users and
permissions are made on it) and the real Placement; then a conductor,
an API and the agent of ``cmp-1`` run as processes, each with the
configuration, broker user and key the guide gives that party, and Nova's
boot sequence binds an ARQ through the API.

What a test machine cannot do as a production host does, and so is
changed on the way:

* ``/etc/cyborg`` is a directory of the test's (the guide's paths under it
  point there, ``[security] key_dir`` included);
* ``controller`` is 127.0.0.1 with the ports of the servers the test has;
  the database, its user and the passwords get names of the test's own;
* there is no Keystone: the API runs with ``auth_strategy = noauth`` and
  the conductor reaches Placement with an admin token, and Nova is a
  stand-in that records the events it gets;
* the compute host's hardware is a captured sysfs tree.
"""

import configparser
import os
import shlex
import shutil
import subprocess
import sys
import uuid

import fixtures
import requests
import sqlalchemy as sa

from cyborg.tests import base
from cyborg.tests import services
from cyborg.tests.functional import daemons
from cyborg.tests.functional import doc_commands
from cyborg.tests.functional import faults
from cyborg.tests.functional import nova
from cyborg.tests.functional import placement_fixture
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

PAGE = 'doc/source/install/production.rst'
#: The compute host the guide names first.
HOST = 'cmp-1'
GPU = '0000:3b:00.0'
#: The programs of the guide this test runs, in the page's order.
PROGRAMS = ('cyborg-dbsync', 'cyborg-status')


def _page():
    with open(os.path.join(doc_commands.TOP, PAGE)) as f:
        return f.read()


def guide_sql():
    """The statements of the guide's block that creates the database."""
    for _, _, block in doc_commands.literal_blocks(_page()):
        text = '\n'.join(block)
        if text.lstrip().upper().startswith('CREATE DATABASE'):
            return [s.strip() for s in text.split(';') if s.strip()]
    raise AssertionError('%s shows no CREATE DATABASE block' % PAGE)


#: Sections of the guide's ``ini`` blocks that are not cyborg.conf's.
SYSTEMD = ('Unit', 'Service', 'Install')


def guide_ini():
    """The guide's ``ini`` blocks of cyborg.conf (not those of systemd
    units), merged: {section: {option: value}}."""
    merged = {}
    for _, language, block in doc_commands.literal_blocks(_page()):
        if language != 'ini':
            continue
        parser = configparser.RawConfigParser(strict=False)
        parser.optionxform = str
        parser.read_string('\n'.join(line for line in block
                                     if not line.lstrip().startswith('#')))
        if set(parser.sections()) & set(SYSTEMD):
            continue
        for section in parser.sections():
            merged.setdefault(section, {}).update(parser.items(section))
        if parser.defaults():
            merged.setdefault('DEFAULT', {}).update(parser.defaults())
    return merged


def _path():
    """PATH with this Python's scripts (cyborg's) first."""
    return os.pathsep.join([os.path.dirname(sys.executable),
                            os.environ.get('PATH', '')])


def guide_commands():
    """The guide's commands of ``PROGRAMS``, in the page's order."""
    found = [c.text for c in doc_commands.commands(path=_path())
             if c.page == PAGE and doc_commands.first_word(c.text)
             in PROGRAMS]
    if not found:
        raise AssertionError('%s shows no cyborg-dbsync or cyborg-status '
                             'command' % PAGE)
    return found


class ProductionGuideTest(base.TestCase):

    def setUp(self):
        super().setUp()
        # A RabbitMQ node, a schema and three daemons to start.
        self.useFixture(fixtures.Timeout(600, gentle=True))
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.etc = os.path.join(self.tmp, 'etc', 'cyborg')
        os.makedirs(self.etc)
        self.mysql = sa.engine.make_url(services.require(self, 'mysql'))
        self.rabbit = faults.PrivateRabbit.started(self)
        self.placement = self.useFixture(placement_fixture.Placement(
            self.conf))
        self.nova = nova.StandInNova().start(self)
        suffix = uuid.uuid4().hex[:8]
        self.names = {'database': 'guide_%s' % suffix,
                      'user': 'guide_%s' % suffix,
                      'password': 'db-%s' % suffix}

    # -- the guide's steps, with this machine's names ---------------------

    def localize(self, text):
        """A line of the guide, with this machine's names and paths."""
        port = self.mysql.port or 3306
        replacements = (
            ('/etc/cyborg', self.etc),
            ('CYBORG_DBPASS', self.names['password']),
            ("'cyborg'@", "'%s'@" % self.names['user']),
            ('cyborg:%s@controller/cyborg' % self.names['password'],
             '%s:%s@127.0.0.1:%d/%s' % (self.names['user'],
                                        self.names['password'], port,
                                        self.names['database'])),
            ('DATABASE cyborg', 'DATABASE %s' % self.names['database']),
            ('ON cyborg.*', 'ON %s.*' % self.names['database']),
            ('@controller:5672', '@127.0.0.1:%d' % self.rabbit.port),
        )
        for old, new in replacements:
            text = text.replace(old, new)
        return text

    def create_database(self):
        root = sa.create_engine(self.mysql.set(database=None))
        self.addCleanup(root.dispose)
        statements = [self.localize(s) for s in guide_sql()]
        with root.begin() as connection:
            for statement in statements:
                connection.execute(sa.text(statement))
        self.addCleanup(self.drop_database, root)

    def drop_database(self, root):
        with root.begin() as connection:
            connection.execute(sa.text('DROP DATABASE IF EXISTS `%s`'
                                       % self.names['database']))
            connection.execute(sa.text("DROP USER IF EXISTS '%s'@'%%'"
                                       % self.names['user']))

    def run_command(self, command):
        """A guide command in bash, the venv's scripts first on PATH."""
        env = dict(os.environ, PATH=_path())
        result = subprocess.run(['bash', '-c', self.localize(command)],
                                capture_output=True, text=True, env=env,
                                timeout=300)
        self.assertEqual(0, result.returncode,
                         '%s\n%s%s' % (command, result.stdout,
                                       result.stderr))
        return result.stdout

    def broker_commands(self, printed):
        """Run the ``rabbitmqctl`` lines ``keys broker`` printed, each user
        with a password of its own; {user: password}."""
        passwords = {}
        lines = [line for line in printed.splitlines()
                 if line.startswith('rabbitmqctl ')]
        self.assertTrue(lines, printed)
        for line in lines:
            words = shlex.split(line)[1:]
            if words[0] == 'add_user':
                passwords[words[1]] = 'pw-' + uuid.uuid4().hex[:12]
                words[2] = passwords[words[1]]
            self.rabbit.ctl(*words)
        return passwords

    def party_config(self, name, transport_url, sections):
        """The conductor host's configuration with another party's
        transport_url and sections (None: without that section); its
        path."""
        values = {section: dict(options) for section, options
                  in self.conductor_values.items()}
        values['DEFAULT']['transport_url'] = transport_url
        for section, options in sections.items():
            if options is None:
                values.pop(section, None)
            else:
                values.setdefault(section, {}).update(options)
        directory = os.path.join(self.tmp, name)
        os.makedirs(directory, exist_ok=True)
        return daemons.write_config(os.path.join(directory, 'cyborg.conf'),
                                    values)

    def test_the_guide_boots_an_arq(self):
        # "Start /etc/cyborg/cyborg.conf from the sample", then the
        # guide's sections, as a conductor host has them.
        shutil.copy(os.path.join(doc_commands.TOP, 'etc', 'cyborg',
                                 'cyborg.conf.sample'),
                    os.path.join(self.etc, 'cyborg.conf'))
        ini = guide_ini()
        self.assertIn('connection', ini.get('database', {}))
        self.assertIn('transport_url', ini.get('DEFAULT', {}))
        values = {section: {key: self.localize(value)
                            for key, value in options.items()}
                  for section, options in ini.items()}
        # What no test machine has: Keystone (see the module's doc).
        values.pop('keystone_authtoken', None)
        values['DEFAULT'].update(auth_strategy='noauth', host='ctl-1',
                                 state_path=self.tmp)
        values['placement'] = {'auth_type': 'admin_token', 'token': 'admin',
                               'endpoint': self.placement.endpoint}
        values['nova'] = self.nova.config()
        values['security'] = {'key_dir': os.path.join(self.etc, 'keys')}
        self.api_port = daemons.free_port()
        values['api'] = {'host_ip': '127.0.0.1', 'port': self.api_port,
                         'api_workers': 1}
        self.conductor_values = values
        with open(os.path.join(self.etc, 'cyborg.conf'), 'a') as f:
            for section, options in values.items():
                f.write('\n[%s]\n' % section)
                for key, value in options.items():
                    f.write('%s = %s\n' % (key, value))

        self.create_database()
        passwords = {}
        for command in guide_commands():
            output = self.run_command(command)
            if ' keys broker' in command:
                passwords = self.broker_commands(output)
        self.assertEqual(sorted(['cyborg-conductor', 'cyborg-api',
                                 'cyborg-agent.cmp-1', 'cyborg-agent.cmp-2']),
                         sorted(passwords))

        def url(user):
            return 'rabbit://%s:%s@127.0.0.1:%d/cyborg' % (
                user, passwords[user], self.rabbit.port)

        # Each party on its own user (the page's RABBIT_PASS and
        # API_RABBIT_PASS stand for these passwords).
        conductor = self.party_config('controller', url('cyborg-conductor'),
                                      {})
        # The API host has api.key alone; the compute host its own key.
        api_keys = os.path.join(self.tmp, 'api-keys')
        os.makedirs(api_keys, mode=0o700)
        shutil.copy2(os.path.join(self.etc, 'keys', 'api.key'), api_keys)
        api = self.party_config('api-host', url('cyborg-api'),
                                {'security': {'key_dir': api_keys}})
        host_keys = os.path.join(self.tmp, 'cmp-1-keys')
        os.makedirs(host_keys, mode=0o700)
        shutil.copy2(os.path.join(self.etc, 'keys', 'host.cmp-1.key'),
                     host_keys)
        tree = sysfs.SysfsTree(os.path.join(self.tmp, 'sysfs'))
        tree.add_card('tesla_t4', GPU)
        agent = self.party_config(HOST, url('cyborg-agent.cmp-1'), {
            'DEFAULT': {'host': HOST},
            # "Agents do not need database credentials."
            'database': None,
            'security': {'key_dir': host_keys},
            'agent': {'sysfs_root': tree.root,
                      'enabled_drivers': 'nvidia_gpu_driver',
                      'heartbeat_interval': 1, 'rescan_interval': 1,
                      'state_file': os.path.join(self.tmp, 'agent.json')}})

        # Nova made the compute node provider.
        root = self.placement.create_compute_node(HOST, remove_after=True)
        # "Start a conductor first".
        started = {}
        for name, config in (('conductor', conductor), ('api', api),
                             ('agent', agent)):
            started[name] = daemons.Daemon(
                self, name, ['--config-file', config],
                os.path.join(self.tmp, '%s.log' % name))
        base_url = 'http://127.0.0.1:%d' % self.api_port
        daemons.wait_for_http(base_url + '/v2', daemon=started['api'])

        def gpu_provider():
            for daemon in started.values():
                self.assertTrue(daemon.running(), daemon.output()[-3000:])
            _, body = self.placement.get('/resource_providers?in_tree=%s'
                                         % root['uuid'])
            return [p['uuid'] for p in body['resource_providers']
                    if p['uuid'] != root['uuid']]
        [rp_uuid] = wait_for(gpu_provider, timeout=120)

        profile = 'guide-%s' % uuid.uuid4().hex[:6]
        response = requests.post(
            base_url + '/v2/device_profiles', timeout=30,
            headers={'X-Auth-Token': 'admin'},
            json=[{'name': profile, 'groups': [{'resources:PGPU': '1'}]}])
        self.assertEqual(201, response.status_code, response.text)
        _, bound = nova.boot_and_delete(self, base_url, profile, HOST,
                                        rp_uuid, timeout=60, nova=self.nova)
        self.assertEqual([(HOST, rp_uuid)],
                         [(a['hostname'], a['device_rp_uuid'])
                          for a in bound])
