"""Serving the API: a cheroot WSGI server in a thread, and the service.

oslo.service's own WSGI server does not run on its threading backend, so
the standalone API is served by cheroot. ``WSGIServer`` serves any WSGI
app (the all-in-one reuses it for its composite app); ``APIService`` is
the oslo.service service that ``cyborg-api`` launches in each worker
process. With several workers each one binds its own listening socket
with SO_REUSEPORT and the kernel spreads connections between them.

A version document (the root of an API: what a client reads once to
discover versions) is answered with ``Connection: close``. Nova's
services read Placement's and cyborg's in their parent process, then
fork their workers, which inherit that kept-alive connection; two
workers using one socket at once read each other's responses (seen as
``BadStatusLine`` holding a whole response body, then a failed
scheduling). Closed, the connection cannot be inherited, and each worker
opens its own.
"""

import logging as std_logging
import os
import socket
import threading

from cheroot import wsgi
from oslo_log import log as logging
from oslo_service import service

from cyborg.api import app as api_app
from cyborg.api import http_limits
from cyborg.common import keys
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


class WSGIServer:
    """``app`` served on ``host:port`` by ``threads`` threads.

    Requests are bounded before authentication (:mod:`.http_limits`).
    ``start()`` binds before it returns, so bind errors are raised to the
    caller and ``port`` is the real port (useful with port 0).
    """

    def __init__(self, app, host, port, threads, reuse_port=False,
                 name='cyborg-api', limits=None):
        self.app = app
        #: The bounds before authentication (``[api]`` options).
        self.limits = limits or http_limits.limits_from(CONF)
        self.host = host
        self.port = port
        self.threads = threads
        self.reuse_port = reuse_port
        self.name = name
        self._server = None
        self._thread = None

    def start(self):
        server = wsgi.Server((self.host, self.port), self.app,
                             numthreads=self.threads, max=self.threads,
                             server_name=self.name,
                             request_queue_size=LISTEN_BACKLOG,
                             reuse_port=self.reuse_port)
        server.error_log = _log_cheroot_error
        server.gateway = _Gateway
        http_limits.configure(server, self.limits)
        server.prepare()
        self._server = server
        self.port = server.bind_addr[1]
        self._thread = threading.Thread(target=server.serve, name=self.name,
                                        daemon=True)
        self._thread.start()
        LOG.info('%s listening on %s:%s', self.name, self.host, self.port)

    def stop(self):
        """Stop accepting, finish requests in progress (cheroot's
        shutdown timeout), close the socket."""
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


def check_bindable(host, port):
    """Fail now, in the parent process, if ``host:port`` cannot be bound.

    Otherwise every worker would fail at start and be restarted forever.
    SO_REUSEPORT is set like the workers set it, so a running worker of
    this service does not count as a conflict but any other listener does.
    """
    if not port:
        return
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        probe.bind((host, port))


class APIService(service.Service):
    """The API in one worker process, for ``cyborg.common.service.launch``.

    The app is built in the parent so configuration errors stop the
    launch; what must belong to one process (messaging, the conductor
    client, sockets) is made in ``start()``, which runs in the worker.
    """

    def __init__(self, conf=CONF, workers=1):
        super().__init__()
        self.conf = conf
        self.workers = workers
        self.app = api_app.setup_app(conf)
        check_bindable(conf.api.host_ip, conf.api.port)
        self.server = None

    def start(self):
        super().start()
        if not rpc.initialized():
            rpc.init(self.conf, identity=keys.API)
        self.server = WSGIServer(self.app, self.conf.api.host_ip,
                                 self.conf.api.port,
                                 self.conf.api.threads_per_worker,
                                 reuse_port=self.workers > 1,
                                 limits=http_limits.limits_from(self.conf))
        self.server.start()

    def stop(self, graceful=True):
        if self.server is not None:
            self.server.stop()
        super().stop(graceful=graceful)

    def wait(self):
        if self.server is not None:
            self.server.wait()
        super().wait()

    def reset(self):
        """SIGHUP: mutable options are re-read by the launcher; nothing
        of ours needs rebuilding."""
