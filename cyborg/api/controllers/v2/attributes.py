"""``/v2/attributes``: list, show, create and delete attributes of
deployables. Writes go through the conductor, which refuses an unknown
deployable (404) and a key the deployable has already (409)."""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api import pagination
from cyborg.common import exception
from cyborg.db import attributes as db_attributes
from cyborg.i18n import _

KEY_MAX = 255


def attribute_view(request, row):
    return {
        'uuid': row.uuid,
        'deployable_id': row.deployable_id,
        'key': row.key,
        'value': row.value,
        'created_at': common.timestamp(row.created_at),
        'updated_at': common.timestamp(row.updated_at),
        'links': [link.make_link(request, 'self', 'v2', 'attributes',
                                 row.uuid)],
    }


def _invalid(message):
    return exception.InvalidParameterValue(err=message)


def deployable_id_of(value):
    """An integer deployable id, from a query string or a JSON body."""
    if isinstance(value, bool):
        raise _invalid(_('deployable_id must be an integer, not %r.')
                       % value)
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise _invalid(_('deployable_id must be an integer, not %r.')
                       % value) from exc


def new_attribute(body):
    """(deployable_id, key, value) of a create request's body."""
    if not isinstance(body, dict):
        raise _invalid(_('Expected an object with deployable_id, key and '
                         'value.'))
    fields = {'deployable_id', 'key', 'value'}
    missing, unknown = fields - set(body), set(body) - fields
    if missing or unknown:
        raise _invalid(_('Missing fields: %(missing)s; unknown fields: '
                         '%(unknown)s.') % {
            'missing': ', '.join(sorted(missing)) or '-',
            'unknown': ', '.join(sorted(unknown)) or '-'})
    if not isinstance(body['deployable_id'], int):
        raise _invalid(_('deployable_id must be an integer.'))
    key, value = body['key'], body['value']
    if not isinstance(key, str) or not 0 < len(key) <= KEY_MAX:
        raise _invalid(_('key must be a string of 1 to %d characters.')
                       % KEY_MAX)
    if not isinstance(value, str):
        raise _invalid(_('value must be a string.'))
    return deployable_id_of(body['deployable_id']), key, value


class AttributeController:
    """``/v2/attributes/{uuid}``."""

    def __init__(self, uuid):
        self.uuid = uuid

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def index_get(self):
        context = common.authorize('cyborg:attribute:get_one')
        common.check_uuid(self.uuid)
        return attribute_view(pecan.request,
                              db_attributes.get_by_uuid(context, self.uuid))

    @index.when(method='DELETE')
    def index_delete(self):
        context = common.authorize('cyborg:attribute:delete')
        common.check_uuid(self.uuid)
        pecan.request.conductor_api.attribute_delete(context, self.uuid)
        pecan.response.status = 204
        return ''


class AttributesController:
    """``/v2/attributes``."""

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def index_get(self):
        request = pecan.request
        context = common.authorize('cyborg:attribute:get_all')
        deployable_id = request.GET.get('deployable_id')
        if deployable_id is not None:
            deployable_id = deployable_id_of(deployable_id)
        page = pagination.page_from(request, db_attributes.SORT_KEYS)
        rows = db_attributes.get_all(context, deployable_id=deployable_id,
                                     key=request.GET.get('key'), page=page)
        return pagination.collection(
            request, 'attributes',
            [attribute_view(request, row) for row in rows], page)

    @index.when(method='POST', template='json')
    def index_post(self):
        request = pecan.request
        context = common.authorize('cyborg:attribute:create')
        deployable_id, key, value = new_attribute(
            common.json_body(request))
        uuid = request.conductor_api.attribute_create(context, deployable_id,
                                                      key, value)
        pecan.response.status = 201
        return attribute_view(request,
                              db_attributes.get_by_uuid(context, uuid))

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        if remainder:
            pecan.abort(404)
        return AttributeController(uuid), []
