"""``/v2/attachments`` (2.5): attach a device profile's accelerators to
an instance."""

from cyborg.api.schemas import common

CREATE = common.strict_object({
    'instance_uuid': common.UUID,
    'device_profile_name': common.NAME,
    'host': common.HOSTNAME,
}, required=('instance_uuid', 'device_profile_name'))
