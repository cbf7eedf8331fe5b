"""``/v2/attributes``: list, show, create and delete attributes of
deployables. Writes go through the conductor, which refuses an unknown
deployable (404) and a key the deployable has already (409). A new
attribute names its deployable by integer id, as upstream's API does, or
by uuid, the deployable's id everywhere else."""

from oslo_utils import uuidutils
import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api import pagination
from cyborg.api.schemas import attributes as schema
from cyborg.api.schemas import common as schema_common
from cyborg.api import validation
from cyborg.common import exception
from cyborg.db import attributes as db_attributes
from cyborg.db import deployables as db_deployables
from cyborg.i18n import _
from cyborg import policies


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


def new_attribute(context, body):
    """(deployable_id, key, value) of a create body valid against
    ``schemas.attributes.CREATE``: the attribute's fields, or them under
    ``"attribute"``; the deployable named by its integer id, that id's
    string, or its uuid (DeployableNotFound when there is none)."""
    attribute = body.get('attribute', body)
    deployable_id = attribute['deployable_id']
    if uuidutils.is_uuid_like(deployable_id):
        deployable_id = db_deployables.id_of(context, deployable_id)
    deployable_id = int(deployable_id)
    if deployable_id > schema_common.INT_MAX:
        raise exception.InvalidParameterValue(
            err=_('deployable_id must be at most %d.')
            % schema_common.INT_MAX)
    return deployable_id, attribute['key'], attribute['value']


class AttributeController:
    """``/v2/attributes/{uuid}``."""

    def __init__(self, uuid):
        self.uuid = uuid

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.ATTRIBUTE_GET_ONE)
        common.check_uuid(self.uuid)
        return attribute_view(pecan.request,
                              db_attributes.get_by_uuid(context, self.uuid))

    @index.when('DELETE')
    def index_delete(self):
        context = common.authorize(policies.ATTRIBUTE_DELETE)
        common.check_uuid(self.uuid)
        pecan.request.conductor_api.attribute_delete(context, self.uuid)
        pecan.response.status = 204


class AttributesController:
    """``/v2/attributes``."""

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        request = pecan.request
        context = common.authorize(policies.ATTRIBUTE_GET_ALL)
        query = validation.query(request, schema.LIST_QUERY)
        page = pagination.page_from(request, db_attributes.SORT_KEYS)
        rows = db_attributes.get_all(
            context, deployable_id=query.get('deployable_id'),
            key=query.get('key'), page=page)
        return pagination.collection(
            request, 'attributes',
            [attribute_view(request, row) for row in rows], page)

    @index.when('POST')
    def index_post(self):
        request = pecan.request
        context = common.authorize(policies.ATTRIBUTE_CREATE)
        uuid = request.conductor_api.attribute_create(
            context, *new_attribute(context,
                                    validation.body(request, schema.CREATE)))
        pecan.response.status = 201
        return attribute_view(request,
                              db_attributes.get_by_uuid(context, uuid))

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        if remainder:
            pecan.abort(404)
        return AttributeController(uuid), []
