"""The privileged operations of the drivers, each as narrow as it can be.

They run in the privsep daemon (:mod:`cyborg.privsep`), so each one checks
its own arguments: a caller may only write the files it is meant to, under
the sysfs root it names.
"""

import os
import shutil
import signal
import subprocess

from cyborg.accelerator.common import pci
from cyborg import privsep

# The sysfs files the drivers may write, by their last path component.
WRITABLE = ('create', 'remove')


def _checked_path(sysfs_root, path):
    root = os.path.realpath(sysfs_root)
    real = os.path.realpath(path)
    if not real.startswith(root + os.sep):
        raise ValueError('%s is not under %s' % (path, sysfs_root))
    if os.path.basename(real) not in WRITABLE:
        raise ValueError('%s is not a file cyborg writes' % path)
    return real


@privsep.sys_admin_pctxt.entrypoint
def write_sysfs(sysfs_root, path, value):
    """Write ``value`` to the sysfs file ``path`` (``create`` or
    ``remove`` under ``sysfs_root``)."""
    with open(_checked_path(sysfs_root, path), 'w') as f:
        f.write(value)


@privsep.sys_admin_pctxt.entrypoint
def set_vgpu_type(sysfs_root, vf_path, type_number):
    """Give the VF at ``vf_path`` (under ``sysfs_root``) the vGPU type
    ``type_number`` (NVIDIA vendor-specific VFIO: its
    ``nvidia/current_vgpu_type``); 0 removes its vGPU."""
    if not isinstance(type_number, int) or type_number < 0:
        raise ValueError('%r is not a vGPU type number' % (type_number,))
    root = os.path.realpath(sysfs_root)
    path = os.path.realpath(os.path.join(vf_path, 'nvidia',
                                         'current_vgpu_type'))
    if not path.startswith(root + os.sep):
        raise ValueError('%s is not under %s' % (vf_path, sysfs_root))
    if not path.endswith(os.sep + os.path.join('nvidia',
                                                'current_vgpu_type')):
        raise ValueError('%s is not a file cyborg writes' % path)
    with open(path, 'w') as f:
        f.write('%d\n' % type_number)


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
