"""The API server bounds what a client makes it hold before it is
authenticated: header size and count, the time headers and bodies take,
idle connections, the number of connections in all and per client; and
an unread body does not cost the client its answer. Every test runs a
cheroot server in process on a free port."""

import json
import signal
import socket
import subprocess
import sys
import threading
import time

import requests

from cyborg.api import app as api_app
from cyborg.api import http_limits
from cyborg.api import server
from cyborg.tests import base
from cyborg.tests.functional.api import base as api_base
from cyborg.tests.functional.api import test_server

MiB = 1024 * 1024
LIMITS = http_limits.Limits(header_size=4096, header_count=20,
                            header_timeout=2.0, connections=50,
                            discarded_body=16 * MiB, idle_timeout=5.0,
                            body_timeout=2.0, per_client=0, reserve=0,
                            gathered_body=114688)


def hello_app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain'),
                              ('Content-Length', '5')])
    return [b'hello']


def read_answer(sock, timeout=10):
    """What the server sends until it closes (or ``timeout``)."""
    sock.settimeout(timeout)
    received = b''
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return received
            received += data
    except (TimeoutError, ConnectionResetError):
        return received


class _ServerTest(base.TestCase):

    limits = LIMITS
    threads = 2

    def setUp(self):
        super().setUp()
        self.server = server.WSGIServer(self.app(), '127.0.0.1', 0,
                                        self.threads, limits=self.limits)
        self.server.start()
        self.addCleanup(self.server.stop)
        self.url = 'http://127.0.0.1:%d' % self.server.port

    def app(self):
        return hello_app

    def connect(self, source='127.0.0.1'):
        """A socket to the server from ``source`` (any 127.0.0.0/8
        address: other clients, to the server)."""
        sock = socket.create_connection(('127.0.0.1', self.server.port),
                                        timeout=10,
                                        source_address=(source, 0))
        self.addCleanup(sock.close)
        return sock

    def restart(self, app=None, **limits):
        self.server.stop()
        self.server = server.WSGIServer(app or self.app(), '127.0.0.1', 0,
                                        self.threads,
                                        limits=self.limits._replace(**limits))
        self.server.start()
        self.addCleanup(self.server.stop)
        self.url = 'http://127.0.0.1:%d' % self.server.port


class HeaderLimitsTest(_ServerTest):

    def test_headers_over_the_size_get_431(self):
        sock = self.connect()
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n'
                     % (b'a' * 5000))
        answer = read_answer(sock)
        self.assertTrue(answer.startswith(
            b'HTTP/1.1 431 Request Header Fields Too Large'), answer)
        self.assertIn(b'[api] max_request_header_size', answer)

    def test_a_64_mib_header_is_refused_early(self):
        sock = self.connect()
        sent, error = 0, None
        chunk = b'a' * 65536
        try:
            sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\nX-Big: ')
            while sent < 64 * MiB:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError as e:
            error = e
        # The server stopped reading after its limit and closed: the
        # client could not send its 64 MiB (socket buffers hold a few).
        self.assertIsNotNone(error)
        self.assertLess(sent, 16 * MiB)
        self.assertEqual(200, requests.get(self.url, timeout=5).status_code)

    def test_too_many_header_lines_get_400(self):
        sock = self.connect()
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n' + b''.join(
            b'X-H%d: v\r\n' % i for i in range(30)) + b'\r\n')
        answer = read_answer(sock)
        self.assertTrue(answer.startswith(b'HTTP/1.1 400 Bad Request'),
                        answer)
        self.assertIn(b'max_request_header_count', answer)

    def test_lines_without_cr_are_refused_at_once(self):
        sock = self.connect()
        sock.sendall(b'GET / HTTP/1.1\nHost: x\n\n')
        # Answered by cheroot's parser, not left to header_timeout.
        answer = read_answer(sock, timeout=LIMITS.header_timeout / 2)
        self.assertTrue(answer.startswith(b'HTTP/1.1 400 Bad Request'),
                        answer)

    def test_headers_at_the_limits_pass(self):
        headers = {'X-H%d' % i: 'v' for i in range(12)}
        headers['X-Big'] = 'a' * 3000
        response = requests.get(self.url, headers=headers, timeout=5)
        self.assertEqual(200, response.status_code)


class SlowClientsTest(_ServerTest):

    def slowloris(self, count, stop):
        """``count`` connections that send a request line, then a header
        line every 0.3 s, until ``stop`` is set; their answers."""
        sockets = [self.connect() for _ in range(count)]
        for sock in sockets:
            sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n')

        def drip():
            while not stop.is_set():
                for sock in sockets:
                    try:
                        sock.sendall(b'X-Slow: 1\r\n')
                    except OSError:
                        pass
                stop.wait(0.3)

        thread = threading.Thread(target=drip, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 5)
        self.addCleanup(stop.set)
        return sockets

    def test_slow_clients_hold_no_thread_and_are_cut_off(self):
        stop = threading.Event()
        # Ten times the server's threads.
        sockets = self.slowloris(20, stop)
        time.sleep(0.5)
        for _ in range(5):
            response = requests.get(self.url, timeout=1.5)
            self.assertEqual(200, response.status_code)
        # Past header_timeout, each gets 408 and is closed.
        answers = [read_answer(sock, timeout=10) for sock in sockets]
        stop.set()
        for answer in answers:
            self.assertTrue(answer.startswith(
                b'HTTP/1.1 408 Request Timeout'), answer)

    def test_connections_over_the_limit_get_503(self):
        self.server.stop()
        self.server = server.WSGIServer(
            hello_app, '127.0.0.1', 0, 2,
            limits=LIMITS._replace(connections=3))
        self.server.start()
        self.addCleanup(self.server.stop)
        idle = [self.connect() for _ in range(3)]
        sock = self.connect()
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        answer = read_answer(sock)
        self.assertTrue(answer.startswith(
            b'HTTP/1.1 503 Service Unavailable'), answer)
        for one in idle:
            one.close()
        # Closed connections count no more.
        deadline = time.monotonic() + 10
        while True:
            try:
                response = requests.get('http://127.0.0.1:%d'
                                        % self.server.port, timeout=5)
                if response.status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)


class LargeBodyTest(_ServerTest):
    """A body over [oslo_middleware] max_request_body_size, sent whole by
    python-requests before it reads anything, gets a 413 it can read."""

    threads = 4

    def app(self):
        self.flags(auth_strategy='noauth')
        return api_app.setup_app(self.conf)

    # Pretty-printed JSON: lines that the server, had it not read the
    # body, would take for the next request's.
    BODY = json.dumps([{'name': 'p%d' % i, 'groups': [{}]}
                       for i in range(5 * MiB // 40)], indent=1).encode()
    HEADERS = {'Content-Type': 'application/json',
               'X-Auth-Token': 'admin:%s' % api_base.PROJECT,
               'X-Roles': 'admin'}

    def test_the_whole_body_is_read_before_the_connection_closes(self):
        # A client that sends everything before it reads: the server must
        # not reset the connection under it.
        sock = self.connect()
        sock.sendall(b'POST /v2/device_profiles HTTP/1.1\r\nHost: x\r\n'
                     + b''.join(b'%s: %s\r\n' % (k.encode(), v.encode())
                                for k, v in self.HEADERS.items())
                     + b'Content-Length: %d\r\n\r\n' % len(self.BODY)
                     + self.BODY)
        answer = read_answer(sock)
        self.assertTrue(answer.startswith(
            b'HTTP/1.1 413 Request Entity Too Large'), answer[:200])

    def test_five_megabytes_get_a_readable_413(self):
        body, headers = self.BODY, self.HEADERS
        self.assertGreater(len(body), 5 * MiB)
        for path in ('/v2/device_profiles', '/v2/accelerator_requests',
                     '/v2/attributes'):
            response = requests.post(self.url + path, data=body,
                                     headers=headers, timeout=30)
            self.assertEqual(413, response.status_code, path)
            self.assertIn('max_request_body_size', response.text, path)
        # The server is fine afterwards.
        self.assertEqual(200, requests.get(self.url + '/v2',
                                           timeout=5).status_code)


def reading_app(environ, start_response):
    """Reads the whole body, answers its length."""
    body = environ['wsgi.input'].read()
    start_response('200 OK', [('Content-Type', 'text/plain'),
                              ('Content-Length', str(len(str(len(body)))))])
    return [str(len(body)).encode()]


POST = (b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n')


class SlowBodyTest(_ServerTest):
    """Bodies get body_timeout in all, whoever reads them."""

    def drip(self, sockets, stop, data=b'a'):
        def send():
            while not stop.wait(0.3):
                for sock in sockets:
                    try:
                        sock.sendall(data)
                    except OSError:
                        pass
        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 5)
        self.addCleanup(stop.set)

    def assert_cut_in_time(self, sock, started, status=b'408'):
        answer = read_answer(sock, timeout=10)
        took = time.monotonic() - started
        self.assertTrue(answer.startswith(b'HTTP/1.1 ' + status), answer)
        self.assertLess(took, LIMITS.body_timeout + 1.5)
        return answer

    def test_slow_bodies_hold_no_thread_and_get_408(self):
        stop = threading.Event()
        # Ten times the server's threads, each a byte every 0.3 s.
        sockets = [self.connect() for _ in range(20)]
        started = time.monotonic()
        for sock in sockets:
            sock.sendall(POST % 100000)
        self.drip(sockets, stop)
        for _ in range(5):
            response = requests.get(self.url, timeout=1)
            self.assertEqual(200, response.status_code)
        for sock in sockets:
            answer = self.assert_cut_in_time(sock, started)
            self.assertIn(b'[api] body_timeout', answer)

    def test_slow_chunked_bodies_too(self):
        self.restart(app=reading_app)
        sockets = [self.connect() for _ in range(6)]
        started = time.monotonic()
        for sock in sockets:
            sock.sendall(b'POST / HTTP/1.1\r\nHost: x\r\n'
                         b'Transfer-Encoding: chunked\r\n\r\n')
        self.drip(sockets, threading.Event(), data=b'1\r\na\r\n')
        self.assertEqual(200, requests.get(self.url, timeout=1).status_code)
        for sock in sockets:
            self.assert_cut_in_time(sock, started)

    def test_a_body_the_app_reads_gets_408(self):
        # Larger than the server gathers: read by the application itself,
        # from the socket.
        self.restart(app=reading_app, gathered_body=10)
        sock = self.connect()
        started = time.monotonic()
        sock.sendall(POST % 1000)
        self.drip([sock], threading.Event())
        self.assert_cut_in_time(sock, started)

    def test_a_discarded_body_gets_its_time_without_a_thread(self):
        # Larger than the server gathers; the app answers unread.
        self.restart(gathered_body=1000)
        sockets = [self.connect() for _ in range(4)]
        started = time.monotonic()
        for sock in sockets:
            sock.sendall(POST % 100000 + b'a' * 100)
        self.drip(sockets, threading.Event())
        for sock in sockets:
            answer = read_answer(sock, timeout=10)
            # Answered at once, then closed at the body's deadline.
            self.assertTrue(answer.startswith(b'HTTP/1.1 200 OK'), answer)
            self.assertIn(b'Connection: close', answer)
            self.assertLess(time.monotonic() - started,
                            LIMITS.body_timeout + 1.5)
        self.assertEqual(200, requests.get(self.url, timeout=1).status_code)

    def test_a_whole_body_is_read(self):
        self.restart(app=reading_app)
        for size in (0, 1, 100000, 200000):
            response = requests.post(self.url, data=b'b' * size, timeout=5)
            self.assertEqual(str(size), response.text)
        # Chunked, with an extension and trailers.
        response = requests.post(self.url, data=iter([b'ab', b'c' * 70000]),
                                 timeout=5)
        self.assertEqual('70002', response.text)
        sock = self.connect()
        sock.sendall(b'POST / HTTP/1.1\r\nHost: x\r\n'
                     b'Transfer-Encoding: chunked\r\n\r\n'
                     b'3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n')
        self.assertTrue(read_answer(sock, timeout=1).endswith(b'\r\n\r\n3'))
        # Sent in pieces, within its time.
        sock = self.connect()
        sock.sendall(POST % 3 + b'a')
        time.sleep(0.3)
        sock.sendall(b'bc')
        self.assertTrue(read_answer(sock, timeout=1).endswith(b'\r\n\r\n3'))


class IdleConnectionTest(_ServerTest):

    limits = LIMITS._replace(idle_timeout=0.5)

    def test_silent_connections_go_sooner_than_slow_headers(self):
        silent, slow = self.connect(), self.connect()
        started = time.monotonic()
        slow.sendall(b'GET / HTTP/1.1\r\n')
        # Closed without an answer, after idle_timeout.
        self.assertEqual(b'', read_answer(silent))
        self.assertLess(time.monotonic() - started, 1.5)
        answer = read_answer(slow)
        self.assertTrue(answer.startswith(b'HTTP/1.1 408'), answer)
        self.assertGreater(time.monotonic() - started,
                           LIMITS.header_timeout - 0.5)

    def test_a_kept_connection_idles_between_requests(self):
        sock = self.connect()
        # Not a version document, whose answer closes the connection.
        request = b'GET /x HTTP/1.1\r\nHost: x\r\n\r\n'
        sock.settimeout(5)
        for _ in range(3):
            sock.sendall(request)
            answer = b''
            while not answer.endswith(b'hello'):
                data = sock.recv(65536)
                self.assertNotEqual(b'', data)
                answer += data
            time.sleep(0.2)
        started = time.monotonic()
        self.assertEqual(b'', read_answer(sock))
        self.assertLess(time.monotonic() - started, 1.5)


    def test_connections_are_kept_beside_many_idle_ones(self):
        # More than cheroot's default limit of kept connections (10).
        self.restart(idle_timeout=5.0)
        for _ in range(15):
            self.connect()
        time.sleep(0.3)
        with requests.Session() as session:
            for _ in range(2):
                response = session.get(self.url + '/x', timeout=5)
                self.assertNotEqual('close',
                                    response.headers.get('Connection'))


class ClientShareTest(_ServerTest):

    limits = LIMITS._replace(connections=20, per_client=3, reserve=5)

    def test_one_address_gets_its_share_the_others_get_in(self):
        held = [self.connect('127.0.0.2') for _ in range(3)]
        sock = self.connect('127.0.0.2')
        answer = read_answer(sock)
        self.assertTrue(answer.startswith(b'HTTP/1.1 503'), answer)
        self.assertIn(b'[api] max_connections_per_client', answer)
        # Another address is served.
        other = self.connect('127.0.0.3')
        other.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        other.settimeout(5)
        self.assertTrue(other.recv(65536).startswith(b'HTTP/1.1 200'))
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 10
        while True:   # closed, they count no more
            sock = self.connect('127.0.0.2')
            sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
            if read_answer(sock, timeout=5).startswith(b'HTTP/1.1 200'):
                break
            self.assertLess(time.monotonic() - deadline, 0)
            time.sleep(0.1)

    def test_the_reserve_is_kept_from_a_flood(self):
        # Shares of 10: two addresses take 15 of 20, where the reserve
        # begins; the one below its share gets no more, a newcomer does.
        self.restart(per_client=10)
        for source, count in (('127.0.0.10', 10), ('127.0.0.11', 5)):
            for _ in range(count):
                self.connect(source)
        time.sleep(0.5)   # all accepted
        answer = read_answer(self.connect('127.0.0.11'))
        self.assertTrue(answer.startswith(b'HTTP/1.1 503'), answer)
        self.assertIn(b'[api] connection_reserve', answer)
        newcomer = self.connect('127.0.0.99')
        newcomer.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        newcomer.settimeout(5)
        self.assertTrue(newcomer.recv(65536).startswith(b'HTTP/1.1 200'))


# The attack of issue 40, for ``seconds``: 20 connections that send the
# headers of a 100,000-byte body, then a byte of it every 2 s each; 400
# connections from another address that send nothing, each reopened when
# the server closes it (at most 200 a second). Prints "ready" once all
# are open, and what it saw at the end, as JSON.
ATTACKER = """
import json, selectors, socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
SOURCES = {'slow': '127.0.0.3', 'idle': '127.0.0.2'}
HEAD = (b'POST /v2/device_profiles HTTP/1.1\\r\\nHost: x\\r\\n'
        b'Content-Type: application/json\\r\\n'
        b'Content-Length: 100000\\r\\n\\r\\n')
selector = selectors.DefaultSelector()
seen = {'refused': 0, 'closed': 0, 'failed': 0}

def connect(kind):
    sock = socket.socket()
    try:
        sock.bind((SOURCES[kind], 0))
        sock.settimeout(5)
        sock.connect(('127.0.0.1', port))
        if kind == 'slow':
            sock.sendall(HEAD)
    except OSError:
        seen['failed'] += 1
        sock.close()
        return
    sock.setblocking(False)
    selector.register(sock, selectors.EVENT_READ, kind)

for kind, count in (('slow', 20), ('idle', 400)):
    for _ in range(count):
        connect(kind)
print('ready', flush=True)
end = time.monotonic() + seconds
drip = time.monotonic() + 2
while time.monotonic() < end:
    for key, _ in selector.select(timeout=0.1):
        try:
            answer = key.fileobj.recv(65536)
        except OSError:
            answer = b''
        seen['refused'] += answer.startswith(b'HTTP/1.1 503')
        seen['closed'] += 1
        selector.unregister(key.fileobj)
        key.fileobj.close()
        time.sleep(0.005)
        connect(key.data)
    if time.monotonic() >= drip:
        drip += 2
        for key in list(selector.get_map().values()):
            if key.data == 'slow':
                try:
                    key.fileobj.send(b'[')
                except OSError:
                    pass
kinds = [key.data for key in selector.get_map().values()]
seen.update(slow=kinds.count('slow'), idle=kinds.count('idle'))
print(json.dumps(seen), flush=True)
"""


class AttackTest(test_server.CyborgAPIProcess):
    """Issue 40's done-criterion: under slow bodies and a flood of idle
    connections, each of a normal client's requests is answered within a
    second, by a ``cyborg-api`` with the default limits."""

    #: How long the normal client measures, and the attack lasts.
    MEASURE = 15
    ATTACK = MEASURE + 10
    BOUND = 1.0

    def _attack(self, port):
        attacker = subprocess.Popen(
            [sys.executable, '-c', ATTACKER, str(port), str(self.ATTACK)],
            stdout=subprocess.PIPE, text=True)
        self.addCleanup(self._kill, attacker)
        self.addCleanup(attacker.stdout.close)
        self.assertEqual('ready', attacker.stdout.readline().strip())
        return attacker

    def test_a_normal_client_is_answered_under_attack(self):
        process, url, port = self._start(workers=1)
        test_server.wait_for_v2(url, process)
        attacker = self._attack(port)
        times, failures = [], []
        end = time.monotonic() + self.MEASURE
        while time.monotonic() < end:
            started = time.monotonic()
            try:
                # A new connection each time: a version document closes
                # its own.
                status = requests.get(url + '/v2', timeout=10).status_code
            except requests.RequestException as e:
                status = repr(e)
            times.append(time.monotonic() - started)
            if status != 200:
                failures.append(status)
            time.sleep(0.2)
        # Stopped with the attack on, it exits promptly.
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        self.assertEqual(0, process.wait(test_server.STOP_TIMEOUT))
        stopped = time.monotonic() - started
        seen = json.loads(attacker.stdout.readline())
        self.assertEqual([], failures)
        self.assertLess(max(times), self.BOUND,
                        'slowest of %d: %.2f s' % (len(times), max(times)))
        self.assertLess(stopped, 5)
        # The flood met its share: refused, not all held.
        self.assertGreater(seen['refused'], 0, seen)
        self.assertGreater(len(times), self.MEASURE * 2)
