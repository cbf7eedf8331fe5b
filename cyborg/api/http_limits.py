"""What a client can make the API server hold before it is authenticated.

cheroot, as it comes, reads a request in one of its worker threads, with
no bound on the size of its headers and a timeout per read only: a few
connections that send a byte now and then hold every worker thread, and
idle connections count until they time out. The connection and request
classes here, which :class:`cyborg.api.server.WSGIServer` gives cheroot,
bound that (options of ``[api]``, per worker process):

* a request is gathered without a worker thread: a connection whose
  request line, headers and body (of at most ``[oslo_middleware]
  max_request_body_size``, with a ``Content-Length`` or chunked) are not
  all there yet goes back to cheroot's selector with what it sent so
  far, and a worker parses the request only once it is complete. A slow
  client holds memory (bounded by those sizes), never a thread;
* a connection that has sent no byte of a request (a new one, or a kept
  alive one between requests) is closed after ``idle_timeout``; headers
  must all arrive within ``header_timeout`` of their first byte (408
  otherwise), be at most ``max_request_header_size`` bytes (431) and
  ``max_request_header_count`` lines (400); a body must all arrive within
  ``body_timeout`` of the end of the headers (408), whoever reads it: the
  gathering, the application (a body over the size the server gathers,
  or one sent after ``100 Continue``) or the discarding below;
* a worker process holds at most ``max_connections`` connections; in
  cyborg-api, at most ``max_connections_per_client`` of them from one
  client address, and the last ``connection_reserve`` only for clients
  that hold none (:class:`Admission`); a connection over these is
  answered 503 and closed;
* a body the application did not read (a 413 for a body over
  ``[oslo_middleware] max_request_body_size``, say) is read and
  discarded, up to ``max_discarded_body_size`` bytes and within the
  body's time, without a worker thread, before the connection is closed,
  so a client that sends its whole body before it reads the answer gets
  the answer instead of a reset connection.

Private names of cheroot this relies on (``cyborg/tests/unit/api/
test_http_limits.py`` pins them, so that a cheroot release that changes
one fails there first): the buffer of its reader (``_read_buf`` and
``_read_pos`` of the ``io.BufferedReader`` it reads a socket with): what
arrived is taken out while the request is incomplete, so that cheroot's
selector does not see buffered data and hand the connection straight
back, and is put back for cheroot's parser once it is complete. Its
public hooks do the rest: its selector closes a resting connection whose
``last_used`` is older than the server's ``timeout``, which
:attr:`Connection.last_used` turns into the deadlines above.
"""

import collections
import ipaddress
import threading
import time

from cheroot import errors
from cheroot import server as cheroot_server
from oslo_middleware import sizelimit

from cyborg.compat import cheroot as cheroot_compat

HEADER_END = b'\r\n\r\n'
#: Lines ended by LF alone: not HTTP, which cheroot answers with a 400.
BARE_END = b'\n\n'
RECV_SIZE = 65536
#: The longest Content-Length or chunk size taken as a number.
MAX_LENGTH_DIGITS = 18
#: The longest chunk size line (with its extensions) that is gathered.
MAX_CHUNK_LINE = 1024
HEX_DIGITS = b'0123456789abcdefABCDEF'
#: What body_length says of a chunked body.
CHUNKED = -1

#: The bounds, from ``[api]`` (and the body size the server gathers,
#: from ``[oslo_middleware] max_request_body_size``).
Limits = collections.namedtuple(
    'Limits', 'header_size header_count header_timeout connections '
              'discarded_body idle_timeout body_timeout per_client reserve '
              'gathered_body',
    defaults=(5.0, 30.0, 0, 0, 114688))

# Where a connection is (see Connection).
IDLE, HEAD, BODY, BUSY, DISCARD = 'idle', 'head', 'body', 'busy', 'discard'


def limits_from(conf, shares=True):
    """The limits ``conf`` sets; without the shares per client unless
    ``shares`` (cyborg-api's edge: a server whose own services are among
    its clients, the all-in-one's, or a test's stand-in, has none)."""
    conf.register_opts(sizelimit.OPTS, group='oslo_middleware')
    api = conf.api
    return Limits(api.max_request_header_size, api.max_request_header_count,
                  api.header_timeout, api.max_connections,
                  api.max_discarded_body_size, api.idle_timeout,
                  api.body_timeout,
                  api.max_connections_per_client if shares else 0,
                  api.connection_reserve if shares else 0,
                  conf.oslo_middleware.max_request_body_size)


def configure(server, limits):
    """Make the cheroot ``server`` keep ``limits``."""
    server.ConnectionClass = Connection
    # cheroot keeps a connection after an answer only while fewer than
    # this many rest in its selector (10 by default: under load, every
    # answer closed its connection); Admission bounds them instead.
    server.keep_alive_conn_limit = None
    server.max_request_header_size = limits.header_size
    server.cyborg_limits = limits
    server.cyborg_admission = Admission(limits.connections,
                                        limits.per_client, limits.reserve)


def client_of(address):
    """Whom a connection from ``address`` counts for: the address, or for
    IPv6 its /64 (what one host or site is usually given)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network('%s/64' % ip, strict=False))
    return str(ip)


class Admission:
    """Which connections a server takes: at most ``limit`` at once, at
    most ``per_client`` from one client (0: no such share), and once it
    holds ``limit - reserve``, only from a client that holds none. A flood
    from one address fills its share; one from several addresses fills
    at most the part before the reserve and one connection each of the
    reserve: every other client still gets a connection.
    """

    def __init__(self, limit, per_client=0, reserve=0):
        self.limit = limit
        self.per_client = per_client
        self.reserve = reserve
        self.held = collections.Counter()
        self.total = 0
        self._lock = threading.Lock()

    def admit(self, client):
        """Count one more connection of ``client`` and return None, or
        return why not (the message of a 503)."""
        with self._lock:
            refusal = self._refusal(client)
            if refusal is None:
                self.held[client] += 1
                self.total += 1
            return refusal

    def _refusal(self, client):
        held = self.held[client]
        if self.total >= self.limit:
            return ('The server holds %d connections, the limit set by '
                    '[api] max_connections.' % self.limit)
        if self.per_client and held >= self.per_client:
            return ('Your address holds %d connections, the limit set by '
                    '[api] max_connections_per_client.' % self.per_client)
        if held and self.total >= self.limit - self.reserve:
            return ('The server holds %d connections; the last %d ([api] '
                    'connection_reserve) are kept for clients that hold '
                    'none.' % (self.total, self.reserve))
        return None

    def release(self, client):
        with self._lock:
            self.total -= 1
            self.held[client] -= 1
            if not self.held[client]:
                del self.held[client]


def body_length(head, limit):
    """How many bytes of body to gather after the request line and
    headers ``head``: its Content-Length; :data:`CHUNKED` for a chunked
    body (see :class:`ChunkScanner`); or 0 when the server should not
    wait for the body (none; over ``limit``, which the API refuses
    unread; another transfer coding, which cheroot refuses; or a client
    that waits for ``100 Continue``). cheroot parses the request itself:
    this only says when it is complete."""
    length, coding = 0, None
    for line in head.split(b'\r\n')[1:]:
        name, _, value = line.partition(b':')
        name, value = name.strip().lower(), value.strip()
        if name == b'expect':
            return 0
        if name == b'transfer-encoding':
            coding = value.lower()
        elif name == b'content-length':
            if not value.isdigit() or len(value) > MAX_LENGTH_DIGITS:
                return 0
            length = int(value)
    if coding is not None:
        return CHUNKED if coding == b'chunked' else 0
    return length if length <= limit else 0


class ChunkScanner:
    """Says when a chunked body that begins at ``start`` of the gathered
    bytes is all there: its chunks, the last one and its trailers. Also
    done when a size line is malformed or too long, or the chunks pass
    ``limit`` bytes: cheroot and the application take it from there (a
    400, a 413). At most ``cap`` bytes in all are gathered."""

    def __init__(self, start, limit):
        self.pos = start   # where the next chunk's size line begins
        self.size = 0      # the bytes of the chunks before it
        self.limit = limit
        self.cap = start + 2 * limit + MAX_CHUNK_LINE

    def complete(self, data):
        while True:
            eol = data.find(b'\r\n', self.pos, self.pos + MAX_CHUNK_LINE)
            if eol < 0:
                return len(data) - self.pos >= MAX_CHUNK_LINE
            digits = bytes(data[self.pos:eol]).partition(b';')[0].strip()
            if (not digits or len(digits) > MAX_LENGTH_DIGITS
                    or digits.strip(HEX_DIGITS)):
                return True
            size = int(digits, 16)
            if not size:
                return data.find(HEADER_END, eol) >= 0
            if self.size + size > self.limit:
                return True
            end = eol + 2 + size + 2
            if len(data) < end:
                return False
            self.size += size
            self.pos = end


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


class _BodyReader:
    """The connection's reader while a request is answered: what is
    buffered is read at once, and no read of the socket waits past
    ``deadline`` (it raises ``TimeoutError``, which cheroot answers with
    408 unless the answer has begun). Each read of the socket is one
    ``recv``, given the time left."""

    def __init__(self, rfile, sock, deadline, timeout):
        self.rfile = rfile
        self.sock = sock
        self.deadline = deadline
        self.timeout = timeout
        self.expired = False

    def __getattr__(self, name):
        return getattr(self.rfile, name)

    def _buffered(self):
        """What is buffered, after one read of the socket if nothing
        was; empty at the end of the stream."""
        if self.rfile.has_data():
            return self.rfile.peek(1)
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.expired = True
            raise TimeoutError('timed out')
        self.sock.settimeout(min(left, self.timeout))
        try:
            return self.rfile.peek(1)
        except TimeoutError:
            self.expired = True
            raise
        finally:
            self.sock.settimeout(self.timeout)

    def read(self, size=-1):
        left = float('inf') if size is None or size < 0 else size
        chunks = []
        while left > 0 and self._buffered():
            chunks.append(self.rfile.read1(int(min(left, RECV_SIZE))))
            left -= len(chunks[-1])
        return b''.join(chunks)

    def readline(self, size=-1):
        left = float('inf') if size is None or size < 0 else size
        line = b''
        while left > 0:
            buffered = self._buffered()[:int(min(left, RECV_SIZE))]
            if not buffered:
                break
            end = buffered.find(b'\n') + 1
            line += self.rfile.read1(end or len(buffered))
            left -= len(buffered) if not end else end
            if end:
                break
        return line

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line


class Request(cheroot_server.HTTPRequest):
    """A request whose headers are bounded (431, 400), whose body is read
    within its time (408), and whose unread body is discarded after the
    answer."""

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
        conn = self.conn
        reader = _BodyReader(conn.rfile, conn.socket, conn.body_deadline(),
                             self.server.timeout)
        conn.rfile = reader
        try:
            super().respond()
        finally:
            conn.rfile = reader.rfile
        if reader.expired:
            self.close_connection = True
        self._settle_body()

    def send_headers(self):
        # Before cheroot's own, which would wait for the rest of an unread
        # body in this thread when the connection is kept.
        self._settle_body()
        super().send_headers()

    def _settle_body(self):
        """Drop what arrived of a body the application did not read; if
        more is to come, close the connection after the answer, leaving
        the rest (up to the limit) to :meth:`Connection.communicate`."""
        if self.chunked_read:
            # A chunked body may have been left half read.
            self.close_connection = True
            return
        body = self.rfile
        remaining = getattr(body, 'remaining', 0)
        rfile = self.conn.rfile
        rfile = getattr(rfile, 'rfile', rfile)   # under a _BodyReader
        while remaining and rfile.has_data():
            remaining -= len(rfile.read1(min(remaining, RECV_SIZE)))
        if hasattr(body, 'remaining'):
            body.remaining = remaining
        if not remaining:
            return
        self.close_connection = True
        if remaining <= self.server.cyborg_limits.discarded_body:
            self.conn.discard = remaining


class Connection(cheroot_server.HTTPConnection):
    """A connection whose requests are gathered before a worker thread
    parses them, admitted by the server's :class:`Admission`, and given a
    deadline for each step (see the module's docstring)."""

    RequestHandlerClass = Request

    def __init__(self, server, sock, *args, **kwargs):
        super().__init__(server, sock, *args, **kwargs)
        self.limits = server.cyborg_limits
        self._admission = server.cyborg_admission
        try:
            self.client = client_of(sock.getpeername()[0])
        except (OSError, IndexError, TypeError):
            self.client = ''
        self._refusal = self._admission.admit(self.client)
        self._admitted = self._refusal is None
        #: Bytes of an answered request's body still to discard.
        self.discard = 0
        self._idle()

    def _idle(self):
        """Waiting for the first byte of a request."""
        self._phase = IDLE
        self._pending = bytearray()
        self._scanned = 0
        self._need = None
        self._chunks = None
        self._body_deadline = None
        self._expires = time.monotonic() + self.limits.idle_timeout

    @property
    def last_used(self):
        """What cheroot's selector reads to close resting connections
        (those older than the server's ``timeout``): a time that makes it
        close this one at its deadline."""
        return (time.time() - self.server.timeout
                + self._expires - time.monotonic())

    @last_used.setter
    def last_used(self, value):
        """cheroot sets it when the connection rests; the deadlines are
        ours."""

    def body_deadline(self):
        """When the body of the request being answered must be in."""
        if self._body_deadline is None:
            self._body_deadline = (time.monotonic() +
                                   self.limits.body_timeout)
        return self._body_deadline

    def close(self):
        if (self._phase in (HEAD, BODY)
                and time.monotonic() >= self._expires):
            # cheroot's selector closes it at its deadline: an answer if
            # it fits the socket's buffer at once.
            try:
                self.socket.settimeout(0)
            except OSError:
                pass
            else:
                self._answer('408 Request Timeout', self._late())
        if self._admitted:
            self._admitted = False
            self._admission.release(self.client)
        super().close()

    def communicate(self):
        if self._refusal is not None:
            message, self._refusal = self._refusal, None
            return self._refuse('503 Service Unavailable', message)
        if self.discard:
            return self._discard_more()
        if self.server.ssl_adapter is None and not self._request_ready():
            if self._phase != IDLE and time.monotonic() >= self._expires:
                return self._refuse('408 Request Timeout', self._late())
            return True   # back to the selector, holding no thread
        self._phase = BUSY
        keep = super().communicate()
        if self.discard:
            self._phase = DISCARD
            self._expires = self.body_deadline()
            return True
        self._idle()
        return keep

    def _late(self):
        if self._phase == HEAD:
            return ('The request headers did not arrive within %s seconds '
                    '([api] header_timeout).' % self.limits.header_timeout)
        return ('The request body did not arrive within %s seconds '
                '([api] body_timeout).' % self.limits.body_timeout)

    def _request_ready(self):
        """Gather what arrived (without waiting); whether cheroot may
        parse the request now: it is complete, its headers are too large
        or malformed, or the client is gone. The bytes are handed back to
        the reader."""
        self._pending += cheroot_compat.take_unread(self.rfile)
        ended = self._receive(self._wanted())
        if ended or self._complete():
            cheroot_compat.put_unread(self.rfile, self._pending)
            self._pending = bytearray()
            return True
        return False

    def _header_cap(self):
        return self.server.max_request_header_size + len(HEADER_END)

    def _wanted(self):
        """How many bytes to gather at most."""
        if self._chunks is not None:
            return self._chunks.cap
        return self._header_cap() if self._need is None else self._need

    def _complete(self):
        """Whether the request gathered is complete (or bad); starts the
        clock of its headers and of its body."""
        if self._need is None:
            pending, cap = self._pending, self._header_cap()
            # Where the end of the headers may be that was not looked at.
            start = max(0, self._scanned - len(HEADER_END))
            self._scanned = min(len(pending), cap)
            end = pending.find(HEADER_END, start, cap)
            bare = pending.find(BARE_END, start, cap)
            if 0 <= bare and (end < 0 or bare < end):
                return True
            if end < 0:
                if pending and self._phase == IDLE:
                    self._phase = HEAD
                    self._expires = (time.monotonic() +
                                     self.limits.header_timeout)
                return len(pending) >= cap
            end += len(HEADER_END)
            length = body_length(bytes(pending[:end]),
                                 self.limits.gathered_body)
            if length == CHUNKED:
                self._chunks = ChunkScanner(end, self.limits.gathered_body)
            self._need = end + max(length, 0)
            self._phase = BODY
            self._body_deadline = self._expires = (
                time.monotonic() + self.limits.body_timeout)
        if self._chunks is not None:
            return (self._chunks.complete(self._pending)
                    or len(self._pending) >= self._chunks.cap)
        return len(self._pending) >= self._need

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

    def _discard_more(self):
        """Read and drop what arrived of an unread body; whether to keep
        the connection (to the selector) for the rest."""
        timeout = self.socket.gettimeout()
        self.socket.settimeout(0)
        try:
            while self.discard:
                data = self.socket.recv(min(RECV_SIZE, self.discard))
                if not data:
                    return False
                self.discard -= len(data)
        except (BlockingIOError, InterruptedError):
            return time.monotonic() < self._expires
        except OSError:
            return False
        finally:
            self.socket.settimeout(timeout)
        return False   # all of it: closed now

    def _refuse(self, status, message):
        self._answer(status, message)
        # Closed by cheroot's worker.
        return False

    def _answer(self, status, message):
        """A plain answer that closes the connection; sent once."""
        self._phase = BUSY
        body = message.encode('ascii')
        try:
            self.wfile.write(b''.join((
                b'HTTP/1.1 ', status.encode('ascii'), b'\r\n',
                b'Content-Type: text/plain\r\n',
                b'Content-Length: %d\r\n' % len(body),
                b'Connection: close\r\n\r\n', body)))
        except OSError:
            pass
