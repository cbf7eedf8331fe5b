"""The v2 URL tree: ``GET /v2`` and, one attribute each, the resources.

Resource controllers attach to ``V2Controller`` as class attributes named
like their URL segment, each from its own module (the same file name in
every layer, see STYLE.md):

* ``device_profiles`` from ``v2/device_profiles.py``
* ``accelerator_requests`` from ``v2/accelerator_requests.py``
* ``deployables`` from ``v2/deployables.py``
* ``devices`` from ``v2/devices.py``
* ``attributes`` from ``v2/attributes.py``
* from microversion 2.5, the generic-driver operations: ``hosts``,
  ``drivers``, ``services``, ``discovery`` and ``attachments``, each from
  the module of that name (sharing ``v2/_ops.py``)
* from microversion 2.6, ``hardware`` from ``v2/hardware.py``

Unversioned paths (``/devices``) reach this controller too, through
``RootController._lookup``; nothing else is needed for them.

A resource that a microversion added says so with a ``min_version``
class attribute on its controller; ``MIN_VERSIONS`` collects them and
``MicroversionHook`` answers a request below it with a 404 that names
the version to ask for.
"""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api.controllers.v2 import accelerator_requests
from cyborg.api.controllers.v2 import attachments
from cyborg.api.controllers.v2 import attributes
from cyborg.api.controllers.v2 import deployables
from cyborg.api.controllers.v2 import device_profiles
from cyborg.api.controllers.v2 import devices
from cyborg.api.controllers.v2 import discovery
from cyborg.api.controllers.v2 import drivers
from cyborg.api.controllers.v2 import hardware
from cyborg.api.controllers.v2 import hosts
from cyborg.api.controllers.v2 import services
from cyborg.api import microversion


class V2Controller:
    """Version 2 of the API."""

    device_profiles = device_profiles.DeviceProfilesController()
    accelerator_requests = accelerator_requests.AcceleratorRequestsController()
    deployables = deployables.DeployablesController()
    devices = devices.DevicesController()
    attributes = attributes.AttributesController()
    hosts = hosts.HostsController()
    drivers = drivers.DriversController()
    services = services.ServicesController()
    discovery = discovery.DiscoveryController()
    attachments = attachments.AttachmentsController()
    hardware = hardware.HardwareController()

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        """The v2 version document; needs no authentication."""
        return {'id': 'v2.0',
                'status': 'CURRENT',
                'min_version': str(microversion.MIN_VERSION),
                'max_version': str(microversion.MAX_VERSION),
                'links': [link.make_link(pecan.request, 'self', 'v2', '')]}


def _min_versions():
    """{URL segment: microversion} of the resources added after 2.0."""
    return {name: value.min_version
            for name, value in vars(V2Controller).items()
            if getattr(value, 'min_version', None)}


MIN_VERSIONS = _min_versions()
