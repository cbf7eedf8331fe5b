"""Accelerators of the v1 API: list (with the hardware the agents
discovered), show, create, update the spec, attach to an instance or a
host, detach."""

import json

from cliff import command
from cliff import show

from cyborg.cli import client
from cyborg.cli import output

# ``free``: the units of discovered hardware not provisioned yet (empty
# for an accelerator, which is one unit).
LIST_FIELDS = ('uuid', 'name', 'state', 'device_type', 'host',
               'instance_uuid', 'attached_host', 'spec_version', 'free')


def _path(uuid, suffix=''):
    return '/accelerators/%s%s' % (client.quote(uuid), suffix)


def _flat(accelerator):
    """The accelerator with its spec's device type at the top level."""
    specs = accelerator.get('acc_specs') or {}
    return dict(accelerator, device_type=specs.get('device_type'))


def load_spec(value):
    """The JSON object of ``--spec``: inline JSON, or ``@FILE``."""
    text = value
    if value.startswith('@'):
        try:
            with open(value[1:]) as f:
                text = f.read()
        except OSError as e:
            raise client.CommandError('Cannot read the spec file %s: %s'
                                      % (value[1:], e.strerror)) from None
    try:
        spec = json.loads(text)
    except ValueError as e:
        raise client.CommandError('--spec is not valid JSON: %s' % e) from None
    if not isinstance(spec, dict):
        raise client.CommandError('--spec must be a JSON object, not %s'
                                  % type(spec).__name__)
    return spec


def uuid_from_location(location):
    """The accelerator uuid at the end of a ``Location`` header."""
    if not location:
        raise client.CommandError('The server created the accelerator '
                                  'without saying where (no Location)')
    return location.rstrip('/').rsplit('/', 1)[-1]


class _ShowAccelerator(show.ShowOne):

    def show(self, accelerator):
        return output.show(accelerator)

    def get(self, uuid):
        return self.app.client.v1('GET', _path(uuid)).json()


class ListAccelerators(output.Lister):
    """List the accelerators and the hardware they come from (v1 API).

    Hardware an agent discovered is listed with state inactive (its
    device is not enabled yet) or ready, and how many of its units are
    free to provision.
    """

    NOUN = 'accelerators'

    def take_action(self, parsed_args):
        doc = self.app.client.v1('GET', '/accelerators').json()
        return output.listing([_flat(a) for a in doc['accelerators']],
                              LIST_FIELDS)


class ShowAccelerator(_ShowAccelerator):
    """Show one accelerator with its spec (v1 API)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='UUID')
        return parser

    def take_action(self, parsed_args):
        return self.show(self.get(parsed_args.uuid))


class CreateAccelerator(_ShowAccelerator):
    """Provision an accelerator: one free unit of the ready hardware (v1
    API)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='NAME')
        parser.add_argument('--uuid', metavar='UUID',
                            help='the uuid to give it (default: chosen by '
                                 'the server)')
        return parser

    def take_action(self, parsed_args):
        body = {'name': parsed_args.name}
        if parsed_args.uuid:
            body['uuid'] = parsed_args.uuid
        response = self.app.client.v1('POST', '/accelerators', json=body)
        uuid = uuid_from_location(response.headers.get('Location'))
        return self.show(self.get(uuid))


class UpdateAccelerator(_ShowAccelerator):
    """Replace an accelerator's spec (v1 API).

    With --spec-version the update is refused (HTTP 409) if someone changed
    the spec since that version.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='UUID')
        parser.add_argument('--spec', metavar='JSON_OR_@FILE', required=True,
                            help='the new acc_specs, a JSON object inline '
                                 'or @ and the name of a file holding it')
        parser.add_argument('--spec-version', metavar='N', type=int,
                            help='the spec_version the update is based on')
        return parser

    def take_action(self, parsed_args):
        body = {'acc_specs': load_spec(parsed_args.spec)}
        headers = {}
        if parsed_args.spec_version is not None:
            headers['If-Match'] = '"%d"' % parsed_args.spec_version
        accelerator = self.app.client.v1(
            'PUT', _path(parsed_args.uuid, '/acc_specs'),
            json=body, headers=headers).json()
        return self.show(accelerator)


class AttachAccelerator(_ShowAccelerator):
    """Attach an accelerator to an instance or a host (v1 API).

    Without --instance or --host it is attached to the host it is on.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='UUID')
        target = parser.add_mutually_exclusive_group()
        target.add_argument('--instance', metavar='INSTANCE_UUID')
        target.add_argument('--host', metavar='HOST')
        return parser

    def take_action(self, parsed_args):
        body = {}
        if parsed_args.instance:
            body['instance_uuid'] = parsed_args.instance
        elif parsed_args.host:
            body['host'] = parsed_args.host
        accelerator = self.app.client.v1('PUT', _path(parsed_args.uuid),
                                         json=body).json()
        return self.show(accelerator)


class DetachAccelerator(command.Command):
    """Detach an accelerator from its instance or host (v1 API)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='UUID')
        return parser

    def take_action(self, parsed_args):
        self.app.client.v1('DELETE', _path(parsed_args.uuid))


COMMANDS = {
    'accelerator-list': ListAccelerators,
    'accelerator-show': ShowAccelerator,
    'accelerator-create': CreateAccelerator,
    'accelerator-update': UpdateAccelerator,
    'accelerator-attach': AttachAccelerator,
    'accelerator-detach': DetachAccelerator,
}
