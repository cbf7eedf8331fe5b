"""Small text files of the host (``/proc`` tables, the PCI ID database):
one reader with one failure rule, and one parser of the mount table.

:func:`read_text` answers None for a file that cannot be read, whatever
the reason (missing, no permission, an I/O error, a corrupt gzip file):
each caller says what a missing file means to it. Bytes that are not
UTF-8 are replaced, not an error: these files are the kernel's or a
distribution's, and one odd byte must not hide the rest.
"""

import collections
import gzip
import os
import zlib

Mount = collections.namedtuple(
    'Mount', ['device', 'root', 'mount_point', 'access', 'fstype',
              'source', 'fields'])
Mount.__doc__ = """A line of ``/proc/<pid>/mountinfo``: the device
number (``8:1``), the root of the mount within its filesystem, the mount
point, ``rw`` or ``ro``, the filesystem type, the mount source
(``/dev/sda1``, or '' when there is none) and the line's fields."""


def proc_root(sysfs_root):
    """The directory standing for ``/proc``: ``proc`` beside the sysfs
    root (``/proc`` for ``/sys``, ``<capture>/proc`` for a captured
    tree)."""
    return os.path.join(os.path.dirname(os.path.normpath(sysfs_root)),
                        'proc')


def read_text(path, limit=None, problems=None):
    """The text of ``path`` (gunzipped when it ends in ``.gz``), at most
    ``limit`` characters; None when it cannot be read, and then why is
    appended to the list ``problems`` if one is given."""
    opener = gzip.open if path.endswith('.gz') else open
    try:
        with opener(path, 'rt', encoding='utf-8', errors='replace') as f:
            return f.read() if limit is None else f.read(limit)
    except (OSError, EOFError, zlib.error) as e:
        # EOFError and zlib.error: a truncated or corrupt gzip file
        # (gzip.BadGzipFile is an OSError).
        if problems is not None:
            problems.append(str(e) or type(e).__name__)
        return None


def mounts(text):
    """The :class:`Mount` of each well-formed line of a mountinfo
    ``text`` (``None`` reads as no mounts)."""
    found = []
    for line in (text or '').splitlines():
        fields = line.split()
        # id, parent id, device, root, mount point, options, optional
        # fields ending with "-", type, source, super options.
        if len(fields) < 7 or '-' not in fields[6:]:
            continue
        tail = fields[fields.index('-', 6) + 1:]
        found.append(Mount(device=fields[2], root=fields[3],
                           mount_point=fields[4],
                           access=fields[5].split(',')[0],
                           fstype=tail[0] if tail else '',
                           source=tail[1] if len(tail) > 1 else '',
                           fields=fields))
    return found
