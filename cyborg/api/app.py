"""The API's WSGI application, assembled in code.

From the outside in::

    AccessLog         one INFO line per request ([api] access_log)
    Metrics           counts and times each request (cyborg.api.middleware.
                      metrics; served by the [metrics] listener)
    HTTPProxyToWSGI   scheme, host and prefix from a proxy's headers
    RequestId         x-openstack-request-id on every response
    CORS              [cors] options
    /healthcheck      oslo.middleware healthcheck, no auth; 503 while
                      the database or the broker is down (cyborg.api.health)
    osprofiler        a request whose X-Trace-Info is signed with one of
                      [profiler] hmac_keys is traced (cyborg.common.
                      profiler; only with [profiler] enabled)
    ParsableError     every 4xx/5xx body becomes the error envelope
    BodySizeLimit     413 for a body over [oslo_middleware]
                      max_request_body_size (oslo.middleware's sizelimit)
    URLCheck          400 for a path or query string that is not UTF-8 or
                      holds control characters
    auth              keystonemiddleware, or noauth ([DEFAULT] auth_strategy)
    pecan             hooks and the controllers of cyborg.api.controllers

There is no paste file: the pipeline is part of the code, so a deployment
cannot silently drop a layer, and tests build exactly what runs.
"""

from oslo_log import log as logging
from oslo_middleware import healthcheck
import pecan

from cyborg.api.controllers import root
from cyborg.api import health
from cyborg.api import hooks
from cyborg.api import validation
from cyborg.api.middleware import access_log
from cyborg.api.middleware import auth
from cyborg.api.middleware import body_size
from cyborg.api.middleware import lean
from cyborg.api.middleware import metrics as metrics_filter
from cyborg.api.middleware import parsable_error
from cyborg.common import preflight
from cyborg.common import profiler
from cyborg.compat import pecan as pecan_compat
from cyborg import conf as cyborg_conf
from cyborg.conf import opts as conf_opts
from cyborg.db import migration

CONF = cyborg_conf.CONF
LOG = logging.getLogger(__name__)

HEALTHCHECK_PATH = '/healthcheck'


class PathDispatch:
    """Sends ``path`` (exactly) to ``special``, everything else to
    ``app``. The healthcheck is an application of its own, not a filter."""

    def __init__(self, app, path, special):
        self.app = app
        self.path = path
        self.special = special

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') == self.path:
            return self.special(environ, start_response)
        return self.app(environ, start_response)


# pecan asks for the argument list of the controller method at every
# request, and lists every controller's attributes a request walks
# through; each function's argument list is looked for once, each
# controller class's custom routes once.
pecan_compat.cache_argspecs()
pecan_compat.detect_routes_once()


def pecan_app(conductor_api=None):
    """The controllers with their hooks, JSON only."""
    return pecan.make_app(
        root.RootController(),
        hooks=[hooks.ErrorHook(), hooks.AcceptHook(),
               hooks.MicroversionHook(),
               hooks.ContextHook(), hooks.ConductorAPIHook(conductor_api),
               hooks.EmptyBodyHook()],
        default_renderer='json',
        # /v2 and /v2/ are the same resource; no redirect.
        force_canonical=False,
        # A dot in a resource name must not change the content type.
        guess_content_type_from_ext=False,
        # Bodies are read by cyborg.api.validation only.
        request_cls=validation.Request,
        errors={})


def check_can_serve(conf, prog, at_head=True):
    """What the API checks before it serves (``cyborg-api``, its WSGI
    application, the all-in-one), through :func:`preflight.run`: that its
    authentication can be set up, that the database answers and, with
    ``at_head``, holds this release's schema (the all-in-one upgrades
    its own). Call after ``db_api.configure``."""
    preflight.run(prog, lambda: auth.check_config(conf),
                  lambda: migration.check_ready(conf.database.connection,
                                                at_head=at_head))


def healthcheck_app(conf):
    """oslo.middleware's healthcheck with the backends of ``[healthcheck]
    backends`` (cyborg's database and broker checks by default,
    :mod:`cyborg.api.health`); a list that leaves them out, or names one
    that is not installed, is said in the log."""
    app = healthcheck.Healthcheck(None, conf)
    missing = health.missing_backends(conf)
    if missing:
        LOG.warning('[healthcheck] backends leaves out %s: /healthcheck '
                    'answers 200 while what they check is down',
                    ', '.join(missing))
    unknown = health.unknown_backends(conf)
    if unknown:
        LOG.error('[healthcheck] backends names %s, which no installed '
                  'package provides (entry points oslo.middleware.'
                  'healthcheck): /healthcheck does not check it; correct '
                  'the name, or reinstall cyborg', ', '.join(unknown))
    return app


def setup_app(conf=CONF, conductor_api=None):
    """The whole API pipeline as one WSGI application. ``conductor_api``
    replaces the RPC client (the all-in-one calls its conductor
    directly)."""
    conf_opts.set_api_defaults()
    app = auth.setup(pecan_app(conductor_api), conf)
    app = validation.URLCheck(app)
    app = body_size.BodySizeLimit(app, conf)
    app = parsable_error.ParsableErrorMiddleware(app)
    app = profiler.wsgi_middleware(app, conf)
    app = PathDispatch(app, HEALTHCHECK_PATH, healthcheck_app(conf))
    # oslo.middleware's CORS, RequestId and HTTPProxyToWSGI, without
    # their webob round trip where they change nothing (lean).
    app = lean.CORS(app, conf)
    app = lean.RequestId(app)
    app = lean.ProxyHeaders(app, conf)
    app = metrics_filter.Metrics(app)
    return access_log.setup(app, conf)
