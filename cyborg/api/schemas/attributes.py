"""``/v2/attributes``: a deployable's key/value attributes."""

from cyborg.api.schemas import common

# ``openstack accelerator device attribute create`` sends the id as a
# string; openstacksdk wraps the fields under "attribute". The deployable
# may also be named by its uuid, which users see (its integer id they
# see only in attribute listings).
ATTRIBUTE = common.strict_object({
    'deployable_id': {'anyOf': [
        common.ID, common.string(10, pattern='^[1-9][0-9]*$'),
        common.UUID]},
    'key': common.NAME,
    'value': common.TEXT,
}, required=('deployable_id', 'key', 'value'))
CREATE = {
    'if': {'type': 'object', 'required': ['attribute']},
    'then': common.strict_object({'attribute': ATTRIBUTE},
                                 required=('attribute',)),
    'else': ATTRIBUTE,
}
LIST_QUERY = {'type': 'object',
              'properties': {'deployable_id': common.integer(),
                             'key': common.string(min_length=0)}}
