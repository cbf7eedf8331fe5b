"""The agent's report model: what drivers discover on a host.

One ``DriverDevice`` per physical card; its deployables become Placement
resource providers; attributes carry the resource class (``rc``) and traits
(keys starting with ``trait``); attach handles are what an instance gets.
"""

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class DriverAttribute(base.CyborgObject):
    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'key': fields.StringField(),
        'value': fields.StringField(),
    }


@base.CyborgObjectRegistry.register
class DriverAttachHandle(base.CyborgObject):
    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'attach_type': fields.StringField(),
        'attach_info': fields.StringField(),
        'in_use': fields.BooleanField(default=False),
    }


@base.CyborgObjectRegistry.register
class DriverControlPathID(base.CyborgObject):
    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'cpid_type': fields.StringField(),
        'cpid_info': fields.StringField(),
    }


@base.CyborgObjectRegistry.register
class DriverDeployable(base.CyborgObject):
    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'name': fields.StringField(),
        'num_accelerators': fields.IntegerField(),
        'attribute_list': fields.ListOfObjectsField('DriverAttribute',
                                                    default=[]),
        'attach_handle_list': fields.ListOfObjectsField(
            'DriverAttachHandle', default=[]),
        'driver_name': fields.StringField(nullable=True),
    }


@base.CyborgObjectRegistry.register
class DriverDevice(base.CyborgObject):
    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'vendor': fields.StringField(),
        'model': fields.StringField(),
        'type': fields.DeviceTypeField(),
        'std_board_info': fields.StringField(nullable=True),
        'vendor_board_info': fields.StringField(nullable=True),
        'controlpath_id': fields.ObjectField('DriverControlPathID'),
        'deployable_list': fields.ListOfObjectsField('DriverDeployable',
                                                     default=[]),
        'stub': fields.BooleanField(default=False),
    }
