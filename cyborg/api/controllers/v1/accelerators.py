"""``/v1/accelerators``: the accelerators of the Pike API proposal.

An accelerator is a named view of one deployable and its device. Where
the proposal is loose, this is what is served (``api-ref`` says the
same):

* ``GET /v1/accelerators`` answers ``{"accelerators": [...]}`` (the
  proposal's example names the key ``accelerator``);
* ``POST /v1/accelerators`` and ``POST /v1/accelerators/{uuid}`` both
  create; the body is ``{"name", "uuid"?}`` checked against the
  proposal's JSON schema (``cyborg.api.schemas.accelerators``); a uuid
  in both places must agree;
* ``PUT /v1/accelerators/{uuid}/acc_specs`` (or ``acc_spec``) replaces
  the spec: ``{"acc_specs": {...}}``; the version the writer read comes
  from ``If-Match`` or the body's ``spec_version`` (else the version the
  API reads now), and a spec changed meanwhile is a 409;
* ``PUT /v1/accelerators/{uuid}`` attaches: with the proposal's own
  body (``{"name", "uuid"}``, or ``{}``) to the host the accelerator is
  on; ``{"instance_uuid": ...}`` or ``{"host": ...}`` name another
  target; ``name``/``uuid`` must be the accelerator's;
* the list also shows the hardware the agents discovered, one entry per
  deployable (its uuid), ``inactive`` until its device is enabled, then
  ``ready``, with ``acc_specs.num`` its units and ``free`` those not yet
  provisioned; ``POST`` provisions accelerators from those units, one
  unit each (``acc_specs.num`` 1).
"""

from oslo_serialization import jsonutils
import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api.schemas import accelerators as schema
from cyborg.api.schemas import common as common_schema
from cyborg.api import validation
from cyborg.common import exception
from cyborg.db import accelerators as db_accelerators
from cyborg.i18n import _
from cyborg import policies

SPEC_SEGMENTS = ('acc_specs', 'acc_spec')


def capability(view):
    """The stored capability, or what the deployable's attributes say:
    its resource class and traits."""
    if view.row.acc_capability:
        return jsonutils.loads(view.row.acc_capability)
    return _capability(view.attributes)


def _capability(attributes):
    """Resource class and traits from a deployable's attributes
    (``[(key, value), ...]``)."""
    return {'resource_class': dict(attributes).get('rc'),
            'traits': sorted(value for key, value in attributes
                             if key.startswith('trait'))}


def hardware_view(request, hardware):
    """A discovered deployable: ``inactive`` until its device is
    enabled, then ``ready``."""
    row = hardware.deployable
    return {
        'uuid': row.uuid,
        'name': row.name,
        'state': 'ready' if hardware.device_status == 'enabled'
        else 'inactive',
        'host': hardware.hostname,
        'device_uuid': hardware.device_uuid,
        'deployable_uuid': row.uuid,
        'instance_uuid': None,
        'attached_host': None,
        'spec_version': None,
        'free': hardware.free,
        'acc_specs': {
            'remote': 0,
            'num': row.num_accelerators,
            'device_type': hardware.device_type,
            'acc_capability': _capability(hardware.attributes),
        },
        'created_at': common.timestamp(row.created_at),
        'updated_at': common.timestamp(row.updated_at),
        'links': [link.make_link(request, 'self', 'v1', 'accelerators',
                                 row.uuid)],
    }


def accelerator_view(request, view):
    """An accelerator; what it is attached to (an instance of some
    project, or a host) only for administrators."""
    row = view.row
    attached = request.context.is_admin
    return {
        'uuid': row.uuid,
        'name': row.name,
        'state': row.state,
        'host': view.hostname,
        'device_uuid': view.device_uuid,
        'deployable_uuid': view.deployable_uuid,
        'instance_uuid': row.instance_uuid if attached else None,
        'attached_host': row.attached_host if attached else None,
        'spec_version': row.spec_version,
        'acc_specs': {
            'remote': row.remotable,
            # One accelerator is one unit of its deployable.
            'num': 1,
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
        tag = if_match.strip().removeprefix('W/').strip('"')
        if not (tag.isdecimal() and len(tag) <= 10
                and 0 < int(tag) <= common_schema.INT_MAX):
            raise exception.InvalidParameterValue(
                err=_('If-Match must be the ETag of the accelerator, '
                      'a quoted spec version such as "3".'))
        return int(tag)
    return body.get('spec_version', current)


def _create(uuid=None):
    request = pecan.request
    context = common.authorize(policies.ACCELERATOR_CREATE)
    body = validation.body(request, schema.CREATE)
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

    index = common.methods()

    @index.when('PUT')
    def index_put(self):
        request = pecan.request
        context = common.authorize(policies.ACCELERATOR_UPDATE)
        body = validation.body(request, schema.SPEC)
        view = self.accelerator.load(context)
        specs = body['acc_specs']
        for key, actual in (('num', 1),
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
        """The accelerator's View; NotProvisioned (409) for discovered
        hardware, which only ``GET`` shows."""
        common.check_uuid(self.uuid)
        try:
            return db_accelerators.get_for_api(context, self.uuid)
        except exception.AcceleratorNotFound:
            hardware = db_accelerators.get_hardware_for_api(context,
                                                            self.uuid)
            if hardware is None:
                raise
        raise exception.NotProvisioned(
            accelerator=self.uuid,
            state=hardware_view(pecan.request, hardware)['state'])

    def show(self, view):
        pecan.response.headers['ETag'] = _etag(view.row.spec_version)
        return accelerator_view(pecan.request, view)

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.ACCELERATOR_GET_ONE)
        common.check_uuid(self.uuid)
        hardware = db_accelerators.get_hardware_for_api(context, self.uuid)
        if hardware is not None:
            return hardware_view(pecan.request, hardware)
        return self.show(self.load(context))

    @index.when('POST')
    def index_post(self):
        _create(self.uuid)

    @index.when('PUT')
    def index_put(self):
        """Attach to an instance, a host, or the host it is on."""
        request = pecan.request
        context = common.authorize(policies.ACCELERATOR_ATTACH)
        body = validation.body(request, schema.ATTACH)
        if 'instance_uuid' in body and 'host' in body:
            raise exception.InvalidParameterValue(
                err=_('Attach to an instance_uuid or to a host, not both.'))
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

    @index.when('DELETE')
    def index_delete(self):
        """Detach."""
        context = common.authorize(policies.ACCELERATOR_DETACH)
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

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.ACCELERATOR_GET_ALL)
        request = pecan.request
        return {'accelerators': [
            accelerator_view(request, view)
            for view in db_accelerators.list_for_api(context)] + [
            hardware_view(request, hardware)
            for hardware in db_accelerators.list_hardware_for_api(context)]}

    @index.when('POST')
    def index_post(self):
        _create()

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        return AcceleratorController(uuid), list(remainder)
