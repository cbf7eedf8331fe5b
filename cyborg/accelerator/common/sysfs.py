"""Reading PCI functions from sysfs.

Everything is read below a root (``[agent] sysfs_root``, ``/sys`` on a real
host) so tests and the all-in-one can point at a captured tree. The reader
never raises for what it finds on disk: a function whose files are missing,
half-written or garbage is logged and left out, so one odd device never
stops discovery of the others.

One discovery pass runs every enabled driver, and each asks for the PCI
functions. Inside :func:`one_pass` the functions are read once and shared
by the drivers (and a function that cannot be read is logged once); a
driver asking for some vendors only reads the other functions' ``vendor``
file and nothing else.
"""

import contextlib
import dataclasses
import os
import re
import threading

from oslo_log import log as logging

from cyborg.accelerator.common import pci

LOG = logging.getLogger(__name__)

PCI_DEVICES = os.path.join('bus', 'pci', 'devices')


class UnreadableFunction(Exception):
    """A PCI function's sysfs entries cannot be trusted."""


@dataclasses.dataclass(frozen=True)
class PciFunction:
    """What sysfs says about one PCI function.

    ``vendor`` and ``product`` are four lower-case hex digits without
    ``0x``; ``class_code`` is six. ``driver`` is the bound kernel driver's
    name or None; ``virtfns`` are the VFs of a PF in index order; ``physfn``
    is the PF of a VF.
    """

    address: pci.PciAddress
    vendor: str
    product: str
    class_code: str
    numa_node: int | None = None
    iommu_group: str | None = None
    driver: str | None = None
    sriov_totalvfs: int | None = None
    sriov_numvfs: int | None = None
    virtfns: tuple = ()
    physfn: pci.PciAddress | None = None

    @property
    def is_vf(self):
        return self.physfn is not None

    @property
    def has_vfs_enabled(self):
        return bool(self.sriov_numvfs) or bool(self.virtfns)

    @property
    def class_prefix(self):
        """Base class and subclass, e.g. ``0302`` for a 3D controller."""
        return self.class_code[:4]


@dataclasses.dataclass(frozen=True)
class MdevType:
    """One entry of a function's ``mdev_supported_types``."""

    type_id: str
    name: str
    available_instances: int
    device_api: str | None
    devices: tuple = ()


@dataclasses.dataclass(frozen=True)
class VendorVgpu:
    """The ``nvidia/`` directory of a VF under NVIDIA's vendor-specific
    VFIO vGPU (vGPU 17 and later; Ada, Hopper, Blackwell): the vGPU type
    the VF carries (0 for none) and the types it can take now, by number.
    """

    current: int
    creatable: dict


# One "<number> : <name>" entry of creatable_vgpu_types; the header line
# "ID    : vGPU Name" has no number and is not one.
_CREATABLE = re.compile(r'^\s*(\d+)\s*:\s*(\S.*?)\s*$', re.M)


def parse_creatable_vgpu_types(text):
    """``{number: name}`` from a ``creatable_vgpu_types`` file."""
    return {int(number): name for number, name in _CREATABLE.findall(text)}


def _read_text(path):
    """The stripped content of a file, or None if there is no file."""
    try:
        with open(path, encoding='ascii') as f:
            return f.read().strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise UnreadableFunction('cannot read %s: %s' % (path, e)) from e


def _read_hex(path, digits):
    text = _read_text(path)
    if text is None:
        raise UnreadableFunction('%s is missing' % path)
    value = text[2:] if text.lower().startswith('0x') else text
    if len(value) != digits or not _is_hex(value):
        raise UnreadableFunction('%s holds %r, not %d hex digits'
                                 % (path, text, digits))
    return value.lower()


def _is_hex(text):
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


def _read_int(path):
    """An integer file, None if it is absent; garbage raises."""
    text = _read_text(path)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise UnreadableFunction('%s holds %r, not an integer'
                                 % (path, text)) from None


def _link_name(path):
    """The last component of a symlink's target, None if no link."""
    try:
        return os.path.basename(os.readlink(path))
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UnreadableFunction('cannot read link %s: %s' % (path, e)) from e


def _link_address(path):
    name = _link_name(path)
    if name is None:
        return None
    address = pci.parse_or_none(name)
    if address is None:
        raise UnreadableFunction('%s points at %r, not a PCI function'
                                 % (path, name))
    return address


def _virtfns(path):
    found = []
    for entry in os.listdir(path):
        if entry.startswith('virtfn') and entry[6:].isdigit():
            found.append((int(entry[6:]),
                          _link_address(os.path.join(path, entry))))
    return tuple(address for _index, address in sorted(found))


_PASS = threading.local()


@contextlib.contextmanager
def one_pass():
    """Within this block (in this thread), each function is read from sysfs
    once: what the first reader finds, every reader gets. Nested blocks
    share the outer one's reads."""
    if getattr(_PASS, 'cache', None) is not None:
        yield
        return
    _PASS.cache = {}
    try:
        yield
    finally:
        _PASS.cache = None


def _pass_cache():
    return getattr(_PASS, 'cache', None)


class PciReader:
    """Reads ``<root>/bus/pci/devices``."""

    def __init__(self, root):
        self.root = root

    def path(self, address, *parts):
        """Path of a function's directory, or of a file below it."""
        return os.path.join(self.root, PCI_DEVICES, str(address), *parts)

    def addresses(self):
        """The PCI addresses sysfs lists, sorted; junk names are skipped."""
        cache = _pass_cache()
        if cache is None:
            return self._addresses()
        key = (self.root, None)
        if key not in cache:
            cache[key] = self._addresses()
        return cache[key]

    def _addresses(self):
        try:
            names = os.listdir(os.path.join(self.root, PCI_DEVICES))
        except OSError as e:
            LOG.warning('Cannot list PCI devices under %s: %s', self.root, e)
            return []
        addresses = []
        for name in names:
            address = pci.parse_or_none(name)
            if address is None:
                LOG.warning('Skipping %s in %s: not a PCI address', name,
                            PCI_DEVICES)
            else:
                addresses.append(address)
        return sorted(addresses)

    def functions(self, vendors=None):
        """Every readable function, optionally only of some vendor ids."""
        result = []
        for address in self.addresses():
            if vendors is not None and not self._may_be(address, vendors):
                continue
            function = self.get(address)
            if function is None:
                continue
            if vendors is None or function.vendor in vendors:
                result.append(function)
        return result

    def _may_be(self, address, vendors):
        """False if ``address`` is known not to be of ``vendors``: its
        ``vendor`` file (or the pass's read) names another. A file that
        cannot be read says nothing; get() then warns about it."""
        cache = _pass_cache()
        if cache is not None and (self.root, address) in cache:
            function = cache[(self.root, address)]
            return function is not None and function.vendor in vendors
        try:
            vendor = _read_hex(self.path(address, 'vendor'), 4)
        except (UnreadableFunction, OSError):
            return True
        return vendor in vendors

    def get(self, address):
        """One function, or None (with a warning) if it cannot be read."""
        cache = _pass_cache()
        if cache is None:
            return self._get(address)
        key = (self.root, address)
        if key not in cache:
            cache[key] = self._get(address)
        return cache[key]

    def _get(self, address):
        try:
            return self.read(address)
        except UnreadableFunction as e:
            LOG.warning('Skipping PCI function %s: %s', address, e)
        except OSError as e:
            LOG.warning('Skipping PCI function %s: %s', address, e)
        return None

    def read(self, address):
        """One function; raises UnreadableFunction on bad content."""
        if not os.path.isdir(self.path(address)):
            raise UnreadableFunction('%s is not in sysfs' % (address,))
        numa = _read_int(self.path(address, 'numa_node'))
        return PciFunction(
            address=address,
            vendor=_read_hex(self.path(address, 'vendor'), 4),
            product=_read_hex(self.path(address, 'device'), 4),
            class_code=_read_hex(self.path(address, 'class'), 6),
            numa_node=None if numa is None or numa < 0 else numa,
            iommu_group=_link_name(self.path(address, 'iommu_group')),
            driver=_link_name(self.path(address, 'driver')),
            sriov_totalvfs=_read_int(self.path(address, 'sriov_totalvfs')),
            sriov_numvfs=_read_int(self.path(address, 'sriov_numvfs')),
            virtfns=_virtfns(self.path(address)),
            physfn=_link_address(self.path(address, 'physfn')))

    def read_text(self, address, *parts):
        """A file below a function, stripped; None if absent or unreadable."""
        try:
            return _read_text(self.path(address, *parts))
        except UnreadableFunction as e:
            LOG.warning('%s', e)
            return None

    def vendor_vgpu(self, address):
        """The VendorVgpu of a VF, None if it has no ``nvidia/`` vGPU
        files; raises UnreadableFunction on bad content."""
        current = _read_int(self.path(address, 'nvidia',
                                      'current_vgpu_type'))
        if current is None:
            return None
        if current < 0:
            raise UnreadableFunction('%s current_vgpu_type is %d'
                                     % (address, current))
        creatable = _read_text(self.path(address, 'nvidia',
                                         'creatable_vgpu_types'))
        return VendorVgpu(current=current,
                          creatable=parse_creatable_vgpu_types(
                              creatable or ''))

    def mdev_types(self, address):
        """The function's ``mdev_supported_types`` by type id.

        A type whose files are missing or garbage is logged and left out.
        """
        base = self.path(address, 'mdev_supported_types')
        try:
            type_ids = sorted(os.listdir(base))
        except OSError:
            return {}
        types = {}
        for type_id in type_ids:
            try:
                types[type_id] = self._mdev_type(base, type_id)
            except (UnreadableFunction, OSError) as e:
                LOG.warning('Skipping mdev type %s of %s: %s', type_id,
                            address, e)
        return types

    def _mdev_type(self, base, type_id):
        path = os.path.join(base, type_id)
        available = _read_int(os.path.join(path, 'available_instances'))
        if available is None or available < 0:
            raise UnreadableFunction('no valid available_instances')
        devices_dir = os.path.join(path, 'devices')
        devices = (tuple(sorted(os.listdir(devices_dir)))
                   if os.path.isdir(devices_dir) else ())
        return MdevType(type_id=type_id,
                        name=_read_text(os.path.join(path, 'name')) or '',
                        available_instances=available,
                        device_api=_read_text(
                            os.path.join(path, 'device_api')),
                        devices=devices)


def fingerprint(root):
    """What a rescan of ``root`` most likely depends on, read cheaply: the
    PCI functions listed and, for each, its driver link, its VF count, its
    vGPU type and its mdev types (available instances and devices). Equal
    fingerprints: the drivers would very likely find what they found
    before. No driver code runs; what cannot be read counts as its error.
    """
    base = os.path.join(root, PCI_DEVICES)
    try:
        names = sorted(os.listdir(base))
    except OSError as e:
        return ('unlisted', e.errno)
    return tuple(_function_fingerprint(os.path.join(base, name))
                 for name in names)


def _quietly(read, path):
    try:
        return read(path)
    except (UnreadableFunction, OSError) as e:
        return ('unreadable', str(e))


def _listing(path):
    try:
        return tuple(sorted(os.listdir(path)))
    except FileNotFoundError:
        return ()
    except OSError as e:
        return ('unreadable', e.errno)


def _function_fingerprint(path):
    types = os.path.join(path, 'mdev_supported_types')
    return (os.path.basename(path),
            _quietly(_link_name, os.path.join(path, 'driver')),
            _quietly(_read_text, os.path.join(path, 'sriov_numvfs')),
            _quietly(_read_text, os.path.join(path, 'nvidia',
                                              'current_vgpu_type')),
            tuple((name,
                   _quietly(_read_text, os.path.join(
                       types, name, 'available_instances')),
                   _listing(os.path.join(types, name, 'devices')))
                  for name in _listing(types)))
