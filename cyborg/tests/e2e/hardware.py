"""Test cases whose cloud's cyborg agent runs real drivers on a
captured-style sysfs tree instead of the fake driver's card.

The host (``build_tree``) has a Tesla T4 that the NVIDIA vGPU host driver
runs, offered as ``VGPU`` of type ``nvidia-222`` (``GRID T4-1B``, four
slots), and an Intel X710 whose PF ``ens1f0`` is on ``physnet1`` with two
VFs, offered as ``CUSTOM_NIC``. One cloud (``cloud.NovaCloud`` with
``sysfs_root``, in ``<work directory>/hardware``) serves every class of
this kind in the test process, started by the first and cleaned up when
the pytest session ends (``conftest.py``), so the vGPU and the SmartNIC
modules pay for one start. Each class creates its ``profiles`` (device
profile name: groups) and one flavor ``e2e.<name>`` per profile;
``e2e.plain`` asks for no accelerator. Server helpers are
``base.E2ETestCase``'s.
Every exchange between Nova and cyborg goes to ``cyborg-calls.json`` in
the cloud's directory at the end.
"""

import json
import os

from cyborg.accelerator.common import records
from cyborg.tests.e2e import base
from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.unit.accelerator import sysfs

GPU = '0000:af:00.0'
VGPU_TYPE = 'nvidia-222'
VGPU_SLOTS = 4
VGPU_CREATE = 'mdev_supported_types/%s/create' % VGPU_TYPE
NIC_PF = '0000:18:00.0'
NIC_VFS = ['0000:18:01.0', '0000:18:01.1']
PHYSNET = 'physnet1'
CYBORG_OPTIONS = {
    'agent': {'enabled_drivers': 'nvidia_gpu_driver,intel_nic_driver'},
    'gpu_devices': {'enabled_vgpu_types': VGPU_TYPE},
    'vgpu_' + VGPU_TYPE: {'device_addresses': GPU},
    'nic_devices': {'enabled_nic_types': 'x710_static'},
    'x710_static': {'physical_device_mappings': PHYSNET + ':ens1f0'}}

_CLOUD = {}


def build_tree(root):
    tree = sysfs.SysfsTree(root)
    tree.add_card('tesla_t4', GPU)
    tree.add_mdev_type(GPU, VGPU_TYPE, 'GRID T4-1B', VGPU_SLOTS)
    tree.write(GPU, VGPU_CREATE, '')
    vfs = tree.add_card('x710', NIC_PF, vfs=len(NIC_VFS))
    assert [str(vf) for vf in vfs] == NIC_VFS, vfs
    sysfs.add_netdev(tree, NIC_PF, 'ens1f0')
    return tree


def provider_name(address):
    """The name of the provider of the device at ``address``."""
    return records.deployable_name(e2e.HOST, address)


def shared_cloud(venv):
    """The process's cloud on the tree of ``build_tree``, started on
    first use."""
    if 'cloud' in _CLOUD and not hasattr(_CLOUD['cloud'], 'plain_flavor'):
        raise AssertionError('the shared cloud did not start')
    if 'cloud' not in _CLOUD:
        workdir = base.work_directory('hardware')
        root = os.path.join(workdir, 'sys')
        build_tree(root)
        cloud = e2e.NovaCloud(venv, workdir, sysfs_root=root,
                              cyborg_options=CYBORG_OPTIONS)
        cloud.setUp()
        _CLOUD['cloud'] = cloud
        # A flavor that asks for no accelerator (ports bring theirs).
        cloud.plain_flavor = base.add_flavor(cloud, 'e2e.plain')
    return _CLOUD['cloud']


def clean_up():
    """Stop the shared cloud, if one was started: at the end of the test
    session (``conftest.py``; an atexit handler would wait for Python to
    join the stand-ins' threads first, which never end)."""
    cloud = _CLOUD.pop('cloud', None)
    if cloud is None:
        return
    try:
        with open(os.path.join(cloud.workdir, 'cyborg-calls.json'),
                  'w') as f:
            json.dump(cloud.proxy.exchanges, f, indent=1)
    finally:
        cloud.cleanUp()


class HardwareTestCase(base.E2ETestCase):

    @classmethod
    def start_cloud(cls):
        return shared_cloud(cls.venv)

    @classmethod
    def set_up_cloud(cls):
        super().set_up_cloud()
        cls.flavors['e2e.plain'] = cls.cloud.plain_flavor

    @classmethod
    def stop_cloud(cls):
        """The cloud is the process's: ``clean_up`` stops it."""

    def setUp(self):
        super().setUp()
        self.tree = sysfs.SysfsTree(self.cloud.sysfs_root)
        self.addCleanup(self.report_strays)
        self.addCleanup(self._nothing_left_behind)

    def _nothing_left_behind(self):
        """After each test: no ARQ, and every device free."""
        self.assertEqual([], self.cloud.arqs())
        for uuid in self.providers().values():
            self.assertEqual([0], list(self.cloud.usages(uuid).values()))

    def providers(self):
        """{name: uuid} of cyborg's providers under the compute node."""
        return {p['name']: p['uuid']
                for p in self.cloud.provider_tree()['children']}
