"""Captured hosts replayed through the drivers, and cyborg's own capture."""

import copy
import json
import os
import subprocess
import sys

import fixtures

import cyborg
from cyborg.accelerator.common import capture
from cyborg.accelerator.drivers.gpu import nvidia
from cyborg.accelerator.drivers.pci import driver as pci_driver
from cyborg.agent import manager as agent_manager
from cyborg.tests import base
from cyborg.tests.unit.accelerator import sysfs

CAPTURES = os.path.join(sysfs.DATA, 'captures')
H100 = '0000:00:06.0'
GPU_DIR = 'devices/pci0000:00/0000:00:06.0'
VIRTIO = ['0000:00:01.0', '0000:00:02.0', '0000:00:03.0', '0000:00:04.0',
          '0000:00:05.0']
ANY_VIRTIO = {'vendor_id': '1af4'}


def address(device):
    info = json.loads(device.controlpath_id.cpid_info)
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info


def load(name):
    return capture.load(os.path.join(CAPTURES, name))


class ReplayTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.flags(pci_ids_path=sysfs.PCI_IDS, group='agent')
        self.flags(host='cmp-1')

    def use(self, document):
        """Write ``document`` as a capture file and make it the sysfs
        root, as an operator would."""
        path = os.path.join(self.tmp, 'capture-%d.json' % len(
            os.listdir(self.tmp)))
        with open(path, 'w') as f:
            json.dump(document, f)
        self.flags(sysfs_root=path, group='agent')
        self.addCleanup(self.conf.clear_override, 'sysfs_root',
                        group='agent')
        return capture.resolve_root(self.conf)

    def whitelist(self, *specs):
        self.flags(device_spec=[json.dumps(list(specs))], group='pci')
        return pci_driver.PciDriver(self.conf)

    @staticmethod
    def entries(driver):
        return {h['address']: h for h in driver.hardware()}


class H100HostTest(ReplayTestCase):
    """The real H100 host: a VM without an IOMMU."""

    def test_gpu_named_from_pci_ids_and_not_offered(self):
        self.use(load('h100-host.json'))
        driver = nvidia.NvidiaGpuDriver(self.conf)
        self.assertEqual([], driver.discover())
        [gpu] = driver.hardware()
        self.assertEqual((H100, '10de', '2330', 'nvidia'),
                         (gpu['address'], gpu['vendor_id'],
                          gpu['product_id'], gpu['kernel_driver']))
        self.assertIn('no IOMMU group', gpu['reason'])
        self.assertIn('intel_iommu=on', gpu['action'])
        # Offered to containers, it is named as Debian's pci.ids has it.
        self.flags(allow_no_iommu_group=True, group='agent')
        [device] = nvidia.NvidiaGpuDriver(self.conf).discover()
        self.assertEqual('NVIDIA Corporation GH100[H100 SXM5 80GB]',
                         device.model)
        info = json.loads(device.vendor_board_info)
        self.assertEqual(('GPU-0619416a-8689-93d0-30cc-496bc5dc4e74',
                          '96.00.a5.00.01', '10de:16c1'),
                         (info['gpu_uuid'], info['vbios_version'],
                          info['subsystem']))

    def with_group(self, driver):
        """The H100 host with an IOMMU group for the GPU, bound to
        ``driver``."""
        document = copy.deepcopy(load('h100-host.json'))
        document['links'][GPU_DIR + '/iommu_group'] = \
            '../../../kernel/iommu_groups/7'
        document['links']['kernel/iommu_groups/7/devices/' + H100] = \
            '../../../../' + GPU_DIR
        document['links'][GPU_DIR + '/driver'] = \
            '../../../bus/pci/drivers/' + driver
        if driver != 'nvidia':
            del document['proc']
        return document

    def test_with_an_iommu_group_on_vfio_pci_one_pgpu(self):
        self.use(self.with_group('vfio-pci'))
        [device] = nvidia.NvidiaGpuDriver(self.conf).discover()
        self.assertEqual('NVIDIA Corporation GH100[H100 SXM5 80GB]',
                         device.model)
        [pgpu] = device.deployable_list
        self.assertEqual('cmp-1_0000_00_06_0', pgpu.name)
        self.assertEqual(1, pgpu.num_accelerators)
        self.assertEqual(['rc:PGPU', 'trait0:CUSTOM_NVIDIA_2330',
                          'trait1:OWNER_CYBORG'],
                         ['%s:%s' % (a.key, a.value)
                          for a in pgpu.attribute_list])
        self.assertEqual({'subsystem': '10de:16c1', 'subsystem_name':
                          'NVIDIA Corporation Device 16c1'},
                         json.loads(device.vendor_board_info))

    def test_virtio_functions_are_never_offered(self):
        for document, offered in ((load('h100-host.json'), []),
                                  (self.with_group('nvidia'), [H100])):
            self.use(document)
            driver = self.whitelist(ANY_VIRTIO, {'address': '0000:00:*.*'})
            self.assertEqual(offered, [address(d)
                                       for d in driver.discover()])
            entries = self.entries(driver)
            for virtio in VIRTIO:
                self.assertFalse(entries[virtio]['ready'], virtio)
            self.assertEqual('the host uses it: its network interface eth0 '
                             'is up', entries['0000:00:03.0']['reason'])
            self.assertIn('no IOMMU group', entries['0000:00:02.0']['reason'])

    def test_capture_round_trips(self):
        root = self.use(load('h100-host.json'))
        first = capture.capture(root)
        again = capture.capture(self.use(first))
        self.assertEqual(first, again)
        self.assertEqual(['0000:00:00.0'] + VIRTIO + [H100], sorted(
            os.path.basename(p) for p in first['links']
            if p.startswith('bus/pci/devices/')))
        # What the agent reads, nothing else: no power/ files, no config.
        self.assertNotIn(GPU_DIR + '/power/control', first['files'])
        self.assertNotIn('binary', first)
        self.assertEqual('0x2330\n', first['files'][GPU_DIR + '/device'])



class H200HostTest(ReplayTestCase):
    """The real H200 host (``cyborg-agent --capture``): a VM without an
    IOMMU, and a GPU newer than the PCI ID database."""

    def test_gpu_named_by_the_nvidia_driver_where_pci_ids_does_not_know_it(
            self):
        self.use(load('h200-host.json'))
        driver = nvidia.NvidiaGpuDriver(self.conf)
        self.assertEqual([], driver.discover())
        [gpu] = driver.hardware()
        self.assertEqual((H100, '10de', '2335', 'nvidia', 'NVIDIA H200'),
                         (gpu['address'], gpu['vendor_id'],
                          gpu['product_id'], gpu['kernel_driver'],
                          gpu['name']))
        self.assertIn('no IOMMU group', gpu['reason'])
        self.flags(allow_no_iommu_group=True, group='agent')
        [device] = nvidia.NvidiaGpuDriver(self.conf).discover()
        self.assertEqual('NVIDIA H200', device.model)
        info = json.loads(device.vendor_board_info)
        self.assertEqual(('GPU-02a3810c-53eb-90c7-d10b-79da2d8644e4',
                          '96.00.a5.00.1a', '580.159.04', '10de:18bf',
                          'NVIDIA Corporation Device 18bf', 0),
                         (info['gpu_uuid'], info['vbios_version'],
                          info['firmware'], info['subsystem'],
                          info['subsystem_name'], info['mig_gpu_instances']))

    def test_without_the_driver_s_name_the_ids_name_it(self):
        # Bound to vfio-pci, the nvidia driver shows nothing: the name is
        # the PCI ID database's, as lspci would print it; without any
        # database, the ids alone.
        document = copy.deepcopy(load('h200-host.json'))
        del document['proc']
        self.use(document)
        [gpu] = nvidia.NvidiaGpuDriver(self.conf).hardware()
        self.assertEqual('NVIDIA Corporation Device 2335', gpu['name'])
        self.flags(pci_ids_path=os.path.join(self.tmp, 'empty.ids'),
                   group='agent')
        open(os.path.join(self.tmp, 'empty.ids'), 'w').close()
        [gpu] = nvidia.NvidiaGpuDriver(self.conf).hardware()
        self.assertEqual('Device 10de:2335', gpu['name'])

    def test_mig_without_gpu_instances_survives_the_round_trip(self):
        # On the host, /proc/driver/nvidia/capabilities/gpu0/mig exists
        # with no gi* in it: the agent reported 0 GPU instances there, and
        # a replay of the capture must too.
        self.assertIn('driver/nvidia/capabilities/gpu0/mig',
                      load('h200-host.json')['proc']['dirs'])
        again = capture.capture(self.use(load('h200-host.json')))
        self.assertIn('driver/nvidia/capabilities/gpu0/mig',
                      again['proc']['dirs'])
        self.use(again)
        self.flags(allow_no_iommu_group=True, group='agent')
        [device] = nvidia.NvidiaGpuDriver(self.conf).discover()
        self.assertEqual(
            0, json.loads(device.vendor_board_info)['mig_gpu_instances'])

    def test_a_known_device_keeps_its_pci_ids_name(self):
        # The H100 is in the database: its name is the database's, not
        # the driver's "NVIDIA H100 80GB HBM3".
        self.use(load('h100-host.json'))
        [gpu] = nvidia.NvidiaGpuDriver(self.conf).hardware()
        self.assertEqual('NVIDIA Corporation GH100[H100 SXM5 80GB]',
                         gpu['name'])

class OwnCapturesTest(ReplayTestCase):

    def test_host_in_use(self):
        self.use(load('vm-in-use.json'))
        entries = self.entries(self.whitelist(ANY_VIRTIO))
        self.assertEqual('the host uses it: its disk vda holds the '
                         'filesystem mounted on /',
                         entries['0000:00:02.0']['reason'])
        self.assertEqual('the host uses it: its network interface eth0 is '
                         'up', entries['0000:00:03.0']['reason'])
        # Even where devices go to containers, not VMs.
        self.flags(allow_no_iommu_group=True, group='agent')
        driver = self.whitelist(ANY_VIRTIO)
        self.assertEqual(['0000:00:01.0', '0000:00:04.0', '0000:00:05.0'],
                         sorted(a for a, h in self.entries(driver).items()
                                if h['ready']))

    def test_shared_groups(self):
        self.use(load('shared-group.json'))
        driver = nvidia.NvidiaGpuDriver(self.conf)
        [device] = driver.discover()
        self.assertEqual(['cmp-1_0000_5e_00_0'],
                         [d.name for d in device.deployable_list])
        self.assertEqual('it shares IOMMU group 30 with 0000:3b:00.1 '
                         '(kernel driver snd_hda_intel), which stays with '
                         'the host', self.entries(driver)['0000:3b:00.0'][
                             'reason'])
        entries = self.entries(self.whitelist(
            {'vendor_id': '144d'}, {'vendor_id': '8086',
                                    'product_id': '1572'}))
        self.assertIn('shares IOMMU group 32 with 0000:d8:00.1 (kernel '
                      'driver i40e)', entries['0000:d8:00.0']['reason'])
        self.assertIn('eno1 is up', entries['0000:d8:00.1']['reason'])


class CaptureCommandTest(ReplayTestCase):

    def capture_command(self, config, out):
        """Run ``cyborg-agent --config-file config --capture out`` with a
        log file in the configuration, as an agent's has; (status,
        stdout, stderr)."""
        with open(config, 'a') as f:
            f.write('[DEFAULT]\nlog_file = %s\n'
                    % os.path.join(self.tmp, 'agent.log'))
        top = os.path.dirname(os.path.dirname(os.path.abspath(
            cyborg.__file__)))
        done = subprocess.run([sys.executable, '-m', 'cyborg.cmd.agent',
                               '--config-file', config, '--capture', out],
                              cwd=top, env=dict(os.environ, PYTHONPATH=top),
                              capture_output=True, text=True, timeout=120)
        return done.returncode, done.stdout, done.stderr

    def test_capture_errors_are_one_line_on_stderr(self):
        """Not a traceback in the agent's log file: one line on the
        terminal and status 1, and no file."""
        tree = sysfs.SysfsTree(os.path.join(self.tmp, 'host', 'sys'))
        tree.add_card('tesla_t4', '0000:3b:00.0', driver='vfio-pci')
        config = os.path.join(self.tmp, 'agent.conf')
        with open(config, 'w') as f:
            f.write('[agent]\nsysfs_root = %s\n' % tree.root)
        missing = os.path.join(self.tmp, 'no-such-dir', 'out.json')
        status, out, err = self.capture_command(config, missing)
        self.assertEqual((1, ''), (status, out))
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('cyborg-agent: error: cannot capture this host to %s'
                      % missing, err)
        self.assertIn('No such file or directory', err)
        # A sysfs root without PCI devices (a mistyped path, no
        # permission) is an error, not a capture of nothing.
        with open(config, 'w') as f:
            f.write('[agent]\nsysfs_root = %s\n'
                    % os.path.join(self.tmp, 'nowhere'))
        out_file = os.path.join(self.tmp, 'out.json')
        status, out, err = self.capture_command(config, out_file)
        self.assertEqual((1, '', 1), (status, out, len(err.splitlines())),
                         err)
        self.assertIn('bus/pci/devices', err)
        self.assertFalse(os.path.exists(out_file))

    def test_agent_capture_then_replay(self):
        tree = sysfs.SysfsTree(os.path.join(self.tmp, 'host', 'sys'))
        tree.add_card('tesla_t4', '0000:3b:00.0', driver='vfio-pci')
        vfs = tree.add_card('qat_c62x', '0000:3d:00.0', vfs=2)
        tree.remove(vfs[1], 'iommu_group')
        tree.add_mdev_type('0000:3d:00.0', 'x-1', 'X 1', 3)
        create = os.path.join(tree.function_dir('0000:3d:00.0'),
                              'mdev_supported_types', 'x-1', 'create')
        with open(create, 'w'):
            pass
        os.chmod(create, 0o200)
        proc = os.path.join(self.tmp, 'host', 'proc')
        os.makedirs(os.path.join(proc, 'self'))
        with open(os.path.join(proc, 'self', 'mountinfo'), 'w') as f:
            f.write('27 1 8:1 / / rw,relatime,secret=1 shared:1 - ext4 '
                    '/dev/sda1 rw,data=ordered\n'
                    '22 27 0:21 / /proc rw - proc proc rw\n')
        os.makedirs(os.path.join(proc, 'net'))
        with open(os.path.join(proc, 'net', 'if_inet6'), 'w') as f:
            f.write('20010db8000000000000000000000001 02 40 00 80 eno1\n')
        out = os.path.join(self.tmp, 'out.json')
        config = os.path.join(self.tmp, 'agent.conf')
        with open(config, 'w') as f:
            f.write('[agent]\nsysfs_root = %s\n' % tree.root)
        # The command itself, as an operator runs it: it says what it
        # wrote.
        done = self.capture_command(config, out)
        self.assertEqual((0, 'wrote %s: 4 PCI functions\n' % out, ''),
                         done, done[2])
        document = capture.load(out)
        # Write-only in sysfs: present, empty.
        self.assertEqual('', document['files'][
            'devices/pci0000:3d/0000:3d:00.0/mdev_supported_types/x-1/'
            'create'])
        self.assertEqual({'self/mountinfo': '27 1 8:1 / / rw - ext4 '
                                            '/dev/sda1\n',
                          'net/if_inet6': '0 0 0 0 0 eno1\n'},
                         document['proc']['files'])
        # The agent replays the file as it reads the tree.
        self.flags(sysfs_root=tree.root, group='agent')
        self.flags(enabled_drivers=['nvidia_gpu_driver', 'intel_qat_driver'],
                   group='agent')
        direct = agent_manager.AgentManager('cmp-1', self.conf)._survey()
        self.use(document)
        replayed = agent_manager.AgentManager('cmp-1', self.conf)._survey()
        self.assertEqual([f.obj_to_primitive() for f in direct[1]],
                         [f.obj_to_primitive() for f in replayed[1]])
        self.assertEqual([True, True, False],
                         [f.offered for f in direct[1]])


class ReplaySafetyTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def refused(self, document):
        self.assertRaises(capture.InvalidCapture, capture.replay,
                          document, os.path.join(self.tmp, 't'))

    def test_paths_stay_inside(self):
        self.refused({'files': {'/etc/x': 'y'}})
        self.refused({'files': {'../../x': 'y'}})
        self.refused({'links': {'a': '../../../etc'}})
        self.refused({'proc': {'files': {'../sys/x': 'y'}}, 'files': {}})
        # Through another link: "up" is the tree's top, "up/../x" not.
        self.refused({'links': {'d/up': '..', 'd/out': 'up/../x'}})
        self.refused(['not', 'a', 'dict'])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'x')))

    def test_bad_file_as_root(self):
        path = os.path.join(self.tmp, 'bad.json')
        with open(path, 'w') as f:
            f.write('{"files": {"/etc/passwd": ""}}')
        self.flags(sysfs_root=path, group='agent')
        error = self.assertRaises(capture.InvalidCapture,
                                  capture.resolve_root, self.conf)
        self.assertIn(path, str(error))
        with open(path, 'w') as f:
            f.write('not json')
        self.assertRaises(capture.InvalidCapture, capture.resolve_root,
                          self.conf)
