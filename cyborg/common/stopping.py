"""Whether this process was told to stop (SIGTERM, SIGINT), for the
waits that must end when it was.

A daemon stops within seconds whatever it waits for: the broker, an
exchange no conductor declared yet, a retry's pause. Each such wait
waits on :func:`wait` (or calls :func:`check` between tries) instead of
sleeping, and ends with :class:`cyborg.common.exception.Stopping` when
the process stops. :func:`request` is called by the signal handler of
:func:`cyborg.common.service.run_in_foreground`.
"""

import threading

from cyborg.common import exception

_STOPPING = threading.Event()


def request():
    """Tell every wait of this process to end."""
    _STOPPING.set()


def requested():
    return _STOPPING.is_set()


def wait(seconds):
    """Sleep ``seconds``, less if the process is told to stop: then
    True."""
    return _STOPPING.wait(seconds)


def check():
    """Raise Stopping if the process was told to stop."""
    if _STOPPING.is_set():
        raise exception.Stopping()


def sleep(seconds):
    """Sleep ``seconds``; raise Stopping as soon as the process is told
    to stop (at once if it was)."""
    if _STOPPING.wait(seconds):
        raise exception.Stopping()


def clear():
    """For tests that run a stop in their own process."""
    _STOPPING.clear()
