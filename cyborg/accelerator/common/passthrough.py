"""Whether a PCI function can be handed to a VM, from the kernel's facts.

Every driver hands out PCI functions; whatever the driver, a function is
offered only if

* it has an IOMMU group (VFIO assigns groups, not functions; without an
  IOMMU libvirt fails at spawn), unless ``[agent] allow_no_iommu_group``
  says the deployment hands devices to containers;
* every other endpoint of its group is handed out with it (the same
  device's functions, its own VFs), or bound to ``vfio-pci``, ``pci-stub``
  or no driver; bridges do not count;
* the host does not use it: no network interface of it is up, has
  addresses or is enslaved to a bond or bridge; no disk of it holds a
  mounted filesystem or swap or is held by device-mapper or md; it does
  not drive the console (``boot_vga``).

What the host uses is read below the same root as the rest: the network
interfaces and disks in the function's sysfs directory, and the ``proc``
directory beside the sysfs root (``/proc`` for ``/sys``) for
``self/mountinfo``, ``swaps``, ``net/if_inet6`` and ``net/route``.
"""

import collections
import fnmatch
import glob
import os

from cyborg.accelerator.common import hostfiles
from cyborg.accelerator.common import pci

#: Kernel drivers that leave a group member to VFIO: nothing of the host
#: runs on it.
FREE_DRIVERS = frozenset([None, 'vfio-pci', 'pci-stub'])
#: IFF_UP in a network interface's ``flags``.
IFF_UP = 0x1
#: Where a function's network interfaces and disks appear below its sysfs
#: directory: directly, under a virtio device, under an NVMe controller,
#: under a SCSI host.
NETDEV_GLOBS = ('net/*', '*/net/*')
DISK_GLOBS = ('block/*', '*/block/*', 'nvme/*/nvme*n*',
              'host*/target*/*/block/*', 'ata*/host*/target*/*/block/*')

IOMMU_ACTION = ('enable VT-d (Intel) or AMD-Vi (AMD) in the firmware and '
                'boot the host with intel_iommu=on iommu=pt (Intel; '
                'AMD-Vi is on by default); a VM used as a host needs a '
                'virtual IOMMU. Only where devices go to containers, not '
                'VMs: [agent] allow_no_iommu_group')

Refusal = collections.namedtuple('Refusal', ['reason', 'action'])


def _read(path):
    """The text of ``path``; '' when it cannot be read (the host uses
    nothing a missing file would tell)."""
    return hostfiles.read_text(path) or ''


class HostUse:
    """What the host itself uses, read once from ``proc``."""

    def __init__(self, proc):
        #: mount source (``/dev/sda1``) or device number (``8:1``) ->
        #: mount point.
        self.mounted_sources = {}
        for mount in hostfiles.mounts(_read(os.path.join(
                proc, 'self', 'mountinfo'))):
            self.mounted_sources.setdefault(mount.source, mount.mount_point)
            self.mounted_sources.setdefault(mount.device, mount.mount_point)
        self.swaps = {line.split()[0] for line in _read(
            os.path.join(proc, 'swaps')).split('\n')[1:] if line.split()}
        self.addressed = set()
        for line in _read(os.path.join(proc, 'net', 'if_inet6')).split(
                '\n'):
            fields = line.split()
            if len(fields) == 6:
                self.addressed.add(fields[5])
        for line in _read(os.path.join(proc, 'net', 'route')).split(
                '\n')[1:]:
            fields = line.split()
            if fields:
                self.addressed.add(fields[0])


def _text(path):
    return _read(path).strip()


def _netdev_use(path, host):
    """Why the host uses the network interface at ``path``, or None."""
    name = os.path.basename(path)
    try:
        flags = int(_text(os.path.join(path, 'flags')) or '0', 16)
    except ValueError:
        flags = 0
    if _text(os.path.join(path, 'operstate')) == 'up' or flags & IFF_UP:
        return 'its network interface %s is up' % name
    if name in host.addressed:
        return 'its network interface %s has addresses' % name
    try:
        master = os.readlink(os.path.join(path, 'master'))
    except OSError:
        return None
    return 'its network interface %s is part of %s' % (
        name, os.path.basename(master))


def _disk_use(path, host):
    """Why the host uses the disk at ``path`` (or a partition), or
    None."""
    parts = [path] + sorted(
        os.path.dirname(p) for p in glob.glob(os.path.join(path, '*',
                                                           'partition')))
    for part in parts:
        name = os.path.basename(part)
        number = _text(os.path.join(part, 'dev'))
        mount = (host.mounted_sources.get('/dev/' + name) or
                 (host.mounted_sources.get(number) if number else None))
        if mount is not None:
            return 'its disk %s holds the filesystem mounted on %s' % (
                name, mount)
        if '/dev/' + name in host.swaps:
            return 'its disk %s holds swap' % name
        try:
            holders = os.listdir(os.path.join(part, 'holders'))
        except OSError:
            holders = []
        if holders:
            return 'its disk %s is held by %s' % (name,
                                                   ', '.join(sorted(holders)))
    return None


def below(directory, pattern):
    """The directories ``pattern`` (``/``-separated shell patterns)
    matches below ``directory``, sorted; links (``physfn``,
    ``subsystem``...) are not followed."""
    paths = [directory]
    for part in pattern.split('/'):
        found = []
        for path in paths:
            try:
                with os.scandir(path) as entries:
                    found.extend(e.path for e in entries
                                 if fnmatch.fnmatchcase(e.name, part) and
                                 e.is_dir(follow_symlinks=False))
            except OSError:
                continue
        paths = found
    return sorted(paths)


def host_use(directory, host):
    """Why the host uses the function whose sysfs directory is
    ``directory``, or None."""
    if _text(os.path.join(directory, 'boot_vga')) == '1':
        return 'it drives the host\'s console (boot_vga)'
    for pattern in NETDEV_GLOBS:
        for path in below(directory, pattern):
            reason = _netdev_use(path, host)
            if reason:
                return reason
    for pattern in DISK_GLOBS:
        for path in below(directory, pattern):
            reason = _disk_use(path, host)
            if reason:
                return reason
    return None


class Checker:
    """Judges functions of one sysfs tree; build one per discovery."""

    def __init__(self, reader, allow_no_iommu_group=False):
        self.reader = reader
        self.allow_no_iommu_group = allow_no_iommu_group
        self._host = None

    @property
    def host(self):
        if self._host is None:
            self._host = HostUse(hostfiles.proc_root(self.reader.root))
        return self._host

    def group_members(self, group):
        """The addresses in IOMMU group ``group``, sorted."""
        path = os.path.join(self.reader.root, 'kernel', 'iommu_groups',
                            group, 'devices')
        try:
            names = os.listdir(path)
        except OSError:
            return []
        return sorted(a for a in map(pci.parse_or_none, names) if a)

    def check(self, function, together=()):
        """A Refusal for ``function``, handed out with the addresses in
        ``together``, or None when a VM can have it."""
        use = host_use(self.reader.path(function.address), self.host)
        if use is not None:
            return Refusal('the host uses it: %s' % use,
                           'stop the host using it (or bind it to '
                           'vfio-pci) if the host does not need it')
        if function.iommu_group is None:
            if self.allow_no_iommu_group:
                return None
            return Refusal('it has no IOMMU group (the host\'s IOMMU is off '
                           'or absent): VFIO cannot hand it to a VM',
                           IOMMU_ACTION)
        return self._group_refusal(function, set(together))

    def _group_refusal(self, function, together):
        ok = together | set(function.virtfns) | {function.address}
        for address in self.group_members(function.iommu_group):
            if address in ok:
                continue
            other = self.reader.get(address)
            if other is None:
                return Refusal('it shares IOMMU group %s with %s, which '
                               'cannot be read' % (function.iommu_group,
                                                   address), None)
            if other.class_code.startswith('06') or \
                    other.driver in FREE_DRIVERS:
                continue
            return Refusal(
                'it shares IOMMU group %s with %s (kernel driver %s), '
                'which stays with the host' % (function.iommu_group,
                                               address, other.driver),
                'bind %s to vfio-pci too, or move the card to a slot with '
                'its own IOMMU group' % (address,))
        return None
