"""``/v2/devices``: list, show, and ``POST {uuid}/enable|disable``.

Lists filter exactly on ``type``, ``vendor`` and ``hostname``, take
upstream's ``filters.field``/``filters.value`` pairs like deployables do,
and from 2.4 the standard paging parameters. ``status`` is shown from
2.3.
"""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api.controllers.v2 import deployables
from cyborg.api import microversion
from cyborg.api import pagination
from cyborg.api.schemas import devices as schema
from cyborg.api import validation
from cyborg.db import devices as db_devices
from cyborg import policies

STATUS_VERSION = '2.3'
QUERY_FILTERS = ('type', 'vendor', 'hostname')
ENABLED = 'enabled'
MAINTAINING = 'maintaining'


def device_view(request, row):
    view = {
        'uuid': row.uuid,
        'type': row.type,
        'vendor': row.vendor,
        'model': row.model,
        'std_board_info': row.std_board_info,
        'vendor_board_info': row.vendor_board_info,
        'hostname': row.hostname,
        'created_at': common.timestamp(row.created_at),
        'updated_at': common.timestamp(row.updated_at),
        'links': [link.make_link(request, 'self', 'v2', 'devices',
                                 row.uuid)],
    }
    if microversion.is_supported(request, STATUS_VERSION):
        view['status'] = row.status
    return view


class DeviceController:
    """``/v2/devices/{uuid}`` and its ``enable`` and ``disable``
    actions."""

    def __init__(self, uuid):
        self.uuid = uuid

    def _set_status(self, rule, status):
        context = common.authorize(rule)
        common.check_uuid(self.uuid)
        db_devices.get_for_api(context, self.uuid)
        pecan.request.conductor_api.device_set_status(context, self.uuid,
                                                      status)
        # No body; upstream's 200 becomes pecan's 204 (clients take any
        # 2xx).
        pecan.response.status = 204

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.DEVICE_GET_ONE)
        common.check_uuid(self.uuid)
        return device_view(pecan.request,
                           db_devices.get_for_api(context, self.uuid))

    enable = common.methods()

    @enable.when('POST')
    def enable_post(self):
        return self._set_status(policies.DEVICE_ENABLE, ENABLED)

    disable = common.methods()

    @disable.when('POST')
    def disable_post(self):
        return self._set_status(policies.DEVICE_DISABLE, MAINTAINING)


class DevicesController:
    """``/v2/devices``."""

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        request = pecan.request
        context = common.authorize(policies.DEVICE_GET_ALL)
        query = validation.query(request, schema.LIST_QUERY)
        legacy = deployables.legacy_filters(query)
        page = deployables.page_with_filters(request, legacy,
                                             db_devices.DEVICE_SORT_KEYS)
        filters = {key: query[key] for key in QUERY_FILTERS if key in query}
        rows = db_devices.list_for_api(context, filters, page)
        return pagination.collection(
            request, 'devices', [device_view(request, r) for r in rows],
            page)

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        return DeviceController(uuid), list(remainder)
