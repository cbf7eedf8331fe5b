"""``/v2/hardware`` (2.6, admin): every PCI function the enabled drivers
of each host's agent looked at, offered or not; for one that is not, why
and what to change. ``?host=`` for one host (404 if it is unknown),
``?offered=false`` for what is not offered. The agents send it with
their reports; the seed's ``GET /hardware``."""

import pecan

from cyborg.api.controllers import common
from cyborg.api.schemas import hardware as schema
from cyborg.api import validation
from cyborg.db import hardware as db_hardware
from cyborg import policies

VERSION = '2.6'


class HardwareController:

    min_version = VERSION

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        context = common.authorize(policies.HARDWARE_GET_ALL)
        query = validation.query(pecan.request, schema.LIST_QUERY)
        offered = query.get('offered')
        return {'hardware': db_hardware.get_all(
            context, query.get('host') or None,
            None if offered is None else offered == 'true')}
