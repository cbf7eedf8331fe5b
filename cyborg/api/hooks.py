"""Pecan hooks: what every request gets before and after its controller.

* ``AcceptHook``: every route answers JSON to any Accept admitting it.
* ``MicroversionHook``: the requested version of a v2 request
  (``request.version``) and the version headers on the response.
* ``ContextHook``: ``request.context``, who is calling.
* ``ConductorAPIHook``: ``request.conductor_api``, the RPC client.
* ``ErrorHook``: exceptions become error responses (``cyborg.api.errors``).
* ``EmptyBodyHook``: 202 and 204 responses without a body.
"""

import threading

from pecan import hooks
from webob import acceptparse
import webob.exc

from cyborg.api.controllers import root
from cyborg.api.controllers import v2
from cyborg.api.middleware import parsable_error
from cyborg.api import microversion
from cyborg.common import context
from cyborg.common import exception
from cyborg.common import rpc
from cyborg.conductor import rpcapi
from cyborg import conf as cyborg_conf

ADMIN_ROLE = 'admin'
JSON = 'application/json'
_V2_KEY = 'cyborg.api.v2'
# The Accept header in a WSGI environ.
_ACCEPT = 'HTTP_ACCEPT'


def make_context(environ):
    """The request context from the headers authentication set.

    ``is_admin`` is true exactly when the caller has the ``admin`` role,
    as upstream does; ``is_service`` when its service token has one of
    ``[api] service_token_roles``; policies decide everything else.
    """
    ctx = context.RequestContext.from_environ(
        environ,
        accepted_service_roles=cyborg_conf.CONF.api.service_token_roles)
    ctx.is_admin = ADMIN_ROLE in ctx.roles
    return ctx


class ContextHook(hooks.PecanHook):

    def before(self, state):
        environ = state.request.environ
        state.request.context = environ[context.ENVIRON_KEY] = make_context(
            environ)


class ConductorAPIHook(hooks.PecanHook):
    """One conductor RPC client per process, made on first use.

    The client is made lazily so that it belongs to the worker process
    serving the request (the app may be built before the workers fork),
    and only once messaging is set up; before that it is None.
    """

    def __init__(self, api=None):
        self._api = api
        self._lock = threading.Lock()

    def _conductor_api(self):
        if self._api is None and rpc.initialized():
            with self._lock:
                if self._api is None:
                    self._api = rpcapi.ConductorAPI()
        return self._api

    def before(self, state):
        state.request.conductor_api = self._conductor_api()


class AcceptHook(hooks.PecanHook):
    """Content negotiation, once for every route: the API answers JSON
    (or nothing), so a request whose ``Accept`` admits
    ``application/json`` (``*/*``, none at all) is served whatever the
    handler declares, and one that admits no JSON is a 406.

    The header is dropped once checked: pecan would otherwise negotiate
    again against each handler's own content types and refuse a handler
    that declares none (no body) with a 406.
    """

    # How closely a media range names JSON; the closest one decides.
    _RANGES = {JSON: 2, 'application/*': 1, '*/*': 0}

    @classmethod
    def admits_json(cls, accept):
        """Whether an ``Accept`` (webob's parsed header) admits JSON. No
        header, or one that cannot be parsed, admits anything; media
        type parameters (``; charset=utf-8``) are not compared."""
        if not isinstance(accept, acceptparse.AcceptValidHeader):
            return True
        closest = None
        for media_range, quality, _params, _extensions in accept.parsed:
            rank = cls._RANGES.get(media_range.partition(';')[0].lower())
            if rank is not None and (closest is None or rank > closest[0]):
                closest = (rank, quality)
        return closest is not None and closest[1] > 0

    #: Values that name JSON or anything, alone (what python-requests
    #: and keystoneauth send): admitted without webob's parse.
    _PLAIN = frozenset([JSON, '*/*'])

    def on_route(self, state):
        request = state.request
        environ = request.environ
        if environ.get(_ACCEPT, JSON) not in self._PLAIN and (
                not self.admits_json(request.accept)):
            raise exception.JSONNotAccepted(
                accept=request.headers.get('Accept'))
        environ.pop(_ACCEPT, None)


class MicroversionHook(hooks.PecanHook):
    """Parses the version of v2 requests before routing, so an
    unacceptable version is a 406 even on a path that does not exist;
    a resource a later microversion added is a 404 naming that version
    (``v2.MIN_VERSIONS``), for every method and path below it."""

    def on_route(self, state):
        request = state.request
        request.version = None
        if root.route_version(request.path_info) == root.V2:
            request.environ[_V2_KEY] = True
            request.version = microversion.parse_environ(request.environ)
            resource = root.v2_resource(request.path_info)
            since = v2.MIN_VERSIONS.get(resource)
            if since:
                microversion.check_resource(resource, since,
                                            request.version)

    def after(self, state):
        if not state.request.environ.get(_V2_KEY):
            return
        response = state.response
        for name, value in microversion.response_headers(
                state.request.version):
            response.headers[name] = value
        vary = list(response.vary or ())
        if microversion.HEADER not in vary:
            response.vary = vary + [microversion.HEADER]


class EmptyBodyHook(hooks.PecanHook):
    """202 and 204 responses carry no body, nor does a controller that
    returns None (a 201 with only a ``Location``). A controller returning
    None with the JSON template would send ``null``, which on a kept-alive
    connection a client reads as the start of the next response."""

    NO_BODY = (202, 204)

    def after(self, state):
        response = state.response
        if (response.status_int in self.NO_BODY and response.body
                or response.body == b'null'):
            response.body = b''
            del response.content_type


class ErrorHook(hooks.PecanHook):
    """Turns any exception from routing, hooks or controllers into the
    error envelope with the status the exception maps to."""

    def on_error(self, state, exc):
        if isinstance(exc, webob.exc.HTTPException) and exc.code < 400:
            return None  # redirects are responses, not errors
        return parsable_error.exception_response(exc)
