"""``/v2/hosts`` (2.5): the compute hosts whose agents registered, with
their up/down status, last heartbeat and drivers."""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api.controllers.v2 import _ops
from cyborg.db import hosts as db_hosts
from cyborg import policies


def driver_view(row):
    return {'name': row.name, 'status': row.status,
            'device_type': row.device_type, 'version': row.version,
            'error': row.error}


def host_view(request, host, drivers):
    return {'hostname': host.hostname,
            'status': host.status,
            'last_seen_at': common.timestamp(host.last_seen_at),
            'version': host.version,
            'drivers': [driver_view(d) for d in drivers],
            'links': [link.make_link(request, 'self', 'v2', 'hosts',
                                     host.hostname)]}


class HostController:

    def __init__(self, hostname):
        self.hostname = hostname

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.HOST_GET_ONE)
        return host_view(pecan.request,
                         *db_hosts.get_by_hostname(context, self.hostname))


class HostsController:

    min_version = _ops.VERSION

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.HOST_GET_ALL)
        return {'hosts': [host_view(pecan.request, host, drivers)
                          for host, drivers in db_hosts.get_all(context)]}

    @pecan.expose()
    def _lookup(self, hostname, *remainder):
        return HostController(hostname), list(remainder)
