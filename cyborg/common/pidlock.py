"""One process at a time on a state directory or state file.

:func:`acquire` takes an exclusive ``flock`` on a lock file and writes the
process id into it. The lock belongs to the open file: the kernel drops it
when the process ends, however it ends, so a lock file left behind by a
process that died blocks nobody; the pid in it only names the holder in
the message of :class:`Locked`.
"""

import fcntl
import os
import sys

#: The lock file of an all-in-one in its state directory.
AIO_LOCK_FILE = 'cyborg-aio.lock'
#: What the agent appends to its ``[agent] state_file`` for its lock.
LOCK_SUFFIX = '.lock'


# The locks :func:`hold` took: a lock lasts as long as its open file.
_HELD = []


class Locked(Exception):
    """Another process holds the lock."""

    def __init__(self, path, pid):
        holder = 'process %s' % pid if pid else 'another process'
        super().__init__('in use by %s (lock file %s)' % (holder, path))
        self.path = path
        self.pid = pid


def acquire(path):
    """Lock ``path`` (created if missing) for this process and write our
    pid into it; return the open file, which holds the lock until it is
    closed or the process ends.

    :raises Locked: another process holds it.
    :raises OSError: the file cannot be created or opened.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    lock = os.fdopen(fd, 'r+')
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _read_pid(lock)
        lock.close()
        raise Locked(path, pid) from None
    except BaseException:
        lock.close()
        raise
    lock.seek(0)
    lock.truncate()
    lock.write('%d\n' % os.getpid())
    lock.flush()
    return lock


def _read_pid(lock):
    """The pid the holder wrote, or None if it has not yet."""
    lock.seek(0)
    text = lock.read(32).strip()
    return int(text) if text.isdigit() else None


def hold(path, prog, option):
    """:func:`acquire` ``path`` for the life of this process (a daemon
    named ``prog``), creating its directory; end the process with one line
    naming ``option`` (the option that chose the path) when it cannot:
    status 1 when another process holds the lock, 2 when the path cannot
    be written."""
    try:
        os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
        _HELD.append(acquire(path))
    except Locked as e:
        sys.exit('%s: error: %s: %s' % (prog, option, e))
    except OSError as e:
        print('%s: error: %s: cannot write %s: %s'
              % (prog, option, e.filename or path, e.strerror),
              file=sys.stderr)
        raise SystemExit(2) from None
