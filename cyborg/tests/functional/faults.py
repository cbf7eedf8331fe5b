"""Breaking the services cyborg depends on, privately, in tests.

``TcpGate`` stands between cyborg and a server (the test's own database
on the shared MariaDB, say): closed, nothing listens on its port and
every connection through it is reset, exactly what cyborg sees when the
server stops; opened again, the server is back. The shared server itself
is never touched. ``PrivateRabbit`` is a RabbitMQ node of the test's own,
with a TLS listener if asked (its certificate from a ``TestCA``).
"""

import datetime
import ipaddress
import os
import pwd
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.oid import NameOID
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


def _write(path, data, mode=0o644):
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode),
              'wb') as f:
        f.write(data)
    return path


def _san(host):
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


class CertificateAuthority:
    """A certificate authority of a test's own: its certificate is
    ``path`` (PEM), its key stays in memory. Keys are EC P-256, quick to
    make; certificates are valid for a day."""

    def __init__(self, directory, name):
        self.name = x509.Name([x509.NameAttribute(
            NameOID.COMMON_NAME, 'cyborg test CA %s' % name)])
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.certificate = self._sign(self.name, self.key.public_key(), [
            (x509.BasicConstraints(ca=True, path_length=0), True),
            (x509.KeyUsage(
                digital_signature=False, content_commitment=False,
                key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), True)])
        self.path = _write(os.path.join(directory, '%s-ca.pem' % name),
                           self.certificate.public_bytes(
                               serialization.Encoding.PEM))

    def _sign(self, subject, public_key, extensions):
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (x509.CertificateBuilder()
                   .subject_name(subject).issuer_name(self.name)
                   .public_key(public_key)
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectKeyIdentifier
                                  .from_public_key(public_key), False)
                   .add_extension(x509.AuthorityKeyIdentifier
                                  .from_issuer_public_key(
                                      self.key.public_key()), False))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical)
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, directory, name, hosts):
        """A server certificate for ``hosts`` (names and IP addresses):
        the paths of its certificate and of its key (unencrypted, mode
        0600)."""
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = self._sign(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]),
            key.public_key(), [
                (x509.BasicConstraints(ca=False, path_length=None), True),
                (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                 False),
                (x509.SubjectAlternativeName([_san(h) for h in hosts]),
                 False)])
        return (_write(os.path.join(directory, name + '.pem'),
                       certificate.public_bytes(serialization.Encoding.PEM)),
                _write(os.path.join(directory, name + '.key'),
                       key.private_bytes(
                           serialization.Encoding.PEM,
                           serialization.PrivateFormat.PKCS8,
                           serialization.NoEncryption()), mode=0o600))


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

    With ``tls``, the node also listens for AMQP over TLS on ``tls_port``
    (``tls_url``), with a server certificate for 127.0.0.1 and localhost
    from a CA of its own (``ca``; its certificate is ``ca_file``).
    Clients present no certificate (the listener would verify one that
    is presented). The plain listener (``port``, ``url``) stays: the node
    is started and managed through it.
    """

    START_TIMEOUT = 60
    KILL_TIMEOUT = 30

    def __init__(self, test, tls=False):
        self.test = test
        # Not under the test's directory: run as root, the node runs as
        # the rabbitmq user, which must reach it.
        self.directory = tempfile.mkdtemp(prefix='cyborg-rabbit-')
        test.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)
        self.port = daemons.free_port()
        self.dist_port = daemons.free_port()
        self.nodename = 'cyborgtest%d@localhost' % self.port
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % self.port
        self.tls_port = self.ca = self.ca_file = self.tls_url = None
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
        config = self._tls_config() if tls else ''
        for name, text in (('enabled_plugins', '[].\n'),
                           ('rabbitmq.conf', config)):
            with open(os.path.join(self.directory, name), 'w') as f:
                f.write(text)
        self._own_by_rabbitmq_user()

    def _tls_config(self):
        """Make the CA and the server's certificate; the rabbitmq.conf
        lines (RabbitMQ 3.8 and later) of a TLS listener on loopback."""
        self.tls_port = daemons.free_port()
        self.tls_url = 'rabbit://guest:guest@127.0.0.1:%d/' % self.tls_port
        self.ca = CertificateAuthority(self.directory, 'broker')
        self.ca_file = self.ca.path
        certificate, key = self.ca.issue(self.directory, 'server',
                                         ['127.0.0.1', 'localhost'])
        return '\n'.join([
            'listeners.ssl.default = 127.0.0.1:%d' % self.tls_port,
            'ssl_options.cacertfile = ' + self.ca_file,
            'ssl_options.certfile = ' + certificate,
            'ssl_options.keyfile = ' + key,
            'ssl_options.verify = verify_peer',
            'ssl_options.fail_if_no_peer_cert = false', ''])

    def tls_options(self, ca_file=None):
        """The ``[oslo_messaging_rabbit]`` options of a client of
        ``tls_url`` that verifies the broker against ``ca_file`` (this
        node's CA unless given); none for a node without TLS."""
        if self.tls_port is None:
            return {}
        return {'ssl': True, 'ssl_ca_file': ca_file or self.ca_file}

    def user_url(self, user, password):
        """The URL of ``user`` on this node: on the TLS port if it has
        one (the plain one stays open for its own management)."""
        return 'rabbit://%s:%s@127.0.0.1:%d/' % (
            user, password, self.tls_port or self.port)

    def ctl(self, *args):
        """``rabbitmqctl`` on this node; its output."""
        env = dict(os.environ, **self._environment())
        return subprocess.run(['rabbitmqctl', '-n', self.nodename, *args],
                              env=env, check=True, capture_output=True,
                              text=True).stdout

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
        """Whether it accepts connections (on both ports, with TLS)."""
        try:
            for port in filter(None, (self.port, self.tls_port)):
                with socket.create_connection(('127.0.0.1', port),
                                              timeout=1):
                    pass
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
    def started(cls, test, tls=False):
        """A started node of ``test``'s own (with a TLS listener if
        ``tls``); the test is skipped (or fails under
        CYBORG_TEST_REQUIRE_SERVICES) where none can run."""
        rabbit = cls(test, tls=tls)
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
