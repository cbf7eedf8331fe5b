"""The v1 URL tree: ``GET /v1`` and ``/v1/accelerators``, the Pike API
proposal of the seed (``001_12385ffec9ba7633.txt``). v1 has no
microversions. The proposal writes the resource both as
``/accelerators`` and ``/accelerator``; both are served.
"""

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api.controllers.v1 import accelerators


class V1Controller:
    """Version 1 of the API."""

    accelerators = accelerators.AcceleratorsController()
    accelerator = accelerators

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        """The v1 version document; needs no authentication."""
        return {'id': 'v1.0',
                'status': 'SUPPORTED',
                'links': [link.make_link(pecan.request, 'self', 'v1', '')]}
