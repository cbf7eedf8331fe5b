"""The URL tree of the API, top level: ``GET /`` and the version trees.

Routing rule: a first path segment that names a version goes to that
version's tree (``v1`` and ``v2``; other ``vN`` are 404); any other
segment is a resource path without a version prefix and is served by v2,
so ``/device_profiles`` is ``/v2/device_profiles``. ``route_version`` is
that rule as a function, used both here and by the microversion hook.
"""

import re

import pecan

from cyborg.api.controllers import common
from cyborg.api.controllers import link
from cyborg.api.controllers import v1 as v1_controller
from cyborg.api.controllers import v2 as v2_controller
from cyborg.api import microversion

NAME = 'OpenStack Cyborg API'
DESCRIPTION = ('Cyborg manages the lifecycle of hardware accelerators such '
               'as GPUs, FPGAs, AI chips and crypto or compression '
               'accelerators in an OpenStack cloud.')

V1 = 'v1'
V2 = 'v2'
_JSON = '.json'
_VERSION_SEGMENT = re.compile(r'^v\d+(\.\d+)*$')


def _segment_version(segment):
    """The version tree a first path segment belongs to, or None for the
    root document and for versions this API does not serve."""
    name = segment[:-len(_JSON)] if segment.endswith(_JSON) else segment
    if name in (V1, V2):
        return name
    if not name or _VERSION_SEGMENT.match(name):
        return None
    return V2


def route_version(path):
    """The version tree serving ``path`` (a PATH_INFO), or None."""
    return _segment_version(path.lstrip('/').partition('/')[0])


def v2_resource(path):
    """The v2 resource (first segment below the version) that ``path``
    names, or None for version documents and other trees."""
    segments = path.lstrip('/').split('/')
    if _segment_version(segments[0]) != V2:
        return None
    if segments[0] in (V2, V2 + _JSON):
        return segments[1] if len(segments) > 1 else None
    return segments[0]


def v2_summary(request):
    """The v2 entry of the root document."""
    return {'id': V2,
            'status': 'CURRENT',
            'max_version': str(microversion.MAX_VERSION),
            'min_version': str(microversion.MIN_VERSION),
            'links': [link.make_link(request, 'self', V2)]}


def v1_summary(request):
    """The v1 entry of the root document: the seed's accelerators API,
    without microversions."""
    return {'id': V1,
            'status': 'SUPPORTED',
            'links': [link.make_link(request, 'self', V1)]}


class RootController:

    v1 = v1_controller.V1Controller()
    v2 = v2_controller.V2Controller()

    index = common.methods()

    @index.when('GET')
    def index_get(self):
        """The version document; needs no authentication."""
        current = v2_summary(pecan.request)
        return {'name': NAME,
                'description': DESCRIPTION,
                'versions': [current, v1_summary(pecan.request)],
                'default_version': current}

    @pecan.expose()
    def _lookup(self, primary, *remainder):
        """Serves ``/v2.json``, ``/v1.json`` and unversioned resource paths
        from v2."""
        if primary == V2 + _JSON and not remainder:
            return self.v2, ['']
        if primary == V1 + _JSON and not remainder:
            return self.v1, ['']
        if primary != V2 and _segment_version(primary) == V2:
            return self.v2, [primary, *remainder]
        return None
