"""Writing realistic sysfs trees for driver tests.

The layout is the kernel's: functions live in
``devices/pci<domain>:<bus>/<address>/``, ``bus/pci/devices/<address>`` is
a relative symlink to them, ``driver`` points at ``bus/pci/drivers/<name>``,
``iommu_group`` at ``kernel/iommu_groups/<n>``, a PF has ``virtfn<i>`` links
to its VFs and each VF a ``physfn`` link back, and mdev capable functions
have ``mdev_supported_types/<type>/{name,available_instances,device_api,
devices/}``. Cards come from :data:`CARDS` with real vendor/device ids::

    tree = SysfsTree(tmpdir)
    tree.add_card('tesla_t4', '0000:3b:00.0')
    tree.add_card('qat_c62x', '0000:3d:00.0', vfs=4)
    tree.write('0000:3b:00.0', 'vendor', '0x10')   # half-written file
"""

import collections
import os

import fixtures

from cyborg.accelerator.common import pci
from cyborg.tests import base

Card = collections.namedtuple(
    'Card', ['vendor', 'product', 'class_code', 'driver', 'vf_product',
             'vf_driver', 'totalvfs'])

#: Cards by short name: PF ids, class, kernel drivers, VF ids.
CARDS = {
    'tesla_t4': Card('10de', '1eb8', '030200', 'nvidia', None, None, None),
    'a100': Card('10de', '20b0', '030200', 'nvidia', '20b0', 'nvidia', 16),
    'qat_c62x': Card('8086', '37c8', '0b4000', 'c6xx', '37c9', 'c6xxvf',
                     16),
    'qat_4xxx': Card('8086', '4940', '0b4000', '4xxx', '4941', 'vfio-pci',
                     16),
    'pac_arria10': Card('8086', '09c4', '120000', 'dfl-pci', '09c5',
                        'vfio-pci', 1),
    'u200_mgmt': Card('10ee', '5000', '120000', 'xclmgmt', None, None,
                      None),
    'u200_user': Card('10ee', '5001', '120000', 'xocl', None, None, None),
    'x710': Card('8086', '1572', '020000', 'i40e', '154c', 'iavf', 64),
    'e810': Card('8086', '159b', '020000', 'ice', '1889', 'iavf', 128),
    'bridge': Card('8086', '2030', '060400', 'pcieport', None, None, None),
}

_DEFAULT = object()


class SysfsTree:
    """A sysfs tree below ``root`` (which stands for ``/sys``)."""

    def __init__(self, root):
        self.root = root
        self._iommu_groups = 0
        os.makedirs(os.path.join(root, 'bus', 'pci', 'devices'),
                    exist_ok=True)

    def function_dir(self, address):
        address = pci.PciAddress.parse(str(address))
        return os.path.join(self.root, 'devices',
                            'pci%04x:%02x' % (address.domain, address.bus),
                            str(address))

    def _link(self, target, link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(os.path.relpath(target, os.path.dirname(link)), link)

    def add_function(self, address, vendor, product, class_code,
                     driver=None, numa_node=0, iommu_group=_DEFAULT,
                     totalvfs=None):
        """Write one function; returns its directory."""
        path = self.function_dir(address)
        os.makedirs(path, exist_ok=True)
        self.write(address, 'vendor', '0x%s\n' % vendor)
        self.write(address, 'device', '0x%s\n' % product)
        self.write(address, 'class', '0x%s\n' % class_code)
        self.write(address, 'numa_node', '%d\n' % numa_node)
        if totalvfs is not None:
            self.write(address, 'sriov_totalvfs', '%d\n' % totalvfs)
            self.write(address, 'sriov_numvfs', '0\n')
        if iommu_group is _DEFAULT:
            iommu_group = self._iommu_groups
            self._iommu_groups += 1
        if iommu_group is not None:
            group = os.path.join(self.root, 'kernel', 'iommu_groups',
                                 str(iommu_group))
            os.makedirs(os.path.join(group, 'devices'), exist_ok=True)
            self._link(group, os.path.join(path, 'iommu_group'))
        self.bind(address, driver)
        self._link(path, os.path.join(self.root, 'bus', 'pci', 'devices',
                                      str(address)))
        return path

    def bind(self, address, driver):
        """Bind a function to a kernel driver (None: unbind)."""
        link = os.path.join(self.function_dir(address), 'driver')
        if os.path.lexists(link):
            os.unlink(link)
        if driver is not None:
            target = os.path.join(self.root, 'bus', 'pci', 'drivers', driver)
            os.makedirs(target, exist_ok=True)
            self._link(target, link)

    def add_card(self, name, address, vfs=0, driver=_DEFAULT,
                 vf_driver=_DEFAULT, numa_node=0):
        """A card from CARDS, with ``vfs`` VFs enabled; returns VF addresses.

        VFs follow the PF on its bus: device PF+1.., eight functions each.
        """
        card = CARDS[name]
        self.add_function(address, card.vendor, card.product,
                          card.class_code,
                          card.driver if driver is _DEFAULT else driver,
                          numa_node=numa_node, totalvfs=card.totalvfs)
        if not vfs:
            return []
        return self.add_vfs(address, vfs, card.vf_product,
                            card.vf_driver if vf_driver is _DEFAULT
                            else vf_driver)

    def add_vfs(self, pf_address, count, vf_product, vf_driver):
        pf = pci.PciAddress.parse(str(pf_address))
        vendor = self.read(pf, 'vendor')[2:6]
        class_code = self.read(pf, 'class')[2:8]
        addresses = []
        for index in range(count):
            vf = pci.PciAddress(pf.domain, pf.bus,
                                pf.device + 1 + index // 8, index % 8)
            path = self.add_function(vf, vendor, vf_product, class_code,
                                     vf_driver)
            self._link(path, os.path.join(self.function_dir(pf),
                                          'virtfn%d' % index))
            self._link(self.function_dir(pf), os.path.join(path, 'physfn'))
            addresses.append(vf)
        self.write(pf, 'sriov_numvfs', '%d\n' % count)
        return addresses

    def add_mdev_type(self, address, type_id, name, available,
                      device_api='vfio-pci', devices=()):
        path = os.path.join(self.function_dir(address),
                            'mdev_supported_types', type_id)
        os.makedirs(os.path.join(path, 'devices'), exist_ok=True)
        self.write(address, 'mdev_supported_types/%s/name' % type_id,
                   name + '\n')
        self.write(address,
                   'mdev_supported_types/%s/available_instances' % type_id,
                   '%d\n' % available)
        self.write(address, 'mdev_supported_types/%s/device_api' % type_id,
                   device_api + '\n')
        for uuid in devices:
            os.makedirs(os.path.join(path, 'devices', uuid), exist_ok=True)

    def write(self, address, relative, content):
        """Write (or overwrite) a file below a function."""
        path = os.path.join(self.function_dir(address), relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(content)

    def read(self, address, relative):
        with open(os.path.join(self.function_dir(address), relative)) as f:
            return f.read()

    def remove(self, address, relative=None):
        """Remove a file below a function, or the function's bus link."""
        if relative is None:
            os.unlink(os.path.join(self.root, 'bus', 'pci', 'devices',
                                   str(address)))
        else:
            os.unlink(os.path.join(self.function_dir(address), relative))


class SysfsTestCase(base.TestCase):
    """A test with an empty sysfs tree as ``[agent] sysfs_root``."""

    HOST = 'cmp-1.example.org'

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.tree = SysfsTree(root)
        self.flags(sysfs_root=root, group='agent')
        self.flags(host=self.HOST)
        self.logs = self.useFixture(fixtures.FakeLogger(level='WARNING'))

    def by_name(self, devices):
        """{deployable name: deployable} over a list of devices."""
        return {dep.name: dep for device in devices
                for dep in device.deployable_list}

    @staticmethod
    def attrs(deployable):
        return {a.key: a.value for a in deployable.attribute_list}

    @staticmethod
    def traits(deployable):
        return sorted(a.value for a in deployable.attribute_list
                      if a.key.startswith('trait'))

    @staticmethod
    def rc(deployable):
        return [a.value for a in deployable.attribute_list
                if a.key == 'rc'][0]
