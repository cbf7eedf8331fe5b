"""``/v1/accelerators``: the accelerators of the Pike API proposal.

An accelerator is a named view of one deployable and its device. Where
the proposal is loose, this is what is served (``api-ref`` says the
same):

* ``GET /v1/accelerators`` answers ``{"accelerators": [...]}`` (the
  proposal's example names the key ``accelerator``);
* ``POST /v1/accelerators`` and ``POST /v1/accelerators/{uuid}`` both
  create; the body is ``{"name", "uuid"?}`` checked against the
  proposal's JSON schema; a uuid in both places must agree;
* ``PUT /v1/accelerators/{uuid}/acc_specs`` (or ``acc_spec``) replaces
  the spec: ``{"acc_specs": {...}}``; the version the writer read comes
  from ``If-Match`` or the body's ``spec_version`` (else the version the
  API reads now), and a spec changed meanwhile is a 409;
* ``PUT /v1/accelerators/{uuid}`` attaches: ``{"instance_uuid": ...}``
  or ``{"host": ...}``; the proposal's ``name``/``uuid`` may come along
  if they are the accelerator's.
"""

import jsonschema
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.common import exception
from cyborg.db import accelerators as db_accelerators
from cyborg.i18n import _

CREATE_SCHEMA = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'uuid': {'type': 'string', 'format': 'uuid'},
    },
    'required': ['name'],
    'additionalProperties': False,
}
SPEC_SCHEMA = {
    'type': 'object',
    'properties': {
        'acc_specs': {
            'type': 'object',
            'properties': {
                'remote': {'type': 'integer', 'enum': [0, 1]},
                'num': {'type': 'integer', 'minimum': 1},
                'device_type': {'type': 'string'},
                'acc_capability': {'type': 'object'},
            },
            'additionalProperties': False,
        },
        'spec_version': {'type': 'integer', 'minimum': 1},
    },
    'required': ['acc_specs'],
    'additionalProperties': False,
}
ATTACH_SCHEMA = {
    'type': 'object',
    'properties': {
        'instance_uuid': {'type': 'string', 'format': 'uuid'},
        'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'name': {'type': 'string'},
        'uuid': {'type': 'string'},
    },
    'oneOf': [{'required': ['instance_uuid']}, {'required': ['host']}],
    'additionalProperties': False,
}
SPEC_SEGMENTS = ('acc_specs', 'acc_spec')
_FORMATS = jsonschema.FormatChecker()


@_FORMATS.checks('uuid')
def _is_uuid(value):
    return not isinstance(value, str) or uuidutils.is_uuid_like(value)


def _validated(schema, body):
    try:
        jsonschema.validate(body, schema, format_checker=_FORMATS)
    except jsonschema.ValidationError as e:
        where = '/'.join(str(p) for p in e.absolute_path)
        raise exception.InvalidParameterValue(
            err=_('Invalid body%s: %s') % (
                ' at %s' % where if where else '', e.message)) from e
    return body


def capability(view):
    """The stored capability, or what the deployable's attributes say:
    its resource class and traits."""
    if view.row.acc_capability:
        return jsonutils.loads(view.row.acc_capability)
    attributes = dict(view.attributes)
    return {'resource_class': attributes.get('rc'),
            'traits': sorted(value for key, value in view.attributes
                             if key.startswith('trait'))}


def accelerator_view(request, view):
    row = view.row
    return {
        'uuid': row.uuid,
        'name': row.name,
        'state': row.state,
        'host': view.hostname,
        'device_uuid': view.device_uuid,
        'deployable_uuid': view.deployable_uuid,
        'instance_uuid': row.instance_uuid,
        'attached_host': row.attached_host,
        'spec_version': row.spec_version,
        'acc_specs': {
            'remote': row.remotable,
            'num': view.num_accelerators,
            'device_type': view.device_type or row.device_type,
            'acc_capability': capability(view),
        },
        'created_at': common.timestamp(row.created_at),
        'updated_at': common.timestamp(row.updated_at),
        'links': [link.make_link(request, 'self', 'v1', 'accelerators',
                                 row.uuid)],
    }


def _etag(version):
    return '"%d"' % version


def _expected_version(request, body, current):
    """The spec version the writer based the change on."""
    if_match = request.headers.get('If-Match')
    if if_match:
        try:
            return int(if_match.strip().strip('W/').strip('"'))
        except ValueError as e:
            raise exception.InvalidParameterValue(
                err=_('If-Match must be the ETag of the accelerator, '
                      'a quoted spec version such as "3".')) from e
    return body.get('spec_version', current)


def _create(uuid=None):
    request = pecan.request
    context = common.authorize('cyborg:accelerator:create')
    body = _validated(CREATE_SCHEMA, common.json_body(request))
    if uuid is not None:
        common.check_uuid(uuid)
        if body.get('uuid', uuid) != uuid:
            raise exception.InvalidParameterValue(
                err=_('The uuid in the body is not the one in the path.'))
        body['uuid'] = uuid
    new_uuid = request.conductor_api.accelerator_create(
        context, body['name'], body.get('uuid'))
    common.created(link.make_link(request, 'self', 'v1', 'accelerators',
                                  new_uuid)['href'])


class SpecController:
    """``/v1/accelerators/{uuid}/acc_specs``."""

    def __init__(self, accelerator):
        self.accelerator = accelerator

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='PUT', template='json')
    def index_put(self):
        request = pecan.request
        context = common.authorize('cyborg:accelerator:update')
        body = _validated(SPEC_SCHEMA, common.json_body(request))
        view = self.accelerator.load(context)
        specs = body['acc_specs']
        for key, actual in (('num', view.num_accelerators),
                            ('device_type', view.device_type)):
            if key in specs and specs[key] != actual:
                raise exception.InvalidParameterValue(
                    err=_('acc_specs %(key)s is what the hardware has '
                          '(%(actual)s) and cannot be changed.')
                    % {'key': key, 'actual': actual})
        expected = _expected_version(request, body, view.row.spec_version)
        request.conductor_api.accelerator_update_spec(
            context, self.accelerator.uuid, expected,
            specs.get('remote', view.row.remotable),
            specs.get('acc_capability', capability(view)))
        return self.accelerator.show(self.accelerator.load(context))


class AcceleratorController:
    """``/v1/accelerators/{uuid}`` and its ``acc_specs``."""

    def __init__(self, uuid):
        self.uuid = uuid

    def load(self, context):
        common.check_uuid(self.uuid)
        return db_accelerators.get_for_api(context, self.uuid)

    def show(self, view):
        pecan.response.headers['ETag'] = _etag(view.row.spec_version)
        return accelerator_view(pecan.request, view)

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def index_get(self):
        context = common.authorize('cyborg:accelerator:get_one')
        return self.show(self.load(context))

    @index.when(method='POST', template='json')
    def index_post(self):
        _create(self.uuid)

    @index.when(method='PUT', template='json')
    def index_put(self):
        """Attach to an instance or a host."""
        request = pecan.request
        context = common.authorize('cyborg:accelerator:attach')
        body = _validated(ATTACH_SCHEMA, common.json_body(request))
        view = self.load(context)
        for key, value in (('name', view.row.name), ('uuid', self.uuid)):
            if key in body and body[key] != value:
                raise exception.InvalidParameterValue(
                    err=_('The %(key)s in the body is not the '
                          "accelerator's (%(value)s).")
                    % {'key': key, 'value': value})
        host = body.get('host')
        if host and not view.row.remotable and host != view.hostname:
            raise exception.InvalidParameterValue(
                err=_('Accelerator %(uuid)s is not remotable (acc_specs '
                      'remote is 0): it can only be attached to its own '
                      'host %(host)s.')
                % {'uuid': self.uuid, 'host': view.hostname})
        request.conductor_api.accelerator_attach(
            context, self.uuid, instance_uuid=body.get('instance_uuid'),
            host=host)
        return self.show(self.load(context))

    @index.when(method='DELETE', template='json')
    def index_delete(self):
        """Detach."""
        context = common.authorize('cyborg:accelerator:detach')
        self.load(context)
        pecan.request.conductor_api.accelerator_detach(context, self.uuid)
        pecan.response.status = 204

    @pecan.expose()
    def _lookup(self, segment, *remainder):
        if segment in SPEC_SEGMENTS:
            return SpecController(self), list(remainder)
        return None

class AcceleratorsController:
    """``/v1/accelerators``."""

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def index_get(self):
        context = common.authorize('cyborg:accelerator:get_all')
        return {'accelerators': [
            accelerator_view(pecan.request, view)
            for view in db_accelerators.list_for_api(context)]}

    @index.when(method='POST', template='json')
    def index_post(self):
        _create()

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        return AcceleratorController(uuid), list(remainder)
