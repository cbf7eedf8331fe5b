"""Running cyborg's console scripts as real processes in tests."""

import fcntl
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

import requests

#: Where a test's daemons listen: below the kernel's ephemeral range
#: (``ip_local_port_range``, 32768-60999 by default), which the galera
#: clusters (27000-27999) and the benchmarks (23000-23999) stay out of.
PORT_RANGE = (12000, 22999)
_EPHEMERAL = '/proc/sys/net/ipv4/ip_local_port_range'
#: The files this process holds a lock on: one per port it was given.
_RESERVED = {}


def _ephemeral_range():
    try:
        with open(_EPHEMERAL) as f:
            low, high = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def free_port():
    """A loopback port for a daemon to listen on, free now and given to
    no other test process while this one runs.

    A port the kernel picks (a bind to port 0) is one of its ephemeral
    ports: between the test closing it and its daemon binding it, any
    outgoing connection of the machine (to the database, the broker, a
    daemon just started) may take it as its source port, and the daemon
    then fails with "Address already in use" (seen in Nova's end-to-end
    run). So ports come from PORT_RANGE, out of the ephemeral range,
    and each is reserved by a lock on a file named after it, held until
    this process exits: two test processes never get the same port, and
    a crashed one's locks go with it."""
    low, high = PORT_RANGE
    ephemeral = _ephemeral_range()
    candidates = [port for port in range(low, high + 1)
                  if not ephemeral[0] <= port <= ephemeral[1]]
    if not candidates:
        # The whole range is ephemeral here: the lock files still keep
        # test processes apart.
        candidates = list(range(low, high + 1))
    # Not tempfile.gettempdir(): a test may point that at a directory of
    # its own, and every test process must see the same locks.
    directory = os.path.join('/tmp' if os.access('/tmp', os.W_OK)
                             else tempfile.gettempdir(),
                             'cyborg-test-ports-%d' % os.getuid())
    os.makedirs(directory, mode=0o700, exist_ok=True)
    start = random.randrange(len(candidates))
    for port in candidates[start:] + candidates[:start]:
        if port in _RESERVED:
            continue
        fd = os.open(os.path.join(directory, str(port)),
                     os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        with socket.socket() as sock:
            try:
                sock.bind(('127.0.0.1', port))
            except OSError:
                # Something outside the tests holds it: not ours to use,
                # and kept locked so that it is not tried again.
                _RESERVED[port] = fd
                continue
        _RESERVED[port] = fd
        return port
    raise OSError('no free port in %d-%d' % PORT_RANGE)


def children(pid):
    """The pids of the child processes of ``pid``."""
    found = []
    for task in os.listdir('/proc/%d/task' % pid):
        with open('/proc/%d/task/%s/children' % (pid, task)) as f:
            found.extend(int(child) for child in f.read().split())
    return found


def write_config(path, sections):
    with open(path, 'w') as f:
        for section, options in sections.items():
            f.write('[%s]\n' % section)
            for key, value in options.items():
                f.write('%s = %s\n' % (key, value))
    return path


class Daemon:
    """A cyborg console script run as ``python -m cyborg.cmd.<name>``, or
    any other ``command`` (then ``name`` only names it); killed with its
    process group when ``test`` (a test or a fixture) cleans up."""

    def __init__(self, test, name, args, log_path, command=None, env=None):
        self.name = name
        self.log_path = log_path
        self.log = open(log_path, 'w')
        test.addCleanup(self.log.close)
        command = command or [sys.executable, '-m', 'cyborg.cmd.%s' % name]
        self.process = subprocess.Popen(
            list(command) + list(args), stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True,
            env=None if env is None else dict(os.environ, **env))
        test.addCleanup(self.kill)

    def running(self):
        return self.process.poll() is None

    def terminate(self, timeout=20, signum=signal.SIGTERM):
        """Send ``signum``; the exit code (None if it did not stop)."""
        self.process.send_signal(signum)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.running():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def output(self):
        with open(self.log_path) as f:
            return f.read()


def wait_for_http(url, timeout=60, headers=None, daemon=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon is not None and not daemon.running():
            raise AssertionError('%s exited:\n%s' % (daemon.name,
                                                     daemon.output()[-3000:]))
        try:
            return requests.get(url, headers=headers, timeout=5)
        except requests.ConnectionError:
            time.sleep(0.1)
    raise AssertionError('%s did not answer within %s s' % (url, timeout))
