"""A test case whose cloud's cyborg agent sees a captured-style sysfs tree
(real drivers, no fake card) instead of the fake driver's card.

Each class gets a cloud of its own (``cloud.NovaCloud`` with
``sysfs_root``), in ``<work directory>/<name>``, on the tree its
``build_tree`` writes, with its ``cyborg_options``; it creates
``profiles`` (device profile name: groups) and one flavor ``e2e.<name>``
per profile, and ``e2e.plain``, which asks for no accelerator. Server
helpers are test_nova's. Every exchange between Nova and cyborg goes to
``cyborg-calls.json`` in its directory at the end.
"""

import json
import os
import tempfile

import testtools

from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import standins
from cyborg.tests.e2e import test_nova
from cyborg.tests import services

_Boots = test_nova.NovaBootsWithCyborgTest


class HardwareTestCase(testtools.TestCase):

    #: The directory of the class's cloud, under the work directory.
    name = 'hardware'
    cyborg_options = {}
    nova_options = {}
    profiles = {}

    @staticmethod
    def build_tree(root):
        """Write the sysfs tree under ``root``."""
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.venv = os.environ.get(e2e.VENV_ENV)
        if not cls.venv:
            return
        cls.workdir = os.path.join(
            os.environ.get(test_nova.WORKDIR_ENV) or tempfile.mkdtemp(
                prefix='cyborg-nova-e2e-'), cls.name)
        root = os.path.join(cls.workdir, 'sys')
        cls.build_tree(root)
        cls.cloud = e2e.NovaCloud(cls.venv, cls.workdir, sysfs_root=root,
                                  cyborg_options=cls.cyborg_options,
                                  nova_options=cls.nova_options)
        cls.cloud.setUp()
        try:
            # A flavor that asks for no accelerator (ports bring theirs).
            cls.flavors = {'e2e.plain': cls.cloud.nova(
                'POST', '/flavors', {'flavor': {
                    'name': 'e2e.plain', 'ram': 64, 'vcpus': 1, 'disk': 1}},
                admin=True, expect=200).json()['flavor']['id']}
            for name, groups in cls.profiles.items():
                cls.cloud.cyborg('POST', '/device_profiles', [
                    {'name': name, 'groups': groups}], expect=201)
                cls.flavors['e2e.' + name] = _Boots._flavor.__func__(
                    cls, 'e2e.' + name, name)
        except Exception:
            cls.cloud.cleanUp()
            raise

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, 'cloud', None) is not None:
            # What Nova asked cyborg and what it got, for the curious.
            with open(os.path.join(cls.workdir, 'cyborg-calls.json'),
                      'w') as f:
                json.dump(cls.cloud.proxy.exchanges, f, indent=1)
            cls.cloud.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if not self.venv:
            self.skipTest('%s is not set: run tools/nova-e2e' % e2e.VENV_ENV)
        for name in ('rabbit', 'mysql'):
            services.require(self, name)
        self.cloud.check_running()
        self.failures_before = len(self.cloud.proxy.failures)
        self.addCleanup(self._report_strays)

    _report_strays = _Boots._report_strays
    server = _Boots.server
    wait_for = _Boots.wait_for
    action = _Boots.action
    delete = _Boots.delete

    def boot(self, flavor, name='e2e', networks='none', wait=True):
        server = self.cloud.nova('POST', '/servers', {'server': {
            'name': name, 'imageRef': standins.IMAGE_ID,
            'flavorRef': self.flavors[flavor], 'networks': networks}},
            expect=202).json()['server']['id']
        self.addCleanup(self.delete, server)
        if wait:
            self.wait_for(server, 'ACTIVE')
        return server

    def providers(self):
        """{name: uuid} of cyborg's providers under the compute node."""
        return {p['name']: p['uuid']
                for p in self.cloud.provider_tree()['children']}
