"""``/v2/services`` (2.5): the list's host and device type filters."""

from cyborg.api.schemas import common

LIST_QUERY = {'type': 'object',
              'properties': {'host': common.string(min_length=0),
                             'device_type': common.string(32,
                                                          min_length=0)}}
