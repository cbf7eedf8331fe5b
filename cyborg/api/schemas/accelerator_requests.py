"""``/v2/accelerator_requests``: create (POST), bind and unbind (PATCH
with JSON-patch operations per ARQ), list and delete.

A create body may carry other fields (python-cyborgclient sends
``device_profile_group_id`` and ``image_uuid``), which are ignored as
upstream ignores them. Which combinations of patch operations make a
bind or an unbind is decided by the controller; the schema fixes their
shape and what each path's value may be."""

from cyborg.api.schemas import common

# Nova binds every ARQ of one instance in one PATCH.
ARQS_PER_PATCH = 256
OPS_PER_ARQ = 8
PATH_VALUES = {'/hostname': common.HOSTNAME,
               '/device_rp_uuid': common.UUID,
               '/instance_uuid': common.UUID,
               '/project_id': common.NAME}

CREATE = {
    'type': 'object',
    'maxProperties': common.FIELDS_MAX,
    # An empty name is a profile that does not exist (404), as upstream.
    'properties': {'device_profile_name': common.string(min_length=0)},
    'required': ['device_profile_name'],
}
OPERATION = {
    'type': 'object',
    'maxProperties': common.FIELDS_MAX,
    'properties': {'op': {'enum': ['add', 'remove']},
                   'path': {'enum': sorted(PATH_VALUES)}},
    'required': ['op', 'path'],
    'allOf': [{'if': {'properties': {'path': {'const': path}}},
               'then': {'properties': {'value': value}}}
              for path, value in sorted(PATH_VALUES.items())],
}
PATCH = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': ARQS_PER_PATCH,
    'propertyNames': common.UUID,
    'additionalProperties': {'type': 'array', 'minItems': 1,
                             'maxItems': OPS_PER_ARQ, 'items': OPERATION},
}
LIST_QUERY = {'type': 'object',
              'properties': {'instance': common.UUID,
                             'bind_state': {'enum': ['resolved']}}}
DELETE_QUERY = {'type': 'object',
                'properties': {'arqs': common.UUIDS,
                               'instance': common.UUID}}
