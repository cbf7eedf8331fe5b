"""Field types of cyborg's versioned objects."""

from oslo_versionedobjects import fields

BooleanField = fields.BooleanField
DateTimeField = fields.DateTimeField
DictOfStringsField = fields.DictOfStringsField
IntegerField = fields.IntegerField
ListOfObjectsField = fields.ListOfObjectsField
ListOfStringsField = fields.ListOfStringsField
ObjectField = fields.ObjectField
StringField = fields.StringField
UUIDField = fields.UUIDField


class DeviceType(fields.Enum):
    GPU = 'GPU'
    FPGA = 'FPGA'
    AICHIP = 'AICHIP'
    QAT = 'QAT'
    NIC = 'NIC'
    SSD = 'SSD'
    GENERIC = 'GENERIC'
    ALL = (GPU, FPGA, AICHIP, QAT, NIC, SSD, GENERIC)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class DeviceTypeField(fields.BaseEnumField):
    AUTO_TYPE = DeviceType()


class DriverStatus(fields.Enum):
    """What an agent says of one of its drivers (the seed's driver hello)."""

    READY = 'READY'
    FAILED = 'FAILED'
    ALL = (READY, FAILED)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class DriverStatusField(fields.BaseEnumField):
    AUTO_TYPE = DriverStatus()


class HostStatus(fields.Enum):
    """Liveness of a host as the conductor sees it."""

    UP = 'up'
    DOWN = 'down'
    ALL = (UP, DOWN)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class HostStatusField(fields.BaseEnumField):
    AUTO_TYPE = HostStatus()
