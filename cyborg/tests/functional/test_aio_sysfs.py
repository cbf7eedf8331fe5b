"""``cyborg-aio --sysfs-root`` on a captured host with a card for every
driver: the inventory reaches the database, the REST API and the embedded
Placement, and edits of the tree on disk reach all three without a
restart."""

import collections
import json
import os
import time
import uuid

import fixtures
import requests
import sqlalchemy as sa
import testtools
from testtools import content

from cyborg.accelerator.common import records
from cyborg.aio import service as aio_service
from cyborg.tests.functional import daemons
from cyborg.tests.functional.test_hello import wait_for
from cyborg.tests.unit.accelerator import sysfs

ADMIN = {'X-Auth-Token': 'admin'}
# 1.14: in_tree and parent_provider_uuid.
PLACEMENT = dict(ADMIN, **{'OpenStack-API-Version': 'placement 1.14'})

DRIVERS = ['fake_driver', 'pci_driver', 'nvidia_gpu_driver',
           'intel_fpga_driver', 'xilinx_fpga_driver', 'intel_qat_driver',
           'intel_nic_driver']

WHOLE_GPU = '0000:3b:00.0'
VGPU_GPU = '0000:af:00.0'
QAT = '0000:3d:00.0'
QAT_VFS = ['0000:3d:01.0', '0000:3d:01.1']
INTEL_FPGA = '0000:5e:00.0'
ALVEO_SLOT = '0000:86:00'
NIC = '0000:18:00.0'
NIC_VFS = ['0000:18:01.0', '0000:18:01.1']
NVME = '0000:d8:00.0'
NEW_GPU = '0000:60:00.0'

INTERFACE_ID = 'ce48969398f05f33946d560708be108a'
AFU_ID = 'd8424dc4a4a3c413f89e433683f9040b'
NVME_SPEC = {'vendor_id': '144d', 'product_id': 'a808',
             'resource_class': 'CUSTOM_NVME', 'traits': 'CUSTOM_NVME_FAST'}

#: What one deployable should be: its device's type, its resource class
#: and total, its traits as its driver reports them (the attributes in the
#: database and the API: the NVIDIA and PCI drivers include OWNER_CYBORG,
#: as upstream's do; Placement has them plus OWNER_CYBORG for every
#: driver) and its driver_name.
Offer = collections.namedtuple(
    'Offer', ['device_type', 'rc', 'total', 'traits', 'driver_name'])

#: How the database view shows a device that has no deployable.
NO_DEPLOYABLE = '(no deployable)'

WHOLE_T4 = Offer('GPU', 'PGPU', 1, ['CUSTOM_NVIDIA_1EB8', 'OWNER_CYBORG'],
                 'NVIDIA')


def build_tree(root):
    """A host with a card for every driver but the fake one."""
    tree = sysfs.SysfsTree(root)
    # One T4 passed through whole, one run by the vGPU host driver.
    tree.add_card('tesla_t4', WHOLE_GPU)
    tree.add_card('tesla_t4', VGPU_GPU)
    tree.add_mdev_type(VGPU_GPU, 'nvidia-222', 'GRID T4-1B', 16)
    tree.add_card('qat_c62x', QAT, vfs=len(QAT_VFS))
    tree.add_card('pac_arria10', INTEL_FPGA)
    sysfs.add_opae(tree, INTEL_FPGA, INTERFACE_ID, AFU_ID)
    sysfs.add_alveo(tree, ALVEO_SLOT)
    tree.add_card('x710', NIC, vfs=len(NIC_VFS))
    sysfs.add_netdev(tree, NIC, 'ens1f0')
    # An NVMe drive for the generic driver: no vendor driver wants it.
    tree.add_function(NVME, '144d', 'a808', '010802', driver='vfio-pci')
    return tree


def expected_offers(host):
    """{deployable name: Offer} of the host :func:`build_tree` writes."""
    def name(address):
        return records.deployable_name(host, address)
    offers = {
        '%s_FakeDevice' % host: Offer(
            'FPGA', 'FPGA', 16, ['CUSTOM_FAKE_DEVICE'], 'FAKEDRIVER'),
        name(NVME): Offer(
            'SSD', 'CUSTOM_NVME', 1,
            ['CUSTOM_NVME_FAST', 'CUSTOM_PCI_PRODUCT_ID_A808',
             'OWNER_CYBORG'], '144D'),
        name(WHOLE_GPU): WHOLE_T4,
        name(VGPU_GPU): Offer(
            'GPU', 'VGPU', 16, ['CUSTOM_NVIDIA_1EB8_T4_1B', 'OWNER_CYBORG'],
            'NVIDIA'),
        name(INTEL_FPGA): Offer('FPGA', 'FPGA', 1, [
            'CUSTOM_FPGA_FUNCTION_ID_INTEL_' + AFU_ID.upper(),
            'CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
            'CUSTOM_FPGA_REGION_INTEL_' + INTERFACE_ID.upper()], 'intel'),
        name(ALVEO_SLOT + '.0'): Offer('FPGA', 'FPGA', 1, [
            'CUSTOM_FPGA_PRODUCT_ID_5000', 'CUSTOM_FPGA_XILINX'], 'XILINX'),
    }
    for vf in QAT_VFS:
        offers[name(vf)] = Offer('QAT', 'CUSTOM_QAT', 1, [
            'CUSTOM_QAT_COMPRESSION', 'CUSTOM_QAT_CRYPTO',
            'CUSTOM_QAT_PRODUCT_ID_37C8'], 'QAT')
    for vf in NIC_VFS:
        offers[name(vf)] = Offer('NIC', 'CUSTOM_NIC', 1, [
            'CUSTOM_NIC_INTEL', 'CUSTOM_NIC_PRODUCT_ID_1572',
            'CUSTOM_PHYSNET1', 'CUSTOM_VF'], 'NIC')
    return offers


def expected_devices(host, offers):
    """The deployable names of each device, sorted: the VFs of a card
    are deployables of one device, everything else is one of its own."""
    cards = [[records.deployable_name(host, vf) for vf in QAT_VFS],
             [records.deployable_name(host, vf) for vf in NIC_VFS]]
    grouped = {name for card in cards for name in card}
    return sorted(cards + [[name] for name in offers
                           if name not in grouped])


class AllInOneSysfsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.tree = build_tree(os.path.join(tmp, 'sys'))
        self.host = 'aio-sysfs-%s' % uuid.uuid4().hex[:8]
        self.state_dir = os.path.join(tmp, 'state')
        port = daemons.free_port()
        self.base = 'http://127.0.0.1:%d' % port
        config = daemons.write_config(os.path.join(tmp, 'aio.conf'), {
            'DEFAULT': {'host': self.host},
            'agent': {'enabled_drivers': ','.join(DRIVERS),
                      'rescan_interval': 1, 'heartbeat_interval': 1},
            'pci': {'passthrough_whitelist': json.dumps(NVME_SPEC)},
            'gpu_devices': {'enabled_vgpu_types': 'nvidia-222'},
            'vgpu_nvidia-222': {'device_addresses': VGPU_GPU},
            'nic_devices': {'enabled_nic_types': 'x710_static'},
            'x710_static': {'physical_device_mappings': 'physnet1:ens1f0'},
        })
        self.aio = daemons.Daemon(
            self, 'aio', ['--port', str(port), '--state-dir',
                          self.state_dir, '--sysfs-root', self.tree.root,
                          '--config-file', config],
            os.path.join(tmp, 'aio.log'))
        self.addOnException(lambda exc_info: self.addDetail(
            'aio.log', content.text_content(self.aio.output()[-20000:])))
        daemons.wait_for_http(self.base + '/v2', daemon=self.aio)
        self.root_uuid = aio_service.compute_node_uuid(self.host)

    # What the database, Placement and the REST API show.

    def db_rows(self):
        """(deployable name, num_accelerators, rp_uuid, device id, device
        type, device hostname) of every deployable in the database; a
        device without any deployable gives a row named NO_DEPLOYABLE."""
        engine = sa.create_engine('sqlite:///%s' % os.path.join(
            self.state_dir, 'cyborg.sqlite'))
        try:
            with engine.connect() as connection:
                return connection.execute(sa.text(
                    "SELECT COALESCE(d.name, '%s'), d.num_accelerators, "
                    'd.rp_uuid, v.id, v.type, v.hostname FROM devices v '
                    'LEFT JOIN deployables d ON d.device_id = v.id'
                    % NO_DEPLOYABLE)).fetchall()
        finally:
            engine.dispose()

    def placement(self, path):
        response = requests.get(self.base + '/placement' + path,
                                headers=PLACEMENT, timeout=10)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def children(self):
        """{name: provider} of the compute node's child providers."""
        providers = self.placement('/resource_providers?in_tree=%s'
                                   % self.root_uuid)['resource_providers']
        return {rp['name']: rp for rp in providers
                if rp['uuid'] != self.root_uuid}

    def provider_view(self, provider):
        """(uuid, parent, {rc: (total, reserved)}, traits) of a provider."""
        inventories = self.placement('/resource_providers/%s/inventories'
                                     % provider['uuid'])['inventories']
        traits = self.placement('/resource_providers/%s/traits'
                                % provider['uuid'])['traits']
        return (provider['uuid'], provider['parent_provider_uuid'],
                {rc: (inventory['total'], inventory['reserved'])
                 for rc, inventory in inventories.items()},
                sorted(traits))

    def api_deployables(self):
        response = requests.get(self.base + '/v2/deployables',
                                headers=ADMIN, timeout=10)
        self.assertEqual(200, response.status_code, response.text)
        return {d['name']: d for d in response.json()['deployables']}

    def names(self):
        """The deployables in the database and the providers under the
        compute node, by name."""
        return (sorted(row[0] for row in self.db_rows()),
                sorted(self.children()))

    def assert_inventory(self, offers):
        """The database, Placement and the REST API show ``offers``,
        exactly."""
        rows = self.db_rows()
        self.assertEqual(
            {name: (offer.device_type, self.host, offer.total)
             for name, offer in offers.items()},
            {name: (device_type, hostname, total)
             for name, total, _, _, device_type, hostname in rows})
        rp_uuids = {row[0]: row[2] for row in rows}
        by_device = collections.defaultdict(list)
        for row in rows:
            by_device[row[3]].append(row[0])
        self.assertEqual(expected_devices(self.host, offers),
                         sorted(sorted(names)
                                for names in by_device.values()))

        children = self.children()
        self.assertEqual(sorted(offers), sorted(children))
        for name, offer in offers.items():
            # The deployable's provider, a child of the compute node, with
            # all of it available.
            self.assertEqual(
                (rp_uuids[name], self.root_uuid, {offer.rc: (offer.total, 0)},
                 sorted(set(offer.traits) | {'OWNER_CYBORG'})),
                self.provider_view(children[name]), name)

        api = self.api_deployables()
        self.assertEqual(sorted(offers), sorted(api))
        for name, offer in offers.items():
            deployable = api[name]
            attributes = json.loads(deployable['attributes_list'])
            self.assertEqual(
                (offer.total, rp_uuids[name], offer.driver_name, [offer.rc],
                 sorted(offer.traits)),
                (deployable['num_accelerators'], deployable['rp_uuid'],
                 deployable['driver_name'],
                 [a['rc'] for a in attributes if 'rc' in a],
                 sorted(value for a in attributes
                        for key, value in a.items()
                        if key.startswith('trait'))),
                name)

    def eventually(self, assertion, timeout):
        """Run ``assertion`` until it passes; after ``timeout`` seconds its
        failure is the test's."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return assertion()
            except AssertionError:
                if time.monotonic() > deadline or not self.aio.running():
                    raise
                time.sleep(0.2)

    def test_every_driver_reported_and_tree_edits_followed(self):
        offers = expected_offers(self.host)
        self.eventually(lambda: self.assert_inventory(offers), timeout=40)

        # A GPU leaves the host: its deployable and provider go.
        self.tree.remove(WHOLE_GPU)
        del offers[records.deployable_name(self.host, WHOLE_GPU)]
        wait_for(lambda: self.names() == (sorted(offers), sorted(offers)),
                 timeout=15)
        self.assert_inventory(offers)

        # Another one arrives, and the same process offers it.
        self.tree.add_card('tesla_t4', NEW_GPU)
        offers[records.deployable_name(self.host, NEW_GPU)] = WHOLE_T4
        self.eventually(lambda: self.assert_inventory(offers), timeout=15)
        self.assertTrue(self.aio.running())
