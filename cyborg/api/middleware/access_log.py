"""One INFO line per API request, in the form OpenStack services log::

    192.0.2.7 "GET /v2/devices HTTP/1.1" status: 200 len: 734 time: 0.0123456

The line is written once the response body has been sent (or the
server closed it), so ``len`` counts the bytes actually produced and
``time`` covers the whole request. It carries the request's context, so
the request id and the global request id (``X-OpenStack-Request-ID``
sent by Nova) appear where the log format puts them, as do the user and
project.

It is part of the application (``cyborg.api.app``), so it logs the same
under cyborg's own server, uwsgi and mod_wsgi. ``[api] access_log =
false`` turns it off (a front end that logs requests itself, say).
"""

import time
from urllib import parse

from oslo_log import log as logging

from cyborg.common import context as cyborg_context

LOG = logging.getLogger(__name__)

# What stays readable in a logged path or query; anything else (spaces,
# quotes, control characters, non-ASCII) is percent-encoded, so that a
# request cannot write a forged line into the log.
_SAFE = "/;:@&=+$,!~*'()%?[]-._"


def _printable(value):
    """A WSGI string (bytes as latin-1) percent-encoded for the log."""
    return parse.quote(value.encode('latin-1', 'replace'), safe=_SAFE)


def request_line(environ):
    """``METHOD /script/path?query PROTOCOL`` of a WSGI request."""
    uri = _printable(environ.get('SCRIPT_NAME', '') +
                     environ.get('PATH_INFO', ''))
    query = environ.get('QUERY_STRING')
    if query:
        uri += '?' + _printable(query)
    return '%s %s %s' % (_printable(environ.get('REQUEST_METHOD', '')), uri,
                         _printable(environ.get('SERVER_PROTOCOL', '')))


class _LoggedBody:
    """The response body, passed through; counts its bytes and writes
    the access line when the server closes it."""

    def __init__(self, body, on_close):
        self._body = body
        self._on_close = on_close
        self.length = 0

    def __iter__(self):
        for chunk in self._body:
            self.length += len(chunk)
            yield chunk

    def close(self):
        try:
            close = getattr(self._body, 'close', None)
            if close is not None:
                close()
        finally:
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                on_close(self.length)


class AccessLog:
    """WSGI middleware writing the access line of every request."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        started = time.monotonic()
        line = request_line(environ)
        status = []

        def logging_start_response(status_line, headers, exc_info=None):
            status[:] = [status_line.partition(' ')[0]]
            return start_response(status_line, headers, exc_info)

        def log(length):
            # The context the API made, unless the request was refused
            # before (too large, no credentials): then one is made here.
            ctx = environ.get(cyborg_context.ENVIRON_KEY)
            if ctx is None:
                ctx = cyborg_context.RequestContext.from_environ(
                    environ, overwrite=False)
            LOG.info('%(client)s "%(line)s" status: %(status)s len: '
                     '%(length)d time: %(time).7f',
                     {'client': environ.get('REMOTE_ADDR', '-'),
                      'line': line, 'status': status[0] if status else '-',
                      'length': length,
                      'time': time.monotonic() - started},
                     context=ctx)

        try:
            body = self.app(environ, logging_start_response)
        except Exception:
            status[:] = status or ['500']
            log(0)
            raise
        return _LoggedBody(body, log)


def setup(app, conf):
    """``app`` with the access log, unless ``[api] access_log`` is off."""
    return AccessLog(app) if conf.api.access_log else app
