"""Serving the API: a cheroot WSGI server in a thread, and the service.

oslo.service's own WSGI server does not run on its threading backend, so
the standalone API is served by cheroot. ``WSGIServer`` serves any WSGI
app (the all-in-one reuses it for its composite app); ``APIService`` is
the oslo.service service that ``cyborg-api`` launches in each worker
process. ``cyborg-api`` makes its listening socket once, in the process
that forks the workers, and each worker accepts connections on the copy
it inherits; the socket has no SO_REUSEPORT, so no other process (a
second ``cyborg-api`` started by mistake) can listen on the port beside
it: that one stops with one line that names the address.

A version document (the root of an API: what a client reads once to
discover versions) is answered with ``Connection: close``. Nova's
services read Placement's and cyborg's in their parent process, then
fork their workers, which inherit that kept-alive connection; two
workers using one socket at once read each other's responses (seen as
``BadStatusLine`` holding a whole response body, then a failed
scheduling). Closed, the connection cannot be inherited, and each worker
opens its own.
"""

import errno
import logging as std_logging
import os
import socket
import sys
import threading

from cheroot import wsgi
from oslo_log import log as logging
from oslo_service import service

from cyborg.api import app as api_app
from cyborg.api import http_limits
from cyborg.common import keys
from cyborg.common import metrics
from cyborg.common import rpc
from cyborg import conf as cyborg_conf

LOG = logging.getLogger(__name__)
CONF = cyborg_conf.CONF

MAX_DEFAULT_WORKERS = 4
LISTEN_BACKLOG = 128
# The roots of cyborg's API and of the all-in-one's embedded Placement.
VERSION_DOCUMENTS = frozenset(('', '/', '/v2', '/v2/', '/placement',
                               '/placement/'))


def default_workers():
    """Workers when ``[api] api_workers`` is unset: one per CPU, at most
    four (a request mostly waits on the database or the conductor)."""
    return min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS)


#: Seconds a stopping server gives the requests it is serving.
SHUTDOWN_TIMEOUT = 1.5


class CannotListen(OSError):
    """The server cannot listen on its address; one line that names it."""


def address(host, port):
    return ('[%s]:%s' if ':' in host else '%s:%s') % (host, port)


def listen(host, port, reuse_port=False):
    """A socket listening on ``host:port``, without SO_REUSEPORT unless
    ``reuse_port``; raises :class:`CannotListen` when the address is
    taken (by anyone but another that asked for ``reuse_port``) or
    cannot be had."""
    where = address(host, port)
    try:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(
            host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0,
            socket.AI_PASSIVE)[0]
    except socket.gaierror as e:
        raise CannotListen('cannot listen on %s: %s'
                           % (where, e.strerror)) from None
    sock = socket.socket(family, kind, proto)
    try:
        if port:
            # Not for port 0, where it could pick a port another holds.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if family == socket.AF_INET6 and host in ('::', '::0'):
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(sockaddr)
        sock.listen(LISTEN_BACKLOG)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise CannotListen(
                'cannot listen on %s: %s (another process listens on it; '
                'see [api] host_ip and port)' % (where, e.strerror)) from None
        raise CannotListen('cannot listen on %s: %s'
                           % (where, e.strerror or e)) from None
    return sock


def listen_or_exit(host, port, prog):
    """:func:`listen`, or end the process with one line on stderr and
    exit status 2."""
    try:
        return listen(host, port)
    except CannotListen as e:
        print('%s: error: %s' % (prog, e), file=sys.stderr)
        raise SystemExit(2) from None


class _Server(wsgi.Server):
    """cheroot's WSGI server on a socket that listens already."""

    listener = None

    def bind(self, family, type, proto=0):
        self.socket = self.listener
        self.bind_addr = self.resolve_real_bind_addr(self.socket)
        return self.socket


class WSGIServer:
    """``app`` served on ``host:port`` by ``threads`` threads.

    Requests are bounded before authentication (:mod:`.http_limits`; by
    default as the ``[api]`` options say, without shares per client).
    ``start()`` listens before it returns, so an address in use is
    raised to the caller (:class:`CannotListen`) and ``port`` is the
    real port (useful with port 0). A ``listener`` made beforehand
    (:func:`listen`) is served instead; several processes may serve one.
    ``reuse_port`` lets other processes that ask for it listen on the
    port too (the benchmarks' Placement workers; never cyborg-api).
    """

    def __init__(self, app, host, port, threads, listener=None,
                 name='cyborg-api', limits=None, reuse_port=False):
        self.app = app
        #: The bounds before authentication (``[api]`` options).
        self.limits = limits or http_limits.limits_from(CONF, shares=False)
        self.host = host
        self.port = port
        self.threads = threads
        self.listener = listener
        self.reuse_port = reuse_port
        self.name = name
        self._server = None
        self._thread = None

    def start(self):
        listener = self.listener or listen(self.host, self.port,
                                           self.reuse_port)
        server = _Server((self.host, self.port), self.app,
                         numthreads=self.threads, max=self.threads,
                         server_name=self.name,
                         request_queue_size=LISTEN_BACKLOG)
        server.listener = listener
        # What stop() gives requests in progress: within the daemons'
        # stop deadline (cyborg.common.service.STOP_TIMEOUT), not
        # cheroot's 5 s.
        server.shutdown_timeout = SHUTDOWN_TIMEOUT
        server.error_log = _log_cheroot_error
        server.gateway = _Gateway
        http_limits.configure(server, self.limits)
        server.prepare()
        # Several worker processes accept on one socket: one that loses
        # the race for a connection gets EAGAIN (which cheroot skips)
        # rather than wait in accept() with its selector stopped.
        server.socket.settimeout(0)
        self._server = server
        self.port = server.bind_addr[1]
        self._thread = threading.Thread(target=server.serve, name=self.name,
                                        daemon=True)
        self._thread.start()
        LOG.info('%s listening on %s', self.name,
                 address(self.host, self.port))

    def stop(self):
        """Stop accepting, finish requests in progress (cheroot's
        shutdown timeout), close the socket. Connections still arriving
        or idle hold no thread and are closed at once."""
        if self._server is not None:
            self._server.stop()

    def wait(self):
        if self._thread is not None:
            self._thread.join()


def is_version_document(environ):
    """Whether the request asks for an API's version document."""
    return (environ.get('REQUEST_METHOD') in ('GET', 'HEAD')
            and environ.get('PATH_INFO', '') in VERSION_DOCUMENTS)


class _Gateway(wsgi.Gateway_10):
    """cheroot's WSGI 1.0 gateway, closing the connection after a version
    document (see the module's docstring; ``Connection`` is hop-by-hop,
    which a WSGI app may not set, so the server decides it), and sending
    no body in answer to HEAD whatever the app returns: cheroot sends it,
    and a client, which reads none, would take it for the start of the
    next response on the connection."""

    def respond(self):
        if is_version_document(self.env):
            self.req.close_connection = True
        super().respond()

    def write(self, chunk):
        # cheroot sends the headers on the first write, even of nothing.
        super().write(b'' if self.env.get('REQUEST_METHOD') == 'HEAD'
                      else chunk)


def _log_cheroot_error(msg='', level=std_logging.INFO, traceback=False):
    """cheroot writes its errors to stderr; send them to our log."""
    LOG.log(level, 'cheroot: %s', msg, exc_info=traceback)


def serve_metrics(conf, workers):
    """The API's [metrics] listener, in its one worker. With several,
    the parent serves the sum of theirs
    (:func:`cyborg.common.metrics.serve_workers`)."""
    if workers > 1:
        return None
    return metrics.serve(conf)


class APIService(service.Service):
    """The API in one worker process, for ``cyborg.common.service.launch``.

    The app and the listening socket are made in the parent, so that
    configuration errors and an address in use stop the launch, and the
    workers share the socket; what must belong to one process
    (messaging, the conductor client, the server's threads and
    connections) is made in ``start()``, which runs in the worker.
    """

    def __init__(self, conf=CONF, workers=1):
        super().__init__()
        self.conf = conf
        self.workers = workers
        self.app = api_app.setup_app(conf)
        # Here, in the process that forks the workers: they inherit it.
        self.listener = listen_or_exit(conf.api.host_ip, conf.api.port,
                                       conf.prog or 'cyborg-api')
        self.server = None
        self.metrics = None

    def start(self):
        super().start()
        if not rpc.initialized():
            rpc.init(self.conf, identity=keys.API)
        self.server = WSGIServer(self.app, self.conf.api.host_ip,
                                 self.conf.api.port,
                                 self.conf.api.threads_per_worker,
                                 listener=self.listener,
                                 limits=http_limits.limits_from(self.conf))
        self.server.start()
        self.metrics = serve_metrics(self.conf, self.workers)

    def stop(self, graceful=True):
        if self.server is not None:
            self.server.stop()
        if self.metrics is not None:
            self.metrics.stop()
        super().stop(graceful=graceful)

    def wait(self):
        if self.server is not None:
            self.server.wait()
        super().wait()

    def reset(self):
        """SIGHUP: mutable options are re-read by the launcher; nothing
        of ours needs rebuilding."""
