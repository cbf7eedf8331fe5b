"""Give every failed response the error envelope clients parse.

Errors come from several places: our pecan hooks, WSME faults of
controllers, keystonemiddleware's 401, webob's defaults. This middleware
sits outside all of them and rewrites any 4xx/5xx body into the one
envelope of ``cyborg.api.errors``, keeping the status and the other
headers. It is also the last safety net for an exception that escaped.
"""

import sys

from oslo_serialization import jsonutils
import webob

from cyborg.api import errors
from cyborg.api.middleware import lean


def _json_message(doc):
    """The message of a JSON error document in a shape we know, None if
    the document already is the envelope, or '' if the shape is unknown."""
    if 'error_message' in doc:
        return None
    if doc.get('faultstring'):
        return str(doc['faultstring'])
    inner = doc.get('error')
    if isinstance(inner, dict) and inner.get('message'):
        return str(inner['message'])
    return str(doc.get('description') or doc.get('title') or '')


def _message(response):
    """What the response says went wrong; None if it is already an
    envelope. Falls back to the status's reason phrase."""
    try:
        doc = jsonutils.loads(response.body)
    except (ValueError, TypeError, UnicodeDecodeError):
        doc = None
    message = ''
    if isinstance(doc, dict):
        message = _json_message(doc)
        if message is None:
            return None
    return message or response.status.partition(' ')[2]


def error_response(status, message, headers=None):
    """A complete error response, for code that has no response yet."""
    response = webob.Response(status=status)
    _set_envelope(response, message)
    response.headers.update(headers or {})
    return response


def exception_response(exc):
    """The error response for an exception raised handling a request:
    its status and message (``cyborg.api.errors``) and the headers it
    carries (``Retry-After`` of a 503, say)."""
    return error_response(*errors.status_and_message(exc),
                          headers=errors.headers_of(exc))


def _set_envelope(response, message):
    response.body = errors.envelope_bytes(response.status_int, message)
    response.headers['Content-Type'] = 'application/json'


class ParsableErrorMiddleware:
    """Rewrites 4xx and 5xx bodies into the error envelope.

    In plain WSGI: a success, and any answer to HEAD, goes through as
    the application made it (its body not even looked at; HEAD's not
    sent), with no webob request or response made for it, which cost
    about 3 % of the API's CPU in Nova's boot cycle; an error is held
    back, read whole and rewritten. An application that calls
    ``start_response`` only once iterated is iterated to its first
    chunk to know which it is."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        answer = _Answer(environ, start_response)
        try:
            body = self.app(environ, answer.start)
            if answer.status is None:
                body = answer.first_chunk(body)
            if not answer.held:
                answer.pass_on()
        except Exception as exc:
            return _failed(exc, environ, start_response, answer)
        if not answer.held:
            return lean.no_body_for_head(environ, body)
        try:
            content = answer.read(body)
        except Exception as exc:
            return _failed(exc, environ, start_response, answer)
        response = webob.Response(status=answer.status,
                                  headerlist=list(answer.headers))
        response.body = content
        message = _message(response)
        if message is not None:
            _set_envelope(response, message)
        return response(environ, start_response)


def _failed(exc, environ, start_response, answer):
    """The error response for ``exc``, raised while the application
    answered. When the server was given a success already (only an
    application that wrote with ``write()`` does that), the error is
    started with the exception's ``exc_info``, as WSGI asks of a second
    ``start_response``."""
    if not answer.started:
        return exception_response(exc)(environ, start_response)
    info = sys.exc_info()

    def restart(status, headers, _exc_info=None):
        return start_response(status, headers, info)
    return exception_response(exc)(environ, restart)


class _Answer:
    """What the application answered: a success or an answer to HEAD is
    passed on to the server once the application returned (``pass_on``;
    at its first ``write()`` if it writes), so that an exception raised
    before still gets the error envelope; an error is held back
    (``held``)."""

    def __init__(self, environ, start_response):
        self.environ = environ
        self.start_response = start_response
        self.status = self.headers = self.exc_info = None
        self.held = False
        #: Whether the server was given the answer's status and headers.
        self.started = False
        #: What a held answer wrote with ``write()``.
        self.written = []
        self._server_write = None

    def start(self, status, headers, exc_info=None):
        self.status, self.headers, self.exc_info = status, headers, exc_info
        self.held = (int(status.split(' ', 1)[0]) >= 400
                     and self.environ.get('REQUEST_METHOD') != 'HEAD')
        return self.written.append if self.held else self._write

    def pass_on(self):
        """Give the server the answer's status and headers, once."""
        if not self.started:
            self._server_write = self.start_response(
                self.status, self.headers, self.exc_info)
            self.started = True

    def _write(self, data):
        self.pass_on()
        self._server_write(data)

    def first_chunk(self, body):
        """``body`` again, once its first chunk made the application
        call ``start_response``."""
        chunks = iter(body)
        try:
            first = next(chunks, None)
        except BaseException:
            _close(body)
            raise
        if self.status is None:
            _close(body)
            raise RuntimeError('the application did not call '
                               'start_response')
        return _Rest(first, chunks, body)

    def read(self, body):
        """All of a held answer's body; ``body`` closed."""
        try:
            return b''.join(self.written + [chunk for chunk in body])
        finally:
            _close(body)


class _Rest:
    """An application's body whose first chunk was taken already."""

    def __init__(self, first, rest, body):
        self.first, self.rest, self.body = first, rest, body

    def __iter__(self):
        if self.first is not None:
            yield self.first
        yield from self.rest

    def close(self):
        _close(self.body)


def _close(body):
    close = getattr(body, 'close', None)
    if close is not None:
        close()
