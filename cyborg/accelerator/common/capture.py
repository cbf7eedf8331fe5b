"""Capturing what the agent reads on a host, and replaying a capture.

``cyborg-agent --capture FILE`` writes, read-only, what the drivers read
below ``[agent] sysfs_root`` and the ``proc`` beside it, as one JSON
document that operators attach to a bug report::

    {"format": "cyborg-capture", "version": 1, "kernel": "6.18.44",
     "dirs": [...], "files": {path: text}, "links": {path: target},
     "proc": {"files": {path: text}, "dirs": [...]}}

Paths are relative to the sysfs root (``proc`` ones to ``/proc``); links
are kept as the kernel wrote them (relative). Only what the agent reads
is taken: each PCI function's ids, driver, IOMMU group, SR-IOV, mdev and
vendor vGPU files, the OPAE and QAT directories, the state of its network
interfaces and disks, the IOMMU groups' members; from ``proc``, the
mounts (device, mount point and source; no options), swaps, the names of
the interfaces that have addresses (not the addresses), and NVIDIA's GPU
information. No configuration space, BAR, ROM or VPD is read.

``[agent] sysfs_root`` (and ``cyborg-aio --sysfs-root``) also takes such a
file: :func:`resolve_root` lays it out as a tree, ``sys/`` and ``proc/``
in a new temporary directory, and the agent reads that. A capture in the
same layout without a ``proc`` part (and with ``binary`` files, base64)
is laid out the same way.
"""

import atexit
import base64
import functools
import glob
import json
import os
import platform
import shutil
import tempfile

from oslo_log import log as logging

from cyborg.accelerator.common import hostfiles
from cyborg.accelerator.common import passthrough
from cyborg.accelerator.common import sysfs

LOG = logging.getLogger(__name__)

FORMAT = 'cyborg-capture'
VERSION = 1
#: Files of a function the drivers read.
FUNCTION_FILES = ('vendor', 'device', 'class', 'numa_node', 'revision',
                  'subsystem_vendor', 'subsystem_device', 'sriov_totalvfs',
                  'sriov_numvfs', 'boot_vga')
#: Links of a function the drivers read.
FUNCTION_LINKS = ('driver', 'iommu_group', 'physfn', 'virtfn*')
#: Directories below a function whose whole content drivers read.
FUNCTION_TREES = ('mdev_supported_types', 'nvidia', 'qat', 'fpga_region',
                  'fpga')
#: Of a network interface and of a disk (or partition): what is read.
NETDEV_FILES = ('operstate', 'flags')
DISK_FILES = ('dev', 'partition')
#: Write-only files whose presence the agent checks (mdev ``create`` and
#: ``remove``): taken empty.
WRITE_ONLY = ('create', 'remove')
#: Largest file taken, in bytes; sysfs attributes are one page.
MAX_FILE = 65536
#: How deep FUNCTION_TREES are walked (OPAE's nest goes 6 deep).
MAX_DEPTH = 8


class InvalidCapture(ValueError):
    """A capture file that cannot be laid out."""


class Recorder:
    """Collects files, links and directories relative to one root."""

    def __init__(self, root):
        # Real: the functions' directories are reached by realpath.
        self.root = os.path.realpath(root)
        self.files, self.links, self.dirs = {}, {}, set()

    def rel(self, path):
        return os.path.relpath(path, self.root)

    def file(self, path, text=None):
        if text is None:
            try:
                with open(path, 'rb') as f:
                    data = f.read(MAX_FILE)
                text = data.decode('ascii')
            except (OSError, UnicodeDecodeError):
                if os.path.basename(path) not in WRITE_ONLY:
                    return
                # The agent looks for these; nobody can read them.
                text = ''
        self.files[self.rel(path)] = text

    def link(self, path):
        try:
            self.links[self.rel(path)] = os.readlink(path)
        except OSError:
            pass

    def directory(self, path):
        if os.path.isdir(path) and not os.path.islink(path):
            self.dirs.add(self.rel(path))

    def tree(self, path, depth=MAX_DEPTH):
        """Every directory, text file and link below ``path``; links are
        not followed."""
        if depth < 0 or os.path.islink(path) or not os.path.isdir(path):
            return
        self.directory(path)
        for name in sorted(_listdir(path)):
            child = os.path.join(path, name)
            if os.path.islink(child):
                self.link(child)
            elif os.path.isdir(child):
                self.tree(child, depth - 1)
            elif os.path.isfile(child):
                self.file(child)


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def _function(rec, reader, address):
    """What the drivers read of one function."""
    rec.link(os.path.join(reader.root, sysfs.PCI_DEVICES, str(address)))
    path = os.path.realpath(reader.path(address))
    rec.directory(path)
    for name in FUNCTION_FILES:
        rec.file(os.path.join(path, name))
    for pattern in FUNCTION_LINKS:
        for link in glob.glob(os.path.join(path, pattern)):
            rec.link(link)
    for name in FUNCTION_TREES:
        rec.tree(os.path.join(path, name))
    for name in _listdir(path):
        # Created mdevs: directories named by their uuid.
        if len(name) == 36 and name.count('-') == 4:
            rec.directory(os.path.join(path, name))
    _host_devices(rec, path)


def _host_devices(rec, path):
    """The network interfaces and disks of the function at ``path``."""
    for pattern in passthrough.NETDEV_GLOBS:
        for netdev in passthrough.below(path, pattern):
            _parents(rec, path, netdev)
            for name in NETDEV_FILES:
                rec.file(os.path.join(netdev, name))
            rec.link(os.path.join(netdev, 'master'))
    for pattern in passthrough.DISK_GLOBS:
        for disk in passthrough.below(path, pattern):
            _disk(rec, path, disk)


def _parents(rec, top, path):
    while path != top and path.startswith(top):
        rec.directory(path)
        path = os.path.dirname(path)


def _disk(rec, top, disk):
    _parents(rec, top, disk)
    parts = [disk] + [os.path.dirname(p) for p in glob.glob(
        os.path.join(disk, '*', 'partition'))]
    for part in parts:
        rec.directory(part)
        for name in DISK_FILES:
            rec.file(os.path.join(part, name))
        rec.tree(os.path.join(part, 'holders'), 1)


def _groups(rec, root):
    groups = os.path.join(root, 'kernel', 'iommu_groups')
    rec.directory(groups)
    for group in _listdir(groups):
        devices = os.path.join(groups, group, 'devices')
        rec.directory(devices)
        for name in _listdir(devices):
            rec.link(os.path.join(devices, name))


def _mountinfo(text):
    """The mounts of block devices (not of proc, tmpfs...) with what the
    agent reads: ids, device number, root, mount point, the first option
    (rw/ro), type and source."""
    lines = []
    for mount in hostfiles.mounts(text):
        if (mount.device.startswith('0:')
                and not mount.source.startswith('/dev/')):
            continue
        lines.append(' '.join(mount.fields[:5] + [mount.access, '-'] + [
            field for field in (mount.fstype, mount.source) if field]))
    return ''.join(line + '\n' for line in lines)


def _names_only(text, column, header=False):
    """A /proc/net table reduced to the interface name column, the other
    columns zeroed: which interfaces have addresses, not the addresses."""
    lines = text.splitlines()
    out = lines[:1] if header else []
    for line in lines[1:] if header else lines:
        fields = line.split()
        if len(fields) > column:
            fields = ['0'] * len(fields)
            fields[column] = line.split()[column]
            out.append(' '.join(fields))
    return ''.join(line + '\n' for line in out)


def _proc(proc):
    rec = Recorder(proc)
    texts = {'self/mountinfo': _mountinfo, 'swaps': lambda t: t,
             'net/if_inet6': functools.partial(_names_only, column=5),
             'net/route': functools.partial(_names_only, column=0,
                                            header=True)}
    for name, keep in texts.items():
        text = hostfiles.read_text(os.path.join(proc, name), MAX_FILE * 16)
        if text is not None:
            rec.file(os.path.join(proc, name), keep(text))
    for info in glob.glob(os.path.join(proc, 'driver', 'nvidia', 'gpus', '*',
                                       'information')):
        rec.file(info)
    # The mig directory of a GPU without GPU instances too: then the
    # agent reports none, where without it it reports nothing.
    for gi in glob.glob(os.path.join(proc, 'driver', 'nvidia',
                                     'capabilities', 'gpu*', 'mig')) + \
            glob.glob(os.path.join(proc, 'driver', 'nvidia',
                                   'capabilities', 'gpu*', 'mig', 'gi*')):
        rec.directory(gi)
    return {'files': rec.files, 'dirs': sorted(rec.dirs)}


def capture(root):
    """The capture (a dict) of the host whose sysfs is ``root``; OSError
    when its PCI devices cannot be listed (no sysfs there, or no
    permission), rather than a capture of no device."""
    os.listdir(os.path.join(root, sysfs.PCI_DEVICES))
    reader = sysfs.PciReader(root)
    rec = Recorder(root)
    rec.directory(os.path.join(root, sysfs.PCI_DEVICES))
    for address in reader.addresses():
        _function(rec, reader, address)
    _groups(rec, root)
    return {'format': FORMAT, 'version': VERSION,
            'kernel': platform.release() if root == '/sys' else None,
            'dirs': sorted(rec.dirs), 'files': rec.files,
            'links': rec.links,
            'proc': _proc(hostfiles.proc_root(root))}


def functions(document):
    """How many PCI functions a capture holds."""
    prefix = sysfs.PCI_DEVICES + os.sep
    return sum(1 for path in document.get('links') or {}
               if path.startswith(prefix) and os.sep not in path[len(prefix):])


def write(path, root):
    """Write the capture of ``root`` to ``path`` (``-``: stdout); returns
    how many PCI functions it holds. Nothing is written when reading
    fails."""
    document = capture(root)
    text = json.dumps(document, indent=1, sort_keys=True) + '\n'
    if path == '-':
        print(text, end='')
    else:
        with open(path, 'w') as f:
            f.write(text)
    return functions(document)


def _inside(top, relative):
    """``top/relative``, refusing what would land outside ``top``."""
    if not isinstance(relative, str) or os.path.isabs(relative):
        raise InvalidCapture('%r is not a relative path' % (relative,))
    path = os.path.normpath(os.path.join(top, relative))
    if path != top and not path.startswith(top + os.sep):
        raise InvalidCapture('%r leaves the tree' % (relative,))
    return path


def _real_inside(top, path):
    """Refuse ``path`` if, links resolved, it is outside ``top``."""
    real = os.path.realpath(path)
    if real != os.path.realpath(top) and not real.startswith(
            os.path.realpath(top) + os.sep):
        raise InvalidCapture('%s leads out of the tree' % (
            os.path.relpath(path, top),))


def _lay_out(top, part):
    """Write one part (the sysfs or the proc one) of a capture."""
    for relative in sorted(part.get('dirs') or [], key=len):
        os.makedirs(_inside(top, relative), exist_ok=True)
    contents = dict((part.get('files') or {}).items())
    for relative, data in (part.get('binary') or {}).items():
        contents[relative] = base64.b64decode(data)
    for relative, content in contents.items():
        path = _inside(top, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb' if isinstance(content, bytes) else 'w') as f:
            f.write(content)
    for relative, target in (part.get('links') or {}).items():
        path = _inside(top, relative)
        if not isinstance(target, str):
            raise InvalidCapture('link %r has no target' % (relative,))
        if target.startswith('/sys/'):
            target = os.path.relpath(os.path.join(top, target[5:]),
                                     os.path.dirname(path))
        # A link may point anywhere inside the tree, nowhere outside,
        # also through other links.
        _inside(top, os.path.relpath(os.path.normpath(os.path.join(
            os.path.dirname(path), target)), top))
        _real_inside(top, os.path.dirname(path))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.lexists(path):
            os.symlink(target, path)
            try:
                _real_inside(top, path)
            except InvalidCapture:
                os.unlink(path)
                raise


def replay(document, target):
    """Lay ``document`` (a capture) out below ``target``: ``sys/`` and
    ``proc/``. Returns the sysfs root, ``target/sys``."""
    if not isinstance(document, dict) or not (
            'files' in document or 'links' in document):
        raise InvalidCapture('not a capture: no files nor links')
    sys_root = os.path.join(os.path.abspath(target), 'sys')
    os.makedirs(os.path.join(sys_root, sysfs.PCI_DEVICES), exist_ok=True)
    _lay_out(sys_root, document)
    proc_root = os.path.join(os.path.abspath(target), 'proc')
    os.makedirs(proc_root, exist_ok=True)
    _lay_out(proc_root, document.get('proc') or {})
    return sys_root


def load(path):
    """The capture in file ``path``; InvalidCapture if it is none."""
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InvalidCapture('cannot read capture %s: %s' % (path, e)) from e


def resolve_root(conf):
    """Make ``[agent] sysfs_root`` a directory: a capture file is laid out
    in a new temporary directory (removed at exit), which then stands for
    the sysfs root."""
    root = conf.agent.sysfs_root
    if not os.path.isfile(root):
        return root
    target = tempfile.mkdtemp(prefix='cyborg-capture-')
    atexit.register(shutil.rmtree, target, True)
    try:
        sys_root = replay(load(root), target)
    except (InvalidCapture, OSError, TypeError, AttributeError) as e:
        shutil.rmtree(target, True)
        raise InvalidCapture('[agent] sysfs_root %s: %s' % (root, e)) from e
    LOG.info('Reading the captured host %s, laid out in %s', root, target)
    conf.set_override('sysfs_root', sys_root, group='agent')
    return sys_root
