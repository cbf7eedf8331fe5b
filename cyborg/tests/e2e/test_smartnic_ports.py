"""SmartNIC ports: a Neutron port with a ``device_profile`` and vNIC type
``accelerator-direct`` gets a VF from cyborg, through the real Nova.

cyborg's agent sees a host with an Intel X710 whose PF (``ens1f0``) is on
``physnet1`` (``[x710_static] physical_device_mappings``) with two VFs,
offered as ``CUSTOM_NIC`` with the traits ``CUSTOM_PHYSNET1`` and
``CUSTOM_VF`` (``hardware``, whose cloud the vGPU tests share). A server
booted with a plain flavor and such a port goes ACTIVE: Nova asked
Placement for the profile's group on the port's behalf
(``device_profile_<idx><port>``), created and bound one ARQ for the port
and wrote the VF's ``pci_slot``, ``physical_network`` and the
ARQ's uuid into the port's ``binding:profile`` (Neutron stand-in).
Deleting the server unbinds the port, deletes the ARQ and frees the VF.
A profile asking for two devices for one port is refused by Nova.
"""

from cyborg.accelerator.common import records
from cyborg.tests.e2e import cloud as e2e
from cyborg.tests.e2e import hardware
from cyborg.tests.e2e import standins

PHYSNET = hardware.PHYSNET
VF = {'resources:CUSTOM_NIC': '1', 'trait:CUSTOM_PHYSNET1': 'required',
      'trait:CUSTOM_VF': 'required'}
ACCELERATOR_DIRECT = 'accelerator-direct'
#: What Nova writes into binding:profile for a port's ARQ, and removes.
ARQ_KEYS = ('pci_slot', 'physical_network', 'arq_uuid')


class SmartNicPortTest(hardware.HardwareTestCase):

    profiles = {'e2e-vf': [VF],
                'e2e-two-vfs': [{'resources:CUSTOM_NIC': '2'}],
                'e2e-vf-and-vf': [VF, VF]}

    def setUp(self):
        super().setUp()
        providers = self.providers()
        self.vfs = {hardware.provider_name(vf): providers[
            hardware.provider_name(vf)] for vf in hardware.NIC_VFS}
        self.network = self.cloud.neutron.add_network('e2e-' + PHYSNET,
                                                      physnet=PHYSNET)

    def port(self, profile, vnic_type=ACCELERATOR_DIRECT):
        return self.cloud.neutron.add_port(
            self.network, e2e.PROJECT, **{'binding:vnic_type': vnic_type,
                                          'device_profile': profile})['id']

    def cyborg_calls(self, since):
        """(method, path, query, status) of Nova's calls to cyborg since
        ``since`` (an index in the proxy's exchanges), in order."""
        return [(e['method'], e['path'], e['query'], e['status'])
                for e in self.cloud.proxy.exchanges[since:]]

    def test_port_with_a_vf(self):
        port = self.port('e2e-vf')
        since = len(self.cloud.proxy.exchanges)
        neutron_since = len(self.cloud.neutron.requests)
        server = self.boot('e2e.plain', networks=[{'port': port}])

        # One ARQ, for the port, bound to a VF of physnet1.
        [arq] = self.cloud.arqs(server)
        self.assertEqual(('Bound', e2e.HOST, 'e2e-vf', 'PCI'), (
            arq['state'], arq['hostname'], arq['device_profile_name'],
            arq['attach_handle_type']))
        self.assertIn(arq['device_rp_uuid'], self.vfs.values())
        [vf] = [name for name, uuid in self.vfs.items()
                if uuid == arq['device_rp_uuid']]
        info = arq['attach_handle_info']
        self.assertEqual(PHYSNET, info['physical_network'])
        slot = '%(domain)s:%(bus)s:%(device)s.%(function)s' % info
        self.assertEqual(records.deployable_name(e2e.HOST, slot), vf)
        self.assertEqual({'CUSTOM_NIC': 1},
                         self.cloud.allocations(server)[
                             arq['device_rp_uuid']]['resources'])

        # The port: bound to the host and the server, with the VF.
        shown = self.cloud.neutron.port(port)
        self.assertEqual((e2e.HOST, server, 'hw_veb'), (
            shown['binding:host_id'], shown['device_id'],
            shown['binding:vif_type']))
        self.assertEqual(
            {'pci_slot': slot, 'physical_network': PHYSNET,
             'arq_uuid': arq['uuid']},
            {k: v for k, v in shown['binding:profile'].items()
             if k in ARQ_KEYS})
        updates = [body['port'] for method, _path, body
                   in self.cloud.neutron.requests[neutron_since:]
                   if method == 'PUT']
        self.assertIn(arq['uuid'], [u.get('binding:profile', {}).get(
            'arq_uuid') for u in updates])

        # What Nova asked cyborg, and what it got.
        calls = self.cyborg_calls(since)
        self.assertEqual([], [c for c in calls if c[3] >= 400], calls)
        self.assertIn(('GET', '/v2/device_profiles', 'name=e2e-vf', 200),
                      calls)
        [create] = [e for e in self.cloud.proxy.exchanges[since:]
                    if e['method'] == 'POST']
        self.assertEqual(({'device_profile_name': 'e2e-vf'}, 201),
                         (create['body'], create['status']))
        self.assertEqual([arq['uuid']],
                         [a['uuid'] for a in create['answer']['arqs']])
        [bind] = [e for e in self.cloud.proxy.exchanges[since:]
                  if e['method'] == 'PATCH']
        self.assertEqual(202, bind['status'], bind)
        self.assertEqual(
            sorted([{'op': 'add', 'path': '/hostname', 'value': e2e.HOST},
                    {'op': 'add', 'path': '/device_rp_uuid',
                     'value': arq['device_rp_uuid']},
                    {'op': 'add', 'path': '/instance_uuid',
                     'value': server}], key=str),
            sorted(bind['body'][arq['uuid']], key=str))

        # Deleting the server unbinds the port and deletes the ARQ.
        since = len(self.cloud.proxy.exchanges)
        self.delete(server)
        shown = self.cloud.neutron.port(port)
        self.assertEqual(('', ''), (shown['binding:host_id'] or '',
                                    shown['device_id']))
        self.assertEqual([], [k for k in ARQ_KEYS
                              if k in shown['binding:profile']])
        deletes = [c for c in self.cyborg_calls(since) if c[0] == 'DELETE']
        self.assertIn(('DELETE', '/v2/accelerator_requests',
                       'arqs=%s' % arq['uuid']), [c[:3] for c in deletes])
        self.assertEqual([], [c for c in deletes if c[3] >= 400])

    def test_profiles_nova_refuses_for_a_port(self):
        for profile, message in (
                ('e2e-two-vfs', 'multiple devices'),
                ('e2e-vf-and-vf', 'multiple devices'),
                (None, 'No device profile')):
            port = self.port(profile)
            refused = self.cloud.nova('POST', '/servers', {'server': {
                'name': 'e2e-refused', 'imageRef': standins.IMAGE_ID,
                'flavorRef': self.flavors['e2e.plain'],
                'networks': [{'port': port}]}})
            self.assertEqual(400, refused.status_code, refused.text)
            self.assertIn(message, refused.text)
            self.assertEqual('', self.cloud.neutron.port(port)['device_id'])
        self.assertEqual([], self.cloud.arqs())
