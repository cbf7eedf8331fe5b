"""Accelerator drivers on the agents' hosts (v2 API, microversion 2.5):
list them, install (load and enable), update (reload), uninstall."""

from cliff import command

from cyborg.cli import client
from cyborg.cli import output

FIELDS = ('host', 'name', 'status', 'device_type', 'version', 'error')


def _add_name_and_host(parser, what):
    parser.add_argument('name', metavar='NAME',
                        help='the driver\'s entry point name, for example '
                             'intel_qat_driver')
    parser.add_argument('--host', metavar='HOST',
                        help='%s on this host only (default: every host '
                             'whose agent is up)' % what)
    return parser


def _host_body(parsed_args, **body):
    if parsed_args.host:
        body['host'] = parsed_args.host
    return body


def _listing(doc):
    return output.listing(doc['drivers'], FIELDS)


class ListDrivers(output.Lister):
    """List the drivers of each host with their status."""

    def nothing(self, parsed_args):
        return 'No drivers%s.' % output.on_host(parsed_args)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='HOST',
                            help='only the drivers of this host')
        return parser

    def take_action(self, parsed_args):
        return _listing(self.app.client.v2(
            'GET', '/drivers', params=_host_body(parsed_args)).json())


class InstallDriver(output.Lister):
    """Load and enable a driver.

    Lists the driver's status on each host.
    """

    NOUN = 'hosts whose agent is up'

    def get_parser(self, prog_name):
        return _add_name_and_host(super().get_parser(prog_name), 'install')

    def take_action(self, parsed_args):
        body = _host_body(parsed_args, name=parsed_args.name)
        return _listing(self.app.client.v2('POST', '/drivers',
                                           json=body).json())


class UpdateDriver(output.Lister):
    """Reload a driver with its current settings.

    Lists the driver's status on each host.
    """

    NOUN = 'hosts whose agent is up'

    def get_parser(self, prog_name):
        return _add_name_and_host(super().get_parser(prog_name), 'reload')

    def take_action(self, parsed_args):
        return _listing(self.app.client.v2(
            'PATCH', '/drivers/%s' % client.quote(parsed_args.name),
            json=_host_body(parsed_args)).json())


class UninstallDriver(command.Command):
    """Unload a driver.

    Refused (HTTP 409) while any of its devices is in use.
    """

    def get_parser(self, prog_name):
        return _add_name_and_host(super().get_parser(prog_name), 'uninstall')

    def take_action(self, parsed_args):
        self.app.client.v2('DELETE',
                           '/drivers/%s' % client.quote(parsed_args.name),
                           params=_host_body(parsed_args))


COMMANDS = {
    'driver-list': ListDrivers,
    'install-driver': InstallDriver,
    'update-driver': UpdateDriver,
    'uninstall-driver': UninstallDriver,
}
