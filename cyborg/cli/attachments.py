"""Attach accelerators to an instance and detach them, through ARQs
(v2 API, microversion 2.5): Placement and Nova stay consistent."""

from cliff import command

from cyborg.cli import client
from cyborg.cli import output

ARQ_FIELDS = ('uuid', 'state', 'device_profile_name',
              'device_profile_group_id', 'hostname', 'device_rp_uuid',
              'instance_uuid', 'attach_handle_type', 'attach_handle_info')


class AttachInstance(output.Lister):
    """Attach the accelerators of a device profile to an instance.

    Lists the accelerator requests bound for it.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('instance_uuid', metavar='INSTANCE_UUID')
        parser.add_argument('--device-profile', metavar='NAME',
                            required=True,
                            help='the device profile saying what to attach')
        parser.add_argument('--host', metavar='HOST',
                            help='the instance\'s host (default: the '
                                 'conductor chooses)')
        return parser

    NOUN = 'accelerator requests bound'

    def take_action(self, parsed_args):
        body = {'instance_uuid': parsed_args.instance_uuid,
                'device_profile_name': parsed_args.device_profile}
        if parsed_args.host:
            body['host'] = parsed_args.host
        doc = self.app.client.v2('POST', '/attachments', json=body).json()
        return output.listing(doc['arqs'], ARQ_FIELDS)


class DetachInstance(command.Command):
    """Detach every accelerator of an instance.

    Its accelerator requests are unbound and deleted.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('instance_uuid', metavar='INSTANCE_UUID')
        return parser

    def take_action(self, parsed_args):
        self.app.client.v2(
            'DELETE',
            '/attachments/%s' % client.quote(parsed_args.instance_uuid))


COMMANDS = {
    'attach-instance': AttachInstance,
    'detach-instance': DetachInstance,
}
