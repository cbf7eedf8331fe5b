"""``GET /v2/hardware`` (2.6) and ``cyborg hardware-list`` against
``cyborg-aio`` on a captured sysfs tree: a GPU the vGPU host driver runs
with no vGPU type configured and a NIC port the host runs itself are
listed as not offered, with why and what to change, and the agent says
so in its log once, however often it looks again."""

import json
import os
import subprocess
import uuid

import fixtures
import requests
import testtools
from testtools import content

from cyborg.tests.functional import daemons
from cyborg.tests.functional import test_cli
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

DRIVERS = ['fake_driver', 'nvidia_gpu_driver', 'intel_nic_driver']
WHOLE_GPU = '0000:3b:00.0'
VGPU_HOST_GPU = '0000:af:00.0'
HOST_NIC = '0000:18:00.0'
VERSION = {'OpenStack-API-Version': 'accelerator 2.6'}


def build_tree(root):
    tree = sysfs.SysfsTree(root)
    tree.add_card('tesla_t4', WHOLE_GPU)
    # The vGPU host driver runs it: it offers vGPU types, none configured.
    tree.add_card('tesla_t4', VGPU_HOST_GPU)
    tree.add_mdev_type(VGPU_HOST_GPU, 'nvidia-222', 'GRID T4-1B', 16)
    # The host's own network port: i40e runs it, no mapping names it.
    tree.add_card('x710', HOST_NIC)
    sysfs.add_netdev(tree, HOST_NIC, 'eno1')
    return tree


class _AioTest(testtools.TestCase):
    """A ``cyborg-aio`` of the test's own on ``sysfs_root`` (a tree or a
    capture file), started by :meth:`start_aio`."""

    def start_aio(self, tmp, sysfs_root, agent, **sections):
        port = daemons.free_port()
        self.base = 'http://127.0.0.1:%d' % port
        config = daemons.write_config(os.path.join(tmp, 'aio.conf'), dict(
            sections, DEFAULT={'host': self.host},
            agent=dict(agent, heartbeat_interval=1)))
        self.aio = daemons.Daemon(
            self, 'aio', ['--port', str(port), '--state-dir',
                          os.path.join(tmp, 'state'), '--sysfs-root',
                          sysfs_root, '--config-file', config],
            os.path.join(tmp, 'aio.log'))
        self.addOnException(lambda exc_info: self.addDetail(
            'aio.log', content.text_content(self.aio.output()[-20000:])))
        daemons.wait_for_http(self.base + '/v2', daemon=self.aio)
        wait_for(lambda: self.get('/v2/hardware').json()['hardware'],
                 timeout=60)

    def get(self, path, token='admin', headers=VERSION, **params):
        return requests.get(self.base + path, params=params, timeout=30,
                            headers=dict(headers, **{'X-Auth-Token': token}))


class HardwareTest(_AioTest):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.home = tmp
        tree = build_tree(os.path.join(tmp, 'sys'))
        self.host = 'hw-%s' % uuid.uuid4().hex[:8]
        self.start_aio(tmp, tree.root,
                       {'enabled_drivers': ','.join(DRIVERS)})

    def cyborg(self, *args):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        env.update(HOME=self.home, PYTHONWARNINGS='ignore',
                   OS_ENDPOINT=self.base)
        return subprocess.run([test_cli.CYBORG, *args], capture_output=True,
                              text=True, timeout=180, env=env)

    def cyborg_json(self, *args):
        result = self.cyborg(*args, '-f', 'json')
        self.assertEqual(0, result.returncode, result.stderr)
        return json.loads(result.stdout)

    def test_hardware_list_says_why_and_the_agent_logs_it_once(self):
        rows = {(r['driver'], r['address']): r
                for r in self.cyborg_json('hardware-list')}
        gpu = rows[('nvidia_gpu_driver', VGPU_HOST_GPU)]
        self.assertEqual(
            (self.host, False, '10de', '1eb8', 'nvidia', True, False),
            (gpu['host'], gpu['offered'], gpu['vendor_id'],
             gpu['product_id'], gpu['kernel_driver'], gpu['setup_required'],
             gpu['reboot_required']))
        self.assertIn('the vGPU host driver manages it', gpu['reason'])
        self.assertIn('[gpu_devices] enabled_vgpu_types', gpu['action'])
        nic = rows[('intel_nic_driver', HOST_NIC)]
        self.assertEqual((False, '8086', '1572', 'i40e'), (
            nic['offered'], nic['vendor_id'], nic['product_id'],
            nic['kernel_driver']))
        self.assertIn('the host runs it with kernel driver i40e (eno1)',
                      nic['reason'])
        self.assertIn('physical_device_mappings', nic['action'])
        self.assertTrue(rows[('nvidia_gpu_driver', WHOLE_GPU)]['offered'])
        self.assertEqual(
            [VGPU_HOST_GPU, HOST_NIC],
            sorted((r['address'] for r in self.cyborg_json(
                'hardware-list', '--host', self.host, '--not-offered')),
                reverse=True))
        # Two more discoveries on demand: the same decisions, no new line.
        for _ in range(2):
            result = self.cyborg('discover-services')
            self.assertEqual(0, result.returncode, result.stderr)
        log = self.aio.output()
        for address in (VGPU_HOST_GPU, HOST_NIC):
            self.assertEqual(1, log.count('PCI function %s (' % address),
                             address)
        self.assertEqual(0, log.count('PCI function %s (' % WHOLE_GPU))
        table = self.cyborg('hardware-list', '--host', self.host)
        self.assertEqual(0, table.returncode, table.stderr)
        self.assertIn('vGPU host driver', table.stdout)
        missing = self.cyborg('hardware-list', '--host', 'nobody')
        self.assertEqual(1, missing.returncode)
        self.assertIn('Host nobody could not be found. (HTTP 404)',
                      missing.stderr)

    def test_api_is_for_administrators_from_2_6(self):
        self.assertEqual(404, self.get(
            '/v2/hardware',
            headers={'OpenStack-API-Version': 'accelerator 2.5'}
        ).status_code)
        self.assertEqual(403, self.get('/v2/hardware',
                                       token='alice:demo').status_code)
        self.assertEqual(400, self.get('/v2/hardware',
                                       offered='maybe').status_code)
        self.assertEqual(404, self.get('/v2/hardware',
                                       host='nobody').status_code)
        offered = self.get('/v2/hardware', host=self.host,
                           offered='true').json()['hardware']
        self.assertEqual(
            ['fake_driver', 'nvidia_gpu_driver'],
            sorted(r['driver'] for r in offered))
        everything = self.get('/v2/hardware', host='').json()['hardware']
        self.assertEqual(4, len(everything))


class CapturedHostTest(_AioTest):
    """``cyborg-aio --sysfs-root`` on the real H100 host's capture file:
    the GPU (no IOMMU there) and the virtio functions a whitelist names
    are listed as not offered, with why; nothing reaches the devices."""

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.host = 'h100-%s' % uuid.uuid4().hex[:8]
        self.start_aio(
            tmp, os.path.join(sysfs.DATA, 'captures', 'h100-host.json'),
            {'enabled_drivers': 'nvidia_gpu_driver,pci_driver',
             'pci_ids_path': sysfs.PCI_IDS},
            pci={'passthrough_whitelist': '{"vendor_id": "1af4"}'})

    def test_nothing_offered_and_why(self):
        rows = {r['address']: r
                for r in self.get('/v2/hardware').json()['hardware']}
        self.assertEqual(['0000:00:01.0', '0000:00:02.0', '0000:00:03.0',
                          '0000:00:04.0', '0000:00:05.0', '0000:00:06.0'],
                         sorted(rows))
        self.assertEqual([], [a for a, r in rows.items() if r['offered']])
        gpu = rows['0000:00:06.0']
        # Named from pci.ids (the trimmed Debian copy configured) although
        # it is not offered.
        self.assertEqual(('nvidia_gpu_driver', '2330', 'nvidia',
                          'NVIDIA Corporation GH100[H100 SXM5 80GB]', False),
                         (gpu['driver'], gpu['product_id'],
                          gpu['kernel_driver'], gpu['name'], gpu['offered']))
        self.assertIn('no IOMMU group', gpu['reason'])
        self.assertIn('intel_iommu=on', gpu['action'])
        self.assertIn('eth0 is up', rows['0000:00:03.0']['reason'])
        self.assertEqual('Red Hat, Inc. Virtio 1.0 network device',
                         rows['0000:00:03.0']['name'])
        self.assertEqual([], self.get('/v2/devices').json()['devices'])
