"""Breaking the services cyborg depends on, privately, in tests.

``TcpGate`` stands between cyborg and a server (the test's own database
on the shared MariaDB, say): closed, nothing listens on its port and
every connection through it is reset, exactly what cyborg sees when the
server stops; opened again, the server is back. The shared server itself
is never touched. ``PrivateRabbit`` is a RabbitMQ node of the test's own.
"""

import os
import pwd
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time

import sqlalchemy as sa

from cyborg.tests import services
from cyborg.tests.functional import daemons


def _reset(sock):
    """Close ``sock`` with a reset, as a server that died would. The
    shutdown first wakes the thread blocked reading it: a socket another
    thread reads is not released by close() alone."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack('ii', 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class TcpGate:
    """A TCP forwarder from a free loopback port to ``target`` (host,
    port) that can be closed and opened again; closed at cleanup."""

    def __init__(self, test, target):
        self.target = target
        self.port = daemons.free_port()
        self._lock = threading.Lock()
        self._listener = None
        self._sockets = set()
        test.addCleanup(self.close)

    @classmethod
    def for_url(cls, test, url):
        """A gate to the server of the SQLAlchemy ``url``, and the same
        url through the gate."""
        parsed = sa.engine.make_url(url)
        gate = cls(test, (parsed.host, parsed.port))
        through = parsed.set(host='127.0.0.1', port=gate.port)
        return gate, through.render_as_string(hide_password=False)

    def open(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('127.0.0.1', self.port))
        listener.listen(64)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,),
                         daemon=True).start()
        return self

    def close(self):
        """Refuse new connections and reset every open one."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            try:
                # Wakes the thread blocked in accept().
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        for sock in sockets:
            _reset(sock)

    def _accept(self, listener):
        while True:
            try:
                client, _address = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                if self._listener is not listener:
                    _reset(client)
                    _reset(upstream)
                    return
                self._sockets.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink),
                                 daemon=True).start()

    def _pipe(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _proc_entries(pid, name):
    """The NUL-separated entries of ``/proc/<pid>/<name>`` (environ,
    cmdline); none for a process that is gone, a zombie, or not ours to
    read."""
    try:
        with open('/proc/%d/%s' % (pid, name), 'rb') as f:
            return f.read().split(b'\0')
    except OSError:
        return []


def _pids():
    return [int(name) for name in os.listdir('/proc') if name.isdigit()]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _sigkill_until_gone(find, timeout, what):
    """SIGKILL the processes ``find()`` returns until it returns none."""
    deadline = time.monotonic() + timeout
    while pids := find():
        if time.monotonic() > deadline:
            raise AssertionError('%s outlived SIGKILL: pids %s' % (
                what, pids))
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


class PrivateRabbit:
    """A RabbitMQ node of the test's own, on free loopback ports with its
    data in a directory of its own, that the test stops (SIGKILL, as a
    crash would) and starts again. The shared broker is never touched.

    ``problem`` is why it cannot run here (no rabbitmq-server, or it did
    not start), else None.

    The node's processes are not all in the daemon's process group: run
    as root, Debian's rabbitmq-server wrapper starts the node with
    ``su rabbitmq -c``, which puts it in a session of its own, and the
    VM's erl_child_setup does the same. So the node is also found by the
    node name in its processes' environment, and killed with them.
    """

    START_TIMEOUT = 60
    KILL_TIMEOUT = 30

    def __init__(self, test):
        self.test = test
        # Not under the test's directory: run as root, the node runs as
        # the rabbitmq user, which must reach it.
        self.directory = tempfile.mkdtemp(prefix='cyborg-rabbit-')
        test.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)
        self.port = daemons.free_port()
        self.dist_port = daemons.free_port()
        self.nodename = 'cyborgtest%d@localhost' % self.port
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % self.port
        self.daemon = None
        self.problem = None
        self._starts = 0
        # Runs before the directory is removed, whatever the test did.
        test.addCleanup(self.kill)
        self._kill_orphans()
        if shutil.which('rabbitmq-server') is None:
            self.problem = 'rabbitmq-server is not installed'
            return
        for name in ('mnesia', 'log'):
            os.makedirs(os.path.join(self.directory, name), exist_ok=True)
        for name, text in (('enabled_plugins', '[].\n'),
                           ('rabbitmq.conf', '')):
            with open(os.path.join(self.directory, name), 'w') as f:
                f.write(text)
        self._own_by_rabbitmq_user()

    def _own_by_rabbitmq_user(self):
        """Run as root, rabbitmq-server drops to the rabbitmq user, which
        must be able to write the node's directories."""
        if os.geteuid() != 0:
            return
        try:
            user = pwd.getpwnam('rabbitmq')
        except KeyError:
            return
        for root, dirs, files in os.walk(self.directory):
            for name in [root] + [os.path.join(root, n)
                                  for n in dirs + files]:
                os.chown(name, user.pw_uid, user.pw_gid)

    def _environment(self):
        base = self.directory
        return {
            'RABBITMQ_NODENAME': self.nodename,
            # Whose node it is, for _kill_orphans.
            'CYBORG_TEST_RABBIT_OWNER': str(os.getpid()),
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port),
            'RABBITMQ_DIST_PORT': str(self.dist_port),
            'RABBITMQ_MNESIA_BASE': os.path.join(base, 'mnesia'),
            'RABBITMQ_FEATURE_FLAGS_FILE': os.path.join(
                base, 'mnesia', 'feature_flags'),
            'RABBITMQ_LOG_BASE': os.path.join(base, 'log'),
            'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(
                base, 'enabled_plugins'),
            'RABBITMQ_CONFIG_FILE': os.path.join(base, 'rabbitmq'),
            'RABBITMQ_PID_FILE': os.path.join(base, 'pid'),
        }

    def answers(self):
        try:
            with socket.create_connection(('127.0.0.1', self.port),
                                          timeout=1):
                return True
        except OSError:
            return False

    def start(self):
        """Start the node; False (with ``problem`` set) if it did not
        accept connections in time."""
        self._starts += 1
        self.daemon = daemons.Daemon(
            self.test, 'rabbitmq-%d' % self._starts, [],
            os.path.join(self.directory, 'out-%d.log' % self._starts),
            command=['rabbitmq-server'], env=self._environment())
        deadline = time.monotonic() + self.START_TIMEOUT
        while time.monotonic() < deadline:
            if self.answers():
                return True
            if not self.daemon.running():
                break
            time.sleep(0.2)
        self.problem = 'a private rabbitmq-server did not start:\n%s' % (
            self.daemon.output()[-2000:])
        self.kill()
        return False

    def node_pids(self):
        """The live processes of this node, in whatever session or process
        group: those with its node name in their environment, or its
        directory on their command line."""
        name = ('RABBITMQ_NODENAME=%s' % self.nodename).encode()
        directory = self.directory.encode()
        return [pid for pid in _pids() if pid != os.getpid() and (
            name in _proc_entries(pid, 'environ') or
            any(directory in arg for arg in _proc_entries(pid, 'cmdline')))]

    def kill(self):
        """Stop the node as a crash would: SIGKILL to the daemon's process
        group and to every process of the node, and wait until none is
        left, so that the node can be started again on the same ports."""
        if self.daemon is not None:
            self.daemon.kill()
        _sigkill_until_gone(self.node_pids, self.KILL_TIMEOUT,
                            'the private RabbitMQ node %s' % self.nodename)

    @classmethod
    def started(cls, test):
        """A started node of ``test``'s own; the test is skipped (or
        fails under CYBORG_TEST_REQUIRE_SERVICES) where none can run."""
        rabbit = cls(test)
        if rabbit.problem is None:
            rabbit.start()
        if rabbit.problem is not None:
            services.unavailable(test, rabbit.problem)
        return rabbit

    @classmethod
    def _kill_orphans(cls):
        """Kill the private nodes left by test processes that are gone (a
        test runner killed before its cleanups); nodes of live test
        processes, and the shared node, are not touched."""
        def orphans():
            found = []
            for pid in _pids():
                for entry in _proc_entries(pid, 'environ'):
                    key, _, owner = entry.partition(b'=')
                    if (key == b'CYBORG_TEST_RABBIT_OWNER' and
                            owner.isdigit() and not _alive(int(owner))):
                        found.append(pid)
            return found
        _sigkill_until_gone(orphans, cls.KILL_TIMEOUT,
                            'private RabbitMQ nodes of finished tests')
