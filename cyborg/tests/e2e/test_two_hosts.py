"""The real Nova with two compute hosts and cyborg as split daemons.

Run by ``tools/nova-e2e`` (skipped without ``CYBORG_NOVA_E2E_VENV``). One
cloud (``cloud.SplitCloud``) serves the module: two nova-computes, and
cyborg-api, cyborg-conductor and one cyborg-agent per host, sharing one
Placement with Nova. The hosts have different devices, so where a server
lands shows that scheduling followed them:

* ``e2e-fpga-host.example.org``: the fake driver's card, 16 FPGA
  functions;
* ``e2e-gpu-host``: two whole NVIDIA T4 GPUs (``PGPU``) in a sysfs tree
  made for the test (``cyborg/tests/unit/accelerator/sysfs.py``).

Each host names itself as deployments do (issue #44): nova-compute's
``[DEFAULT] host`` (Nova's name in its binds, and its node name) is not
the agent's. The FPGA host is an FQDN to Nova and its short name to the
agent, the GPU host the reverse; each agent's ``[agent]
resource_provider_name`` is Nova's node name, as the install guide says.
"""

import os
import time

from cyborg.tests.e2e import base
from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.unit.accelerator import sysfs

FPGA_HOST = 'e2e-fpga-host.example.org'
GPU_HOST = 'e2e-gpu-host'
# The agents' [DEFAULT] host.
AGENT_HOSTS = {FPGA_HOST: 'e2e-fpga-host',
               GPU_HOST: 'e2e-gpu-host.example.org'}
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


class TwoComputeHostsTest(base.E2ETestCase):

    profiles = PROFILES
    results = {}

    @classmethod
    def start_cloud(cls):
        workdir = base.work_directory('two-hosts')
        started = time.monotonic()
        cloud = e2e.SplitCloud(cls.venv, workdir, {
            FPGA_HOST: {'enabled_drivers': 'fake_driver'},
            GPU_HOST: {'enabled_drivers': 'nvidia_gpu_driver',
                       'sysfs_root': gpu_tree(os.path.join(workdir,
                                                           'sys-gpu'))},
        }, agent_hosts=AGENT_HOSTS)
        cloud.setUp()
        cls.results['cloud_up_s'] = round(time.monotonic() - started, 1)
        return cloud

    @classmethod
    def flavor_profiles(cls):
        return {name: name for name in cls.profiles}

    def setUp(self):
        super().setUp()
        self.trees = {host: self.cloud.provider_tree(host)
                      for host in self.cloud.hosts}
        self.addCleanup(self._nothing_left_behind)

    # -- helpers ----------------------------------------------------------

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
        self.report_strays()

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

    def test_agents_and_nova_name_each_host_differently(self):
        nova = {s['host'] for s in self.cloud.nova(
            'GET', '/os-services?binary=nova-compute', admin=True,
            expect=200).json()['services']}
        self.assertEqual({FPGA_HOST, GPU_HOST}, nova)
        hosts = self.cloud.cyborg('GET', '/hosts', version='2.5',
                                  expect=200).json()['hosts']
        self.assertEqual(sorted(AGENT_HOSTS.values()),
                         sorted(h['hostname'] for h in hosts))

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
        # A server of each name layout keeps its device over a reboot.
        started = time.monotonic()
        for server, host, resource_class in ((fpga, FPGA_HOST, 'FPGA'),
                                             (gpus[0], GPU_HOST, 'PGPU')):
            provider = self.landed(server, host, resource_class)
            self.action(server, {'reboot': {'type': 'HARD'}})
            self.wait_for(server, 'ACTIVE')
            self.assertEqual(provider,
                             self.landed(server, host, resource_class))
        self.results['two_hard_reboots_s'] = round(
            time.monotonic() - started, 2)
        # Both GPUs are taken; FPGAs on the other host do not help.
        self.no_valid_host('two-hosts-pgpu', 'gpu-extra')

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
        agent = self.cloud.agent_host(host)
        before = self.last_seen(agent)
        self.cloud.start_agent(host)
        e2e.wait(lambda: self.last_seen(agent) != before, 60,
                 'the agent of %s back' % host)
