"""What ``test_osc`` and ``test_cyborgclient`` share: running a
virtualenv's ``openstack accelerator ...`` as users run it, and the steps
of an accelerator request's life (create, list, show, bind with Nova's
tokens, unbind, delete), whose commands both clients name alike.

A test class mixes :class:`Steps` in and sets ``bin_dir`` (the
virtualenv's bin directory), ``env`` (the commands' environment, with
``HOME`` and ``OS_CLIENT_CONFIG_FILE``), ``aio`` (``clients.AllInOne``)
and ``ran`` (a set); ``profile`` names the device profile its ARQs use,
``bind_extra`` what its client's ``arq bind`` takes after the provider.
"""

import json
import os
import subprocess
import time

from cyborg.tests.functional import clients

INSTANCE = '7e5a9c1d-3b2f-4d6e-8a0c-9f1e2d3c4b5a'

#: Every command of the group ``openstack.accelerator.v2``, as both
#: clients name them, with the step that runs it.
COVERED = {
    'accelerator device profile create': 'device_profiles',
    'accelerator device profile list': 'device_profiles',
    'accelerator device profile show': 'device_profiles',
    'accelerator device profile delete': 'test_every_command',
    'accelerator deployable list': 'deployables',
    'accelerator deployable show': 'deployables',
    'accelerator deployable program': 'deployables',
    'accelerator device list': 'devices',
    'accelerator device show': 'devices',
    'accelerator device disable': 'devices',
    'accelerator device enable': 'devices',
    'accelerator device attribute list': 'attributes',
    'accelerator device attribute create': 'attributes',
    'accelerator device attribute show': 'attributes',
    'accelerator device attribute delete': 'attributes',
    'accelerator arq create': 'accelerator_requests',
    'accelerator arq list': 'accelerator_requests',
    'accelerator arq show': 'accelerator_requests',
    'accelerator arq bind': 'bind_and_unbind',
    'accelerator arq unbind': 'bind_and_unbind',
    'accelerator arq delete': 'accelerator_requests',
}


class Failed(Exception):
    def __init__(self, command):
        super().__init__('%s: exit %d\n%s' % (
            ' '.join(command.args), command.returncode, command.stderr))
        self.stderr = command.stderr


class Steps:

    #: The microversion given with --os-accelerator-api-version, if any.
    version = None
    #: Whether to check what each role may not do too. It does not
    #: depend on the microversion: one class does it.
    refusals = False
    #: The device profile the ARQs are made of.
    profile = None
    #: The arguments of ``arq bind`` after the provider.
    bind_extra = ()

    def osc(self, cloud, command, *args, json_output=True):
        """The virtualenv's ``openstack --os-cloud <cloud> accelerator
        <command> <args>``; its JSON output (or text), or ``Failed``
        raised."""
        argv = [os.path.join(self.bin_dir, 'openstack'), '--os-cloud',
                cloud]
        if self.version:
            argv += ['--os-accelerator-api-version', self.version]
        argv += ['accelerator'] + command.split() + list(args)
        if json_output:
            argv += ['-f', 'json']
        done = subprocess.run(argv, env=self.env, capture_output=True,
                              text=True, timeout=120, cwd=self.env['HOME'])
        if done.returncode:
            raise Failed(done)
        self.ran.add('accelerator ' + command)
        return json.loads(done.stdout) if json_output else done.stdout

    def assert_refused(self, reason, cloud, command, *args, **kwargs):
        """The command fails, and says ``reason``."""
        error = self.assertRaises(Failed, self.osc, cloud, command, *args,
                                  **kwargs)
        self.assertIn(reason, error.stderr)

    def get(self, path, version=None):
        found = self.aio.api('GET', path, version)
        return found.json() if found.status_code == 200 else (
            found.status_code)

    def hardware(self):
        """The deployable, device and attribute commands (the class's
        ``deployables``, ``devices`` and ``attributes``)."""
        self.deployables()
        self.devices()
        self.attributes()

    def wait_for_state(self, uuid, state, timeout=30):
        path = '/v2/accelerator_requests/' + uuid
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            held = self.get(path)
            if held['state'] == state:
                return held
            time.sleep(0.2)
        self.fail('ARQ %s stayed %s, not %s' % (uuid, held['state'], state))

    def accelerator_requests(self):
        arq = self.osc('member', 'arq create', self.profile)
        path = '/v2/accelerator_requests/' + arq['uuid']
        held = self.get(path)
        self.assertEqual(('Initial', self.profile, clients.PROJECT),
                         (held['state'], held['device_profile_name'],
                          held['project_id']))
        self.assertIn(arq['uuid'], [a['uuid'] for a in self.osc(
            'member', 'arq list')])
        self.assertEqual('Initial', self.osc('member', 'arq show',
                                             arq['uuid'])['state'])
        if self.refusals:
            self.assertNotIn(arq['uuid'], [a['uuid'] for a in self.osc(
                'other', 'arq list')])
        self.bind_and_unbind(arq['uuid'], path)
        self.osc('member', 'arq delete', arq['uuid'], json_output=False)
        self.assertEqual(404, self.get(path))

    def bind_and_unbind(self, uuid, path):
        """Nova's part: a member's token and a service token."""
        bind = ('arq bind', uuid, self.aio.hostname, INSTANCE,
                self.aio.deployables[0]['rp_uuid'], *self.bind_extra)
        if self.refusals:
            self.assert_refused('needs a service token', 'member', *bind)
            self.assertEqual('Initial', self.get(path)['state'])
        self.osc('nova', *bind)
        bound = self.wait_for_state(uuid, 'Bound')
        self.assertEqual((INSTANCE, self.aio.hostname),
                         (bound['instance_uuid'], bound['hostname']))
        self.check_bound(bound)
        if self.refusals:
            self.assert_refused('is Bound for instance %s; deleting it '
                                'needs a service token' % INSTANCE,
                                'member', 'arq delete', uuid,
                                json_output=False)
        self.osc('nova', 'arq unbind', uuid)
        unbound = self.get(path)
        self.assertEqual(('Unbound', None, None),
                         (unbound['state'], unbound['instance_uuid'],
                          unbound['hostname']))

    def check_bound(self, bound):
        """More checks of the bound ARQ ``bound`` (the API's view)."""
