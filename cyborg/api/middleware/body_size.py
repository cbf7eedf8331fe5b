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
import webob.dec

from cyborg.api.middleware import parsable_error
from cyborg.compat import oslo_middleware as middleware_compat
from cyborg.i18n import _


class BodySizeLimit(sizelimit.RequestBodySizeLimiter):

    @webob.dec.wsgify
    def __call__(self, req):
        limit = middleware_compat.option(self, 'max_request_body_size')
        if req.content_length is not None and req.content_length > limit:
            return parsable_error.error_response(
                http.REQUEST_ENTITY_TOO_LARGE,
                _('The request body is larger than %(limit)d bytes, the '
                  'limit set by [oslo_middleware] max_request_body_size.')
                % {'limit': limit})
        return super().__call__(req)
