"""Serving for real: the cheroot server in process, ``cyborg-api`` as a
subprocess with one and two workers, and the WSGI module."""

import os
import signal
import socket
import subprocess
import sys
import time

import fixtures
import requests
from oslo_serialization import jsonutils

from cyborg.api import app as api_app
from cyborg.api import server
from cyborg.tests import base
from cyborg.tests import fixtures as cyborg_fixtures
from cyborg.tests.functional import daemons

BIN_DIR = os.path.dirname(sys.executable)
START_TIMEOUT = 30
STOP_TIMEOUT = 10


def listening_sockets(port):
    """How many sockets listen on ``port`` (IPv4, any address)."""
    count = 0
    with open('/proc/net/tcp') as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == '0A' and int(local.split(':')[1], 16) == port:
                count += 1
    return count


def wait_for_v2(url, process):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError('exited with %s' % process.returncode)
        try:
            return requests.get(url + '/v2', timeout=2)
        except requests.ConnectionError:
            time.sleep(0.1)
    raise AssertionError('%s did not answer in %s s' % (url, START_TIMEOUT))


class WSGIServerTest(base.TestCase):

    def test_serves_on_port_zero_and_stops(self):
        self.flags(auth_strategy='noauth')
        wsgi_server = server.WSGIServer(api_app.setup_app(self.conf),
                                        '127.0.0.1', 0, 2)
        wsgi_server.start()
        self.addCleanup(wsgi_server.stop)
        self.assertNotEqual(0, wsgi_server.port)
        url = 'http://127.0.0.1:%d' % wsgi_server.port
        response = requests.get(url + '/v2/')
        self.assertEqual(200, response.status_code)
        self.assertEqual(url + '/v2/', response.json()['links'][0]['href'])
        started = time.monotonic()
        wsgi_server.stop()
        wsgi_server.wait()
        self.assertLess(time.monotonic() - started, STOP_TIMEOUT)
        self.assertRaises(requests.ConnectionError, requests.get, url)

    def test_access_log_line(self):
        """cheroot closes the body, and the line is written then."""
        self.flags(auth_strategy='noauth')
        log = self.useFixture(fixtures.FakeLogger(
            'cyborg.api.middleware.access_log', format='%(message)s'))
        wsgi_server = server.WSGIServer(api_app.setup_app(self.conf),
                                        '127.0.0.1', 0, 2)
        wsgi_server.start()
        self.addCleanup(wsgi_server.stop)
        url = 'http://127.0.0.1:%d' % wsgi_server.port
        response = requests.get(url + '/v2/hosts?x=1', headers={
            'X-Auth-Token': 'admin'})
        self.assertEqual(404, response.status_code)
        wsgi_server.stop()
        wsgi_server.wait()
        self.assertRegex(log.output, r'^127\.0\.0\.1 "GET /v2/hosts\?x=1 '
                         r'HTTP/1\.1" status: 404 len: %d time: \d+\.\d{7}\n$'
                         % len(response.content))

    def test_port_in_use(self):
        with socket.socket() as taken:
            taken.bind(('127.0.0.1', 0))
            taken.listen()
            port = taken.getsockname()[1]
            for start in (
                    lambda: server.listen('127.0.0.1', port),
                    server.WSGIServer(lambda e, s: [], '127.0.0.1', port,
                                      1).start):
                error = self.assertRaises(server.CannotListen, start)
                self.assertEqual(
                    'cannot listen on 127.0.0.1:%d: Address already in use '
                    '(another process listens on it; see [api] host_ip and '
                    'port)' % port, str(error))
        self.assertEqual('[::1]:80', server.address('::1', 80))

    def test_servers_that_ask_share_a_port(self):
        """The benchmarks' Placement workers: each its own socket on one
        port, with SO_REUSEPORT, which nothing else gets."""
        first = server.WSGIServer(echo_app, '127.0.0.1', daemons.free_port(),
                                  1, reuse_port=True)
        first.start()
        self.addCleanup(first.stop)
        second = server.WSGIServer(echo_app, '127.0.0.1', first.port, 1,
                                   reuse_port=True)
        second.start()
        self.addCleanup(second.stop)
        self.assertEqual(2, listening_sockets(first.port))
        self.assertRaises(server.CannotListen, server.listen, '127.0.0.1',
                          first.port)

    def test_workers_share_one_listening_socket(self):
        """What the workers of cyborg-api do: each serves the socket its
        parent made."""
        listener = server.listen('127.0.0.1', 0)
        self.addCleanup(listener.close)
        port = listener.getsockname()[1]
        servers = [server.WSGIServer(echo_app, '127.0.0.1', port, 2,
                                     listener=listener) for _ in range(2)]
        for one in servers:
            one.start()
            self.addCleanup(one.stop)
            self.assertEqual(port, one.port)
        self.assertEqual(1, listening_sockets(port))
        for _ in range(10):
            with requests.Session() as session:
                self.assertEqual(200, session.get(
                    'http://127.0.0.1:%d/x' % port, timeout=5).status_code)

    def test_default_workers(self):
        self.assertTrue(1 <= server.default_workers() <= 4)


# A client like Nova's services: it reads a version document in the parent
# process, forks two workers, and each worker then sends requests on the
# session it inherited, both starting at once. Each request carries its
# own id, which the answer must echo. Exits 0 if every answer was its own.
FORKING_CLIENT = """
import os, sys
import requests
url, path = sys.argv[1], sys.argv[2]
session = requests.Session()
session.get(url + path, timeout=5).raise_for_status()
start, go = os.pipe()
workers = []
for worker in range(4):
    pid = os.fork()
    if pid == 0:
        os.close(go)
        os.read(start, 1)
        try:
            for n in range(50):
                tag = '%d-%d' % (worker, n)
                answer = session.get(url + '/echo', params={'tag': tag},
                                     timeout=5).json()
                if answer['tag'] != tag:
                    print('worker %d got %s for %s' % (worker, answer['tag'],
                                                      tag), flush=True)
                    os._exit(1)
        except Exception as exc:
            print('worker %d: %r' % (worker, exc), flush=True)
            os._exit(1)
        os._exit(0)
    workers.append(pid)
os.close(start)
os.close(go)
sys.exit(max(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
             for pid in workers))
"""

# The same client, step by step: after the first request, a forked child
# sends one request, then the parent (while the child still holds what it
# inherited, so that no port is used twice); prints the client ports the
# server saw for the two, the same port when both spoke on one socket.
SHARING_CLIENT = """
import os, sys
import requests
url, path = sys.argv[1], sys.argv[2]
session = requests.Session()
session.get(url + path, timeout=5).raise_for_status()
told, tell = os.pipe()
done, finish = os.pipe()
pid = os.fork()
if pid == 0:
    port = session.get(url + '/echo', params={'tag': 'child', 'port': 1},
                       timeout=5).json()['port']
    os.write(tell, port.encode() + b'\\n')
    os.read(done, 1)
    os._exit(0)
child = os.read(told, 64).decode().strip()
parent = session.get(url + '/echo', params={'tag': 'parent', 'port': 1},
                     timeout=5).json()['port']
os.write(finish, b'x')
os.waitpid(pid, 0)
print(child, parent)
"""


def echo_app(environ, start_response):
    """Answers every path with its query's ``tag`` and 16 KiB of padding
    (a response larger than one read), and the client's port when the
    query has ``port``."""
    query = dict(part.split('=', 1)
                 for part in environ.get('QUERY_STRING', '').split('&')
                 if '=' in part)
    answer = {'tag': query.get('tag'), 'padding': 'x' * 16384}
    if 'port' in query:
        answer['port'] = environ.get('REMOTE_PORT')
    body = jsonutils.dump_as_bytes(answer)
    start_response('200 OK', [('Content-Type', 'application/json'),
                              ('Content-Length', str(len(body)))])
    return [body]


class VersionDocumentTest(base.TestCase):
    """A version document closes its connection; other answers keep it."""

    def setUp(self):
        super().setUp()
        self.server = server.WSGIServer(echo_app, '127.0.0.1', 0, 4)
        self.server.start()
        self.addCleanup(self.server.stop)
        self.url = 'http://127.0.0.1:%d' % self.server.port

    def _exchange(self, method, path):
        """Sends one HTTP/1.1 request on a new socket; returns the
        response's head and whether the server then closed the socket
        (had it sent more than the response, that is not closed)."""
        sock = socket.create_connection(('127.0.0.1', self.server.port),
                                        timeout=5)
        self.addCleanup(sock.close)
        sock.sendall(('%s %s HTTP/1.1\r\nHost: test\r\n\r\n'
                      % (method, path)).encode())
        received = b''
        while b'\r\n\r\n' not in received:
            received += sock.recv(65536)
        head, body = received.split(b'\r\n\r\n', 1)
        length = 0 if method == 'HEAD' else int(
            [line.split(b':')[1] for line in head.split(b'\r\n')
             if line.lower().startswith(b'content-length:')][0])
        while len(body) < length:
            body += sock.recv(65536)
        sock.settimeout(1)
        try:
            closed = sock.recv(1) == b''
        except TimeoutError:
            closed = False
        return head.decode().lower(), closed

    def test_roots_close_the_connection(self):
        for method, path in [('GET', '/'), ('GET', '/v2'), ('GET', '/v2/'),
                             ('HEAD', '/'), ('GET', '/placement'),
                             ('GET', '/placement/')]:
            head, closed = self._exchange(method, path)
            self.assertIn('connection: close', head, (method, path))
            self.assertTrue(closed, (method, path))

    def test_other_answers_keep_the_connection(self):
        for method, path in [('GET', '/v2/device_profiles'),
                             ('GET', '/placement/resource_providers'),
                             ('POST', '/v2')]:
            head, closed = self._exchange(method, path)
            self.assertNotIn('connection: close', head, (method, path))
            self.assertFalse(closed, (method, path))

    def test_head_gets_no_body(self):
        """The app returns a body to HEAD as well: the server sends its
        length but not the body, which the client would otherwise read as
        the next response on the connection."""
        session = requests.Session()
        self.addCleanup(session.close)
        head = session.head(self.url + '/v2/device_profiles', timeout=5)
        self.assertEqual(200, head.status_code)
        self.assertEqual('16412', head.headers['Content-Length'])
        self.assertEqual(b'', head.content)
        answer = session.get(self.url + '/v2/device_profiles',
                             params={'tag': 'next'}, timeout=5)
        self.assertEqual('next', answer.json()['tag'])

    def _forking_client(self, path):
        return subprocess.run(
            [sys.executable, '-c', FORKING_CLIENT, self.url, path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=120)

    def test_workers_forked_after_discovery_get_their_own_answers(self):
        result = self._forking_client('/placement')
        self.assertEqual(0, result.returncode, result.stdout)

    def _ports(self, path):
        result = subprocess.run(
            [sys.executable, '-c', SHARING_CLIENT, self.url, path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=120)
        self.assertEqual(0, result.returncode, result.stdout)
        child, parent = result.stdout.split()
        return child, parent

    def test_workers_forked_after_discovery_have_sockets_of_their_own(self):
        child, parent = self._ports('/placement')
        self.assertNotEqual(child, parent)

    def test_workers_forked_after_a_kept_answer_share_its_socket(self):
        """What the tests above guard against: after a request the server
        keeps alive, the forked workers send on one socket, where two at
        once read each other's answers. (Whether the workers of the
        forking client collide depends on how they are scheduled; that
        they share the socket does not.)"""
        child, parent = self._ports('/placement/resource_providers')
        self.assertEqual(child, parent)


class CyborgAPIProcess(base.TestCase):
    """Runs the console script with a config file of its own."""

    def _config(self, **api):
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'cyborg.conf')
        lines = ['[DEFAULT]', 'auth_strategy = noauth',
                 'transport_url = fake:/', '[database]',
                 'connection = ' + self._database().url, '[api]']
        lines += ['%s = %s' % item for item in sorted(api.items())]
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        return path

    def _database(self):
        """A database at head (the API refuses to start without one), one
        per test: the fixture patches the engine of this process, once."""
        if getattr(self, '_db', None) is None:
            self._db = self.useFixture(cyborg_fixtures.Database(self,
                                                                'sqlite'))
        return self._db

    def _start(self, workers, port=None, stderr=subprocess.STDOUT):
        """``cyborg-api`` on ``port`` (a free one by default); its output
        goes to a log file, its standard error where ``stderr`` says."""
        port = port or daemons.free_port()
        config = self._config(host_ip='127.0.0.1', port=port,
                              api_workers=workers)
        script = os.path.join(BIN_DIR, 'cyborg-api')
        command = ([script] if os.path.exists(script)
                   else [sys.executable, '-m', 'cyborg.cmd.api'])
        log = open(os.path.join(os.path.dirname(config), 'log'), 'w+')
        self.addCleanup(log.close)
        process = subprocess.Popen(command + ['--config-file', config],
                                   stdout=log, stderr=stderr, text=True)
        self.addCleanup(self._kill, process)
        return process, 'http://127.0.0.1:%d' % port, port

    @staticmethod
    def _kill(process):
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()

    def _stop(self, process):
        """SIGTERM: the server exits cleanly, well before its graceful
        shutdown timeout would end a server that ignored the signal."""
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(STOP_TIMEOUT))


class CyborgAPITest(CyborgAPIProcess):

    def test_serves_and_stops_on_sigterm(self):
        process, url, _port = self._start(workers=1)
        response = wait_for_v2(url, process)
        self.assertEqual(200, response.status_code)
        self.assertEqual('v2.0', response.json()['id'])
        self.assertEqual('accelerator 2.0',
                         response.headers['OpenStack-API-Version'])
        # One worker serves from the process itself: no launcher parent.
        self.assertEqual([], daemons.children(process.pid))
        self._stop(process)

    def test_two_workers(self):
        process, url, port = self._start(workers=2)
        wait_for_v2(url, process)
        deadline = time.monotonic() + START_TIMEOUT
        while (len(daemons.children(process.pid)) < 2
               and time.monotonic() < deadline):
            time.sleep(0.1)
        self.assertEqual(2, len(daemons.children(process.pid)))
        # One socket, the parent's, which both workers serve.
        self.assertEqual(1, listening_sockets(port))
        for _ in range(20):
            with requests.Session() as session:  # a new connection each
                self.assertEqual(200, session.get(url + '/v2').status_code)
        self._stop(process)
        self.assertEqual(0, listening_sockets(port))

    def _refused(self, port):
        """A ``cyborg-api`` started on ``port`` while it is taken: exits
        2 with one line that names the address."""
        process, _url, _port = self._start(workers=2, port=port,
                                           stderr=subprocess.PIPE)
        try:
            _out, err = process.communicate(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.fail('a cyborg-api on the taken port %d still runs, '
                      'listening beside the other' % port)
        self.assertEqual(2, process.returncode, err)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertRegex(err, r'^cyborg-api: error: cannot listen on '
                         r'127\.0\.0\.1:%d: Address already in use' % port)

    def test_a_second_cyborg_api_on_the_port_exits_2(self):
        # Two workers each: what once shared the port (SO_REUSEPORT).
        process, url, port = self._start(workers=2)
        wait_for_v2(url, process)
        self._refused(port)
        # The first goes on, alone on the port.
        self.assertEqual(1, listening_sockets(port))
        for _ in range(8):
            with requests.Session() as session:
                self.assertEqual(200, session.get(url + '/v2').status_code)
        self._stop(process)

    def test_a_foreign_listener_on_the_port(self):
        # A plain socket, and one that would share the port.
        for shares in (False, True):
            with socket.socket() as taken:
                taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT,
                                 shares)
                taken.bind(('127.0.0.1', daemons.free_port()))
                taken.listen()
                self._refused(taken.getsockname()[1])


class WSGIModuleTest(base.TestCase):

    def test_application_from_config_file(self):
        config = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'cyborg.conf')
        db = self.useFixture(cyborg_fixtures.Database(self, 'sqlite'))
        with open(config, 'w') as f:
            f.write('[DEFAULT]\nauth_strategy = noauth\n'
                    'transport_url = fake:/\n'
                    '[database]\nconnection = %s\n'
                    '[api]\npublic_endpoint = http://api.test/acc\n'
                    % db.url)
        code = ('import webob\n'
                'from cyborg.wsgi import api\n'
                'webob.Request.blank("/v2/x").get_response(api.application)'
                '.body\n'
                'r = webob.Request.blank("/v2").get_response(api.application)'
                '\n'
                'from cyborg.db import api as db_api\n'
                'print("database configured:", bool(db_api._CONFIGURED))\n'
                'print(r.status_int, r.json["links"][0]["href"])\n')
        env = dict(os.environ, CYBORG_CONFIG_FILE=config)
        result = subprocess.run([sys.executable, '-c', code], env=env,
                                capture_output=True, text=True,
                                timeout=START_TIMEOUT, check=True)
        self.assertEqual('200 http://api.test/acc/v2/',
                         result.stdout.strip().splitlines()[-1])
        # Its database engines are set up as the conductor's.
        self.assertIn('database configured: True', result.stdout)
        # The access log is part of the application.
        self.assertIn('"GET /v2/x HTTP/1.0" status: 404 len: ',
                      result.stdout + result.stderr)
