"""Entry points for oslo-config-generator."""

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_privsep import priv_context
from oslo_service import opts as service_opts

from cyborg.conf import agent
from cyborg.conf import aio
from cyborg.conf import api
from cyborg.conf import conductor
from cyborg.conf import database
from cyborg.conf import default
from cyborg.conf import drivers
from cyborg.conf import metrics
from cyborg.conf import nic
from cyborg.conf import profiler
from cyborg.conf import security
from cyborg.conf import services

_MODULES = (default, api, agent, aio, conductor, database, services,
            drivers, nic, security, metrics)

#: The option namespaces (entry points "oslo.config.opts") of cyborg and
#: the libraries it configures: what etc/cyborg/cyborg-config-generator.conf
#: lists, and what the daemons check config files against.
NAMESPACES = ('cyborg', 'oslo.db', 'oslo.log', 'oslo.messaging',
              'oslo.middleware.cors', 'oslo.middleware.healthcheck',
              'oslo.middleware.http_proxy_to_wsgi',
              'oslo.middleware.sizelimit', 'oslo.policy',
              'oslo.service.service', 'keystonemiddleware.auth_token',
              'osprofiler')


def list_opts():
    """(group, opts) pairs of every cyborg option, for the generator."""
    merged = {}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            name = getattr(group, 'name', group)
            merged.setdefault(name, []).extend(opts)
    # The privsep daemon of the agent (cyborg.privsep): how it is started.
    merged['cyborg_sys_admin'] = list(priv_context.OPTS)
    return sorted(merged.items(), key=lambda item: item[0])


def set_lib_defaults():
    """Our defaults for options of the libraries we use (what
    oslo-config-generator shows)."""
    set_common_defaults()
    set_api_defaults()
    # [profiler] connection_string: cyborg's default, in the sample too.
    profiler.register_opts(cfg.CONF)


#: Seconds oslo.service's launcher gives the API's worker processes to
#: stop (``graceful_shutdown_timeout``, 60 by oslo.service's default): a
#: daemon stops within 5 s of SIGTERM (cyborg.common.service.STOP_TIMEOUT
#: in one process).
WORKERS_STOP_TIMEOUT = 3


def set_common_defaults():
    """The defaults every daemon needs."""
    # On the option objects, so the sample file shows our default too.
    cfg.set_defaults(db_options.database_opts,
                     connection=database.DEFAULT_CONNECTION)
    service_opts.set_service_opts_defaults(
        cfg.CONF, graceful_shutdown_timeout=WORKERS_STOP_TIMEOUT)


def set_api_defaults():
    """The defaults of the API's middleware; set by the API only, so
    the agent and the conductor do not load keystonemiddleware."""
    from keystonemiddleware import auth_token  # noqa: F401 (registers)
    from oslo_middleware import cors
    from oslo_middleware.healthcheck import opts as healthcheck_opts
    # A service token must carry a service role to count as one (the
    # gate on binding and unbinding accelerator requests relies on it).
    cfg.CONF.set_default('service_token_roles_required', True,
                     group='keystone_authtoken')
    # /healthcheck checks the database and the broker (cyborg.api.health).
    cfg.set_defaults(healthcheck_opts.HEALTHCHECK_OPTS,
                     backends=['cyborg_database', 'cyborg_broker'])
    cors.set_defaults(
        allow_headers=['X-Auth-Token', 'X-Openstack-Request-Id',
                       'X-Identity-Status', 'X-Roles', 'X-Service-Catalog',
                       'X-User-Id', 'X-Tenant-Id', 'OpenStack-API-Version'],
        expose_headers=['X-Auth-Token', 'X-Openstack-Request-Id',
                        'X-Subject-Token', 'X-Service-Token',
                        'OpenStack-API-Version',
                        'OpenStack-API-Minimum-Version',
                        'OpenStack-API-Maximum-Version'],
        allow_methods=['GET', 'PUT', 'POST', 'DELETE', 'PATCH'])
