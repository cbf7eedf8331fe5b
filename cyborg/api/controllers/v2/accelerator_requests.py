"""``/v2/accelerator_requests``: what Nova calls while it boots a server.

Wire format as upstream's. Unlike upstream: a bad body, query or state is
a 4xx with a message (a second bind of a bound ARQ is 409), a bind
returns once the ARQs are resolved (Nova's events follow), and deleting
a list of ARQs is all or nothing. ``PATCH`` and ``DELETE`` of one ARQ
(``/{uuid}``, what openstacksdk and the ``openstack`` CLI send) are the
collection's forms limited to that ARQ, with the same rules.
"""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api import microversion
from cyborg.api import pagination
from cyborg.api.schemas import accelerator_requests as schema
from cyborg.api import validation
from cyborg.common import exception
from cyborg.common import states
from cyborg.db import accelerator_requests as db_arqs
from cyborg.i18n import _
from cyborg import policies

BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')
PROJECT_FIELD = 'project_id'
PROJECT_VERSION = '2.1'


def view(request, arq):
    bound = arq.state == states.BOUND
    return {'uuid': arq.uuid,
            'state': arq.state,
            'device_profile_name': arq.device_profile_name,
            'device_profile_group_id': arq.device_profile_group_id,
            'hostname': arq.hostname,
            'device_rp_uuid': arq.device_rp_uuid,
            'instance_uuid': arq.instance_uuid,
            'project_id': arq.project_id,
            'attach_handle_type': arq.attach_handle_type if bound else '',
            'attach_handle_uuid': arq.attach_handle_uuid if bound else None,
            'attach_handle_info': arq.attach_handle_info if bound else {},
            'created_at': common.timestamp(arq.created_at),
            'updated_at': common.timestamp(arq.updated_at),
            'links': [link.make_link(request, 'self', 'v2',
                                     'accelerator_requests', arq.uuid)]}


def visible_project(context):
    """The project whose ARQs the caller sees; None (all) for admins."""
    return None if context.is_admin else context.project_id


def _invalid(message):
    return exception.InvalidParameterValue(err=message)


def _op_fields(ops, context, request):
    """(kind, {field: value}) of one ARQ's JSON-patch operations, valid
    against ``schemas.accelerator_requests.PATCH``."""
    kinds = {op['op'] for op in ops}
    if len(kinds) != 1:
        raise _invalid(_('Every op must be add or remove, all the same.'))
    fields = {}
    for op in ops:
        field = op['path'][1:]
        if field == PROJECT_FIELD:
            _check_project_patch(context, request)
        fields[field] = op.get('value')
    return kinds.pop(), fields


def _check_project_patch(context, request):
    if not microversion.is_supported(request, PROJECT_VERSION):
        raise exception.InvalidAPIVersion(
            reason=_('/project_id can be patched from microversion %s.')
            % PROJECT_VERSION)
    if not context.is_admin:
        raise exception.ProjectPatchForbidden()


def _bind_values(fields, context):
    missing = [f for f in BIND_FIELDS if not fields.get(f)]
    if missing:
        raise _invalid(_('Fields absent in patch: %s.') % ', '.join(missing))
    values = {f: fields[f] for f in BIND_FIELDS}
    values[PROJECT_FIELD] = fields.get(PROJECT_FIELD) or context.project_id
    return values


def parse_patch(body, context, request):
    """(kind, {arq uuid: bind values or None}) of a PATCH body valid
    against ``schemas.accelerator_requests.PATCH``."""
    kinds, patch = set(), {}
    for uuid, ops in body.items():
        kind, fields = _op_fields(ops, context, request)
        kinds.add(kind)
        patch[uuid] = _bind_values(fields, context) if kind == 'add' else None
    if len(kinds) != 1:
        raise _invalid(_('Bind (add) and unbind (remove) cannot be mixed '
                         'in one request.'))
    return kinds.pop(), patch


def _require_service(context, action):
    if not context.is_service:
        raise exception.ServiceTokenRequired(action=action)


def apply_patch(request, context, only=None):
    """Binds or unbinds the ARQs a PATCH body names (only the ARQ
    ``only`` if given); answers 202 once done. The service token is
    checked before the body is read; the conductor refuses to bind an
    instance that has ARQs already (400)."""
    _require_service(context, _('Binding or unbinding ARQs'))
    kind, patch = parse_patch(validation.body(request, schema.PATCH),
                              context, request)
    if only is not None and set(patch) != {only}:
        raise _invalid(_('The body of PATCH %(path)s must patch that ARQ '
                         'only: {"%(uuid)s": [...]}.')
                       % {'path': request.path, 'uuid': only})
    request.conductor_api.arq_apply_patch(context, patch,
                                          visible_project(context))
    pecan.response.status = 202


def delete_arqs(request, context, uuids):
    """Deletes the ARQs ``uuids``, all or none: 404 if one is not the
    caller's to see, and a service token needed for one that holds (or
    is taking) a device for an instance: Bound or BindStarted. One whose
    bind failed, or that was unbound, holds nothing and its owner may
    delete it (upstream asks a service token for any ARQ with an
    instance)."""
    project = visible_project(context)
    found = db_arqs.get_many(context, uuids, project)
    held = [arq for arq in found if arq.state in states.HOLDING]
    if held and not context.is_service:
        raise exception.BoundARQDeleteForbidden(
            arq=held[0].uuid, state=held[0].state,
            instance=held[0].instance_uuid)
    request.conductor_api.arq_delete(context, arq_uuids=uuids,
                                     project_id=project)
    pecan.response.status = 204


class AcceleratorRequestController:
    """``/v2/accelerator_requests/{uuid}``."""

    def __init__(self, uuid):
        self.uuid = uuid

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.ARQ_GET_ONE)
        common.check_uuid(self.uuid)
        return view(pecan.request, db_arqs.get(
            context, self.uuid, visible_project(context)))

    @index.when('PATCH')
    def index_patch(self):
        """Binds or unbinds this ARQ, as the collection's PATCH does with
        a body naming only this ARQ (what openstacksdk sends)."""
        context = common.authorize(policies.ARQ_UPDATE)
        common.check_uuid(self.uuid)
        apply_patch(pecan.request, context, only=self.uuid)

    @index.when('DELETE')
    def index_delete(self):
        """``DELETE ?arqs=<this uuid>``."""
        context = common.authorize(policies.ARQ_DELETE)
        delete_arqs(pecan.request, context, [common.check_uuid(self.uuid)])


class AcceleratorRequestsController:
    """``/v2/accelerator_requests``."""

    index = common.methods()

    @index.when('GET')
    def index_get(self, **_ignored):
        request = pecan.request
        context = common.authorize(policies.ARQ_GET_ALL)
        query = validation.query(request, schema.LIST_QUERY)
        instance = query.get('instance')
        bind_state = query.get('bind_state')
        page = pagination.page_from(request, db_arqs.SORT_KEYS)
        wanted = states.RESOLVED if bind_state and not instance else None
        arqs = db_arqs.get_all(context, visible_project(context),
                               instance_uuid=instance, states_in=wanted,
                               page=page, fields=db_arqs.SHOWN)
        if bind_state and instance and any(
                arq.state not in states.RESOLVED for arq in arqs):
            raise exception.Locked(
                reason=_('Some accelerator requests of instance %s are not '
                         'resolved yet.') % instance)
        return pagination.collection(request, 'arqs',
                                     [view(request, a) for a in arqs], page)

    @index.when('POST')
    def index_post(self):
        request = pecan.request
        context = common.authorize(policies.ARQ_CREATE)
        name = validation.body(request, schema.CREATE)['device_profile_name']
        if not name:
            # As upstream: no profile has the empty name.
            raise exception.DeviceProfileNotFound(profile='""')
        created = request.conductor_api.arq_create(context, name,
                                                   context.project_id)
        # The conductor says what it wrote: nothing is read back.
        arqs = [db_arqs.from_primitive(values) for values in created]
        pecan.response.status = 201
        return {'arqs': [view(request, arq) for arq in arqs]}

    @index.when('PATCH')
    def index_patch(self):
        apply_patch(pecan.request, common.authorize(policies.ARQ_UPDATE))

    @index.when('DELETE')
    def index_delete(self, **_ignored):
        request = pecan.request
        context = common.authorize(policies.ARQ_DELETE)
        query = validation.query(request, schema.DELETE_QUERY)
        uuids, instance = query.get('arqs'), query.get('instance')
        if (uuids is None) == (instance is None):
            raise _invalid(_('Give exactly one of arqs=<uuid>[,<uuid>...] '
                             'and instance=<uuid>.'))
        if instance is not None:
            _require_service(context, _('Deleting the ARQs of an instance'))
            request.conductor_api.arq_delete(
                context, instance_uuid=instance,
                project_id=visible_project(context))
        else:
            delete_arqs(request, context, uuids)
        pecan.response.status = 204

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        return AcceleratorRequestController(uuid), list(remainder)
