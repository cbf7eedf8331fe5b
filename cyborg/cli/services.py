"""Acceleration services (v2 API, microversion 2.5): run discovery now
and list what each discovered backend offers."""

from cyborg.cli import output

DISCOVERY_FIELDS = ('hostname', 'status', 'devices', 'deployables')
SERVICE_FIELDS = ('host', 'service', 'device_type', 'driver_name',
                  'deployable_name', 'status', 'device_uuid',
                  'deployable_uuid')
# How much longer than the server's wait the client waits for the answer.
DISCOVERY_MARGIN = 30


class DiscoverServices(output.Lister):
    """Discover accelerators now, on every host or one.

    Waits for the agents' reports; a host whose agent did not report in
    time has the status "no answer".
    """

    NOUN = 'hosts whose agent is up'

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='HOST',
                            help='discover on this host only')
        parser.add_argument('--timeout', metavar='SECONDS', type=float,
                            help='how long the server waits for the '
                                 'reports (default: the server\'s)')
        return parser

    def take_action(self, parsed_args):
        body, timeout = {}, None
        if parsed_args.host:
            body['host'] = parsed_args.host
        if parsed_args.timeout is not None:
            body['timeout'] = parsed_args.timeout
            timeout = parsed_args.timeout + DISCOVERY_MARGIN
        doc = self.app.client.v2('POST', '/discovery', json=body,
                                 timeout=timeout).json()
        return output.listing(doc['hosts'], DISCOVERY_FIELDS)


class ListServices(output.Lister):
    """List the acceleration services of the discovered devices."""

    def nothing(self, parsed_args):
        return 'No acceleration services%s%s.' % (
            output.on_host(parsed_args),
            ' of type %s' % parsed_args.type if parsed_args.type else '')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='HOST',
                            help='only the services of this host')
        parser.add_argument('--type', metavar='DEVICE_TYPE',
                            help='only devices of this type (GPU, FPGA, '
                                 'QAT, ...)')
        return parser

    def take_action(self, parsed_args):
        params = {}
        if parsed_args.host:
            params['host'] = parsed_args.host
        if parsed_args.type:
            params['device_type'] = parsed_args.type
        doc = self.app.client.v2('GET', '/services', params=params).json()
        return output.listing(doc['services'], SERVICE_FIELDS)


COMMANDS = {
    'discover-services': DiscoverServices,
    'service-list': ListServices,
}
