"""Hot-plug: udev events on PCI functions and mediated devices trigger a
discovery within about a second.

A thread of its own waits (``select``) on a pyudev netlink monitor and on a
wake-up pipe, so it costs nothing while nothing happens. A burst of events
(enabling 64 VFs sends 64 ``add`` and as many ``bind``) ends in one call of
the callback: once the events have stopped for ``quiet`` seconds, and at
the latest ``max_delay`` seconds after the first one.

Events come only from the real ``/sys``: with ``[agent] sysfs_root`` on a
captured tree, without pyudev or libudev, or without a running udev daemon,
:func:`start` logs why once and returns None, and the periodic rescan is
what finds changes.
"""

import errno
import os
import select
import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

SUBSYSTEMS = ('pci', 'mdev')
#: Actions that can change what discovery finds; a driver (un)binding
#: makes a function usable or not.
ACTIONS = frozenset(('add', 'remove', 'change', 'move', 'bind', 'unbind'))
#: The socket udevd listens on; without it libudev's monitor, though it
#: opens, never delivers an event.
UDEV_CONTROL = '/run/udev/control'
REAL_SYSFS = '/sys'
QUIET = 0.3
MAX_DELAY = 1.0


class Debouncer:
    """When a burst of events is over: ``quiet`` seconds after the last
    event, at most ``max_delay`` seconds after the first."""

    def __init__(self, quiet=QUIET, max_delay=MAX_DELAY):
        self.quiet = quiet
        self.max_delay = max_delay
        self._first = None
        self._last = None

    def add(self, now):
        if self._first is None:
            self._first = now
        self._last = now

    def wait(self, now):
        """Seconds until the burst is due (0 if it is), None if none."""
        if self._first is None:
            return None
        deadline = min(self._last + self.quiet, self._first + self.max_delay)
        return max(0.0, deadline - now)

    def take(self, now):
        """True once per burst, when it is due."""
        if self.wait(now) != 0:
            return False
        self._first = self._last = None
        return True


class HotplugWatcher:
    """Calls ``on_change()`` once per burst of relevant device events.

    ``monitor`` is a pyudev ``Monitor`` (or anything with its ``fileno()``
    and non-blocking ``poll(timeout=0)`` that returns a device with
    ``action``, ``subsystem`` and ``sys_path``, or None).
    """

    def __init__(self, monitor, on_change, quiet=QUIET, max_delay=MAX_DELAY,
                 clock=time.monotonic):
        self.monitor = monitor
        self.on_change = on_change
        self.debouncer = Debouncer(quiet, max_delay)
        self.clock = clock
        #: Relevant events seen, and bursts handed to ``on_change``.
        self.events = 0
        self.bursts = 0
        self._thread = None
        self._wake_read, self._wake_write = os.pipe()

    def start(self):
        self._thread = threading.Thread(target=self._run,
                                        name='cyborg-hotplug', daemon=True)
        self._thread.start()
        return self

    @property
    def running(self):
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout=10):
        """Stop the thread (after the ``on_change`` it may be running)."""
        if self._thread is None:
            return
        os.write(self._wake_write, b'x')
        self._thread.join(timeout)
        if self._thread.is_alive():
            LOG.warning('The hot-plug watcher did not stop within %s s',
                        timeout)
            return
        self._thread = None
        for fd in (self._wake_read, self._wake_write):
            os.close(fd)

    def handle(self, device):
        """Take one event; True if it counts."""
        action = getattr(device, 'action', None)
        subsystem = getattr(device, 'subsystem', None)
        if action not in ACTIONS or subsystem not in SUBSYSTEMS:
            return False
        LOG.debug('udev: %s %s', action, getattr(device, 'sys_path', '?'))
        self.events += 1
        self.debouncer.add(self.clock())
        return True

    def _run(self):
        while True:
            timeout = self.debouncer.wait(self.clock())
            readable, _, _ = select.select(
                [self._wake_read, self.monitor], [], [], timeout)
            if self._wake_read in readable:
                return
            if readable and not self._drain():
                return
            if self.debouncer.take(self.clock()):
                self._fire()

    def _drain(self):
        """Take every queued event; False if the monitor is broken."""
        while True:
            try:
                device = self.monitor.poll(timeout=0)
            except OSError as e:
                if e.errno != errno.ENOBUFS:
                    LOG.warning('udev events cannot be read any more (%s); '
                                'relying on the periodic rescan', e)
                    return False
                # The kernel dropped events: assume anything changed.
                LOG.info('udev events were lost; discovering again')
                self.debouncer.add(self.clock())
                continue
            if device is None:
                return True
            self.handle(device)

    def _fire(self):
        self.bursts += 1
        try:
            self.on_change()
        except Exception:
            LOG.exception('Discovery after a udev event failed')


def unavailable_reason(sysfs_root, udev_control=None):
    """Why hot-plug events cannot be used here, None if they can."""
    udev_control = udev_control or UDEV_CONTROL
    if os.path.realpath(sysfs_root) != REAL_SYSFS:
        return '[agent] sysfs_root is %s, not the real /sys' % sysfs_root
    try:
        import pyudev  # noqa: F401
    except ImportError as e:
        return 'pyudev cannot be imported (%s)' % e
    if not os.path.exists(udev_control):
        return 'udev is not running (no %s)' % udev_control
    return None


def open_monitor():
    """A started pyudev monitor of SUBSYSTEMS on udev's netlink group."""
    import pyudev
    monitor = pyudev.Monitor.from_netlink(pyudev.Context(), source='udev')
    for subsystem in SUBSYSTEMS:
        monitor.filter_by(subsystem)
    monitor.start()
    return monitor


def start(sysfs_root, on_change, udev_control=None, **kwargs):
    """A started HotplugWatcher, or None (and one log line saying why)."""
    reason = unavailable_reason(sysfs_root, udev_control)
    if reason is None:
        try:
            monitor = open_monitor()
        except (ImportError, OSError) as e:
            reason = 'the udev monitor cannot be opened (%s)' % e
    if reason is not None:
        # Expected on a captured tree; on a real host, worth a warning.
        captured = os.path.realpath(sysfs_root) != REAL_SYSFS
        (LOG.info if captured else LOG.warning)(
            'No hot-plug events: %s; changes are found by the periodic '
            'rescan', reason)
        return None
    LOG.info('Watching udev events of subsystems %s',
             ', '.join(SUBSYSTEMS))
    return HotplugWatcher(monitor, on_change, **kwargs).start()
