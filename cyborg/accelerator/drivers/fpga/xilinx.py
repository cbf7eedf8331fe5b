"""Xilinx Alveo FPGA cards: a management and a user PCI function.

An Alveo card shows two functions in one PCI slot (class ``12``,
processing accelerators): the management function (kernel driver
``xclmgmt``, even product id such as ``5000`` on a U200), through which the
host loads the card's base image, and the user function (``xocl``, the
next product id) that applications use. An instance needs both, so the
card is one deployable of resource class ``FPGA`` with one accelerator and
two PCI attach handles; device profiles that require
``CUSTOM_FPGA_XILINX`` make two ARQs per FPGA, one for each.

Traits, upstream's names: ``CUSTOM_FPGA_XILINX`` and
``CUSTOM_FPGA_PRODUCT_ID_<PID>`` with the management function's product
id. The card's control path and the deployable's name are the management
function's address.

Which function is which: the kernel driver says so when it is ``xclmgmt``
or ``xocl``; a function bound to ``vfio-pci`` (passed through) or to none
is told by its product id, even for management, odd for user, Xilinx's
numbering. A card bound to any other driver, or missing one of its two
functions, is not offered. Programming runs XRT's ``xbmgmt program --base``
on the management function, which must be bound to ``xclmgmt``.
"""

import contextlib
import os

from oslo_log import log as logging

from cyborg.accelerator.common import records
from cyborg.accelerator.drivers import base
from cyborg.accelerator.drivers import fpga

LOG = logging.getLogger(__name__)

VENDOR_ID = '10ee'
#: Upstream's driver name, which deployables carry.
DRIVER_NAME = 'XILINX'
VENDOR_TRAIT = 'CUSTOM_FPGA_XILINX'
#: PCI base class of the cards: processing accelerators.
CLASS_PREFIX = '12'
MGMT = 'management'
USER = 'user'
#: Kernel drivers of XRT, by the role of the function they drive.
ROLE_DRIVERS = {'xclmgmt': MGMT, 'xocl': USER}
PASSTHROUGH = 'vfio-pci'
#: Model names by the management function's product id.
MODELS = {'5000': 'Alveo U200', '5004': 'Alveo U250', '500c': 'Alveo U280',
          '5020': 'Alveo U50', '505c': 'Alveo U55C'}
#: First bytes of an xsabin (and any other axlf container).
AXLF_MAGIC = b'xclbin2\0'
XSABIN_SUFFIX = '.xsabin'


def slot_of(address):
    """Domain, bus and device of a PCI address: the card's slot."""
    return address.domain, address.bus, address.device


def role(function):
    """MGMT, USER, or None when its kernel driver is not one we know."""
    if function.driver in ROLE_DRIVERS:
        return ROLE_DRIVERS[function.driver]
    if function.driver in (None, PASSTHROUGH):
        return USER if int(function.product, 16) % 2 else MGMT
    return None


def is_alveo(function):
    return (function.vendor == VENDOR_ID and not function.is_vf and
            function.class_code.startswith(CLASS_PREFIX))


@contextlib.contextmanager
def xsabin_path(image_path):
    """``image_path`` under a name ending in ``.xsabin``.

    xbmgmt takes a file with another suffix for a development image and
    warns it may damage the card; the agent names its downloads without
    a suffix, so this links one next to it for the time of the call.
    """
    if image_path.endswith(XSABIN_SUFFIX):
        yield image_path
        return
    link = image_path + XSABIN_SUFFIX
    try:
        os.symlink(os.path.basename(image_path), link)
    except OSError as e:
        raise base.OperationFailed('cannot name the image %s: %s'
                                   % (link, e.strerror)) from e
    try:
        yield link
    finally:
        os.unlink(link)


def check_xsabin(image_path):
    """Refuse anything but an axlf container (xsabin) as a base image."""
    fpga.check_image(image_path)
    try:
        with open(image_path, 'rb') as f:
            magic = f.read(len(AXLF_MAGIC))
    except OSError as e:
        raise base.OperationFailed('cannot read the image %s: %s'
                                   % (image_path, e.strerror)) from e
    if magic != AXLF_MAGIC:
        raise base.OperationFailed(
            '%s is not an xsabin image (it does not start with %r); '
            'xbmgmt would write it to the card\'s flash anyway'
            % (image_path, AXLF_MAGIC.rstrip(b'\0').decode()))


class XilinxFpgaDriver(base.SysfsPciDriver, base.Programmer):
    """Entry point ``xilinx_fpga_driver``."""

    device_type = fpga.DEVICE_TYPE
    driver_name = DRIVER_NAME
    vendors = (VENDOR_ID,)

    def candidates(self, functions):
        """The first function of each slot stands for the card."""
        first = {}
        for function in functions.values():
            if is_alveo(function):
                first.setdefault(slot_of(function.address), function)
        return [first[slot] for slot in sorted(first)]

    def build_device(self, function, functions):
        roles = self._roles([f for f in functions.values()
                             if is_alveo(f) and slot_of(f.address) ==
                             slot_of(function.address)])
        mgmt, user = roles[MGMT], roles[USER]
        traits = [VENDOR_TRAIT,
                  records.custom_name('FPGA_PRODUCT_ID', mgmt.product)]
        deployable = records.deployable(
            self.host, mgmt.address, fpga.RESOURCE_CLASS, traits,
            [records.pci_handle(mgmt.address),
             records.pci_handle(user.address)],
            driver_name=DRIVER_NAME, num_accelerators=1)
        return records.device(
            mgmt, self.device_type,
            MODELS.get(mgmt.product, 'Xilinx FPGA %s' % mgmt.product),
            [deployable])

    @staticmethod
    def _roles(functions):
        """{MGMT: function, USER: function} of one card, or NotReady."""
        roles = {}
        for function in sorted(functions, key=lambda f: f.address):
            found = role(function)
            if found is None:
                raise base.NotReady(
                    '%s is bound to kernel driver %s; expected %s or %s'
                    % (function.address, function.driver,
                       ' or '.join(sorted(ROLE_DRIVERS)), PASSTHROUGH))
            if found in roles:
                raise base.NotReady('%s and %s are both %s functions' % (
                    roles[found].address, function.address, found))
            roles[found] = function
        for wanted in (MGMT, USER):
            if wanted not in roles:
                raise base.NotReady('the card has no %s function' % wanted)
        return roles

    def program(self, controlpath_id, image_path):
        """Load an xsabin into the card whose management function is
        ``controlpath_id``, with ``xbmgmt program --base --image``."""
        address = fpga.controlpath_address(controlpath_id)
        function = self.reader.get(address)
        if (function is None or not is_alveo(function) or
                role(function) != MGMT):
            raise base.OperationFailed('no Xilinx FPGA management function '
                                       'at %s' % (address,))
        if function.driver != 'xclmgmt':
            raise base.OperationFailed(
                'the Xilinx FPGA at %s is bound to %s; xbmgmt needs it '
                'bound to xclmgmt' % (address, function.driver))
        check_xsabin(image_path)
        with xsabin_path(image_path) as path:
            fpga.run_tool('xbmgmt', address, path)
