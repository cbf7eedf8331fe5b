"""What a client can make the API server hold before it is authenticated.

cheroot, as it comes, reads a request's headers in one of its worker
threads, with no bound on their size and a timeout per read only: one
huge header costs its size in memory, and a few connections that send a
header line now and then hold every worker thread. The connection and
request classes here, which :class:`cyborg.api.server.WSGIServer` gives
cheroot, bound that (options of ``[api]``):

* the request line and headers are gathered without a worker thread: a
  connection whose headers are not all there yet goes back to cheroot's
  selector with what it sent so far, and a worker parses them only once
  they are complete. A slow client holds memory (at most
  ``max_request_header_size`` bytes), never a thread;
* headers must all arrive within ``header_timeout`` seconds of their first
  byte (408 otherwise), be at most ``max_request_header_size`` bytes
  (431) and ``max_request_header_count`` lines (400);
* a worker process serves at most ``max_connections`` connections at once;
  one more is answered 503 and closed;
* a body the application did not read (a 413 for a body over
  ``[oslo_middleware] max_request_body_size``, say) is read and
  discarded, up to ``max_discarded_body_size`` bytes, before the
  connection is closed, so a client that sends its whole body before it
  reads the answer gets the answer instead of a reset connection.

The gathering reaches into the private buffer of cheroot's reader
(``_read_buf``/``_read_pos`` of its ``io.BufferedReader``): what arrived
is taken out while the headers are incomplete, so that cheroot's
selector does not see buffered data and hand the connection straight
back, and is put back for cheroot's parser once they are complete.
"""

import collections
import threading
import time

from cheroot import errors
from cheroot import server as cheroot_server

HEADER_END = b'\r\n\r\n'
#: Lines ended by LF alone: not HTTP, which cheroot answers with a 400.
BARE_END = b'\n\n'
RECV_SIZE = 65536

#: The bounds, from ``[api]``.
Limits = collections.namedtuple(
    'Limits', 'header_size header_count header_timeout connections '
              'discarded_body')


def limits_from(conf):
    return Limits(conf.api.max_request_header_size,
                  conf.api.max_request_header_count,
                  conf.api.header_timeout, conf.api.max_connections,
                  conf.api.max_discarded_body_size)


def configure(server, limits):
    """Make the cheroot ``server`` keep ``limits``."""
    server.ConnectionClass = Connection
    server.max_request_header_size = limits.header_size
    server.cyborg_limits = limits
    server.cyborg_open = _Counter()


class _Counter:
    """The connections a server holds open."""

    def __init__(self):
        self._lock = threading.Lock()
        self.value = 0

    def add(self, delta):
        with self._lock:
            self.value += delta
            return self.value


class _CountingHeaderReader(cheroot_server.HeaderReader):
    """cheroot's header reader, refusing more than ``count`` lines."""

    def __init__(self, count):
        self.count = count

    def __call__(self, rfile, hdict=None):
        return super().__call__(_LineCounter(rfile, self.count), hdict)


class _LineCounter:

    def __init__(self, rfile, count):
        self.rfile = rfile
        self.count = count
        self.left = count + 1  # the empty line that ends them

    def readline(self, *args):
        self.left -= 1
        if self.left < 0:
            raise ValueError('More header lines than the %d allowed by '
                             '[api] max_request_header_count.' % self.count)
        return self.rfile.readline(*args)


class Request(cheroot_server.HTTPRequest):
    """A request whose headers are bounded (431, 400) and whose unread
    body is discarded after the answer."""

    def __init__(self, server, conn, *args, **kwargs):
        super().__init__(server, conn, *args, **kwargs)
        self.header_reader = _CountingHeaderReader(
            server.cyborg_limits.header_count)

    def read_request_headers(self):
        try:
            return super().read_request_headers()
        except errors.MaxSizeExceeded:
            self.simple_response(
                '431 Request Header Fields Too Large',
                'The request line and headers are larger than %d bytes, '
                'the limit set by [api] max_request_header_size.'
                % self.server.max_request_header_size)
            return False

    def respond(self):
        super().respond()
        self._discard_body()

    def _discard_body(self):
        """Read what is left of a body the application did not read, up
        to the limit, then close: the client gets to read the answer."""
        remaining = getattr(self.rfile, 'remaining', None)
        if self.chunked_read or remaining is None:
            # A chunked body may have been left half read.
            self.close_connection = True
            return
        if not remaining:
            return
        self.close_connection = True
        limits = self.server.cyborg_limits
        if remaining > limits.discarded_body:
            return
        deadline = time.monotonic() + limits.header_timeout
        while remaining and time.monotonic() < deadline:
            try:
                data = self.rfile.read(min(remaining, RECV_SIZE))
            except OSError:
                return
            if not data:
                return
            remaining -= len(data)


class Connection(cheroot_server.HTTPConnection):
    """A connection whose request headers are gathered before a worker
    thread parses them (see the module's docstring)."""

    RequestHandlerClass = Request

    def __init__(self, server, sock, *args, **kwargs):
        super().__init__(server, sock, *args, **kwargs)
        self._pending = b''
        self._deadline = None
        self._counted = True
        self._over_limit = (server.cyborg_open.add(1) >
                            server.cyborg_limits.connections)

    def close(self):
        if self._counted:
            self._counted = False
            self.server.cyborg_open.add(-1)
        super().close()

    def communicate(self):
        if self._over_limit:
            self._over_limit = False
            return self._refuse(
                '503 Service Unavailable', 'The server holds %d '
                'connections, the limit set by [api] max_connections.'
                % self.server.cyborg_limits.connections)
        if self.server.ssl_adapter is None and not self._headers_ready():
            if time.monotonic() > self._deadline:
                return self._refuse(
                    '408 Request Timeout', 'The request headers did not '
                    'arrive within %s seconds ([api] header_timeout).'
                    % self.server.cyborg_limits.header_timeout)
            return True   # back to the selector, holding no thread
        self._deadline = None
        return super().communicate()

    def _headers_ready(self):
        """Gather what arrived (without waiting); whether cheroot may
        parse the request now: its headers are complete, too large, or
        the client is gone. The bytes are handed back to the reader."""
        rfile = self.rfile
        self._pending += rfile._read_buf[rfile._read_pos:]
        rfile._read_buf, rfile._read_pos = b'', 0
        cap = self.server.max_request_header_size + len(HEADER_END)
        ended = self._receive(cap)
        head = self._pending[:cap]
        if (ended or HEADER_END in head or BARE_END in head
                or len(self._pending) >= cap):
            rfile._read_buf, self._pending = self._pending, b''
            return True
        if self._deadline is None:
            self._deadline = (time.monotonic() +
                              self.server.cyborg_limits.header_timeout)
        return False

    def _receive(self, cap):
        """Read what the socket holds now, up to ``cap`` bytes pending;
        True if the client closed its side or the socket failed."""
        timeout = self.socket.gettimeout()
        self.socket.settimeout(0)
        try:
            while len(self._pending) < cap:
                data = self.socket.recv(min(RECV_SIZE,
                                            cap - len(self._pending)))
                if not data:
                    return True
                self._pending += data
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        finally:
            self.socket.settimeout(timeout)
        return False

    def _refuse(self, status, message):
        body = message.encode('ascii')
        try:
            self.wfile.write(b''.join((
                b'HTTP/1.1 ', status.encode('ascii'), b'\r\n',
                b'Content-Type: text/plain\r\n',
                b'Content-Length: %d\r\n' % len(body),
                b'Connection: close\r\n\r\n', body)))
        except OSError:
            pass
        # Closed by cheroot's worker.
        return False

