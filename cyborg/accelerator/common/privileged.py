"""The privileged operations of the drivers, each as narrow as it can be.

They run in the privsep daemon (:mod:`cyborg.privsep`) and trust no
argument: the sysfs root is the daemon's own (``[agent] sysfs_root`` read
from the configuration files the daemon was started with), never the
caller's; an operation names a PCI function by its address and the daemon
builds the path itself below ``<root>/bus/pci/devices/<address>/``, checks
that the resolved path stays in that function's directory, and writes only
a file that exists (opened without ``O_CREAT``, without following a final
symlink). Commands run with argv lists the daemon builds from an
allowlist.
"""

import os
import shutil
import signal
import subprocess

from cyborg.accelerator.common import mdev
from cyborg.accelerator.common import pci
from cyborg import conf as cyborg_conf
from cyborg import privsep


def sysfs_root():
    """The daemon's sysfs root (``[agent] sysfs_root``)."""
    return cyborg_conf.CONF.agent.sysfs_root


def parse_address(address):
    """The PciAddress of ``address`` (text); ValueError otherwise."""
    if not isinstance(address, str):
        raise ValueError('%r is not a PCI address' % (address,))
    return pci.PciAddress.parse(address)


def function_dir(address, root=None):
    """``<root>/bus/pci/devices/<address>``, for a valid ``address``."""
    return os.path.join(root or sysfs_root(), 'bus', 'pci', 'devices',
                        str(parse_address(address)))


def _checked(address, *parts):
    """The real path of ``parts`` in the directory of PCI function
    ``address`` under the daemon's root; ValueError if it resolves
    anywhere else or does not exist."""
    root = os.path.realpath(sysfs_root())
    base = os.path.realpath(function_dir(address, root))
    if os.path.commonpath([root, base]) != root:
        raise ValueError('PCI function %s is not under %s' % (address, root))
    for part in parts:
        if part in ('', '.', '..') or os.sep in part:
            raise ValueError('%r is not a sysfs file name' % (part,))
    path = os.path.realpath(os.path.join(base, *parts))
    if os.path.commonpath([base, path]) != base or path == base:
        raise ValueError('%s is not in the directory of PCI function %s'
                         % (os.path.join(*parts), address))
    return path


def _write(path, value):
    """Write ``value`` to the existing file ``path``: no file is created
    and a symlink is not followed."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode('ascii'))
    finally:
        os.close(fd)


@privsep.sys_admin_pctxt.entrypoint
def create_mdev(address, mdev_type, mdev_uuid):
    """Create mdev ``mdev_uuid`` of type ``mdev_type`` on PCI function
    ``address`` (its ``mdev_supported_types/<type>/create``)."""
    mdev_uuid = mdev.parse_uuid(mdev_uuid)
    _write(_checked(address, 'mdev_supported_types',
                    mdev.parse_type(mdev_type), 'create'), mdev_uuid)


@privsep.sys_admin_pctxt.entrypoint
def remove_mdev(address, mdev_uuid):
    """Remove mdev ``mdev_uuid`` of PCI function ``address`` (its
    ``<uuid>/remove``)."""
    _write(_checked(address, mdev.parse_uuid(mdev_uuid), 'remove'), '1')


@privsep.sys_admin_pctxt.entrypoint
def set_vgpu_type(address, type_number):
    """Give the VF at PCI ``address`` the vGPU type ``type_number``
    (NVIDIA vendor-specific VFIO: its ``nvidia/current_vgpu_type``); 0
    removes its vGPU."""
    if (not isinstance(type_number, int) or isinstance(type_number, bool)
            or type_number < 0):
        raise ValueError('%r is not a vGPU type number' % (type_number,))
    _write(_checked(address, 'nvidia', 'current_vgpu_type'),
           '%d\n' % type_number)


# Programs that load a bitstream into an FPGA: the directory where their
# vendor installs them (searched after the daemon's PATH, which sudo
# resets to a root-owned one) and how long one run may take. The daemon
# builds the command line itself, so a caller can only ask "load this
# file into the FPGA at that PCI address", never run something else.
FPGA_TOOLS = {
    'fpgaconf': ('/usr/bin', 600),          # OPAE, Intel FPGA PACs
    'xbmgmt': ('/opt/xilinx/xrt/bin', 1800),  # XRT, Xilinx Alveo cards
}
#: How much of a tool's output comes back (its end, where errors are).
TOOL_OUTPUT_CHARS = 2000


def _fpga_argv(tool, binary, address, image_path):
    if tool == 'fpgaconf':
        argv = [binary, '--bus', '0x%02x' % address.bus,
                '--device', '0x%02x' % address.device,
                '--function', '0x%x' % address.function]
        if address.domain:
            argv += ['--segment', '0x%04x' % address.domain]
        return argv + [image_path]
    return [binary, 'program', '--device', str(address), '--base',
            '--image', image_path]


@privsep.sys_admin_pctxt.entrypoint
def program_fpga(tool, address, image_path):
    """Run ``tool`` (a key of :data:`FPGA_TOOLS`) to load the file
    ``image_path`` into the FPGA at PCI ``address``.

    Returns ``(exit status, end of its output)``; the status is None if the
    tool did not finish in time (it is killed). Raises ValueError for
    arguments it refuses and FileNotFoundError if the tool is missing.
    """
    if tool not in FPGA_TOOLS:
        raise ValueError('%r is not an FPGA programming tool' % (tool,))
    address = pci.PciAddress.parse(address)
    if not os.path.isfile(image_path):
        raise ValueError('%s is not a file' % image_path)
    directory, timeout = FPGA_TOOLS[tool]
    binary = shutil.which(tool, path=os.pathsep.join(
        [os.environ.get('PATH', os.defpath), directory]))
    if binary is None:
        raise FileNotFoundError('%s is not installed (not in PATH nor in '
                                '%s)' % (tool, directory))
    with subprocess.Popen(_fpga_argv(tool, binary, address, image_path),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT,
                          start_new_session=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # Its whole process group: a wrapper script's children hold
            # the output pipe open too.
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            return None, _tail(output)
    return process.returncode, _tail(output)


def _tail(output):
    return (output or b'').decode('utf-8', 'replace')[-TOOL_OUTPUT_CHARS:]
