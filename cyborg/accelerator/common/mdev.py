"""What names an mdev: its UUID and its type id.

The agent checks what the conductor sends, the privsep daemon checks again
and the conductor checks the attach handles agents report, all with these.
"""

import re
import uuid

from cyborg.accelerator.common import pci

#: What an mdev type id may look like (``nvidia-222``, ``i915-GVTg_V5_4``):
#: one path component, never ``.`` or ``..``.
MDEV_TYPE_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$')


def parse_uuid(value):
    """``value`` as a canonical lower-case UUID; ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError('%r is not an mdev UUID' % (value,))
    try:
        canonical = str(uuid.UUID(value))
    except ValueError:
        raise ValueError('%r is not an mdev UUID' % (value,)) from None
    if canonical != value.lower():
        raise ValueError('%r is not an mdev UUID' % (value,))
    return canonical


def parse_type(value):
    """``value`` if it can name an mdev type; ValueError otherwise."""
    if not isinstance(value, str) or not MDEV_TYPE_RE.match(value):
        raise ValueError('%r is not an mdev type' % (value,))
    return value


def libvirt_name(mdev_uuid, parent):
    """The name libvirt (7.8 and later) gives the node device of mdev
    ``mdev_uuid`` on the PCI function ``parent`` (its address, as text or
    a PciAddress):
    ``mdev_<uuid, - as _>_<domain>_<bus>_<device>_<function>``. Nova 34
    looks a cyborg vGPU up under this name before it spawns a guest and
    creates the mdev itself only when libvirt knows none by it; one that
    cyborg created through sysfs is known by it."""
    address = pci.PciAddress.parse(str(parent))
    return 'mdev_%s_%04x_%02x_%02x_%x' % ((parse_uuid(mdev_uuid).replace(
        '-', '_'),) + tuple(address))
