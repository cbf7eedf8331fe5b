"""python-openstackclient's own ``openstack accelerator`` commands,
every one it and python-cyborgclient register, run as users run them:
the ``openstack`` program in a subprocess, ``--os-cloud`` from a
``clouds.yaml`` (see ``clients``), at the client's default microversion
and at 2.3, with the role that would run each command. Each step checks
what the API then holds, not only the exit code.

python-openstackclient ships these commands itself from 10.4 and then
ignores python-cyborgclient's (``openstackclient.shell.IGNORED_MODULES``),
so ``openstack`` runs python-openstackclient's; both register the same
names, and a name no step runs fails the test. No release's
upper-constraints in ``tools/lib/constraints/`` has such a
python-openstackclient yet (master's of August 2026 pins 10.2.1), so
the newest releases of the clients (``NEWEST``) are installed into a
virtualenv of their own, made once per machine under ``upstream.CACHE``
in ``setUpClass``; without PyPI the test is skipped, or fails under
``CYBORG_TEST_REQUIRE_SERVICES``. (``test_cyborgclient.py`` runs
python-cyborgclient's commands as each release's constraints install
them.)
"""

from concurrent import futures
import json
import os
import subprocess

import fixtures
import testtools
import yaml

from cyborg.tests import services
from cyborg.tests.functional import clients
from cyborg.tests.functional import osc_steps
from cyborg.tests.functional import upstream

GROUP = clients.GROUP
#: The entry point group of the commands.
GROUP_NAME = 'openstack.accelerator.v2'
#: The newest releases of the clients, installed together (the other
#: libraries at their newest too, as pip picks them).
NEWEST = ('python-openstackclient==10.5.0', 'python-cyborgclient==3.0.0',
          'openstacksdk==4.22.0')
POLICY = 'Policy does not allow'
INSTANCE = osc_steps.INSTANCE

COVERED = osc_steps.COVERED


#: Run by the virtualenv's Python: the commands of the group (argv[1])
#: by the distribution that registers them, the module of the
#: implementation ``openstack``'s command manager picks for each, and
#: the versions of the distributions named after it.
_INSPECT = r'''
import json, sys
from importlib import metadata
from cliff import commandmanager
from openstackclient import shell
group = sys.argv[1]
registered = {}
for point in metadata.entry_points(group=group):
    registered.setdefault(point.dist.name, []).append(
        point.name.replace('_', ' '))
manager = commandmanager.CommandManager(
    'openstack.cli', ignored_modules=shell.IGNORED_MODULES)
manager.add_command_group(group)
names = sorted({name for names in registered.values() for name in names})
print(json.dumps({
    'registered': registered,
    'implementations': {
        name: manager.find_command(name.split())[0].__module__
        for name in names},
    'versions': {d: metadata.version(d) for d in sys.argv[2:]}}))
'''


def client_venv():
    """The bin directory of the newest clients' virtualenv, made if
    there is none yet; ``upstream.Unavailable`` when it cannot be."""
    return upstream.cached_venv(
        'clients-newest', [], list(NEWEST),
        'the newest python-openstackclient, python-cyborgclient and '
        'openstacksdk (%s)' % ', '.join(NEWEST), key=NEWEST)


def describe(bin_dir, cwd):
    """What ``_INSPECT`` says of the virtualenv ``bin_dir``."""
    done = subprocess.run(
        [os.path.join(bin_dir, 'python'), '-c', _INSPECT, GROUP_NAME] + [
            pin.split('==')[0] for pin in NEWEST],
        capture_output=True, text=True, timeout=120, env=upstream._env(),
        cwd=cwd)
    if done.returncode:
        raise AssertionError('inspecting the clients failed:\n'
                             + done.stderr)
    return json.loads(done.stdout)


class StandInCompute:
    """``GET /servers/{id}`` of Nova's compute API, as
    python-openstackclient's ``arq bind`` looks the server up: every id
    in ``servers`` is a server."""

    def __init__(self, *servers):
        self.servers = set(servers)

    def __call__(self, environ, start_response):
        parts = environ['PATH_INFO'].strip('/').split('/')
        status, body = '404 Not Found', {'itemNotFound': {
            'code': 404, 'message': 'not found'}}
        if parts == ['v2.1']:
            # Version discovery, as openstacksdk's compute proxy does it.
            href = 'http://%s/v2.1/' % environ['HTTP_HOST']
            status, body = '200 OK', {'version': {
                'id': 'v2.1', 'status': 'CURRENT', 'min_version': '2.1',
                'version': '2.1', 'links': [{'rel': 'self',
                                             'href': href}]}}
        elif parts[-2:-1] == ['servers'] and parts[-1] in self.servers:
            status, body = '200 OK', {'server': {
                'id': parts[-1], 'name': 'vm', 'status': 'ACTIVE'}}
        start_response(status, [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]


class _Commands(osc_steps.Steps):
    """The steps; a test class per microversion mixes them in."""

    profile = 'osc-dp'

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The first run on a machine installs the clients from PyPI:
        # here, not inside the test.
        cls.bin_dir = cls.unavailable = None
        try:
            cls.bin_dir = client_venv()
        except upstream.Unavailable as e:
            cls.unavailable = str(e)

    def setUp(self):
        super().setUp()
        if self.unavailable:
            services.unavailable(self, self.unavailable)
        self.aio = self.useFixture(clients.AllInOne(self))
        self.ran = set()
        home = self.useFixture(fixtures.TempDir()).path
        compute = clients._serve(self.aio, StandInCompute(INSTANCE),
                                 'test-compute')
        with open(self.aio.clouds_yaml) as f:
            config = yaml.safe_load(f)
        for cloud in config['clouds'].values():
            cloud['compute_endpoint_override'] = compute + '/v2.1'
        clouds_yaml = os.path.join(home, 'clouds.yaml')
        with open(clouds_yaml, 'w') as f:
            yaml.safe_dump(config, f)
        self.env = {'HOME': home, 'PATH': os.environ.get('PATH', ''),
                    'OS_CLIENT_CONFIG_FILE': clouds_yaml}

    def test_every_command(self):
        found = describe(self.bin_dir, self.env['HOME'])
        self.assertEqual(dict(pin.split('==') for pin in NEWEST),
                         found['versions'])
        registered = found['registered']
        self.assertEqual({'python-openstackclient', 'python-cyborgclient'},
                         set(registered))
        for names in registered.values():
            self.assertEqual(set(COVERED), set(names),
                             'commands of the group the table lacks')
        # What runs is python-openstackclient's: when that changes, run
        # python-cyborgclient's too.
        self.assertEqual({'openstackclient'}, {
            module.split('.')[0]
            for module in found['implementations'].values()})
        # Each ``openstack`` costs a second or more of start-up: the two
        # independent halves run side by side.
        with futures.ThreadPoolExecutor(2) as pool:
            hardware = pool.submit(self.hardware)
            uuid = self.device_profiles()
            self.accelerator_requests()
            hardware.result()
        self.osc('admin', 'device profile delete', uuid, json_output=False)
        self.assertEqual(404, self.get('/v2/device_profiles/' + uuid))
        self.assertEqual(set(COVERED), self.ran,
                         'commands of the group no step runs')

    def device_profiles(self):
        made = self.osc('admin', 'device profile create', 'osc-dp',
                        '--group', ','.join('%s=%s' % item
                                            for item in GROUP.items()),
                        '--description', 'made by openstack')
        held = self.get('/v2/device_profiles/' + made['uuid'])[
            'device_profile']
        self.assertEqual(('osc-dp', [GROUP], 'made by openstack'),
                         (held['name'], held['groups'], held['description']))
        self.assertIn(made['uuid'], [p['uuid'] for p in self.osc(
            'member', 'device profile list')])
        self.assertEqual([GROUP], self.osc(
            'member', 'device profile show', made['uuid'])['groups'])
        if self.version:
            self.assertEqual(made['uuid'], self.osc(
                'member', 'device profile show', 'osc-dp')['uuid'])
        else:
            # By name from 2.2, as upstream.
            self.assert_refused('needs microversion 2.2', 'member',
                                'device profile show', 'osc-dp')
        if self.refusals:
            self.assert_refused(POLICY, 'member', 'device profile create',
                                'x', '--group', 'resources:FPGA=1')
            self.assertEqual([], self.get('/v2/device_profiles?name=x')[
                'device_profiles'])
        return made['uuid']

    def deployables(self):
        [expected] = self.aio.deployables
        [listed] = self.osc('admin', 'deployable list')
        self.assertEqual(expected['uuid'], listed['uuid'])
        self.assertEqual(expected['name'], self.osc(
            'admin', 'deployable show', expected['uuid'])['name'])
        image = self.aio.image['id']
        self.osc('admin', 'deployable program', expected['uuid'], image)
        self.assertEqual(image, self.get(
            '/v2/deployables/' + expected['uuid'])['bitstream_id'])

    def devices(self):
        [device] = self.osc('admin', 'device list')
        self.assertEqual(('FPGA', self.aio.hostname),
                         (device['type'], device['hostname']))
        shown = self.osc('admin', 'device show', device['uuid'])
        # The status shows from 2.3 (the client leaves the column out
        # before).
        self.assertEqual((device['uuid'], 'enabled' if self.version
                          else None), (shown['uuid'], shown.get('status')))
        path = '/v2/devices/' + device['uuid']
        if self.refusals:
            self.assert_refused(POLICY, 'member', 'device show',
                                device['uuid'])
            # The client does not look at the answer to enable and
            # disable: a refusal is silent, the device stays as it was.
            self.osc('member', 'device disable', device['uuid'],
                     json_output=False)
            self.assertEqual('enabled', self.get(path, '2.3')['status'])
        self.osc('admin', 'device disable', device['uuid'],
                 json_output=False)
        self.assertEqual('maintaining', self.get(path, '2.3')['status'])
        self.osc('admin', 'device enable', device['uuid'],
                 json_output=False)
        self.assertEqual('enabled', self.get(path, '2.3')['status'])

    def attributes(self):
        listed = self.osc('admin', 'device attribute list')
        deployable_id = str(listed[0]['deployable_id'])
        made = self.osc('admin', 'device attribute create', deployable_id,
                        'owner', 'team-a')
        path = '/v2/attributes/' + made['uuid']
        held = self.get(path)
        self.assertEqual(('owner', 'team-a', listed[0]['deployable_id']),
                         (held['key'], held['value'], held['deployable_id']))
        # Or by the deployable's uuid, which "deployable list" shows.
        [deployable] = self.osc('admin', 'deployable list')
        by_uuid = self.osc('admin', 'device attribute create',
                           deployable['uuid'], 'team', 'b')
        self.assertEqual(listed[0]['deployable_id'], self.get(
            '/v2/attributes/' + by_uuid['uuid'])['deployable_id'])
        self.osc('admin', 'device attribute delete', by_uuid['uuid'],
                 json_output=False)
        self.assertEqual('team-a', self.osc(
            'admin', 'device attribute show', made['uuid'])['value'])
        self.osc('admin', 'device attribute delete', made['uuid'],
                 json_output=False)
        self.assertEqual(404, self.get(path))

class DefaultMicroversionTest(_Commands, testtools.TestCase):
    """At the microversion the client sends unless told (2.0)."""

    refusals = True


class Microversion23Test(_Commands, testtools.TestCase):
    """With ``--os-accelerator-api-version 2.3``."""

    version = '2.3'
