"""The Neutron stand-in and the timing proxy answer as the real services
do for what Nova asks; no Nova needed, so these run in every suite."""

import requests
import testtools

from cyborg.tests.e2e import standins

PROJECT = 'p1'


class NeutronStandInTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.neutron = standins.Neutron().start()
        self.addCleanup(self.neutron.stop)
        self.network = self.neutron.add_network('net1', physnet='physnet1')
        self.port = self.neutron.add_port(
            self.network, PROJECT, **{'binding:vnic_type':
                                      'accelerator-direct',
                                      'device_profile': 'dp1'})

    def call(self, method, path, **kwargs):
        return requests.request(method, self.neutron.url + path, timeout=10,
                                **kwargs)

    def test_lists_filter_and_fields(self):
        other = self.neutron.add_port(self.network, 'p2')
        listed = self.call('GET', '/v2.0/ports.json', params={
            'tenant_id': PROJECT, 'fields': ['id', 'device_profile']}).json()
        self.assertEqual({'ports': [{'id': self.port['id'],
                                     'device_profile': 'dp1'}]}, listed)
        both = self.call('GET', '/v2.0/ports', params={
            'id': [self.port['id'], other['id']]}).json()['ports']
        self.assertEqual(2, len(both))
        shared = self.call('GET', '/v2.0/networks',
                           params={'shared': 'true'}).json()['networks']
        self.assertEqual([self.network['id']], [n['id'] for n in shared])
        self.assertEqual(('physnet1', 'vlan'), (
            shared[0]['provider:physical_network'],
            shared[0]['provider:network_type']))
        [subnet] = self.call('GET', '/v2.0/subnets', params={
            'network_id': self.network['id']}).json()['subnets']
        self.assertEqual(subnet['id'],
                         self.port['fixed_ips'][0]['subnet_id'])
        self.assertEqual({'extensions': []},
                         self.call('GET', '/v2.0/extensions').json())
        self.assertEqual([], self.neutron.unexpected)

    def test_binding_and_unbinding_a_port(self):
        path = '/v2.0/ports/%s' % self.port['id']
        profile = {'pci_slot': '0000:18:02.0', 'arq_uuid': 'a1'}
        bound = self.call('PUT', path + '.json', json={'port': {
            'binding:host_id': 'h1', 'device_id': 'vm1',
            'binding:profile': profile}}).json()['port']
        self.assertEqual(('h1', 'vm1', 'hw_veb', profile, 'ACTIVE'), (
            bound['binding:host_id'], bound['device_id'],
            bound['binding:vif_type'], bound['binding:profile'],
            bound['status']))
        # binding:profile is replaced whole.
        unbound = self.call('PUT', path, json={'port': {
            'binding:host_id': None, 'device_id': '',
            'binding:profile': {}}}).json()['port']
        self.assertEqual(({}, 'unbound', 'DOWN'), (
            unbound['binding:profile'], unbound['binding:vif_type'],
            unbound['status']))
        self.assertEqual(unbound, self.neutron.port(self.port['id']))
        self.assertEqual(['PUT', 'PUT'],
                         [r[0] for r in self.neutron.requests])
        self.assertEqual(204, self.call('DELETE', path).status_code)
        self.assertEqual(404, self.call('GET', path).status_code)
        self.assertEqual(404, self.call('PUT', path, json={
            'port': {}}).status_code)

    def test_created_ports_and_unknown_requests(self):
        created = self.call('POST', '/v2.0/ports', json={'port': {
            'network_id': self.network['id'], 'tenant_id': PROJECT}})
        self.assertEqual(201, created.status_code)
        port = created.json()['port']
        self.assertEqual((self.network['id'], 'unbound'), (
            port['network_id'], port['binding:vif_type']))
        self.assertNotEqual(port['mac_address'], self.port['mac_address'])
        self.assertEqual(404, self.call('POST', '/v2.0/networks', json={
            'network': {}}).status_code)
        self.assertEqual(['POST /v2.0/networks'], self.neutron.unexpected)


class TimingProxyTest(testtools.TestCase):

    def test_exchanges_are_recorded_whole(self):
        neutron = standins.Neutron().start()
        self.addCleanup(neutron.stop)
        network = neutron.add_network('net1')
        port = neutron.add_port(network, PROJECT)
        proxy = standins.TimingProxy(neutron.url).start()
        self.addCleanup(proxy.stop)
        path = '/v2.0/ports/%s' % port['id']
        answer = requests.put(proxy.url + path + '?x=1', json={
            'port': {'device_id': 'vm1'}}, timeout=10)
        self.assertEqual(200, answer.status_code)
        [exchange] = proxy.exchanges
        self.assertEqual(
            {'method': 'PUT', 'path': path, 'query': 'x=1',
             'body': {'port': {'device_id': 'vm1'}}, 'status': 200},
            {k: v for k, v in exchange.items() if k != 'answer'})
        self.assertEqual('vm1', exchange['answer']['port']['device_id'])
        self.assertEqual([('PUT', path, 200)],
                         [c[:3] for c in proxy.calls])
