"""``/v2/deployables``: list, show, and ``PATCH {uuid}/program``.

Lists take upstream's ``filters.field=<f>&filters.value=<v>`` pairs
(``legacy_filters``, shared with ``/v2/devices``) and, from 2.4, the
standard paging parameters.
"""

import json

from oslo_utils import strutils
import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api import pagination
from cyborg.api.schemas import deployables as schema
from cyborg.api import validation
from cyborg.common import exception
from cyborg.db import deployables as db_deployables
from cyborg.db import pagination as db_pagination
from cyborg.i18n import _
from cyborg import policies

PROGRAM_PATH = '/program'


def legacy_filters(query):
    """``{field: value}`` of the ``filters.field``/``filters.value``
    pairs of a validated query (``schemas.deployables.FILTERS``); 400
    for a field without a value."""
    fields = query.get('filters.field', [])
    values = query.get('filters.value', [])
    if len(fields) != len(values):
        raise exception.InvalidParameterValue(
            err=_('Each filters.field needs one filters.value.'))
    return dict(zip(fields, values, strict=True))


def _filter_choice(name, value, allowed):
    if value not in allowed:
        raise exception.InvalidParameterValue(
            err=_('%(name)s must be one of %(allowed)s, not %(value)r.') % {
                'name': name, 'allowed': ', '.join(allowed),
                'value': value})
    return value


def _filter_limit(value):
    try:
        return strutils.validate_integer(value, 'limit', min_value=1)
    except ValueError as exc:
        raise exception.InvalidParameterValue(err=str(exc)) from exc


def page_with_filters(request, filters, sort_keys):
    """The Page of a list: the paging parameters (2.4), completed by the
    ``limit``, ``sort_key`` and ``sort_dir`` filters as upstream takes
    them."""
    page = pagination.page_from(request, sort_keys)
    values = {}
    if 'limit' in filters and 'limit' not in request.GET:
        values['limit'] = _filter_limit(filters['limit'])
    for name, allowed in (('sort_key', sort_keys),
                          ('sort_dir', (db_pagination.ASC,
                                        db_pagination.DESC))):
        if name in filters and getattr(page, name) is None:
            values[name] = _filter_choice(name, filters[name], allowed)
    return page._replace(**values)


def deployable_view(request, row, attributes):
    return {
        'uuid': row.uuid,
        'parent_id': row.parent_id,
        'root_id': row.root_id,
        'name': row.name,
        'num_accelerators': row.num_accelerators,
        'device_id': row.device_id,
        'attributes_list': json.dumps([{key: value}
                                       for key, value in attributes]),
        'rp_uuid': row.rp_uuid,
        'driver_name': row.driver_name,
        'bitstream_id': row.bitstream_id,
        'created_at': common.timestamp(row.created_at),
        'updated_at': common.timestamp(row.updated_at),
        'links': [link.make_link(request, 'self', 'v2', 'deployables',
                                 row.uuid),
                  link.make_link(request, 'bookmark', 'deployables',
                                 row.uuid)],
    }


def program_image(body):
    """The image uuid of a program patch valid against
    ``schemas.deployables.PROGRAM``: ``[{"path": "/program", "op":
    "replace", "value": [{"image_uuid": <uuid>}]}]``."""
    return body[0]['value'][0]['image_uuid']


class DeployableController:
    """``/v2/deployables/{uuid}`` and its ``program`` action."""

    def __init__(self, uuid):
        self.uuid = uuid

    def _show(self):
        request = pecan.request
        row, attributes = db_deployables.get_by_uuid(request.context,
                                                     self.uuid)
        return deployable_view(request, row, attributes)

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        common.authorize(policies.DEPLOYABLE_GET_ONE)
        common.check_uuid(self.uuid)
        return self._show()

    program = common.methods()

    @program.when('PATCH')
    def program_patch(self, again=None):
        """``again``: openstacksdk (so ``openstack accelerator deployable
        program``) sends ``.../{uuid}/program/{uuid}``; that is taken,
        with the same uuid only."""
        context = common.authorize(policies.DEPLOYABLE_PROGRAM)
        if again is not None and again != self.uuid:
            pecan.abort(404)
        common.check_uuid(self.uuid)
        image_uuid = program_image(validation.body(pecan.request,
                                                   schema.PROGRAM))
        pecan.request.conductor_api.deployable_program(context, self.uuid,
                                                       image_uuid)
        return self._show()


class DeployablesController:
    """``/v2/deployables``."""

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        request = pecan.request
        context = common.authorize(policies.DEPLOYABLE_GET_ALL)
        filters = legacy_filters(validation.query(request,
                                                  schema.LIST_QUERY))
        page = page_with_filters(request, filters, db_deployables.SORT_KEYS)
        rows, attributes = db_deployables.get_all(
            context, name=filters.get('name'), page=page)
        items = [deployable_view(request, row, attributes[row.id])
                 for row in rows]
        return pagination.collection(request, 'deployables', items, page)

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        return DeployableController(uuid), list(remainder)
