"""What names an mdev: its UUID and its type id.

The agent checks what the conductor sends, the privsep daemon checks again
and the conductor checks the attach handles agents report, all with these.
"""

import re
import uuid

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
