"""Authentication in front of the API: keystone tokens, or none.

Either way the result is the set of headers keystonemiddleware sets
(``X-Identity-Status``, ``X-User-Id``, ``X-Project-Id``, ``X-Roles``,
``X-Service-Roles``), from which ``ContextHook`` builds the request
context. The version documents and the healthcheck need no token, so
clients can discover the API before they authenticate.
"""

import re

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token

from cyborg.common import config_check

# Paths answered without a token (PATH_INFO, below any mount prefix).
PUBLIC_PATH = re.compile(r'^/?(v[12]/?|healthcheck)?(\.json)?$')

# Identity headers a client must not be able to forge on a public path,
# where keystonemiddleware does not run to strip them.
_IDENTITY_PREFIXES = ('HTTP_X_IDENTITY_STATUS', 'HTTP_X_USER',
                      'HTTP_X_PROJECT', 'HTTP_X_TENANT', 'HTTP_X_ROLE',
                      'HTTP_X_SERVICE_', 'HTTP_X_DOMAIN',
                      'HTTP_X_IS_ADMIN_PROJECT', 'HTTP_X_SYSTEM_SCOPE')

ADMIN_USER = 'admin'
ADMIN_ROLES = 'admin,member,reader'
USER_ROLES = 'member,reader'
SERVICE_ROLES = 'service'


def is_public(path):
    return bool(PUBLIC_PATH.match(path or '/'))


def _strip_identity(environ):
    for key in [k for k in environ if k.startswith(_IDENTITY_PREFIXES)]:
        del environ[key]


class PublicRoutes:
    """Sends public paths straight to ``app`` and the rest through
    ``protected`` (the same app behind authentication)."""

    def __init__(self, app, protected):
        self.app = app
        self.protected = protected

    def __call__(self, environ, start_response):
        if is_public(environ.get('PATH_INFO')):
            _strip_identity(environ)
            environ['is_public_api'] = True
            return self.app(environ, start_response)
        return self.protected(environ, start_response)


def keystone(app, conf):
    """``app`` behind keystonemiddleware's auth_token, configured from the
    ``[keystone_authtoken]`` group of ``conf``; public paths bypass it."""
    protected = auth_token.AuthProtocol(app, {'oslo_config_config': conf})
    return PublicRoutes(app, protected)


def _identity_from_token(token):
    """(user, project) from a ``<user>[:<project>]`` token, the noauth
    convention of Nova and Placement; the project defaults to the user."""
    user, _sep, project = (token or '').partition(':')
    return user, project or user


class NoAuthMiddleware:
    """Takes the caller's word for who it is. For tests and the all-in-one.

    Identity headers sent by the client are used as they are. A token
    ``<user>[:<project>]`` fills in what the headers leave out; user
    ``admin`` gets the roles keystone would imply for an admin (admin,
    member, reader), any other user member and reader. A non-empty
    ``X-Service-Token`` (what keystoneauth's ``ServiceTokenAuthWrapper``
    adds, as Nova does when it calls cyborg) gives the ``service`` role
    that keystonemiddleware would give a validated service token, unless
    ``X-Service-Roles`` says otherwise. A request with neither a token nor
    identity headers is anonymous (``X-Identity-Status: Invalid``) and
    policy will refuse it what it refuses anyone.
    """

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        user, project = _identity_from_token(environ.get('HTTP_X_AUTH_TOKEN'))
        if user:
            environ.setdefault('HTTP_X_USER_ID', user)
            environ.setdefault('HTTP_X_PROJECT_ID', project)
            environ.setdefault('HTTP_X_ROLES', ADMIN_ROLES
                               if user == ADMIN_USER else USER_ROLES)
        if environ.get('HTTP_X_SERVICE_TOKEN'):
            environ.setdefault('HTTP_X_SERVICE_ROLES', SERVICE_ROLES)
        known = bool(environ.get('HTTP_X_USER_ID'))
        environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed' if known else 'Invalid'
        return self.app(environ, start_response)


AUTHTOKEN_GROUP = 'keystone_authtoken'


def check_config(conf):
    """Raise ``config_check.ConfigError`` unless the authentication that
    ``[DEFAULT] auth_strategy`` names can be set up from ``conf``.

    With ``keystone``, keystonemiddleware validates every token with the
    auth plugin of ``[keystone_authtoken] auth_type`` (or of the group
    its ``auth_section`` names): with none it cannot validate any, and
    every request but the public ones fails. So that option must be set
    (in a file, the environment or on the command line; the other
    options of the group are the plugin's own and optional ones), and the
    plugin must load from what is set, exactly as keystonemiddleware
    loads it (the plugin exists, its required options are set). Nothing
    is sent to Keystone here.
    """
    if conf.auth_strategy != 'keystone':
        return
    ks_loading.register_auth_conf_options(conf, AUTHTOKEN_GROUP)
    group = conf[AUTHTOKEN_GROUP].auth_section or AUTHTOKEN_GROUP
    if group != AUTHTOKEN_GROUP:
        ks_loading.register_auth_conf_options(conf, group)
    plugin = conf[group].auth_type
    if not plugin:
        raise config_check.ConfigError(
            '[DEFAULT] auth_strategy is keystone but [%s] sets no auth_type '
            '(is the section missing or misspelled?): add [%s] with '
            'auth_type = password, auth_url, username, password, '
            'project_name and their domains (see the installation guide), '
            'or set auth_strategy = noauth for a cloud without Keystone'
            % (group, group))
    if plugin not in config_check.auth_plugin_names():
        raise config_check.ConfigError(
            '[%s] auth_type = %s: keystoneauth has no such plugin '
            '(password, v3password, token... are)' % (group, plugin))
    try:
        loader = ks_loading.get_plugin_loader(plugin)
        conf.register_opts(ks_loading.get_auth_plugin_conf_options(loader),
                           group=group)
        loader.load_from_options_getter(
            lambda opt: conf[group][opt.dest])
    except ks_exceptions.MissingRequiredOptions as e:
        raise config_check.ConfigError(
            '[%s] auth_type = %s needs %s, which [%s] does not set'
            % (group, plugin, ', '.join(o.dest for o in e.options), group)
        ) from None


def setup(app, conf):
    """``app`` behind the authentication ``[DEFAULT] auth_strategy`` names."""
    if conf.auth_strategy == 'noauth':
        return NoAuthMiddleware(app)
    return keystone(app, conf)
