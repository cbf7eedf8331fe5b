"""The ``cyborg`` application: its options, its session, its commands.

Authentication is keystoneauth's, configured as for any OpenStack client:
``--os-*`` options, ``OS_*`` variables, ``clouds.yaml`` and ``--os-cloud``
(openstacksdk's config loader), and the endpoint comes from the service
catalog (type ``accelerator``). ``--os-endpoint URL`` (``OS_ENDPOINT``)
given without keystone credentials talks to that URL with the all-in-one's
noauth convention, ``X-Auth-Token: <user>[:<project>]``.
"""

import logging
import os

from cliff import app
from cliff import commandmanager
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading
from keystoneauth1 import token_endpoint
import openstack.config
from openstack import exceptions as sdk_exc

from cyborg.cli import accelerators
from cyborg.cli import attachments
from cyborg.cli import client
from cyborg.cli import drivers
from cyborg.cli import hardware
from cyborg.cli import hosts
from cyborg.cli import services
from cyborg.compat import argparse as argparse_compat
from cyborg import version as cyborg_version

DESCRIPTION = 'Administer the accelerators of an OpenStack cloud (cyborg).'
FAMILIES = (accelerators, drivers, services, hosts, hardware, attachments)
NOAUTH_USER = 'admin'
# Libraries whose INFO and WARNING records repeat what the command's one
# error line says; shown with --debug.
LIBRARY_LOGGERS = ('keystoneauth', 'openstack', 'stevedore', 'urllib3')
NOAUTH_OPTIONS = (
    ('--os-endpoint', '<url>',
     'The cyborg API URL. Without keystone credentials the all-in-one\'s '
     'noauth convention is used; with them, it replaces the catalog\'s '
     'endpoint.'),
    ('--os-username', '<name>',
     'The user of the noauth convention (default: %s).' % NOAUTH_USER),
    ('--os-token', '<token>',
     'The X-Auth-Token to send with --os-endpoint, instead of the noauth '
     'user.'),
)
NO_CREDENTIALS = ('Give keystone credentials (--os-cloud, or --os-auth-url '
                  'and the rest, or the OS_* variables), or --os-endpoint '
                  'URL (OS_ENDPOINT) for an all-in-one')


def _rename_option(parser, old, new):
    """Spell a registered option differently, keeping its destination.

    keystoneauth's ``--timeout`` (the HTTP timeout) would take the
    ``--timeout`` of ``discover-services``: cliff parses the global options
    out of the whole command line. argparse has no public way to do this.
    """
    argparse_compat.rename_option(parser, old, new)


def register_options(parser, argv):
    """The authentication, session and endpoint options on ``parser``;
    which auth plugin options exist depends on ``argv`` (``--os-auth-type``,
    ``--os-cloud``)."""
    openstack.config.OpenStackConfig().register_argparse_arguments(
        parser, list(argv))
    _rename_option(parser, '--timeout', '--os-timeout')
    # Which of these the auth plugin registers depends on its type.
    for option, metavar, help_text in NOAUTH_OPTIONS:
        if not argparse_compat.has_option(parser, option):
            variable = option[2:].upper().replace('-', '_')
            parser.add_argument(option, metavar=metavar,
                                default=os.environ.get(variable),
                                help='%s Defaults to env[%s].'
                                     % (help_text, variable))


def uses_noauth(options):
    """True when ``--os-endpoint`` is the only way given to reach cyborg."""
    keystone = options.os_cloud or getattr(options, 'os_auth_url', None)
    return bool(options.os_endpoint) and not keystone


def noauth_token(options):
    """``--os-token`` if given, else ``<user>[:<project>]``."""
    if options.os_token:
        return options.os_token
    project = (getattr(options, 'os_project_id', None)
               or getattr(options, 'os_project_name', None)
               or os.environ.get('OS_PROJECT_ID')
               or os.environ.get('OS_PROJECT_NAME'))
    user = options.os_username or NOAUTH_USER
    return '%s:%s' % (user, project) if project else user


def catalog_endpoint(session, interface=None, region_name=None):
    """The accelerator endpoint of the session's service catalog."""
    try:
        endpoint = session.get_endpoint(service_type=client.SERVICE_TYPE,
                                        interface=interface,
                                        region_name=region_name)
    except ks_exc.EndpointNotFound:
        endpoint = None
    if not endpoint:
        raise client.CommandError(
            'The service catalog has no %s endpoint (interface %s, region '
            '%s); give --os-endpoint URL'
            % (client.SERVICE_TYPE, interface or 'public',
               region_name or 'any'))
    return endpoint


def _keystone_client(options):
    cloud = openstack.config.OpenStackConfig().get_one(argparse=options)
    session = cloud.get_session()
    endpoint = (options.os_endpoint
                or cloud.get_endpoint(client.SERVICE_TYPE)
                or catalog_endpoint(
                    session, cloud.get_interface(client.SERVICE_TYPE),
                    cloud.get_region_name(client.SERVICE_TYPE)))
    return client.Client(session, endpoint)


def make_client(options):
    """A ``client.Client`` for the parsed global options."""
    if uses_noauth(options):
        auth = token_endpoint.Token(options.os_endpoint,
                                    noauth_token(options))
        session = loading.load_session_from_argparse_arguments(options,
                                                               auth=auth)
        return client.Client(session, options.os_endpoint)
    try:
        return _keystone_client(options)
    except ks_exc.MissingRequiredOptions as e:
        raise client.CommandError('%s. %s' % (str(e).rstrip('.'),
                                              NO_CREDENTIALS)) from None
    except ks_exc.ConnectFailure as e:
        # "Unable to establish connection to URL: <urllib3's story>"
        raise client.CommandError(str(e).partition(': ')[0]) from None
    except (ks_exc.ClientException, sdk_exc.SDKException) as e:
        raise client.CommandError(' '.join(str(e).split())) from None


class CyborgApp(app.App):
    """The cliff application; commands reach the API through
    ``self.client``, made on first use so ``help`` needs no credentials."""

    NAME = 'cyborg'

    def __init__(self, **kwargs):
        manager = commandmanager.CommandManager('cyborg.cli')
        for family in FAMILIES:
            for name, command in family.COMMANDS.items():
                manager.add_command(name, command)
        self._argv = None
        self._client = None
        super().__init__(description=DESCRIPTION,
                         version=cyborg_version.version_string(),
                         command_manager=manager, deferred_help=True,
                         **kwargs)

    def build_option_parser(self, description, version, argparse_kwargs=None):
        argparse_kwargs = dict(argparse_kwargs or {}, allow_abbrev=False)
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        if self._argv is not None:
            register_options(parser, self._argv)
        return parser

    def run(self, argv):
        # The auth options depend on the command line: build the parser now.
        self._argv = list(argv)
        try:
            self.parser = self.build_option_parser(
                DESCRIPTION, cyborg_version.version_string())
        except sdk_exc.ConfigException as e:  # unknown cloud or auth type
            self.stderr.write('%s\n' % ' '.join(str(e).split()))
            return 1
        return super().run(argv)

    def configure_logging(self):
        if self.options.debug:
            self.options.verbose_level = max(self.options.verbose_level, 2)
        super().configure_logging()
        level = logging.DEBUG if self.options.debug else logging.ERROR
        for name in LIBRARY_LOGGERS:
            logging.getLogger(name).setLevel(level)

    @property
    def client(self):
        if self._client is None:
            self._client = make_client(self.options)
        return self._client
