"""``/v2/drivers`` (2.5): install (POST), update (PATCH) and the host
filter of the list and of uninstall."""

from cyborg.api.schemas import common

INSTALL = common.strict_object({'name': common.NAME,
                                'host': common.HOSTNAME},
                               required=('name',))
UPDATE = common.strict_object({'host': common.HOSTNAME})
HOST_QUERY = {'type': 'object',
              'properties': {'host': common.string(min_length=0)}}
