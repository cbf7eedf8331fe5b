"""The ``cyborg`` admin command line against ``cyborg-aio``, as an
operator runs it: the installed console script in a subprocess, with the
all-in-one's noauth (``OS_ENDPOINT``) unless a test says otherwise. Every
command, its output formats, and its failures: one line on stderr and a
non-zero exit."""

import csv
import json
import os
import subprocess
import sys
import uuid

import fixtures
import requests
import testtools
import yaml

from cyborg.cli import accelerators
from cyborg.tests.functional import clients

CYBORG = os.path.join(os.path.dirname(sys.executable), 'cyborg')
ADMIN = {'X-Auth-Token': 'admin'}
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}


class _CliTest(testtools.TestCase):
    """An all-in-one, and ``cyborg`` commands pointed at it."""

    def setUp(self):
        super().setUp()
        if not os.path.exists(CYBORG):
            self.fail('%s is missing: install cyborg (pip install -e .) so '
                      'its console scripts exist' % CYBORG)
        with open(CYBORG) as f:
            if 'cyborg.cmd.cli' not in f.read():
                # python-cyborgclient's legacy shell has the same name.
                self.fail('%s is not cyborg\'s command (python-cyborgclient '
                          'installed after cyborg replaced it): install '
                          'cyborg again (pip install --no-deps -e .)'
                          % CYBORG)
        self.home = self.useFixture(fixtures.TempDir()).path
        self.aio = self.useFixture(clients.AllInOne(self))
        self.aio.wait_for_deployables()
        devices = requests.get(self.aio.base + '/v2/devices', headers=ADMIN,
                               timeout=30).json()['devices']
        self.hostname = devices[0]['hostname']

    def env(self, **changes):
        """The environment of a command: none of the machine's OS_*
        variables or clouds.yaml; ``changes`` set (None unsets)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
        env.update(HOME=self.home, PYTHONWARNINGS='ignore',
                   OS_ENDPOINT=self.aio.base)
        env.update(changes)
        return {k: v for k, v in env.items() if v is not None}

    def run_cli(self, *args, **env):
        return subprocess.run([CYBORG, *args], capture_output=True, text=True,
                              timeout=180, env=self.env(**env))

    def cyborg(self, *args, **env):
        """The standard output of a command that must succeed."""
        result = self.run_cli(*args, **env)
        self.assertEqual(0, result.returncode, '%s:\n%s%s' % (
            ' '.join(args), result.stdout, result.stderr))
        return result.stdout

    def cyborg_json(self, *args, **env):
        return json.loads(self.cyborg(*args, '-f', 'json', **env))

    def fails(self, *args, status=None, code=1, **env):
        """The one line a failing command prints on stderr."""
        result = self.run_cli(*args, **env)
        self.assertEqual(code, result.returncode, '%s:\n%s%s' % (
            ' '.join(args), result.stdout, result.stderr))
        self.assertEqual('', result.stdout)
        self.assertNotIn('Traceback', result.stderr)
        line = result.stderr.strip()
        self.assertEqual(1, len(line.splitlines()), result.stderr)
        if status is not None:
            self.assertTrue(line.endswith('(HTTP %d)' % status), line)
        return line


class AcceleratorCommandsTest(_CliTest):
    """The v1 accelerators: the all-in-one's fake card is one deployable
    of 16 accelerator units."""

    def card(self):
        """The fake card's row in accelerator-list."""
        [card] = [row for row in self.cyborg_json('accelerator-list')
                  if row['spec_version'] is None]
        return card

    def test_discovered_card_is_listed(self):
        # The agent proposal: what the agent found is listed, ready here
        # ([agent] new_device_state = ready, the all-in-one's default).
        [card] = self.cyborg_json('accelerator-list')
        self.assertEqual(('ready', 'FPGA', self.hostname, 16, None), (
            card['state'], card['device_type'], card['host'], card['free'],
            card['spec_version']))
        self.assertEqual(card['uuid'], self.cyborg_json(
            'accelerator-show', card['uuid'])['deployable_uuid'])
        self.assertIn('POST /v1/accelerators', self.fails(
            'accelerator-attach', card['uuid'], status=409))

    def test_create_list_show_update(self):
        acc_uuid = str(uuid.uuid4())
        created = self.cyborg_json('accelerator-create', 'cli-acc',
                                   '--uuid', acc_uuid)
        self.assertEqual((acc_uuid, 'cli-acc', 'available', self.hostname,
                          1, 'FPGA'),
                         (created['uuid'], created['name'], created['state'],
                          created['host'], created['spec_version'],
                          created['acc_specs']['device_type']))
        self.assertIn('already exists', self.fails(
            'accelerator-create', 'cli-acc', status=409))
        # The card has 16 accelerators: another name gets another one.
        self.assertEqual('available', self.cyborg_json(
            'accelerator-create', 'cli-other')['state'])
        self.assertEqual(14, self.card()['free'])
        self.check_list_formats(acc_uuid)
        self.check_show(acc_uuid)
        self.check_update(acc_uuid)

    def check_list_formats(self, acc_uuid):
        row, _other, card = self.cyborg_json('accelerator-list')
        self.assertEqual(list(accelerators.LIST_FIELDS), list(row))
        self.assertEqual((None, 14), (row['free'], card['free']))
        self.assertEqual((acc_uuid, 'FPGA', None),
                         (row['uuid'], row['device_type'],
                          row['instance_uuid']))
        table = self.cyborg('accelerator-list')
        self.assertIn('| uuid ', table)
        self.assertIn('| %s |' % acc_uuid, table)
        self.assertEqual(
            [acc_uuid, 'cli-acc', 'available', 'FPGA', self.hostname],
            self.cyborg('accelerator-list', '-f', 'value').split()[:5])
        self.assertEqual([row, _other, card], yaml.safe_load(
            self.cyborg('accelerator-list', '-f', 'yaml')))
        [header, values, _second, _card] = list(csv.reader(self.cyborg(
            'accelerator-list', '-f', 'csv').splitlines()))
        self.assertEqual(list(accelerators.LIST_FIELDS), header)
        self.assertEqual(acc_uuid, values[0])
        self.assertEqual('cli-acc\ncli-other\n%s\n' % card['name'],
                         self.cyborg('accelerator-list', '-c', 'name', '-f',
                                     'value'))

    def check_show(self, acc_uuid):
        shown = yaml.safe_load(self.cyborg('accelerator-show', acc_uuid,
                                           '-f', 'yaml'))
        self.assertEqual({'remote', 'num', 'device_type', 'acc_capability'},
                         set(shown['acc_specs']))
        self.assertNotIn('links', shown)
        table = self.cyborg('accelerator-show', acc_uuid)
        self.assertIn('| acc_specs ', table)
        self.assertIn('"device_type": "FPGA"', table)
        self.assertEqual(self.hostname + '\n', self.cyborg(
            'accelerator-show', acc_uuid, '-c', 'host', '-f', 'value'))
        self.assertIn('could not be found', self.fails(
            'accelerator-show', str(uuid.uuid4()), status=404))
        self.assertIn('not-a-uuid', self.fails(
            'accelerator-show', 'not-a-uuid', status=400))

    def check_update(self, acc_uuid):
        spec_file = os.path.join(self.home, 'spec.json')
        with open(spec_file, 'w') as f:
            json.dump({'remote': 1, 'acc_capability': {'note': 'cli'}}, f)
        updated = self.cyborg_json('accelerator-update', acc_uuid,
                                   '--spec', '@' + spec_file)
        self.assertEqual((2, 1, {'note': 'cli'}),
                         (updated['spec_version'],
                          updated['acc_specs']['remote'],
                          updated['acc_specs']['acc_capability']))
        # Based on version 1, which someone (the update above) changed.
        self.fails('accelerator-update', acc_uuid, '--spec', '{"remote": 0}',
                   '--spec-version', '1', status=409)
        self.assertEqual(3, self.cyborg_json(
            'accelerator-update', acc_uuid, '--spec', '{"remote": 0}',
            '--spec-version', '2')['spec_version'])
        self.assertIn('--spec is not valid JSON', self.fails(
            'accelerator-update', acc_uuid, '--spec', '{"remote": 0'))
        self.assertIn('cannot be changed', self.fails(
            'accelerator-update', acc_uuid, '--spec', '{"num": 99}',
            status=400))
        self.fails('accelerator-update', str(uuid.uuid4()), '--spec', '{}',
                   status=404)
        self.assertIn('--spec', self.run_cli('accelerator-update',
                                             acc_uuid).stderr)

    def test_attach_and_detach(self):
        acc_uuid = self.cyborg_json('accelerator-create', 'cli-att')['uuid']
        instance = str(uuid.uuid4())
        attached = self.cyborg_json('accelerator-attach', acc_uuid,
                                    '--instance', instance)
        self.assertEqual(('attached', instance),
                         (attached['state'], attached['instance_uuid']))
        self.assertIn('attached', self.fails(
            'accelerator-attach', acc_uuid, '--host', self.hostname,
            status=409))
        self.assertEqual('', self.cyborg('accelerator-detach', acc_uuid))
        self.fails('accelerator-detach', acc_uuid, status=409)
        attached = self.cyborg_json('accelerator-attach', acc_uuid,
                                    '--host', self.hostname)
        self.assertEqual(('attached', self.hostname, None),
                         (attached['state'], attached['attached_host'],
                          attached['instance_uuid']))
        self.cyborg('accelerator-detach', acc_uuid)
        self.assertEqual('available', self.cyborg_json(
            'accelerator-show', acc_uuid)['state'])
        self.fails('accelerator-detach', str(uuid.uuid4()), status=404)
        self.fails('accelerator-attach', acc_uuid, '--instance', 'nope',
                   status=400)
        # Neither: the host it is on (the API proposal's attach).
        attached = self.cyborg_json('accelerator-attach', acc_uuid)
        self.assertEqual(('attached', self.hostname, None),
                         (attached['state'], attached['attached_host'],
                          attached['instance_uuid']))
        # Both: argparse's exit 2.
        self.assertEqual(2, self.run_cli(
            'accelerator-attach', acc_uuid, '--host', 'h', '--instance',
            str(uuid.uuid4())).returncode)

    def test_authentication_and_endpoint(self):
        self.assertIn('--os-endpoint', self.fails('accelerator-list',
                                                  OS_ENDPOINT=None))
        listed = self.cyborg_json('accelerator-list')
        self.assertEqual(1, len(listed))
        self.assertEqual(listed, self.cyborg_json(
            '--os-endpoint', self.aio.base + '/v2', 'accelerator-list',
            OS_ENDPOINT=None))
        self.assertIn('Policy does not allow', self.fails(
            'accelerator-list', OS_USERNAME='bob', status=403))
        self.assertEqual('Cannot connect to the accelerator service at '
                         'http://127.0.0.1:9', self.fails(
                             '--os-endpoint', 'http://127.0.0.1:9',
                             'accelerator-list'))
        result = self.run_cli('--debug', 'accelerator-list',
                              OS_ENDPOINT='http://127.0.0.1:9')
        self.assertEqual(1, result.returncode)
        self.assertIn('Traceback', result.stderr)
        # clouds.yaml, through openstacksdk's loader and keystoneauth.
        clouds = os.path.join(self.home, 'clouds.yaml')
        with open(clouds, 'w') as f:
            yaml.safe_dump({'clouds': {
                'aio': {'auth_type': 'admin_token',
                        'auth': {'endpoint': self.aio.base + '/v2',
                                 'token': 'admin'}},
                'other': {'auth': {'auth_url': 'http://127.0.0.1:9/v3'}}}},
                f)
        self.assertEqual(listed, self.cyborg_json(
            '--os-cloud', 'aio', 'accelerator-list', OS_ENDPOINT=None,
            OS_CLIENT_CONFIG_FILE=clouds))
        self.assertEqual(listed, self.cyborg_json(
            'accelerator-list', OS_ENDPOINT=None, OS_CLOUD='aio',
            OS_CLIENT_CONFIG_FILE=clouds))
        self.assertIn('nowhere', self.fails(
            '--os-cloud', 'nowhere', 'accelerator-list',
            OS_CLIENT_CONFIG_FILE=clouds))


class OperationCommandsTest(_CliTest):
    """The generic-driver operations of microversion 2.5."""

    def test_hosts_drivers_discovery_services(self):
        [host] = self.cyborg_json('host-list')
        self.assertEqual((self.hostname, 'up'),
                         (host['hostname'], host['status']))
        self.assertIn(('fake_driver', 'READY'),
                      [(d['name'], d['status']) for d in host['drivers']])
        self.assertIn('fake_driver (READY)', self.cyborg('host-list'))
        self.assertIn('Policy does not allow', self.fails(
            'host-list', OS_USERNAME='bob', status=403))

        drivers = self.cyborg_json('driver-list')
        self.assertIn((self.hostname, 'fake_driver', 'READY'),
                      [(d['host'], d['name'], d['status']) for d in drivers])
        self.assertEqual(drivers, self.cyborg_json('driver-list', '--host',
                                                   self.hostname))

        report = {'hostname': self.hostname, 'status': 'reported',
                  'devices': 1, 'deployables': 1}
        self.assertEqual([report], self.cyborg_json('discover-services'))
        self.assertEqual([report], self.cyborg_json(
            'discover-services', '--host', self.hostname, '--timeout', '30'))

        services = self.cyborg_json('service-list')
        self.assertTrue(services)
        self.assertEqual({(self.hostname, 'FPGA')},
                         {(s['host'], s['device_type']) for s in services})
        self.assertTrue(all(s['driver_name'] and s['service']
                            for s in services), services)
        self.assertEqual(services, self.cyborg_json(
            'service-list', '--host', self.hostname, '--type', 'FPGA'))
        self.assertEqual([], self.cyborg_json('service-list', '--type',
                                              'GPU'))

    def create_profile(self):
        name = 'cli-%s' % uuid.uuid4().hex[:6]
        response = requests.post(self.aio.base + '/v2/device_profiles',
                                 headers=ADMIN, timeout=30,
                                 json=[{'name': name, 'groups': [GROUP]}])
        self.assertEqual(201, response.status_code, response.text)
        return name

    def test_attach_instance_and_driver_lifecycle(self):
        updated = self.cyborg_json('update-driver', 'fake_driver')
        self.assertEqual([(self.hostname, 'fake_driver', 'READY')],
                         [(d['host'], d['name'], d['status'])
                          for d in updated])
        self.fails('install-driver', 'no_such_driver', status=400)
        self.fails('install-driver', 'fake_driver', '--host', 'nohost',
                   status=404)

        profile = self.create_profile()
        instance = str(uuid.uuid4())
        arqs = self.cyborg_json('attach-instance', instance,
                                '--device-profile', profile)
        self.assertEqual({(instance, profile)},
                         {(a['instance_uuid'], a['device_profile_name'])
                          for a in arqs})
        self.assertIn('in use', self.fails('uninstall-driver',
                                           'fake_driver', status=409))
        self.fails('attach-instance', str(uuid.uuid4()), '--device-profile',
                   'no-such-profile', status=404)
        self.assertEqual('', self.cyborg('detach-instance', instance))
        self.fails('detach-instance', instance, status=404)

        self.assertEqual('', self.cyborg('uninstall-driver', 'fake_driver',
                                         '--host', self.hostname))
        self.assertNotIn('fake_driver', [d['name'] for d in self.cyborg_json(
            'driver-list', '--host', self.hostname)])
        # Its card left accelerator-list with it.
        self.assertEqual([], self.cyborg_json('accelerator-list'))
        self.fails('uninstall-driver', 'fake_driver', status=404)
        installed = self.cyborg_json('install-driver', 'fake_driver',
                                     '--host', self.hostname)
        self.assertEqual([(self.hostname, 'fake_driver', 'READY')],
                         [(d['host'], d['name'], d['status'])
                          for d in installed])
        # The agent reported before install-driver answered: the card is
        # in accelerator-list at once, no waiting for a rescan.
        self.assertEqual([(self.hostname, 'ready', 16)], [
            (a['host'], a['state'], a['free'])
            for a in self.cyborg_json('accelerator-list')])
