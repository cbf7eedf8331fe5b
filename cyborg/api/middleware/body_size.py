"""A bound on the size of request bodies: oslo.middleware's sizelimit.

``[oslo_middleware] max_request_body_size`` (114,688 bytes by default,
the library's default) is the largest body the API reads. A body that
says it is larger (``Content-Length``) is refused at once with 413 and
never read; one sent without a length (chunked) is refused with 413 as
soon as reading it passes the limit.

oslo.middleware words the first 413 with a ``%s`` where the limit
should be; this subclass says the limit and the option instead.
"""

from http import client as http

from oslo_middleware import sizelimit
import webob
from webob import descriptors

from cyborg.api.middleware import parsable_error
from cyborg.compat import oslo_middleware as middleware_compat
from cyborg.i18n import _


class BodySizeLimit(sizelimit.RequestBodySizeLimiter):
    """oslo.middleware's sizelimit in plain WSGI: its checks, and its
    limited reader given to a body without a length, but no webob
    request and response made around the application (two of them, about
    2 % of the API's CPU in Nova's boot cycle); what the application
    answers goes through as it made it."""

    def __call__(self, environ, start_response):
        limit = middleware_compat.option(self, 'max_request_body_size')
        # The Content-Length as webob reads it: None when missing or
        # not a number.
        length = descriptors.parse_int_safe(environ.get('CONTENT_LENGTH'))
        if length is not None and length > limit:
            return parsable_error.error_response(
                http.REQUEST_ENTITY_TOO_LARGE,
                _('The request body is larger than %(limit)d bytes, the '
                  'limit set by [oslo_middleware] max_request_body_size.')
                % {'limit': limit})(environ, start_response)
        if length is None:
            # As the library does: whatever comes is read through its
            # LimitingReader, which raises 413 past the limit.
            request = webob.Request(environ)
            request.body_file = sizelimit.LimitingReader(request.body_file,
                                                         limit)
        return self.application(environ, start_response)

