"""``/v2/discovery`` (2.5): run discovery on one host or every host."""

from cyborg.api.schemas import common

MAX_TIMEOUT = 600

CREATE = common.strict_object({
    'host': common.HOSTNAME,
    'timeout': {'type': 'number', 'exclusiveMinimum': 0,
                'maximum': MAX_TIMEOUT},
})
