"""``/v2/devices``: the list's exact-match filters and upstream's
``filters.field``/``filters.value`` pairs."""

from cyborg.api.schemas import common
from cyborg.api.schemas import deployables

LIST_QUERY = {'type': 'object',
              'properties': dict(deployables.FILTERS,
                                 type=common.string(32, min_length=0),
                                 vendor=common.string(min_length=0),
                                 hostname=common.string(min_length=0))}
