"""``/v2/device_profiles``: a POST body is a list with one profile (a
bare profile object is taken too). A profile's groups are stored as one
JSON text column, so together they must fit in it; what group keys and
values mean is checked by ``cyborg.common.profile_groups``."""

from cyborg.api.schemas import common

NAME_PATTERN = '^[a-zA-Z0-9-_]+$'
GROUPS_MAX = 64
GROUP_KEYS_MAX = 64
# profile_json is {"groups": [...]}: the groups get all but 12 bytes.
GROUPS_JSON_BYTES = common.TEXT_BYTES - len('{"groups": }')

GROUP = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': GROUP_KEYS_MAX,
    'propertyNames': common.string(),
    'additionalProperties': common.string(min_length=0),
}
PROFILE = common.strict_object({
    'name': common.string(pattern=NAME_PATTERN),
    'description': {'anyOf': [common.TEXT, {'type': 'null'}]},
    'uuid': common.UUID,
    'groups': {'type': 'array', 'minItems': 1, 'maxItems': GROUPS_MAX,
               'items': GROUP, 'maxJsonBytes': GROUPS_JSON_BYTES},
}, required=('name', 'groups'))
CREATE = {
    'if': {'type': 'array'},
    'then': {'type': 'array', 'minItems': 1, 'maxItems': 1,
             'items': PROFILE},
    'else': PROFILE,
}
LIST_QUERY = {'type': 'object',
              'properties': {'name': common.NAMES}}
DELETE_QUERY = {'type': 'object',
                'properties': {'value': common.NAMES},
                'required': ['value']}
