"""What the FPGA drivers share: the resource class, reading the control
path id the conductor sends, and running a programming tool through
privsep with its failures turned into OperationFailed."""

import json
import os

from oslo_log import log as logging

from cyborg.accelerator.common import pci
from cyborg.accelerator.common import privileged
from cyborg.accelerator.drivers import base

LOG = logging.getLogger(__name__)

RESOURCE_CLASS = 'FPGA'
DEVICE_TYPE = 'FPGA'
#: Last lines of a tool's output quoted in errors and logs.
OUTPUT_LINES = 5


def controlpath_address(controlpath_id):
    """The PCI address of a control path id (``{'cpid_type': 'PCI',
    'cpid_info': <JSON string or dict of domain, bus, device, function>}``).

    :raises OperationFailed: if it is not a PCI address.
    """
    info = controlpath_id.get('cpid_info')
    try:
        if isinstance(info, str):
            info = json.loads(info)
        if controlpath_id.get('cpid_type', 'PCI') != 'PCI':
            raise ValueError('not a PCI control path')
        return pci.PciAddress.parse('%(domain)s:%(bus)s:%(device)s.'
                                    '%(function)s' % info)
    except (ValueError, TypeError, KeyError) as e:
        raise base.OperationFailed('control path id %r is not a PCI '
                                   'address: %s' % (controlpath_id, e)) from e


def check_image(image_path):
    """Refuse a bitstream file that is missing or empty."""
    try:
        size = os.path.getsize(image_path)
    except OSError as e:
        raise base.OperationFailed('cannot read the bitstream %s: %s'
                                   % (image_path, e.strerror)) from e
    if not size:
        raise base.OperationFailed('the bitstream %s is empty' % image_path)


def run_tool(tool, address, image_path):
    """Load ``image_path`` into the FPGA at ``address`` with ``tool``
    (``fpgaconf`` or ``xbmgmt``), as root through privsep.

    :raises OperationFailed: with the tool's own message if it is missing,
        fails or does not finish in time.
    """
    LOG.info('Programming the FPGA at %s with %s (%s)', address, image_path,
             tool)
    try:
        status, output = privileged.program_fpga(tool, str(address),
                                                 image_path)
    except (OSError, ValueError) as e:
        raise base.OperationFailed('%s: %s' % (tool, e)) from e
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    message = ' | '.join(lines[-OUTPUT_LINES:]) or 'no output'
    if status is None:
        raise base.OperationFailed('%s did not finish in time: %s'
                                   % (tool, message))
    if status != 0:
        raise base.OperationFailed('%s exited with status %d: %s'
                                   % (tool, status, message))
    LOG.info('Programmed the FPGA at %s: %s', address, message)
