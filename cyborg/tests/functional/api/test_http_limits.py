"""The API server bounds what a client makes it hold before it is
authenticated: header size and count, the time headers take, the number
of connections; and an unread body does not cost the client its answer.
Every test runs a cheroot server in process on a free port."""

import json
import socket
import threading
import time

import requests

from cyborg.api import app as api_app
from cyborg.api import http_limits
from cyborg.api import server
from cyborg.tests import base
from cyborg.tests.functional.api import base as api_base

MiB = 1024 * 1024
LIMITS = http_limits.Limits(header_size=4096, header_count=20,
                            header_timeout=2.0, connections=50,
                            discarded_body=16 * MiB)


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

    def connect(self):
        sock = socket.create_connection(('127.0.0.1', self.server.port),
                                        timeout=10)
        self.addCleanup(sock.close)
        return sock


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
