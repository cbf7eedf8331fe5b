"""Request groups of device profiles: what keys mean, checked once.

A group is a flat ``{str: str}`` dict (spec: the device profile of
upstream Cyborg and Nova's reading of it):

* ``resources:<RC>`` -> a positive integer string, how many;
* ``trait:<TRAIT>`` -> ``required`` or ``forbidden``;
* ``accel:<key>`` -> a cyborg property, not sent to Placement
  (``accel:bitstream_id``, ``accel:function_id``).

The device profile API validates groups with ``normalize_group``; the ARQ
code counts them with ``arq_count``.
"""

import re

from cyborg.common import exception
from cyborg.i18n import _

RESOURCES = 'resources:'
TRAIT = 'trait:'
ACCEL = 'accel:'
STANDARD_CLASSES = ('FPGA', 'GPU', 'VGPU', 'PGPU')
_CUSTOM = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
TRAIT_VALUES = ('required', 'forbidden')
XILINX_TRAIT = 'CUSTOM_FPGA_XILINX'


def _bad(key, reason):
    return exception.InvalidDeviceProfileGroup(key=key, reason=reason)


def _resource(key, name, value):
    if name not in STANDARD_CLASSES and not _CUSTOM.match(name):
        raise _bad(key, _('the resource class must be one of %s or a '
                          'CUSTOM_ class') % ', '.join(STANDARD_CLASSES))
    if not isinstance(value, str) or not value.strip().isdigit() or int(
            value) < 1:
        raise _bad(key, _('the amount must be a positive integer string, '
                          'not %r') % (value,))
    return value.strip()


def _trait(key, name, value):
    if not _CUSTOM.match(name):
        raise _bad(key, _('only custom traits (CUSTOM_...) can be '
                          'requested'))
    if value not in TRAIT_VALUES:
        raise _bad(key, _('the value must be "required" or "forbidden", '
                          'not %r') % (value,))
    return value


def _accel(key, name, value):
    if not name or not isinstance(value, str):
        raise _bad(key, _('an accel: property needs a name and a string '
                          'value'))
    return value


_PARTS = ((RESOURCES, _resource), (TRAIT, _trait), (ACCEL, _accel))


def normalize_group(group):
    """``group`` checked, with whitespace around names stripped; raises
    ``InvalidDeviceProfileGroup`` (400) naming the first bad key."""
    if not isinstance(group, dict) or not group:
        raise exception.InvalidParameterValue(
            err=_('Each group must be a non-empty object of string keys '
                  'and values.'))
    result = {}
    for key, value in group.items():
        for prefix, check in _PARTS:
            if isinstance(key, str) and key.startswith(prefix):
                name = key[len(prefix):].strip()
                result[prefix + name] = check(key, name, value)
                break
        else:
            raise _bad(key, _('keys start with resources:, trait: or '
                              'accel:'))
    return result


def _with_prefix(group, prefix):
    return {key[len(prefix):]: value for key, value in group.items()
            if key.startswith(prefix)}


def resource_amounts(group):
    """``{resource class: amount}`` of a group."""
    return {rc: int(amount)
            for rc, amount in _with_prefix(group, RESOURCES).items()}


def traits(group):
    """``{trait: 'required' | 'forbidden'}`` of a group."""
    return _with_prefix(group, TRAIT)


def accel_properties(group):
    """``{key: value}`` of the group's ``accel:`` properties."""
    return _with_prefix(group, ACCEL)


def arq_count(group):
    """How many ARQs the group makes: one per accelerator; a Xilinx FPGA
    needs its management and user functions, so two per FPGA."""
    amounts = resource_amounts(group)
    count = sum(amounts.values())
    if traits(group).get(XILINX_TRAIT) == 'required':
        count += amounts.get('FPGA', 0)
    return count
