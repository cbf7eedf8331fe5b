"""``/v2/discovery`` (2.5): ``POST {"host"?, "timeout"?}`` runs
discovery now on one host or every host that is up, and answers once
the agents reported, with one summary per host."""

import pecan

from cyborg.api.controllers.v2 import _ops
from cyborg.common import exception
from cyborg.i18n import _

MAX_TIMEOUT = 600


class DiscoveryController:

    @pecan.expose(generic=True, template='json')
    def index(self):
        pecan.abort(405)

    @index.when(method='POST', template='json')
    def index_post(self):
        request = pecan.request
        context = _ops.authorize('cyborg:discovery:create')
        body = _ops.body_of(request, ('host', 'timeout'))
        timeout = body.get('timeout')
        if timeout is not None and (
                isinstance(timeout, bool) or
                not isinstance(timeout, (int, float)) or
                not 0 < timeout <= MAX_TIMEOUT):
            raise exception.InvalidParameterValue(
                err=_('timeout must be a number of seconds between 0 and '
                      '%d.') % MAX_TIMEOUT)
        return {'hosts': request.conductor_api.discover_hosts(
            context, _ops.string(body, 'host'), timeout)}
