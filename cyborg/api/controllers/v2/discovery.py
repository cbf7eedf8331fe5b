"""``/v2/discovery`` (2.5): ``POST {"host"?, "timeout"?}`` runs
discovery now on one host or every host that is up, and answers once
the agents reported, with one summary per host."""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers.v2 import _ops
from cyborg.api.schemas import discovery as schema
from cyborg.api import validation
from cyborg import policies


class DiscoveryController:

    min_version = _ops.VERSION

    index = common.methods()

    @index.when('POST')
    def index_post(self):
        request = pecan.request
        context = common.authorize(policies.DISCOVERY_CREATE)
        body = validation.body(request, schema.CREATE)
        return {'hosts': request.conductor_api.discover_hosts(
            context, body.get('host'), body.get('timeout'))}
