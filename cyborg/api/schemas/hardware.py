"""``/v2/hardware`` (2.6): the host filter of the list."""

from cyborg.api.schemas import common

LIST_QUERY = {'type': 'object',
              'properties': {'host': common.string(min_length=0),
                             'offered': {'type': 'string',
                                         'enum': ['true', 'false']}}}
