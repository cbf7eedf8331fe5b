"""Generic PCI passthrough: offer whole PCI functions picked by device specs.

The specs are Nova style JSON in ``[pci] device_spec`` or upstream's
``[pci] passthrough_whitelist``. Each matching function becomes one
deployable of one accelerator.

Differences from upstream, on purpose: the device type comes from the PCI
class (upstream labels everything GPU); a spec that matches nothing in
particular (no vendor, product or address) or uses a key we cannot honour
(``devname``) is refused instead of matching every device; bridges are
never offered; a PF with SR-IOV VFs enabled is not offered whole.
"""

import fnmatch
import json
import re

import os_resource_classes
import os_traits
from oslo_log import log as logging

from cyborg.accelerator.common import pciids
from cyborg.accelerator.common import records
from cyborg.accelerator.drivers import base

LOG = logging.getLogger(__name__)

DEFAULT_RESOURCE_CLASS = 'CUSTOM_PCI'
#: PCI vendor ids upstream names in the CUSTOM_PCI_<VENDOR> trait.
VENDOR_NAMES = {'10de': 'NVIDIA', '102b': 'MATROX', '8086': 'INTEL',
                '1bd4': 'INSPUR', '10ee': 'XILINX', '19e5': 'HUAWEI'}
_MATCH_KEYS = {'vendor_id', 'product_id', 'address'}
_OTHER_KEYS = {'resource_class', 'traits'}
# Nova keys that say nothing about which device matches; accepted, unused.
_IGNORED_KEYS = {'physical_network', 'remote_managed', 'managed',
                 'live_migratable', 'one_time_use'}
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
_ADDRESS_PARTS = ('domain', 'bus', 'slot', 'function')
_ADDRESS_GLOB = re.compile(
    r'^(?:(?P<domain>[^:]*):)?(?P<bus>[^:]*):(?P<slot>[^.:]*)'
    r'\.(?P<function>[^.:]*)$')


class InvalidSpec(ValueError):
    pass


def _hex_id(value, key):
    text = str(value).strip().lower()
    if text in ('', '*'):
        return None
    text = text[2:] if text.startswith('0x') else text
    if not re.fullmatch(r'[0-9a-f]{1,4}', text):
        raise InvalidSpec('%s %r is not a PCI id' % (key, value))
    return text.zfill(4)


def _address_globs(value):
    if isinstance(value, dict):
        unknown = set(value) - set(_ADDRESS_PARTS)
        if unknown:
            raise InvalidSpec('unknown address keys %s' % sorted(unknown))
        return {part: str(value.get(part) or '*') for part in _ADDRESS_PARTS}
    match = _ADDRESS_GLOB.match(str(value).strip())
    if match is None:
        raise InvalidSpec('address %r is not a PCI address glob' % (value,))
    return {part: match.group(part) or '*' for part in _ADDRESS_PARTS}


def _part_matches(glob, value, width):
    glob = glob.lower()
    if any(char in glob for char in '*?['):
        return fnmatch.fnmatchcase('%0*x' % (width, value), glob)
    try:
        return int(glob, 16) == value
    except ValueError:
        return False


def _trait(name):
    name = name.strip()
    if name in _STANDARD_TRAITS:
        return name
    return records.custom_name(name[7:] if name.startswith('CUSTOM_')
                               else name)


def _resource_class(name):
    if name in os_resource_classes.STANDARDS:
        return name
    return records.custom_name(name[7:] if name.startswith('CUSTOM_')
                               else name)


class DeviceSpec:
    """One Nova style device spec."""

    def __init__(self, raw):
        if not isinstance(raw, dict):
            raise InvalidSpec('a spec is a JSON object, not %r' % (raw,))
        unknown = set(raw) - _MATCH_KEYS - _OTHER_KEYS - _IGNORED_KEYS
        if unknown:
            raise InvalidSpec('unsupported keys %s' % sorted(unknown))
        self.vendor_id = _hex_id(raw.get('vendor_id', '*'), 'vendor_id')
        self.product_id = _hex_id(raw.get('product_id', '*'), 'product_id')
        self.address = (_address_globs(raw['address'])
                        if 'address' in raw else None)
        if (self.vendor_id, self.product_id, self.address) == (None,) * 3:
            raise InvalidSpec('it would match every device; give '
                              'vendor_id, product_id or address')
        self.resource_class = _resource_class(
            raw.get('resource_class') or DEFAULT_RESOURCE_CLASS)
        traits = raw.get('traits') or ''
        if not isinstance(traits, str):
            raise InvalidSpec('traits is a comma-separated string')
        self.traits = [_trait(t) for t in traits.split(',') if t.strip()]

    def matches(self, function):
        if self.vendor_id not in (None, function.vendor):
            return False
        if self.product_id not in (None, function.product):
            return False
        if self.address is None:
            return True
        widths = (4, 2, 2, 1)
        return all(_part_matches(self.address[part], value, width)
                   for part, value, width
                   in zip(_ADDRESS_PARTS, function.address, widths,
                          strict=True))


def parse_specs(values):
    """The valid specs of ``[pci] device_spec`` and
    ``passthrough_whitelist``; others logged."""
    specs = []
    for value in values:
        try:
            loaded = json.loads(value)
        except ValueError as e:
            LOG.warning('Ignoring [pci] device spec %r: not JSON (%s)',
                        value, e)
            continue
        for raw in loaded if isinstance(loaded, list) else [loaded]:
            try:
                specs.append(DeviceSpec(raw))
            except InvalidSpec as e:
                LOG.warning('Ignoring [pci] device spec %r: %s', raw, e)
    return specs


class PciDriver(base.SysfsPciDriver):
    """Entry point ``pci_driver``."""

    device_type = 'GENERIC'

    def __init__(self, conf):
        super().__init__(conf)
        self.specs = parse_specs(list(conf.pci.device_spec) +
                                 list(conf.pci.passthrough_whitelist))

    def spec_for(self, function):
        for spec in self.specs:
            if spec.matches(function):
                return spec
        return None

    def build_device(self, function, functions):
        spec = self.spec_for(function)
        if spec is None or function.class_code.startswith('06'):
            return None  # not whitelisted, or a bridge
        if function.has_vfs_enabled:
            raise base.NotReady('SR-IOV VFs are enabled; whitelist its '
                                'VFs instead', setup_required=False)
        vendor_name = VENDOR_NAMES.get(function.vendor)
        traits = [records.OWNER_CYBORG,
                  records.custom_name('PCI_PRODUCT_ID', function.product)]
        if vendor_name:
            traits.append(records.custom_name('PCI', vendor_name))
        deployable = records.deployable(
            self.host, function.address, spec.resource_class,
            traits + spec.traits, [records.pci_handle(function.address)],
            driver_name=vendor_name or function.vendor.upper())
        return records.device(
            function, records.device_type_for_class(function.class_code),
            pciids.database(self.conf).name(function.vendor,
                                            function.product),
            [deployable])
