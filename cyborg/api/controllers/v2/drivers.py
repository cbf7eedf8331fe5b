"""``/v2/drivers`` (2.5): the seed's driver operations. List the drivers
of every host (``?host=`` for one), install one (``POST {"name",
"host"?}``: on that host or every host that is up), update it (``PATCH
/v2/drivers/{name}``: reload with the current settings) and uninstall
it (``DELETE /v2/drivers/{name}?host=``; 409 while its devices are in
use). Operations answer one status per host once the agents reported.
"""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers.v2 import _ops
from cyborg.api.schemas import drivers as schema
from cyborg.api import validation
from cyborg.db import hosts as db_hosts
from cyborg import policies


def _rows(context, hostname=None):
    hosts = ([db_hosts.get_by_hostname(context, hostname)] if hostname
             else db_hosts.get_all(context))
    return [{'host': host.hostname, 'name': d.name, 'status': d.status,
             'device_type': d.device_type, 'version': d.version,
             'error': d.error}
            for host, drivers in hosts for d in drivers]


class DriverController:

    def __init__(self, name):
        self.name = name

    index = common.methods()

    @index.when('PATCH')
    def index_patch(self):
        request = pecan.request
        context = common.authorize(policies.DRIVER_UPDATE)
        body = validation.body(request, schema.UPDATE)
        return {'drivers': request.conductor_api.driver_update(
            context, self.name, body.get('host'))}

    @index.when('DELETE')
    def index_delete(self):
        request = pecan.request
        context = common.authorize(policies.DRIVER_UNINSTALL)
        host = validation.query(request, schema.HOST_QUERY).get('host')
        request.conductor_api.driver_uninstall(context, self.name,
                                               host or None)
        pecan.response.status = 204


class DriversController:

    min_version = _ops.VERSION

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.DRIVER_GET_ALL)
        host = validation.query(pecan.request, schema.HOST_QUERY).get('host')
        return {'drivers': _rows(context, host or None)}

    @index.when('POST')
    def index_post(self):
        request = pecan.request
        context = common.authorize(policies.DRIVER_INSTALL)
        body = validation.body(request, schema.INSTALL)
        return {'drivers': request.conductor_api.driver_install(
            context, body['name'], body.get('host'))}

    @pecan.expose()
    def _lookup(self, name, *remainder):
        return DriverController(name), list(remainder)
