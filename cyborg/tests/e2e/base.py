"""What every end-to-end test case shares: its cloud's life, the checks
made before each test, device profiles and flavors, and the helpers that
boot, watch, act on and delete servers through Nova's API.

A test case (``E2ETestCase``) gets one cloud for the class
(``start_cloud``, cleaned up by ``stop_cloud`` after the last test), with
the device profiles of ``profiles`` and the flavors of ``flavor_profiles``
(``self.flavors``: flavor name to id) made in it. A class whose
``results`` is a dict writes it to ``results.json`` in its cloud's
directory at the end, where ``tools/nova-e2e`` finds and prints it.
Without ``CYBORG_NOVA_E2E_VENV`` (set by ``tools/nova-e2e``) no cloud is
started and every test is skipped.
"""

import json
import os
import tempfile

import testtools

from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import standins
from cyborg.tests import services

WORKDIR_ENV = 'CYBORG_NOVA_E2E_WORKDIR'


def work_directory(name=None):
    """The work directory ``tools/nova-e2e`` gave (a new temporary one
    without it), or its subdirectory ``name``, made if need be."""
    path = os.environ.get(WORKDIR_ENV) or tempfile.mkdtemp(
        prefix='cyborg-nova-e2e-')
    if name:
        path = os.path.join(path, name)
        os.makedirs(path, exist_ok=True)
    return path


def add_profiles(cloud, profiles):
    """Make the device profiles ``profiles`` ({name: groups})."""
    for name, groups in profiles.items():
        cloud.cyborg('POST', '/device_profiles', [
            {'name': name, 'groups': groups}], expect=201)


def add_flavor(cloud, name, profile=None):
    """A small flavor whose ``accel:device_profile`` is ``profile`` (none
    without it); its id."""
    flavor = cloud.nova('POST', '/flavors', {'flavor': {
        'name': name, 'ram': 64, 'vcpus': 1, 'disk': 1}}, admin=True,
        expect=200).json()['flavor']['id']
    if profile is not None:
        cloud.nova('POST', '/flavors/%s/os-extra_specs' % flavor,
                   {'extra_specs': {'accel:device_profile': profile}},
                   admin=True, expect=200)
    return flavor


class E2ETestCase(testtools.TestCase):

    #: {device profile name: groups}, made once the cloud is up.
    profiles = {}
    #: Figures for ``results.json``; None: no such file.
    results = None
    cloud = None
    flavors = {}

    # -- the class's cloud -------------------------------------------------

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.venv = os.environ.get(e2e.VENV_ENV)
        if not cls.venv:
            return
        cls.cloud = cls.start_cloud()
        if cls.cloud is None:
            return
        try:
            cls.set_up_cloud()
        except Exception:
            cls.stop_cloud()
            raise

    @classmethod
    def start_cloud(cls):
        """The class's cloud, started; None for a class that makes its
        cloud in each test."""
        return None

    @classmethod
    def flavor_profiles(cls):
        """{flavor name: the device profile it names} to make."""
        return {'e2e.' + name: name for name in cls.profiles}

    @classmethod
    def set_up_cloud(cls):
        add_profiles(cls.cloud, cls.profiles)
        cls.flavors = {name: add_flavor(cls.cloud, name, profile)
                       for name, profile in cls.flavor_profiles().items()}

    @classmethod
    def stop_cloud(cls):
        cls.cloud.cleanUp()

    @classmethod
    def tearDownClass(cls):
        if cls.cloud is not None:
            try:
                if cls.results is not None:
                    with open(os.path.join(cls.cloud.workdir,
                                           'results.json'), 'w') as f:
                        json.dump(cls.results, f, indent=2, sort_keys=True)
            finally:
                cls.stop_cloud()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if not self.venv:
            self.skipTest('%s is not set: run tools/nova-e2e' % e2e.VENV_ENV)
        for name in ('rabbit', 'mysql'):
            services.require(self, name)
        if self.cloud is not None:
            self.cloud.check_running()
            self.failures_before = len(self.cloud.proxy.failures)

    # -- servers -----------------------------------------------------------

    def create_server(self, flavor_id, name, networks='none'):
        """POST a server; its id. Nothing deletes it."""
        return self.cloud.nova('POST', '/servers', {'server': {
            'name': name, 'imageRef': standins.IMAGE_ID,
            'flavorRef': flavor_id, 'networks': networks}},
            expect=202).json()['server']['id']

    def boot(self, flavor, name='e2e', networks='none', wait=True):
        """A server of the flavor named ``flavor``, deleted (``delete``)
        after the test; ACTIVE unless ``wait`` is false."""
        server = self.create_server(self.flavors[flavor], name, networks)
        self.addCleanup(self.delete, server)
        if wait:
            self.wait_for(server, 'ACTIVE')
        return server

    def server(self, server):
        """The server as an administrator sees it (with its host)."""
        return self.cloud.nova('GET', '/servers/%s' % server, admin=True,
                               expect=200).json()['server']

    def wait_for(self, server, status):
        """Until ``server`` has ``status`` and no task; what Nova shows.
        AssertionError as soon as it is ERROR, unless ERROR is awaited."""
        def reached():
            shown = self.server(server)
            if shown['status'] == 'ERROR' and status != 'ERROR':
                raise AssertionError('server %s is ERROR: %s' % (
                    server, shown.get('fault')))
            return (shown['status'] == status and
                    not shown.get('OS-EXT-STS:task_state') and shown)
        return e2e.wait(reached, e2e.BOOT_TIMEOUT,
                        'server %s %s' % (server, status))

    def action(self, server, body, expect=202, admin=False):
        return self.cloud.nova('POST', '/servers/%s/action' % server, body,
                               expect=expect, admin=admin)

    def delete_server(self, server):
        """Delete ``server`` and wait until Nova no longer has it; False
        if it had it no longer."""
        response = self.cloud.nova('DELETE', '/servers/%s' % server)
        if response.status_code == 404:
            return False
        self.assertEqual(204, response.status_code, response.text)
        e2e.wait(lambda: self.cloud.nova(
            'GET', '/servers/%s' % server).status_code == 404,
            e2e.BOOT_TIMEOUT, 'server %s deleted' % server)
        return True

    def delete(self, server):
        """``delete_server``, and check that its ARQs and allocations
        went with it."""
        if not self.delete_server(server):
            return
        left = self.cloud.arqs(server)
        if left:
            # Nova logs a failed delete and goes on: say what it saw.
            raise AssertionError(
                'server %s is deleted but its ARQs are not: %s\n'
                'Nova\'s calls that failed: %s\nnova-compute on it:\n%s\n'
                'cyborg\'s warnings and errors:\n%s' % (
                    server, left, self.cloud.proxy.failures,
                    '\n'.join(self.cloud.log_lines('nova-compute', server)[
                        -20:]),
                    '\n'.join(
                        [line for line in self.cloud.log_lines('cyborg')
                         if ' WARNING ' in line or ' ERROR ' in line][-20:])))
        self.assertEqual({}, self.cloud.allocations(server))

    def no_valid_host(self, flavor, name):
        """A server of ``flavor`` ends ERROR, no host found, without ARQs
        or allocations; its id."""
        server = self.boot(flavor, name=name, wait=False)
        shown = self.wait_for(server, 'ERROR')
        self.assertIn('No valid host', shown['fault']['message'])
        self.assertEqual([], self.cloud.arqs(server))
        self.assertEqual({}, self.cloud.allocations(server))
        return server

    # -- cyborg and Placement ---------------------------------------------

    def only_device(self, host=e2e.HOST):
        """The uuid of the one provider cyborg has under ``host``."""
        [device] = [p['uuid']
                    for p in self.cloud.provider_tree(host)['children']]
        return device

    def last_seen(self, host=e2e.HOST):
        """When cyborg last heard from the agent of ``host``."""
        return self.cloud.cyborg('GET', '/hosts/%s' % host, version='2.5',
                                 expect=200).json()['last_seen_at']

    def report_strays(self):
        """No unexpected request to the stand-ins, and no call of Nova's
        to cyborg that failed on cyborg's side, during the test."""
        for standin in (self.cloud.glance, self.cloud.neutron):
            self.assertEqual([], standin.unexpected)
        self.assertEqual([], self.cloud.proxy.failures[self.failures_before:])
