"""Intel Ethernet NICs (700 and 800 series): SR-IOV VFs, or the whole PF.

One DriverDevice per physical function (PF); one deployable of resource
class ``CUSTOM_NIC`` per VF, or for the PF itself when SR-IOV is off, as
upstream. The physical network and functions of a PF come from the
``[<nic_type>]`` groups of the types in ``[nic_devices]
enabled_nic_types`` (see :mod:`cyborg.conf.nic`); the PF's VFs inherit
them. Traits: ``CUSTOM_VF`` or ``CUSTOM_PF``, ``CUSTOM_<PHYSNET>``,
``CUSTOM_<FUNCTION>`` (upstream's names), plus ``CUSTOM_NIC_INTEL`` and
``CUSTOM_NIC_PRODUCT_ID_<PF product id>``. PCI attach handles carry
``physical_network`` when the PF has one, for Nova's port binding.

Differences from upstream, on purpose: every enabled type's group is read
(upstream reads ``[x710_static]`` only); physical network and function
names become valid trait names; an interface mapped to several physical
networks is not offered at all; a PF whose VFs are enabled is not offered
whole; a PF the host runs with its own kernel driver is offered whole only
when a mapping names it (else it may be the host's own network).
"""

import collections
import json
import os
import re

from oslo_log import log as logging

from cyborg.accelerator.common import pci
from cyborg.accelerator.common import records
from cyborg.accelerator.drivers import base
from cyborg.conf import nic as nic_conf

LOG = logging.getLogger(__name__)

VENDOR_ID = '8086'
RESOURCE_CLASS = 'CUSTOM_NIC'
DRIVER_NAME = 'NIC'
PF_TRAIT = 'CUSTOM_PF'
VF_TRAIT = 'CUSTOM_VF'
VENDOR_TRAIT = 'CUSTOM_NIC_INTEL'
#: Kernel drivers a VF may be bound to and still be handed out.
VF_DRIVERS = frozenset([None, 'vfio-pci', 'iavf', 'i40evf'])

Family = collections.namedtuple('Family', ['pf_driver', 'vf_product'])
SERIES_700 = Family('i40e', '154c')
SERIES_800 = Family('ice', '1889')

Product = collections.namedtuple('Product', ['name', 'family'])

#: PF product id -> controller name and family.
PRODUCTS = {
    '1572': Product('X710 for 10GbE SFP+', SERIES_700),
    '1581': Product('X710 for 10GbE backplane', SERIES_700),
    '1583': Product('XL710 for 40GbE QSFP+', SERIES_700),
    '1584': Product('XL710 for 40GbE QSFP+', SERIES_700),
    '1586': Product('X710 for 10GBASE-T', SERIES_700),
    '1589': Product('X710/X557-AT 10GBASE-T', SERIES_700),
    '158a': Product('XXV710 for 25GbE backplane', SERIES_700),
    '158b': Product('XXV710 for 25GbE SFP28', SERIES_700),
    '15ff': Product('X710 for 10GBASE-T', SERIES_700),
    '1591': Product('E810-C for backplane', SERIES_800),
    '1592': Product('E810-C for QSFP', SERIES_800),
    '1593': Product('E810-C for SFP', SERIES_800),
    '1599': Product('E810-XXV for backplane', SERIES_800),
    '159a': Product('E810-XXV for QSFP', SERIES_800),
    '159b': Product('E810-XXV for SFP', SERIES_800),
}

# A network device name as the kernel allows it: no '/', ':' or space.
_NETDEV = re.compile(r'[^/:\s]{1,15}')


class Mappings:
    """Physical networks and functions of interfaces, from the config.

    An interface is a network device name or a PF's PciAddress.
    """

    def __init__(self):
        self.physnets = collections.defaultdict(set)
        self.functions = collections.defaultdict(set)

    def physnets_of(self, interfaces):
        return sorted(set().union(*(self.physnets.get(i, ())
                                    for i in interfaces)))

    def functions_of(self, interfaces):
        return sorted(set().union(*(self.functions.get(i, ())
                                    for i in interfaces)))


def _interface(text):
    """A netdev name or a PciAddress; None if ``text`` is neither."""
    text = text.strip()
    if ':' in text:
        return pci.parse_or_none(text)
    if _NETDEV.fullmatch(text) and text not in ('.', '..'):
        return text
    return None


def _own_trait(trait):
    return trait in (PF_TRAIT, VF_TRAIT) or trait.startswith('CUSTOM_NIC_')


def parse_mappings(entries, where, into):
    """Add ``<name>:<if>[|<if>...]`` entries to ``into`` (interface ->
    names); bad entries are logged and left out."""
    for entry in entries:
        name, sep, rest = entry.partition(':')
        name = name.strip()
        interfaces = [_interface(text) for text in rest.split('|')]
        if not (name and sep) or None in interfaces:
            LOG.warning('Ignoring %r in %s: not <name>:<interface>'
                        '[|<interface>...] with network device names or PCI '
                        'addresses', entry, where)
            continue
        trait = records.custom_name(name)
        if _own_trait(trait):
            LOG.warning('Ignoring %r in %s: its trait %s is one the driver '
                        'sets itself', entry, where, trait)
            continue
        for interface in interfaces:
            into[interface].add(name)


def read_mappings(conf):
    """The Mappings of every type in ``[nic_devices] enabled_nic_types``."""
    mappings = Mappings()
    for nic_type in conf.nic_devices.enabled_nic_types:
        try:
            group = nic_conf.register_nic_type_opts(conf, nic_type)
        except ValueError as e:
            LOG.warning('Ignoring NIC type %r of [nic_devices] '
                        'enabled_nic_types: %s', nic_type, e)
            continue
        if not (group.physical_device_mappings or
                group.function_device_mappings):
            LOG.warning('NIC type %s is enabled but [%s] maps no '
                        'interface', nic_type, nic_type)
        parse_mappings(group.physical_device_mappings,
                       '[%s] physical_device_mappings' % nic_type,
                       mappings.physnets)
        parse_mappings(group.function_device_mappings,
                       '[%s] function_device_mappings' % nic_type,
                       mappings.functions)
    return mappings


class IntelNicDriver(base.SysfsPciDriver):
    """Entry point ``intel_nic_driver``."""

    device_type = 'NIC'
    driver_name = DRIVER_NAME
    vendors = (VENDOR_ID,)

    def __init__(self, conf):
        super().__init__(conf)
        self.mappings = read_mappings(conf)

    def candidates(self, functions):
        return [f for f in functions.values()
                if f.product in PRODUCTS and not f.is_vf]

    def netdevs(self, function):
        """Names of the function's network devices (``net/``), sorted."""
        try:
            names = os.listdir(self.reader.path(function.address, 'net'))
        except FileNotFoundError:
            return []
        except OSError as e:
            LOG.warning('Cannot list the network devices of %s: %s',
                        function.address, e)
            return []
        good = sorted(n for n in names if _interface(n) == n)
        for junk in sorted(set(names) - set(good)):
            LOG.warning('Ignoring %r below %s/net: not a network device '
                        'name', junk, function.address)
        return good

    def build_device(self, function, functions):
        product = PRODUCTS[function.product]
        family = product.family
        if function.driver not in (None, 'vfio-pci', family.pf_driver):
            raise base.NotReady('bound to kernel driver %s, expected %s or '
                                'vfio-pci' % (function.driver,
                                              family.pf_driver),
                                action='bind it to %s or vfio-pci'
                                       % family.pf_driver)
        netdevs = self.netdevs(function)
        interfaces = netdevs + [function.address]
        physnets = self.mappings.physnets_of(interfaces)
        if len(physnets) > 1:
            raise base.NotReady('mapped to several physical networks: %s'
                                % ', '.join(physnets))
        physnet = physnets[0] if physnets else None
        nic_functions = self.mappings.functions_of(interfaces)
        if function.has_vfs_enabled:
            offered, role = self._usable_vfs(function, functions,
                                             family), VF_TRAIT
        else:
            self._check_pf_free(function, netdevs, physnet or nic_functions)
            offered, role = [function], PF_TRAIT
        traits = [role, VENDOR_TRAIT,
                  records.custom_name('NIC_PRODUCT_ID', function.product)]
        traits += [records.custom_name(name) for name in nic_functions]
        handle_info = {}
        if physnet is not None:
            traits.append(records.custom_name(physnet))
            handle_info['physical_network'] = physnet
        deployables = [
            records.deployable(
                self.host, f.address, RESOURCE_CLASS, traits,
                [records.pci_handle(f.address, **handle_info)],
                driver_name=DRIVER_NAME)
            for f in offered]
        return records.device(
            function, self.device_type,
            'Intel Ethernet Controller %s' % product.name, deployables,
            vendor_board_info=json.dumps(
                {'netdevs': netdevs, 'physical_network': physnet,
                 'functions': nic_functions}, sort_keys=True))

    @staticmethod
    def _check_pf_free(function, netdevs, mapped):
        """Raise NotReady for a PF the host may be using as its own NIC."""
        if function.driver in (None, 'vfio-pci') or mapped:
            return
        raise base.NotReady(
            'the host runs it with kernel driver %s (%s) and no '
            '[<nic_type>] mapping names it'
            % (function.driver, ', '.join(netdevs) or 'no network device'),
            action='map it in [<nic_type>] physical_device_mappings or '
                   'function_device_mappings of a type in [nic_devices] '
                   'enabled_nic_types, bind it to vfio-pci, or enable '
                   'SR-IOV VFs on it')

    def _usable_vfs(self, pf, functions, family):
        """The PF's VFs that can be handed out; NotReady if there are none
        or if they are being created or removed."""
        if pf.sriov_numvfs is not None and \
                pf.sriov_numvfs != len(pf.virtfns):
            raise base.NotReady(
                'sriov_numvfs says %d VFs but sysfs lists %d: they are '
                'being created or removed' % (pf.sriov_numvfs,
                                              len(pf.virtfns)),
                setup_required=False)
        usable = []
        for address in pf.virtfns:
            vf = functions.get(address)
            if vf is None:
                continue  # unreadable or not Intel; the reader said why
            if vf.product != family.vf_product:
                self.decline(vf, 'a VF of NIC %s with product id %s, not '
                             'the %s of its family' % (
                                 pf.address, vf.product, family.vf_product))
            elif vf.driver not in VF_DRIVERS:
                self.decline(vf, 'a VF of NIC %s bound to kernel driver %s'
                             % (pf.address, vf.driver),
                             'bind it to %s' % ' or '.join(
                                 sorted(d for d in VF_DRIVERS if d)))
            else:
                usable.append(vf)
        if not usable:
            raise base.NotReady('none of its VFs can be offered')
        return usable
