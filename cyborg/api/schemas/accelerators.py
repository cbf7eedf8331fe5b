"""``/v1/accelerators`` (the seed's API): create, replace the spec,
attach. The proposal's own JSON schema, bounded by the columns."""

from cyborg.api.schemas import common

CREATE = common.strict_object({
    'name': common.NAME,
    'uuid': common.UUID,
}, required=('name',))
SPEC = common.strict_object({
    'acc_specs': common.strict_object({
        'remote': {'type': 'integer', 'enum': [0, 1]},
        'num': common.integer(1),
        'device_type': common.string(32),
        # Stored as JSON in a text column.
        'acc_capability': {'type': 'object',
                           'maxJsonBytes': common.TEXT_BYTES},
    }),
    'spec_version': common.integer(1),
}, required=('acc_specs',))
# The proposal's body is ``{"name", "uuid"}``: no target means the host
# the accelerator is on; instance_uuid or host name another one.
ATTACH = common.strict_object({
    'instance_uuid': common.UUID,
    'host': common.HOSTNAME,
    'name': common.NAME,
    'uuid': common.string(),
})
