"""Payloads of the conductor's versioned notifications about devices."""

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class DeviceEventPayload(base.CyborgObject):
    """A device of a host as a report added, removed or changed it
    (``cyborg.device.added``, ``.removed``, ``.changed``)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'hostname': fields.StringField(),
        'type': fields.StringField(nullable=True),
        'vendor': fields.StringField(nullable=True),
        'model': fields.StringField(nullable=True),
        'cpid_type': fields.StringField(nullable=True),
        'cpid_info': fields.StringField(),
        # Names of its deployables, as the report has them.
        'deployables': fields.ListOfStringsField(default=[]),
    }


@base.CyborgObjectRegistry.register
class ARQEventPayload(base.CyborgObject):
    """An accelerator request the conductor released on its own
    (``cyborg.arq.released``: Nova no longer has its instance)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'uuid': fields.StringField(),
        'state': fields.StringField(),
        'instance_uuid': fields.StringField(nullable=True),
        'hostname': fields.StringField(nullable=True),
        'device_rp_uuid': fields.StringField(nullable=True),
        'device_profile_name': fields.StringField(nullable=True),
        'attach_handle_uuid': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
    }
