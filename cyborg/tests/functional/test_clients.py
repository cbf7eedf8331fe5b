"""The real clients against ``cyborg-aio`` as a user starts it:
openstacksdk's accelerator proxy, ``openstack accelerator ...``
(python-openstackclient with python-cyborgclient) and Nova's boot
sequence on the wire. Authentication is the all-in-one's noauth: the
token ``admin`` is the cloud admin; Nova sends a service token's roles.
"""

import json
import os
import subprocess
import sys
import time
import uuid

import fixtures
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
import openstack
import requests
import testtools

from cyborg.tests.functional import daemons
from cyborg.tests.functional import nova

GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}


class _AllInOne(fixtures.Fixture):
    """``cyborg-aio`` on a free port, until the test ends."""

    def __init__(self, test):
        super().__init__()
        self.test = test

    def _setUp(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.port = daemons.free_port()
        self.base = 'http://127.0.0.1:%d' % self.port
        config = daemons.write_config(os.path.join(tmp, 'aio.conf'), {
            'DEFAULT': {'host': 'clients-%s' % uuid.uuid4().hex[:8]}})
        self.daemon = daemons.Daemon(
            self.test, 'aio', ['--port', str(self.port), '--state-dir',
                               os.path.join(tmp, 'state'), '--config-file',
                               config], os.path.join(tmp, 'aio.log'))
        daemons.wait_for_http(self.base + '/v2', daemon=self.daemon)

    def wait_for_deployables(self, timeout=60):
        """The all-in-one's own agent reports its fake card at start."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            response = requests.get(self.base + '/v2/deployables',
                                    headers={'X-Auth-Token': 'admin'},
                                    timeout=10)
            if response.status_code == 200 and response.json()[
                    'deployables']:
                return response.json()['deployables']
            time.sleep(0.2)
        raise AssertionError('the agent never reported its devices:\n%s'
                             % self.daemon.output())


class ClientsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.aio = self.useFixture(_AllInOne(self))
        self.deployables = self.aio.wait_for_deployables()

    def sdk(self, **headers):
        auth = token_endpoint.Token(self.aio.base, 'admin')
        session = ks_session.Session(auth=auth, additional_headers=headers)
        return openstack.connection.Connection(
            session=session, accelerator_endpoint_override=self.aio.base)

    def osc(self, *args):
        """``openstack <args> -f json`` as an operator runs it."""
        command = [os.path.join(os.path.dirname(sys.executable),
                                'openstack'),
                   '--os-auth-type', 'admin_token', '--os-token', 'admin',
                   '--os-endpoint', self.aio.base, *args]
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=120,
                                env=dict(os.environ, PYTHONWARNINGS='ignore'))
        self.assertEqual(0, result.returncode,
                         '%s:\n%s%s' % (' '.join(args), result.stdout,
                                        result.stderr))
        return json.loads(result.stdout) if result.stdout.strip() else None

    def test_openstacksdk_accelerator_proxy(self):
        accelerator = self.sdk().accelerator
        name = 'sdk-%s' % uuid.uuid4().hex[:6]
        created = accelerator.create_device_profile(name=name,
                                                    groups=[GROUP])
        self.assertEqual(name, created.name)
        self.assertIn(name, [p.name for p in accelerator.device_profiles()])
        fetched = accelerator.get_device_profile(created.uuid)
        self.assertEqual([GROUP], fetched.groups)
        names = {d.name for d in accelerator.deployables()}
        self.assertEqual({d['name'] for d in self.deployables}, names)
        self.assertTrue(list(accelerator.devices()))
        accelerator.delete_device_profile(created.uuid)
        self.assertNotIn(name,
                         [p.name for p in accelerator.device_profiles()])

    def test_openstack_accelerator_commands(self):
        name = 'osc-%s' % uuid.uuid4().hex[:6]
        self.osc('accelerator', 'device', 'profile', 'create', name,
                 json.dumps([GROUP]), '-f', 'json')
        listed = self.osc('accelerator', 'device', 'profile', 'list',
                          '-f', 'json')
        self.assertIn(name, [p['name'] for p in listed])
        shown = self.osc('accelerator', 'device', 'profile', 'show',
                         [p['uuid'] for p in listed
                          if p['name'] == name][0], '-f', 'json')
        self.assertEqual(name, shown['name'])
        deployables = self.osc('accelerator', 'deployable', 'list',
                               '-f', 'json')
        self.assertEqual(len(self.deployables), len(deployables))
        devices = self.osc('accelerator', 'device', 'list', '-f', 'json')
        self.assertTrue(devices)
        arqs = self.osc('accelerator', 'arq', 'create', name, '-f', 'json')
        self.assertTrue(arqs)
        self.assertTrue(self.osc('accelerator', 'arq', 'list', '-f',
                                 'json'))

    def test_nova_boot_sequence(self):
        name = 'nova-%s' % uuid.uuid4().hex[:6]
        response = requests.post(
            self.aio.base + '/v2/device_profiles', timeout=30,
            headers={'X-Auth-Token': 'admin'},
            json=[{'name': name, 'groups': [GROUP]}])
        self.assertEqual(201, response.status_code, response.text)
        _instance, bound = nova.boot_and_delete(
            self, self.aio.base, name, 'aio', self.deployables[0]['rp_uuid'])
        self.assertEqual('TEST_PCI', bound[0]['attach_handle_type'])
        self.assertIn('bus', bound[0]['attach_handle_info'])
