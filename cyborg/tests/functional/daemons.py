"""Running cyborg's console scripts as real processes in tests."""

import os
import signal
import socket
import subprocess
import sys
import time

import requests


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


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
