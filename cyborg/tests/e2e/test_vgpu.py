"""A vGPU (an NVIDIA mdev) from cyborg, through the real Nova.

cyborg's agent sees a host with a Tesla T4 run by NVIDIA's vGPU host
driver (``mdev_supported_types/nvidia-222``, ``GRID T4-1B``, 4 instances)
and offers it as VGPU (``hardware``, whose cloud the SmartNIC tests
share). A server whose flavor asks for a profile of
``resources:VGPU=1`` boots ACTIVE (Nova's fake virt driver); its bound
ARQ is an MDEV handle, and cyborg created the mdev while binding (the
privsep daemon wrote its uuid to the type's ``create``). Nova's own
libvirt code (``tools/lib/nova-e2e/nova_mdev_check.py``, run by the
Python of Nova's virtualenv) is fed that ARQ as cyborg's API shows it:
Nova 34 looks the mdev up under the name libvirt gives the mdev cyborg
made and gives the guest that uuid; when libvirt does not know it (after
a host reboot, before cyborg's agent made it again) Nova creates the
same mdev: same parent, type and uuid. Nova 33 ignores MDEV handles.
"""

import json
import os
import subprocess
import uuid

from cyborg.accelerator.common import mdev
from cyborg.accelerator.common import pci
from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import hardware

GPU = hardware.GPU
TYPE = hardware.VGPU_TYPE
SLOTS = hardware.VGPU_SLOTS
CREATE = hardware.VGPU_CREATE
TRAIT = 'CUSTOM_NVIDIA_1EB8_T4_1B'
CHECK = os.path.join(e2e.NOVA_SIDE, 'nova_mdev_check.py')


class VgpuThroughNovaTest(hardware.HardwareTestCase):

    profiles = {'e2e-vgpu': [{'resources:VGPU': '1',
                              'trait:' + TRAIT: 'required'}]}

    def setUp(self):
        super().setUp()
        self.gpu = self.providers()[hardware.provider_name(GPU)]

    def nova_mdevs(self, arqs, known=()):
        """What Nova's libvirt driver does with ``arqs`` when libvirt
        knows the node devices ``known``."""
        result = subprocess.run(
            [os.path.join(self.venv, 'bin', 'python'), CHECK],
            input=json.dumps({'arqs': arqs, 'known': list(known)}),
            capture_output=True, text=True,
            timeout=300)
        self.assertEqual(0, result.returncode, result.stderr[-3000:])
        return json.loads(result.stdout)

    def test_vgpu_bound_as_nova_34_reads_it(self):
        server = self.boot('e2e.e2e-vgpu')
        allocations = self.cloud.allocations(server)
        self.assertEqual({'VGPU': 1}, allocations[self.gpu]['resources'])
        [arq] = self.cloud.arqs(server)
        self.assertEqual(('Bound', e2e.HOST, self.gpu, 'MDEV'), (
            arq['state'], arq['hostname'], arq['device_rp_uuid'],
            arq['attach_handle_type']))
        mdev_uuid = arq['attach_handle_uuid']
        self.assertEqual(mdev_uuid, str(uuid.UUID(mdev_uuid)))
        info = arq['attach_handle_info']
        self.assertEqual(
            {'domain': '0000', 'bus': 'af', 'device': '00', 'function': '0',
             'asked_type': TYPE},
            {k: v for k, v in info.items() if k != 'vgpu_mark'})
        # cyborg created the mdev while it bound the ARQ; the kernel
        # would show it under the GPU, with its "remove".
        self.assertEqual(mdev_uuid, self.tree.read(GPU, CREATE))
        remove = '%s/remove' % mdev_uuid
        self.tree.write(GPU, remove, '')

        # Nova 34 finds cyborg's mdev under libvirt's name for it and
        # creates nothing.
        libvirt_name = mdev.libvirt_name(mdev_uuid, pci.PciAddress.parse(
            GPU))
        found = self.nova_mdevs([arq], known=[libvirt_name])
        if not found['supported']:
            self.assertLess(found['nova'], '34', found)
        else:
            self.assertEqual(([libvirt_name], [], [mdev_uuid]), (
                found['looked_up'], found['created'], found['mdevs']))
            # Unknown to libvirt (a host rebooted): Nova makes the same
            # mdev, which cyborg's agent then finds there.
            made = self.nova_mdevs([arq])
            self.assertEqual([{'parent': 'pci_0000_af_00_0', 'type': TYPE,
                               'uuid': mdev_uuid}], made['created'])
            self.assertEqual([mdev_uuid], made['mdevs'])

        # The server keeps its vGPU over a hard reboot; deleting it
        # removes the ARQ and gives the slot back.
        self.action(server, {'reboot': {'type': 'HARD'}})
        self.wait_for(server, 'ACTIVE')
        self.assertEqual([arq], self.cloud.arqs(server))
        self.delete(server)
        self.assertEqual({'VGPU': 0}, self.cloud.usages(self.gpu))
        # cyborg removed the mdev when Nova deleted the ARQ.
        self.assertEqual('1', self.tree.read(GPU, remove))

    def test_every_slot_once_then_no_valid_host(self):
        servers = [self.boot('e2e.e2e-vgpu', name='vgpu-%d' % i,
                             wait=False) for i in range(SLOTS)]
        for server in servers:
            self.wait_for(server, 'ACTIVE')
        uuids = {self.cloud.arqs(s)[0]['attach_handle_uuid']
                 for s in servers}
        self.assertEqual(SLOTS, len(uuids))
        self.assertEqual({'VGPU': SLOTS}, self.cloud.usages(self.gpu))
        self.no_valid_host('e2e.e2e-vgpu', 'vgpu-extra')
        for server in servers:
            self.delete(server)
        self.assertEqual({'VGPU': 0}, self.cloud.usages(self.gpu))
