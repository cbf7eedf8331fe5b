"""oslo.middleware's RequestId, CORS and HTTPProxyToWSGI without a webob
round trip per request where they change nothing.

Each of oslo.middleware's filters wraps the environ in a webob request,
runs the application into a webob response and serialises it again, and
``ConfigurableMiddleware`` inspects ``process_response``'s arguments on
every request: about a tenth of the API's CPU in Nova's boot cycle for
three filters that, on almost every request, do nothing or add a
header. Here:

* ``RequestId`` is the same filter in plain WSGI: the request id in
  ``openstack.request_id``, a valid inbound ``X-Openstack-Request-Id``
  in ``openstack.global_request_id``, ``x-openstack-request-id`` on the
  response unless it has one;
* ``CORS`` sends to oslo.middleware's CORS only what it can change: a
  request with an ``Origin`` and any ``OPTIONS`` (a preflight, which
  it answers 200 even without an ``Origin``); it adds nothing to any
  other response;
* ``ProxyHeaders`` sends to ``HTTPProxyToWSGI`` only while ``[oslo_
  middleware] enable_proxy_headers_parsing`` is on (read per request,
  as the filter reads it); it does nothing while it is off.

As webob's response does, a ``HEAD`` answer's body is not sent.
"""

import re

from oslo_context import context
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id

from cyborg.compat import oslo_middleware as middleware_compat

_ID_FORMAT = re.compile(request_id.ID_FORMAT)
_INBOUND = 'HTTP_' + request_id.INBOUND_HEADER.upper().replace('-', '_')
_HEADER = request_id.HTTP_RESP_HEADER_REQUEST_ID


def no_body_for_head(environ, body):
    """``body``, or nothing (closing it) for a HEAD request."""
    if environ.get('REQUEST_METHOD') != 'HEAD':
        return body
    close = getattr(body, 'close', None)
    if close is not None:
        close()
    return []


class RequestId:
    """oslo.middleware's ``RequestId``, in plain WSGI."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        inbound = environ.get(_INBOUND, '')
        if _ID_FORMAT.match(inbound):
            environ[request_id.GLOBAL_REQ_ID] = inbound
        req_id = context.generate_request_id()
        environ[request_id.ENV_REQUEST_ID] = req_id

        def start_with_id(status, headers, exc_info=None):
            if not any(name.lower() == _HEADER for name, _v in headers):
                headers = list(headers) + [(_HEADER, req_id)]
            return start_response(status, headers, exc_info)
        return no_body_for_head(environ, self.app(environ, start_with_id))


class CORS:
    """oslo.middleware's ``CORS`` (``[cors]`` options) for the requests
    it can change; the others go straight to ``app``."""

    def __init__(self, app, conf):
        self.app = app
        self.cors = cors.CORS(app, conf)

    def __call__(self, environ, start_response):
        if ('HTTP_ORIGIN' in environ
                or environ.get('REQUEST_METHOD') == 'OPTIONS'):
            return self.cors(environ, start_response)
        return no_body_for_head(environ, self.app(environ, start_response))


class ProxyHeaders:
    """oslo.middleware's ``HTTPProxyToWSGI`` while proxy headers are
    parsed; nothing while they are not."""

    def __init__(self, app, conf):
        self.app = app
        self.proxy = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)

    def __call__(self, environ, start_response):
        if middleware_compat.option(self.proxy,
                                    'enable_proxy_headers_parsing'):
            return self.proxy(environ, start_response)
        return no_body_for_head(environ, self.app(environ, start_response))
