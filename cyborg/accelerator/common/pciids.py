"""Device names from the PCI ID database (``pci.ids``), as ``lspci`` gives
them on this host.

The database is the file pciutils and hwdata read, kept current by the
distribution: ``[agent] pci_ids_path`` if set, else the first of
:data:`SEARCH_PATHS` that exists (plain or gzip-compressed). It is large
(about 1.3 MB, 40,000 lines), so it is read once per process and path, on
the first name asked for, and only its vendor lines are indexed; a device
or subsystem is looked up in its vendor's part of the text. Reading and
indexing Debian 12's file takes 8 to 20 ms. A host without the file names
devices by their ids, as ``lspci`` does there.

Names follow pciutils' rules: a known vendor and device give
``<vendor> <device>``, an unknown device ``<vendor> Device <id>``, an
unknown vendor ``Device <vendor id>:<device id>``.
"""

import os
import re
import threading

from oslo_log import log as logging

from cyborg.accelerator.common import hostfiles

LOG = logging.getLogger(__name__)

#: Where pciutils and hwdata keep the database, in the order looked at.
SEARCH_PATHS = ('/usr/share/misc/pci.ids', '/usr/share/hwdata/pci.ids',
                '/usr/share/pci.ids', '/usr/share/misc/pci.ids.gz',
                '/usr/share/hwdata/pci.ids.gz')

# A vendor line: a newline, four hex digits, two spaces, the name. Device
# lines start with one tab, subsystem lines with two; the class list
# ("C xx  name") closes the vendor part of the file.
_VENDOR = re.compile(r'\n([0-9a-f]{4})  ([^\n]*)')
_CLASSES = '\nC '


class Database:
    """One ``pci.ids`` file, indexed by vendor; devices and subsystems are
    looked up in their vendor's part of the text when asked for."""

    def __init__(self, text=''):
        end = text.find(_CLASSES)
        self._text = text[:end + 1] if end >= 0 else text + '\n'
        self._vendors = {}
        matches = list(_VENDOR.finditer(self._text))
        for index, match in enumerate(matches):
            stop = (matches[index + 1].start() + 1
                    if index + 1 < len(matches) else len(self._text))
            self._vendors[match.group(1)] = (match.group(2).strip(),
                                             match.end(), stop)

    def vendor(self, vendor_id):
        """The vendor's name, None if the database does not know it."""
        entry = self._vendors.get(vendor_id.lower())
        return entry[0] if entry else None

    def _line(self, prefix, start, stop):
        """``(name, end)`` of the line starting with ``prefix`` between
        ``start`` and ``stop``, or None."""
        at = self._text.find(prefix, start, stop)
        if at < 0:
            return None
        end = self._text.find('\n', at + len(prefix), stop)
        end = stop if end < 0 else end
        return self._text[at + len(prefix):end].strip(), end

    def _device(self, vendor_id, device_id):
        entry = self._vendors.get(vendor_id.lower())
        if entry is None:
            return None
        return self._line('\n\t%s  ' % device_id.lower(), entry[1] - 1,
                          entry[2])

    def device(self, vendor_id, device_id):
        """The device's own name (without the vendor's), or None."""
        found = self._device(vendor_id, device_id)
        return found[0] if found else None

    def subsystem(self, vendor_id, device_id, subvendor_id, subdevice_id):
        """The subsystem's own name, or None."""
        found = self._device(vendor_id, device_id)
        if found is None:
            return None
        # The device's subsystem lines end where a line has fewer tabs.
        start = end = found[1]
        while self._text.startswith('\n\t\t', end):
            end = self._text.find('\n', end + 1)
        found = self._line('\n\t\t%s %s  ' % (subvendor_id.lower(),
                                            subdevice_id.lower()),
                           start, end + 1)
        return found[0] if found else None

    def name(self, vendor_id, device_id):
        """The function's name as ``lspci`` prints it."""
        vendor = self.vendor(vendor_id)
        if vendor is None:
            return 'Device %s:%s' % (vendor_id.lower(), device_id.lower())
        device = self.device(vendor_id, device_id)
        if device is None:
            return '%s Device %s' % (vendor, device_id.lower())
        return '%s %s' % (vendor, device)

    def subsystem_name(self, vendor_id, device_id, subvendor_id,
                       subdevice_id):
        """The subsystem as ``lspci -v`` prints it after ``Subsystem:``."""
        vendor = self.vendor(subvendor_id)
        own = self.subsystem(vendor_id, device_id, subvendor_id,
                             subdevice_id)
        if vendor is None:
            return 'Device %s:%s' % (subvendor_id.lower(),
                                     subdevice_id.lower())
        if own is None:
            return '%s Device %s' % (vendor, subdevice_id.lower())
        return '%s %s' % (vendor, own)


def find(configured=None):
    """The path of the database to read: ``configured`` (which must
    exist), else the first of :data:`SEARCH_PATHS` there is; None when
    there is none."""
    if configured:
        return configured
    for path in SEARCH_PATHS:
        if os.path.isfile(path):
            return path
    return None


_LOCK = threading.Lock()
_LOADED = {}


def load(path):
    """The Database of ``path`` (None: an empty one), read once per
    process; a file that cannot be read is logged and counts as empty."""
    with _LOCK:
        if path not in _LOADED:
            text = ''
            if path is not None:
                problems = []
                text = hostfiles.read_text(path, problems=problems)
                if text is None:
                    LOG.warning('Cannot read the PCI ID database %s: %s; '
                                'devices are named by their ids', path,
                                problems[0])
                    text = ''
            _LOADED[path] = Database(text)
        return _LOADED[path]


def database(conf):
    """The Database the agent's configuration names or finds."""
    return load(find(conf.agent.pci_ids_path))
