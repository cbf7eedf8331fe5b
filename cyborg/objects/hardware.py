"""What an agent's drivers saw on its host, offered or not.

The seed's ``GET /hardware``: one ``HardwareFunction`` per PCI function an
enabled driver looked at, with the decision the driver took. An agent
sends the list with its report; the conductor keeps the last one per host
for ``GET /v2/hardware`` (2.6), which answers "why is my device not in
Placement?".
"""

from oslo_utils import versionutils

from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class HardwareFunction(base.CyborgObject):
    """One function and a driver's decision about it.

    ``address`` is the PCI address (``DDDD:BB:DD.F``); ``name`` the
    function's name from the PCI ID database, as ``lspci`` gives it and
    as devices are named (``model``); ``driver`` the entry point name of
    the driver that looked at it. A function not
    ``offered`` has a ``reason`` and, when an operator can change it, an
    ``action`` (the option to set, the binding to make).
    """

    # Version 1.0: initial version
    # Version 1.1: name, the function's name from the PCI ID database
    VERSION = '1.1'

    fields = {
        'address': fields.StringField(),
        'vendor_id': fields.StringField(nullable=True),
        'product_id': fields.StringField(nullable=True),
        'name': fields.StringField(nullable=True),
        'kernel_driver': fields.StringField(nullable=True),
        'driver': fields.StringField(),
        'offered': fields.BooleanField(),
        'reason': fields.StringField(nullable=True),
        'action': fields.StringField(nullable=True),
        'setup_required': fields.BooleanField(default=False),
        'reboot_required': fields.BooleanField(default=False),
    }

    #: The fields in the order the API and the CLI show them.
    COLUMNS = ('address', 'vendor_id', 'product_id', 'name',
               'kernel_driver', 'driver', 'offered', 'reason', 'action',
               'setup_required', 'reboot_required')

    @classmethod
    def from_entry(cls, driver, entry):
        """From a driver's :func:`hardware_entry` dict."""
        return cls(address=entry['address'], vendor_id=entry['vendor_id'],
                   product_id=entry['product_id'],
                   name=entry.get('name'),
                   kernel_driver=entry['kernel_driver'], driver=driver,
                   offered=entry['ready'], reason=entry['reason'],
                   action=entry['action'],
                   setup_required=entry['setup_required'],
                   reboot_required=entry['reboot_required'])

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('name', None)

    def decision(self):
        """What the agent logs when it changes: (offered, reason,
        action)."""
        return (self.offered, self.reason, self.action)
