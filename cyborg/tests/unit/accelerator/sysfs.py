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
from cyborg.agent import manager as agent_manager
from cyborg.common import context
from cyborg.tests import base
from cyborg.tests.functional import glance

Card = collections.namedtuple(
    'Card', ['vendor', 'product', 'class_code', 'driver', 'vf_product',
             'vf_driver', 'totalvfs'])

#: Cards by short name: PF ids, class, kernel drivers, VF ids.
CARDS = {
    'tesla_t4': Card('10de', '1eb8', '030200', 'nvidia', None, None, None),
    'a100': Card('10de', '20b0', '030200', 'nvidia', '20b0', 'nvidia', 16),
    'h200_sxm': Card('10de', '2335', '030200', 'nvidia', '2335', 'nvidia',
                     16),
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

#: Test data: captured hosts, and a trimmed copy of Debian's pci.ids.
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'data')
PCI_IDS = os.path.join(DATA, 'pci.ids')


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
            self._link(path, os.path.join(group, 'devices', str(address)))
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
        # The tree is <tmp>/sys; what the host uses is read from <tmp>/proc.
        top = self.useFixture(fixtures.TempDir()).path
        root = os.path.join(top, 'sys')
        self.proc = os.path.join(top, 'proc')
        self.tree = SysfsTree(root)
        self.flags(sysfs_root=root, group='agent')
        self.flags(pci_ids_path=PCI_IDS, group='agent')
        self.flags(host=self.HOST)
        self.logs = self.useFixture(fixtures.FakeLogger(level='WARNING'))

    def write_proc(self, relative, content):
        """Write a file below the tree's ``proc`` (``self/mountinfo``,
        ``swaps``...)."""
        path = os.path.join(self.proc, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(content)

    def program_through_agent(self, enabled_drivers, driver, data, name):
        """What the conductor asks to program a device the agent reported:
        ``fpga_program`` with the device's control path id, a Glance
        image holding ``data`` and the deployable's driver name; it must
        succeed."""
        images = glance.FakeGlance().start(self)
        image = images.add(data=data, name=name)
        self.flags(enabled_drivers=enabled_drivers, group='agent')
        agent = agent_manager.AgentManager(self.HOST, self.conf)
        [device] = agent.drivers[driver].discover()
        cpid = {'cpid_type': device.controlpath_id.cpid_type,
                'cpid_info': device.controlpath_id.cpid_info}
        self.assertTrue(agent.fpga_program(
            context.get_admin_context(), cpid, image['id'],
            device.deployable_list[0].driver_name))

    @staticmethod
    def not_offered(driver):
        """What ``driver`` says of the functions it does not offer, one
        ``<address>: <reason>`` line each: drivers log nothing of it
        (the agent does, once)."""
        return ''.join('%s: %s\n' % (h['address'], h['reason'])
                       for h in driver.hardware() if not h['ready'])

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


# Intel Ethernet 700 and 800 series NICs besides x710 and e810 above.
CARDS.update({
    'xl710': Card('8086', '1583', '020000', 'i40e', '154c', 'iavf', 64),
    'xxv710': Card('8086', '158b', '020000', 'i40e', '154c', 'iavf', 64),
    'e810_cq': Card('8086', '1592', '020000', 'ice', '1889', 'iavf', 128),
})


def add_netdev(tree, address, name, mac='3c:fd:fe:00:00:01', up=True):
    """Give a function the network device ``name``, as its kernel driver
    does: ``<function>/net/<name>/`` and the ``class/net/<name>`` link.
    The host uses an interface that is ``up``; one it leaves down, a VM
    can have."""
    path = os.path.join(tree.function_dir(address), 'net', name)
    os.makedirs(path, exist_ok=True)
    tree.write(address, 'net/%s/address' % name, mac + '\n')
    tree.write(address, 'net/%s/operstate' % name,
               'up\n' if up else 'down\n')
    tree.write(address, 'net/%s/flags' % name,
               '0x1003\n' if up else '0x1002\n')
    tree._link(path, os.path.join(tree.root, 'class', 'net', name))
    return path


# FPGA cards besides pac_arria10 and the U200 above.
CARDS.update({
    'pac_d5005': Card('8086', '0b2b', '120000', 'dfl-pci', '0b2c',
                      'vfio-pci', 1),
    'pac_n3000': Card('8086', '0b30', '120000', 'dfl-pci', None, None,
                      None),
    'u250_mgmt': Card('10ee', '5004', '120000', 'xclmgmt', None, None,
                      None),
    'u250_user': Card('10ee', '5005', '120000', 'xocl', None, None, None),
})


def add_vendor_vgpu(tree, vf, creatable, current=0):
    """The ``nvidia/`` files of a VF under NVIDIA's vendor-specific VFIO
    vGPU: ``creatable`` is ``[(number, name)]``, as the kernel lists
    them."""
    tree.write(vf, 'nvidia/current_vgpu_type', '%d\n' % current)
    tree.write(vf, 'nvidia/creatable_vgpu_types', 'ID    : vGPU Name\n' +
               ''.join('%-5d : %s\n' % entry for entry in creatable))


def add_opae(tree, address, interface_id=None, afu_id=None,
             driver='dfl-pci'):
    """Write what an OPAE kernel driver shows below an Intel FPGA function.

    ``interface_id``: the function has an FPGA management engine (FME,
    a PF) with one PR region of that interface id. ``afu_id``: it has a
    port whose AFU is that (a PF without VFs, or a VF). ``driver`` is
    ``dfl-pci`` (in-kernel DFL: ``fpga_region/regionN/dfl-fme.N/
    dfl-fme-region.N/fpga_region/regionM/compat_id`` and
    ``fpga_region/regionN/dfl-port.N/afu_id``) or ``intel-fpga-pci``
    (OPAE's older driver: ``fpga/intel-fpga-dev.N/intel-fpga-fme.N/pr/
    interface_id`` and ``.../intel-fpga-port.N/afu_id``); the function is
    bound to it. Instance numbers come from the address, so they are unique
    in a tree.
    """
    address = pci.PciAddress.parse(str(address))
    n = address.bus * 256 + address.device * 8 + address.function
    tree.bind(address, driver)
    if driver == 'dfl-pci':
        top = 'fpga_region/region%d' % (2 * n)
        fme = '%s/dfl-fme.%d' % (top, n)
        pr = '%s/dfl-fme-region.%d/fpga_region/region%d/compat_id' % (
            fme, n, 2 * n + 1)
        port = '%s/dfl-port.%d' % (top, n)
        class_link = os.path.join(tree.root, 'class', 'fpga_region',
                                  'region%d' % (2 * n))
    else:
        top = 'fpga/intel-fpga-dev.%d' % n
        fme = '%s/intel-fpga-fme.%d' % (top, n)
        pr = fme + '/pr/interface_id'
        port = '%s/intel-fpga-port.%d' % (top, n)
        class_link = os.path.join(tree.root, 'class', 'fpga',
                                  'intel-fpga-dev.%d' % n)
    top_dir = os.path.join(tree.function_dir(address), top)
    os.makedirs(top_dir, exist_ok=True)
    tree._link(top_dir, class_link)
    tree._link(tree.function_dir(address), os.path.join(top_dir, 'device'))
    if interface_id is not None:
        tree.write(address, fme + '/ports_num', '1\n')
        tree.write(address, pr, interface_id + '\n')
    if afu_id is not None:
        tree.write(address, port + '/afu_id', afu_id + '\n')


def add_alveo(tree, slot, model='u200', mgmt_driver=_DEFAULT,
              user_driver=_DEFAULT):
    """A Xilinx Alveo card in ``slot`` (``DDDD:BB:DD``): its management
    function ``.0`` and user function ``.1``; returns their addresses."""
    mgmt, user = pci.PciAddress.parse(slot + '.0'), pci.PciAddress.parse(
        slot + '.1')
    tree.add_card(model + '_mgmt', mgmt, driver=mgmt_driver)
    tree.add_card(model + '_user', user, driver=user_driver)
    return mgmt, user


class FakeTool(fixtures.Fixture):
    """A command-line tool (such as ``fpgaconf``) replaced by a shell
    script first on PATH, with privsep run in-process.

    The script records its arguments, one a line, in :attr:`argv_file`,
    then runs ``body`` (shell; by default it succeeds). :meth:`argv` reads
    them back, None if the tool never ran.
    """

    def __init__(self, name, body='echo done'):
        super().__init__()
        self.name = name
        self.body = body

    def _setUp(self):
        from cyborg import privsep  # here: this file's helpers are appended
        privsep.sys_admin_pctxt.set_client_mode(False)
        self.addCleanup(privsep.sys_admin_pctxt.set_client_mode, True)
        self.bin_dir = self.useFixture(fixtures.TempDir()).path
        self.argv_file = os.path.join(self.bin_dir, self.name + '.argv')
        self.useFixture(fixtures.EnvironmentVariable(
            'PATH', os.pathsep.join([self.bin_dir,
                                     os.environ.get('PATH', os.defpath)])))
        self.set_body(self.body)

    def set_body(self, body):
        path = os.path.join(self.bin_dir, self.name)
        with open(path, 'w') as f:
            f.write('#!/bin/sh\nprintf "%%s\\n" "$@" > "%s"\n%s\n'
                    % (self.argv_file, body))
        os.chmod(path, 0o755)

    def argv(self):
        if not os.path.exists(self.argv_file):
            return None
        with open(self.argv_file) as f:
            return f.read().splitlines()
