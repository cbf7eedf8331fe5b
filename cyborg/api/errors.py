"""What an error looks like on the wire, decided in one place.

Clients (python-cyborgclient, openstacksdk) read ``error_message`` from
the body of a failed response and JSON-decode it again to find
``faultstring``; so every error body is that double-encoded envelope.
Status codes come from the exception: cyborg exceptions carry ``code``;
anything we do not know is a 500 whose details stay in the log.
"""

from http import client as http

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_serialization import jsonutils
import webob.exc
import wsme.exc

from cyborg.common import exception
from cyborg.i18n import _

LOG = logging.getLogger(__name__)

GENERIC_MESSAGE = _('An unexpected error prevented the server from '
                    'fulfilling the request.')


def status_and_message(exc):
    """(HTTP status, client-safe message) for an exception raised while
    handling a request. Unexpected exceptions are logged here."""
    if isinstance(exc, exception.CyborgException):
        status, message = int(exc.code), exc.public_message()
        if message != str(exc):
            # What the client is not told (a path on this server).
            LOG.error('Request failed with %s: %s', status, exc)
            return status, message
    elif isinstance(exc, webob.exc.HTTPException):
        status, message = exc.code, _http_message(exc)
    elif isinstance(exc, wsme.exc.ClientSideError):
        status, message = exc.code, exc.faultstring
    elif isinstance(exc, messaging.MessagingTimeout):
        # The conductor did not answer: the request may be retried.
        status, message = (http.SERVICE_UNAVAILABLE,
                           _('The cyborg conductor did not answer in time; '
                             'try again later.'))
    elif isinstance(exc, messaging.MessageDeliveryFailure):
        # RabbitMQ did not take it: unreachable, or no conductor ever
        # declared the exchange (only conductors may).
        status, message = (http.SERVICE_UNAVAILABLE,
                           _('The message bus did not take the request '
                             '(RabbitMQ unreachable, or no cyborg conductor '
                             'started yet); try again later.'))
    else:
        LOG.error('Unexpected error handling the request: %s', exc,
                  exc_info=exc)
        return http.INTERNAL_SERVER_ERROR, GENERIC_MESSAGE
    if status >= http.INTERNAL_SERVER_ERROR:
        LOG.error('Request failed with %s: %s', status, message)
    return status, message


def headers_of(exc):
    """The headers an error response to ``exc`` carries besides the
    envelope's: those a cyborg exception names (``Retry-After`` of
    DatabaseUnavailable)."""
    if isinstance(exc, exception.CyborgException):
        return dict(exc.headers)
    return {}


def _http_message(exc):
    """webob's detail, else its explanation, else its title where the
    explanation is only the generic text of the 4xx or 5xx family."""
    if exc.detail:
        return exc.detail
    generic = (webob.exc.HTTPClientError.explanation,
               webob.exc.HTTPServerError.explanation)
    return exc.title if exc.explanation in generic else exc.explanation


def fault(status, message):
    """The inner document, in the shape WSME gives its faults."""
    return {'faultcode': 'Client' if status < 500 else 'Server',
            'faultstring': message,
            'debuginfo': None}


def envelope(status, message):
    """The body of an error response: the fault, JSON-encoded, under
    ``error_message``."""
    return {'error_message': jsonutils.dumps(fault(status, message))}


def envelope_bytes(status, message):
    return jsonutils.dump_as_bytes(envelope(status, message))
