"""Give every failed response the error envelope clients parse.

Errors come from several places: our pecan hooks, WSME faults of
controllers, keystonemiddleware's 401, webob's defaults. This middleware
sits outside all of them and rewrites any 4xx/5xx body into the one
envelope of ``cyborg.api.errors``, keeping the status and the other
headers. It is also the last safety net for an exception that escaped.
"""

from oslo_serialization import jsonutils
import webob
import webob.dec

from cyborg.api import errors


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
    """Rewrites 4xx and 5xx bodies into the error envelope."""

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, request):
        try:
            response = request.get_response(self.app)
        except Exception as exc:
            return exception_response(exc)
        if response.status_int < 400 or request.method == 'HEAD':
            return response
        message = _message(response)
        if message is not None:
            _set_envelope(response, message)
        return response
