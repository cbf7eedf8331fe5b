"""``/v2/deployables``: the program action's JSON patch and the list's
``filters.field``/``filters.value`` pairs (upstream's)."""

from cyborg.api.schemas import common

FILTER_FIELDS = ('parent_uuid', 'root_uuid', 'board', 'availability',
                 'interface_type', 'instance_uuid', 'limit', 'marker',
                 'sort_key', 'sort_dir', 'name')
FILTERS_MAX = len(FILTER_FIELDS)

PROGRAM = {
    'description': 'Expected [{"path": "/program", "op": "replace", '
                   '"value": [{"image_uuid": "<uuid>"}]}].',
    'type': 'array', 'minItems': 1, 'maxItems': 1,
    'items': {
        'type': 'object',
        'maxProperties': common.FIELDS_MAX,
        'properties': {
            'path': {'const': '/program'},
            'op': {'const': 'replace'},
            'value': {'type': 'array', 'minItems': 1, 'maxItems': 1,
                      'items': {'type': 'object',
                                'maxProperties': common.FIELDS_MAX,
                                'properties': {'image_uuid': common.UUID},
                                'required': ['image_uuid']}},
        },
        'required': ['path', 'op', 'value'],
    },
}
FILTERS = {
    'filters.field': {'type': 'array', 'maxItems': FILTERS_MAX,
                      'items': {'enum': list(FILTER_FIELDS)}},
    'filters.value': {'type': 'array', 'maxItems': FILTERS_MAX,
                      'items': common.string(min_length=0)},
}
LIST_QUERY = {'type': 'object', 'properties': FILTERS}
