"""The real Nova with two compute hosts and cyborg as split daemons.

Run by ``tools/nova-e2e`` (skipped without ``CYBORG_NOVA_E2E_VENV``). One
cloud (``cloud.SplitCloud``) serves the module: two nova-computes, and
cyborg-api, cyborg-conductor and one cyborg-agent per host, sharing one
Placement with Nova. The hosts have different devices, so where a server
lands shows that scheduling followed them:

* ``e2e-fpga-host``: the fake driver's card, 16 FPGA functions;
* ``e2e-gpu-host``: two whole NVIDIA T4 GPUs (``PGPU``) in a sysfs tree
  made for the test (``cyborg/tests/unit/accelerator/sysfs.py``).
"""

import json
import os
import tempfile
import time

import testtools

from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import standins
from cyborg.tests import services
from cyborg.tests.unit.accelerator import sysfs

WORKDIR_ENV = 'CYBORG_NOVA_E2E_WORKDIR'
FPGA_HOST = 'e2e-fpga-host'
GPU_HOST = 'e2e-gpu-host'
GPUS = ('0000:3b:00.0', '0000:d8:00.0')
FPGAS = 16
PROFILES = {
    'two-hosts-fpga': [{'resources:FPGA': '1',
                        'trait:CUSTOM_FAKE_DEVICE': 'required'}],
    'two-hosts-pgpu': [{'resources:PGPU': '1'}],
}


def gpu_tree(root):
    """The GPU host's sysfs: two T4s the ``nvidia`` driver runs, no vGPU
    type on them, so each is offered whole."""
    tree = sysfs.SysfsTree(root)
    for address in GPUS:
        tree.add_card('tesla_t4', address)
    return tree.root


class TwoComputeHostsTest(testtools.TestCase):

    results = {}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.venv = os.environ.get(e2e.VENV_ENV)
        if not cls.venv:
            return
        base = os.environ.get(WORKDIR_ENV) or tempfile.mkdtemp(
            prefix='cyborg-nova-e2e-')
        cls.workdir = os.path.join(base, 'two-hosts')
        os.makedirs(cls.workdir, exist_ok=True)
        started = time.monotonic()
        cls.cloud = e2e.SplitCloud(cls.venv, cls.workdir, {
            FPGA_HOST: {'enabled_drivers': 'fake_driver'},
            GPU_HOST: {'enabled_drivers': 'nvidia_gpu_driver',
                       'sysfs_root': gpu_tree(os.path.join(cls.workdir,
                                                           'sys-gpu'))},
        })
        cls.cloud.setUp()
        cls.results['cloud_up_s'] = round(time.monotonic() - started, 1)
        try:
            cls.flavors = {}
            for name, groups in PROFILES.items():
                cls.cloud.cyborg('POST', '/device_profiles', [
                    {'name': name, 'groups': groups}], expect=201)
                flavor = cls.cloud.nova('POST', '/flavors', {'flavor': {
                    'name': name, 'ram': 64, 'vcpus': 1, 'disk': 1}},
                    admin=True, expect=200).json()['flavor']['id']
                cls.cloud.nova('POST', '/flavors/%s/os-extra_specs' % flavor,
                               {'extra_specs': {
                                   'accel:device_profile': name}},
                               admin=True, expect=200)
                cls.flavors[name] = flavor
        except Exception:
            cls.cloud.cleanUp()
            raise

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, 'cloud', None) is not None:
            with open(os.path.join(cls.workdir, 'results.json'), 'w') as f:
                json.dump(cls.results, f, indent=2, sort_keys=True)
            cls.cloud.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if not self.venv:
            self.skipTest('%s is not set: run tools/nova-e2e' % e2e.VENV_ENV)
        for name in ('rabbit', 'mysql'):
            services.require(self, name)
        self.cloud.check_running()
        self.trees = {host: self.cloud.provider_tree(host)
                      for host in self.cloud.hosts}
        self.addCleanup(self._nothing_left_behind)

    # -- helpers ----------------------------------------------------------

    def boot(self, profile, name='two-hosts', wait=True):
        server = self.cloud.nova('POST', '/servers', {'server': {
            'name': name, 'imageRef': standins.IMAGE_ID,
            'flavorRef': self.flavors[profile], 'networks': 'none'}},
            expect=202).json()['server']['id']
        self.addCleanup(self.delete, server)
        if wait:
            self.wait_for(server, 'ACTIVE')
        return server

    def server(self, server):
        return self.cloud.nova('GET', '/servers/%s' % server, admin=True,
                               expect=200).json()['server']

    def wait_for(self, server, status):
        def reached():
            shown = self.server(server)
            if shown['status'] == 'ERROR' and status != 'ERROR':
                raise AssertionError('server %s is ERROR: %s' % (
                    server, shown.get('fault')))
            return (shown['status'] == status and
                    not shown.get('OS-EXT-STS:task_state') and shown)
        return e2e.wait(reached, e2e.BOOT_TIMEOUT,
                        'server %s %s' % (server, status))

    def delete(self, server):
        response = self.cloud.nova('DELETE', '/servers/%s' % server)
        if response.status_code == 404:
            return
        self.assertEqual(204, response.status_code, response.text)
        e2e.wait(lambda: self.cloud.nova(
            'GET', '/servers/%s' % server).status_code == 404,
            e2e.BOOT_TIMEOUT, 'server %s deleted' % server)
        self.assertEqual([], self.cloud.arqs(server))
        self.assertEqual({}, self.cloud.allocations(server))

    def providers(self, host, resource_class):
        """cyborg's providers under ``host``'s compute node that have
        ``resource_class``."""
        return [p['uuid'] for p in self.trees[host]['children']
                if resource_class in self.cloud.placement(
                    '/resource_providers/%s/inventories' % p['uuid'])[
                        'inventories']]

    def landed(self, server, host, resource_class):
        """``server`` is on ``host``, with one bound ARQ whose device is
        one of ``host``'s providers of ``resource_class``; that provider."""
        self.assertEqual(host, self.server(server)['OS-EXT-SRV-ATTR:host'])
        [arq] = self.cloud.arqs(server)
        self.assertEqual(('Bound', host, server),
                         (arq['state'], arq['hostname'],
                          arq['instance_uuid']), arq)
        self.assertIn(arq['device_rp_uuid'],
                      self.providers(host, resource_class))
        self.assertEqual({resource_class: 1}, self.cloud.allocations(
            server)[arq['device_rp_uuid']]['resources'])
        return arq['device_rp_uuid']

    def _nothing_left_behind(self):
        self.assertEqual([], [a for a in self.cloud.arqs()
                              if a['instance_uuid']])
        for host, resource_class in ((FPGA_HOST, 'FPGA'),
                                     (GPU_HOST, 'PGPU')):
            for provider in self.providers(host, resource_class):
                self.assertEqual({resource_class: 0},
                                 self.cloud.usages(provider))
        for standin in (self.cloud.glance, self.cloud.neutron):
            self.assertEqual([], standin.unexpected)
        self.assertEqual([], self.cloud.proxy.failures)

    # -- the tests --------------------------------------------------------

    def test_each_host_tree_under_its_compute_node(self):
        fpga, gpu = self.trees[FPGA_HOST], self.trees[GPU_HOST]
        self.assertNotEqual(fpga['uuid'], gpu['uuid'])
        self.assertEqual(1, len(self.providers(FPGA_HOST, 'FPGA')))
        self.assertEqual([], self.providers(FPGA_HOST, 'PGPU'))
        self.assertEqual(len(GPUS), len(self.providers(GPU_HOST, 'PGPU')))
        self.assertEqual([], self.providers(GPU_HOST, 'FPGA'))
        for host, tree in self.trees.items():
            root = self.cloud.placement('/resource_providers/%s/traits' %
                                        tree['uuid'])['traits']
            self.assertIn('COMPUTE_NODE', root)
            # Nova 34 marks what it creates; Nova 33 does not.
            self.assertEqual(e2e.nova_release(self.venv) >= 34,
                             'OWNER_NOVA' in root, (host, root))
            self.assertNotIn('OWNER_CYBORG', root)
            for child in tree['children']:
                self.assertEqual((tree['uuid'], tree['uuid']),
                                 (child['parent_provider_uuid'],
                                  child['root_provider_uuid']), child)
                traits = self.cloud.placement(
                    '/resource_providers/%s/traits' % child['uuid'])[
                        'traits']
                self.assertIn('OWNER_CYBORG', traits, (host, child))
                self.assertNotIn('OWNER_NOVA', traits, (host, child))

    def test_servers_land_where_their_device_is(self):
        started = time.monotonic()
        fpga = self.boot('two-hosts-fpga', name='fpga')
        self.results['fpga_boot_to_active_s'] = round(
            time.monotonic() - started, 2)
        self.landed(fpga, FPGA_HOST, 'FPGA')
        gpus = [self.boot('two-hosts-pgpu', name='gpu-%d' % i)
                for i in range(len(GPUS))]
        self.assertEqual(sorted(self.providers(GPU_HOST, 'PGPU')),
                         sorted(self.landed(s, GPU_HOST, 'PGPU')
                                for s in gpus))
        # Both GPUs are taken; FPGAs on the other host do not help.
        extra = self.boot('two-hosts-pgpu', name='gpu-extra', wait=False)
        shown = self.wait_for(extra, 'ERROR')
        self.assertIn('No valid host', shown['fault']['message'])
        self.assertEqual([], self.cloud.arqs(extra))
        self.assertEqual({}, self.cloud.allocations(extra))

    def test_a_killed_agent_does_not_disturb_the_other_host(self):
        self.cloud.kill_agent(GPU_HOST)
        self.addCleanup(self._agent_back, GPU_HOST)
        started = time.monotonic()
        servers = [self.boot('two-hosts-fpga', name='fpga-%d' % i,
                             wait=False) for i in range(2)]
        for server in servers:
            self.wait_for(server, 'ACTIVE')
            self.landed(server, FPGA_HOST, 'FPGA')
        self.results['fpga_boots_without_gpu_agent_s'] = round(
            time.monotonic() - started, 2)
        # The GPU host's devices stay in Placement while its agent is
        # away: nothing was removed from under Nova.
        self.assertEqual(len(GPUS), len(self.providers(GPU_HOST, 'PGPU')))

    def _agent_back(self, host):
        before = self.host_seen(host)
        self.cloud.start_agent(host)
        e2e.wait(lambda: self.host_seen(host) != before, 60,
                 'the agent of %s back' % host)

    def host_seen(self, host):
        return self.cloud.cyborg('GET', '/hosts/%s' % host, version='2.5',
                                 expect=200).json()['last_seen_at']
