"""The privileged operations of the drivers, each as narrow as it can be.

They run in the privsep daemon (:mod:`cyborg.privsep`), so each one checks
its own arguments: a caller may only write the files it is meant to, under
the sysfs root it names.
"""

import os

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
