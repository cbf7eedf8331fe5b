"""Building the agent's report records from what a driver found.

Vendor drivers decide *what* to report (resource class, traits, which
functions are handed out); these helpers build the
:mod:`cyborg.objects.driver_device` records in the one shape the conductor
expects, so no driver repeats it.
"""

import json
import re

from cyborg.objects import driver_device as dd

OWNER_CYBORG = 'OWNER_CYBORG'
ATTACH_PCI = 'PCI'
ATTACH_MDEV = 'MDEV'

# The PCI base class (first two hex digits of the class code) as cyborg's
# device type; anything else is GENERIC.
_CLASS_DEVICE_TYPES = {'01': 'SSD', '02': 'NIC', '03': 'GPU'}

_NOT_NAME = re.compile(r'[^A-Za-z0-9_-]')
_NOT_TRAIT = re.compile(r'[^A-Z0-9_]')


def device_type_for_class(class_code):
    """Cyborg device type for a PCI class code such as ``030200``."""
    return _CLASS_DEVICE_TYPES.get(class_code[:2], 'GENERIC')


def deployable_name(host, address):
    """``<host>_<BDF>`` with everything but ``[A-Za-z0-9_-]`` as ``_``.

    Unique per host and stable across restarts; it names the Placement
    resource provider and seeds its uuid.
    """
    return _NOT_NAME.sub('_', '%s_%s' % (host, address))


def custom_name(*parts):
    """A ``CUSTOM_`` trait or resource class name from free-form parts.

    Upper-cased; every character outside ``[A-Z0-9_]`` becomes ``_``.
    """
    body = '_'.join(str(part) for part in parts if part != '')
    return 'CUSTOM_' + _NOT_TRAIT.sub('_', body.upper())


def attributes(resource_class, traits):
    """The ``rc`` attribute and one ``traitN`` per trait (sorted, unique)."""
    result = [dd.DriverAttribute(key='rc', value=resource_class)]
    for index, trait in enumerate(sorted(set(traits))):
        result.append(dd.DriverAttribute(key='trait%d' % index, value=trait))
    return result


def pci_handle(address, **extra):
    """An attach handle for a PCI function (upstream's PCI shape)."""
    return dd.DriverAttachHandle(attach_type=ATTACH_PCI,
                                 attach_info=address.to_json(**extra),
                                 in_use=False)


def mdev_handle(address, type_id, index):
    """An attach handle for one vGPU slot of ``type_id`` on ``address``."""
    return dd.DriverAttachHandle(
        attach_type=ATTACH_MDEV,
        attach_info=address.to_json(asked_type=type_id,
                                    vgpu_mark='%s_%d' % (type_id, index)),
        in_use=False)


def deployable(host, address, resource_class, traits, handles,
               driver_name=None, num_accelerators=None):
    """One deployable named after ``address``.

    ``num_accelerators`` defaults to the number of attach handles.
    """
    if num_accelerators is None:
        num_accelerators = len(handles)
    return dd.DriverDeployable(
        name=deployable_name(host, address),
        num_accelerators=num_accelerators,
        attribute_list=attributes(resource_class, traits),
        attach_handle_list=list(handles), driver_name=driver_name)


def std_board_info(function, **extra):
    """Standard board info (JSON) of a PCI function."""
    info = {'product_id': function.product, 'class': function.class_code,
            'numa_node': function.numa_node}
    info.update(extra)
    return json.dumps(info, sort_keys=True)


def device(function, device_type, model, deployables,
           vendor_board_info=None, stub=False):
    """The device record of a card whose control path is ``function``."""
    return dd.DriverDevice(
        vendor=function.vendor, model=model, type=device_type,
        std_board_info=std_board_info(function),
        vendor_board_info=vendor_board_info,
        controlpath_id=dd.DriverControlPathID(
            cpid_type='PCI', cpid_info=function.address.to_json()),
        deployable_list=list(deployables), stub=stub)
