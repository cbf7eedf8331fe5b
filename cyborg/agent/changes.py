"""Whether a periodic rescan needs the drivers.

A rescan runs every enabled driver over sysfs. Without udev events, the
periodic rescan first reads a fingerprint of sysfs
(:func:`cyborg.accelerator.common.sysfs.fingerprint`: the PCI functions,
their driver links, VF counts and mdev directories), and runs the drivers
only when it differs from the one read before the last discovery, or when
``[agent] full_rescan_interval`` seconds have passed since that discovery
(for what the fingerprint does not cover, say a QAT device going down).
"""

import time


class ChangeCheck:
    """``read()`` gives the fingerprint; ``full_interval`` seconds (0:
    never) after a discovery, the next check asks for one anyway."""

    def __init__(self, read, full_interval, clock=time.monotonic):
        self.read = read
        self.full_interval = full_interval
        self.clock = clock
        self._seen = None
        self._at = None
        #: Checks that found nothing to do, and those that did.
        self.skipped = 0
        self.due = 0

    def discovering(self):
        """A discovery starts: what it will see is the fingerprint now."""
        self._seen = self.read()
        self._at = self.clock()

    def worth_discovering(self):
        """True if the drivers may find something new."""
        due = (self._at is None
               or (self.full_interval
                   and self.clock() - self._at >= self.full_interval)
               or self.read() != self._seen)
        if due:
            self.due += 1
        else:
            self.skipped += 1
        return bool(due)
