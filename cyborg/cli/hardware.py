"""What the drivers on each host looked at (v2 API, microversion 2.6):
every PCI function, offered or not, and for one that is not, why and
what to change. The first place to look when a device is missing."""

from cyborg.cli import output

#: The microversion that brought ``/v2/hardware``.
VERSION = '2.6'
FIELDS = ('host', 'address', 'vendor_id', 'product_id', 'name',
          'kernel_driver', 'driver', 'offered', 'reason', 'action',
          'setup_required', 'reboot_required')


class ListHardware(output.Lister):
    """List the PCI functions the drivers of each host looked at.

    One row per function and driver: offered or not, and for one that is
    not, the reason and what to change to offer it.
    """

    def nothing(self, parsed_args):
        return 'No PCI functions%s%s.' % (
            output.on_host(parsed_args),
            ' that are not offered' if parsed_args.not_offered else '')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='HOST',
                            help='only the functions of this host')
        parser.add_argument('--not-offered', action='store_true',
                            help='only the functions that are not offered')
        return parser

    def take_action(self, parsed_args):
        params = {}
        if parsed_args.host:
            params['host'] = parsed_args.host
        if parsed_args.not_offered:
            params['offered'] = 'false'
        doc = self.app.client.request('GET', '/v2/hardware',
                                      microversion=VERSION,
                                      params=params).json()
        return output.listing(doc['hardware'], FIELDS)


COMMANDS = {
    'hardware-list': ListHardware,
}
