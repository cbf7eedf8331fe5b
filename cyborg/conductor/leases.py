"""One conductor does the periodic work shared by all: the checks for
silent hosts, stale binds, pending Placement syncs and expired claims.
Several conductors run active-active on one database; without this each
of them would run every check, reading every host each time.

The conductor that holds the lease (a row of ``conductor_leases``) runs
the checks; it renews the lease when a third of
``[conductor] periodic_lease_timeout`` has passed since it last did, at
its next check, so an idle renewal costs one UPDATE every ten seconds
(with the default 30). The others try to take it, at most every third of
that timeout, which succeeds once it has expired: at most
``4/3 * periodic_lease_timeout + liveness_check_interval`` seconds after
the holder died, and at their next check after it stopped cleanly
(``release``). Nothing depends on the lease for correctness: each check
claims what it changes with conditional writes, so two conductors
running one (a holder that stalled past its lease) duplicate work, never
its effects. The times compared are the conductors' clocks, which are
expected to agree (NTP), as for the hosts' last-seen times.
"""

import functools
import threading
import time
import uuid

from oslo_log import log as logging

from cyborg.common import context as cyborg_context
from cyborg.common import metrics
from cyborg.db import leases as db_leases

LOG = logging.getLogger(__name__)

#: The lease of the periodic checks.
PERIODIC = 'periodic'


class Lease:
    """A conductor's view of one lease."""

    def __init__(self, conf, name=PERIODIC, holder=None):
        self.conf = conf
        self.name = name
        #: Unique per conductor process: two conductors given one host
        #: name, or a conductor restarted, are different holders.
        self.holder = holder or '%s:%s' % (conf.host, uuid.uuid4().hex[:8])
        self._lock = threading.Lock()
        # time.monotonic() of the next renewal while held; of the next
        # attempt to take it while not.
        self._held = False
        self._next = 0.0

    def held(self):
        """Whether this conductor holds the lease; renews or tries to
        take it when that is due."""
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                return self._held
            seconds = self.conf.conductor.periodic_lease_timeout
            held = db_leases.take(cyborg_context.get_admin_context(),
                                  self.name, self.holder, seconds)
            if held != self._held:
                if held:
                    LOG.info('This conductor (%s) now runs the periodic '
                             'checks of all conductors', self.holder)
                else:
                    LOG.warning('Conductor %s lost its lease on the '
                                'periodic checks to another conductor',
                                self.holder)
            self._held = held
            metrics.LEASE_HELD.labels(self.name).set(int(held))
            self._next = now + seconds / 3.0
            return held

    def release(self):
        """Give the lease up (a conductor that stops), so that another
        conductor takes the checks over at once."""
        with self._lock:
            if not self._held:
                return
            # Left to the others: not taken back before a third of the
            # timeout (a conductor that stops asks no more).
            self._held = False
            metrics.LEASE_HELD.labels(self.name).set(0)
            self._next = (time.monotonic()
                          + self.conf.conductor.periodic_lease_timeout / 3.0)
        db_leases.release(cyborg_context.get_admin_context(), self.name,
                          self.holder)
        LOG.info('Conductor %s gave up the periodic checks', self.holder)

    def guard(self, task):
        """``task``, run only while this conductor holds the lease."""
        @functools.wraps(task)
        def guarded():
            if self.held():
                return task()
            return None
        return guarded
