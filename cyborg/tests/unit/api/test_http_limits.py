"""The API server's edge without a server: who gets a connection, how
much body to gather, a body read against its deadline; and the names of
cheroot that cyborg.api.http_limits relies on (some private): a cheroot
release that changes any of them fails here first."""

import errno
import inspect
import socket
import threading
import time

from cheroot import connections
from cheroot import errors
from cheroot import makefile
from cheroot import server as cheroot_server
from cheroot.workers import threadpool

from cyborg.api import http_limits
from cyborg.api import server
from cyborg.tests import base


class AdmissionTest(base.TestCase):

    def fill(self, admission, client, count):
        for _ in range(count):
            self.assertIsNone(admission.admit(client))

    def test_the_limit_for_everyone(self):
        admission = http_limits.Admission(3)
        self.fill(admission, 'a', 2)
        self.fill(admission, 'b', 1)
        self.assertIn('[api] max_connections.', admission.admit('c'))
        admission.release('a')
        self.assertIsNone(admission.admit('c'))
        self.assertEqual(3, admission.total)

    def test_a_client_gets_its_share_and_no_more(self):
        admission = http_limits.Admission(100, per_client=10)
        self.fill(admission, '192.0.2.1', 10)
        refusal = admission.admit('192.0.2.1')
        self.assertIn('[api] max_connections_per_client', refusal)
        # Refused, it is not counted; the others get in.
        self.assertEqual(10, admission.total)
        self.fill(admission, '192.0.2.2', 10)
        admission.release('192.0.2.1')
        self.assertIsNone(admission.admit('192.0.2.1'))

    def test_no_share_with_zero(self):
        admission = http_limits.Admission(100)
        self.fill(admission, 'proxy', 100)

    def test_the_reserve_is_for_clients_that_hold_none(self):
        # 100 in all, the last 20 kept: past 80, only clients that hold
        # no connection get one.
        admission = http_limits.Admission(100, per_client=50, reserve=20)
        self.fill(admission, 'flood-1', 50)
        self.fill(admission, 'flood-2', 29)
        self.fill(admission, 'quiet', 1)
        self.assertEqual(80, admission.total)
        for client in ('flood-2', 'quiet'):
            self.assertIn('[api] connection_reserve',
                          admission.admit(client))
        self.assertIn('[api] max_connections_per_client',
                      admission.admit('flood-1'))
        for n in range(20):
            self.fill(admission, 'new-%d' % n, 1)
        self.assertIn('[api] max_connections.', admission.admit('other'))
        # Below the reserve again, clients that hold some get more.
        for n in range(20):
            admission.release('new-%d' % n)
        admission.release('flood-1')
        self.fill(admission, 'flood-2', 1)

    def test_a_lone_client_stops_at_the_reserve(self):
        admission = http_limits.Admission(10, reserve=4)
        self.fill(admission, 'a', 6)
        self.assertIn('[api] connection_reserve', admission.admit('a'))
        self.fill(admission, 'b', 1)

    def test_released_clients_are_forgotten(self):
        admission = http_limits.Admission(10, per_client=5)
        self.fill(admission, 'a', 2)
        admission.release('a')
        admission.release('a')
        self.assertEqual({}, dict(admission.held))
        self.assertEqual(0, admission.total)

    def test_concurrent_admissions_keep_the_count(self):
        admission = http_limits.Admission(10000, per_client=10000)

        def churn():
            for _ in range(2000):
                self.assertIsNone(admission.admit('a'))
                admission.release('a')
        threads = [threading.Thread(target=churn) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(0, admission.total)

    def test_clients_by_address(self):
        self.assertEqual('192.0.2.7', http_limits.client_of('192.0.2.7'))
        self.assertEqual('192.0.2.7',
                         http_limits.client_of('::ffff:192.0.2.7'))
        self.assertEqual('2001:db8:1:2::/64',
                         http_limits.client_of('2001:db8:1:2:a:b:c:d'))
        self.assertEqual('', http_limits.client_of(''))


class BodyLengthTest(base.TestCase):

    @staticmethod
    def length(*headers, limit=1000):
        head = b'\r\n'.join((b'POST /v2 HTTP/1.1', b'Host: x') + headers)
        return http_limits.body_length(head + b'\r\n\r\n', limit)

    def test_the_content_length_is_gathered(self):
        self.assertEqual(0, self.length())
        self.assertEqual(10, self.length(b'Content-Length: 10'))
        self.assertEqual(1000, self.length(b'content-length:1000'))

    def test_what_is_not_gathered(self):
        # Over the limit: the API refuses it unread.
        self.assertEqual(0, self.length(b'Content-Length: 1001'))
        self.assertEqual(0, self.length(b'Content-Length: 99999999999'
                                        b'99999999999999999999'))
        self.assertEqual(0, self.length(b'Content-Length: ten'))
        self.assertEqual(0, self.length(b'Content-Length: -1'))
        self.assertEqual(0, self.length(b'Transfer-Encoding: gzip'))
        # The client waits for "100 Continue" before its body.
        self.assertEqual(0, self.length(b'Content-Length: 10',
                                        b'Expect: 100-continue'))

    def test_a_chunked_body_is_scanned(self):
        for headers in ([b'Transfer-Encoding: chunked'],
                        [b'transfer-encoding: Chunked',
                         b'Content-Length: 10']):
            self.assertEqual(http_limits.CHUNKED, self.length(*headers))
        self.assertEqual(0, self.length(b'Transfer-Encoding: chunked',
                                        b'Expect: 100-continue'))

    def test_limits_from_the_options(self):
        self.flags(max_connections_per_client=7, connection_reserve=3,
                   idle_timeout=1.5, body_timeout=9.0, group='api')
        limits = http_limits.limits_from(self.conf)
        self.assertEqual((1.5, 9.0, 7, 3, 114688),
                         (limits.idle_timeout, limits.body_timeout,
                          limits.per_client, limits.reserve,
                          limits.gathered_body))
        # Servers other than cyborg-api's have no shares.
        limits = http_limits.limits_from(self.conf, shares=False)
        self.assertEqual((0, 0), (limits.per_client, limits.reserve))


class ChunkScannerTest(base.TestCase):

    BODY = (b'HEAD' + b'5\r\nhello\r\n' + b'1;name=value\r\n!\r\n'
            + b'0\r\nTrailer: x\r\n\r\n')

    def test_complete_when_the_last_chunk_and_trailers_are_in(self):
        scanner = http_limits.ChunkScanner(4, 100)
        for end in range(4, len(self.BODY)):
            self.assertFalse(scanner.complete(self.BODY[:end]), end)
        self.assertTrue(scanner.complete(self.BODY))
        self.assertEqual(6, scanner.size)
        # No trailers.
        self.assertTrue(http_limits.ChunkScanner(0, 10).complete(
            b'2\r\nab\r\n0\r\n\r\n'))

    def test_done_when_bad_or_over_the_limit(self):
        for body in (b'zz\r\n', b'-1\r\n', b'0x5\r\n', b'\r\n',
                     b'1' * 19 + b'\r\n', b'a' * 1024,
                     b'5\r\nhello\r\n6\r\n'):
            self.assertTrue(http_limits.ChunkScanner(0, 10).complete(body),
                            body)
        scanner = http_limits.ChunkScanner(0, 10)
        self.assertFalse(scanner.complete(b'5\r\nhello\r\n5\r\nwor'))
        self.assertEqual(2 * 10 + 1024, scanner.cap)


class BodyReaderTest(base.TestCase):
    """A body dripping one byte at a time, read against its deadline."""

    def setUp(self):
        super().setUp()
        self.connect()

    def connect(self):
        self.ours, self.theirs = socket.socketpair()
        self.addCleanup(self.ours.close)
        self.addCleanup(self.theirs.close)
        self.ours.settimeout(10)

    def reader(self, seconds):
        return http_limits._BodyReader(
            makefile.StreamReader(self.ours, 'rb'), self.ours,
            time.monotonic() + seconds, 10)

    @staticmethod
    def drip(sock, stop):
        while not stop.wait(0.05):
            try:
                sock.sendall(b'x\n')
            except OSError:
                return

    def test_a_dripping_body_ends_at_the_deadline(self):
        for method in ('read', 'readline'):
            self.connect()
            stop = threading.Event()
            thread = threading.Thread(target=self.drip,
                                      args=(self.theirs, stop))
            thread.start()
            self.addCleanup(thread.join)
            self.addCleanup(stop.set)
            reader = self.reader(0.5)
            started = time.monotonic()
            with self.assertRaises(TimeoutError):
                while True:
                    getattr(reader, method)(100000)
            self.assertLess(time.monotonic() - started, 1.5, method)
            self.assertTrue(reader.expired)
        # The socket's own timeout is back.
        self.assertEqual(10, self.ours.gettimeout())

    def test_reads_what_arrived(self):
        self.theirs.sendall(b'one\ntwo\nthree')
        self.theirs.shutdown(socket.SHUT_WR)
        reader = self.reader(5)
        self.assertEqual(b'one\n', reader.readline())
        self.assertEqual(b'tw', reader.readline(2))
        self.assertEqual([b'o\n', b'three'], list(reader))
        self.assertEqual(b'', reader.read(10))
        self.assertFalse(reader.expired)


class CherootNamesTest(base.TestCase):
    """What http_limits and server use of cheroot, public and private."""

    def test_the_reader_buffer(self):
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(theirs.close)
        theirs.sendall(b'abcdef')
        rfile = makefile.StreamReader(ours, 'rb')
        self.assertEqual(b'ab', rfile.read(2))
        # The private buffer the gathering takes from and gives back.
        self.assertEqual(b'cdef', rfile._read_buf[rfile._read_pos:])
        self.assertTrue(rfile.has_data())
        rfile._read_buf, rfile._read_pos = b'', 0
        self.assertFalse(rfile.has_data())
        rfile._read_buf = b'xyz'
        self.assertEqual(b'xyz', rfile.peek(1))
        self.assertEqual(b'xy', rfile.read1(2))

    def test_resting_connections_expire_by_last_used(self):
        expire = inspect.getsource(connections.ConnectionManager._expire)
        self.assertIn('conn.last_used < threshold', expire)
        self.assertIn('conn.close()', expire)
        run = inspect.getsource(connections.ConnectionManager._run)
        self.assertIn('now - self.server.timeout', run)
        self.assertIn('ka_limit is None or', inspect.getsource(
            connections.ConnectionManager.can_add_keepalive_connection.fget))
        put = inspect.getsource(connections.ConnectionManager.put)
        self.assertIn('conn.last_used = ', put)
        self.assertIn('conn.rfile.has_data()', put)

    def test_connections_are_made_and_fed_to_the_workers(self):
        accept = inspect.getsource(
            connections.ConnectionManager._from_server_socket)
        self.assertIn('self.server.ConnectionClass(self.server, s, mf)',
                      accept)
        # A worker that lost the race for a connection goes on.
        self.assertIn(errno.EAGAIN, errors.socket_errors_nonblocking)
        self.assertIn('socket_errors_nonblocking', accept)
        worker = inspect.getsource(
            threadpool.WorkerThread._process_connections_until_interrupted)
        self.assertIn('keep_conn_open = conn.communicate()', worker)
        self.assertIn('self.server.put_conn(conn)', worker)

    def test_the_request_reads_its_body_from_the_connection(self):
        respond = inspect.getsource(cheroot_server.HTTPRequest.respond)
        self.assertIn('KnownLengthRFile(self.conn.rfile, cl)', respond)
        self.assertIn('ChunkedRFile(self.conn.rfile', respond)
        # cheroot reads an unread body before the headers of an answer
        # that keeps the connection: Request.send_headers settles it first.
        headers = inspect.getsource(cheroot_server.HTTPRequest.send_headers)
        self.assertIn('self.rfile.read(remaining)', headers)
        # A read that times out is answered 408.
        communicate = inspect.getsource(
            cheroot_server.HTTPConnection.communicate)
        self.assertIn("'timed out'", communicate)
        self.assertIn('408 Request Timeout', communicate)

    def test_the_server_binds_through_bind(self):
        prepare = inspect.getsource(cheroot_server.HTTPServer.prepare)
        self.assertIn('self.bind(af, socktype, proto)', prepare)
        self.assertIn('self.socket.listen(', prepare)
        self.assertTrue(issubclass(server._Server, cheroot_server.HTTPServer))
